"""Rubrics: hierarchical scorecards (seed 001), dimension scores with an accuracy ceiling and a
safety gate (seed 003, ADR-016), and the self-contradiction rubric (seed 002)."""

from .contradiction import rubric as contradiction_rubric
from .dimensions import ANCHORS, DEFAULT_WEIGHTS, DIMENSIONS, load_evaluations, parse_weights, score_dimensions
from .scorecard import RubricError, load_rubric, load_verdicts, score_rubric, scorecard, scorecard_gate

__all__ = ["ANCHORS", "DEFAULT_WEIGHTS", "DIMENSIONS", "RubricError", "contradiction_rubric", "load_evaluations",
           "load_rubric", "load_verdicts", "parse_weights", "score_dimensions", "score_rubric", "scorecard",
           "scorecard_gate"]
