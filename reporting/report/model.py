"""The typed report model: what a run's report holds, computed once and drawn twice.

``RunData`` is a loaded run computed once (its case frame, its figures, its drift); the dashboard
caches it per file. ``Report`` is that run seen through filters, with the figures recomputed from
the kept cases, observability, and the rubric results. ``build_report`` (report/build.py) makes it
for the command line, the dashboard and its download alike; ``report_document``
(report/serialise.py) turns it into the one JSON document that ``recompute`` writes and the HTML
embeds. Renderers take a ``Report`` and compute nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting._version import __version__
from reporting.analysis.drift import DriftFinding
from reporting.analysis.filters import Filters
from reporting.format.reading import LoadResult
from reporting.format.schema import RunMeta, RunReport
from reporting.report.cards import JudgeCards
from reporting.report.frameworks import FrameworkResults


@dataclass(frozen=True)
class Generator:
    name: str = "runlens"
    version: str = __version__


@dataclass(frozen=True, eq=False)
class RunData:
    """A loaded run, computed once: the load result, the frame of all valid cases, their figures, drift."""

    result: LoadResult
    frame: pd.DataFrame
    metrics: Mapping[str, Any]  # of every valid case: a report without filters reuses them
    drift: tuple[DriftFinding, ...]
    failure_mode_names: tuple[str, ...]
    errors: pd.DataFrame  # the cases not evaluated (passed null), same columns plus "error"
    table: Any = None  # the engine's table of the frame's rows (reporting.analysis.case_table.case_table), made once
    cases: Any = None  # every case in its framework group (report/frameworks.RunCases), made once: a filter counts
    judged: Any = None  # each judge's rows of the frame and verdicts (analysis.judges.judge_rows), made once

    @property
    def run(self) -> Optional[RunReport]:
        return self.result.run


@dataclass(frozen=True)
class RubricResults:
    """Rubric results attached to a report: companion files' scorecard and dimension scores, the derived
    self-contradiction findings of the kept cases, and every problem of the companion files as text."""

    scorecard: Optional[Mapping[str, Any]] = None
    dimensions: Optional[Mapping[str, Any]] = None
    contradictions: tuple[Mapping[str, Any], ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.scorecard or self.dimensions or self.contradictions or self.problems)


NOT_REQUESTED: Mapping[str, Any] = {"skipped": True, "reason": "observability was not requested"}


class KeptRows:
    """The frame of a report's kept cases, made when first read and then kept. A dashboard filter's figures read a
    few columns of the kept rows; every column is copied only when a page or an export reads the frame (a filter of
    a million cases: the Overview never copies it). A page that reads some columns, or some rows, takes only those
    (``columns``, ``at``): a filter of ten million cases is never copied whole for a chart. Reports made from one
    another (``replace``) share it."""

    __slots__ = ("_frame", "_whole", "_kept", "_lock", "count")

    def __init__(self, frame: Optional[pd.DataFrame] = None, whole: Optional[pd.DataFrame] = None, kept: Any = None):
        if (frame is None) == (whole is None) or (whole is None) != (kept is None):
            raise ValueError("KeptRows: a frame, or a whole frame and the mask of its kept rows")
        self._frame, self._whole = frame, whole
        self._kept = None if kept is None else np.asarray(kept, dtype=bool)
        self._lock = threading.Lock()
        self.count = len(frame) if frame is not None else int(self._kept.sum())  # type: ignore[union-attr]

    def get(self) -> pd.DataFrame:
        if self._frame is None:
            with self._lock:  # two pages of one dashboard may read it at once: made once
                if self._frame is None:
                    assert self._whole is not None
                    made = self._whole[self._kept]
                    if len(made) != self.count:
                        raise AssertionError(f"KeptRows: {len(made)} rows made, {self.count} kept")
                    self._frame, self._whole = made, None
        return self._frame

    def columns(self, names: Sequence[str]) -> pd.DataFrame:
        """The kept rows' ``names`` columns (indexed by run position, as the frame is): the frame's own columns when
        it is made, else those columns of the kept rows alone."""
        frame, whole, kept = self._frame, self._whole, self._kept
        if frame is not None:
            return columns_of(frame, names)
        assert whole is not None
        return columns_of(whole, names, kept)

    def at(self, positions: Any, names: Optional[Sequence[str]] = None) -> pd.DataFrame:
        """The kept rows at ``positions`` (0 .. count - 1), every column or ``names``, in that order."""
        positions = np.asarray(positions, dtype=np.int64)
        frame, whole = self._frame, self._whole
        if frame is None:
            assert whole is not None and self._kept is not None
            frame, positions = whole, np.flatnonzero(self._kept)[positions]
        return frame.iloc[positions] if names is None else rows_of(frame, positions, names)

    @property
    def mask(self) -> Any:
        """Which rows of the run's frame are kept (a bool array), or None: every row."""
        return self._kept

    def __reduce__(self) -> Any:
        return (KeptRows, (self.get(),))  # pickled (a copy, a cache) with its frame


def columns_of(frame: pd.DataFrame, names: Sequence[str], kept: Any = None) -> pd.DataFrame:
    """``names`` of ``frame`` as a frame of their own, of the rows ``kept`` (a mask) or every row, each column taken
    alone (selecting a list of columns copies each Arrow-backed one whole first); a column one value seen n times
    (numpy's stride 0) stays so."""
    index = frame.index if kept is None else _kept_index(frame.index, kept)
    count = len(index)
    taken: dict[str, Any] = {}
    for name in names:
        column = frame[name]
        values = column.array
        if isinstance(values, pd.arrays.NumpyExtensionArray):  # its own array (an object one is not inferred again)
            held = values.to_numpy(copy=False)
            if held.strides == (0,) and len(held):
                values = np.broadcast_to(held[:1], (count,))  # read-only, as the frame's own
            else:
                values = held if kept is None else held[kept]
            taken[name] = pd.Series(values, index=index, name=name, dtype=column.dtype, copy=False)
            continue
        taken[name] = pd.Series(values if kept is None else values[kept], index=index, name=name, copy=False)
    return pd.DataFrame(taken, index=index, copy=False)


def rows_of(frame: pd.DataFrame, positions: Any, names: Sequence[str]) -> pd.DataFrame:
    """``frame.iloc[positions][names]``, each column taken alone: an Arrow-backed one chunk by chunk
    (``arrow_take.take_rows``: pandas' take joins a column's chunks first, 30 ms a take of ten million probe ids),
    the others by numpy's."""
    from reporting.format.arrow_take import take_rows

    positions = np.asarray(positions, dtype=np.int64)
    index = frame.index[positions]
    taken: dict[str, Any] = {}
    for name in names:
        column = frame[name]
        values = column.array
        if isinstance(values, pd.arrays.ArrowExtensionArray) and len(positions):
            rows = type(values)(take_rows(values.__arrow_array__(), positions))
            taken[name] = pd.Series(rows, index=index, name=name, dtype=column.dtype, copy=False)
        else:
            taken[name] = column.iloc[positions]
    return pd.DataFrame(taken, index=index, copy=False)


def _kept_index(index: pd.Index, kept: Any) -> pd.Index:
    """``index[kept]``: of an index of the positions 0 .. n - 1 (a case frame's), the kept positions themselves
    (pandas' mask of a range index goes through a copy of the range's every value)."""
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None:
        return pd.Index(np.flatnonzero(kept), dtype=np.int64)
    return index[kept]


@dataclass(frozen=True, eq=False)
class Report:
    """One run seen through filters: the kept cases and every figure recomputed from them."""

    data: RunData
    filters: Filters
    rows: KeptRows  # the kept cases, one row each, every column the figures read (``frame``)
    metrics: Mapping[str, Any]
    observability: Optional[Mapping[str, Any]] = None  # None: not computed (the dashboard computes it per page)
    rubrics: Optional[RubricResults] = None
    generator: Generator = Generator()
    errors: Optional[pd.DataFrame] = None  # the kept cases not evaluated (passed null, with an error)
    review: Optional[Mapping[str, Any]] = None  # people's review of the verdicts (report/reviewing.py), if any
    judge_cards: JudgeCards = JudgeCards()  # each judge's measured validity (report/cards.py), shown by judge
    frameworks: Optional[FrameworkResults] = None  # every framework item's figures (report/frameworks.py)
    baseline: Optional[Mapping[str, Any]] = None  # the change against a baseline run (report/baseline.py), if given

    @cached_property
    def worst_order(self) -> Any:
        """Positions of the kept cases in the worst-case order (``analysis.metrics.worst_first``), once a report:
        the HTML's held cases, its printed cases and conversations all read it."""
        from reporting.analysis.engine import Session
        from reporting.analysis.metrics import worst_first

        table, kept = self.data.table, self.rows.mask
        if table is None or len(table) != len(self.data.frame):
            return worst_first(self.frame)
        # the engine's table of the run's rows, of the kept rows: never converted again from a copy of the frame
        with Session(table, kept) as engine:
            return engine.worst_positions()

    def worst_top(self, limit: int) -> tuple[Any, int]:
        """The first ``limit`` positions of ``worst_order`` and how many it holds, without putting every kept case
        in order (the engine's top ``limit`` of the same total order), unless the order is made already."""
        from reporting.analysis.engine import Session

        table, kept = self.data.table, self.rows.mask
        if "worst_order" in self.__dict__ or table is None or len(table) != len(self.data.frame):
            order = self.worst_order
            return order[:limit], len(order)
        with Session(table, kept) as engine:
            return engine.worst_positions(limit), engine.evaluated()

    def columns(self, names: Sequence[str]) -> pd.DataFrame:
        """The kept cases' ``names`` columns alone (``KeptRows.columns``)."""
        return self.rows.columns(names)

    def at(self, positions: Any, names: Optional[Sequence[str]] = None) -> pd.DataFrame:
        """The kept cases at ``positions`` of the kept rows (``KeptRows.at``)."""
        return self.rows.at(positions, names)

    def with_ids(self, ids: Any, names: Optional[Sequence[str]] = None) -> pd.DataFrame:
        """The kept cases whose probe id is one of ``ids``, in their order, every column or ``names``."""
        found = self.columns(("probe_id",))["probe_id"].isin(list(ids)).to_numpy(dtype=bool)
        return self.at(np.flatnonzero(found), names)

    def points_rows(self, names: Sequence[str]) -> tuple[pd.DataFrame, bool]:
        """The kept cases the geometry's points are of (``names`` columns), and whether they are a sample's: then
        only the sample's cases, by probe id (``render.figures.cluster_scatter`` pairs them so)."""
        geometry = self.observability_or_reason
        sampled = geometry.get("sampled") or {}
        if sampled.get("assigned") == "sample":
            return self.with_ids({case["probe_id"] for case in geometry["cases"]}, names), True
        return self.columns(names), False

    @property
    def error_count(self) -> int:
        return 0 if self.errors is None else len(self.errors)

    @property
    def run(self) -> RunReport:
        run = self.data.run
        if run is None:
            raise ValueError("a report needs a readable run")
        return run

    @property
    def meta(self) -> RunMeta:
        return self.run.run

    @property
    def drift(self) -> tuple[DriftFinding, ...]:
        return self.data.drift

    @property
    def frame(self) -> pd.DataFrame:
        """The kept cases, one row each, every column the figures read."""
        return self.rows.get()

    @property
    def shown(self) -> int:
        return self.rows.count

    @property
    def total(self) -> int:
        return len(self.data.frame)

    @property
    def observability_or_reason(self) -> Mapping[str, Any]:
        return NOT_REQUESTED if self.observability is None else self.observability
