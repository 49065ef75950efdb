"""The full recomputed report: run metadata, cases, aggregate metrics, observability and drift.

``build_report`` is computed once and feeds every output: JSON, the dashboard and the HTML export.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Union

import pandas as pd

from . import __version__
from .metrics import aggregate_metrics, cases_frame
from .observability import DEFAULT_MIN_CASES, observability
from .schema import SCHEMA_VERSION, RunReport

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
            {"path": f"cases[{int(i)}].weighted_risk", "probe_id": str(frame["probe_id"].iat[i]),
             "stored": float(stored[i]), "recomputed": float(recomputed[i])}
        )
    if run.aggregate_metrics:
        compare_stored("aggregate_metrics", run.aggregate_metrics, metrics, found)
    return found


def case_record(case_model: Any, weighted_risk: float, severity_weight: float) -> dict[str, Any]:
    record = case_model.model_dump(mode="json")
    record["severity_weight"] = severity_weight
    record["weighted_risk"] = weighted_risk
    return record


def build_report(
    run: RunReport,
    *,
    frame: Optional[pd.DataFrame] = None,
    min_cases: int = DEFAULT_MIN_CASES,
    seed: int = 0,
    with_observability: bool = True,
) -> dict[str, Any]:
    """The full recomputed report as a JSON-ready dict."""
    frame = cases_frame(run) if frame is None else frame
    metrics = aggregate_metrics(frame)
    weights = frame["severity_weight"].tolist()
    weighted = frame["weighted_risk"].tolist()
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "runlens", "version": __version__},
        "run": run.run.model_dump(mode="json", exclude_none=True),
        "cases": [case_record(c, w, sw) for c, w, sw in zip(run.cases, weighted, weights)],
        "aggregate_metrics": metrics,
        "observability": observability(frame, min_cases=min_cases, seed=seed)
        if with_observability
        else {"skipped": True, "reason": "observability was not requested"},
        "drift": drift(run, frame, metrics),
    }
