"""The cases on which judges disagree (``judges.disagreements``: the Judges page and the HTML's disputed table),
known answers on a run computed by hand, the same whether the case frame shares one verdicts mapping among the
cases whose verdicts are the same (the columnar reader's frame) or holds one per case."""

from __future__ import annotations

import copy
import json

import reporting
from reporting.analysis.judges import disagreements
from reporting.analysis.metrics import cases_frame


def _case(i, risk, verdicts, passed=True):
    return {
        "probe_id": f"p{i}",
        "category": "c",
        "severity": "high",
        "passed": passed,
        "risk_score": risk,
        "verdicts": verdicts,
    }


A_PASS, A_FAIL = {"passed": True, "explanation": "fine"}, {"passed": False, "explanation": "bad"}
B_PASS, B_FAIL, B_NONE = {"passed": True}, {"passed": False, "explanation": ""}, {"passed": None}


def _run(n_repeat: int = 1):
    cases = []
    shapes = [
        ({"a": A_PASS, "b": B_FAIL}, 0.5),  # split: a passed, b failed
        ({"a": A_PASS, "b": B_PASS}, 0.9),  # agree
        ({"a": A_FAIL, "b": B_NONE}, 0.7),  # b did not judge: no split
        ({"a": A_FAIL, "b": B_PASS}, 0.5),  # split
        ({"a": A_FAIL}, 0.95),  # one judge
        ({}, 0.99),
    ]
    for r in range(n_repeat):
        for k, (verdicts, risk) in enumerate(shapes):
            cases.append(_case(r * len(shapes) + k, risk, copy.deepcopy(verdicts), passed=k % 2 == 0))
    document = {
        "schema_version": 2,
        "run_id": "r",
        "model": "m",
        "suite": "s",
        "created_at": "2026-01-01T00:00:00Z",
        "cases": cases,
    }
    return reporting.read_run(json.dumps(document).encode())


def test_the_disputed_cases_by_hand():
    names, rows = disagreements(cases_frame(_run()))
    assert names == ["a", "b"]
    # risk 0.5 twice: by probe id; p0 (a passed, b failed) then p3 (a failed, b passed)
    assert rows == [
        {
            "probe_id": "p0",
            "category": "c",
            "severity": "high",
            "primary": "passed",
            "a": "passed: fine",
            "b": "failed",
        },
        {"probe_id": "p3", "category": "c", "severity": "high", "primary": "failed", "a": "failed: bad", "b": "passed"},
    ]


def test_shared_and_separate_mappings_give_the_same_rows_and_the_limit_holds():
    frame = cases_frame(_run(50))
    values = frame["verdicts"].to_numpy(dtype=object)
    separate = frame.copy()
    separate["verdicts"] = [copy.copy(v) for v in values]  # one mapping object per case
    assert len({id(v) for v in separate["verdicts"]}) == len(frame)
    shared = frame.copy()
    first: dict = {}
    shared["verdicts"] = [first.setdefault(repr(sorted((k, v.passed) for k, v in m.items())), m) for m in values]
    assert len({id(v) for v in shared["verdicts"]}) < 10
    for limit in (500, 7):
        got = disagreements(shared, limit=limit)
        assert got == disagreements(separate, limit=limit)
        assert len(got[1]) == min(limit, 100)
        split = sorted(f"p{6 * r + k}" for r in range(50) for k in (0, 3))  # all at risk 0.5: by probe id, as text
        assert [r["probe_id"] for r in got[1]] == split[:limit]
