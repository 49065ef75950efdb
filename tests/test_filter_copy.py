"""A filter's copy of its kept rows holds only the columns the report's queries read (``engine.report_columns``):
not the probe keys where no probe repeats, nor the strategies' columns where none is named, nor the severity's text
where every case has its tier (the severity rows then grouped by tier). Every figure is the one read through the
filter's mask from the whole table, to the bit."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

import reporting.report.build as build_module
from reporting.analysis.case_table import TIER, case_table
from reporting.analysis.engine import GROUPS, Session, report_columns
from reporting.analysis.filters import Filters
from reporting.analysis.metrics import cases_frame
from reporting.report.build import build_report, make_run_data
from reporting.sources.reading import load_run
from tests.conftest import case

FILTERS = (
    Filters(outcome="fail"),
    Filters(categories=("pii",)),
    Filters(severities=("high", "critical"), outcome="pass"),
    Filters(failure_modes=("leak",)),
    Filters(text="p1"),
    Filters(text="no case holds this"),
)


def _cases(repeated: bool, strategies: bool, n: int = 400) -> list[dict]:
    rng = random.Random(7)
    cases = []
    for i in range(n):
        passed = None if i % 37 == 0 else rng.random() < 0.6
        extra: dict = {"safe_signal_hits": rng.randint(0, 2)}
        if repeated:
            extra["probe_group"] = f"g{i % 150}"
        if passed is None:
            extra["error"] = "timed out"
        if strategies and rng.random() < 0.7:
            extra["strategy"] = rng.choice(["crescendo", "basic"])
        if passed is False and rng.random() < 0.6:
            extra["detected_failure_modes"] = rng.sample(["leak", "override", "harm"], rng.randint(1, 2))
        severity = rng.choice(["low", "Medium", "HIGH", "critical"])
        cases.append(
            case(f"p{i}", rng.choice(["jailbreak", "toxicity", "pii"]), severity, passed, rng.random(), **extra)
        )
    return cases


def _data(cases: list[dict]):
    document = {"schema_version": 3, "run": {"run_id": "c", "model": "m"}, "cases": cases}
    result = load_run(json.dumps(document).encode(), "c.json")
    assert not result.problems
    return make_run_data(result)


def _figures(data, filters: Filters) -> dict:
    found = dict(build_report(data, filters=filters, with_observability=False).metrics)
    found.pop("frameworks")
    return found


@pytest.mark.parametrize("repeated", [False, True])
@pytest.mark.parametrize("strategies", [False, True])
def test_the_copy_holds_what_the_queries_read_and_gives_the_masks_figures(monkeypatch, repeated, strategies):
    data = _data(_cases(repeated, strategies))
    table = data.table
    columns = report_columns(table)
    assert ("probe_key" in columns) == repeated
    assert ("strategy" in columns) == ("user_turns" in columns) == strategies
    assert "severity" not in columns and TIER in columns and "probe_id" in columns
    copied = [_figures(data, f) for f in FILTERS]
    monkeypatch.setattr(build_module, "MASKED_ABOVE", 0)  # every filter read through its mask, every column
    monkeypatch.setattr(build_module, "COPIED_BYTES", 0)
    assert copied == [_figures(data, f) for f in FILTERS]
    fails = sum(1 for c in _cases(repeated, strategies) if c["passed"] is False)
    assert copied[0]["counts"]["failed"] == fails and copied[0]["counts"]["passed"] == 0
    assert sum(tier["n"] for tier in copied[0]["by_severity"].values()) == fails
    assert copied[0]["repetitions"]["repeated_probes"] > 0 if repeated else copied[0]["repetitions"]["probes"] == fails
    assert bool(copied[0]["by_strategy"]) == strategies


def test_the_severity_rows_grouped_by_tier_are_those_grouped_by_text():
    data = _data(_cases(True, True))
    table = data.table
    kept = np.arange(table.num_rows) % 3 != 0
    whole = table.filter(pa.array(kept))
    with Session(whole) as texts, Session(whole.select(report_columns(table))) as tiers:
        assert "severity" not in tiers.columns
        for group in GROUPS:
            assert tiers.groups(group) == texts.groups(group), group
        assert [row["severity"] for row in tiers.groups("severity")] == ["critical", "high", "low", "medium"]


def test_a_severity_without_a_tier_keeps_its_text_in_the_copy():
    table = case_table(cases_frame(_data(_cases(False, False)).run))
    odd = table.set_column(
        table.schema.get_field_index(TIER), TIER, pa.array([None] + [1] * (table.num_rows - 1), type=pa.int8())
    )
    assert "severity" in report_columns(odd) and "severity" not in report_columns(table)


def test_the_failure_modes_lists_coded_are_the_same_lists_and_the_engine_counts_their_names():
    from reporting.analysis.case_table import _coded
    from reporting.analysis.engine import FAILURE_MODES

    lists = [["leak", "ünïcode 😀"], [], None, ["leak"], ["", "leak"], None, ["x"]]
    plain = pa.array(lists, type=pa.list_(pa.string()))
    coded = _coded(plain)
    assert pa.types.is_dictionary(coded.type.value_type) and coded.null_count == 2
    assert coded.to_pylist() == lists
    assert _coded(plain.slice(2)).to_pylist() == lists[2:]  # a slice: as it is
    table = pa.table({"detected_failure_modes": coded, "passed": pa.array([False] * len(lists))})
    with Session(table) as engine:
        assert engine.rows(FAILURE_MODES) == [
            {"mode": "leak", "n": 3},
            {"mode": "", "n": 1},
            {"mode": "x", "n": 1},
            {"mode": "ünïcode 😀", "n": 1},
        ]
