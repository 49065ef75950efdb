"""Expansion limits of every container RunLens opens (ZIP archives and their deflate or zstd members, Parquet
row groups, pages and dictionaries): what a file expands to is counted, as it expands, against the size cap
(``--max-file-mb``, counted on *expanded* bytes) and against a ratio to the file's own size, so that a small
file can never make the process read gigabytes. Each refusal is a problem naming the file and the member or
column, never an exception."""

from __future__ import annotations

import io
import os
import struct
import threading
import zlib
from collections.abc import Callable
from typing import Any, Optional, Union

from reporting.format import problems as files
from reporting.format.problems import Problem, megabytes

EXPANSION_RATIO = 1000  # a file may expand to this many times its own size ...
EXPANSION_FLOOR = 64 << 20  # ... or to this many bytes, whichever is more; never beyond the size cap
MAX_MEMBERS = 100_000  # members of one archive at least; more where the archive's budget allows (member_limit)
MEMBER_COST = 1024  # bytes one member's directory entry is counted as once read (Python's zipfile: about 600)
CHUNK = 1 << 20  # bytes decompressed at a time
STORED, DEFLATED, ZSTD = 0, 8, 93


def expansion_limit(size: int) -> int:
    """The bytes a file of ``size`` bytes may expand to: the size cap, and at most EXPANSION_RATIO times the
    file beyond EXPANSION_FLOOR."""
    return min(files.MAX_FILE_BYTES, max(EXPANSION_FLOOR, EXPANSION_RATIO * size))


def member_limit(size: int) -> int:
    """The members an archive of ``size`` bytes may list: MAX_MEMBERS, or one per MEMBER_COST bytes of its
    expansion limit (an Inspect log of a million samples lists a million members)."""
    return max(MAX_MEMBERS, expansion_limit(size) // MEMBER_COST)


class Budget:
    """Expanded bytes of one file, counted against ``expansion_limit`` of its size."""

    def __init__(self, label: str, size: int):
        self.label, self.size, self.limit, self.used = label, size, expansion_limit(size), 0

    def take(self, count: int) -> bool:
        """Count ``count`` more expanded bytes; False once the limit is passed."""
        self.used += count
        return self.used <= self.limit

    def problem(self, where: str) -> Problem:
        if self.limit >= files.MAX_FILE_BYTES:
            why = "the size cap, counted on expanded bytes (raise it with --max-file-mb or RUNLENS_MAX_FILE_MB)"
        else:
            why = (
                f"{EXPANSION_RATIO:,} times the file's own {megabytes(self.size)} beyond {megabytes(EXPANSION_FLOOR)}"
                " (a decompression bomb; nothing more is read)"
            )
        return Problem(self.label, where, f"expands to more than {megabytes(self.limit)}: {why}")


class FileBytes:
    """A file on disk read the way ``bytes`` are (``len`` and slices, each slice read from the file when asked):
    an archive of any size is opened without being held in memory."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.size = os.fstat(handle.fileno()).st_size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        start, stop, _ = key.indices(self.size)
        return os.pread(self.handle.fileno(), max(0, stop - start), start) if stop > start else b""


Data = Union[bytes, FileBytes]


class ZipArchive:
    """A ZIP archive whose directory passed the checks of ``open_zip``: its members read one at a time, each
    decompressed against its declared size and CRC, and all against one expansion budget."""

    def __init__(self, data: Data, label: str, infos: list[Any], starts: dict[str, int]) -> None:
        self.data, self.label, self.infos, self.starts = data, label, infos, starts
        self.by_name = {info.filename: info for info in infos}
        self.budget = Budget(label, len(data))

    def names(self, wanted: Callable[[str], bool]) -> list[str]:
        """The members ``wanted`` picks, in the archive's order."""
        return [info.filename for info in self.infos if wanted(info.filename)]

    def declared(self, names: list[str]) -> int:
        """The bytes the members' directory entries declare they expand to."""
        return sum(self.by_name[name].file_size for name in names)

    def read(self, name: str) -> tuple[bytes, Optional[Problem]]:
        """One member decompressed, counted against the archive's budget; or the problem that stops it."""
        return _expand(self.data, self.by_name[name], self.starts[name], self.budget, self.label)

    def first_problem(self, names: list[str]) -> Optional[Problem]:
        """The first problem of the members read in the archive's order with a budget of their own, their contents
        dropped as they are checked: the problem ``zip_members`` gives for these members, in bounded memory."""
        budget = Budget(self.label, len(self.data))
        chosen = set(names)
        for info in self.infos:
            if info.filename in chosen:
                _, problem = _expand(self.data, info, self.starts[info.filename], budget, self.label, keep=False)
                if problem is not None:
                    return problem
        return None


def open_zip(data: Data, label: str) -> tuple[Optional[ZipArchive], list[Problem]]:
    """A ZIP archive's directory, checked before any member is read: more than MAX_MEMBERS members, a name given
    twice, members that overlap (one compressed stream read as many: the smallest zip bombs), a member reaching
    outside the archive and encryption are problems that stop the archive."""
    import zipfile

    limit = member_limit(len(data))
    try:
        handle = data.handle if isinstance(data, FileBytes) else io.BytesIO(data)
        declared = _declared_members(handle)
        if declared is not None and declared > limit:  # told by the end record, before the directory is read
            return None, [Problem(label, "$", f"the archive lists {declared:,} members: at most {limit:,} are read")]
        archive = zipfile.ZipFile(handle)
        infos = archive.infolist()
        directory = archive.start_dir
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, struct.error, OSError, EOFError) as exc:
        return None, [Problem(label, "$", f"not a readable ZIP archive: {str(exc)[:200]}")]
    if len(infos) > limit:
        return None, [Problem(label, "$", f"the archive lists {len(infos):,} members: at most {limit:,} are read")]
    problems: list[Problem] = []
    names: set[str] = set()
    spans: list[tuple[int, int, str]] = []
    starts: dict[str, int] = {}
    for info in infos:
        name = info.filename
        if name in names:
            problems.append(Problem(label, name, "the archive names this member twice (readers keep either one)"))
            continue
        names.add(name)
        start = _data_start(data, info.header_offset)
        end = -1 if start is None else start + info.compress_size
        if start is None or end > directory:
            problems.append(Problem(label, name, "the member's local header or data lies outside the archive"))
            continue
        if info.flag_bits & 0x1:
            problems.append(Problem(label, name, "the member is encrypted"))
            continue
        starts[name] = start
        spans.append((info.header_offset, end, name))
    spans.sort()
    for (_, end, name), (begin, _, following) in zip(spans, spans[1:]):
        if begin < end:
            problems.append(
                Problem(
                    label,
                    following,
                    f"the member overlaps the member {name!r}: an archive whose members share bytes is refused "
                    "(the construction of zip bombs)",
                )
            )
    if problems:
        return None, problems
    return ZipArchive(data, label, infos, starts), []


def _declared_members(handle: Any) -> Optional[int]:
    """The member count the archive's end record declares (zipfile's own reading of it), None when it has none."""
    import zipfile

    end = zipfile._EndRecData(handle)  # type: ignore[attr-defined]
    return None if not end else int(end[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]


def zip_members(
    data: Data, label: str, wanted: Callable[[str], bool]
) -> tuple[Optional[dict[str, bytes]], list[Problem]]:
    """The members of a ZIP archive that ``wanted`` picks, decompressed, or the problems that stop the archive:
    those of its directory (``open_zip``), a compression method RunLens does not read, a member whose real size
    or CRC is not the one its directory entry declares, and more expanded bytes than the budget (counted while
    decompressing, a megabyte at a time)."""
    archive, problems = open_zip(data, label)
    if archive is None:
        return None, problems
    found: dict[str, bytes] = {}
    for name in archive.names(wanted):
        content, problem = archive.read(name)
        if problem is not None:
            return None, [problem]
        found[name] = content
    return found, []


def _data_start(data: Data, offset: int) -> Optional[int]:
    """Where a member's compressed bytes start, from its local header; None when there is no local header."""
    if offset < 0 or data[offset : offset + 4] != b"PK\x03\x04" or offset + 30 > len(data):
        return None
    name_len, extra_len = struct.unpack("<HH", data[offset + 26 : offset + 30])
    return offset + 30 + name_len + extra_len


def _expand(
    data: Data, info: Any, start: int, budget: Budget, label: str, keep: bool = True
) -> tuple[bytes, Optional[Problem]]:
    """One member decompressed in steps of CHUNK bytes, never beyond its declared size or the budget; with
    ``keep`` False, checked (sizes, budget, CRC) and dropped a piece at a time."""
    name, declared = info.filename, info.file_size
    compressed = data[start : start + info.compress_size]
    pieces: list[bytes] = []
    total, crc = 0, 0
    try:
        for piece in _pieces(info.compress_type, compressed):
            total += len(piece)
            if total > declared:
                return b"", Problem(
                    label, name, f"the member expands beyond the {declared:,} bytes its directory entry declares"
                )
            if not budget.take(len(piece)):
                return b"", budget.problem(name)
            if keep:
                pieces.append(piece)
            else:
                crc = zlib.crc32(piece, crc)
    except _Unsupported as exc:
        return b"", Problem(label, name, str(exc))
    except Exception as exc:  # noqa: BLE001 - zlib's and zstandard's errors alike: a damaged member is a problem
        return b"", Problem(label, name, f"the member cannot be decompressed: {type(exc).__name__}: {str(exc)[:120]}")
    content = b"".join(pieces)
    if total != declared:
        return b"", Problem(label, name, f"the member holds {total:,} bytes; its directory entry declares {declared:,}")
    if (zlib.crc32(content) if keep else crc) != info.CRC:
        return b"", Problem(label, name, "the member's CRC does not match its content (a damaged archive)")
    return content, None


class _Unsupported(Exception):
    pass


_PER_THREAD = threading.local()


def _zstd() -> Any:
    """This thread's zstd decompressor (only for zstd members: Inspect 0.3.206 and later), made once: a log of
    100,000 members made one a member (half of their decompression time)."""
    made = getattr(_PER_THREAD, "zstd", None)
    if made is None:
        import zstandard

        made = _PER_THREAD.zstd = zstandard.ZstdDecompressor()
    return made


def _pieces(method: int, compressed: bytes):
    """The decompressed bytes of one member, CHUNK at a time."""
    if method == STORED:
        for at in range(0, len(compressed), CHUNK):
            yield bytes(compressed[at : at + CHUNK])
    elif method == DEFLATED:
        inflater = zlib.decompressobj(-15)
        pending = bytes(compressed)
        while pending:
            yield inflater.decompress(pending, CHUNK)
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        if not inflater.eof:
            raise zlib.error("the deflate stream ends early")
    elif method == ZSTD:
        reader = _zstd().stream_reader(io.BytesIO(compressed), read_across_frames=True)
        while True:
            piece = reader.read(CHUNK)
            if not piece:
                break
            yield piece
    else:
        raise _Unsupported(f"compression method {method} is not one RunLens reads (stored, deflate, zstd)")


def parquet_limits(metadata: Any, label: str, size: int) -> list[Problem]:
    """Before a Parquet file is read: its rows, values and uncompressed bytes, as its footer declares them,
    against the budget (each value read costs at least 16 bytes once in memory)."""
    budget = Budget(label, size)
    values = uncompressed = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            values += max(column.num_values, 0)
            uncompressed += max(column.total_uncompressed_size, 0)
    rows = max(metadata.num_rows, 0)
    cost = max(uncompressed, 16 * values, 16 * rows * max(metadata.num_columns, 1))
    if not budget.take(cost):
        return [budget.problem(f"$ ({rows:,} rows, {values:,} values, {megabytes(uncompressed)} uncompressed)")]
    return []


def dense_bytes(array: Any) -> int:
    """The bytes an Arrow array takes once its dictionaries are expanded (each index its value's bytes): what the
    rows become in memory, computed from the dictionaries and the indices without expanding them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return sum(dense_bytes(chunk) for chunk in array.chunks)
    kind = array.type
    if pa.types.is_dictionary(kind):
        if len(array) == 0:
            return 0
        lengths = pc.binary_length(array.dictionary) if _is_text(kind.value_type) else None
        if lengths is None:
            each = dense_bytes(array.dictionary) / max(len(array.dictionary), 1)
            return int(each * len(array)) + 4 * len(array)
        total = pc.sum(pc.take(lengths, array.indices)).as_py() or 0
        return int(total) + 8 * len(array)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return 8 * len(array) + dense_bytes(array.values)
    if pa.types.is_struct(kind):
        return len(array) + sum(dense_bytes(array.field(i)) for i in range(kind.num_fields))
    return int(array.nbytes)


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind))
