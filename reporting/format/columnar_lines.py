"""A RunLens run of JSON Lines read by columns, a block at a time (``read_lines``): the columnar reader's pipeline
(``reporting.format.columnar``: Arrow's parse, each case's keys where a check needs them, the checks over whole
columns) fed with the file's lines instead of a document's cases, so a file of ten million cases is never held
whole. It reads only what the per-record reader reads as the same lines (tests/test_columnar_lines.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, Optional, Union

import msgspec

from reporting.format.columnar import _case_batches, _chunks, _parse_schema
from reporting.format.columnar_checks import ColumnarRun, NotMine, finish, shared_schema
from reporting.format.columnar_v3 import read_schema


def read_lines(path: Union[str, os.PathLike], label: str) -> Optional[ColumnarRun]:
    """A RunLens run of JSON Lines (one case a line, version 1, as the per-record reader reads it) read by columns
    from its file a block at a time, never held whole: what ``read_document`` is to a document. None when the
    per-record reader must read it: anything this reader cannot vouch for (as ``read_document``), a blank line, a
    line that is not one case, a line break other than ``\\n`` (``\\r``, U+0085, U+2028, U+2029, where Python splits
    lines as the per-record reader does), a byte order mark, or a file that grew while it was read. The file is
    capped as the per-record reader caps it (``FileTooLarge``; ``OSError`` too: the caller's)."""
    try:
        return _read_lines_run(path, label)
    except (NotMine, UnicodeDecodeError, RecursionError):  # (as ``read_document``: msgspec's errors are NotMine)
        return None


LINE_BLOCK = 64 << 20  # bytes of a JSON Lines file read at once by ``read_lines``
# Bytes that start a line break Python's str.splitlines makes and JSON's parsers do not (\\r outside a text is white
# space to them; U+0085, U+2028 and U+2029 are text): the single byte found first (fast), then the whole sequence.
_OTHER_BREAKS = ((b"\r", b"\r"), (b"\x85", b"\xc2\x85"), (b"\xa8", b"\xe2\x80\xa8"), (b"\xa9", b"\xe2\x80\xa9"))


def _read_lines_run(path: Union[str, os.PathLike], label: str) -> ColumnarRun:
    import pyarrow as pa

    from reporting.format.problems import open_capped
    from reporting.format.reading import _check_header

    header_problems: list = []
    meta, stored = _check_header(label, {}, header_problems)  # (the run's id from the file's name)
    if header_problems:
        raise NotMine
    schema = _parse_schema(1)
    fd, info = open_capped(path)
    with open(fd, "rb", buffering=0) as handle:
        blocks = _line_blocks(handle, info.st_size)
        batches, explicit, n, shared = _case_batches(_chunks(blocks), label, 1, schema, True, one_a_line=True)
        after = os.fstat(handle.fileno())
    if (after.st_size, after.st_mtime_ns) != (info.st_size, info.st_mtime_ns):
        raise NotMine  # (written while it was read: the per-record reader reads it as it is now)
    table = pa.Table.from_batches(batches, schema=shared_schema(read_schema(schema), shared))
    if not n or table.num_rows != n:
        raise NotMine
    return finish(label, meta, 1, stored, table, lambda name: explicit.get(name, 0), None, whole=True)


def _line_blocks(handle: Any, size: int) -> Iterator[list]:
    """Each block of whole lines of the file (``LINE_BLOCK`` bytes or so) as its cases' raw bytes (msgspec's
    views into the block), once every line of it is one JSON value with no other line break in it."""
    decoder = msgspec.json.Decoder(msgspec.Raw)
    tail, got = b"", 0
    while True:
        piece = handle.read(min(LINE_BLOCK, size - got + 1))  # (one byte past the size it had: grown)
        got += len(piece)
        if got > size:
            raise NotMine  # (grown since it was opened: the per-record reader reads it as it is now)
        data = tail + piece if tail else piece
        cut = len(data) if not piece else data.rfind(b"\n") + 1
        if not cut:
            if not piece:
                return
            tail = data  # (a line longer than a block: read on)
            continue
        block, tail = (data, b"") if cut == len(data) else (data[:cut], data[cut:])
        del data
        if block.startswith(b"\xef\xbb\xbf") or any(one in block and whole in block for one, whole in _OTHER_BREAKS):
            raise NotMine
        try:
            raws = decoder.decode_lines(block)
        except msgspec.DecodeError:
            raise NotMine from None
        if _blank_line(block) or len(raws) != block.count(b"\n") + (not block.endswith(b"\n")):
            raise NotMine  # a blank line (which msgspec skips), or two values on one line
        yield raws
        del raws, block
        if not piece:
            return


_BLANK_LINE = re.compile(rb"(?:\A|\n)[ \t]*(?:\n|\Z)")


def _blank_line(block: bytes) -> bool:
    """Whether a block of whole lines holds a line of nothing but white space (spaces and tabs: ``\\r`` and the
    rest are refused before), found by the fast searches where no line starts with white space."""
    if block[:1] in (b"\n", b" ", b"\t") or b"\n\n" in block:
        return True
    if b"\n " not in block and b"\n\t" not in block:
        return False
    return _BLANK_LINE.search(block) is not None
