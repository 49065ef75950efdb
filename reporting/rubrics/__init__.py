"""Rubrics: hierarchical scorecards, dimension scores with an accuracy ceiling and a safety gate, and the
self-contradiction rubric. Definitions and where each comes from: docs/rubrics.md."""

from reporting.analysis.contradiction import rubric as contradiction_rubric
from reporting.rubrics.dimensions import (
    ANCHORS,
    DEFAULT_WEIGHTS,
    DIMENSIONS,
    load_evaluations,
    parse_weights,
    score_dimensions,
)
from reporting.rubrics.scorecard import RubricError, load_rubric, load_verdicts, score_rubric, scorecard, scorecard_gate


def flatten_scorecard(card: dict, depth: int = 0) -> list[dict]:
    """The scorecard tree as rows (depth-first), for tables."""
    rows = [
        {
            "depth": depth,
            "kind": "rubric",
            "code": card["code"],
            "label": card["label"],
            "score": card["score"],
            "threshold": card["passing_threshold"],
            "method": card["aggregation_method"],
            "criticality": "",
            "weight": card.get("weight"),
            "result": "PASS" if card["passed"] else "FAIL",
            "decided_by": card["decided_by"] or "",
            "n": None,
        }
    ]
    for bench in card["benchmarks"]:
        rows.append(
            {
                "depth": depth + 1,
                "kind": "benchmark",
                "code": bench["code"],
                "label": bench["label"],
                "score": bench["score"],
                "threshold": bench["threshold"],
                "method": "",
                "criticality": bench["criticality"],
                "weight": bench["weight"],
                "result": "PASS" if bench["passed"] else "FAIL",
                "decided_by": "",
                "n": bench["n"],
            }
        )
    for sub in card["sub_rubrics"]:
        rows += flatten_scorecard(sub, depth + 1)
    return rows


__all__ = [
    "flatten_scorecard",
    "ANCHORS",
    "DEFAULT_WEIGHTS",
    "DIMENSIONS",
    "RubricError",
    "contradiction_rubric",
    "load_evaluations",
    "load_rubric",
    "load_verdicts",
    "parse_weights",
    "score_dimensions",
    "score_rubric",
    "scorecard",
    "scorecard_gate",
]
