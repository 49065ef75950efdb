"""Files that sit next to a run report and add to it (documented in docs/rubrics.md):

RUN.json              the run
RUN.rubric.yaml       a rubric scorecard definition
RUN.benchmarks.yaml   benchmark definitions the rubric refers to by code (optional)
RUN.verdicts.jsonl    judge verdicts for the rubric's benchmarks
RUN.dimensions.json   multi-dimensional judge scores of responses (docs/rubrics.md)
RUN.reviews.jsonl     people's review decisions on the run's verdicts (docs/review.md)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional, Union

RUN_SUFFIXES = (".json", ".jsonl", ".ndjson", ".eval", ".parquet")  # .eval: Inspect AI logs; .parquet: case tables
COMPANION_SUFFIXES = (".rubric.yaml", ".benchmarks.yaml", ".verdicts.jsonl", ".dimensions.json", ".reviews.jsonl")
SNIFF_BYTES = 1 << 16
# JSON Lines companions: what each is, and the field its rows have that a run's rows do not
_JSONL_COMPANIONS = {
    ".verdicts.jsonl": ("judge verdicts (a companion file, RUN.verdicts.jsonl)", "benchmark"),
    ".reviews.jsonl": ("review records (a companion file, RUN.reviews.jsonl)", "kind"),
}


def is_companion(name: str) -> bool:
    return name.lower().endswith(COMPANION_SUFFIXES)


def companion_kind(path: Union[str, Path]) -> Optional[str]:
    """What companion file ``path`` is (named like one and holding one), or None for anything else."""
    path = Path(path)
    return _companion_by_content(path) if is_companion(path.name) else None


def _companion_by_content(path: Path) -> Optional[str]:
    """What companion a file named like one holds, or None when its content is a run.

    Told by content, not by name: a run saved as ``x.dimensions.json`` is still a run. The head is read without
    following a link and only from a regular file; its first line goes through the strict JSON decoder (a line
    nested too deeply, or not JSON at all, is still a companion by its name: listed as skipped, never an error
    that hides the other runs)."""
    from reporting.format.companion_files import open_companion
    from reporting.format.strict_json import parse_json_text

    try:
        fd = open_companion(path)
    except OSError as exc:
        return f"a companion file, not read: {exc}"
    try:
        head = os.read(fd, SNIFF_BYTES).decode("utf-8-sig", "replace")
    except OSError as exc:
        return f"a companion file, not read: {exc.strerror or exc.__class__.__name__}"
    finally:
        os.close(fd)
    name = path.name.lower()
    if name.endswith(".dimensions.json"):
        stripped = head.lstrip()
        if stripped.startswith("[") or '"cases"' in head:
            return None
        return "dimension scores (a companion file, RUN.dimensions.json)"
    for suffix, (what, marker) in _JSONL_COMPANIONS.items():
        if name.endswith(suffix):
            first = next((line for line in head.splitlines() if line.strip()), "")
            row, problems = parse_json_text(path.name, first, "line 1")
            if row is None or problems:
                return what
            # a JSON Lines run named like a companion: its rows have a probe id and not the companion's marker
            if isinstance(row, dict) and "probe_id" in row and marker not in row:
                return None
            return what
    return "a companion file"


def run_stem(path: Union[str, Path]) -> Path:
    path = Path(path)
    for suffix in sorted(RUN_SUFFIXES, key=len, reverse=True):
        if path.name.lower().endswith(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


_RUBRIC_COMPANIONS = (
    ("rubric", ".rubric.yaml"),
    ("benchmarks", ".benchmarks.yaml"),
    ("verdicts", ".verdicts.jsonl"),
    ("dimensions", ".dimensions.json"),
)


def companions(run_path: Union[str, Path]) -> dict[str, Optional[Path]]:
    """The rubric companions beside the run that are regular files of their own (a symbolic link, FIFO or folder
    of such a name is never returned, so never read: ``companion_problems`` lists it)."""
    stem = run_stem(run_path)
    found = {}
    for key, suffix in _RUBRIC_COMPANIONS:
        candidate = stem.with_name(stem.name + suffix)
        try:
            regular = stat.S_ISREG(os.lstat(candidate).st_mode)
        except OSError:
            regular = False
        found[key] = candidate if regular else None
    return found


def companion_problems(run_path: Union[str, Path]) -> dict[str, str]:
    """Key -> the problem line of each rubric companion name beside the run that is not a regular file of its own
    (a symbolic link, FIFO, folder or device): listed, never followed or read."""
    from reporting.format.companion_files import companion_state

    stem = run_stem(run_path)
    problems = {}
    for key, suffix in _RUBRIC_COMPANIONS:
        candidate = stem.with_name(stem.name + suffix)
        state = companion_state(candidate)
        if state is not None:
            problems[key] = f"{candidate}: $: {state}"
    return problems
