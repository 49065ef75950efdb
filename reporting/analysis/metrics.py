"""Run-level figures (``aggregate_metrics``) recomputed from the cases, exactly as docs/metrics.md defines them.

The case frame (``cases_frame``) holds a run's evaluated cases; the figures of the registry, per category and per
severity, the failure modes, the indices, the worst cases, each probe's repetitions and the attack strategies' counts
are computed by the engine (``reporting.analysis.engine``: one SQL text, run by DuckDB over the frame's columns and by
the run store's engines), the judges' figures by their module. Plain Python values come out: floats, ints,
lists and dicts, with ``None`` where a figure has no defined value.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from reporting._gc import gc_paused
from reporting.analysis import figures
from reporting.analysis.case_table import case_table
from reporting.analysis.contradiction import derive_self_contradiction
from reporting.analysis.engine import SPREAD, Session, one_row
from reporting.analysis.grouping import probe_keys
from reporting.analysis.judges import judges_figures
from reporting.analysis.repetitions import repetition_figures
from reporting.analysis.strategies import by_strategy, by_strategy_category, user_turns
from reporting.analysis.table_frame import table_columns
from reporting.format.schema import DEFAULT_SEVERITY_WEIGHTS, SEVERITIES, Case, RunReport
from reporting.format.severity import weighted_risk
from reporting.format.table_run import table_of

WORST_CASES = 10

LIST_COLUMNS = ("matched_safe_patterns", "matched_unsafe_patterns", "detected_failure_modes", "failure_modes")
TEXT_COLUMNS = ("task", "probe_input", "response", "explanation")
FRAME_COLUMNS = (
    "probe_id",
    "category",
    "severity",
    "passed",
    "risk_score",
    "severity_weight",
    "weighted_risk",
    "stored_weighted_risk",
    "safe_signal_hits",
    "unsafe_signal_hits",
    "boundary_or_refusal_signal",
    *LIST_COLUMNS,
    *TEXT_COLUMNS,
    "verdicts",  # judge name -> Verdict (schema version 2)
    "probe_group",
    "source_id",
    "extra",
    "has_conversation",  # the case carries a multi-turn conversation: the self-contradiction rubric applies
    "probe_key",  # the repetition key (probe_group, else probe_id) as an integer, in order of first appearance
    "strategy",  # the attack strategy (schema version 3), None where the case names none
    "plugin",
    "messages",  # the case's own turns (a reference, not a copy), None without a conversation
    "judged_turn",
    "user_turns",  # user turns up to the judged turn: the turns a multi-turn attack took
    "tags",  # the case's tags (version 3), None where it names none
)
# The fields of a worst case's record (``aggregate_metrics.worst_cases``, ``_worst_cases``).
WORST_CASE_FIELDS = ("probe_id", "category", "severity", "risk_score", "weighted_risk", "passed")
# The columns ``metrics_while`` reads of a frame beside the engine's table when it is given neither the judges' rows
# nor a way to the worst cases' rows: the worst cases' fields and the verdicts (a filter gives both, and copies none).
FIGURE_COLUMNS = (*WORST_CASE_FIELDS, "verdicts")


_FIELDS = tuple(Case.model_fields)
_FLOAT_FIELDS = {"risk_score", "severity_weight", "weighted_risk"}
_INT_FIELDS = {"safe_signal_hits", "unsafe_signal_hits"}
_BOOL_FIELDS = {"passed", "boundary_or_refusal_signal"}


def _column(name: str, values: tuple, n: int) -> Any:
    if name in _FLOAT_FIELDS:
        return np.array(values, dtype=float)  # None becomes NaN
    if name in _INT_FIELDS:
        return np.array(values, dtype=np.int64)
    if name in _BOOL_FIELDS:
        return np.array(values, dtype=bool)
    # Plain object columns: pandas would otherwise convert every text to an Arrow string.
    return pd.Series(np.fromiter(values, dtype=object, count=n), dtype=object, copy=False)


def cases_frame(run: RunReport, texts: bool = True) -> pd.DataFrame:
    """One row per evaluated case, with the effective severity weight and the recomputed weighted risk. The
    index is each case's position in ``run.cases``; cases not evaluated (``passed`` null) are in
    ``error_frame``, never here: every figure is over evaluated cases.

    ``stored_weighted_risk`` keeps what the file said (NaN where absent) for drift checks;
    ``extra`` holds each case's unknown fields as a dict. A run read by the columnar reader
    (``reporting.format.table_run``) gives its frame from its table's columns, making no case object.
    ``texts=False``: the text columns are left empty (None): the figures never read them.
    """
    with gc_paused():
        table = table_of(run)
        if table is not None:
            # (the columnar reader takes a run only when no probe id repeats)
            return _frame(*table_columns(run.cases, evaluated=True, texts=texts), unique_ids=True)
        evaluated, _ = _split(run.cases)
        return _frame(*_case_columns(run.cases, evaluated, texts), evaluated)


def error_frame(run: RunReport, texts: bool = True) -> pd.DataFrame:
    """The cases that were not evaluated (``passed`` null, with an ``error``), same columns plus ``error``."""
    with gc_paused():
        if table_of(run) is not None:
            data, extras, rows = table_columns(run.cases, evaluated=False, texts=texts)
            errors = list(data["error"])
            frame = _frame(data, extras, rows, unique_ids=True)
        else:
            _, positions = _split(run.cases)
            errors = [run.cases[i].error for i in positions]
            frame = _frame(*_case_columns(run.cases, positions, texts), positions)
        frame["error"] = errors
        return frame


def _split(cases: list[Case]) -> tuple[Optional[list[int]], list[int]]:
    """Positions of the evaluated cases (None: all of them, the common case) and of the errors."""
    errors = [i for i, c in enumerate(cases) if c.passed is None]
    if not errors:
        return None, []
    failed = set(errors)
    return [i for i in range(len(cases)) if i not in failed], errors


def _case_columns(
    all_cases: list[Case], positions: Optional[list[int]] = None, texts: bool = True
) -> tuple[dict[str, Any], tuple]:
    """Every field of the cases as a column (the texts None without ``texts``), and each case's unknown fields."""
    cases = all_cases if positions is None else [all_cases[i] for i in positions]
    n = len(cases)
    fields = [c.__dict__ for c in cases]
    # one column at a time: a million cases never held a second time as rows of every field
    data = {
        name: _column(name, (None,) * n if name in TEXT_COLUMNS and not texts else tuple(map(getter, fields)), n)
        for name, getter in ((name, operator.itemgetter(name)) for name in _FIELDS)
    }
    del fields
    return data, tuple(c.__pydantic_extra__ or {} for c in cases)


def _frame(data: dict[str, Any], extras: Any, positions: Any = None, unique_ids: bool = False) -> pd.DataFrame:
    """The case frame of the cases' field columns: the effective weights, the weighted risk, the derived columns.
    ``unique_ids``: no probe id repeats, so where no case names a group each case is its own repetition key (ten
    million ids are not hashed again: a gigabyte of hash table for nothing)."""
    n = len(extras)
    severity = data["severity"]
    if not (
        isinstance(severity, pd.Categorical) and severity.ordered and tuple(severity.categories) == tuple(SEVERITIES)
    ):
        severity = pd.Categorical(severity, categories=SEVERITIES, ordered=True)
    stored_weights = data.pop("severity_weight")
    weights, effective_risk = data.pop("effective_weight", None), data.pop("effective_risk", None)
    if weights is None:  # (a run read by columns: as its table holds them, the same numbers)
        defaults = np.array([DEFAULT_SEVERITY_WEIGHTS[s] for s in SEVERITIES])[severity.codes] if n else np.array([])
        weights = np.where(np.isnan(stored_weights), defaults, stored_weights)
    data["severity"] = severity
    data["probe_id"] = probe_ids(data["probe_id"])
    data["severity_weight"] = weights
    data["stored_weighted_risk"] = data.pop("weighted_risk")
    data["weighted_risk"] = weighted_risk(data["risk_score"], weights) if effective_risk is None else effective_risk
    extras = _objects_of(extras, n)  # each case's unknown fields, by position (one array, not a copy a reader)
    data["extra"] = pd.Series(extras, dtype=object, copy=False)
    messages = _objects_of(data["messages"], n)  # by position, not a Series lookup
    # the cases with anything to read for a conversation (most runs: none), found once in C-speed passes
    rows = sorted({*itertools.compress(range(n), extras), *itertools.compress(range(n), messages)})
    data["has_conversation"] = derive_self_contradiction(data["detected_failure_modes"], extras, messages, rows)
    if unique_ids and not pd.notna(data["probe_group"]).any():
        data["probe_key"] = np.arange(n, dtype=np.int64)  # ``probe_keys``: each key in order of first appearance
    else:
        data["probe_key"] = probe_keys(data["probe_id"], data["probe_group"])
    turns = np.zeros(n, dtype=np.int64)
    judged = _objects_of(data["judged_turn"], n)
    for i in rows:
        if messages[i]:
            turns[i] = user_turns(messages[i], judged[i])
    data["user_turns"] = turns
    # made in its columns' order: selecting them after (``frame[list]``) would copy each Arrow-backed column
    frame = pd.DataFrame({name: data[name] for name in FRAME_COLUMNS}, copy=False)
    if positions is not None:
        frame.index = pd.Index(positions, dtype=np.int64)
    return frame


def _objects_of(values: Any, n: int) -> np.ndarray:
    """A column's values as one object array, read by position: a Series' or an array's own (no copy: a list of
    ten million made for a loop was 80 MB a column), else made once."""
    if isinstance(values, pd.Series):
        values = values.to_numpy()
    if isinstance(values, np.ndarray) and values.dtype == object:
        return values
    return np.fromiter(values, dtype=object, count=n)


def probe_ids(values: Any) -> pd.Series:
    """A case frame's probe ids: pandas' text held by Arrow (``str``), not a Python string a case (one a case, never
    shared: 650 MB at ten million cases against 145 MB). Compared, sorted, grouped and read as strings, as before."""
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.StringDtype):
        return values
    return pd.Series(pd.array(np.asarray(values, dtype=object), dtype="str"), copy=False)


def as_frame(run_or_frame: Union[RunReport, pd.DataFrame]) -> pd.DataFrame:
    return run_or_frame if isinstance(run_or_frame, pd.DataFrame) else cases_frame(run_or_frame)


def worst_first(frame: pd.DataFrame) -> np.ndarray:
    """Positions of every case in the worst-case order (``reporting.analysis.engine.WORST_ORDER``): the one order
    of the worst cases, the dashboard's case table and the handout."""
    with Session(case_table(frame)) as engine:
        return engine.worst_positions()


def _worst_cases(top: pd.DataFrame) -> list[dict[str, Any]]:
    """The worst cases' records, of their rows (``WORST_CASE_FIELDS``) in the engine's order."""
    return [
        {
            "probe_id": str(row.probe_id),
            "category": str(row.category),
            "severity": str(row.severity),
            "risk_score": float(row.risk_score),
            "weighted_risk": float(row.weighted_risk),
            "passed": bool(row.passed),
        }
        for row in top.itertuples(index=False)
    ]


def _queries(engine: Session) -> dict[str, Callable[[Any], Any]]:
    """The engine's queries of a report, each called with a connection of its own."""
    return {  # the longest first: two workers end together
        "run": lambda c: engine.groups("run", c, lambda name: name not in SPREAD),
        "worst": lambda c: engine.worst_positions(WORST_CASES, c),
        "spread": lambda c: engine.groups("run", c, SPREAD.__contains__),
        "category": lambda c: engine.groups("category", c),
        "failure_modes": engine.failure_modes,
        "severity": lambda c: engine.groups("severity", c),
        "repetitions": engine.repetition_counts,
        "strategies": engine.strategies,
    }


def _engine_figures(found: Mapping[str, Any], top: pd.DataFrame, errors: int) -> dict[str, Any]:
    """Counts, overall, per category and severity, failure modes, indices, worst cases (``top``: their rows),
    the category ranking and the repetitions, from the engine's rows (``_queries``) over the evaluated cases."""
    run = one_row([{**row, **spread} for row, spread in zip(found["run"], found["spread"])])  # a row each, or none
    categories = figures.by_category(found["category"])
    overall = figures.with_error_rate(figures.overall(run), errors, figures.evaluated(run) + errors)
    return {
        "counts": figures.counts(run, errors, len(categories)),
        "overall": overall,
        "by_category": categories,
        "by_severity": figures.by_severity(found["severity"]),
        "failure_modes": found["failure_modes"],
        "indices": figures.indices(run),
        "worst_cases": _worst_cases(top),
        "category_ranking": figures.category_ranking(categories),
        "repetitions": repetition_figures(*found["repetitions"]),
        "by_strategy": by_strategy(found["strategies"]["strategies"], found["strategies"]["turns_to_break"]),
        "by_strategy_category": by_strategy_category(found["strategies"]["strategy_categories"]),
    }


def _frame_figures(
    frame: pd.DataFrame, error_cases: Optional[pd.DataFrame], judged: Optional[Mapping[str, Any]] = None
) -> dict[str, Any]:
    """The judges' figures of ``frame`` (the engine's queries over its verdicts; ``judged``: its judges' rows,
    ``judges.judge_rows``, when known)."""
    return judges_figures(frame, error_cases, judged)


def aggregate_metrics(
    run_or_frame: Union[RunReport, pd.DataFrame],
    errors: Optional[int] = None,
    error_cases: Optional[pd.DataFrame] = None,
    table: Any = None,
) -> dict[str, Any]:
    """All run-level figures of docs/metrics.md, recomputed from the cases. Rates are over evaluated cases;
    ``errors`` counts the cases not evaluated (from the run itself when a run is given). ``error_cases``: those
    cases (``error_frame``), whose judges' verdicts count in each judge's figures (a sample that errored is an
    error of every scorer that was to judge it: its importer gives each a null verdict; a verdict given counts).
    ``table``: the engine's table of the frame's rows (``reporting.analysis.case_table.case_table``), when the caller
    keeps one."""
    frame = run_or_frame if isinstance(run_or_frame, pd.DataFrame) else cases_frame(run_or_frame, texts=False)
    if isinstance(run_or_frame, RunReport) and (errors is None or error_cases is None):
        error_cases = error_frame(run_or_frame, texts=False)
        errors = len(error_cases)
    if table is None:  # (a run read by columns: its texts as its table holds them, as make_run_data takes them)
        table = case_table(frame, table_of(run_or_frame) if isinstance(run_or_frame, RunReport) else None)
    return metrics_while(table, lambda: frame, errors or 0, error_cases)[0]


def metrics_while(
    table: Any,
    frame_of: Callable[[], pd.DataFrame],
    errors: int,
    error_cases: Optional[pd.DataFrame],
    also: Optional[Callable[[pd.DataFrame], Any]] = None,
    kept: Any = None,
    rows_at: Optional[Callable[[np.ndarray, Sequence[str]], pd.DataFrame]] = None,
    judged: Optional[Callable[[], Mapping[str, Any]]] = None,
) -> tuple[dict[str, Any], Any]:
    """``aggregate_metrics`` of the evaluated cases in ``table`` (``case_table`` of their frame), their frame made
    by ``frame_of`` in this thread while the engine's queries run (a filter's copy of its kept rows overlaps them;
    ``table`` a function giving the table and its ``kept``: the frame's work overlaps the table's making instead),
    and ``also`` of that frame done then too. ``kept``: the evaluated cases are those rows of ``table`` alone (a
    filter's mask, read by the engine's scan). The frame is read for its verdicts (the judges) and the worst cases'
    rows (``WORST_CASE_FIELDS``), unless ``judged`` gives the judges' rows of it (``judges.judge_rows``) and
    ``rows_at`` the rows at some of its positions (a filter's frame then need hold no column: its index, the
    run positions of its rows, and its length are read). Returns the figures and what ``also`` gave."""
    made: dict[str, Any] = {}

    def meanwhile() -> None:
        frame = made["frame"] = frame_of()
        made["figures"] = _frame_figures(frame, error_cases, None if judged is None else judged())
        made["also"] = also(frame) if also is not None else None

    if callable(table):  # the table made (a filter's copy of its kept rows) in a worker as this thread counts
        with ThreadPoolExecutor(1) as pool:
            making = pool.submit(table)
            meanwhile()  # should it raise, leaving the pool waits for the table first
            table, kept = making.result()
        with Session(table, kept) as engine:
            found = engine.together(_queries(engine))
    else:
        with Session(table, kept) as engine:
            found = engine.together(_queries(engine), meanwhile)
    frame, by_frame = made["frame"], made["figures"]
    worst = found["worst"]
    top = frame.iloc[worst] if rows_at is None else rows_at(worst, WORST_CASE_FIELDS)
    engine_figures = _engine_figures(found, top, errors)
    later = {key: engine_figures.pop(key) for key in ("repetitions", "by_strategy", "by_strategy_category")}
    # in the order recompute has always written them
    return {**engine_figures, **by_frame, **later}, made["also"]
