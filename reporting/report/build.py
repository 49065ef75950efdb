"""``build_report``: the one way a report is made, by the command line, the dashboard and its download."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any, Optional, Union

from reporting._gc import gc_paused
from reporting._memory import give_back
from reporting.analysis.case_table import case_table
from reporting.analysis.contradiction import case_contradictions
from reporting.analysis.drift import drift
from reporting.analysis.engine import report_columns
from reporting.analysis.filters import NO_FILTERS, Filters
from reporting.analysis.framework_maps import Catalog
from reporting.analysis.judges import judge_rows, kept_judge_rows
from reporting.analysis.metrics import aggregate_metrics, cases_frame, error_frame, metrics_while
from reporting.analysis.observability import (
    DEFAULT_EMBEDDING,
    DEFAULT_MIN_CASES,
    SAMPLE_ABOVE,
    observability,
    sample_geometry,
)
from reporting.format.reading import LoadResult
from reporting.format.schema import RunReport
from reporting.format.table_run import table_of
from reporting.report.baseline import baseline_summary
from reporting.report.cards import JudgeCards, shipped_cards
from reporting.report.companions import Companions, rubric_results
from reporting.report.frameworks import framework_results, kept_figures, run_cases
from reporting.report.model import KeptRows, Report, RubricResults, RunData
from reporting.report.reviewing import BASES, Reviews, apply_reviews, summary


def make_run_data(result: LoadResult) -> RunData:
    if result.run is None:
        empty = RunReport.model_construct(cases=[])  # type: ignore[call-arg]
        frame = cases_frame(empty)
        return RunData(result, frame, aggregate_metrics(frame), (), (), error_frame(empty))
    frame = cases_frame(result.run)
    errors = error_frame(result.run)
    give_back()  # what making the frame freed, before the engine's table and queries (at 10M cases: 200 MB)
    table = case_table(frame, table_of(result.run))
    judged = cache(lambda: judge_rows(frame))  # found while the engine's queries run, kept for the filters
    full = metrics_while(table, lambda: frame, len(errors), errors, judged=judged)[0]
    found = drift(result.run, frame, full)
    cases = run_cases(result.run, frame, errors)
    return RunData(result, frame, full, found, tuple(sorted(full["failure_modes"])), errors, table, cases, judged())


# above this many cases a filter's figures read the run's table through the filter's mask (``_kept_table``), unless
# a table of the kept rows takes at most ``COPIED_BYTES`` (its queries a third faster; the copy given back after)
MASKED_ABOVE = 2_000_000
COPIED_BYTES = 400 * 2**20


def run_data(run: RunReport) -> RunData:
    return make_run_data(LoadResult(run.run.run_id, run, [], len(run.cases)))


def reviewed_data(judged: RunData, reviews: Reviews, basis: str) -> tuple[RunData, dict[str, Any]]:
    """The run's data on the basis asked (as judged, or with the reviewers' verdicts; drift always of the run as
    judged, whose figures a file stores) and the review's summary."""
    if basis not in BASES:
        raise ValueError(f"basis: one of {', '.join(BASES)}, not {basis!r}")
    assert judged.run is not None
    adjudication, reviewed = apply_reviews(judged.run, reviews.records)
    as_reviewed = replace(make_run_data(replace(judged.result, run=reviewed)), drift=judged.drift)
    found = summary(judged.run, adjudication, judged.metrics, as_reviewed.metrics, basis, reviews)
    return (as_reviewed if basis == "reviewed" else judged), found


def build_report(
    run: Union[RunReport, RunData],
    *,
    filters: Filters = NO_FILTERS,
    companions: Optional[Companions] = None,
    min_cases: int = DEFAULT_MIN_CASES,
    seed: int = 0,
    embedding: str = DEFAULT_EMBEDDING,
    with_observability: bool = True,
    observability_result: Optional[Mapping[str, Any]] = None,
    reviews: Optional[Reviews] = None,
    basis: str = "judged",
    judge_cards: Optional[JudgeCards] = None,
    catalog: Optional[Catalog] = None,
    catalog_problems: tuple[str, ...] = (),
    baseline: Optional[RunReport] = None,
) -> Report:
    """The report of a run: with ``filters``, every figure is recomputed from the kept cases only (drift is
    always checked on the whole run, whose figures a file stores). ``companions`` adds rubric results;
    ``observability_result`` hands in geometry already computed for the same cases (the dashboard's cache).
    ``reviews``: people's decisions on the verdicts, summarised under ``review``; with ``basis="reviewed"`` every
    figure is computed on the reviewed verdicts (docs/review.md). ``judge_cards``: each judge's measured validity
    (report/cards.py), by default the built-in judges' shipped cards. ``catalog``: the framework tables (built-in by
    default; a user's ``--frameworks`` file extends them), whose figures go under ``metrics["frameworks"]``.
    ``baseline``: a run to compare against (the whole runs, paired by probe), summarised for the first screen."""
    with gc_paused():
        data = run if isinstance(run, RunData) else run_data(run)
        if data.run is None:
            raise ValueError("a report needs a readable run")
        review = None
        if reviews is not None:
            data, review = reviewed_data(data, reviews, basis)
        metrics: Mapping[str, Any]
        if filters.active:
            kept = filters.mask(data.frame)
            errors = filters.apply_errors(data.errors)
            whole = data.frame
            rows = KeptRows(whole=whole, kept=kept)
            # the judges' verdicts of the kept rows and their framework figures are counted while the engine's table
            # of them is made (the run's judges' rows kept, no column is copied: the worst cases' rows are read once
            # known); every column only when a page or an export reads the frame
            judged = data.judged
            metrics, figures = metrics_while(
                lambda: _kept_table(data, kept, rows.count),
                lambda: rows.columns(() if judged is not None else ("verdicts",)),
                len(errors),
                errors,
                lambda frame: kept_figures(data.cases, data.run, frame, errors, catalog, rows.get),
                rows_at=rows.at,
                judged=None if judged is None else lambda: kept_judge_rows(judged, kept),
            )
            if data.table is not None and data.table.num_rows > MASKED_ABOVE:
                give_back()  # what the queries and copies freed, before a page reads the view (tens of ms)
        else:
            metrics, errors = data.metrics, data.errors
            rows = KeptRows(data.frame)
            figures = kept_figures(data.cases, data.run, data.frame, errors, catalog)
        frameworks = framework_results(data.run, figures, catalog, catalog_problems)
        metrics = {**metrics, "frameworks": frameworks.aggregate()}
        talks = data.frame["has_conversation"].to_numpy(dtype=bool)  # the kept cases with a conversation
        talks = talks & kept if filters.active else talks
        report = Report(
            data,
            filters,
            rows,
            metrics,
            rubrics=_rubrics(data.frame[talks] if talks.any() else data.frame.iloc[:0], companions),
            errors=errors,
            review=review,
            judge_cards=shipped_cards() if judge_cards is None else judge_cards,
            frameworks=frameworks,
            baseline=None if baseline is None else baseline_summary(baseline, report_run(data)),
        )
        if observability_result is not None:
            return replace(report, observability=observability_result)
        if with_observability:
            return with_geometry(report, min_cases, seed, embedding)
        return report


def _kept_table(data: RunData, kept: Any, count: int) -> tuple[Any, Any]:
    """The engine's table of a filter's kept cases (``count`` of them), and the mask it is read through: above
    ``MASKED_ABOVE`` cases, when a table of the kept rows would take more than ``COPIED_BYTES`` (the run's bytes a
    row times the kept rows), the run's own table through the mask (DuckDB's scan reads the kept rows: no copy of
    them, slower by a third), else a table of the kept rows (a hand-made frame's: made from them). At ten million
    cases the copy's bound is what the open's peak leaves above the resident set once the run is open."""
    if data.table is None:
        return case_table(data.frame[kept]), None
    table = data.table
    if table.num_rows > MASKED_ABOVE and count * table.nbytes > COPIED_BYTES * table.num_rows:
        return table, kept
    return table.select(report_columns(table)).filter(kept), None  # the columns the queries read


def report_run(data: RunData) -> RunReport:
    run = data.run
    if run is None:
        raise ValueError("a report needs a readable run")
    return run


def with_geometry(
    report: Report, min_cases: int = DEFAULT_MIN_CASES, seed: int = 0, embedding: str = DEFAULT_EMBEDDING
) -> Report:
    """The report with observability computed for its kept cases."""
    if report.observability is not None:
        return report
    if report.shown > SAMPLE_ABOVE:  # the sample's rows alone: a filter of ten million cases is not copied whole
        strata = report.columns(("category", "passed"))
        geometry = sample_geometry(strata, report.at, min_cases=min_cases, seed=seed, embedding=embedding)
    else:
        geometry = observability(report.frame, min_cases=min_cases, seed=seed, embedding=embedding)
    return replace(report, observability=geometry)


def _rubrics(frame: Any, companions: Optional[Companions]) -> Optional[RubricResults]:
    found = rubric_results(companions) if companions is not None and companions.any else RubricResults()
    results = replace(found, contradictions=tuple(case_contradictions(frame)))
    return None if results.empty else results
