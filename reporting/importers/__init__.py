"""Readers of other tools' output files, each giving RunLens documents of schema version 2 that the run reader
then validates like any file: recognised by content, never by file name. docs/importers.md says what maps to what
and what is lost."""

from __future__ import annotations

import io
import re
from typing import Any, Optional

from reporting.format.problems import Problem

FORMATS = ("garak", "promptfoo", "inspect", "jailbreakbench", "harmbench")
NAMES = {
    "garak": "a garak report.jsonl",
    "promptfoo": "a promptfoo output file",
    "inspect": "an Inspect AI log",
    "jailbreakbench": "a JailbreakBench artifact",
    "harmbench": "HarmBench completions",
}

Imported = tuple[list[dict[str, Any]], list[str], list[Problem]]


def detect(data: bytes) -> Optional[str]:
    """Which tool wrote the file, by its content; None for RunLens's own format or anything else."""
    return _detect(data)[0]


# A RunLens document's first key (RunLens writes schema_version first): no other tool's file opens with one of these,
# and the detectors below would each search the first line, which is the whole file when the document is one line.
_RUNLENS_FIRST_KEY = re.compile(rb'\A\s{0,256}\{\s{0,256}"(?:schema_version|run|cases)"\s{0,256}:')


def _detect(data: bytes) -> tuple[Optional[str], Any]:
    """The tool that wrote the file and, for a benchmark file, its parsed JSON (so it is parsed once)."""
    if _RUNLENS_FIRST_KEY.match(data):  # (before the detectors are even imported)
        return None, None
    from reporting.importers.benchmarks import parse_benchmark
    from reporting.importers.garak import looks_like_garak
    from reporting.importers.garak_hitlog import looks_like_hitlog
    from reporting.importers.inspect_ai import looks_like_inspect
    from reporting.importers.promptfoo import looks_like_promptfoo

    if looks_like_garak(data) or looks_like_hitlog(data):
        return "garak", None
    if looks_like_inspect(data):
        return "inspect", None
    if looks_like_promptfoo(data):
        return "promptfoo", None
    benchmark = parse_benchmark(data)
    return (benchmark[0], benchmark[1]) if benchmark else (None, None)


def import_documents(
    data: bytes,
    label: str,
    source: Optional[str] = None,
    primary_judge: Optional[str] = None,
    behaviors: Optional[dict[str, dict[str, str]]] = None,
    risk_scorer: Optional[str] = None,
    detected: Optional[tuple[Optional[str], Any]] = None,
    strategy_key: Optional[str] = None,
) -> Imported:
    """Every run in another tool's file (promptfoo: one per model), the warnings and the problems. ``source``
    forces a reader: a file that is not of that format is a problem saying what it reads as. ``detected``: what
    ``_detect`` found, when the caller has it already."""
    found, parsed = detected if detected is not None else _detect(data)
    if source is not None and found != source:
        what = NAMES[found] if found else "RunLens's own format or no format RunLens knows"
        return [], [], [Problem(label, "$", f"--from {source}: this is not {NAMES[source]}; it reads as {what}")]
    if found is None:
        side = garak_side_file(data, label)
        return (
            [],
            [],
            [side or Problem(label, "$", _unknown(data))],
        )
    try:
        return _convert(found, parsed, data, label, primary_judge, behaviors, risk_scorer, strategy_key)
    except SHAPE_ERRORS as exc:
        return [], [], [shape_problem(label, NAMES[found], exc)]


# What a reader raises on a file of an unexpected shape (a number where an object was, ...): caught as a problem
# of that file, so that no file makes a verb fail with an internal error.
SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError, RecursionError)


MAX_TAGS = 64  # tags kept of one case
MAX_TAG_CHARS = 500


def tags_of(*sources: Any) -> Optional[list[str]]:
    """A case's tags from the tool's lists of tags (each hostile, any shape): their strings in order, each whole up
    to MAX_TAG_CHARS characters, the first time seen, at most MAX_TAGS; None for none."""
    tags: dict[str, None] = {}
    for values in sources:
        for value in values if isinstance(values, list) else ():
            if isinstance(value, str) and value.strip() and len(tags) < MAX_TAGS:
                tags.setdefault(value[:MAX_TAG_CHARS], None)
    return list(tags) or None


def shape_problem(label: str, what: str, exc: BaseException) -> Problem:
    """The problem of a file that a reader could not read as ``what`` (its fields are not of the shapes the tool
    writes)."""
    detail = "nesting too deep" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {str(exc)[:120]}"
    return Problem(label, "$", f"cannot be read as {what}: a field is not of the shape the tool writes ({detail})")


def _convert(
    found: str,
    parsed: Any,
    data: bytes,
    label: str,
    primary_judge: Optional[str],
    behaviors: Optional[dict[str, dict[str, str]]],
    risk_scorer: Optional[str],
    strategy_key: Optional[str] = None,
) -> Imported:
    if found == "promptfoo":
        from reporting.importers.promptfoo import read_promptfoo

        return read_promptfoo(data, label)
    document: Optional[dict[str, Any]]
    if found == "garak":
        from reporting.importers.garak import read_garak
        from reporting.importers.garak_hitlog import looks_like_hitlog, read_hitlog

        reader = read_hitlog if looks_like_hitlog(data) else read_garak
        document, warnings, problems = reader(io.BytesIO(data), label)  # line by line, no list of lines
    elif found == "inspect":
        from reporting.importers.inspect_ai import read_inspect

        document, warnings, problems = read_inspect(data, label, primary_judge, risk_scorer, strategy_key)
    else:
        from reporting.importers.benchmarks import read_benchmark

        document, warnings, problems = read_benchmark(found, parsed, label, behaviors)
    return ([document] if document is not None else []), warnings, problems


def pick(documents: list[dict[str, Any]], label: str, model: Optional[str]) -> tuple[Optional[dict], list[Problem]]:
    """The one run a verb reads: the only one, or the one ``--model`` names; else a problem listing them."""
    models = [str(d["run"].get("model")) for d in documents]
    if model is not None:
        chosen = [d for d, m in zip(documents, models) if m == model]
        if len(chosen) == 1:
            return chosen[0], []
        if len(documents) == 1:  # --model names the run to pick from files of several; a file of one is that run
            return documents[0], []
        return None, [Problem(label, "$", f"--model {model!r}: the file's runs are of {', '.join(models)}")]
    if len(documents) <= 1:
        return (documents[0] if documents else None), []
    return None, [
        Problem(
            label,
            "$",
            f"the file holds {len(documents)} runs, one per model ({', '.join(models)}): pick one with "
            "--model NAME, or split it with `python -m reporting import FILE -o DIR`",
        )
    ]


def _unknown(data: bytes) -> str:
    """Why no reader recognised the file: broken JSON is said as such."""
    if data.lstrip()[:1] in (b"{", b"["):
        from reporting.format.strict_json import strict_loads  # not at import: `--help` loads no pydantic

        _, problems = strict_loads("", data)
        if problems and problems[0].path == "$":
            return f"not valid JSON ({problems[0].message[:160]}), so no reader can recognise it"
    return "not a file of garak, promptfoo, Inspect AI, JailbreakBench or HarmBench"


def run_models(data: bytes) -> list[str]:
    """The model of each run in a file that holds several (promptfoo with several providers); [] otherwise."""
    from reporting.importers.promptfoo import looks_like_promptfoo, read_promptfoo

    # promptfoo's test first (a look at the head): the other tools' tests read a one-line document whole
    if not looks_like_promptfoo(data) or detect(data) != "promptfoo":
        return []

    try:
        documents, _, _ = read_promptfoo(data, "")
    except SHAPE_ERRORS:
        return []  # the verb reading the file names what is wrong with it
    return [str(d["run"].get("model")) for d in documents] if len(documents) > 1 else []


def garak_side_file(data: bytes, label: str) -> Optional[Problem]:
    """garak's AVID export is not a run: a problem saying so and naming the file to read instead."""
    head = data.lstrip()[:4096]
    if not head.startswith(b"{") or _RUNLENS_FIRST_KEY.match(head):  # (a RunLens document's config may name AVID)
        return None
    stem = label.rsplit("/", 1)[-1].split(".")[0]
    if b'"data_type"' in head and b'"AVID"' in head:
        what = "a garak AVID export: one summary per probe, with no case to recompute"
    else:
        return None
    return Problem(label, "$", f"{what}; read the report garak wrote beside it ({stem}.report.jsonl)")


def surely_runlens(head: bytes) -> bool:
    """Whether a file that opens with ``head`` (8 KB of it, or the whole file) is read by ``import_document`` as no
    other tool's: it opens with a RunLens document's first key (``_detect`` and ``garak_side_file`` read no further)."""
    return _RUNLENS_FIRST_KEY.match(head) is not None


def lines_of_no_other_tool(head: bytes, label: str, whole: bool) -> bool:
    """Whether a file of JSON Lines that opens with ``head`` (``whole``: all of it) is read by ``import_document`` as
    no other tool's: the detectors read its first line and its first 64 KB (``head`` must hold both), and the
    benchmarks' reader takes a file of several lines as no benchmark (it is not one JSON value)."""
    if head.find(b"\n") < 0 or not (whole or len(head) >= 1 << 16):
        return False
    return _detect(head)[0] is None and garak_side_file(head, label) is None


def import_document(
    data: bytes, label: str, model: Optional[str] = None
) -> Optional[tuple[Optional[dict[str, Any]], list[str], list[Problem]]]:
    """The one RunLens document of another tool's file; None when the file is no other tool's. A file holding
    several runs (promptfoo with several providers) needs ``model``; without it, a problem names them. A Parquet
    case table (``recompute --format parquet``, the run store) is read here too."""
    from reporting.format.parquet import looks_like_parquet, read_parquet_document

    if looks_like_parquet(data):
        table, table_problems = read_parquet_document(data, label)
        return table, [], table_problems
    detected = _detect(data)
    if detected[0] is None:
        side = garak_side_file(data, label)
        return None if side is None else (None, [], [side])
    documents, warnings, problems = import_documents(data, label, detected=detected)
    document, more = pick(documents, label, model)
    return document, warnings, problems + more
