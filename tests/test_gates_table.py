"""The gates of ``check`` read a run read by columns as columns (issue 28): the baseline's severities, the low
weights and the verdicts that contradict their risk are read from the case table, the run as gated is that table
with the relabelled and reweighted rows replaced, and every note, contradiction, gate and the suite fingerprint are
those of the same runs read case by case."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_columnar import per_record

import reporting
from reporting.analysis.compare import suite_fingerprint
from reporting.format.severity_map import SeverityMap
from reporting.format.table_run import TableCases, table_of
from reporting.format.writing import dumps
from reporting.report.build import build_report
from reporting.report.gates import prepare, run_gates
from reporting.report.serialise import report_document

SEVERITIES = ("low", "medium", "high", "critical")


def _runs(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    """A baseline and a candidate of the same probes: some labels differ, some weights sit below their tier's
    default, some verdicts contradict their risk, some cases errored, a few probes are the candidate's alone."""
    rng = random.Random(seed)
    paths = []
    for name in ("base", "cand"):
        cases = []
        for i in range(rng.randint(20, 50) if name == "base" else 50):
            passed = rng.choice([True, False, True, None])
            risk = None if passed is None else rng.choice([0.02, 0.5, 0.95, round(rng.random(), 3)])
            case = {
                "probe_id": f"p{i:02d}",
                "category": rng.choice(["jailbreak", "pii"]),
                "severity": rng.choice(SEVERITIES),
                "passed": passed,
                "risk_score": risk,
                "probe_input": f"prompt {i} <b>{seed}</b>",
                "response": f"answer {i}",
            }
            if passed is None:
                case["error"] = "timeout"
            elif rng.random() < 0.4:
                case["severity_weight"] = rng.choice([0.1, 0.6, 1.0, 2.5])
            if passed is not None and rng.random() < 0.3:
                case["weighted_risk"] = 0.5  # stored: drift where it is not the recomputed one, unless mapped
            cases.append(case)
        path = tmp_path / f"{name}{seed}.json"
        path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": name, "model": name}, "cases": cases}))
        paths.append(path)
    return paths[0], paths[1]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("trust", [False, True])
def test_the_gates_see_a_run_read_by_columns_as_its_cases(tmp_path, seed, trust):
    base_path, cand_path = _runs(tmp_path, seed)
    fast = [reporting.load_run(str(p)).run for p in (base_path, cand_path)]
    slow = [per_record(p).run for p in (base_path, cand_path)]
    assert all(table_of(r) is not None for r in fast) and all(table_of(r) is None for r in slow)
    assert suite_fingerprint(fast[1]) == suite_fingerprint(slow[1])
    gated = [prepare(candidate, baseline, trust) for baseline, candidate in (fast, slow)]
    assert gated[0].notes == gated[1].notes and gated[0].contradictions == gated[1].contradictions
    assert gated[0].notes and gated[0].contradictions  # every path taken: labels, weights, contradictions
    assert isinstance(gated[0].run.cases, TableCases)  # still a table, not a list of cases
    assert list(gated[0].run.cases) == list(gated[1].run.cases)
    results = [
        run_gates(
            candidate,
            thresholds={"min_pass_rate": 0.5, "min_severity_weighted_pass_rate": 0.5},
            baseline=baseline,
            max_new_failures=0,
            strict=True,
            trust_run_weights=trust,
        )
        for baseline, candidate in (fast, slow)
    ]
    assert results[0] == results[1]


def test_a_weight_below_its_tier_is_replaced_and_the_more_severe_label_wins(tmp_path):
    """By hand: p1 is low here and critical in the baseline (gated as critical, weight 2.0: the given 0.2 is below
    critical's 2.0 and replaced); p2 is high here and low in the baseline (kept high, its 2.0 above high's 1.5);
    p3 passed at risk 0.97 (a contradiction)."""
    cases = [
        {
            "probe_id": "p1",
            "category": "c",
            "severity": "low",
            "passed": False,
            "risk_score": 0.8,
            "severity_weight": 0.2,
        },
        {
            "probe_id": "p2",
            "category": "c",
            "severity": "high",
            "passed": True,
            "risk_score": 0.1,
            "severity_weight": 2.0,
        },
        {"probe_id": "p3", "category": "c", "severity": "medium", "passed": True, "risk_score": 0.97},
    ]
    base = [dict(c, severity=s) for c, s in zip(cases, ("critical", "low", "medium"))]
    paths = []
    for name, rows in (("base", base), ("cand", cases)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": name, "model": "m"}, "cases": rows}))
        paths.append(path)
    baseline, candidate = (reporting.load_run(str(p)).run for p in paths)
    gated = prepare(candidate, baseline)
    table = table_of(gated.run)
    assert table.column("severity").to_pylist() == ["critical", "high", "medium"]
    assert table.column("severity_weight").to_pylist() == [2.0, 2.0, 1.0]  # effective
    assert [c.severity_weight for c in gated.run.cases] == [None, 2.0, None]  # as the case says: p1's dropped
    assert gated.contradictions == ["p3 (passed at risk 0.970)"]
    assert "1 case(s) weigh less than their severity's default" in gated.notes[1]
    assert table_of(candidate).column("severity").to_pylist() == ["low", "high", "medium"]  # the run read, unchanged


@pytest.mark.parametrize("seed", range(3))
def test_a_severity_map_maps_a_run_read_by_columns_as_its_cases(tmp_path, seed):
    """``--severity-map``: the mapped cases at their tier, their stored weight and weighted risk dropped; the run
    read by columns stays a table, and its cases and report are those of the run read case by case."""
    _, path = _runs(tmp_path, seed)
    severity_map = SeverityMap(categories={"pii": "critical"}, probes={"p01": "low", "p03": "high"})
    read = per_record(path).run
    fast, slow = (severity_map.apply(r) for r in (reporting.load_run(str(path)).run, read))
    assert isinstance(fast.cases, TableCases)
    assert list(fast.cases) == list(slow.cases)
    tiers = {"p01": "low", "p03": "high"}
    for before, after in zip(read.cases, fast.cases):
        tier = tiers.get(before.probe_id) or ("critical" if before.category == "pii" else before.severity)
        assert after.severity == tier
        if tier != before.severity:  # a mapped case takes its tier's default weight; its stored figures dropped
            assert after.severity_weight is None and after.weighted_risk is None
        else:
            assert after == before
    documents = [dumps(report_document(build_report(r, with_observability=False))) for r in (fast, slow)]
    assert documents[0] == documents[1]
