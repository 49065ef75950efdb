"""Conversations at scale (issue 32, "Sizes"): a run of N cases, each carrying 8 turns (4 user, 4 assistant, turns
of ~200 characters), read, recomputed and opened in the dashboard, against the same cases without their turns
(the floor: every figure the same, measured in the same run, each in its own child process).

    python bench/bench_conversations.py [--sizes 10000 100000] [--repeat 1]

Columns: read + aggregate (``read_run`` + ``aggregate_metrics``) seconds and peak memory, and AppTest's open of
the dashboard (load, validate, recompute, draw the overview), for the run with turns and without.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

TURNS = 8


def data_file(n: int, turns: bool) -> Path:
    from reporting.format.synthetic import synthetic_run

    path = HERE / "data" / f"conv_{n}_{'turns' if turns else 'plain'}.json"
    if path.exists():
        return path
    path.parent.mkdir(exist_ok=True)
    run = synthetic_run(n, seed=1)
    run["schema_version"] = 3
    if turns:
        for i, case in enumerate(run["cases"]):
            messages = []
            for t in range(TURNS // 2):
                ask = f"Turn {t} of attack {i}: " + (case.get("probe_input") or "")[:120] + " and now go further."
                answer = (case.get("response") or "")[:180] if t == TURNS // 2 - 1 else f"I can tell you part {t}."
                messages += [{"role": "user", "content": ask}, {"role": "assistant", "content": answer}]
            messages[-1]["content"] = case.get("response") or ""
            case["messages"], case["judged_turn"], case["strategy"] = messages, TURNS - 1, "crescendo"
    else:
        for case in run["cases"]:
            case["strategy"] = "crescendo"
    path.write_text(json.dumps(run))
    return path


def child(n: int, turns: bool) -> dict:
    import reporting

    path = data_file(n, turns)
    reporting.aggregate_metrics(reporting.read_run(ROOT / "sample_runs" / "acme-assistant-v1.json"))  # imports
    start = time.perf_counter()
    run = reporting.read_run(path)
    metrics = reporting.aggregate_metrics(run)
    read_s = time.perf_counter() - start
    assert metrics["counts"]["cases"] == n
    from streamlit.testing.v1 import AppTest

    folder = Path(tempfile.mkdtemp(prefix="runlens-conv-"))
    os.symlink(path, folder / path.name)
    os.environ["REPORTING_RUNS_DIR"] = str(folder)
    os.chdir(ROOT)
    del run
    start = time.perf_counter()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900).run()
    open_s = time.perf_counter() - start
    assert not at.exception, at.exception
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"read_s": read_s, "open_s": open_s, "peak_mb": peak, "file_mb": path.stat().st_size / 1e6}


def main() -> None:
    import argparse
    import subprocess

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--child", type=int)
    parser.add_argument("--turns", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.turns)))
        return
    rows = []
    for n in args.sizes:
        got = {}
        for turns in (False, True):
            command = [sys.executable, __file__, "--child", str(n)] + (["--turns"] if turns else [])
            out = subprocess.run(command, capture_output=True, text=True, check=True)
            got[turns] = json.loads(out.stdout.strip().splitlines()[-1])
        plain, conv = got[False], got[True]
        rows.append(
            f"| {n:,} | {plain['file_mb']:.0f} / {conv['file_mb']:.0f} | {plain['read_s']:.2f} | {conv['read_s']:.2f} "
            f"| {conv['read_s'] / plain['read_s']:.2f} | {plain['open_s']:.1f} | {conv['open_s']:.1f} "
            f"| {conv['open_s'] / plain['open_s']:.2f} | {plain['peak_mb']:.0f} | {conv['peak_mb']:.0f} |"
        )
        print(rows[-1], flush=True)
    body = (
        "## Conversations (`bench/bench_conversations.py`)\n\n"
        f"The same synthetic run without and with {TURNS} turns per case (4 user, 4 assistant). Floor: the run "
        "without turns, in the same session. Read: `read_run` + `aggregate_metrics`; open: AppTest opening the "
        "dashboard on the overview (both after the libraries are imported). Peak: the child's maximum resident set "
        "(both steps).\n\n"
        "| cases | file MB (plain / turns) | read s plain | read s turns | ratio | open s plain | open s turns "
        "| ratio | peak MB plain | peak MB turns |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        + "\n".join(rows)
    )
    from _results import write_section

    write_section("conversations", body)


if __name__ == "__main__":
    main()
