"""Problems with inputs, in one type and one message style (``FILE: path: what (got VALUE)``), and reading a
file's bytes with a size cap without hanging on a FIFO."""

from __future__ import annotations

import fcntl
import json
import math
import mmap
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional, Union

_NO_VALUE = object()


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where it is and what is wrong."""

    file: str
    path: str
    message: str
    got: Any = _NO_VALUE

    def __str__(self) -> str:
        # A message line made elsewhere in the same style carries its file and path already.
        text = ": ".join(part for part in (self.file, self.path, self.message) if part)
        if self.got is not _NO_VALUE:
            text += f" (got {_show(self.got)})"
        return text


class InputError(ValueError):
    """Every problem of an input the project reads: run reports, rubric files, pattern files, YAML.

    Raised with ``Problem`` objects, or with message lines already in the ``FILE: path: what`` style."""

    def __init__(self, problems: Union[str, Problem, Iterable[Union[Problem, str]]]):
        if isinstance(problems, (str, Problem)):
            problems = [problems]
        self.problems: list[Problem] = [p if isinstance(p, Problem) else Problem("", "", str(p)) for p in problems]
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


class ReportError(InputError):
    """Raised by ``read_run`` when an input is not a valid run report; lists every problem."""


def _show(value: Any, limit: int = 80) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    elif isinstance(value, (dict, list)):
        kind = "an object" if isinstance(value, dict) else "an array"
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=True)
        except (TypeError, ValueError, RecursionError):
            text = kind
        if len(text) > limit:
            text = kind
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=True)
        except (TypeError, ValueError):
            text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


MAX_FILE_BYTES = int(float(os.environ.get("RUNLENS_MAX_FILE_MB", "2048")) * 1024 * 1024)


def megabytes(size: int) -> str:
    """A size in MB for messages: three significant digits, so a small cap never reads as 0 MB."""
    return f"{size / 1e6:,.3g} MB" if size < 1e9 else f"{size / 1e6:,.0f} MB"


class FileTooLarge(Exception):
    """A file above the size cap (``MAX_FILE_BYTES``, raised with --max-file-mb or $RUNLENS_MAX_FILE_MB)."""


class NotRegularFile(OSError):
    """A FIFO, device, socket or folder where a regular file is needed."""


def _open_checked(path: Union[str, os.PathLike], limit: int, regular_only: bool) -> tuple[int, os.stat_result]:
    """The file opened without blocking (a FIFO with no writer does not hang the caller), checked with fstat, then
    set to block: with ``regular_only``, anything but a regular file is refused before a byte is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            if regular_only or stat.S_ISDIR(info.st_mode):
                raise NotRegularFile(0, "not a regular file (" + file_kind(info.st_mode) + ")")
        elif info.st_size > limit:
            raise FileTooLarge(
                f"the file is {megabytes(info.st_size)}, larger than the {megabytes(limit)} cap "
                "(raise it with --max-file-mb or RUNLENS_MAX_FILE_MB)"
            )
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def open_capped(path: Union[str, os.PathLike]) -> tuple[int, os.stat_result]:
    """A regular file opened for reading under the size cap (``MAX_FILE_BYTES``), as ``read_file_bytes(path,
    regular_only=True)`` opens it: the descriptor (the caller's to close) and its stat."""
    return _open_checked(path, MAX_FILE_BYTES, True)


def read_file_bytes(path: Union[str, os.PathLike], limit: Optional[int] = None, regular_only: bool = False) -> bytes:
    """The bytes of a file, at most ``limit`` (default ``MAX_FILE_BYTES``); ``FileTooLarge`` beyond it.

    Opened without blocking (a FIFO with no writer does not hang the caller), then checked with fstat: with
    ``regular_only``, anything but a regular file is refused before a byte is read."""
    limit = MAX_FILE_BYTES if limit is None else limit
    fd, info = _open_checked(path, limit, regular_only)
    try:
        chunks, total = [], 0
        if stat.S_ISREG(info.st_mode) and 0 < info.st_size <= limit:
            # A regular file at one read of its size (Linux reads up to 2 GB at once): the bytes as read, never
            # joined from pieces into a second copy of the whole file. A file that grew goes on below.
            first = os.read(fd, info.st_size)
            chunks.append(first)
            total = len(first)
        while True:
            chunk = os.read(fd, min(1 << 24, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileTooLarge(
                    f"more than {megabytes(limit)} read without reaching the end (the cap; raise it "
                    "with --max-file-mb or RUNLENS_MAX_FILE_MB)"
                )
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


class Mapped:
    """A regular file's bytes read into anonymous memory (a private mapping of its own, never the file mapped:
    a file another process truncates meanwhile cannot fault the reader), so that a reader going through it once
    gives the pages it is done with back to the system (``release``): a million cases' file, a gigabyte, is then
    not held beside the table made of it. ``view``: the bytes, as a memoryview."""

    def __init__(self, info: os.stat_result) -> None:
        self.stat = info  # the file's, when it was opened
        self._map = mmap.mmap(-1, max(info.st_size, 1), flags=mmap.MAP_PRIVATE)  # (shared, it would stay in memory)
        self.view = memoryview(self._map)[: info.st_size]
        self._released = 0

    def release(self, upto: int) -> None:
        """Give back the whole pages before byte ``upto``; their bytes read as zeros afterwards."""
        end = upto - upto % mmap.PAGESIZE
        if end > self._released:
            self._map.madvise(mmap.MADV_DONTNEED, self._released, end - self._released)
            self._released = end


def regular_file_head(path: Union[str, os.PathLike], size: int) -> Optional[tuple[bytes, os.stat_result]]:
    """The first ``size`` bytes of a regular file and its stat, opened without blocking (a FIFO put in its place
    does not hang the caller); None for anything else, told by its path first: a FIFO opened only to be told apart
    would pair with its writer, whose bytes the reader that opens it next would then miss. ``os.open``'s and
    ``os.stat``'s errors are the caller's."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        return None
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        return (os.pread(fd, size, 0), info) if stat.S_ISREG(info.st_mode) else None
    finally:
        os.close(fd)


def read_file_mapped(path: Union[str, os.PathLike], limit: Optional[int] = None) -> Optional[Mapped]:
    """A regular file's bytes as ``Mapped`` (checked and capped as ``read_file_bytes(path, limit, True)``), or
    None when the file grew while it was read (the caller reads it as bytes)."""
    limit = MAX_FILE_BYTES if limit is None else limit
    fd, info = _open_checked(path, limit, True)
    try:
        mapped = Mapped(info)
        view, got = mapped.view, 0
        while got < len(view):
            count = os.readv(fd, [view[got : got + (1 << 30)]])
            if not count:  # shorter than it was: what is there is what is read
                mapped.view = view[:got]
                break
            got += count
        return None if os.read(fd, 1) else mapped
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in a problem's words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def unreadable(label: str, exc: BaseException) -> Problem:
    """The one 'cannot read the file' problem."""
    if isinstance(exc, FileTooLarge):
        return Problem(label, "$", str(exc))
    reason = getattr(exc, "strerror", None) or exc.__class__.__name__
    return Problem(label, "$", f"cannot read the file: {reason}")
