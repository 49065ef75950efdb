"""Where an Inspect log's samples come from, one at a time: the sample members of an ``.eval`` archive (read and
decompressed one after another, in the order of their names) or the elements of a ``.json`` log's ``samples``
array (each decoded strictly on its own). Each source gives the log without its samples first. The problems are
the ones a reading of the whole log gives: an archive's problem is the first one of its members in the
archive's order, whichever member the reading had reached; a ``.json`` log that is not as Inspect writes it
(a problem anywhere, a key given twice, a top-level value that is not an object...) is read whole instead. A
sample's transcript (``UNREAD``) is checked as JSON text, not decoded (``format/strict_fields.py``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Optional

from reporting.format.problems import Problem
from reporting.format.strict_fields import strict_object_loads
from reporting.format.strict_json import MAX_DECODE_DEPTH, strict_loads, utf8_text

# A sample's fields no case is made of, checked as JSON text but not decoded (``strict_fields``): its transcript
# (``events``, most of a sample's bytes) and the pool of messages and calls its events point into.
UNREAD = frozenset({"events", "events_data"})


class Source:
    """The log without its samples (``log``), the value its ``samples`` shape is checked on, the samples one at a
    time, and what went wrong: ``fatal`` stops the log (the archive's own problems), ``problems`` are those of
    decoding its parts, ``restart`` asks for the log to be read whole."""

    def __init__(self, log: Any = None, samples_shape: Any = None) -> None:
        self.log, self.samples_shape = log, samples_shape
        self.problems: list[Problem] = []
        self.fatal: Optional[list[Problem]] = None
        self.restart = False

    def samples(self) -> Iterator[Any]:
        return iter(())


def _archive_problem(problem: Problem) -> Problem:
    return Problem(problem.file, problem.path, f"cannot read the Inspect .eval archive: {problem.message}")


def _wanted(name: str) -> bool:
    return name in ("header.json", "_journal/start.json") or (name.startswith("samples/") and name.endswith(".json"))


class _Eval(Source):
    def __init__(self, data: Any, label: str) -> None:
        from reporting.format.expansion import open_zip

        super().__init__()
        self.label = label
        self.archive, problems = open_zip(data, label)
        if self.archive is None:
            self.fatal = [_archive_problem(p) for p in problems]
            return
        self.wanted = self.archive.names(_wanted)
        if self.archive.declared(self.wanted) > self.archive.budget.limit:  # past the budget: refused as it expands
            self._stop()
            if self.fatal:
                return
        self.sample_names = sorted(n for n in self.wanted if n.startswith("samples/"))
        self.decode = True
        self._header()

    def _stop(self) -> None:
        """The problem a reading of every member gives, once one member has one."""
        assert self.archive is not None
        problem = self.archive.first_problem(self.wanted)
        self.fatal = [_archive_problem(problem)] if problem is not None else None

    def _header(self) -> None:
        assert self.archive is not None
        name = next((n for n in ("header.json", "_journal/start.json") if n in self.wanted), None)
        if name is None:
            self.problems.append(
                Problem(self.label, "$", "an Inspect .eval archive without header.json or _journal/start.json")
            )
            self.decode = False
            return
        content, problem = self.archive.read(name)
        if problem is not None:
            self._stop()
            return
        log, errors = strict_loads(self.label, content, name)
        self.problems.extend(errors)
        if isinstance(log, dict) and name == "_journal/start.json":
            log.setdefault("status", "started")
        if not isinstance(log, dict):
            self.problems = self.problems or [Problem(self.label, "header.json", "must be an object")]
            self.decode = False
            return
        log.pop("samples", None)
        self.log, self.samples_shape = log, []

    def samples(self) -> Iterator[Any]:
        if self.fatal or self.archive is None:
            return
        for name in self.sample_names:
            content, problem = self.archive.read(name)
            if problem is not None:
                self._stop()
                return
            if not self.decode:
                continue
            value, errors = strict_object_loads(self.label, content, name, UNREAD)
            del content
            self.problems.extend(errors)
            if not errors:
                yield value


def eval_source(data: Any, label: str) -> Source:
    """The samples of an ``.eval`` archive (``bytes`` or ``expansion.FileBytes``), member by member."""
    return _Eval(data, label)


_SPACE = re.compile(r"[ \t\n\r]*")


class _Irregular(Exception):
    """The .json log is not as Inspect writes it: it is read whole."""


class _Json(Source):
    def __init__(self, text: str, label: str) -> None:
        super().__init__()
        self.text, self.label = text, label
        self.spans: list[tuple[int, int]] = []
        scan = json.JSONDecoder().raw_decode
        at = self._space(0)
        if text[at : at + 1] != "{":
            raise _Irregular
        log: dict[str, Any] = {}
        at = self._space(at + 1)
        while text[at : at + 1] != "}":
            if log and text[at : at + 1] == ",":
                at = self._space(at + 1)
            if text[at : at + 1] != '"':
                raise _Irregular
            key, at = scan(text, at)
            at = self._space(at)
            if key in log or text[at : at + 1] != ":":
                raise _Irregular
            at = self._space(at + 1)
            if key == "samples":
                if text[at : at + 1] != "[":
                    raise _Irregular
                log[key], at = None, self._array(at)
                self.samples_shape = []
            else:
                _, end = scan(text, at)
                value, errors = strict_loads(label, text[at:end], key, MAX_DECODE_DEPTH - 1)
                if errors:
                    raise _Irregular
                log[key], at = value, end
            at = self._space(at)
            if text[at : at + 1] not in (",", "}"):
                raise _Irregular
        if self._space(at + 1) != len(text):
            raise _Irregular
        log.pop("samples", None)
        self.log = log

    def _space(self, at: int) -> int:
        match = _SPACE.match(self.text, at)
        return match.end() if match else at

    def _array(self, at: int) -> int:
        """Where each element of the array at ``at`` starts and ends (each parsed and dropped), and its end."""
        scan = json.JSONDecoder().raw_decode
        at = self._space(at + 1)
        while self.text[at : at + 1] != "]":
            if self.spans:
                if self.text[at : at + 1] != ",":
                    raise _Irregular
                at = self._space(at + 1)
            _, end = scan(self.text, at)
            self.spans.append((at, end))
            at = self._space(end)
        return at + 1

    def samples(self) -> Iterator[Any]:
        for index, (start, end) in enumerate(self.spans):
            value, errors = strict_object_loads(
                self.label, self.text[start:end], f"samples[{index}]", UNREAD, MAX_DECODE_DEPTH - 2
            )
            if errors:
                self.restart = True
                return
            yield value


def json_source(data: bytes, label: str, whole: bool = False) -> Source:
    """The samples of a ``.json`` log one at a time; ``whole``: the log decoded whole (a log that is not as
    Inspect writes it, and the problems of a bad one, as reading it whole gives them)."""
    if not whole:
        text, _ = utf8_text(label, data)
        try:
            if text is not None:
                return _Json(text, label)
        except (_Irregular, ValueError, RecursionError):
            pass
    value, problems = strict_loads(label, data)
    source = _Whole(value)
    if problems:
        source.fatal = problems
    return source


class _Whole(Source):
    """A log decoded whole."""

    def __init__(self, log: Any) -> None:
        super().__init__(log, log.get("samples") if isinstance(log, dict) else None)

    def samples(self) -> Iterator[Any]:
        yield from self.samples_shape if isinstance(self.samples_shape, list) else ()
