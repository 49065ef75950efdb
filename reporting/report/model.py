"""The full recomputed report: run metadata, cases, aggregate metrics, observability and drift.

``build_report`` is computed once and feeds every output: JSON, the dashboard and the HTML export.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import pandas as pd

from reporting._gc import gc_paused
from reporting._version import __version__
from reporting.analysis.filters import NO_FILTERS, Filters
from reporting.analysis.metrics import aggregate_metrics, cases_frame
from reporting.analysis.observability import DEFAULT_MIN_CASES, observability
from reporting.format.reading import LoadResult
from reporting.format.schema import SCHEMA_VERSION, RunReport

DRIFT_TOLERANCE = 1e-9


def _same(stored: Any, recomputed: Any) -> bool:
    if isinstance(stored, bool) or isinstance(recomputed, bool):
        return stored is recomputed or stored == recomputed
    if isinstance(stored, (int, float)) and isinstance(recomputed, (int, float)):
        return math.isclose(stored, recomputed, rel_tol=0.0, abs_tol=DRIFT_TOLERANCE)
    return stored == recomputed


def compare_stored(path: str, stored: Any, recomputed: Any, found: list[dict[str, Any]]) -> None:
    """Append a drift entry for every leaf where a stored figure differs from the recomputed one.

    Keys only one side has are ignored: an older or newer producer may store fewer or more figures.
    """
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        for key in stored:
            if key in recomputed:
                compare_stored(f"{path}.{key}", stored[key], recomputed[key], found)
        return
    if isinstance(stored, list) and isinstance(recomputed, list):
        if len(stored) != len(recomputed):
            found.append({"path": f"{path}.length", "stored": len(stored), "recomputed": len(recomputed)})
        for i, (a, b) in enumerate(zip(stored, recomputed)):
            compare_stored(f"{path}[{i}]", a, b, found)
        return
    if not _same(stored, recomputed):
        found.append({"path": path, "stored": stored, "recomputed": recomputed})


def drift(run: RunReport, frame: pd.DataFrame, metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Where stored weighted risks or stored aggregate metrics differ from the recomputed ones."""
    found: list[dict[str, Any]] = []
    stored = frame["stored_weighted_risk"].to_numpy()
    recomputed = frame["weighted_risk"].to_numpy()
    differs = ~pd.isna(stored) & (abs(stored - recomputed) > DRIFT_TOLERANCE)
    for i in differs.nonzero()[0]:
        found.append(
            {
                "path": f"cases[{int(i)}].weighted_risk",
                "probe_id": str(frame["probe_id"].iat[i]),
                "stored": float(stored[i]),
                "recomputed": float(recomputed[i]),
            }
        )
    if run.aggregate_metrics:
        compare_stored("aggregate_metrics", run.aggregate_metrics, metrics, found)
    return found


def case_record(case_model: Any, weighted_risk: float, severity_weight: float) -> dict[str, Any]:
    record = case_model.model_dump(mode="json")
    record["severity_weight"] = severity_weight
    record["weighted_risk"] = weighted_risk
    return record


@dataclass(eq=False)
class RunData:
    """A loaded run, computed once: the load result, the frame of all valid cases, drift."""

    result: LoadResult
    frame: pd.DataFrame
    metrics: dict[str, Any]  # of every valid case: the unfiltered view reuses them
    drift: list[dict[str, Any]]
    failure_mode_names: list[str]

    @property
    def run(self) -> Optional[RunReport]:
        return self.result.run


def make_run_data(result: LoadResult) -> RunData:
    if result.run is None:
        frame = cases_frame(RunReport.model_construct(cases=[]))  # type: ignore[call-arg]
        return RunData(result, frame, aggregate_metrics(frame), [], [])
    frame = cases_frame(result.run)
    full = aggregate_metrics(frame)
    return RunData(result, frame, full, drift(result.run, frame, full), sorted(full["failure_modes"]))


@dataclass(eq=False)
class RunView:
    """One run seen through filters: the kept cases and every figure recomputed from them."""

    data: RunData
    filters: Filters
    frame: pd.DataFrame
    metrics: dict[str, Any]

    @property
    def shown(self) -> int:
        return len(self.frame)

    @property
    def total(self) -> int:
        return len(self.data.frame)


def make_view(data: RunData, filters: Filters = NO_FILTERS) -> RunView:
    if not filters.active:
        return RunView(data, filters, data.frame, data.metrics)
    kept = filters.apply(data.frame)
    return RunView(data, filters, kept, aggregate_metrics(kept))


def view_observability(view: RunView, min_cases: int = DEFAULT_MIN_CASES, seed: int = 0) -> dict[str, Any]:
    return observability(view.frame, min_cases=min_cases, seed=seed)


def report_dict(view: RunView, obs: dict[str, Any]) -> dict[str, Any]:
    """The full recomputed report of a view, as a JSON-ready dict."""
    run = view.data.run
    if run is None:
        raise ValueError("a report needs a readable run")
    positions = view.frame.index.to_numpy()
    weights = view.frame["severity_weight"].tolist()
    weighted = view.frame["weighted_risk"].tolist()
    cases = run.cases
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "runlens", "version": __version__},
        "run": run.run.model_dump(mode="json", exclude_none=True),
        "filters": {**view.filters.as_dict(), "cases_total": view.total, "cases_shown": view.shown},
        "cases": [case_record(cases[i], w, sw) for i, w, sw in zip(positions, weighted, weights)],
        "aggregate_metrics": view.metrics,
        "observability": obs,
        "drift": view.data.drift,
    }


def build_report(
    run: RunReport,
    *,
    filters: Filters = NO_FILTERS,
    min_cases: int = DEFAULT_MIN_CASES,
    seed: int = 0,
    with_observability: bool = True,
) -> dict[str, Any]:
    """The full recomputed report as a JSON-ready dict.

    With ``filters``, every figure is recomputed from the kept cases only; drift is always
    checked on the whole run (stored figures describe the whole run).
    """
    with gc_paused():
        view = make_view(make_run_data(LoadResult(run.run.run_id, run, [], len(run.cases))), filters)
        obs = (
            view_observability(view, min_cases, seed)
            if with_observability
            else {"skipped": True, "reason": "observability was not requested"}
        )
        return report_dict(view, obs)
