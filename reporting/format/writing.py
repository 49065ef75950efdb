"""JSON output: no NaN or Infinity ever written (null instead), and atomic file writes."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Union

# JSON allows these raw inside strings, but a terminal or a log viewer may act on them (C1 controls such as
# CSI, line and paragraph separators): written as \u escapes, the document is the same JSON.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class OutputError(ValueError):
    """An output that cannot be written where the user asked (missing folder, a folder, no permission)."""


def clean(value: Any) -> Any:
    """Replace non-finite floats with None, recursively, so the JSON written is standard."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def dumps(value: Any, indent: Union[int, None] = 2) -> str:
    try:
        text = json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(clean(value), indent=indent, ensure_ascii=False, allow_nan=False)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


_ONE_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False)  # made once: json.dumps with options makes one a call


def dumps_line(value: Any) -> str:
    """The JSON of ``value`` on one line, compact, for many small values (a run's cases): msgspec's encoder (8x
    Python's), whose non-finite floats are null as ``clean`` makes them; the same values as ``dumps(value,
    indent=None)`` gives (floats in the shortest form that reads back to the same bits), without its spaces. A value
    msgspec does not encode (an integer beyond 64 bits, a type of its own) goes through Python's encoder."""
    try:
        text = _encode(value).decode("utf-8")
    except (TypeError, OverflowError, ValueError):
        try:
            text = _ONE_LINE.encode(value)
        except ValueError:
            text = _ONE_LINE.encode(clean(value))
    return text if text.isascii() else unsafe_escaped(text)


def unsafe_escaped(text: str) -> str:
    """JSON text with the characters a terminal may act on written as \\u escapes (``_UNSAFE_IN_JSON``)."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


_ENCODER: list[Any] = []  # msgspec's encoder, made at the first use (msgspec imported only then)


def _encode(value: Any) -> bytes:
    if not _ENCODER:
        import msgspec

        _ENCODER.append(msgspec.json.Encoder())
    return _ENCODER[0].encode(value)


class Lines:
    """Cases already written as JSON: texts of one or more cases each, the cases of a text joined by the separator
    ``document_chunks`` puts between cases (``reporting.format.case_lines`` makes them over whole columns)."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = texts

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts)


def document_chunks(document: Mapping[str, Any], compact_head: bool = False) -> Iterator[str]:
    """``dumps(document)`` in pieces, its ``cases`` (a list or any iterator) one line each and last, so that a run
    of any size is written without its whole text in memory. ``json.loads`` of the joined pieces is the document.
    ``compact_head``: everything but the cases on one line (Python's JSON encoder is many times faster without
    indentation: a million observability points would otherwise take minutes)."""
    rest = {k: v for k, v in document.items() if k != "cases"}
    if compact_head:
        head = dumps_line(rest)
        pieces = [(head[:-1] + ",\n" if head != "{}" else "{\n") + '  "cases": [']
    else:
        head = dumps(rest)
        pieces = [(head[:-2] + ",\n" if head != "{}" else "{\n") + '  "cases": [']
    size, separator = 0, "\n    "
    cases = document.get("cases") or ()
    for case in cases:
        text = case if isinstance(cases, Lines) else dumps_line(case)
        if not text:
            continue  # (a chunk of no cases)
        pieces.append(separator + text)
        separator = ",\n    "
        size += len(text)
        if size > 1 << 20:  # about a megabyte at a time: few writes, little held
            yield "".join(pieces)
            pieces, size = [], 0
    yield "".join(pieces)
    yield "\n  ]\n}\n"


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Files no output ever replaces, whoever's they are: the append-only review trail and judges' verdicts.
KEPT_SUFFIXES = (".reviews.jsonl", ".verdicts.jsonl")


def check_output_path(path: Union[str, os.PathLike]) -> Path:
    """The output path, or ``OutputError`` when it cannot be a file: a folder, in a folder that does not exist, or
    an existing review trail or verdicts file (``*.reviews.jsonl``, ``*.verdicts.jsonl``: never replaced)."""
    target = Path(path)
    if str(path) == "":
        raise OutputError("the output path is empty")
    try:
        return _checked_output(path, target)
    except OSError as exc:  # a name too long, a folder in the path that is a file, ...
        raise OutputError(f"{path}: cannot be an output: {exc.strerror or type(exc).__name__}") from None


def _checked_output(path: Union[str, os.PathLike], target: Path) -> Path:
    if target.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name for the output")
    if target.exists() and not target.is_file():  # (a device or a FIFO would be replaced by a regular file)
        raise OutputError(f"{path}: is not a regular file (a device, a FIFO or a socket); give a file name")
    if target.name.lower().endswith(KEPT_SUFFIXES) and os.path.lexists(target):
        raise OutputError(
            f"{path}: refusing to replace a review trail or verdicts file (*.reviews.jsonl and *.verdicts.jsonl are "
            "kept as they are: an output never goes over one); choose another output path"
        )
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: the folder {folder} does not exist; create it first")
    return target


def same_file(a: Union[str, os.PathLike], b: Union[str, os.PathLike], fold_case: bool = False) -> bool:
    """Whether two paths name one file: the same absolute path (letter case folded when asked: a name that differs
    only by case is the same file on macOS and Windows), or one existing file reached two ways (a link, a hard
    link, another spelling)."""
    left, right = os.path.normcase(os.path.abspath(a)), os.path.normcase(os.path.abspath(b))
    if (left.lower() == right.lower()) if fold_case else left == right:
        return True
    if os.path.lexists(a) and os.path.lexists(b):
        try:
            return os.path.samefile(a, b)
        except OSError:
            return False
    return False


def refuse_companion_output(output: Union[str, os.PathLike], source: Union[str, os.PathLike]) -> None:
    """``OutputError`` when ``output`` names a companion of the input run ``source`` (``RUN.reviews.jsonl``,
    ``RUN.verdicts.jsonl``, ``RUN.rubric.yaml``, ...: docs/rubrics.md, docs/review.md), whether or not it exists:
    an output there would replace the run's review trail or judges' verdicts, or be read as one."""
    from reporting.format.folders import COMPANION_SUFFIXES, run_stem

    stem = run_stem(Path(source))
    for suffix in COMPANION_SUFFIXES:
        companion = stem.with_name(stem.name + suffix)
        if same_file(output, companion, fold_case=True):
            raise OutputError(
                f"{output}: refusing to write over {companion.name}, a file kept beside the input run {source} "
                "(its review trail, verdicts or rubric); choose another output path"
            )


RUN_ONLY_SUFFIXES = (".parquet", ".jsonl", ".ndjson", ".eval")  # names of runs, never of a report RunLens writes


def refuse_replacing_a_run(target: Path) -> None:
    """``OutputError`` when ``target`` is an existing run no report may replace: a file named as a case table, a
    run of JSON Lines or an Inspect log, or any file that is a Parquet table (a report of RunLens is JSON, HTML,
    Markdown or a PDF: over a run it would take the cases with it)."""
    try:
        if not os.path.lexists(target):
            return
        parquet = False
        if stat.S_ISREG(os.stat(target).st_mode):  # (never opened when a FIFO or a device: it could block)
            with open(target, "rb") as handle:
                parquet = handle.read(4) == b"PAR1"
    except OSError:
        parquet = False
    if target.name.lower().endswith(RUN_ONLY_SUFFIXES) or parquet:
        raise OutputError(
            f"{target}: refusing to replace a run (a case table, a run of JSON Lines or an Inspect log): RunLens never "
            "writes a report over one; choose another output path"
        )


def write_atomic(path: Union[str, os.PathLike], text: Union[str, bytes, Iterable[str]]) -> Path:
    """Write to ``path`` through a temporary file in the same folder and a rename (``text`` may come in pieces).

    A failure leaves no partial file and keeps whatever was at ``path`` before. A new file gets the
    permissions the user's umask gives (0666 & ~umask); a replaced file keeps its own.
    """
    target = check_output_path(path)
    refuse_replacing_a_run(target)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = 0o666 & ~current_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write in {folder}: {exc.strerror or exc.__class__.__name__}") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            if isinstance(text, (str, bytes)):
                handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            else:
                for piece in text:
                    handle.write(piece.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, IsADirectoryError):
            raise OutputError(f"{path}: is a folder; give a file name for the output") from None
        if isinstance(exc, OSError):
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc.__class__.__name__}") from None
        raise
    return target
