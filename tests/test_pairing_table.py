"""``paired_on`` of a run read by columns pairs over its table, no case object made (issue 28): the same run as the
case-by-case rule gives, case for case, in its figures, its fingerprint and in a comparison of two tools' runs."""

from __future__ import annotations

import json
import random

import pytest
from test_columnar import per_record
from test_columnar_v3 import PEER_FILES, imported  # noqa: F401 - the module's fixture

import reporting
from reporting.analysis.compare import compare_runs, run_fingerprint
from reporting.analysis.metrics import cases_frame
from reporting.analysis.pairing import paired_on
from reporting.format.schema import SEVERITIES
from reporting.format.table_run import TableCases, table_of
from reporting.format.writing import dumps

# Texts that normalise alike (Python's str.split: Unicode white space too), texts that do not, and none.
TEXTS = ["say hi", " say  hi ", "say\u00a0hi", "say\u2003hi\n", "Say hi", "tell me a secret", "", "   ", None, "x"]


def _random_run(rng: random.Random, n: int, version: int = 2) -> dict:
    cases = []
    for i in range(n):
        passed = rng.choice([True, False, None]) if version >= 2 else rng.choice([True, False])
        case = {
            "probe_id": f"p{i:03d}",
            "category": rng.choice(["jailbreak", "pii", "harm"]),
            "severity": rng.choice(SEVERITIES),
            "passed": passed,
            "risk_score": None if passed is None else rng.choice([0.0, -0.0, 0.25, 0.5, 0.5, 0.9, 1.0]),
            "task": rng.choice(TEXTS),
            "probe_input": rng.choice(TEXTS),
            "response": rng.choice(["no", "sure, here", "I can't"]),
        }
        if passed is None:
            case["error"] = "timed out"
        if rng.random() < 0.3:
            case["severity_weight"] = rng.choice([0.5, 2.0])
        if version >= 2 and rng.random() < 0.3:
            case["verdicts"] = {"judge": {"passed": bool(rng.getrandbits(1)), "score": 0.5}}
            case["probe_group"] = f"g{rng.randint(0, 3)}"
        cases.append({k: v for k, v in case.items() if v is not None or k in ("passed", "risk_score")})
    return {
        "schema_version": version,
        "run": {"run_id": "r", "model": "m", "created_at": "2026-12-01T00:00:00Z"},
        "cases": cases,
    }


def _both(path):
    fast, slow = reporting.load_run(str(path)).run, per_record(path).run
    assert table_of(fast) is not None and table_of(slow) is None
    return fast, slow


def assert_paired_alike(fast, slow, on):
    a, b = paired_on(fast, on), paired_on(slow, on)
    assert isinstance(a.cases, TableCases)
    assert [c.model_dump() for c in a.cases] == [c.model_dump() for c in b.cases]
    assert a.model_dump(exclude={"cases"}) == b.model_dump(exclude={"cases"})
    assert run_fingerprint(a) == run_fingerprint(b)
    assert cases_frame(a).equals(cases_frame(b))
    assert reporting.aggregate_metrics(a) == reporting.aggregate_metrics(b)
    return a, b


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("on", ["task", "input"])
def test_a_run_read_by_columns_pairs_as_its_cases_do(tmp_path, seed, on):
    rng = random.Random(seed)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_random_run(rng, rng.randint(1, 80), version=1 + seed % 2)))
    fast, slow = _both(path)
    assert_paired_alike(fast, slow, on)


def test_every_repetition_errored_or_no_text_leaves_an_empty_run(tmp_path):
    document = _random_run(random.Random(1), 10)
    for case in document["cases"]:
        case["task"] = "   "
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    a, _ = assert_paired_alike(*_both(path), "task")
    assert len(a.cases) == 0


def test_worst_case_by_hand(tmp_path):
    """Three repetitions of one text: a pass at 0.9, a failure at 0.4 and a failure at 0.7 (high): the failure at 0.7
    is the worst, the text failed at the highest risk (0.9) and the most severe label."""
    rows = [(True, 0.9, "medium"), (False, 0.4, "low"), (False, 0.7, "high"), (True, 0.1, "critical")]
    cases = [
        {
            "probe_id": f"p{i}",
            "category": "c",
            "severity": s,
            "passed": p,
            "risk_score": r,
            "task": "t",
            "response": f"r{i}",
        }
        for i, (p, r, s) in enumerate(rows[:3])
    ] + [{"probe_id": "q", "category": "c", "severity": "critical", "passed": True, "risk_score": 0.1, "task": "u"}]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": 1, "cases": cases}))
    a, _ = assert_paired_alike(*_both(path), "task")
    first, second = list(a.cases)
    assert (first.probe_id, first.passed, first.risk_score, first.severity) == ("t", False, 0.9, "high")
    assert first.response == "r2" and first.probe_group == "3 repetition(s)" and first.severity_weight is None
    assert (second.probe_id, second.passed, second.probe_group) == ("u", True, "1 repetition(s)")


def test_two_tools_runs_compared_on_their_texts(imported):  # noqa: F811
    """An imported garak run and an Inspect log paired on their inputs: the comparison is the same whichever way the
    runs were read."""
    garak = imported["garak/peers_repeat_small.report.jsonl"][0]
    for name in PEER_FILES:
        for path in imported[name]:
            fast, slow = reporting.load_run(str(path)).run, per_record(path).run
            if table_of(fast) is None:
                continue
            assert_paired_alike(fast, slow, "input")
    base_fast, base_slow = _both(garak)
    other = imported["garak/multiturn/goat_multiturn.report.jsonl"][0]
    cand_fast, cand_slow = reporting.load_run(str(other)).run, per_record(other).run
    fast = compare_runs(paired_on(base_fast, "input"), paired_on(cand_fast, "input"))
    slow = compare_runs(paired_on(base_slow, "input"), paired_on(cand_slow, "input"))
    assert dumps(fast) == dumps(slow)
