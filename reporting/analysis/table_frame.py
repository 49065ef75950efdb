"""The field columns of a case frame made from a run's case table (``reporting.format.table_run``), with no case
object: what ``reporting.analysis.metrics`` makes from case objects, column for column, for the same run read the
other way (a test compares the two frames on every sample, imported and hostile run)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting.format.parquet import LISTS, V3_FIELDS, plain_json_once
from reporting.format.schema import Case, Limit, Message, Verdict
from reporting.format.table_records import python_values
from reporting.format.table_run import TableCases

_FLOAT = {"risk_score", "severity_weight", "weighted_risk"}
_INT = {"safe_signal_hits", "unsafe_signal_hits"}
_BOOL = {"passed", "boundary_or_refusal_signal"}
_TEXTS = {"task", "probe_input", "response", "explanation"}
_GIVEN = {"severity_weight", "weighted_risk"}  # the file's own values, not the table's effective ones


def _objects(values: Any) -> pd.Series:
    """Plain object values (a list stays one value, never a row of a 2-D array)."""
    return pd.Series(np.fromiter(values, dtype=object, count=len(values)), dtype=object, copy=False)


def _shared_texts(column: Any) -> pd.Series:
    """A text column as Python strings (None for a null), one ``str`` object per distinct text of each chunk, shared
    by every row that holds it: a task, an input or a category repeated across a run's cases (a probe's prompt
    over its generations, a suite over its repetitions) is held once, not once a case. The values are the same
    strings as ``column.to_pylist()`` gives, element for element."""
    import pyarrow.compute as pc

    out = np.empty(len(column), dtype=object)
    at = 0
    for chunk in column.chunks:
        encoded = pc.dictionary_encode(chunk)
        texts = np.empty(len(encoded.dictionary) + 1, dtype=object)
        texts[:-1] = encoded.dictionary.to_pylist()
        texts[-1] = None  # a null's index is -1 below: the last entry
        indices = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
        out[at : at + len(chunk)] = texts[indices]
        at += len(chunk)
    return pd.Series(out, dtype=object, copy=False)


def _verdicts(rows: list[Optional[list[dict[str, Any]]]]) -> list[dict[str, Verdict]]:
    """Each row's verdicts, judge -> Verdict. The columnar reader checked each verdict as the schema would (types,
    finite scores), so they are built, not validated again (a test compares these frames with the per-record
    reader's, field for field); rows whose verdicts are the same (a detector's verdicts repeat over a run's
    attempts) share one mapping, which nothing changes."""
    made: dict[tuple, dict[str, Verdict]] = {}
    out: list[dict[str, Verdict]] = []
    for row in rows:
        key = tuple((str(v["judge"]), v["passed"], v["score"], v["explanation"]) for v in row) if row else ()
        found = made.get(key)
        if found is None:
            found = made[key] = {
                judge: Verdict.model_construct(passed=passed, score=score, explanation=explanation)
                for judge, passed, score, explanation in key
            }
        out.append(found)
    return out


def _v3(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "messages":
        return [Message.model_validate(turn) for turn in value]
    if name == "limit":
        return Limit.model_validate(value)
    return value


def table_columns(
    cases: Any, evaluated: bool, texts: bool = True
) -> tuple[dict[str, Any], tuple, Optional[np.ndarray]]:
    """The evaluated cases' field columns (``evaluated``), or those of the cases not evaluated with their errors;
    each case's unknown fields; the cases' positions in the run (None: every case, in order). ``cases``: a run's
    ``TableCases``. ``texts=False``: the text columns are None (the figures never read them)."""
    assert isinstance(cases, TableCases)
    import pyarrow.compute as pc

    table, given = cases.table, cases.columnar.given
    judged = pc.is_valid(table.column("passed"))
    keep = judged if evaluated else pc.invert(judged)
    kept = int(pc.sum(keep).as_py() or 0)
    positions: Optional[np.ndarray] = None
    if kept != table.num_rows or not evaluated:
        positions = np.flatnonzero(keep.to_numpy(zero_copy_only=False)).astype(np.int64)
        table, given = table.filter(keep), given.filter(keep)
    n = table.num_rows
    decode = plain_json_once()  # each distinct extra decoded once, shared by the rows that hold it
    parsed = [decode(text) for text in _shared_texts(table.column("extra"))]
    del decode
    data: dict[str, Any] = {}
    empty: list = []  # held by every case whose list is empty (a derived mode replaces a case's list, never appends)
    any_fields = any(parsed)
    for name in Case.model_fields:
        if name in V3_FIELDS:
            values = [_v3(name, fields.get(name)) for fields in parsed] if any_fields else [None] * n
            data[name] = _objects(values)
            continue
        if name in _TEXTS and not texts:
            data[name] = _objects([None] * n)
            continue
        column = (given if name in _GIVEN else table).column(name)
        if name in _FLOAT:
            data[name] = column.to_numpy(zero_copy_only=False).astype(float)  # nulls become NaN
        elif name in _INT:
            data[name] = column.to_numpy(zero_copy_only=False).astype(np.int64)
        elif name in _BOOL:
            data[name] = pc.fill_null(column, False).to_numpy(zero_copy_only=False).astype(bool)
        elif name == "verdicts":
            data[name] = _objects(_verdicts(column.to_pylist()))
        elif name in LISTS:
            data[name] = _objects(python_values(column, empty=empty))
        elif name == "probe_id":  # one a case: nothing to share
            data[name] = _objects(column.to_numpy(zero_copy_only=False))
        else:
            data[name] = _shared_texts(column)
    unknown: dict[int, dict[str, Any]] = {}  # per decoded value (by identity: shared as the values are)
    for fields in parsed:
        if id(fields) not in unknown:
            unknown[id(fields)] = {k: v for k, v in fields.items() if k not in V3_FIELDS}
    extras = tuple(unknown[id(fields)] for fields in parsed)
    return data, extras, positions
