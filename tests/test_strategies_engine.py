"""Attack success by strategy from the engine's counts (``STRATEGIES``, ``STRATEGY_CATEGORIES``, ``TURNS_TO_BREAK``):
the same figures as a plain Python spelling of each over the cases, in Python's order of the names (the engine
orders text by code point, as Python sorts it), whatever the names; the median of the turns from their counts."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest

from reporting.analysis.filters import Filters
from reporting.analysis.strategies import _median
from reporting.report.build import build_report, make_run_data
from reporting.sources.reading import load_run
from tests.conftest import case

NAMES = ["crescendo", "basic", "Émoji-😀", "goat", "ßeta", "Zulu", "zulu", "", "a b", "中文"]


def test_the_median_of_counted_turns_is_numpys():
    rng = random.Random(3)
    assert _median({}) is None
    for _ in range(300):
        distribution = {t: rng.randint(1, 4) for t in rng.sample(range(1, 12), rng.randint(1, 6))}
        expanded = [t for t, n in distribution.items() for _ in range(n)]
        assert _median(distribution) == float(np.median(expanded))


def _conversation(user_turns: int) -> list[dict]:
    turns = []
    for i in range(user_turns):
        turns += [{"role": "user", "content": f"ask {i}"}, {"role": "assistant", "content": f"answer {i}"}]
    return turns


def test_the_engines_counts_are_those_of_the_cases_under_every_filter():
    rng = random.Random(11)
    cases = []
    for i in range(400):
        extra = {}
        if rng.random() < 0.8:
            extra["strategy"] = rng.choice(NAMES)
        if rng.random() < 0.5:
            extra["messages"] = _conversation(rng.randint(1, 5))
        passed = rng.random() < 0.5
        item = case(f"p{i}", rng.choice(["jailbreak", "toxicity", "pii"]), rng.choice(["low", "high"]), passed, 0.5)
        cases.append({**item, **extra})
    document = {"schema_version": 3, "run": {"run_id": "s", "model": "m"}, "cases": cases}
    result = load_run(json.dumps(document).encode(), "s.json")
    assert not result.problems
    data = make_run_data(result)
    for filters in (Filters(), Filters(outcome="fail"), Filters(categories=("pii",)), Filters(text="p1")):
        report = build_report(data, filters=filters, with_observability=False)
        frame = report.frame
        rows = [
            (s, c, bool(p), int(t))
            for s, c, p, t in zip(frame["strategy"], frame["category"], frame["passed"], frame["user_turns"])
            if s is not None
        ]
        expected = {}
        for name in sorted({r[0] for r in rows}):
            mine = [r for r in rows if r[0] == name]
            broke = Counter(r[3] for r in mine if not r[2] and r[3] > 0)
            expected[name] = {
                "n": len(mine),
                "attacks_succeeded": sum(1 for r in mine if not r[2]),
                "turns_to_break": {str(k): broke[k] for k in sorted(broke)},
                "turns_to_break_median": float(np.median(list(broke.elements()))) if broke else None,
            }
        got = report.metrics["by_strategy"]
        assert list(got) == list(expected), filters  # Python's order of the names
        for name, figures in expected.items():
            assert {k: got[name][k] for k in figures} == figures, (filters, name)
            assert got[name]["attack_success_rate"] == pytest.approx(figures["attacks_succeeded"] / figures["n"])
        pairs = Counter((r[0], r[1]) for r in rows)
        heat = report.metrics["by_strategy_category"]
        assert {(s, c): f["n"] for s, cats in heat.items() for c, f in cats.items()} == dict(pairs)
        assert list(heat) == sorted(heat) and all(list(cats) == sorted(cats) for cats in heat.values())


def test_a_table_naming_no_strategy_gives_the_queries_own_empty_answer():
    """A table none of whose cases names a strategy is told by its column's null count, no query run: the answer
    is what the three queries give over it (empty), and a table naming one, even through a filter's mask keeping
    none of its cases, runs them."""
    import pyarrow as pa

    from reporting.analysis.engine import STRATEGIES, STRATEGY_CATEGORIES, TURNS_TO_BREAK, Session

    cases = [case(f"s{i}", "cat", "high", i % 2 == 0, 0.5) for i in range(6)]
    document = {"schema_version": 3, "run": {"run_id": "s", "model": "m"}, "cases": cases}
    data = make_run_data(load_run(json.dumps(document).encode(), "s.json"))
    table = data.table
    assert table["strategy"].null_count == table.num_rows
    with Session(table) as engine:
        assert not engine.strategies_named
        asked = {
            name: engine.rows(sql)
            for name, sql in (
                ("strategies", STRATEGIES),
                ("strategy_categories", STRATEGY_CATEGORIES),
                ("turns_to_break", TURNS_TO_BREAK),
            )
        }
        assert engine.strategies() == asked == {"strategies": [], "strategy_categories": [], "turns_to_break": []}
    named = table.set_column(table.column_names.index("strategy"), "strategy", pa.array(["goat"] + [None] * 5))
    with Session(named) as engine:
        assert engine.strategies_named and engine.strategies()["strategies"] == [
            {"strategy": "goat", "n": 1, "failed": 0}
        ]
    kept = np.array([False] + [True] * 5)
    with Session(named, kept) as engine:
        assert engine.strategies_named and engine.strategies()["strategies"] == []
