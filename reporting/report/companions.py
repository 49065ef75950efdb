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
    problems: tuple[str, ...] = ()  # companion names that are links, FIFOs or folders: listed, never read

    @property
    def any(self) -> bool:
        sources = (self.rubric, self.verdicts, self.benchmarks, self.dimensions)
        return any(x is not None for x in sources) or bool(self.problems)

    @classmethod
    def beside(cls, run_path: Union[str, Path], **given: Any) -> Companions:
        """The files named RUN.rubric.yaml ... next to the run; a file given explicitly wins over the one found."""
        from reporting.format.folders import companion_problems

        found: dict[str, Any] = dict(files_beside(run_path))
        chosen = {k: v for k, v in given.items() if v is not None}
        found.update(chosen)
        refused = tuple(line for key, line in companion_problems(run_path).items() if key not in chosen)
        return cls(**found, problems=refused)


def rubric_results(companions: Companions) -> RubricResults:
    """Scorecard and dimension results, with any problem as text instead of an exception."""
    from dataclasses import replace

    from reporting.format.companion_files import companion_source
    from reporting.format.safe_yaml import MAX_YAML_BYTES
    from reporting.rubrics import RubricError, load_evaluations, score_dimensions, scorecard

    card, dims, problems = None, None, list(companions.problems)
    # Files given as paths are read here, each without following a link and only as a regular file (size-capped):
    # the readers then see (label, bytes), as for an upload (issue 30).
    read: dict[str, Any] = {}
    for key in ("rubric", "verdicts", "benchmarks", "dimensions"):
        yaml = key in ("rubric", "benchmarks")
        read[key], problem = companion_source(getattr(companions, key), head=MAX_YAML_BYTES + 1 if yaml else None)
        if problem is not None:
            problems.append(problem)
    companions = replace(companions, **read)
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
