"""Strict JSON and JSON Lines: duplicate keys, integers beyond 2^53, lone surrogates, NaN and Infinity, and
nesting beyond a depth are problems naming the file, the line and the field, never silently accepted."""

from __future__ import annotations

import json
import math
import os
import re
import threading
from typing import Any, Optional, Union

from reporting.format.problems import FileTooLarge, Problem, read_file_bytes, unreadable
from reporting.format.quick_json import read_quickly
from reporting.format.schema import MAX_INTEGER

MAX_EXTRA_DEPTH = 64  # nesting allowed inside carried-through free-form fields


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


MAX_SAFE_INTEGER = MAX_INTEGER


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _Keys(dict):
    """A JSON object in which some key was given more than once (the object keeps the last value)."""

    duplicates: list


class _HugeInt:
    """An integer literal too long to convert (more than 4,300 digits): kept as its length only."""

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


def _strict_hooks() -> tuple[dict[str, Any], list[bool]]:
    seen = [False]

    def pairs(items: list) -> dict:
        value = dict(items)
        if len(value) != len(items):
            seen[0] = True
            value = _Keys(value)
            counts: dict = {}
            for key, _ in items:
                counts[key] = counts.get(key, 0) + 1
            value.duplicates = [k for k, n in counts.items() if n > 1]
        return value

    def integer(text: str) -> int:
        if len(text) <= 18:
            return int(text)
        try:
            return int(text)
        except ValueError:
            return _HugeInt(len(text.lstrip("-")))  # type: ignore[return-value]

    return {"object_pairs_hook": pairs, "parse_int": integer}, seen


def _scan_value(file: str, path: str, value: Any, problems: list[Problem], strings: bool) -> None:
    """Duplicate keys, out-of-range integers and (with ``strings``) lone surrogates anywhere in ``value``."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item, _Keys):
                for key in item.duplicates:
                    problems.append(
                        Problem(
                            file,
                            where,
                            "duplicate key: a JSON object names each key once "
                            "(the file is ambiguous: readers keep the first or the last)",
                            key,
                        )
                    )
            for key, sub in item.items():
                if strings and not is_text(key):
                    problems.append(Problem(file, where, "a key is not valid Unicode text (a lone surrogate)"))
                stack.append((f"{where}.{key}" if where != "$" else str(key), sub))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", sub) for i, sub in enumerate(item))
        elif isinstance(item, _HugeInt) or (isinstance(item, int) and not isinstance(item, bool)):
            _check_integer(file, where, item, problems)
        elif isinstance(item, _NonFinite):
            problems.append(_nonfinite_problem(file, where, item))
        elif strings and isinstance(item, str) and not is_text(item):
            problems.append(
                Problem(
                    file,
                    where,
                    "not valid Unicode text: a lone surrogate escape such as \\ud800",
                    item.encode("utf-8", "backslashreplace").decode("utf-8"),  # (the escape ASCII, the rest UTF-8)
                )
            )


def is_text(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _check_integer(file: str, where: str, value: Any, problems: list[Problem]) -> None:
    if isinstance(value, _HugeInt):
        problems.append(
            Problem(
                file,
                where,
                f"integer out of range: an integer of {value.digits} digits (integers must be between -2^53 and 2^53)",
            )
        )
    elif not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        shown = str(value) if len(str(value)) <= 40 else str(value)[:20] + "..."
        problems.append(Problem(file, where, "integer out of range: integers must be between -2^53 and 2^53", shown))


def parse_json_text(file: str, text: str, path: str = "$") -> tuple[Any, list[Problem]]:
    """Parse JSON strictly: syntax, nesting, duplicate keys, out-of-range integers and lone surrogates are problems.

    The value is returned even when problems are found (so callers can tell where they are)."""
    hooks, duplicated = _strict_hooks()
    try:
        value = json.loads(text, **hooks)
    except RecursionError:
        return None, [Problem(file, path, "nesting is too deep to be a run report")]
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            what = f"truncated JSON: the text ends before the value is complete (line {exc.lineno}, column {exc.colno})"
        else:
            what = f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        return None, [Problem(file, path, what)]
    except ValueError as exc:
        return None, [Problem(file, path, f"invalid JSON: {str(exc)[:200]}")]
    problems: list[Problem] = []
    surrogates = _SURROGATE_ESCAPE.search(text) is not None
    if duplicated[0] or surrogates:
        _scan_value(file, path, value, problems, surrogates)
    return value, problems


def _nonfinite_and_depth(file: str, path: str, value: Any, problems: list[Problem]) -> None:
    """Walk a free-form value: report NaN/Infinity, integers out of range and nesting deeper than MAX_EXTRA_DEPTH."""
    stack = [(path, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        if depth > MAX_EXTRA_DEPTH:
            problems.append(Problem(file, path, f"nesting deeper than {MAX_EXTRA_DEPTH} levels is not allowed"))
            break
        if isinstance(item, float) and not math.isfinite(item):
            problems.append(Problem(file, where, "must be a finite number (NaN and Infinity are not allowed)", item))
        elif isinstance(item, _HugeInt) or (isinstance(item, int) and not isinstance(item, bool)):
            if isinstance(item, _HugeInt) or not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                _check_integer(file, where, item, problems)
        elif isinstance(item, dict):
            stack.extend((f"{where}.{k}", v, depth + 1) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v, depth + 1) for i, v in enumerate(item))


def jsonl_objects(file: str, text: str, kind: str = "case") -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """(line number, object) for each good line of JSON Lines text, and a problem for each bad line."""
    rows, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        value, errs = parse_json_text(file, line, f"line {number}")
        if errs:
            problems.extend(errs)
        elif not isinstance(value, dict):
            problems.append(Problem(file, f"line {number}", f"must be a {kind} object, not {_kind(value)}"))
        else:
            rows.append((number, value))
    return rows, problems


def read_jsonl_file(
    path: Union[str, os.PathLike, tuple[str, bytes]], kind: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """Read a JSON Lines file of ``kind`` objects (a path, or ``(label, bytes)`` held in memory): unreadable
    and non-UTF-8 files are problems too."""
    if isinstance(path, tuple):
        label, data = path
    else:
        label = str(path)
        try:
            data = read_file_bytes(path)
        except (OSError, FileTooLarge) as exc:
            return [], [unreadable(label, exc)]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [
            Problem(label, "$", f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded")
        ]
    return jsonl_objects(label, text, kind)


# The one strict decoding layer of every reader of other tools' files (garak, promptfoo, Inspect, the benchmarks,
# Parquet's JSON metadata): bytes in, a value or the problems out, never an exception. UTF-8 is decoded strictly
# (an invalid byte, or a surrogate encoded as bytes, is a problem), nesting is measured before the parse, NaN and
# Infinity (as literals or as numbers beyond float range), integers beyond 2^53, duplicate keys and lone surrogate
# escapes are problems naming the field. A unit (a file, a line, an archive member) with any problem gives no value.

NOT_JSON = "not valid JSON: "
MAX_DECODE_DEPTH = 200  # nesting of one JSON value of another tool's file: Inspect's deepest is under 30
_BRACKETS = re.compile(rb"[^\[\]{}]+")
_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


class _NonFinite:
    """NaN or Infinity in the text (a literal, or a number beyond float range): kept as its spelling only."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def utf8_text(file: str, data: Union[bytes, str], path: str = "$") -> tuple[Optional[str], list[Problem]]:
    """The text of ``data`` decoded as strict UTF-8 (a leading byte-order mark dropped), or a problem naming the
    offset of the first byte that is not UTF-8 (a surrogate written as bytes is not UTF-8 either)."""
    if isinstance(data, str):
        return data, []
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        return None, [
            Problem(file, path, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded")
        ]


def nesting_depth(data: Union[bytes, str], limit: int = MAX_DECODE_DEPTH) -> int:
    """The deepest nesting of arrays and objects in JSON text, brackets inside strings not counted; a number at
    most ``limit`` when the text holds too few brackets to go deeper (the common case, counted in C only)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return 0
    import numpy as np

    brackets = _BRACKETS.sub(b"", _STRING_BYTES.sub(b"", raw))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == 0x5B) | (codes == 0x7B), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max())


def strict_loads(
    file: str, data: Union[bytes, str], path: str = "$", max_depth: int = MAX_DECODE_DEPTH
) -> tuple[Any, list[Problem]]:
    """One JSON value decoded strictly: ``(value, [])``, or ``(None, problems)`` naming the file and the field
    of each thing wrong. Never raises on any input."""
    depth = nesting_depth(data, max_depth)
    if depth <= max_depth:
        quick = read_quickly(data)
        if quick is not None:
            return quick[0], []
    text, problems = utf8_text(file, data, path)
    if text is None:
        return None, problems
    if depth > max_depth:
        return None, [Problem(file, path, f"nesting {depth} levels deep: at most {max_depth} are read")]
    decoder, duplicated, flagged = _decoder()
    duplicated[0] = flagged[0] = False
    try:
        if text.startswith("\ufeff"):  # as json.loads tells it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = decoder.decode(text)
    except RecursionError:
        return None, [Problem(file, path, "nesting is too deep to read")]
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            what = f"the text ends before the value is complete (line {exc.lineno}, column {exc.colno})"
        else:
            what = f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
        return None, [Problem(file, path, NOT_JSON + what)]
    except (ValueError, TypeError, OverflowError) as exc:
        return None, [Problem(file, path, NOT_JSON + str(exc)[:200])]
    surrogates = _SURROGATE_ESCAPE.search(text) is not None
    if duplicated[0] or surrogates or flagged[0]:
        _scan_value(file, path, value, problems, surrogates)
    if problems:
        return None, problems
    return value, []


_PER_THREAD = threading.local()


def _decoder() -> tuple[json.JSONDecoder, list[bool], list[bool]]:
    """This thread's strict decoder, made once (``json.loads`` with hooks makes a decoder each call: about a quarter
    of the time of parsing a short object), and its flags: a key was duplicated; a number needs its path checked."""
    made = getattr(_PER_THREAD, "decoder", None)
    if made is None:
        hooks, duplicated = _strict_hooks()
        flagged = [False]

        def constant(name: str) -> Any:
            flagged[0] = True
            return _NonFinite(name)

        def number(spelled: str) -> Any:
            value = float(spelled)
            if math.isfinite(value):
                return value
            flagged[0] = True
            return _NonFinite(spelled if len(spelled) <= 40 else spelled[:20] + "...")

        def integer(spelled: str) -> Any:
            if len(spelled) < 16:
                return int(spelled)
            flagged[0] = True  # 16 digits or more: perhaps beyond 2^53, checked with its path below
            return hooks["parse_int"](spelled)

        options = {**hooks, "parse_constant": constant, "parse_float": number, "parse_int": integer}
        made = _PER_THREAD.decoder = (json.JSONDecoder(**options), duplicated, flagged)
    return made


def _nonfinite_problem(file: str, where: str, item: _NonFinite) -> Problem:
    return Problem(
        file, where, f"must be a finite number (NaN, Infinity and numbers beyond float range are not allowed): {item}"
    )


def strict_line(file: str, raw: Union[bytes, str], number: int) -> tuple[Any, list[Problem]]:
    """One line of JSON Lines decoded by ``strict_loads``; a line that does not parse is 'not a JSON object'."""
    where = f"line {number}"
    value, problems = strict_loads(file, raw, where)
    if problems and problems[0].path == where and problems[0].message.startswith(NOT_JSON):
        problems = [Problem(file, where, "not a JSON object: " + problems[0].message.removeprefix(NOT_JSON))]
    return value, problems
