"""Paired comparison, trend and CI gates: known answers and exit codes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from payloads import PAYLOADS

import reporting
from reporting.analysis import stats
from reporting.analysis.compare import compare_runs, suite_fingerprint, trend
from reporting.analysis.stats import mcnemar, newcombe_paired

ROOT = Path(__file__).resolve().parent.parent


def case(pid, category, severity, passed, risk, text="same input"):
    return {
        "probe_id": pid,
        "category": category,
        "severity": severity,
        "passed": passed,
        "risk_score": risk,
        "probe_input": text,
        "response": f"response to {pid}",
    }


def run(cases, run_id="r", created_at=None, suite="s"):
    meta = {"run_id": run_id, "suite": suite, **({"created_at": created_at} if created_at else {})}
    return reporting.read_run(json.dumps({"run": meta, "cases": cases}).encode())


BASE = [
    case("a", "x", "low", True, 0.1),
    case("b", "x", "critical", True, 0.2),
    case("c", "x", "high", False, 0.8),
    case("d", "y", "medium", False, 0.7),
    case("e", "y", "low", True, 0.1),
    case("f", "y", "high", True, 0.3),
    case("only-base", "y", "low", True, 0.1),
]
CAND = [
    case("a", "x", "low", True, 0.1),
    case("b", "x", "critical", False, 0.9),
    case("c", "x", "high", True, 0.2),
    case("d", "y", "medium", True, 0.3),
    case("e", "y", "low", False, 0.6),
    case("f", "y", "high", True, 0.2),
    case("only-cand", "x", "low", True, 0.1),
]


def test_paired_comparison_known_answers():
    cmp = compare_runs(run(BASE, "base"), run(CAND, "cand"))
    assert cmp["paired"] == 6
    assert cmp["unmatched"] == {"base_only": ["only-base"], "candidate_only": ["only-cand"]}
    assert cmp["table"] == {"both_pass": 2, "pass_to_fail": 2, "fail_to_pass": 2, "both_fail": 0}
    assert cmp["newly_failing"] == ["b", "e"]  # critical first, then by severity
    assert cmp["newly_passing"] == ["c", "d"]
    assert cmp["critical_newly_failing"] == ["b"]
    assert cmp["mcnemar"] == mcnemar(2, 2) and cmp["mcnemar"]["p_value"] == 1.0
    x, y = cmp["by_category"]
    assert (x["category"], x["n"], x["base_pass_rate"], x["candidate_pass_rate"]) == ("x", 3, 2 / 3, 2 / 3)
    assert [x["ci_low"], x["ci_high"]] == pytest.approx(newcombe_paired(1, 1, 1, 0))
    assert y["delta"] == pytest.approx(0.0) and y["low_n"]
    pass_rate = cmp["headline"]["pass_rate"]
    assert pass_rate["base"] == pytest.approx(4 / 6) and pass_rate["delta"] == pytest.approx(0.0)
    assert pass_rate["ci"] == pytest.approx(newcombe_paired(2, 2, 2, 0))
    assert cmp["risk_change"]["n"] == 6
    assert cmp["suite_fingerprint"]["same"] is False and cmp["warnings"]


def test_fingerprint_depends_on_ids_and_inputs_only():
    one = run([case("a", "x", "low", True, 0.1, "hello")])
    same = run([case("a", "y", "high", False, 0.9, "hello")], "other")
    other = run([case("a", "x", "low", True, 0.1, "hello!")])
    assert suite_fingerprint(one) == suite_fingerprint(same) != suite_fingerprint(other)
    assert len(suite_fingerprint(one)) == 16


def test_trend_orders_by_date_and_keeps_one_suite():
    runs = [
        run(BASE, "late", "2026-11-03T00:00:00Z"),
        run(CAND, "early", "2026-10-01T00:00:00Z"),
        run(BASE, "undated"),
        run(BASE, "elsewhere", "2026-01-01T00:00:00Z", suite="other"),
    ]
    data = trend(runs)
    assert data["suite"] == "s" and [p["run_id"] for p in data["points"]] == ["early", "late", "undated"]
    assert data["skipped"] == ["elsewhere"] and len(data["warnings"]) == 2
    point = data["points"][1]
    assert point["pass_rate"] == pytest.approx(5 / 7) and point["pass_rate_ci"] == pytest.approx(stats.wilson(5, 7))


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "reporting", *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


V1, V2 = ROOT / "sample_runs" / "acme-assistant-v1.json", ROOT / "sample_runs" / "acme-assistant-v2.json"


def test_compare_command_json_and_html(tmp_path):
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    done = cli("compare", V1, V2, "-o", out, "--html", page, "--timestamp", "0")
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    expected = compare_runs(reporting.read_run(V1), reporting.read_run(V2))
    assert data == json.loads(json.dumps(expected))
    assert data["mcnemar"]["method"] == "chi-square with continuity correction" and data["mcnemar"]["p_value"] < 0.05
    html = page.read_text()
    assert 'id="comparison-data"' in html and "Newly failing (" in html and "statistically significant" in html
    assert "candidate passes better" in done.stderr


def test_compare_html_escapes_hostile_responses(tmp_path):
    hostile = [dict(case("p", "x", "critical", True, 0.1), response=PAYLOADS[0], category=PAYLOADS[1])]
    worse = [dict(case("p", "x", "critical", False, 0.9), response=PAYLOADS[3], category=PAYLOADS[1])]
    (tmp_path / "b.json").write_text(json.dumps(hostile))
    (tmp_path / "c.json").write_text(json.dumps(worse))
    done = cli(
        "compare", tmp_path / "b.json", tmp_path / "c.json", "-o", tmp_path / "o.json", "--html", tmp_path / "o.html"
    )
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "o.html").read_text()
    body = html.split('<script type="application/json" id="figures-data">')[0]
    assert (
        PAYLOADS[0] not in body and PAYLOADS[3] not in body and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body
    )


def test_trend_command(tmp_path):
    done = cli(
        "trend", ROOT / "sample_runs", "--html", tmp_path / "t.html", "-o", tmp_path / "t.json", "--timestamp", "0"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "t.json").read_text())
    assert [p["created_at"] for p in data["points"]] == sorted(p["created_at"] for p in data["points"])
    assert "suite agent-safety-core: 3 run(s)" in done.stdout
    assert cli("trend", tmp_path / "missing").returncode == 2


def _gates_around_v2() -> list[tuple[list[str], int, str]]:
    """Each gate just below and just above V2's own figure, read from the run (the samples are made again by
    ``make samples``: their figures are not copied here)."""
    from reporting.analysis.metrics import aggregate_metrics

    figures = aggregate_metrics(reporting.read_run(str(V2)))
    rate, high = figures["overall"]["pass_rate"], figures["overall"]["high_stakes_failures"]
    resilience = figures["indices"]["resilience_index"]
    assert 0.01 < rate < 0.99 and high >= 1 and 0.01 < resilience < 0.99  # (a run the gates can hold and fail)
    low, up = f"{rate - 0.005:.3f}", f"{rate + 0.005:.3f}"
    return [
        (["--min-pass-rate", low], 0, f"holds  pass rate: {rate:.3f} >= {float(low):.3f} required"),
        (["--min-pass-rate", up], 1, f"FAILS  pass rate: {rate:.3f} >= {float(up):.3f} required"),
        (["--min-severity-weighted-pass-rate", "0.9999"], 1, "FAILS  severity-weighted pass rate"),
        (["--max-high-stakes-failures", str(high)], 0, f"holds  high-stakes failures: {high} <= {high} required"),
        (
            ["--max-high-stakes-failures", str(high - 1)],
            1,
            f"FAILS  high-stakes failures: {high} <= {high - 1} required",
        ),
        (["--min-resilience", f"{resilience - 0.01:.3f}"], 0, "holds  resilience index"),
        (["--min-resilience", f"{resilience + 0.01:.3f}"], 1, "FAILS  resilience index"),
        (["--min-pass-rate", "oops"], 2, "invalid float value"),
        ([], 2, "no gate given"),
        (["--max-new-failures", "2"], 2, "--max-new-failures needs --baseline"),
    ]


@pytest.mark.parametrize("args, code, text", _gates_around_v2())
def test_check_gates_exit_codes(args, code, text):
    done = cli("check", V2, *args)
    assert done.returncode == code, done.stdout + done.stderr
    assert text in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_check_against_a_baseline():
    # v2 against v1: a significant improvement, but critical probes newly fail, so it counts as a regression.
    done = cli("check", V2, "--baseline", V1)
    assert (
        done.returncode == 1 and "a significant improvement" in done.stdout and "critical newly failing" in done.stdout
    )
    # v1 against v2: a significant regression; too many new failures.
    done = cli("check", V1, "--baseline", V2, "--max-new-failures", "3")
    assert done.returncode == 1 and "a significant regression" in done.stdout
    # Against itself: nothing changed, the gate holds.
    done = cli("check", V2, "--baseline", V2, "--max-new-failures", "0")
    assert done.returncode == 0 and "holds  new failures vs baseline: 0 newly failing" in done.stdout
    done = cli("check", V2, "--baseline", ROOT / "nope.json")
    assert done.returncode == 2 and "cannot read the file" in done.stderr


def test_small_non_significant_regression_without_critical_probes_holds(tmp_path):
    base = [case(f"p{i}", "x", "medium", True, 0.1) for i in range(20)]
    cand = [dict(c) for c in base]
    cand[0] = case("p0", "x", "medium", False, 0.9)  # one new failure: McNemar exact p = 1.0
    (tmp_path / "b.json").write_text(json.dumps(base))
    (tmp_path / "c.json").write_text(json.dumps(cand))
    done = cli("check", tmp_path / "c.json", "--baseline", tmp_path / "b.json", "--max-new-failures", "0")
    assert done.returncode == 0, done.stdout  # not significant and no critical probe: not a regression
    cand[0]["severity"] = "critical"
    (tmp_path / "c.json").write_text(json.dumps(cand))
    assert cli("check", tmp_path / "c.json", "--baseline", tmp_path / "b.json").returncode == 1
