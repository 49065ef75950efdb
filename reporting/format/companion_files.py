"""Opening the files that sit beside a run (``RUN.reviews.jsonl``, ``RUN.verdicts.jsonl``, ...) without trusting
their names: a runs folder comes from a shared drive, a tarball or a repository, and whoever made it chose what
each name is.

A companion is opened with ``O_NOFOLLOW`` (a symbolic link is never followed: appending a review through one
would write into whatever file it points at) and ``O_NONBLOCK`` (a FIFO never blocks the caller), then checked
with ``fstat`` on the open descriptor (no race between a check and the open): anything but a regular file is
refused before a byte is read or written. Reading is capped at ``--max-file-mb`` like a run file.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import Any, Optional, Union

from reporting.format.problems import FileTooLarge, file_kind, megabytes

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class CompanionFileError(OSError):
    """A companion that is not a regular file of its own (a link, FIFO, folder, device), or cannot be opened."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link (RunLens never follows a link for a file beside a run: put the file itself there)"
    return file_kind(mode)


def _refusal(kind: str) -> CompanionFileError:
    return CompanionFileError(f"is {kind}, not a regular file: not read, nothing written to it")


def open_companion(path: Union[str, os.PathLike], append: bool = False) -> int:
    """A descriptor of the regular file ``path`` (never through a link, never blocking on a FIFO): read-only, or
    with ``append`` read-write in append mode, created if missing with the user's umask. ``FileNotFoundError``
    when reading a file that does not exist; ``CompanionFileError`` for anything but a regular file of its own."""
    from reporting.format.writing import current_umask

    flags = os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC
    flags |= (os.O_RDWR | os.O_APPEND | os.O_CREAT) if append else os.O_RDONLY
    try:
        fd = os.open(path, flags, 0o666 & ~current_umask())
    except FileNotFoundError:
        raise
    except OSError as exc:
        try:
            info = os.lstat(path)
        except OSError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise _refusal(_kind(info.st_mode)) from None
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _refusal(_kind(stat.S_IFLNK)) from None
        raise CompanionFileError(f"cannot open the file: {exc.strerror or exc.__class__.__name__}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refusal(_kind(info.st_mode))
        if append and info.st_nlink > 1:
            raise CompanionFileError(
                f"has {info.st_nlink} names (hard links): RunLens appends only to a file with one name, so that "
                "nothing elsewhere changes with it; nothing written"
            )
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_companion(
    path: Union[str, os.PathLike], limit: Optional[int] = None, head: Optional[int] = None
) -> Optional[bytes]:
    """The bytes of the companion ``path`` (None when there is no such file), at most ``limit`` (default: the cap
    of ``--max-file-mb``); ``FileTooLarge`` beyond it, ``CompanionFileError`` for a link, FIFO, folder or device.
    With ``head``: at most that many bytes, and no error beyond (the caller's parser has its own, lower cap)."""
    from reporting.format import problems

    cap = problems.MAX_FILE_BYTES if limit is None else limit
    if head is not None:
        cap = min(cap, head)
    try:
        fd = open_companion(path)
    except FileNotFoundError:
        return None
    try:
        if head is not None:
            return os.read(fd, cap) if cap < (1 << 24) else _read_all(fd, cap)[:cap]
        size = os.fstat(fd).st_size
        if size > cap:
            raise FileTooLarge(
                f"the file is {megabytes(size)}, larger than the {megabytes(cap)} cap "
                "(raise it with --max-file-mb or RUNLENS_MAX_FILE_MB)"
            )
        data = _read_all(fd, cap)
        if len(data) > cap:  # grew while being read
            raise FileTooLarge(f"more than {megabytes(cap)} read without reaching the end (the --max-file-mb cap)")
        return data
    finally:
        os.close(fd)


def _read_all(fd: int, cap: int) -> bytes:
    """Up to ``cap + 1`` bytes of ``fd`` (one more than the cap: the caller tells a file that grew)."""
    chunks, total = [], 0
    while total <= cap:
        chunk = os.read(fd, min(1 << 24, cap + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def companion_source(source: Any, head: Optional[int] = None) -> tuple[Any, Optional[str]]:
    """A companion given as a path, read into ``(label, bytes)`` through ``read_companion`` (no link followed, a
    regular file only, size-capped), and the problem line when it cannot be; ``(label, bytes)`` held in memory
    (an upload) and None pass through."""
    if source is None or isinstance(source, tuple):
        return source, None
    label = str(source)
    try:
        data = read_companion(source, head=head)
    except (OSError, FileTooLarge) as exc:
        return None, f"{label}: $: {exc if isinstance(exc, (CompanionFileError, FileTooLarge)) else _reason(exc)}"
    if data is None:
        return None, f"{label}: $: cannot read the file: no such file"
    return (label, data), None


def _reason(exc: OSError) -> str:
    return f"cannot read the file: {exc.strerror or exc.__class__.__name__}"


def companion_state(path: Union[str, os.PathLike]) -> Optional[str]:
    """What is wrong with the name ``path`` as a companion (a link, FIFO, folder, device), None when it is a
    regular file of its own or there is nothing there. For listing only: opening is what decides."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return None if stat.S_ISREG(info.st_mode) else _refusal(_kind(info.st_mode)).message
