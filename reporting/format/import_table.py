"""A run an importer makes (a header and its cases as JSON-ready dicts, streamed) written as a Parquet case table:
``import FILE -o RUN.parquet``. The same table ``recompute --format parquet`` writes of the run read from the JSON
``import`` would write (``parquet.case_table``: effective weights, recomputed weighted risks, version 3 fields and
the case's own fields beyond the format's in ``extra``), made a batch of cases at a time, so memory is a batch's,
and read back by every verb by columns (docs/scale.md).

A case whose every field is of the format's plain kind (texts, flags, finite numbers in range, lists of texts,
verdicts of the three fields) becomes its row directly; any other case (a conversation, a limit, fields beyond the
format's, a severity to normalise, anything out of range) is validated by the format's model first and made its row
from the case object, exactly as ``case_table`` does; a case the model refuses is a problem naming the case's path
and field, and nothing is written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO, Optional

from pydantic import ValidationError

from reporting.format.parquet import (
    CASE_COLUMNS,
    LISTS,
    RUN_METADATA_KEY,
    SCHEMA_VERSION_KEY,
    TOOL_FIGURES_KEY,
    V3_FIELDS,
    case_row,
    case_schema,
)
from reporting.format.problems import InputError, Problem
from reporting.format.schema import MAX_INTEGER, MAX_SEVERITY_WEIGHT, SEVERITIES, Case, RunMeta
from reporting.format.severity import DEFAULT_SEVERITY_WEIGHTS, weighted_risk

BATCH = 65_536  # cases a row group
TEXTS = ("probe_group", "error", "task", "probe_input", "response", "explanation", "source_id")
KNOWN = frozenset(
    ("probe_id", "category", "severity", "passed", "risk_score", "severity_weight", "weighted_risk")
    + ("safe_signal_hits", "unsafe_signal_hits", "boundary_or_refusal_signal", "verdicts")
    + TEXTS
    + LISTS
    + ("strategy", "plugin", "tags", "judged_turn")
)
BOUND = float(MAX_SEVERITY_WEIGHT)
REQUIRED = ("probe_id", "category", "severity", "passed", "risk_score")
VERDICT_KEYS = frozenset(("passed", "score", "explanation"))
V3_PLAIN = tuple(name for name in V3_FIELDS if name not in ("messages", "limit"))  # (those two: validated)


def header_metadata(header: Mapping[str, Any], label: str) -> dict[bytes, bytes]:
    """``parquet.table_metadata`` of the run the header heads: its ``run`` validated by the format's model, and every
    field of the header checked as the reader checks it (finite numbers, nesting at most 64 deep)."""
    from reporting.format.reading import _check_header

    problems: list[Any] = []
    _check_header(label, {k: v for k, v in header.items() if k != "cases"}, problems)
    if problems:
        raise InputError(problems)
    try:
        meta = RunMeta.model_validate(header["run"])
    except ValidationError as error:
        raise InputError(_problems(label, "$.run", error)) from None
    metadata = {
        RUN_METADATA_KEY: json.dumps(meta.model_dump(mode="json", exclude_none=True)).encode(),
        SCHEMA_VERSION_KEY: b"3",
    }
    if header.get("tool_figures"):
        metadata[TOOL_FIGURES_KEY] = json.dumps(header["tool_figures"]).encode()
    return metadata


def write_import_table(handle: BinaryIO, header: Mapping[str, Any], cases: Iterable[Any], label: str) -> int:
    """The run written to ``handle`` as a Parquet case table; the number of cases. Raises ``InputError`` (the
    file's problems) for a case the format refuses."""
    import pyarrow.parquet as pq

    schema = case_schema().with_metadata(header_metadata(header, label))
    rows: list[tuple] = []
    count = 0
    extras: dict[tuple, Any] = {}  # the version 3 fields' JSON by their values (a probe's cases share them)
    with pq.ParquetWriter(handle, schema, compression="zstd") as writer:
        for count, case in enumerate(cases, 1):
            rows.append(_plain_row(case, extras) or _validated_row(case, count - 1, label))
            if len(rows) == BATCH:
                writer.write_table(_table(schema, rows, count - BATCH, label))
                rows = []
                if len(extras) > 4096:
                    extras.clear()
        if rows or not count:
            writer.write_table(_table(schema, rows, count - len(rows), label))
    return count


def _table(schema: Any, rows: list[tuple], first: int, label: str) -> Any:
    """The rows as an Arrow table of the case table's schema (each column made from its values in one pass)."""
    import pyarrow as pa

    columns = list(zip(*rows)) if rows else [()] * len(schema)
    try:
        return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema)], schema=schema)
    except (pa.ArrowException, UnicodeError) as exc:  # a text no UTF-8 can hold (a lone surrogate)
        where = f"$.cases[{first}:{first + len(rows)}]"
        what = f"cannot be stored as Parquet ({type(exc).__name__}: a text not UTF-8?)"
        raise InputError(Problem(label, where, what)) from None


NONE = object()  # a field the case does not give


def _plain_row(case: Any, extras: dict[tuple, Any]) -> Optional[tuple]:
    """The case's row (in ``CASE_COLUMNS`` order) when every field is of its plain kind, else None."""
    if type(case) is not dict or not KNOWN.issuperset(case):
        return None
    get = case.get
    probe_id, category, severity = get("probe_id"), get("category"), get("severity")
    passed, risk = get("passed", NONE), get("risk_score", NONE)
    if type(probe_id) is not str or not probe_id or type(category) is not str or severity not in SEVERITIES:
        return None
    if passed is None:
        if risk is not None or type(get("error")) is not str:
            return None
    elif type(passed) is not bool or type(risk) is not float or not 0.0 <= risk <= 1.0:
        return None
    weight, stored = get("severity_weight"), get("weighted_risk")
    if weight is not None and not (type(weight) is float and 0.0 <= weight <= BOUND):
        return None
    if stored is not None and not (type(stored) is float and -BOUND <= stored <= BOUND):
        return None
    safe, unsafe, boundary = get("safe_signal_hits", 0), get("unsafe_signal_hits", 0), get(BOUNDARY, False)
    if type(safe) is not int or type(unsafe) is not int or type(boundary) is not bool:
        return None
    if not (0 <= safe <= MAX_INTEGER and 0 <= unsafe <= MAX_INTEGER):
        return None
    group, error, task, asked = get("probe_group"), get("error"), get("task"), get("probe_input")
    answer, why, source = get("response"), get("explanation"), get("source_id")
    for text in (group, error, task, asked, answer, why, source):
        if text is not None and type(text) is not str:
            return None
    safe_patterns, unsafe_patterns = get("matched_safe_patterns", EMPTY), get("matched_unsafe_patterns", EMPTY)
    detected, modes = get("detected_failure_modes", EMPTY), get("failure_modes", EMPTY)
    for items in (safe_patterns, unsafe_patterns, detected, modes):
        if type(items) is not list:
            return None  # (null where the format wants a list: the model says so)
        for item in items:
            if type(item) is not str:
                return None
    verdicts = _verdicts(get("verdicts", NONE))
    if verdicts is None:
        return None
    turn, tags = get("judged_turn"), get("tags")
    key = (type(turn), turn, get("strategy"), get("plugin"), tuple(tags) if type(tags) is list else tags)
    try:
        extra = extras[key]
    except KeyError:
        extra = extras[key] = _plain_extra(case)
    except TypeError:  # (a field that cannot be a key is no text, number or list of texts: the model says what)
        return None
    if extra is False:
        return None
    if passed is None:
        weight = weighted = None
    else:
        weight = float(weight if weight is not None else DEFAULT_SEVERITY_WEIGHTS[severity])
        weighted = float(weighted_risk(risk, weight))
    return (
        None,
        probe_id,
        group,
        category,
        severity,
        passed,
        risk,
        weight,
        weighted,
        error,
        task,
        asked,
        answer,
        why,
        source,
        safe,
        unsafe,
        boundary,
        safe_patterns,
        unsafe_patterns,
        detected,
        modes,
        verdicts,
        extra,
    )


BOUNDARY = "boundary_or_refusal_signal"
EMPTY: list[str] = []  # (never changed: a case without the list shares it)


def _verdicts(verdicts: Any) -> Optional[list[dict[str, Any]]]:
    if verdicts is NONE:
        return []
    if type(verdicts) is not dict:
        return None
    out = []
    for judge, verdict in verdicts.items():
        if type(judge) is not str or type(verdict) is not dict or not VERDICT_KEYS.issuperset(verdict):
            return None
        passed, score, why = verdict.get("passed"), verdict.get("score"), verdict.get("explanation")
        if passed is not None and type(passed) is not bool or why is not None and type(why) is not str:
            return None
        if score is not None and not (type(score) is float and math.isfinite(score)):
            return None  # (an integer score is kept as given by the model's path: Parquet holds it as a float)
        out.append({"judge": judge, "passed": passed, "score": score, "explanation": why})
    return out


def _plain_extra(case: dict[str, Any]) -> Any:
    """``parquet._extra_json`` of a plain case's version 3 fields (None without any), or False when one is not plain."""
    extra: dict[str, Any] = {}
    for name in V3_PLAIN:
        value = case.get(name)
        if value is None:
            continue
        if name == "tags":
            if type(value) is not list or not all(type(tag) is str for tag in value):
                return False
        elif name == "judged_turn":
            if type(value) is not int or value < 0:
                return False
        elif type(value) is not str:
            return False
        extra[name] = value
    return json.dumps(extra) if extra else None


def _validated_row(case: Any, index: int, label: str) -> tuple:
    """The row ``parquet.case_table`` makes of the case the format's model reads from ``case``."""
    try:
        model = Case.model_validate(case)
    except ValidationError as error:
        raise InputError(_problems(label, f"$.cases[{index}]", error)) from None
    if model.passed is None and model.risk_score is not None:  # (what the reader of the JSON refuses too)
        what = "a case not evaluated (passed null) gives no risk"
        raise InputError(Problem(label, f"$.cases[{index}].risk_score", what))
    row = case_row(model)
    return tuple(row[name] for name in CASE_COLUMNS)


def _problems(label: str, prefix: str, error: ValidationError) -> list[Any]:
    from reporting.format.reading import _problems_from_validation

    return _problems_from_validation(label, prefix, error)
