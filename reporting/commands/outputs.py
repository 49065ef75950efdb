"""Where a verb writes a report (recompute, export, compare, trend, score, the store's figures, judge-eval): every
check of the path made before the work, and again as the report is written. A report replaces a file RunLens wrote
(its head names RunLens as its generator: a report, a scored run, the figures beside a case table) or a file that
is no run; never an input, a file kept beside one, a run's name (.parquet, .jsonl, .ndjson, .eval), or an existing
run RunLens did not write: another tool's (garak, promptfoo, Inspect, a benchmark's), a case table, or a run of
RunLens's format in any of its shapes (an object, a bare array of cases, JSON Lines) that a harness or import wrote.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional, Union

from reporting.commands import BadInput, _refuse_overwriting_input

# The head of a file RunLens wrote: schema_version first, then (the figures beside a case table) cases_file, then
# RunLens named as its generator (report.serialise, written_by_runlens).
_RUNLENS_WROTE = re.compile(
    rb'\A\s{0,64}\{\s{0,64}"schema_version"\s{0,64}:\s{0,64}\d{1,9}\s{0,64},'
    rb'(?:\s{0,64}"cases_file"\s{0,64}:\s{0,64}"(?:[^"\\\n]|\\.){0,1024}"\s{0,64},)?'
    rb'\s{0,64}"generator"\s{0,64}:\s{0,64}\{\s{0,64}"name"\s{0,64}:\s{0,64}"runlens"'
)
WHOLE_BELOW, HEAD_BYTES = 16 << 20, 1 << 20  # an existing output parsed whole up to 16 MB; above, its first MB read
_CASES_KEY = re.compile(rb'"cases"\s*:\s*\[')
RUN = "a run RunLens did not mark as its own (a harness's, an import's, or one `score` wrote before it marked its runs)"


def check_report_output(output: str, *sources: str) -> None:
    """Every check of a report's output path, made before the work (see the module's docstring)."""
    from reporting.format.writing import RUN_ONLY_SUFFIXES, check_output_path, refuse_replacing_a_run

    for source in sources:
        _refuse_overwriting_input(output, source)
    target = check_output_path(output)
    refuse_replacing_a_run(target)
    if target.name.lower().endswith(RUN_ONLY_SUFFIXES):
        raise BadInput(
            f"{output}: refusing this name: it is a run's (a case table, a run of JSON Lines, an Inspect log), and a "
            "report under it would be taken for one; name the report OUT.json (OUT.html for a page)"
        )
    _refuse_a_run(output, target)


def distinct_outputs(*outputs: Optional[str]) -> None:
    """Two outputs of one verb (-o and --html) never name one file: the second went over the first."""
    named = [output for output in outputs if output]
    for i, first in enumerate(named):
        for second in named[i + 1 :]:
            if os.path.realpath(first) == os.path.realpath(second):
                raise BadInput(f"{second}: named twice as an output: give each output its own file")


def write_report(path: Union[str, os.PathLike], text: Union[str, bytes, Iterable[str]]) -> Path:
    """``write_atomic``, the file at ``path`` looked at again first: a run put there during the work is kept."""
    from reporting.format.writing import write_atomic

    _refuse_a_run(str(path), Path(path))
    return write_atomic(path, text)


def written_by_runlens(document: dict) -> dict:
    """``document`` (a run RunLens made: a scored run) with RunLens named as its generator after schema_version, as a
    report names it: the mark a later output reads to replace it."""
    from reporting._version import __version__

    head = {"schema_version": document["schema_version"], "generator": {"name": "runlens", "version": __version__}}
    return {**head, **{key: value for key, value in document.items() if key not in head}}


def _refuse_a_run(output: str, target: Path) -> None:
    held = run_held(target)
    if held:
        raise BadInput(
            f"{output}: refusing to replace {held}: a report replaces only a file RunLens wrote or a file that is no "
            "run; choose another output path (or move that file away)"
        )


def run_held(target: Path) -> Optional[str]:
    """What run the existing file ``target`` holds, if it is one RunLens did not write (or cannot be read, so might
    be); None for a file RunLens wrote, a file that is no run, or no file."""
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"a file that cannot be read ({exc.strerror or exc.__class__.__name__}), which may be a run"
    if not stat.S_ISREG(info.st_mode):
        return None  # (check_output_path refuses it)
    whole = info.st_size <= WHOLE_BELOW
    try:
        with open(target, "rb") as handle:
            data = handle.read(info.st_size if whole else HEAD_BYTES)
    except OSError as exc:
        return f"a file that cannot be read ({exc.strerror or exc.__class__.__name__}), which may be a run"
    data = data.removeprefix(b"\xef\xbb\xbf")
    if _RUNLENS_WROTE.match(data):
        return None
    return _tools_run(data[:HEAD_BYTES]) or _json_run(data, whole)


def _tools_run(head: bytes) -> Optional[str]:
    """Another tool's run, told by the first megabyte as the importers tell it."""
    from reporting.importers import NAMES, garak_side_file
    from reporting.importers.garak import looks_like_garak
    from reporting.importers.garak_hitlog import looks_like_hitlog
    from reporting.importers.inspect_ai import looks_like_inspect
    from reporting.importers.promptfoo import looks_like_promptfoo

    if looks_like_hitlog(head):
        return "a garak hit log"
    if looks_like_garak(head):
        return NAMES["garak"]
    if looks_like_inspect(head):
        return NAMES["inspect"]
    if looks_like_promptfoo(head):
        return NAMES["promptfoo"]
    if garak_side_file(head, "") is not None:
        return "a garak AVID export"
    return None


def _json_run(data: bytes, whole: bool) -> Optional[str]:
    """A benchmark's file or a run of RunLens's format in any of its shapes; ``data`` is the file (``whole``) or its
    first megabyte."""
    from reporting.importers import NAMES
    from reporting.importers.benchmarks import looks_like_harmbench, looks_like_jailbreakbench

    text = data.lstrip()
    if not text.startswith((b"{", b"[")):
        return None  # no JSON: a page, a printout, text
    value = _parsed(text) if whole else None
    if isinstance(value, dict):
        if looks_like_jailbreakbench(value):
            return NAMES["jailbreakbench"]
        if looks_like_harmbench(value):
            return NAMES["harmbench"]
        cases = value.get("cases")
        return RUN if isinstance(cases, list) and (cases or "cases_file" not in value) else None
    if isinstance(value, list):
        return RUN if any(isinstance(item, dict) and "probe_id" in item for item in value[:100]) else None
    first = _parsed(text.split(b"\n", 1)[0])  # JSON Lines: a case a line
    if isinstance(first, dict) and "probe_id" in first:
        return RUN
    if whole:
        return None  # one JSON value, or JSON Lines, that holds no run
    window = text[: 1 << 16]  # a file above 16 MB, by its head
    if text.startswith(b"{") and b'"jailbreaks"' in window:
        return NAMES["jailbreakbench"]
    if text.startswith(b"{") and b'"generation"' in window and b'"label"' in window:
        return NAMES["harmbench"]
    if (text.startswith(b"{") and _CASES_KEY.search(text)) or (text.startswith(b"[") and b'"probe_id"' in window):
        return RUN
    return None


def _parsed(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None
