"""Regenerate sample_runs/ from the synthetic generator (deterministic).

Two versions of one model on the same 240-probe suite, plus a third model whose file
comes from a legacy producer that stored uncapped weighted risks and its own aggregates
(so the dashboard has real drift to show).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from reporting.jsonio import dumps, write_atomic
from reporting.metrics import aggregate_metrics, cases_frame
from reporting.loader import read_run
from reporting.synthetic import synthetic_run

OUT = Path(__file__).resolve().parent.parent / "sample_runs"


def main() -> None:
    v1 = synthetic_run(240, quality=0.68, seed=11, run_id="acme-assistant-v1_agent-safety-core",
                       model="acme-assistant-v1", created_at=datetime(2026, 10, 6, 14, 0, tzinfo=timezone.utc))
    v2 = synthetic_run(240, quality=0.86, seed=12, run_id="acme-assistant-v2_agent-safety-core",
                       model="acme-assistant-v2", created_at=datetime(2026, 11, 3, 9, 15, tzinfo=timezone.utc))
    legacy = synthetic_run(180, quality=0.55, seed=13, suite_seed=8, run_id="open-7b-chat_legacy-export",
                           model="open-7b-chat", suite="agent-safety-core-lite",
                           created_at=datetime(2026, 9, 21, 17, 40, tzinfo=timezone.utc))
    legacy["run"]["notes"] = "Exported by an older producer that did not cap weighted_risk at 1."
    for case in legacy["cases"]:
        case["weighted_risk"] = round(case["risk_score"] * case["severity_weight"], 6)  # the legacy bug
    # The legacy producer's own aggregates: computed on its uncapped weighted risks.
    run = read_run(dumps(legacy).encode())
    frame = cases_frame(run)
    frame["weighted_risk"] = frame["stored_weighted_risk"]
    legacy["aggregate_metrics"] = aggregate_metrics(frame)
    for name, report in (("acme-assistant-v1.json", v1), ("acme-assistant-v2.json", v2),
                         ("open-7b-chat-legacy.json", legacy)):
        write_atomic(OUT / name, dumps(report) + "\n")
        print(f"wrote {OUT / name}: {len(report['cases'])} cases")


if __name__ == "__main__":
    main()
