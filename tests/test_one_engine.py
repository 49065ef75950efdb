"""Every figure of the registry has one implementation: the engine's SQL aggregates (reporting/analysis/engine.py),
named by the registry, derived by reporting/analysis/figures.py, for a run (``aggregate_metrics``) and for a run
store alike. No other module computes one of them."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import reporting
from reporting.analysis import figures
from reporting.analysis.engine import AGGREGATES, Session, one_row
from reporting.analysis.metrics import aggregate_metrics
from reporting.analysis.registry import FIGURES, lookup
from reporting.format.parquet import case_table

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_runs").glob("*.json"))


def _runs(hand_report):
    yield "hand", reporting.read_run(json.dumps(hand_report).encode())
    for path in SAMPLES:
        if path.name.count(".") == 1:  # a run, not a companion file
            yield path.name, reporting.read_run(str(path))


def _row(run):
    """The engine's run row over the run's whole case table (errors included, as a store holds it)."""
    with Session(case_table(run, "k")) as session:
        return one_row(session.groups("run"))


def _from(row, names):
    """The registry's figures computed from ``names`` of the row's aggregates alone."""
    kept = {name: row[name] for name in names}
    errors = int(kept.get("errors") or 0)
    overall = figures.with_error_rate(figures.overall(kept), errors, figures.evaluated(kept) + errors)
    return {"overall": overall, "indices": figures.indices(kept)}


def test_every_figure_names_the_aggregates_it_is_computed_from(hand_report):
    for figure in FIGURES:
        assert figure.aggregates, f"{figure.key} names no aggregate of the engine"
        assert set(figure.aggregates) <= set(AGGREGATES), figure.key
    checked = 0
    for name, run in [*_runs(hand_report), ("with an error", _with_an_error(hand_report))]:
        row = _row(run)
        metrics = aggregate_metrics(run)
        for figure in FIGURES:
            got = lookup(_from(row, figure.aggregates), figure.path)
            want = lookup(metrics, figure.path)
            assert (got is None) == (want is None), (name, figure.key)
            if want is not None:
                assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (name, figure.key)
                checked += 1
            if figure.interval:  # its interval too, from the same aggregates
                got_ci, want_ci = (
                    lookup(_from(row, figure.aggregates), figure.interval),
                    lookup(metrics, figure.interval),
                )
                assert (got_ci is None) == (want_ci is None), (name, figure.key)
                if want_ci is not None:
                    assert got_ci == pytest.approx(want_ci, rel=1e-12, abs=1e-15), (name, figure.key)
    assert checked >= 4 * len(FIGURES) - 4  # the runs give (nearly) every figure a value


def _with_an_error(hand_report):
    document = {**hand_report, "schema_version": 2, "cases": [*hand_report["cases"]]}
    document["cases"].append(
        {
            "probe_id": "err-1",
            "category": "x",
            "severity": "low",
            "passed": None,
            "risk_score": None,
            "error": "timeout",
        }
    )
    return reporting.read_run(json.dumps(document).encode())


def test_a_figure_without_one_of_its_aggregates_is_not_computed(hand_report):
    """The names are the real inputs: take any one away and the figure or its interval changes or has no value."""
    run = _with_an_error(hand_report)
    assert aggregate_metrics(run)["counts"]["errors"] == 1
    row = _row(run)
    for figure in FIGURES:

        def value_and_interval(names, figure=figure):
            found = _from(row, names)
            return lookup(found, figure.path), lookup(found, figure.interval)

        full = value_and_interval(figure.aggregates)
        for missing in figure.aggregates:
            names = tuple(n for n in figure.aggregates if n != missing)
            try:
                without = lookup(_from(row, names), figure.path)
            except (TypeError, KeyError):
                continue
            assert without != full, (figure.key, missing)


def _computing_modules():
    """(module, key) for every dict entry of a module whose key is a registry figure (or its interval) and whose
    value is computed there: a division, a call, an arithmetic expression."""
    leaves = {figure.path.rsplit(".", 1)[1] for figure in FIGURES}
    leaves |= {figure.interval.rsplit(".", 1)[1] for figure in FIGURES if figure.interval}
    found = []
    for path in sorted((ROOT / "reporting").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in leaves:
                    if _computes(value):
                        found.append((str(path.relative_to(ROOT)), key.value))
    return found


def _computes(value: ast.expr) -> bool:
    if isinstance(value, ast.IfExp):
        return _computes(value.body) or _computes(value.orelse)
    return isinstance(value, ast.BinOp) or (isinstance(value, ast.Call) and not _is_copy(value))


def _is_copy(call: ast.Call) -> bool:
    """A call that takes a computed value (``lookup``, ``.get``, ``float``, a formatter), not one that computes it."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name in {"get", "lookup", "float", "int", "fmt_percent", "fmt_ratio", "fmt_number", "_round"} or (
        name == "proportion"  # the one definition of a rate, for other groupings' rates
    )


def test_no_module_but_the_figures_module_computes_a_registry_figure():
    outside = [(module, key) for module, key in _computing_modules() if module != "reporting/analysis/figures.py"]
    assert outside == []
    assert ("reporting/analysis/figures.py", "pass_rate") in _computing_modules()  # the scan sees computations


def test_a_filtered_report_takes_the_runs_table_rows_and_gets_the_figures_of_its_cases():
    """The dashboard's filter keeps the run's engine table and takes its rows: the same figures (worst cases
    included) as the filtered cases computed afresh."""
    from reporting.analysis.filters import Filters
    from reporting.report.build import build_report, run_data

    data = run_data(reporting.read_run(str(ROOT / "sample_runs" / "acme-assistant-v1.json")))
    assert data.table is not None and data.table.num_rows == len(data.frame)
    categories = sorted(set(data.frame["category"]))[1:3]
    for filters in (Filters(categories=tuple(categories)), Filters(outcome="fail"), Filters(severities=("low",))):
        report = build_report(data, filters=filters, with_observability=False)
        kept = filters.apply(data.frame)
        assert 0 < len(kept) < len(data.frame)
        fresh = aggregate_metrics(kept, errors=0, error_cases=data.errors.iloc[0:0])
        for key in ("counts", "overall", "by_category", "by_severity", "worst_cases", "failure_modes", "indices"):
            assert report.metrics[key] == fresh[key], (filters, key)


class _Reads(dict):
    """A row that records the aggregates read from it."""

    def __init__(self, row):
        super().__init__(row)
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


def test_a_category_and_a_severity_tier_read_only_the_aggregates_their_rows_carry(hand_report):
    """The engine's rows of categories and severity tiers carry only what ``figures.category`` and
    ``figures.by_severity`` read (the 10M filter's severity query: 3 sums, not 24 aggregates): a read outside them
    would be a figure without a value, so each read is recorded against a row holding every aggregate."""
    from reporting.analysis.engine import DUCKDB, GROUP_READS, query

    run = reporting.read_run(str(ROOT / "sample_runs" / "acme-assistant-v1.json"))
    with Session(case_table(run, "k")) as session:
        full = {
            group: session.rows(query("run", DUCKDB, session.columns).replace("run_key", f"run_key, {group}"))
            for group in ("category", "severity")
        }
        carried = {group: session.groups(group) for group in ("category", "severity")}
    assert len(full["category"]) > 2 and len(full["severity"]) > 2
    category_rows = [_Reads(row) for row in full["category"]]
    by_category = figures.by_category(category_rows)
    severity_rows = [_Reads(row) for row in full["severity"]]
    by_severity = figures.by_severity(severity_rows)
    aggregate_names = set(AGGREGATES)
    for group, rows in (("category", category_rows), ("severity", severity_rows)):
        read = set().union(*(row.read for row in rows)) & aggregate_names
        assert read and read <= {"cases", *GROUP_READS[group]}, (group, sorted(read - set(GROUP_READS[group])))
        assert {name for row in carried[group] for name in row} & aggregate_names == {"cases", *GROUP_READS[group]}
    # the carried rows give the same figures as rows of every aggregate
    assert figures.by_category(carried["category"]) == by_category
    assert figures.by_severity(carried["severity"]) == by_severity
    assert len(carried["severity"][0]) < len(full["severity"][0]) - 10


def test_a_session_reads_one_run_without_grouping_by_its_key_and_gets_the_rows_grouped(hand_report):
    """A Session's view is one run (``run_key`` '' on every row): its queries do not group by that constant
    (``query(..., one_run=True)``); every row the same as grouped by it, to the bit, and no row where no case is."""
    import numpy as np

    from reporting.analysis.engine import DUCKDB, GROUPS, query

    for name, run in _runs(hand_report):
        table = case_table(run, "k")
        for kept in (None, np.arange(table.num_rows) % 3 == 0, np.zeros(table.num_rows, dtype=bool)):
            with Session(table, kept) as session:
                for group in GROUPS:
                    grouped = session.rows(query(group, DUCKDB, session.columns))
                    assert "GROUP BY run_key" not in query(group, DUCKDB, session.columns, one_run=True)
                    assert session.groups(group) == grouped, (name, group)
                    empty = kept is not None and not kept.any()
                    assert (grouped == []) if empty else (len(grouped) == 1 or group != "run"), (name, group)


def test_the_severity_tests_over_the_tier_count_the_cases_the_text_tests_count(hand_report):
    """The engine's case table carries each severity's tier (its place in SEVERITIES) and the aggregates test it
    instead of the text; a table without it (a store's) tests the text: every row the same, to the bit, including a
    severity outside the four (its tier null, as no text test holds for it)."""
    import numpy as np
    import pyarrow as pa

    from reporting.analysis.case_table import TIER, _tiers
    from reporting.analysis.case_table import case_table as engine_table
    from reporting.analysis.engine import DUCKDB, GROUPS, query
    from reporting.analysis.metrics import cases_frame

    for name, run in _runs(hand_report):
        table = engine_table(cases_frame(run))
        odd = table.set_column(
            table.schema.get_field_index("severity"),
            "severity",
            pa.array([("severe", "HIGH", None, "critical")[i % 4] for i in range(table.num_rows)], type=pa.string()),
        )
        odd = odd.set_column(odd.schema.get_field_index(TIER), TIER, _tiers(odd["severity"]))
        for given in (table, odd):
            assert TIER in given.column_names and f"{TIER} >= 2" in query("run", DUCKDB, given.column_names)
            for kept in (None, np.arange(given.num_rows) % 2 == 0):
                with Session(given, kept) as tiers, Session(given.drop_columns([TIER]), kept) as texts:
                    for group in GROUPS:
                        assert tiers.groups(group) == texts.groups(group), (name, group)
        with Session(odd) as session:
            row = session.groups("run")[0]
            assert row["critical_failed"] == sum(
                1 for i, p in enumerate(table["passed"].to_pylist()) if i % 4 == 3 and not p
            )


def test_the_run_row_asked_in_two_queries_side_by_side_is_the_row_of_one(hand_report):
    """A report asks for the run's percentiles and deviations (``SPREAD``) in a query of their own beside the rest;
    joined, the two rows are the one query's row, to the bit; neither carries the other's aggregates."""
    import numpy as np

    from reporting.analysis.engine import SPREAD

    for name, run in _runs(hand_report):
        table = case_table(run, "k")
        for kept in (None, np.arange(table.num_rows) % 2 == 1, np.zeros(table.num_rows, dtype=bool)):
            with Session(table, kept) as session:
                whole = session.groups("run")
                rest = session.groups("run", only=lambda n: n not in SPREAD)
                spread = session.groups("run", only=SPREAD.__contains__)
            assert [{**a, **b} for a, b in zip(rest, spread)] == whole, name
            assert len(rest) == len(spread) == len(whole) == (0 if kept is not None and not kept.any() else 1)
            for row in rest:
                assert not SPREAD & set(row) and "risk_sum" in row
            for row in spread:
                assert set(row) == {"run_key", "cases", *SPREAD}
