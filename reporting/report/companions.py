"""Rubric results for a report: the scorecard and dimension scores of the files beside a run (or uploaded),
with every problem kept as text so that a bad companion never stops the report of the run it sits next to."""

from __future__ import annotations

from typing import Any

from reporting.rubrics import RubricError, load_evaluations, score_dimensions, scorecard


def rubric_results(
    rubric: Any = None, verdicts: Any = None, benchmarks: Any = None, dimensions: Any = None, safety_gate: bool = True
) -> dict[str, Any]:
    """Scorecard and dimension results for the report, with any problem as text instead of an exception."""

    out: dict[str, Any] = {"scorecard": None, "dimensions": None, "problems": []}
    if rubric and verdicts:
        try:
            out["scorecard"] = scorecard(rubric, verdicts, benchmarks)
        except RubricError as exc:
            out["problems"] += exc.problems
    elif rubric or verdicts:
        out["problems"].append("a rubric needs both RUN.rubric.yaml and RUN.verdicts.jsonl")
    if dimensions:
        try:
            out["dimensions"] = score_dimensions(
                load_evaluations(dimensions), safety_gate=safety_gate, label=str(dimensions)
            )
        except RubricError as exc:
            out["problems"] += exc.problems
    return out
