"""A report's engine queries run side by side, each on a cursor of its own (``Session.together``), while the calling
thread copies the kept rows (``metrics_while``): the figures must be those of the queries run one after another, to
the last bit; an error in a query or in the work done meanwhile must reach the caller, with every worker stopped."""

from __future__ import annotations

import json
import threading

import pytest

import reporting.analysis.engine as engine_module
from reporting.analysis.case_table import case_table
from reporting.analysis.engine import Session
from reporting.analysis.filters import Filters
from reporting.analysis.metrics import aggregate_metrics, cases_frame
from reporting.report.build import build_report, make_run_data
from reporting.sources.reading import load_run
from tests.conftest import case


def _run(n: int = 400):
    cases = [
        case(
            f"p{i}",
            ("jailbreak", "prompt_injection", "toxicity")[i % 3],
            ("low", "medium", "high", "critical")[i % 4],
            i % 5 != 0,
            round((i * 37 % 100) / 100, 2),
            probe_group=f"g{i % 150}",
        )
        for i in range(n)
    ]
    document = {"schema_version": 3, "run": {"run_id": "t", "model": "m"}, "cases": cases}
    return load_run(json.dumps(document).encode(), "t.json")


def test_side_by_side_gives_the_figures_of_one_query_after_another(monkeypatch):
    data = make_run_data(_run())
    filters = [Filters(), Filters(outcome="fail"), Filters(severities=("high", "critical")), Filters(text="p1")]
    together = [build_report(data, filters=f, with_observability=False).metrics for f in filters]
    monkeypatch.setattr(engine_module, "MOST_AT_ONCE", 1)  # one connection, one query after another
    alone = [build_report(data, filters=f, with_observability=False).metrics for f in filters]
    assert together == alone
    assert together[1]["counts"]["failed"] == 80 and together[1]["counts"]["passed"] == 0  # every fifth case failed


def test_the_work_done_meanwhile_runs_in_the_calling_thread_while_queries_run():
    table = case_table(cases_frame(_run().run))
    seen = {}
    with Session(table) as engine:
        found = engine.together(
            {"run": lambda c: engine.groups("run", c), "worst": lambda c: engine.worst_positions(3, c)},
            lambda: seen.setdefault("thread", threading.current_thread()),
        )
    assert seen["thread"] is threading.current_thread()
    assert found["run"][0]["cases"] == 400 and len(found["worst"]) == 3


def test_an_error_in_a_query_or_meanwhile_reaches_the_caller():
    table = case_table(cases_frame(_run().run))
    with Session(table) as engine:
        with pytest.raises(Exception, match="no_such_column"):
            engine.together(
                {"run": lambda c: engine.groups("run", c), "bad": lambda c: engine.rows("SELECT no_such_column", c)}
            )

        def fails() -> None:
            raise RuntimeError("meanwhile failed")

        with pytest.raises(RuntimeError, match="meanwhile failed"):
            engine.together({"run": lambda c: engine.groups("run", c), "fm": engine.failure_modes}, fails)
        assert engine.groups("run")[0]["cases"] == 400  # the session still answers


def test_aggregate_metrics_of_a_run_is_the_same_through_either_path(monkeypatch):
    run = _run().run
    first = aggregate_metrics(run)
    monkeypatch.setattr(engine_module, "MOST_AT_ONCE", 1)
    assert aggregate_metrics(run) == first
    assert first["repetitions"]["probes"] == 150 and first["repetitions"]["most_repetitions"] == 3


def test_the_figures_keep_the_order_recompute_has_always_written():
    from reporting.analysis.metrics import WORST_CASE_FIELDS

    metrics = aggregate_metrics(_run().run)
    assert list(metrics) == [
        "counts",
        "overall",
        "by_category",
        "by_severity",
        "failure_modes",
        "indices",
        "worst_cases",
        "category_ranking",
        "judges",
        "judge_agreement",
        "judges_not_paired",
        "repetitions",
        "by_strategy",
        "by_strategy_category",
    ]
    assert tuple(metrics["worst_cases"][0]) == WORST_CASE_FIELDS


def test_sessions_open_at_once_share_one_database_and_see_only_their_own_cases(monkeypatch):
    """Every Session is a connection to the process's one DuckDB database (``engine._database``): its table and its
    view of the cases are its own, so sessions open at once, in threads at once, each count their own cases; one
    closed leaves the others (and the database) working."""
    import duckdb

    whole = case_table(cases_frame(_run(400).run))
    small = case_table(cases_frame(_run(30).run))
    engine_module._database()
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: pytest.fail("a Session opened a database of its own"))
    first, second = Session(whole), Session(small)
    try:
        assert engine_module._database() is engine_module._database()  # opened once
        assert first.groups("run")[0]["cases"] == 400 and second.groups("run")[0]["cases"] == 30
        found: dict = {}

        def count(name: str, session: Session) -> None:
            for _ in range(20):
                found.setdefault(name, set()).add(
                    session.together({"run": lambda c: session.groups("run", c)})["run"][0]["cases"]
                )

        threads = [threading.Thread(target=count, args=(n, s)) for n, s in (("first", first), ("second", second))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert found == {"first": {400}, "second": {30}}
    finally:
        first.close()
    assert second.groups("run")[0]["cases"] == 30 and second.evaluated() == 30
    second.close()
    with Session(small, kept=[i % 2 == 0 for i in range(30)]) as third:  # a mask: its own view of the kept rows
        assert third.groups("run")[0]["cases"] == 15
