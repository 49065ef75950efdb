"""The runs of a folder, told by content: run files (a RunLens run, a Parquet case table, another tool's file), and
what is skipped and why (a companion file beside a run, garak's side files, a FIFO, a file above the size cap).
The companions themselves are ``reporting.format.folders``."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from reporting.format import problems
from reporting.format.folders import RUN_SUFFIXES, SNIFF_BYTES, companion_kind
from reporting.format.problems import megabytes, unreadable
from reporting.importers import garak_side_file
from reporting.importers.garak_hitlog import looks_like_hitlog


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str
    companion: bool = False  # a file that belongs beside a run (reviews, verdicts, a garak hit log): expected

    def __str__(self) -> str:
        return f"{self.name}: skipped: {self.reason}"


def run_files(folder: Union[str, Path], max_bytes: Optional[int] = None) -> tuple[list[Path], list[Skipped]]:
    """The run files of a folder (regular files with a run suffix, below the size cap), and what was skipped, why.

    Never opens a FIFO or a device: each entry is checked with stat (following symlinks) before it is read."""
    limit = problems.MAX_FILE_BYTES if max_bytes is None else max_bytes
    runs: list[Path] = []
    skipped: list[Skipped] = []
    for path in sorted(Path(folder).iterdir(), key=lambda p: p.name):
        name = path.name
        if not name.lower().endswith(RUN_SUFFIXES):
            continue
        try:
            info = os.stat(path)
        except OSError as exc:
            skipped.append(Skipped(name, unreadable(name, exc).message))
            continue
        if not stat.S_ISREG(info.st_mode):
            skipped.append(Skipped(name, "not a regular file (a folder, FIFO, device or socket)"))
            continue
        if info.st_size > limit:
            skipped.append(
                Skipped(
                    name,
                    f"{megabytes(info.st_size)}, larger than the {megabytes(limit)} cap "
                    "(raise it with --max-file-mb or RUNLENS_MAX_FILE_MB)",
                )
            )
            continue
        kind = companion_kind(path)
        if kind is not None:
            skipped.append(Skipped(name, kind, companion=True))
            continue
        side = _garak_side_file(path)
        if side is not None:
            skipped.append(Skipped(name, side, companion=True))
            continue
        runs.append(path)
    return runs, skipped


def _garak_side_file(path: Path) -> Optional[str]:
    """garak's AVID export, and its hit log when the report.jsonl it comes from is beside it: not runs (told by
    content; a hit log alone is read, as the only record of the run there is)."""
    name = path.name.lower()
    if not name.endswith((".hitlog.jsonl", ".avid.jsonl")):
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return None
    if looks_like_hitlog(head):
        report = path.with_name(path.name[: -len(".hitlog.jsonl")] + ".report.jsonl")
        if name.endswith(".hitlog.jsonl") and report.is_file():
            return f"a garak hit log (only the failing generations); the run is {report.name}, read beside it"
        return None
    problem = garak_side_file(head, path.name)
    return None if problem is None else problem.message
