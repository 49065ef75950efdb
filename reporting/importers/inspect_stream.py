"""An Inspect AI log read one sample at a time: the members of an ``.eval`` archive one after another (the archive
itself read from disk as it goes, never whole), the ``samples`` of a ``.json`` log one element at a time. Each
sample becomes its case as it is read and is dropped; the cases are kept compressed until they are asked for, so
memory follows the run RunLens writes, not the log. Inspect's own figures (``results.scores``) are checked
against running sums. Every problem is found before the first case is given: a log that is wrong anywhere gives
the same problems, in the same words, as reading it whole (``reporting.importers.inspect_ai``)."""

from __future__ import annotations

import json
import math
import os
import stat
import zlib
from array import array
from collections.abc import Iterator
from typing import Any, Optional

from reporting.format.problems import Problem
from reporting.importers.inspect_ai import _case, _primary
from reporting.importers.inspect_samples import _list, _obj
from reporting.importers.inspect_sources import Source, eval_source, json_source

Streamed = tuple[Optional[dict[str, Any]], Iterator[dict[str, Any]], list[str], list[Problem]]

BLOCK = 1 << 20  # bytes of cases compressed together


class _Cases:
    """The cases made so far, as JSON lines compressed a block at a time, read back one at a time. A case of a
    sample that raised gets the log's scorers it lacks (an error of each) when it is read back: the scorers are
    known only once every sample is read. msgspec writes and reads the lines (Python's encoder where msgspec does not
    take a value). msgspec writes a non-finite number as null: such a case is never read back, as a non-finite
    score is a problem of the log (``_Pass.add``) and a log with problems gives no case."""

    def __init__(self) -> None:
        import msgspec

        self.blocks: list[bytes] = []
        self.lines: list[bytes] = []
        self.size = 0
        self.count = 0
        self.raised: set[int] = set()
        self.encode = msgspec.json.Encoder().encode
        self.decode = msgspec.json.Decoder().decode
        self.refused = (msgspec.DecodeError, msgspec.ValidationError)

    def add(self, case: dict[str, Any], raised: bool) -> None:
        try:
            text = self.encode(case)
        except (TypeError, ValueError, OverflowError):
            text = json.dumps(case, ensure_ascii=True).encode("ascii")
        self.lines.append(text)
        self.size += len(text)
        if raised:
            self.raised.add(self.count)
        self.count += 1
        if self.size >= BLOCK:
            self._close()

    def _close(self) -> None:
        if self.lines:
            self.blocks.append(zlib.compress(b"\n".join(self.lines), 1))
            self.lines, self.size = [], 0

    def each(self, scorers: tuple[str, ...]) -> Iterator[dict[str, Any]]:
        self._close()
        at = 0
        while self.blocks:
            block = self.blocks.pop(0)
            for line in zlib.decompress(block).split(b"\n"):
                try:
                    case = self.decode(line)
                except self.refused:
                    case = json.loads(line)
                yield _with_scorers(case, scorers) if at in self.raised else case
                at += 1


def _with_scorers(case: dict[str, Any], scorers: tuple[str, ...]) -> dict[str, Any]:
    """A case of a sample that raised, with an error verdict for each scorer of the log that it lacks (as Inspect
    leaves it unscored), the verdicts before ``passed`` as ``_case`` places them."""
    verdicts = dict(case.get("verdicts") or {})
    explanation = f"error: {case['error']}"[:2000]
    for name in scorers:
        verdicts.setdefault(name, {"passed": None, "score": None, "explanation": explanation})
    if not verdicts:
        return case
    head = {k: v for k, v in case.items() if k not in ("verdicts", "passed", "risk_score", "error")}
    return {**head, "verdicts": verdicts, "passed": None, "risk_score": None, "error": case["error"]}


class _Pass:
    """What the run needs of every sample, gathered as the samples go by: the cases, the scorer names and
    metadata keys seen, the retried samples, non-finite scores, and each scorer's scores for Inspect's figures."""

    def __init__(self, log: dict[str, Any], label: str, options: tuple[Optional[str], ...]) -> None:
        self.label = label
        self.primary_judge, self.risk_scorer, self.strategy_key = options
        ev = log["eval"]
        self.task = str(ev.get("task") or "inspect")
        self.tags = ev.get("tags")
        self.primary = _primary(log, self.primary_judge)
        results = _list(_obj(log.get("results")).get("scores"))
        self.known = [s.get("name") for s in results if isinstance(s, dict)]  # the log's scorers, results first
        self.sample_scorers: dict[str, None] = {}
        self.keys: set[str] = set()
        self.problems: list[Problem] = []
        self.retried: list[tuple[str, int]] = []
        self.scores: dict[str, array] = {}
        self.cases = _Cases()

    def add(self, sample: Any) -> None:
        if not isinstance(sample, dict):
            return
        index = self.cases.count
        scores = _obj(sample.get("scores"))
        for name in scores:
            self.sample_scorers.setdefault(name, None)
        self.keys.update(str(k) for k in _obj(sample.get("metadata")))
        case = _case(sample, self.task, self.primary, self.risk_scorer, (), self.strategy_key, self.tags)
        for name, verdict in (case.get("verdicts") or {}).items():
            score = verdict.get("score")
            if isinstance(score, float):
                if not math.isfinite(score):
                    given = scores.get(name)
                    self.problems.append(
                        Problem(
                            self.label,
                            f"samples[{index}].scores.{name}.value",
                            "must be a finite number (NaN and Infinity are not scores)",
                            given.get("value") if isinstance(given, dict) else given,
                        )
                    )
                else:
                    self.scores.setdefault(name, array("d")).append(score)
        if case.get("retries"):
            self.retried.append((case["probe_id"], case["retries"]))
        self.cases.add(case, bool(sample.get("error")))

    def scorers(self, log: dict[str, Any]) -> tuple[str, ...]:
        """The scorers of the log, in its order: Inspect's results, the samples' scores, else the task's scorers
        (``inspect_samples._log_scorers`` over every sample)."""
        names = self.known + list(self.sample_scorers)
        if not [n for n in names if n]:
            names = [s.get("name") for s in _list(_obj(log.get("eval")).get("scorers")) if isinstance(s, dict)]
        return tuple(dict.fromkeys(str(n)[:200] for n in names if isinstance(n, str) and n))


def stream_inspect(
    data: Any,
    label: str,
    primary_judge: Optional[str] = None,
    risk_scorer: Optional[str] = None,
    strategy_key: Optional[str] = None,
) -> Streamed:
    """An Inspect log (``bytes``, or ``expansion.FileBytes`` of an ``.eval`` on disk) as a RunLens document
    without its cases, the cases one at a time, the warnings and the problems."""
    from reporting.importers import NAMES, SHAPE_ERRORS, shape_problem

    options = (primary_judge, risk_scorer, strategy_key)
    try:
        source = eval_source(data, label) if data[:4] == b"PK\x03\x04" else json_source(data, label)
        found = _read(source, label, options)
        if found is None:  # a .json log that is not as Inspect writes it: read whole
            found = _read(json_source(data, label, whole=True), label, options)
    except SHAPE_ERRORS as exc:
        return None, iter(()), [], [shape_problem(label, NAMES["inspect"], exc)]
    return found if found is not None else (None, iter(()), [], [Problem(label, "$", "cannot be read")])


def _read(source: Source, label: str, options: tuple[Optional[str], ...]) -> Optional[Streamed]:
    from reporting.importers.inspect_ai import header_of, shape_problems

    log = source.log
    shaped = shape_problems(log, source.samples_shape, label) if isinstance(log, dict) else None
    run = _Pass(log, label, options) if shaped == [] else None
    for sample in source.samples():
        if run is not None and not source.problems:
            run.add(sample)
    if source.restart:
        return None
    if source.fatal:
        return None, iter(()), [], source.fatal
    if source.problems:
        return None, iter(()), [], source.problems
    if shaped is None:
        return None, iter(()), [], [Problem(label, "eval", "an Inspect log needs an 'eval' object")]
    if run is None:
        return None, iter(()), [], shaped
    assert isinstance(log, dict)
    return header_of(log, run, label, options)


def stream_inspect_file(
    path: str,
    primary_judge: Optional[str] = None,
    risk_scorer: Optional[str] = None,
    strategy_key: Optional[str] = None,
    label: Optional[str] = None,
) -> Streamed:
    """``stream_inspect`` of a file on disk (its problems named by ``label``, else the path): an ``.eval`` archive
    is read member by member from the file (never held whole), a ``.json`` log is read into memory. The file is
    read and closed before the first case is given. As ``read_file_bytes``: a file that is not regular
    (``NotRegularFile``) or above the size cap (``FileTooLarge``) is refused before a byte is read, and opening a
    FIFO does not hang."""
    from reporting.format import problems as files
    from reporting.format.expansion import FileBytes

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise files.NotRegularFile(0, "not a regular file (" + files.file_kind(info.st_mode) + ")")
        if info.st_size > files.MAX_FILE_BYTES:
            raise files.FileTooLarge(
                f"the file is {files.megabytes(info.st_size)}, larger than the {files.megabytes(files.MAX_FILE_BYTES)}"
                " cap (raise it with --max-file-mb or RUNLENS_MAX_FILE_MB)"
            )
    except BaseException:
        os.close(fd)
        raise
    named = path if label is None else label
    with os.fdopen(fd, "rb") as handle:
        if handle.read(4) == b"PK\x03\x04":
            return stream_inspect(FileBytes(handle), named, primary_judge, risk_scorer, strategy_key)
    data = files.read_file_bytes(path, regular_only=True)
    return stream_inspect(data, named, primary_judge, risk_scorer, strategy_key)
