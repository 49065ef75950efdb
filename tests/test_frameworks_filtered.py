"""The framework figures of a filtered report come from the run's cases grouped once (``RunCases``): a filter counts
its kept positions instead of grouping its cases again. They must equal the figures counted from the kept cases'
own columns, for every filter, with errors, tool tags and plugins; and a filter counted by hand."""

from __future__ import annotations

import json
import random

import pytest

from reporting.analysis.filters import Filters
from reporting.analysis.frameworks import builtin_catalog
from reporting.report.build import build_report, make_run_data
from reporting.report.frameworks import RunCases, column_figures, kept_cases, kept_figures
from reporting.sources.reading import load_run

CATEGORIES = ["prompt_injection", "jailbreak", "misinformation", "pii_leak", "benign_capability", "toxicity", ""]
TAGS = [None, [], ["owasp:llm01"], ["owasp:llm06", "avid-effect:security:S0403"], ["", "quality:Security"]]
PLUGINS = [None, "harmful:hate", "pii", "indirect-prompt-injection", ""]
SEVERITIES = ["low", "medium", "high", "critical"]


def _run(seed: int, n: int = 240):
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        case = {
            "probe_id": f"p{i % 97}",  # ids repeat, as a probe's generations do
            "category": rng.choice(CATEGORIES) or "uncategorised",
            "severity": rng.choice(SEVERITIES),
            "passed": rng.random() < 0.6,
            "risk_score": round(rng.random(), 3),
            "detected_failure_modes": rng.choice([[], ["harmful_content"], ["policy_evasion", "harmful_content"]]),
        }
        if rng.random() < 0.1:
            case.update(passed=None, error="timeout")
        tags, plugin = rng.choice(TAGS), rng.choice(PLUGINS)
        if tags is not None:
            case["tags"] = tags
        if plugin:
            case["plugin"] = plugin
        cases.append(case)
    document = {"schema_version": 3, "run": {"run_id": f"r{seed}", "model": "m"}, "cases": cases}
    result = load_run(json.dumps(document).encode(), "run.json")
    assert result.run is not None, result.problems
    return make_run_data(result)


FILTERS = [
    Filters(),
    Filters(outcome="fail"),
    Filters(outcome="pass"),
    Filters(severities=("critical", "high")),
    Filters(outcome="fail", severities=("critical",)),
    Filters(categories=("prompt_injection", "jailbreak")),
    Filters(failure_modes=("policy_evasion",)),
    Filters(text="p1"),
    Filters(text="no such text anywhere"),
]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_filtered_figures_equal_the_figures_of_the_kept_columns(seed):
    data = _run(seed)
    assert isinstance(data.cases, RunCases) and data.cases.groups is not None
    catalog = builtin_catalog()
    for filters in FILTERS:
        report = build_report(data, filters=filters, with_observability=False)
        expected = column_figures(kept_cases(data.run, report.frame, report.errors), catalog)
        assert report.frameworks is not None
        assert report.frameworks.figures == expected, filters
        for items in report.frameworks.figures.values():  # one failing id per failing case of each item
            assert all(len(row["failing_case_ids"]) == row["failed"] for row in items.values())


def test_a_filter_counted_by_hand():
    document = {
        "schema_version": 3,
        "run": {"run_id": "hand", "model": "m"},
        "cases": [
            {"probe_id": "a", "category": "prompt_injection", "severity": "high", "passed": False, "risk_score": 0.9},
            {"probe_id": "b", "category": "prompt_injection", "severity": "low", "passed": False, "risk_score": 0.4},
            {"probe_id": "c", "category": "prompt_injection", "severity": "high", "passed": True, "risk_score": 0.1},
            {"probe_id": "d", "category": "misinformation", "severity": "critical", "passed": False, "risk_score": 1},
            {
                "probe_id": "e",
                "category": "misinformation",
                "severity": "high",
                "passed": None,
                "error": "x",
                "risk_score": 0,
            },
            {
                "probe_id": "f",
                "category": "benign_capability",
                "severity": "high",
                "passed": False,
                "risk_score": 0.8,
                "tags": ["owasp:llm01"],
            },
        ],
    }
    result = load_run(json.dumps(document).encode(), "hand.json")
    assert not result.problems and result.run is not None and len(result.run.cases) == 6
    data = make_run_data(result)
    figures = build_report(data, filters=Filters(severities=("high",)), with_observability=False).frameworks.figures
    llm01 = figures["owasp-llm-2025"]["LLM01"]  # a, c (prompt_injection, high) and f (its tag)
    assert (llm01["n"], llm01["passed"], llm01["failed"], llm01["errors"]) == (3, 1, 2, 0)
    assert list(llm01["failing_case_ids"]) == ["a", "f"] and llm01["worst_failing_severity"] == "high"
    llm09 = figures["owasp-llm-2025"]["LLM09"]  # misinformation: e only, an error
    assert (llm09["n"], llm09["errors"], llm09["pass_rate"]) == (0, 1, None)
    everything = build_report(data, with_observability=False).frameworks.figures["owasp-llm-2025"]
    assert (everything["LLM01"]["n"], everything["LLM01"]["failed"]) == (4, 3)
    assert list(everything["LLM01"]["failing_case_ids"]) == ["a", "b", "f"]
    assert everything["LLM09"]["worst_failing_severity"] == "critical"


def test_without_groups_the_kept_columns_decide():
    data = _run(4, 60)
    report = build_report(data, filters=Filters(outcome="fail"), with_observability=False)
    ungrouped = RunCases(data.cases.positions, data.cases.ids, None)
    catalog = builtin_catalog()
    assert kept_figures(ungrouped, data.run, report.frame, report.errors, catalog) == report.frameworks.figures
    assert kept_figures(None, data.run, report.frame, report.errors, catalog) == report.frameworks.figures


def test_kept_rows_are_placed_among_the_run_positions():
    import numpy as np
    import pandas as pd

    from reporting.report.frameworks import _places, _positions

    def rows(*positions):
        return pd.DataFrame({"x": range(len(positions))}, index=pd.Index(positions, dtype=np.int64))

    assert _places(np.array([2, 5, 7, 9]), _positions([rows(9, 5)], ascending=True)).tolist() == [
        1,
        3,
    ]  # sorted into the run's order
    assert _places(np.array([2, 5, 7, 9]), _positions([rows(5), rows(2, 9)], ascending=True)).tolist() == [0, 1, 3]
    assert (
        _places(np.array([2, 5, 7, 9]), _positions([rows(5, 6)], ascending=True)) is None
    )  # 6 is not a case of the run
    assert _places(np.array([2, 5, 7, 9]), _positions([rows(5, 10)], ascending=True)) is None
    assert _places(np.arange(4), _positions([rows(1, 3), rows(0)], ascending=True)).tolist() == [
        0,
        1,
        3,
    ]  # every position: as they are
    assert _places(np.arange(4), _positions([rows(1, 4)], ascending=True)) is None
    assert _places(np.arange(4), _positions([rows()], ascending=True)).tolist() == []


def test_a_run_without_cases_has_no_groups_and_every_item_untested():
    result = load_run(b'{"run": {"run_id": "empty"}, "cases": []}', "empty.json")
    data = make_run_data(result)
    assert len(data.cases.groups) == 0 and data.cases.groups.keys == []
    figures = build_report(data, filters=Filters(outcome="fail"), with_observability=False).frameworks.figures
    assert figures["owasp-llm-2025"]["LLM01"]["n"] == 0 and not any(
        row["tested"] for items in figures.values() for row in items.values()
    )


def test_groups_keyed_with_the_key_renumbered_as_it_would_overflow_are_the_same(monkeypatch):
    """The columns' codes are combined into one number, renumbered before the product could pass ``KEY_SPAN``: a
    span so small that every column renumbers gives the same groups, in the same order."""
    from reporting.analysis import framework_tally

    whole = _run(4, 400).cases.groups
    monkeypatch.setattr(framework_tally, "KEY_SPAN", 3)
    renumbered = _run(4, 400).cases.groups
    assert renumbered.keys == whole.keys and len(whole.keys) > 10
    assert (renumbered.group == whole.group).all() and (renumbered.verdict == whole.verdict).all()


@pytest.mark.parametrize("seed", range(4))
def test_each_groups_worst_rank_is_the_highest_of_its_failures(seed):
    """``_worst_of_groups`` (ranks ordered by group, one ``maximum.reduceat``) raises each group to what
    ``np.maximum.at`` raises it to: few ranks or many, negative ranks, groups with no failure (first, last, between)."""
    import numpy as np

    from reporting.analysis.framework_tally import _worst_of_groups

    rng = np.random.default_rng(seed)
    for levels in (1, 2, 5, 300):
        n_groups, n = int(rng.integers(1, 40)), int(rng.integers(0, 400))
        group = rng.integers(0, n_groups, n).astype(np.int32)
        low = int(rng.integers(-5, 3))
        ranks = rng.integers(low, low + levels, n).astype(np.int16)
        start = rng.integers(-2, 2, n_groups).astype(np.int64)
        expected, got = start.copy(), start.copy()
        np.maximum.at(expected, group, ranks)
        order = np.argsort(group, kind="stable")
        _worst_of_groups(got, ranks[order], np.cumsum(np.bincount(group, minlength=n_groups)))
        assert got.tolist() == expected.tolist(), levels
