"""A run file that grows while it is watched, read a little at a time: here a RunLens JSON Lines run.

Each ``refresh`` stats the file and reads only the bytes written since the last one (never the file whole again):
the complete lines among them are handed to the reader of the file's kind, and a last line not yet ended is held
back. While the file grows, that torn line is waited for, not a problem; once the file has stopped growing
(unchanged for ``idle_seconds``, or garak's ``completion`` line seen) it is read as the last line, and when it is
not whole JSON it is a problem of that line. A file that shrinks or is replaced (another inode) is read afresh.

``snapshot`` gives the run made of what is there: the same cases and problems a whole read of the same complete
lines gives (tests/test_live.py checks it at every step), so every figure and interval is computed over them.
``GrowingFile`` reads RunLens's own JSON Lines; ``reporting.sources.growing.GrowingRun`` adds garak's
``report.jsonl`` (its reader is ``reporting.importers.garak_growing``); other formats are not read as they grow.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol, Union

from reporting.format.problems import Problem
from reporting.format.schema import Case, RunReport

IDLE_SECONDS = 60.0  # a file unchanged this long has stopped growing (its torn last line is then a problem)
SNIFF = 1 << 16
LIVE_SUFFIXES = (".jsonl", ".ndjson")


class LineReader(Protocol):
    """What reads the complete lines of one kind of growing file."""

    @property
    def completed(self) -> bool:
        """The tool wrote its last line (garak's ``completion``)."""

    def feed(self, lines: list[bytes], first: int) -> None:
        """Complete lines (without their line end), the first of them numbered ``first`` (from 1)."""

    def snapshot(self, final: bool) -> tuple[RunReport, list[Problem], int, int, int]:
        """The run of the lines so far, its problems, the cases in the file (valid or not), how many leading cases
        kept their verdicts since the last snapshot, and how many are settled (the rest may change); ``final``: the
        file has stopped growing."""


@dataclass
class LiveRun:
    """A growing run as it stands: the run of the complete lines, its problems and where the file is."""

    label: str
    kind: str  # "garak" or "runlens"
    run: RunReport
    problems: list[Problem]
    cases_in_file: int
    lines: int  # complete lines read
    size: int  # bytes of the file at the last refresh
    last_growth: float  # wall time the file last grew (its modification time)
    growing: bool  # still being written: not completed and grown within ``idle_seconds``
    completed: bool
    held_back: int  # bytes of a last line not yet ended
    bytes_read: int = 0  # every byte read since the file was first (or afresh) opened
    attempts: int = 0  # garak: attempts seen (judged or not); RunLens: lines with a case
    stable: int = 0  # leading cases whose verdicts are those of the previous snapshot (``LiveTally`` counts on)
    settled: int = 0  # leading cases that will not change as the file grows (garak: judged ones)


def runlens_lines(head: bytes, name: str) -> bool:
    """A RunLens JSON Lines run (named ``.jsonl`` or ``.ndjson``, its first line a case object), told by the first
    bytes of the file."""
    from reporting.format.strict_json import strict_loads

    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text or not name.lower().endswith(LIVE_SUFFIXES):
        return False
    end = text.find(b"\n")
    if end < 0:
        return text.startswith(b"{") and b'"probe_id"' in text
    first, problems = strict_loads("", text[:end])
    return not problems and isinstance(first, dict) and "probe_id" in first


class GrowingFile:
    """One growing file, read a little at each ``refresh``; ``reader_of`` tells its kind."""

    def __init__(
        self,
        path: Union[str, os.PathLike],
        label: Optional[str] = None,
        idle_seconds: float = IDLE_SECONDS,
        clock: Callable[[], float] = time.time,
    ):
        self.path = Path(path)
        self.label = label or str(path)
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._start()

    def _start(self) -> None:
        self.identity: Optional[tuple[int, int]] = None
        self.offset = 0
        self.pending = b""
        self.lines = 0
        self.size = 0
        self.mtime = 0.0
        self.bytes_read = 0
        self.kind: Optional[str] = None
        self.reader: Optional[LineReader] = None
        self.closed_line = False  # the held-back line was read as the last: a line end that follows closes it

    def refresh(self) -> bool:
        """Read what was appended since the last refresh; True when anything changed. A file that cannot be
        stat'ed or opened, or is not a regular file, raises OSError; one above the size cap ``FileTooLarge`` (the
        caller names the file)."""
        from reporting.format import problems

        info = os.stat(self.path)
        if not stat.S_ISREG(info.st_mode):  # never opened: a FIFO would block, a device never end
            raise problems.NotRegularFile(errno.EINVAL, "not a regular file (a folder, FIFO, device or socket)")
        if info.st_size > problems.MAX_FILE_BYTES:  # the cap of every read, counted on the whole file
            raise problems.FileTooLarge(
                f"the file is {problems.megabytes(info.st_size)}, larger than the "
                f"{problems.megabytes(problems.MAX_FILE_BYTES)} cap (raise it with RUNLENS_MAX_FILE_MB)"
            )
        identity = (info.st_dev, info.st_ino)
        if self.identity is not None and (identity != self.identity or info.st_size < self.offset + len(self.pending)):
            self._start()  # replaced or cut short: read afresh
        self.identity = identity
        changed = info.st_size != self.size or info.st_mtime != self.mtime
        self.size, self.mtime = info.st_size, info.st_mtime
        end = self.offset + len(self.pending)
        if info.st_size > end:
            with open(self.path, "rb") as handle:
                handle.seek(end)
                data = handle.read(info.st_size - end)
            self.bytes_read += len(data)
            self._take(data)
        return changed

    def _take(self, data: bytes) -> None:
        if self.closed_line:
            self.closed_line = False
            if data.startswith(b"\n"):
                self.offset += 1
                data = data[1:]
        data = self.pending + data
        cut = data.rfind(b"\n")
        if cut < 0:
            self.pending = data
            if self.kind is None and self.offset == 0:
                self._detect(data)  # a first line not ended yet is enough to tell the kind of most files
            return
        whole, self.pending = data[: cut + 1], data[cut + 1 :]
        if self.offset == 0:
            whole = whole.removeprefix(b"\xef\xbb\xbf")  # its bytes still count in the offset below
            if self.kind is None:
                self._detect(whole[:SNIFF])
        lines = whole.split(b"\n")
        lines.pop()  # the empty piece after the last line end
        if self.reader is not None:
            self.reader.feed(lines, self.lines + 1)
        self.lines += len(lines)
        self.offset += cut + 1

    def _detect(self, head: bytes) -> None:
        self.kind, self.reader = self.reader_of(head)

    def reader_of(self, head: bytes) -> tuple[Optional[str], Optional[LineReader]]:
        """The kind of the file, told by its first bytes, and the reader of its lines (None, None: not read as it
        grows). Here a RunLens JSON Lines run; ``reporting.sources.growing.GrowingRun`` adds other tools' files."""
        if runlens_lines(head, self.path.name):
            return "runlens", CaseLines(self.label)
        return None, None

    def stopped(self) -> bool:
        """The file has stopped growing: the tool wrote its last line, or it has not changed for ``idle_seconds``."""
        done = self.reader is not None and self.reader.completed
        return done or self.clock() - self.mtime >= self.idle_seconds

    def snapshot(self) -> Optional[LiveRun]:
        """The run as it stands (None while the file is of no kind read as it grows, or empty)."""
        if self.reader is None:
            return None
        stopped = self.stopped()
        idle = self.clock() - self.mtime >= self.idle_seconds  # a torn line is waited for until the file is idle
        if idle and self.pending.strip():
            self._last_line()
        run, problems, cases_in_file, stable, settled = self.reader.snapshot(stopped)
        if idle and self.pending.strip():
            cut = Problem(
                self.label,
                f"line {self.lines + 1}",
                f"cut short: the file stopped growing {len(self.pending):,} byte(s) into this line, before its end",
            )
            problems = [*problems, cut]
            cases_in_file += self.kind == "runlens"
        return LiveRun(
            self.label,
            self.kind or "",
            run,
            problems,
            cases_in_file,
            self.lines,
            self.size,
            self.mtime,
            not stopped,
            self.reader.completed,
            len(self.pending),
            self.bytes_read,
            getattr(self.reader, "attempts", 0),
            stable,
            settled,
        )

    def _last_line(self) -> None:
        """The held-back line of a file that stopped growing: read as its last line when it is whole JSON (a file
        whose last line has no line end), else left held back (and reported as cut short)."""
        from reporting.format.strict_json import strict_loads

        _, problems = strict_loads("", self.pending)
        if problems or self.reader is None:
            return
        self.reader.feed([self.pending], self.lines + 1)
        self.lines += 1
        self.offset += len(self.pending)
        self.pending = b""
        self.closed_line = True


@dataclass
class CaseLines:
    """A RunLens JSON Lines run, one case per line, validated as the whole-file reader validates it."""

    label: str
    completed: bool = False  # a RunLens run has no last line of its own: it stops growing
    cases: list[Case] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    first_line: dict[str, int] = field(default_factory=dict)  # probe id -> the line that used it first
    bad_lines: set[str] = field(default_factory=set)
    rows: int = 0
    shown: int = 0  # cases at the last snapshot

    @property
    def attempts(self) -> int:
        return self.rows + len(self.bad_lines)

    def feed(self, lines: list[bytes], first: int) -> None:
        from reporting.format.migrate import upgrade
        from reporting.format.reading import _validate_cases
        from reporting.format.strict_json import jsonl_objects

        try:
            text = b"\n".join(lines).decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(self.label, f"line {first}", f"not UTF-8 text: {exc.reason}"))
            return
        rows, problems = jsonl_objects(self.label, text)
        shift = first - 1
        for problem in problems:
            path = _shifted(problem.path, shift)
            self.bad_lines.add(path.split(".")[0])
            self.problems.append(Problem(problem.file, path, problem.message, problem.got))
        numbers = [number + shift for number, _ in rows]
        _, raw = upgrade({}, [value for _, value in rows], 1)
        self.rows += len(raw)
        cases, case_problems = _validate_cases(self.label, raw, [f"line {n}" for n in numbers], version=1)
        self.problems.extend(case_problems)
        wrong = {p.path.split(".")[0] for p in case_problems}
        line_of: dict[Any, int] = {}  # probe id -> the first good line of this chunk holding it
        for number, value in zip(numbers, raw):
            if f"line {number}" not in wrong and isinstance(value, dict):
                line_of.setdefault(value.get("probe_id"), number)
        for case in cases:  # a probe id used on an earlier line: the first is kept, as the whole read keeps it
            line = line_of.get(case.probe_id, 0)
            earlier = self.first_line.get(case.probe_id)
            if earlier is None:
                self.first_line[case.probe_id] = line
                self.cases.append(case)
            else:
                self.problems.append(
                    Problem(
                        self.label,
                        f"line {line}.probe_id",
                        f"duplicate probe_id, first used by line {earlier}",
                        case.probe_id,
                    )
                )

    def snapshot(self, final: bool) -> tuple[RunReport, list[Problem], int, int, int]:
        from reporting.format.reading import _check_header, _problem_order

        problems = list(self.problems)
        meta, _ = _check_header(self.label, {}, problems)
        problems.sort(key=lambda p: _problem_order(p.path))
        run = RunReport.model_construct(schema_version=1, run=meta, cases=list(self.cases))
        stable, self.shown = self.shown, len(self.cases)  # cases are only ever added
        return run, problems, self.attempts, stable, len(self.cases)


def _shifted(path: str, shift: int) -> str:
    """A problem's path ``line N...`` of a chunk as the line of the file."""
    head, _, rest = path.partition(" ")
    if head != "line" or not shift:
        return path
    number, dot, tail = rest.partition(".")
    return f"line {int(number) + shift}{dot}{tail}" if number.isdigit() else path
