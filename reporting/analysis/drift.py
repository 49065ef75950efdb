"""Drift: where the figures a run file stores differ from the ones recomputed from its cases.

Stored figures describe the whole run, so drift is always checked on the whole run, whatever the filters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional

import pandas as pd

from reporting.format.schema import RunReport
from reporting.format.table_run import TableCases

DRIFT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class DriftFinding:
    path: str  # JSONPath-like location, e.g. "aggregate_metrics.overall.pass_rate" or "cases[3].weighted_risk"
    stored: Any
    recomputed: Any
    probe_id: Optional[str] = None

    def as_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = {"path": self.path}
        if self.probe_id is not None:
            head["probe_id"] = self.probe_id
        return {**head, "stored": self.stored, "recomputed": self.recomputed}


def tolerance(stored: float) -> float:
    """How far a recomputed figure may be from a stored one: half a unit in the last decimal the producer wrote,
    what rounding to that many decimals can move (0.068977 agrees with 0.0689775), never less than 1e-9."""
    if isinstance(stored, bool) or not isinstance(stored, float) or not math.isfinite(stored):
        return DRIFT_TOLERANCE
    exponent = Decimal(repr(stored)).as_tuple().exponent
    decimals = -exponent if isinstance(exponent, int) else 0
    return max(DRIFT_TOLERANCE, 0.5 * 10.0**-decimals) if 0 < decimals < 9 else DRIFT_TOLERANCE


def _same(stored: Any, recomputed: Any) -> bool:
    if isinstance(stored, bool) or isinstance(recomputed, bool):
        return stored is recomputed or stored == recomputed
    if isinstance(stored, (int, float)) and isinstance(recomputed, (int, float)):
        return math.isclose(stored, recomputed, rel_tol=0.0, abs_tol=tolerance(stored) * (1 + 1e-6))
    return stored == recomputed


def compare_stored(path: str, stored: Any, recomputed: Any, found: list[DriftFinding]) -> None:
    """Append a finding for every leaf where a stored figure differs from the recomputed one.

    Keys only one side has are ignored: an older or newer producer may store fewer or more figures.
    """
    if isinstance(stored, Mapping) and isinstance(recomputed, Mapping):
        for key in stored:
            if key in recomputed:
                compare_stored(f"{path}.{key}", stored[key], recomputed[key], found)
        return
    if isinstance(stored, list) and isinstance(recomputed, list):
        if len(stored) != len(recomputed):
            found.append(DriftFinding(f"{path}.length", len(stored), len(recomputed)))
        for i, (a, b) in enumerate(zip(stored, recomputed)):
            compare_stored(f"{path}[{i}]", a, b, found)
        return
    if not _same(stored, recomputed):
        found.append(DriftFinding(path, stored, recomputed))


class _Columns:
    """Some columns of a run read by columns, read afresh each time they are iterated (a recount passes over them
    once per tool figure, never holding a million rows at once)."""

    def __init__(self, cases: TableCases, names: tuple[str, ...]) -> None:
        self.cases, self.names = cases, names
        self.table = cases.table  # a recount that counts by Arrow reads the table itself

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.cases.columns(self.names)


def drift(run: RunReport, frame: pd.DataFrame, metrics: Mapping[str, Any]) -> tuple[DriftFinding, ...]:
    """Where stored aggregate metrics, the figures another tool stored (``tool_figures``: garak's eval lines,
    promptfoo's stats, Inspect's scores) or stored weighted risks differ from the recomputed ones, run-level
    findings first, each compared at the precision the producer stored."""
    found: list[DriftFinding] = []
    if run.aggregate_metrics:
        compare_stored("aggregate_metrics", run.aggregate_metrics, metrics, found)
    from reporting.importers.recount import recount

    tool_figures = (run.model_extra or {}).get("tool_figures")
    cases: Iterable[Any] = run.cases
    if tool_figures and isinstance(cases, TableCases):  # read by columns: the cases' JSON, no case object
        cases = _Columns(cases, ("probe_id", "probe_group", "passed", "verdicts"))  # what a recount reads
    for path, theirs, ours in recount(tool_figures, cases):
        if not _same(theirs, ours):
            found.append(DriftFinding(path, theirs, ours))
    stored = frame["stored_weighted_risk"].to_numpy()
    recomputed = frame["weighted_risk"].to_numpy()
    differs = ~pd.isna(stored) & (abs(stored - recomputed) > DRIFT_TOLERANCE)
    positions = frame.index.to_numpy()  # each row's place among the run's cases (errors are not rows)
    for i in differs.nonzero()[0]:
        if _same(float(stored[i]), float(recomputed[i])):
            continue
        found.append(
            DriftFinding(
                f"cases[{int(positions[i])}].weighted_risk",
                float(stored[i]),
                float(recomputed[i]),
                probe_id=str(frame["probe_id"].iat[i]),
            )
        )
    return tuple(found)
