"""Review records: people's decisions on a run's verdicts, kept beside the run (``RUN.reviews.jsonl``), never in it.

One JSON object a line, appended, never rewritten (docs/review.md):

    {"kind": "review", "run": FINGERPRINT, "run_id": ..., "probe_id": ..., "verdict": "pass"|"fail"|"unsure",
     "severity": null|"low"|..., "reason": ..., "reviewer": ..., "time": ISO 8601, "queue": ...,
     "replaces": {"judge": ..., "verdict": "pass"|"fail"|"error"}}
    {"kind": "signoff", "run": FINGERPRINT, "run_id": ..., "reviewer": ..., "time": ..., "cases_reviewed": N,
     "basis": "reviewed"|"judged"}

A later record by the same reviewer on the same probe supersedes the earlier one; the file keeps both (the audit
trail). Appends take an exclusive lock, start on a fresh line even after a torn one, and go out in one write; a
torn line (a crash mid-write) is reported and skipped on reading, the lines after it still read, and the figures
"as reviewed" are not given (a gate fails closed: a torn line may have been a reviewer's fail).

The file is the companion of a run, named by whoever made the folder: it is opened without following a link and
only when it is a regular file (``reporting.format.companion_files``), read with the ``--max-file-mb`` cap, and
each line goes through the strict JSON decoder. Times are compared as instants (UTC), never as text.
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Union

from reporting.format.companion_files import CompanionFileError, open_companion, read_companion
from reporting.format.problems import FileTooLarge, InputError, Problem
from reporting.format.review_chain import CHAIN_FIELDS, check_chain_fields, link, reviewer_key, tail_link
from reporting.format.severity import SEVERITIES
from reporting.format.strict_json import parse_json_text

VERDICTS = ("pass", "fail", "unsure")
QUEUES = ("failures", "random", "disagreements", "case", "command line")
MAX_REASON = 2_000  # characters
MAX_NAME = 100
MAX_LINE = 64 * 1024  # bytes: a record longer than this is no record RunLens wrote
CHAIN_ROOM = 512  # bytes the chain's links add to a record when it is appended (seq, prev, covers)
SUFFIX = ".reviews.jsonl"
UNREADABLE = "an incomplete record"  # how the problem of a line that cannot be read starts (Reviews.torn)
EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


class ReviewError(InputError):
    """Review records that cannot be taken: each problem names the file (or the command line), the line or the
    record, the field and what is wrong."""


def companion_path(run_path: Union[str, os.PathLike]) -> Path:
    """``RUN.reviews.jsonl`` beside the run ``RUN.json`` (or ``RUN.jsonl``, ``RUN.eval``, ...)."""
    from reporting.format.folders import run_stem

    stem = run_stem(Path(run_path))
    return stem.with_name(stem.name + SUFFIX)


def _bad_text(value: str) -> bool:
    """Control, format (bidirectional overrides, zero-width) and line-separator characters."""
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs") for ch in value)


def parse_time(value: Any) -> Optional[datetime]:
    """The instant ``value`` names, in UTC; None when it is not an ISO 8601 date-time with its time zone (a time
    without one could be any of 27 hours, and cannot be ordered against the others)."""
    if not isinstance(value, str) or not 10 <= len(value) <= 40:
        return None
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None or moment.utcoffset() is None:
            return None
        return moment.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None


def record_time(record: Mapping[str, Any]) -> datetime:
    """The record's time as an instant in UTC, for ordering (a record without a valid one sorts first: records
    read from a file never lack one, they are problems)."""
    return parse_time(record.get("time")) or EARLIEST


def check_record(record: Any, where: str, label: str) -> list[Problem]:
    """Every problem of one record, independent of the run (see ``check_against_run``)."""
    if not isinstance(record, dict):
        return [Problem(label, where, "a review record must be a JSON object")]
    problems: list[Problem] = []

    def bad(field: str, message: str, got: Any = None) -> None:
        problems.append(Problem(label, f"{where}.{field}", message, got))

    kind = record.get("kind")
    if kind not in ("review", "signoff"):
        bad("kind", "must be 'review' or 'signoff'", kind)
        return problems
    for field in ("run", "run_id"):
        if not isinstance(record.get(field), str) or not record.get(field):
            bad(field, "required: the run the record is for")
    reviewer = record.get("reviewer")
    if not isinstance(reviewer, str) or not reviewer.strip():
        bad("reviewer", "required: who decided")
    elif len(reviewer) > MAX_NAME or _bad_text(reviewer):
        bad("reviewer", f"a name of at most {MAX_NAME} characters, no control characters", reviewer[:120])
    if parse_time(record.get("time")) is None:
        bad(
            "time",
            "must be an ISO 8601 date-time with its time zone, such as 2026-11-23T09:30:00Z or "
            "2026-11-23T18:30:00+09:00",
            record.get("time"),
        )
    if kind == "signoff":
        check_chain_fields(record, bad)
        if record.get("basis") not in ("reviewed", "judged"):
            bad("basis", "must be 'reviewed' or 'judged'", record.get("basis"))
        count = record.get("cases_reviewed")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            bad("cases_reviewed", "must be a whole number, 0 or more", count)
        return problems
    probe = record.get("probe_id")
    if not isinstance(probe, str) or not probe:
        bad("probe_id", "required: the case decided")
    verdict = record.get("verdict")
    if verdict not in VERDICTS:
        bad("verdict", f"must be one of {', '.join(VERDICTS)}", verdict)
    severity = record.get("severity")
    if severity is not None and severity not in SEVERITIES:
        bad("severity", f"must be one of {', '.join(SEVERITIES)} (or left out)", severity)
    reason = record.get("reason")
    if reason is not None and not isinstance(reason, str):
        bad("reason", "must be text", reason)
    elif isinstance(reason, str) and len(reason) > MAX_REASON:
        bad("reason", f"at most {MAX_REASON} characters (got {len(reason)})")
    elif isinstance(reason, str) and any(_bad_text(ch) and ch not in "\n\t" for ch in reason):
        bad("reason", "no control characters (line breaks and tabs are fine)")
    replaces = record.get("replaces")
    if not isinstance(replaces, dict) or replaces.get("verdict") not in ("pass", "fail", "error"):
        bad("replaces", "required: {judge, verdict} of the verdict the decision replaces", replaces)
    elif verdict in ("pass", "fail") and verdict != replaces.get("verdict") and not (reason or "").strip():
        bad("reason", f"required when overturning a verdict ({replaces.get('verdict')} -> {verdict}): say why")
    if record.get("queue") is not None and record.get("queue") not in QUEUES:
        bad("queue", f"must be one of {', '.join(QUEUES)}", record.get("queue"))
    check_chain_fields(record, bad)
    if not problems and len(record_line(record)) + CHAIN_ROOM > MAX_LINE:  # read back as a torn line otherwise
        problems.append(Problem(label, where, f"the record is too long: a review line is at most {MAX_LINE} bytes"))
    return problems


def parse_lines(data: bytes, label: str) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The records of a review file and a problem for each line that is not one (a torn last line included);
    every other line still reads. Each line goes through the strict JSON decoder (nesting, duplicate keys,
    integer range, lone surrogates)."""
    records: list[dict[str, Any]] = []
    problems: list[Problem] = []
    lines = data.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"line {number}"
        torn = number == len(lines)  # no newline after it: the write was cut short
        reason = ""
        record: Any = None
        if len(line) > MAX_LINE:
            reason = f"longer than {MAX_LINE} bytes"
        else:
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                reason = f"not UTF-8 text (byte 0x{line[exc.start]:02x} at offset {exc.start})"
            else:
                record, found = parse_json_text(label, text, where)
                if record is None:
                    reason = found[0].message if found else "not JSON"
                    if "nesting is too deep" in reason:
                        reason = "nested too deeply to be a review record"
                elif found:  # read, but ambiguous (a key twice) or out of range: a problem, never applied
                    problems.extend(found)
                    continue
        if reason or record is None:
            # A write cut short (a crash) leaves a line that does not parse, the last one until the next append
            # starts a fresh line after it: either way it is reported and skipped, and the lines after it read.
            what = f"{UNREADABLE} (a write cut short?), skipped" + ("" if torn else f": {reason}")
            problems.append(Problem(label, where, what[:200]))
            continue
        found = check_record(record, where, label)
        if found:
            problems.extend(found)
            continue
        record["_line"] = number
        records.append(record)
    return records, problems


def read_reviews(path: Union[str, os.PathLike]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Every record of a review file, in file order, and every problem; a missing file has no records. A link,
    FIFO, folder or device of that name, or a file above the ``--max-file-mb`` cap, is a problem: never read."""
    label = str(path)
    try:
        data = read_companion(path)
    except (OSError, FileTooLarge) as exc:
        return [], [file_problem(label, exc)]
    if data is None:
        return [], []
    return parse_lines(data, label)


def file_problem(label: str, exc: BaseException) -> Problem:
    """The problem of a review file that cannot be opened, read or appended to."""
    if isinstance(exc, (CompanionFileError, FileTooLarge)):
        return Problem(label, "$", str(exc))
    from reporting.format.problems import unreadable

    return unreadable(label, exc)


def check_against_run(
    records: Sequence[dict[str, Any]],
    fingerprint: str,
    probe_ids: Iterable[str],
    label: str,
    judged: Optional[Mapping[str, str]] = None,
) -> list[Problem]:
    """A record for another run, or naming a probe the run does not have, is a problem: never applied.

    ``judged`` (probe id -> the run's verdict: pass, fail or error): a decision that differs from the run's own
    verdict is an overturn and needs a reason, whatever its ``replaces`` says; a ``replaces`` that misstates
    the run's verdict is a problem too."""
    known = set(probe_ids)
    problems = []
    for record in records:
        where = record.get("_where") or f"line {record.get('_line', '?')}"
        if record.get("run") != fingerprint:
            what = "the record is for another run (its fingerprint differs)"
            problems.append(Problem(label, f"{where}.run", what, record.get("run")))
        elif record["kind"] == "review" and record["probe_id"] not in known:
            what = "no case of the run has this probe id"
            problems.append(Problem(label, f"{where}.probe_id", what, record["probe_id"]))
        elif record["kind"] == "review" and judged is not None and record["probe_id"] in judged:
            actual = judged[record["probe_id"]]
            replaces = record.get("replaces")
            said = replaces.get("verdict") if isinstance(replaces, dict) else None
            if said != actual:
                what = f"says it replaces a {said} verdict, but the run's verdict on this case is {actual}"
                problems.append(Problem(label, f"{where}.replaces.verdict", what, said))
            verdict = record.get("verdict")
            reason = record.get("reason")
            if verdict in ("pass", "fail") and verdict != actual and not (isinstance(reason, str) and reason.strip()):
                what = f"required when overturning a verdict ({actual} -> {verdict}): say why"
                if not any(p.path == f"{where}.reason" for p in problems):
                    problems.append(Problem(label, f"{where}.reason", what))
    return problems


def judged_verdicts(run: Any, probes: Optional[Collection[str]] = None) -> dict[str, str]:
    """Probe id -> the run's own verdict (pass, fail or error), what a review decision replaces: of every case, or
    of the cases of ``probes`` the run has (read from their rows alone, for a run read by columns)."""
    from reporting.format.table_run import rows_for

    return {row["probe_id"]: replaced_verdict(row["passed"]) for row in rows_for(run, probes, ("probe_id", "passed"))}


def record_line(record: dict[str, Any]) -> bytes:
    clean = {k: v for k, v in record.items() if not k.startswith("_")}
    return (json.dumps(clean, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")


def append_records(path: Union[str, os.PathLike], records: Sequence[dict[str, Any]]) -> None:
    """Append records under an exclusive lock, in one write, after making sure the file ends with a newline (a torn
    last line stays a line of its own, reported on reading, and never swallows the new record). Each record is
    linked to the line before it under the same lock (``seq``, ``prev``; a sign-off's ``covers``: the chain of
    ``reporting.format.review_chain``), so concurrent writers still make one chain.

    Never through a link, never into a FIFO, folder or device, never into a file with other names (hard links):
    ``ReviewError`` naming the file, and nothing written."""
    import fcntl

    if not records:
        return
    try:
        fd = open_companion(path, append=True)
    except OSError as exc:
        raise ReviewError([file_problem(str(path), exc)]) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            seq, prev = tail_link(fd, size)
            payload = b"".join(link(records, seq, prev, str(records[0].get("run"))))
            if size and os.pread(fd, 1, size - 1) != b"\n":
                payload = b"\n" + payload
            written = 0
            while written < len(payload):
                written += os.write(fd, payload[written:])
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def merge(files: Sequence[tuple[str, bytes]]) -> tuple[list[dict[str, Any]], list[Problem], list[dict[str, Any]]]:
    """Several reviewers' files as one: the same record twice is kept once, in time order; conflicts (two people
    deciding one case differently, their latest decisions) are listed. Returns (records, problems, conflicts)."""
    seen: set[bytes] = set()
    merged: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for label, data in files:
        records, found = parse_lines(data, label)
        problems.extend(found)
        for record in records:
            bare = {k: v for k, v in record.items() if k != "_line" and k not in CHAIN_FIELDS}
            line = record_line(bare)  # the same record from two files, each linked in its own chain: kept once
            if line not in seen:
                seen.add(line)
                merged.append(bare)
    merged.sort(key=lambda r: (record_time(r), reviewer_key(r), r.get("probe_id", "")))
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for record in merged:
        if record["kind"] == "review":
            latest[(record["run"], record["probe_id"], reviewer_key(record))] = record
    by_case: dict[tuple[str, str], dict[str, str]] = {}
    for (run, probe, reviewer), record in latest.items():
        if record["verdict"] != "unsure":
            by_case.setdefault((run, probe), {})[reviewer] = record["verdict"]
    conflicts = [
        {"run": run, "probe_id": probe, "verdicts": dict(sorted(verdicts.items()))}
        for (run, probe), verdicts in sorted(by_case.items())
        if len(set(verdicts.values())) > 1
    ]
    return merged, problems, conflicts


def raise_problems(problems: list[Problem]) -> None:
    if problems:
        raise ReviewError(problems)


def new_record(kind: str, run_fingerprint: str, run_id: str, reviewer: str, time: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "run": run_fingerprint, "run_id": run_id, "reviewer": reviewer, "time": time, **fields}


def replaced_verdict(passed: Optional[bool]) -> str:
    return "error" if passed is None else ("pass" if passed else "fail")
