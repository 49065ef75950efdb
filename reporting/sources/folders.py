"""The runs of a folder, told by content: run files (a RunLens run, a Parquet case table, another tool's file), and
what is skipped and why (a companion file beside a run, garak's side files, a FIFO, a file above the size cap).
The companions themselves are ``reporting.format.folders``."""

from __future__ import annotations

import json
import os
import re
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
        beside = _figures_beside_table(path)
        if beside is not None:
            skipped.append(Skipped(name, beside, companion=True))
            continue
        side = _garak_side_file(path)
        if side is not None:
            skipped.append(Skipped(name, side, companion=True))
            continue
        runs.append(path)
    return runs, skipped


# The head of the figures `recompute --format parquet` writes: schema_version, then the name of the case table.
_FIGURES_HEAD = re.compile(r'\{\s*"schema_version"\s*:\s*\d+\s*,\s*"cases_file"\s*:\s*("(?:[^"\\\n]|\\.){1,1024}")')


_FIGURES_TAIL = re.compile(r'"cases_file"\s*:\s*("(?:[^"\\\n]|\\.){1,1024}")\s*\}\s*\Z')
FIGURES_MAX_BYTES = 64 << 20  # a figures file holds no case: one this large is read as a run, never skipped
FIGURES_SCAN_BYTES = 8 << 20  # up to this size a file is searched whole for the key, wherever it is


def _figures_beside_table(path: Path) -> Optional[str]:
    """The figures ``recompute --format parquet`` wrote, when the case table they name (another ``.parquet`` file)
    is beside them and they hold no case: not a run (the table is, read beside it). Otherwise the file is read, and
    refused (naming the table it wants) when it holds no case; a run that names a table and holds its cases is a
    run."""
    from reporting.format.strict_json import strict_loads

    if not path.name.lower().endswith(".json"):
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8", "replace")
            found = _FIGURES_HEAD.match(head.lstrip("\ufeff \t\r\n"))
            size = os.fstat(handle.fileno()).st_size
            if found is None:  # (RunLens before 217c77e wrote the key last)
                handle.seek(max(0, size - 4096))
                found = _FIGURES_TAIL.search(handle.read(4096).decode("utf-8", "replace"))
            if found is None and size <= FIGURES_SCAN_BYTES:  # (its keys put in another order: jq -S, a script)
                handle.seek(0)
                return _figures_named_inside(path, handle.read(FIGURES_SCAN_BYTES + 1))
            table = json.loads(found.group(1)) if found else None
            if not isinstance(table, str) or not table.lower().endswith(".parquet") or not _beside(path, table):
                return None
            handle.seek(0)
            data = handle.read(FIGURES_MAX_BYTES + 1)
    except (OSError, ValueError):
        return None
    document, problems = strict_loads(path.name, data) if len(data) <= FIGURES_MAX_BYTES else (None, [])
    if problems or not isinstance(document, dict) or document.get("cases"):
        return None
    return _figures_skipped(table)


def _figures_named_inside(path: Path, data: bytes) -> Optional[str]:
    """``_figures_beside_table`` for a small file whose ``cases_file`` is neither its first key nor its last: parsed
    only when the key's name is in it."""
    from reporting.format.strict_json import strict_loads

    if b'"cases_file"' not in data or len(data) > FIGURES_SCAN_BYTES:
        return None
    document, problems = strict_loads(path.name, data)
    if problems or not isinstance(document, dict) or document.get("cases"):
        return None
    table = document.get("cases_file")
    if not isinstance(table, str) or not table.lower().endswith(".parquet") or not _beside(path, table):
        return None
    return _figures_skipped(table)


def _figures_skipped(table: str) -> str:
    return f"the figures `recompute --format parquet` wrote; the run is their case table {table!r}, read beside them"


def _beside(path: Path, table: str) -> bool:
    """Whether ``table`` is a bare name of another regular file in ``path``'s folder (never a path followed)."""
    if os.path.basename(table) != table or table in (".", "..") or table == path.name:
        return False
    try:
        beside = path.with_name(table)
        return stat.S_ISREG(os.stat(beside).st_mode) and not os.path.samefile(beside, path)
    except (OSError, ValueError):
        return False


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
