"""Read a run from a file, bytes or a file object, whoever wrote it, told by its content; report every problem,
never crash.

A RunLens run (``reporting.format.reading``), a Parquet case table, or another tool's file (garak, promptfoo,
Inspect AI, JailbreakBench, HarmBench: ``reporting.importers``). ``load_run`` is lenient: it returns the valid
cases together with the list of problems, so one bad case does not hide a thousand good ones. ``read_run`` is
strict: it raises ``ReportError`` carrying every problem when anything is wrong.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from typing import Any, BinaryIO, Optional, Union

from reporting._gc import gc_paused
from reporting._memory import give_back
from reporting.format import problems as files
from reporting.format.columnar import read_document
from reporting.format.columnar_checks import ColumnarRun
from reporting.format.columnar_lines import read_lines
from reporting.format.columnar_parquet import read_parquet_run
from reporting.format.parquet import looks_like_parquet
from reporting.format.problems import (
    FileTooLarge,
    Mapped,
    Problem,
    ReportError,
    read_file_bytes,
    read_file_mapped,
    regular_file_head,
    unreadable,
)
from reporting.format.reading import LoadResult, load_document, run_of_document
from reporting.format.schema import RunReport
from reporting.format.table_run import run_of_table
from reporting.format.writing import document_chunks
from reporting.importers import import_document, lines_of_no_other_tool, surely_runlens

MAPPED_FROM = 64 << 20  # bytes of a run file from which the columnar reader gives its bytes back as it goes
Source = Union[str, os.PathLike, bytes, bytearray, BinaryIO, io.TextIOBase]


def _read_source(source: Source, name: Optional[str], regular_only: bool = False) -> tuple[str, bytes]:
    if isinstance(source, (str, os.PathLike)):
        label = name or str(source)
        return label, read_file_bytes(source, regular_only=regular_only)  # OSError, FileTooLarge: the caller's
    if isinstance(source, (bytes, bytearray)):
        return name or "<bytes>", bytes(source)
    if hasattr(source, "read"):
        data = source.read()
        label = name or getattr(source, "name", None) or "<stream>"
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"read() returned {type(data).__name__}, expected bytes or str")
        return str(label), bytes(data)
    raise TypeError(f"read_run expects a path, bytes or a file object, got {type(source).__name__}")


def load_run(
    source: Source, name: Optional[str] = None, model: Optional[str] = None, *, regular_only: bool = False
) -> LoadResult:
    """Read a run report leniently: the valid cases plus every problem found.

    ``source`` is a path, bytes or a binary/text file object. ``name`` overrides the
    label used in messages and for deriving a missing ``run_id``. Accepts a report
    object, a bare array of cases, or JSON Lines with one case per line; or another tool's file
    (``reporting.importers``), where ``model`` picks the run of a file that holds several. ``regular_only``: a
    path that is not a regular file (a FIFO, a device) is a problem, never read (the dashboard's runs folder).
    """
    with gc_paused():
        return _load_run(source, name, model, regular_only)


def _load_run(
    source: Source, name: Optional[str], model: Optional[str] = None, regular_only: bool = False
) -> LoadResult:
    tried = False  # the columnar reader read the file and handed the run back: the per-record reader's
    if isinstance(source, (str, os.PathLike)):
        label = name or str(source)
        tried, fast = _large_document(source, label)
        if fast is not None:
            return LoadResult(label, run_of_table(fast), [], fast.cases)
        streamed = None if tried else _large_import(source, label)  # (one run a file: --model picks it anyway)
        if streamed is not None:
            return streamed
    try:
        label, data = _read_source(source, name, regular_only)
    except (OSError, FileTooLarge) as exc:
        label = name or str(source)
        return LoadResult(label, None, [unreadable(label, exc)])
    except ValueError:  # a path no file can have, from a caller of the API (argv cannot carry these)
        label = name or str(source)
        return LoadResult(label, None, [Problem(label, "$", NO_FILE_NAME)])
    if not data or data.isspace():  # (not data.strip(): a copy of the whole file when it ends in a newline)
        return LoadResult(label, None, [Problem(label, "$", "the file is empty")])
    imported: Optional[tuple[Optional[dict[str, Any]], list[str], list[Problem]]]
    if looks_like_parquet(data):  # a Parquet case table: by columns where it can vouch for the table
        read = read_parquet_run(data, label)
        if isinstance(read, ColumnarRun):
            return LoadResult(label, run_of_table(read), [], read.cases)
        imported = (read[0], [], read[1])  # (the document the per-record reader reads, or the problems)
    else:  # another tool's file (some are ZIP archives), recognised by content
        imported = import_document(data, label, model)
    if imported is None:
        # A file is read again if need be: the columnar reader lets the bytes go once it has parsed the cases (a
        # million cases' file is a gigabyte beside the table), and then may hand the run back. Bytes or a stream
        # given are kept here, the per-record reader's should it need them.
        box, kept = [data], (None if isinstance(source, (str, os.PathLike)) else data)
        del data
        fast = None if tried else _columnar(source, box, label)
        if fast is not None:
            return LoadResult(label, run_of_table(fast), [], fast.cases)
        if not box and kept is not None:
            box.append(kept)
        elif not box:  # (the file may have changed since: what is read now is what the per-record reader reads)
            try:
                label, again = _read_source(source, name, regular_only)
            except (OSError, FileTooLarge) as exc:
                return LoadResult(label, None, [unreadable(label, exc)])
            box.append(again)
            del again
        del kept  # the per-record reader lets the bytes go once decoded: no reference is kept here
        return load_document(label, box)
    del data
    document, _, problems = imported
    if document is None:
        return LoadResult(label, None, problems)
    header = {k: v for k, v in document.items() if k != "cases"}
    return run_of_document(label, header, document["cases"], problems)


LINES_SUFFIXES = (".jsonl", ".ndjson")
NO_FILE_NAME = "cannot read the file: its name holds a NUL byte or a lone surrogate, which no file name can"
HEAD = 8192  # bytes of a file that tell a RunLens document (surely_runlens)


def _large_document(path: Union[str, os.PathLike], label: str) -> tuple[bool, Optional[ColumnarRun]]:
    """A large RunLens document named by its path (``MAPPED_FROM`` bytes or more, a regular file whose first bytes
    say no other tool's reader takes it: ``surely_runlens``), read once, into memory the columnar reader gives back
    as it goes (``Mapped``), never first as bytes for the other tools' readers. Whether the columnar reader read
    it, and the run: ``(True, None)`` when it handed the run back (the per-record reader's); ``(False, None)``: the
    file is read as any other. What is told is what was read: the head read first only says whether to try."""
    if label.lower().endswith(LINES_SUFFIXES):
        return _large_lines(path, label)  # JSON Lines by the name, as the per-record reader tells them
    return _mapped_document(path, label)


def _mapped_document(
    path: Union[str, os.PathLike], label: str, least: Optional[int] = None
) -> tuple[bool, Optional[ColumnarRun]]:
    """``_large_document`` of a file that is no JSON Lines by its name, of ``least`` bytes or more (``MAPPED_FROM``
    unless given)."""
    least = MAPPED_FROM if least is None else least
    try:
        found = regular_file_head(path, HEAD)
    except (OSError, ValueError):  # (a name no file can have: read as any other, which says so)
        return False, None
    if found is None or found[1].st_size < least or not surely_runlens(found[0]):
        return False, None
    try:
        mapped = read_file_mapped(path)
    except (OSError, FileTooLarge):
        return False, None
    if mapped is None or len(mapped.view) < least or not surely_runlens(bytes(mapped.view[:HEAD])):
        return False, None
    box: list[Union[bytes, Mapped]] = [mapped]
    del mapped
    fast = read_document(box, label)
    box.clear()
    give_back()
    return True, fast


def _large_import(path: Union[str, os.PathLike], label: str) -> Optional[LoadResult]:
    """A large garak report or Inspect log named by its path (``MAPPED_FROM`` bytes or more) read as ``import``
    reads it, a case at a time, into a RunLens document written to a private temporary folder as ``import`` writes
    it, then read by columns (``_large_document``) and the folder deleted: the run is a case table, as its import's
    file would be, never a million case objects (a million garak cases: 5 GB and minutes); the document is read so
    whatever its size (a tenth of the file's, or less). None: not such a file, or a file the import finds wrong (told
    from its first 64 KB, where the whole reading reads all of it; or replaced meanwhile), a case it could not make
    or a run the columnar reader handed back: the caller reads it as any other, which says what is wrong."""
    from reporting.importers import SHAPE_ERRORS, detect
    from reporting.importers.garak import stream_garak_file
    from reporting.importers.inspect_stream import stream_inspect_file

    try:
        size = os.stat(path).st_size  # (no file below the size is opened here: every small run file is read so)
        found = regular_file_head(path, STREAMED_HEAD) if MAPPED_FROM <= size <= files.MAX_FILE_BYTES else None
    except (OSError, ValueError):
        return None
    if found is None or not MAPPED_FROM <= found[1].st_size <= files.MAX_FILE_BYTES:
        return None
    kind = detect(found[0])
    if kind not in ("garak", "inspect"):
        return None
    try:
        if kind == "garak":
            header, cases, _, problems = stream_garak_file(str(path), label)
        else:
            header, cases, _, problems = stream_inspect_file(str(path), label=label)
        if header is None:
            return None
        with tempfile.TemporaryDirectory(prefix="runlens-import-") as folder:  # (made for this user alone)
            written = os.path.join(folder, "run.json")
            with open(written, "w", encoding="utf-8") as out, gc_paused():
                out.writelines(document_chunks({**header, "cases": cases}, compact_head=True))
            del cases
            tried, fast = _mapped_document(written, label, least=0)
    except (OSError, FileTooLarge, *SHAPE_ERRORS):
        return None
    return LoadResult(label, run_of_table(fast), problems, fast.cases) if tried and fast is not None else None


STREAMED_HEAD = 1 << 16  # bytes of a file that tell a garak report or an Inspect log (as the import verb reads them)


def _large_lines(path: Union[str, os.PathLike], label: str) -> tuple[bool, Optional[ColumnarRun]]:
    """A large RunLens run of JSON Lines named by its path (``MAPPED_FROM`` bytes or more, a regular file whose first
    line and 64 KB no other tool's reader takes), read by columns a block at a time (``read_lines``): a file of ten
    million cases is never held whole. As ``_large_document`` says, whether it was read, and the run."""
    try:
        found = regular_file_head(path, LINES_HEAD)
    except (OSError, ValueError):
        return False, None
    if found is None or not MAPPED_FROM <= found[1].st_size <= files.MAX_FILE_BYTES:
        return False, None  # (above the cap: the per-record reader's read says so)
    head = found[0]
    if head[:1] != b"{" or not lines_of_no_other_tool(head, label, whole=len(head) == found[1].st_size):
        return False, None
    try:
        fast = read_lines(path, label)
    except (OSError, FileTooLarge):
        return False, None
    give_back()
    return True, fast


LINES_HEAD = 1 << 20  # bytes of a JSON Lines file in which its first line must end for ``_large_lines`` to read it


def _columnar(source: Source, box: list[Any], label: str) -> Optional[ColumnarRun]:
    """The run as the columnar reader reads it (a table, no object per case), or None: it reads only what it can
    vouch for and what its table keeps whole (not a limit's nulls, an empty conversation, nor a judge's whole-number
    score, which the table holds as a float: the reader hands such a run back; a conversation is kept whole), and
    the per-record reader reads (and names the problems of) the rest. ``box``: the file's bytes, which a document's
    reader takes out and lets go (the box is then empty)."""
    if label.lower().endswith(LINES_SUFFIXES):
        return None  # JSON Lines by the name, as the per-record reader tells them (a document so named is lines)
    data = box[0]
    if data.lstrip()[:1] != b"{":
        return None
    path = source if isinstance(source, (str, os.PathLike)) else None
    read = _same_file(path, len(data)) if path is not None and len(data) >= MAPPED_FROM else None
    del data
    if path is not None and read is not None:
        # A large regular file read again into memory the reader gives back as it goes (``Mapped``), these bytes
        # let go first. Read from the file it was (same device, inode, size and time): else the caller reads it
        # again for the per-record reader, as when the columnar reader hands a run back.
        box.clear()
        try:
            mapped = read_file_mapped(path)
        except (OSError, FileTooLarge):
            return None
        if mapped is None or _identity(mapped.stat) != read:
            return None
        box.append(mapped)
        del mapped
    fast = read_document(box, label)
    give_back()  # what the parse freed, before the figures are computed over the table
    if fast is None and box and isinstance(box[0], Mapped):
        box.clear()  # (pages it gave back read as zeros: the caller reads the file again)
    return fast


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _same_file(path: Union[str, os.PathLike], size: int) -> Optional[tuple[int, ...]]:
    """The identity of the regular file at ``path`` if it holds the ``size`` bytes just read from it; None for a
    pipe, a FIFO, or a file that changed (its bytes already read are then kept)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _identity(info) if stat.S_ISREG(info.st_mode) and info.st_size == size else None


def read_run(source: Source, name: Optional[str] = None) -> RunReport:
    """Read and validate a run report; raise ``ReportError`` listing every problem."""
    result = load_run(source, name)
    if result.problems or result.run is None:
        raise ReportError(result.problems)
    return result.run
