"""The verbs of the command line: each reads its inputs, calls the tested modules and prints (``reports.py``:
run reports; ``tools.py``: scoring, rubrics, the dashboard). Exit 0 on success, 2 on bad input, 1 on an internal
error or a failing gate. Verbs import the analysis, rendering and scoring layers when they run, so that `--help`
starts fast."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Optional

from reporting.analysis.registry import GATED
from reporting.textsafe import cli_line

if TYPE_CHECKING:
    from reporting.analysis.filters import Filters
    from reporting.format.severity_map import SeverityMap

DEFAULT_MIN_CASES = 5  # the same default as reporting.analysis.observability (a test keeps them equal)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
COMPANION_OPTIONS = ("rubric", "verdicts", "benchmarks", "dimensions")
GATES = tuple(f.gate for f in GATED if f.gate is not None)


MODEL: Optional[str] = None  # from --model: the run picked from a file that holds several


def load_run(path):
    from reporting.sources.reading import load_run as load

    return load(path, model=MODEL)


class BadInput(Exception):
    """Raised by a verb for input problems; each argument is one message line."""


def _safe(text: str) -> str:
    """Every line printed is one line: control characters escaped, a leading '::' (a CI workflow command) broken."""
    return "".join(cli_line(line) + "\n" for line in str(text).split("\n")) if text else "\n"


def _out(text: str) -> None:
    _written(sys.stdout, _safe(text[:-1] if text.endswith("\n") else text))


def _err(text: str) -> None:
    _written(sys.stderr, _safe(text[:-1] if text.endswith("\n") else text))


def _written(stream, text: str) -> None:
    """A path of bytes not UTF-8 carries lone surrogates: a stream whose encoding refuses them gets their escapes (the
    text is encoded whole before any of it is written, so nothing is written twice)."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        stream.write(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def _filters(args: argparse.Namespace) -> Filters:
    from reporting.analysis.filters import Filters

    try:
        return Filters(
            tuple(args.category or ()),
            tuple(s.lower() for s in args.severity or ()),
            args.outcome,
            tuple(args.failure_mode or ()),
            args.search or "",
        )
    except ValueError as exc:
        raise BadInput(f"filters: {exc}") from None


SEVERITY_MAP: Optional[SeverityMap] = None  # from --severity-map: every run a verb reads goes through it


def _load_valid(path: str):
    result = load_run(path)
    if not result.ok:
        raise BadInput(*[str(p) for p in result.problems])
    return mapped(result.run)


def mapped(run):
    """The run with the user's --severity-map applied, if one was given."""
    return run if SEVERITY_MAP is None else SEVERITY_MAP.apply(run)


def _refuse_overwriting_input(output: str, source: str) -> None:
    """The one overwrite guard: no verb writes over a file it reads."""
    from reporting.format.writing import refuse_companion_output, same_file

    if same_file(output, source):
        raise BadInput(f"{output}: refusing to overwrite the input report; choose another output path")

    refuse_companion_output(output, source)  # nor over a file kept beside it (RUN.reviews.jsonl, ...): issue 30


# The head of a file RunLens wrote (a report, a scored run): schema_version first, then RunLens named as its generator
# (report.serialise, scoring.runs). The only run a report's output may replace.
_RUNLENS_WROTE = re.compile(
    rb'\A\s{0,64}\{\s{0,64}"schema_version"\s{0,64}:\s{0,64}\d{1,9}\s{0,64},\s{0,64}"generator"\s{0,64}:\s{0,64}'
    rb'\{\s{0,64}"name"\s{0,64}:\s{0,64}"runlens"'
)
WHOLE_BELOW, HEAD_BYTES = 16 << 20, 1 << 20  # an existing output read whole to 16 MB (a benchmark file is one JSON)


def check_report_output(output: str, *sources: str) -> None:
    """Every check of a report's output path made before the work: not one of its ``sources`` (nor a file kept beside
    one), a file that can be written, never a run's name (.parquet, .jsonl, .ndjson, .eval), and never an existing
    file that holds a run RunLens did not write: another tool's (garak, promptfoo, Inspect, a benchmark's), a case
    table, or a run of RunLens's format written by a harness or by import."""
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
    held = _run_held(target)
    if held:
        raise BadInput(
            f"{output}: refusing to replace {held}: a report replaces only a file RunLens wrote; choose another "
            "output path (or move that file away)"
        )


def written_by_runlens(document: dict) -> dict:
    """``document`` (a run RunLens made: a scored run) with RunLens named as its generator after schema_version, as a
    report names it: the mark ``check_report_output`` reads to let a later output replace it."""
    from reporting._version import __version__

    head = {"schema_version": document["schema_version"], "generator": {"name": "runlens", "version": __version__}}
    return {**head, **{key: value for key, value in document.items() if key not in head}}


def _run_held(target) -> Optional[str]:
    """What run the existing regular file ``target`` holds, if it is a run RunLens did not write; None otherwise."""
    import os
    import stat

    try:
        info = os.stat(target)
        if not stat.S_ISREG(info.st_mode):
            return None
        with open(target, "rb") as handle:
            head = handle.read(info.st_size if info.st_size <= WHOLE_BELOW else HEAD_BYTES)
    except OSError:
        return None
    head = head.removeprefix(b"\xef\xbb\xbf")
    if _RUNLENS_WROTE.match(head):
        return None
    from reporting.importers import NAMES, detect, garak_side_file, surely_runlens

    tool = detect(head)
    if tool is not None:
        return NAMES[tool]
    if garak_side_file(head, str(target)) is not None:
        return "a file garak wrote beside its report"
    if surely_runlens(head):
        return "a run RunLens did not write (its cases, written by a harness or by import)"
    return None
