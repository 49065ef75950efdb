"""The judges' figures and agreement are two engine queries (``JUDGE_COUNTS``, ``JUDGE_PAIRS``) over a table of
verdicts: equal to a plain Python spelling of their definitions on random runs (errors, judges that did not judge,
mappings shared among cases, more judges than are paired), and to a run counted by hand."""

from __future__ import annotations

import random
from itertools import combinations

import pandas as pd
import pytest

from reporting.analysis.figures import proportion
from reporting.analysis.judges import JUDGE_PAIR_CAP, judges_figures, verdict_table
from reporting.analysis.stats import wilson


def spelled(frame: pd.DataFrame, errors: pd.DataFrame) -> dict:
    """The definitions, case by case (docs/metrics.md)."""

    def by_judge(cases: pd.DataFrame) -> dict:
        found: dict = {}
        for i, verdicts in zip(cases.index, cases["verdicts"]):
            for name, verdict in (verdicts or {}).items():
                passed = verdict.get("passed")
                found.setdefault(name, {})[i] = passed if passed in (True, False) else None
        return found

    here, there = by_judge(frame), by_judge(errors)
    judges = {}
    for name in sorted(set(here) | set(there)):
        values = list(here.get(name, {}).values()) + list(there.get(name, {}).values())
        passed, failed = values.count(True), values.count(False)
        rate = proportion(passed, passed + failed)
        judges[name] = {"n": len(values), "passed": passed, "failed": failed, "errors": len(values) - passed - failed}
        judges[name].update(pass_rate=rate[0], pass_rate_ci=rate[1])
    judged = {name: sum(v is not None for v in verdicts.values()) for name, verdicts in here.items()}
    chosen = (
        sorted(judged)
        if len(judged) <= JUDGE_PAIR_CAP
        else sorted(sorted(judged, key=lambda n: (-judged[n], n))[:JUDGE_PAIR_CAP])
    )
    pairs = []
    for first, second in combinations(chosen, 2):
        common = [i for i, v in here[first].items() if v is not None and here[second].get(i) is not None]
        if not common:
            continue
        a, b = [here[first][i] for i in common], [here[second][i] for i in common]
        n, agree = len(a), sum(x == y for x, y in zip(a, b))
        pa, pb = sum(a) / n, sum(b) / n
        expected = pa * pb + (1 - pa) * (1 - pb)
        kappa = None if expected >= 1.0 else (agree / n - expected) / (1 - expected)
        pairs.append(
            {
                "judges": [first, second],
                "n": n,
                "agreement": agree / n,
                "agreement_ci": wilson(agree, n),
                "kappa": kappa,
            }
        )
    return {"judges": judges, "judge_agreement": pairs, "judges_not_paired": max(0, len(judged) - JUDGE_PAIR_CAP)}


def random_frames(rng: random.Random, judges: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    names = [rng.choice(["j", "é", "Z", "a b", "garak.x"]) + str(k) for k in range(judges)]
    shared = [
        {name: {"passed": rng.choice([True, False, None])} for name in rng.sample(names, rng.randrange(len(names) + 1))}
        for _ in range(6)
    ]

    def verdicts():
        kind = rng.random()
        if kind < 0.1:
            return None
        if kind < 0.5:
            return rng.choice(shared)  # one mapping among many cases, as a garak frame shares them
        picked = rng.sample(names, rng.randrange(min(4, len(names)) + 1))
        return {name: {"passed": rng.choice([True, False, None, True])} for name in picked}

    n = rng.randrange(0, 60)
    frame = pd.DataFrame({"verdicts": [verdicts() for _ in range(n)]}, index=range(0, 2 * n, 2))
    errors = pd.DataFrame({"verdicts": [verdicts() for _ in range(rng.randrange(5))]})
    errors.index = range(1, 2 * len(errors) + 1, 2)
    return frame, errors


@pytest.mark.parametrize("seed", range(40))
def test_the_engines_judge_figures_are_their_definitions(seed):
    rng = random.Random(seed)
    frame, errors = random_frames(rng, rng.choice([1, 2, 3, 5, JUDGE_PAIR_CAP + 3]))
    assert judges_figures(frame, errors) == spelled(frame, errors)
    assert judges_figures(frame) == spelled(frame, errors.iloc[:0])


def test_a_run_counted_by_hand():
    """Judges a and b on four evaluated cases and one error: a passes 1, 2; b passes 1, 3; b did not judge 4."""
    frame = pd.DataFrame(
        {
            "verdicts": [
                {"a": {"passed": True}, "b": {"passed": True}},
                {"a": {"passed": True}, "b": {"passed": False}},
                {"a": {"passed": False}, "b": {"passed": True}},
                {"a": {"passed": False}, "b": {"passed": None}},
            ]
        }
    )
    errors = pd.DataFrame({"verdicts": [{"b": {"passed": None}}]}, index=[9])
    found = judges_figures(frame, errors)
    assert found["judges"]["a"] | {} == {**found["judges"]["a"], "n": 4, "passed": 2, "failed": 2, "errors": 0}
    assert (found["judges"]["b"]["n"], found["judges"]["b"]["passed"], found["judges"]["b"]["errors"]) == (5, 2, 2)
    assert found["judges"]["b"]["pass_rate"] == pytest.approx(2 / 3)
    (pair,) = found["judge_agreement"]
    # three cases both judged, agreeing on the first only: observed 1/3; a passes 2/3, b 2/3: expected 5/9
    assert (pair["judges"], pair["n"], pair["agreement"]) == (["a", "b"], 3, 1 / 3)
    assert pair["kappa"] == pytest.approx((1 / 3 - 5 / 9) / (1 - 5 / 9))
    assert found["judges_not_paired"] == 0


def test_the_verdict_table_holds_a_row_a_verdict():
    frame = pd.DataFrame({"verdicts": [{"b": {"passed": None}, "a": {"passed": True}}, None, {}]})
    names, table = verdict_table(frame, pd.DataFrame({"verdicts": [{"a": {"passed": False}}]}))
    assert names == ["a", "b"]
    rows = sorted(zip(*(table.column(c).to_pylist() for c in ("judge", "row", "passed", "evaluated"))))
    assert rows == [(0, 0, True, True), (0, 3, False, False), (1, 0, None, True)]
    assert judges_figures(pd.DataFrame({"verdicts": [None, {}]})) == {
        "judges": {},
        "judge_agreement": [],
        "judges_not_paired": 0,
    }


def test_a_query_that_fails_leaves_the_threads_connection_as_it_was():
    import duckdb
    import pyarrow as pa

    from reporting.analysis.engine import rows_of

    table = pa.table({"x": [1, 2, 3]})
    with pytest.raises(duckdb.Error):
        rows_of("SELECT nothing FROM t", {"t": table})
    assert rows_of("SELECT sum(x) AS s FROM t", {"t": table}) == [{"s": 6}]
    with pytest.raises(duckdb.Error):  # each query's tables are its own: none is left registered after it
        rows_of("SELECT * FROM t", {})
