"""Rubric companions of a run: the scorecard and dimension files beside it (or uploaded), scored with every
problem kept as text, so that a bad companion never stops the report of the run it sits next to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from reporting.format.folders import companions as files_beside
from reporting.report.model import RubricResults
from reporting.rubrics.scorecard import Source, source_label


@dataclass(frozen=True)
class Companions:
    rubric: Optional[Source] = None
    verdicts: Optional[Source] = None
    benchmarks: Optional[Source] = None
    dimensions: Optional[Source] = None
    safety_gate: bool = True
    z_normalize: bool = False

    @property
    def any(self) -> bool:
        return any(x is not None for x in (self.rubric, self.verdicts, self.benchmarks, self.dimensions))

    @classmethod
    def beside(cls, run_path: Union[str, Path], **given: Any) -> Companions:
        """The files named RUN.rubric.yaml ... next to the run; a file given explicitly wins over the one found."""
        found: dict[str, Any] = dict(files_beside(run_path))
        found.update({k: v for k, v in given.items() if v is not None})
        return cls(**found)


def rubric_results(companions: Companions) -> RubricResults:
    """Scorecard and dimension results, with any problem as text instead of an exception."""
    from reporting.rubrics import RubricError, load_evaluations, score_dimensions, scorecard

    card, dims, problems = None, None, []
    if companions.rubric and companions.verdicts:
        try:
            card = scorecard(companions.rubric, companions.verdicts, companions.benchmarks)
        except RubricError as exc:
            problems += exc.lines
    elif companions.rubric or companions.verdicts:
        problems.append("a rubric needs both RUN.rubric.yaml and RUN.verdicts.jsonl")
    if companions.dimensions:
        try:
            dims = score_dimensions(
                load_evaluations(companions.dimensions),
                safety_gate=companions.safety_gate,
                z_normalize=companions.z_normalize,
                label=source_label(companions.dimensions),
            )
        except RubricError as exc:
            problems += exc.lines
    return RubricResults(card, dims, (), tuple(problems))
