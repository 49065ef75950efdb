"""The review queues over a run's columns (``reporting.analysis.review_queue``) give the order of the per-case
definition (below, as the Review page had it) on runs read by columns and case by case, with and without
decisions: failures first, a seeded random sample, the cases where judges disagree."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_columnar import per_record
from test_columnar_v3 import PEER_FILES, imported  # noqa: F401 - the module's fixture

import reporting
from reporting.analysis.review_queue import KINDS, pending, queue_order
from reporting.format.synthetic import synthetic_run
from reporting.format.table_run import table_of

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = [p for p in sorted((ROOT / "sample_runs").glob("*.json")) if p.name.count(".") == 1]


def by_cases(run, kind: str, done: set[str]) -> list[str]:
    """The per-case definition: the probe ids of the queue. The random order is drawn once per run, over every case
    (docs/review.md: the same for every reviewer), and a reviewer's decided cases are left out of it (the page
    drew it again over the undecided cases after each decision, so one decision reshuffled the whole queue)."""
    if kind == "random":
        ordered = sorted(run.cases, key=lambda c: c.probe_id)
        random.Random(run.run.run_id).shuffle(ordered)
        return [c.probe_id for c in ordered if c.probe_id not in done]
    cases = [c for c in run.cases if c.probe_id not in done]
    if kind == "failures":
        cases = sorted(cases, key=lambda c: (c.passed is not False, -(c.risk_score or 0.0), c.probe_id))
    else:
        cases = [c for c in cases if len(({v.passed for v in c.verdicts.values()} | {c.passed}) - {None}) > 1]
    return [c.probe_id for c in cases]


def _judged(tmp_path: Path) -> Path:
    """A run with cases not evaluated, tied risks, and judges that agree, disagree or did not judge."""
    document = synthetic_run(400, seed=9)
    document["schema_version"] = 2
    for i, case in enumerate(document["cases"]):
        if i % 11 == 0:
            case.update(passed=None, risk_score=None, error="timeout")
            case.pop("weighted_risk", None)
        elif i % 3 == 0:
            case["risk_score"] = 0.5  # ties: broken by probe id
        if i % 4 == 0:
            case["verdicts"] = {"a": {"passed": i % 8 == 0}, "b": {"passed": None}}
        elif i % 4 == 1:
            case["verdicts"] = {"a": {"passed": case.get("passed")}}
    path = tmp_path / "judged.json"
    path.write_text(json.dumps(document))
    return path


def _assert_queues(run) -> None:
    ids = [c.probe_id for c in run.cases]
    done = set(ids[::5])
    for kind in KINDS:
        for decided in (set(), done):
            expected = by_cases(run, kind, decided)
            queue = pending(run, kind, decided)
            assert [c.probe_id for c in queue] == expected, (kind, len(decided))
            assert len(queue) == len(expected)
            if expected:
                assert queue[len(expected) - 1].probe_id == expected[-1]
                assert queue.index_of(expected[len(expected) // 2]) == len(expected) // 2
            assert all(queue.index_of(probe_id) == -1 for probe_id in list(decided)[:5])


def test_the_queues_of_a_judged_run_are_the_per_case_ones_both_ways(tmp_path):
    path = _judged(tmp_path)
    fast, slow = reporting.read_run(str(path)), per_record(path).run
    assert table_of(fast) is not None and table_of(slow) is None
    for run in (fast, slow):
        _assert_queues(run)
    assert len(queue_order(fast, "disagreements")) > 20  # the run has disagreements to find
    assert list(queue_order(fast, "failures")) == list(queue_order(slow, "failures"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_the_queues_of_each_sample_are_the_per_case_ones(path):
    _assert_queues(reporting.read_run(str(path)))


@pytest.mark.parametrize("name", PEER_FILES[:8])
def test_the_queues_of_imported_runs_are_the_per_case_ones(imported, name):  # noqa: F811
    for path in imported[name]:
        _assert_queues(reporting.read_run(str(path)))


def test_an_unknown_queue_is_refused():
    run = reporting.read_run(str(SAMPLES[0]))
    with pytest.raises(ValueError, match="queue: one of failures, random, disagreements"):
        queue_order(run, "worst")


def test_a_run_without_cases_has_empty_queues(tmp_path):
    document = synthetic_run(3, seed=1)
    document["cases"] = []
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(document))
    for run in (reporting.read_run(str(path)), per_record(path).run):
        for kind in KINDS:
            queue = pending(run, kind, {"x"})
            assert len(queue) == 0 and list(queue) == [] and queue.index_of("x") == -1
