"""Files that sit next to a run report and add to it (documented in docs/rubrics.md):

    RUN.json              the run
    RUN.rubric.yaml       a rubric scorecard definition
    RUN.benchmarks.yaml   benchmark definitions the rubric refers to by code (optional)
    RUN.verdicts.jsonl    judge verdicts for the rubric's benchmarks
    RUN.dimensions.json   multi-dimensional judge scores of responses (ADR-016)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

COMPANION_SUFFIXES = (".rubric.yaml", ".benchmarks.yaml", ".verdicts.jsonl", ".dimensions.json")


def is_companion(name: str) -> bool:
    return name.lower().endswith(COMPANION_SUFFIXES)


def run_stem(path: Union[str, Path]) -> Path:
    path = Path(path)
    for suffix in (".jsonl", ".ndjson", ".json"):
        if path.name.lower().endswith(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


def companions(run_path: Union[str, Path]) -> dict[str, Optional[Path]]:
    stem = run_stem(run_path)
    found = {}
    for key, suffix in (("rubric", ".rubric.yaml"), ("benchmarks", ".benchmarks.yaml"), ("verdicts", ".verdicts.jsonl"),
                        ("dimensions", ".dimensions.json")):
        candidate = stem.with_name(stem.name + suffix)
        found[key] = candidate if candidate.is_file() else None
    return found


def rubric_results(rubric: Any = None, verdicts: Any = None, benchmarks: Any = None, dimensions: Any = None,
                   safety_gate: bool = True) -> dict[str, Any]:
    """Scorecard and dimension results for the report, with any problem as text instead of an exception."""
    from .rubrics import RubricError, load_evaluations, score_dimensions, scorecard

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
            out["dimensions"] = score_dimensions(load_evaluations(dimensions), safety_gate=safety_gate, label=str(dimensions))
        except RubricError as exc:
            out["problems"] += exc.problems
    return out
