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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Optional

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
    table: Any = None  # the engine's table of the frame's rows (reporting.analysis.engine.case_table), made once
    cases: Any = None  # every case in its framework group (report/frameworks.RunCases), made once: a filter counts

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
    a million cases: the Overview never copies it). Reports made from one another (``replace``) share it."""

    __slots__ = ("_frame", "_make", "_lock", "count")

    def __init__(
        self,
        frame: Optional[pd.DataFrame] = None,
        make: Optional[Callable[[], pd.DataFrame]] = None,
        count: Optional[int] = None,
    ) -> None:
        if (frame is None) == (make is None):
            raise ValueError("KeptRows: a frame or a way to make it, not both")
        self._frame, self._make = frame, make
        self._lock = threading.Lock()
        self.count = len(frame) if frame is not None else int(count or 0)

    def get(self) -> pd.DataFrame:
        if self._frame is None:
            with self._lock:  # two pages of one dashboard may read it at once: made once
                if self._frame is None:
                    assert self._make is not None
                    made = self._make()
                    if len(made) != self.count:
                        raise AssertionError(f"KeptRows: {len(made)} rows made, {self.count} kept")
                    self._frame, self._make = made, None
        return self._frame

    def __reduce__(self) -> Any:
        return (KeptRows, (self.get(),))  # pickled (a copy, a cache) with its frame


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
        from reporting.analysis.metrics import worst_first

        return worst_first(self.frame)

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
