"""The verbs of the command line: each reads its inputs, calls the tested modules and prints (``reports.py``:
run reports; ``tools.py``: scoring, rubrics, the dashboard). Exit 0 on success, 2 on bad input, 1 on an internal
error or a failing gate. Verbs import the analysis, rendering and scoring layers when they run, so that `--help`
starts fast."""

from __future__ import annotations

import argparse
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
