"""The columnar reader: a RunLens run (JSON document or JSON Lines) read straight into an Arrow case table
(``reporting.format.parquet.CASE_COLUMNS``), with no Python object per case but for judges' verdicts, turns of
conversations and fields beyond the format's.

Arrow's JSON parser reads and type-checks whole columns (a duplicated key, a string for a number, a float for a
whole number, a lone surrogate are all errors there); the checks the schema makes beyond types (ranges, severity
names, unique probe ids, an evaluated case or an error, a judged turn that is an assistant turn) run over whole
columns. Judges' verdicts and the version 3 fields are read from each case's raw bytes
(``reporting.format.columnar_v3``). This path only says yes or "not me": whenever anything is wrong or cannot be
vouched for (a verdict's own extra fields; in JSON Lines, a key that is absent or null where the format tells
the two apart and the file does not say which), ``read_table`` returns None and the per-record reader
(``reporting.format.reading``) reads the file and names every problem exactly as always. Tests check the two agree
on every run they both read (tests/test_columnar.py, tests/test_columnar_v3.py).

A JSON document is split with msgspec (the cases array as raw byte slices, no objects), its header (everything
but the cases) is read by the strict JSON reader; JSON Lines are read streaming, in blocks, so a file larger than
memory can be summed (``columns`` keeps only the columns asked for).
"""

from __future__ import annotations

import functools
import io
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, Optional, Union

from reporting.format.columnar_checks import (
    CHECKED,
    ColumnarRun,
    NotMine,
    finish,
    mentions,
    shared_schema,
    shared_texts,
    worth_sharing,
)
from reporting.format.columnar_heads import judged_heads, judges_schema, no_verdicts
from reporting.format.columnar_v3 import case_keys, nested, parse_fields, read_schema
from reporting.format.parquet import CASE_COLUMNS, LISTS
from reporting.format.problems import Mapped, read_file_mapped
from reporting.textsafe import file_name

CHUNK = 10_000  # cases parsed at once from a JSON document (with their keys: 100,000 held 0.2 GB more at 100k)
BLOCK = 16 << 20  # bytes of JSON Lines parsed at once
AHEAD = 2  # chunks of a JSON document parsed ahead, each in a thread of its own
_TEXT = ("task", "probe_input", "response", "explanation")
_V2 = ("error", "probe_group", "source_id")


def _parse_schema(version: int):
    import pyarrow as pa

    string, floats, whole, flag = pa.string(), pa.float64(), pa.int64(), pa.bool_()
    fields = [
        ("probe_id", string),
        ("category", string),
        ("severity", string),
        ("passed", flag),
        ("risk_score", floats),
        ("severity_weight", floats),
        ("weighted_risk", floats),
        ("safe_signal_hits", whole),
        ("unsafe_signal_hits", whole),
        ("boundary_or_refusal_signal", flag),
        *[(name, pa.list_(string)) for name in LISTS],
        *[(name, string) for name in _TEXT],
    ]
    if version >= 2:  # in a version 1 file these names are free-form extras: the per-record reader keeps them
        fields += [(name, string) for name in _V2]
    return pa.schema(fields + parse_fields(version))


def read_table(path: str, columns: Optional[Sequence[str]] = None) -> Optional[ColumnarRun]:
    """The run in ``path`` as an Arrow case table, or None when the per-record reader must read it.

    ``columns``: keep only these of ``CASE_COLUMNS`` (the figures need a handful), which is what lets a JSON Lines
    file larger than memory be read. None for anything but a regular file: a pipe or FIFO can be read only once, by
    the caller's reader (``load_run``, under the size cap)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        if path.lower().endswith((".jsonl", ".ndjson")):
            return _read_lines(path, columns)
        held = read_file_mapped(path, sys.maxsize)  # (no size cap here: the store's and the benches' reader)
        return None if held is None else _read_document([held], path, columns)
    except (NotMine, OSError, UnicodeError, RecursionError):  # (msgspec's decoder on deep nesting; a name not UTF-8)
        return None


def read_document(data: Union[bytes, list[Union[bytes, Mapped]]], label: str) -> Optional[ColumnarRun]:
    """A RunLens JSON document already read into ``data`` as an Arrow case table, or None when the per-record
    reader must read it (the reading of a run by its content, ``reporting.sources.reading``, asks this first):
    also None for a run its table would not keep whole, as a typed run's cases are made from it (a limit's nulls,
    which the table leaves out; an empty conversation Arrow's parse read alone, held as none; a judge's
    whole-number score, which it holds as a float). A conversation is kept whole, its turns' nulls too.
    ``data`` in a list: the reader takes the bytes out and lets them go once every case is parsed, before the
    checks over whole columns (a million cases' file is a gigabyte beside the table); the list is then empty, even
    when the run is handed back, and the caller reads the file again. ``Mapped`` bytes in the list are given back
    to the system a chunk of cases at a time, as the reader goes past them."""
    try:
        return _read_document(data if isinstance(data, list) else [data], label, None, whole=True)
    except (NotMine, UnicodeDecodeError, RecursionError):  # deep nesting: the per-record reader names it
        return None


def _arrow_error():
    import pyarrow as pa

    return (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


def _read_document(
    box: list[Union[bytes, Mapped]], label: str, columns: Optional[Sequence[str]], whole: bool = False
) -> ColumnarRun:
    import msgspec

    held = box[0]
    release, data = (held.release, held.view) if isinstance(held, Mapped) else (None, held)
    del held
    from reporting.format.migrate import check_version, upgrade
    from reporting.format.reading import _check_header
    from reporting.format.strict_json import parse_json_text

    if not _OPENS.match(data):
        raise NotMine
    try:  # the top's keys and each case's raw bytes in one pass over the document
        raws = msgspec.json.decode(data, type=_top_type()).cases
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise NotMine from None
    start, end = _cases_span(data, raws)
    # The header is everything but the cases array: read by the strict reader (duplicate keys, depth, ...).
    header, problems = parse_json_text(label, (bytes(data[:start]) + b"[]" + bytes(data[end:])).decode("utf-8"))
    if problems or not isinstance(header, dict) or header.get("cases") != [] or "cases_file" in header:
        raise NotMine  # (the figures beside a case table: the per-record reader names the table to read)
    version = header.get("schema_version", 1)
    if check_version(label, version):
        raise NotMine
    header.pop("cases")
    header, _ = upgrade(header, [], version)
    header_problems: list = []
    meta, stored = _check_header(label, header, header_problems)
    if header_problems:
        raise NotMine
    schema = _parse_schema(version)
    n = len(raws)
    read_past = None if release is None else functools.partial(_release_before, release, data, raws)
    batches, explicit, _, shared = _case_batches(_chunks([raws]), label, version, schema, whole, read_past)
    del raws, data, release, read_past  # (each case's raw bytes were a view into the document)
    box.clear()
    import pyarrow as pa

    table = pa.Table.from_batches(batches, schema=shared_schema(read_schema(schema), shared))
    if table.num_rows != n:
        raise NotMine
    return finish(label, meta, version, stored, table, lambda name: explicit.get(name, 0), columns, whole=whole)


def _release_before(release: Callable[[int], None], data: Any, raws: list, seen: int) -> None:
    """The bytes before the next chunk's first case: read, given back."""
    if seen < len(raws):
        release(_span_of(data, raws[seen])[0])


def _case_batches(
    chunks: Iterable[list],
    label: str,
    version: int,
    schema: Any,
    whole: bool,
    read_past: Optional[Callable[[int], None]] = None,
    one_a_line: bool = False,
) -> tuple[list, dict[str, int], int, frozenset]:
    """The record batches of the cases in ``chunks`` (lists of each case's raw bytes), the cases whose null of a
    CHECKED name is written ``null``, how many cases there were, and the texts the batches hold as dictionaries
    (``columnar_checks.worth_sharing`` of the first). ``read_past(seen)``: told after each chunk. ``one_a_line``: a
    case that spans lines is not this reader's (JSON Lines, one case a line)."""
    batches = []
    explicit: dict[str, int] = {}  # per name of CHECKED: the cases whose null is written ``null``
    seen = 0
    shared: Optional[frozenset] = None  # the texts held as dictionaries
    for chunk, parsed in _parsed_chunks(chunks, schema, version):
        lines, spread, (table, every_key_known, keys) = parsed.result()  # (keys: the heads of judged cases, where read)
        if one_a_line and spread:
            raise NotMine  # a case over two lines, which the per-record reader reads as two broken lines
        # A chunk whose every key Arrow's schema names has no extras: its keys decoded only where a check needs them
        # (``nested``; a third of the reading of a million cases), or where it names verdicts (a null parses as none)
        named = version >= 2 and b'"verdicts"' in lines
        if keys is None and not (every_key_known and not named):
            keys = case_keys(lines, chunk, spread)
        done = 0
        for batch in table.to_batches():
            end = done + batch.num_rows
            part = None if keys is None else keys.part(done, end)
            cases = nested(label, version, batch, chunk[done:end], part, explicit, whole)
            shared = worth_sharing(cases) if shared is None else shared  # (decided on the run's first batch)
            batches.append(shared_texts(cases, shared))
            done = end
        del lines, keys, part, parsed, table
        seen += len(chunk)
        if read_past is not None:
            read_past(seen)
    return batches, explicit, seen, shared or frozenset()


def _chunks(blocks: Iterable[list]) -> Iterator[list]:
    """The cases of ``blocks`` (lists of raw cases) CHUNK at a time, across blocks."""
    held: list = []
    for block in blocks:
        at = 0
        while at < len(block):
            part = block[at : at + CHUNK - len(held)]
            held.extend(part)
            at += len(part)
            if len(held) == CHUNK:
                yield held
                held = []
        del block
    if held:
        yield held


def _parsed_chunks(chunks: Iterable[list], schema, version: int) -> Iterator[tuple[list, Future]]:
    """Each chunk of cases and its ``_joined_and_parsed``, in threads of their own (Arrow and numpy run without
    Python's lock): the next chunks are parsed while the caller reads this one's keys (AHEAD + 1 held at once)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=AHEAD, thread_name_prefix="runlens-parse") as pool:
        waiting: deque = deque()
        for chunk in chunks:
            waiting.append((chunk, pool.submit(_joined_and_parsed, chunk, schema, version)))
            del chunk
            if len(waiting) > AHEAD:
                yield waiting.popleft()
        while waiting:
            yield waiting.popleft()


def _joined_and_parsed(chunk: list, schema, version: int) -> tuple[bytes, bool, tuple]:
    """In a parse thread: a chunk's cases one a line, whether one spans lines (an indented document; the line feeds
    counted once, by numpy: 2.5x bytes.count), and Arrow's parse of them (``_parse_known``)."""
    import numpy as np

    lines = b"\n".join(chunk)  # (at 100k cases, the join and the count took 0.07 s of the main thread's reading)
    spread = int(np.count_nonzero(np.frombuffer(lines, dtype=np.uint8) == 0x0A)) != len(chunk) - 1
    return lines, spread, _parse_known(lines, schema, len(chunk), version, spread)


@functools.cache
def _top_type() -> Any:
    """A document's top as msgspec decodes it: ``cases`` (required) as each case's raw bytes, every other key skipped
    (the header, all but the cases, is read by the strict reader, as the per-record reader reads it: a report's
    generator, filters and drift, a producer's own keys, are the typed run's extras there and here)."""
    import msgspec

    return msgspec.defstruct("Top", [("cases", list[msgspec.Raw])])


_BLANK = frozenset(b" \t\n\r")  # JSON's white space
_OPENS = re.compile(rb"[ \t\n\r\x0b\x0c]*\{")  # an object first, after what bytes.lstrip takes away


def _cases_span(data: Union[bytes, memoryview], raws: list) -> tuple[int, int]:
    """Where the cases array is in ``data``, from its first and last case's raw bytes (views into ``data``) and
    the white space around them; an empty array as ``_span`` finds it."""
    if not raws:
        import msgspec

        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        return _span(data, top["cases"])
    start, _ = _span_of(data, raws[0])
    _, end = _span_of(data, raws[-1])
    while start > 0 and data[start - 1] in _BLANK:
        start -= 1
    while end < len(data) and data[end] in _BLANK:
        end += 1
    if start == 0 or data[start - 1] != 0x5B or end >= len(data) or data[end] != 0x5D:  # [ and ]
        raise NotMine  # never guess
    return start - 1, end + 1


def _span_of(data: Union[bytes, memoryview], raw: Any) -> tuple[int, int]:
    """Where a raw value msgspec decoded from ``data`` is in it (its buffer is a view into ``data``)."""
    import numpy as np

    size = len(memoryview(raw))
    at = np.frombuffer(raw, dtype=np.uint8).ctypes.data - np.frombuffer(data, dtype=np.uint8).ctypes.data
    if not (0 <= at and at + size <= len(data)):
        raise NotMine  # not a view into data (msgspec copied it)
    return at, at + size


def _span(data: Union[bytes, memoryview], raw_cases: Any) -> tuple[int, int]:
    """Where the cases array is in ``data``: msgspec's raw slice is a view into ``data`` itself, so its place is
    the distance between the two buffers' addresses."""
    start, end = _span_of(data, raw_cases)
    if data[start : start + 1] != b"[" or data[end - 1 : end] != b"]":
        raise NotMine  # never guess
    return start, end


def _parse_known(lines: bytes, schema, count: int, version: int, spread: bool):
    """(``_parse`` of the cases, whether every key of every case is a field of ``schema``, the cases' heads where
    read, ``columnar_heads``): parsed refusing any other key first; a chunk of judged cases, whose first parse stops
    at its first judge, again with its judges in the schema; else ignoring any other key."""
    try:  # (a nested field's inner keys are not in the schema either: such a chunk's first parse stops at its first)
        return _parse(lines, schema, spread, unknown="error"), True, None
    except NotMine:
        pass
    judged = None if spread else judged_heads(lines, count, version)
    if judged is not None:
        heads, judges = judged
        try:
            table = _parse(lines, judges_schema(schema, judges), spread, unknown="error")
            return no_verdicts(table), True, heads
        except NotMine:
            pass
    return _parse(lines, schema, spread), False, None


def _parse(lines: bytes, schema, spans_lines: bool, unknown: str = "ignore"):
    """The cases of a document, one a line, by Arrow's parser. A key Arrow does not know is ignored here
    (``unknown="error"``: refused): ``columnar_v3.nested`` reads it (a free-form extra, or a nested field Arrow
    skips) from the raw bytes."""
    import pyarrow.json as pj

    # A case of an indented document spans lines: Arrow then finds where each object ends by parsing, slower.
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior=unknown, newlines_in_values=spans_lines)
    try:
        table = pj.read_json(
            io.BytesIO(lines), read_options=pj.ReadOptions(block_size=BLOCK, use_threads=False), parse_options=options
        )
        table.validate(full=True)  # the UTF-8 of every text: Arrow's parser takes any byte in a string
    except _arrow_error():
        raise NotMine from None
    return table


def _read_lines(path: str, columns: Optional[Sequence[str]]) -> ColumnarRun:
    """JSON Lines, one case a line (version 1, like the per-record reader), read in blocks."""
    import pyarrow as pa
    import pyarrow.json as pj

    from reporting.format.schema import RunMeta

    schema = _parse_schema(1)
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error", newlines_in_values=False)
    keep = _needed(columns)
    batches = []
    mentioned: set[str] = set()
    try:
        with open(path, "rb") as handle:
            if handle.read(3) == b"\xef\xbb\xbf":
                raise NotMine  # a byte order mark: the per-record reader knows what to do with it
        reader = pj.open_json(
            path, read_options=pj.ReadOptions(block_size=BLOCK, use_threads=False), parse_options=options
        )
        for batch in reader:
            batch.validate(full=True)  # the UTF-8 of every text: Arrow's parser takes any byte in a string
            mentioned |= mentions(batch)  # before the texts are dropped
            batches.append(batch.select([c for c in schema.names if c in keep]))
    except _arrow_error():
        raise NotMine from None
    table = pa.Table.from_batches(batches, schema=pa.schema([f for f in schema if f.name in keep]))
    stem = file_name(path).split(".")[0] or "run"
    meta = RunMeta(run_id=stem)

    def explicit_nulls(name: str) -> int:
        """The key counted in the file: a null that is not a key left out (a text that could be taken for the key,
        and the count settles nothing)."""
        if name in mentioned:
            raise NotMine
        return _count_in_file(path, b'"' + name.encode() + b'"') - (table.num_rows - table.column(name).null_count)

    return finish(path, meta, 1, {}, table, explicit_nulls, columns)


def _needed(columns: Optional[Sequence[str]]) -> set[str]:
    """The parsed columns that ``columns`` of the case table (and the checks) need."""
    if columns is None:
        return set(CASE_COLUMNS)
    return set(columns) | {"probe_id", "category", "severity", "severity_weight", "weighted_risk"} | set(CHECKED)


def _count_in_file(path: str, needle: bytes, block: int = 64 << 20) -> int:
    total, tail = 0, b""
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            data = tail + chunk
            total += data.count(needle)
            # keep the last len(needle) - 1 bytes: a needle across the boundary is counted once, in the next block
            cut = max(0, len(data) - (len(needle) - 1))
            total -= data.count(needle, cut)
            tail = data[cut:]
    return total
