"""The field columns of a case frame made from a run's case table (``reporting.format.table_run``), with no case
object: what ``reporting.analysis.metrics`` makes from case objects, column for column, for the same run read the
other way (a test compares the two frames on every sample, imported and hostile run)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting._memory import give_back_between
from reporting.analysis.grouping import numbered
from reporting.format.parquet import LISTS, V3_FIELDS, plain_json_once
from reporting.format.schema import SEVERITIES, Case, Limit, Message, Verdict
from reporting.format.table_records import python_values
from reporting.format.table_run import TableCases

_FLOAT = {"risk_score", "severity_weight", "weighted_risk"}
_INT = {"safe_signal_hits", "unsafe_signal_hits"}
_BOOL = {"passed", "boundary_or_refusal_signal"}
_TEXTS = {"task", "probe_input", "response", "explanation"}
_GIVEN = ("severity_weight", "weighted_risk")  # the file's own values, not the table's effective ones


def _objects(values: Any) -> pd.Series:
    """Plain object values (a list stays one value, never a row of a 2-D array); an object array made for the column
    as it is (no copy of 80 MB at ten million cases), unless it is read-only (one value seen n times): a derived
    finding is written into a case's failure modes in place."""
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1 and values.flags.writeable:
        return pd.Series(values, dtype=object, copy=False)
    return pd.Series(np.fromiter(values, dtype=object, count=len(values)), dtype=object, copy=False)


SEEN_AT_MOST = 1 << 20  # distinct texts a column's chunks share (a dictionary of at most about 100 MB)


def _shared_texts(column: Any) -> pd.Series:
    """A text column as Python strings (None for a null), one ``str`` object per distinct text of each chunk (of the
    column, where its texts repeat within each chunk: a JSON Lines run of ten million cases is a thousand chunks),
    shared by every row that holds it: a task, an input or a category repeated across a run's cases (a probe's prompt
    over its generations, a suite over its repetitions) is held once, not once a case. The values are the same
    strings as ``column.to_pylist()`` gives, element for element."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.empty(len(column), dtype=object)
    at = 0
    seen: dict[str, str] = {}  # texts that repeat within their chunks, held once across chunks too
    made: dict[tuple[int, ...], np.ndarray] = {}  # per dictionary (chunks that share one: the reader's)
    for chunk in column.chunks:
        encoded = pc.dictionary_encode(chunk)
        words = encoded.dictionary
        key = (*(b.address if b is not None else 0 for b in words.buffers()), words.offset, len(words))
        texts = made.get(key)
        if texts is None:
            texts = np.empty(len(words) + 1, dtype=object)
            values = words.to_pylist()
            if column.num_chunks > 1 and 2 * len(values) <= len(chunk):
                values = [seen.setdefault(v, v) if len(seen) < SEEN_AT_MOST else seen.get(v, v) for v in values]
            texts[:-1] = values
            texts[-1] = None  # a null's index is -1 below: the last entry
            if pa.types.is_dictionary(chunk.type):
                made[key] = texts  # (a dictionary the column holds: alive, so its buffers' addresses are its own)
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


_BITS = 62  # numbers of verdicts and rows stay below 2**_BITS (int64)


def _whole(column: Any, make: Any) -> Any:
    """``make`` of a column's values as one array, or chunk by chunk where one array cannot hold them (Arrow's
    32-bit offsets: more than 2 GB of text in one column)."""
    import pyarrow as pa

    if not isinstance(column, pa.ChunkedArray):
        return make(column)
    try:
        values = _combined(column)
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return np.concatenate([_objects(make(chunk)).to_numpy() for chunk in column.chunks])
    return make(values)


def _combined(column: Any) -> Any:
    return column.combine_chunks()


def _verdict_maps(column: Any) -> Any:
    """``_verdicts`` of a verdicts column, each distinct row made into Python objects once (a million garak cases
    hold a few hundred distinct rows of verdicts). Rows are told apart by numbers: each verdict's judge, passed,
    score and explanation numbered by their distinct values, a row by its verdicts' numbers in order."""
    return _whole(column, _array_verdict_maps)


def _array_verdict_maps(values: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    found = _distinct_rows(lengths, lambda: _verdict_codes(values.flatten()))
    if found is None:  # no verdicts at all, or rows too wide or values too many to number: each row as it is
        return _verdicts(values.to_pylist()) if lengths.any() else [{}] * len(values)
    first, which = found
    made = np.empty(len(first), dtype=object)
    made[:] = _verdicts(pc.take(values, pa.array(first)).to_pylist())
    return made[which]


def shared_lists(column: Any, empty: list) -> Any:
    """A list column of texts as Python lists (``python_values``; ``empty`` the one empty list), each distinct list
    made once and shared by the rows that hold it (a failure mode, a detector's patterns over a run's cases),
    which nothing changes; a null row None."""
    return _whole(column, lambda values: _array_shared_lists(values, empty))


def _array_shared_lists(values: Any, empty: list) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    nulls = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None

    def codes() -> np.ndarray:
        encoded = pc.dictionary_encode(values.flatten())
        return pc.fill_null(encoded.indices, len(encoded.dictionary)).to_numpy(zero_copy_only=False)

    found = _distinct_rows(lengths, codes, nulls)
    if found is None:
        return _objects(python_values(values, empty=empty)).to_numpy()
    first, which = found
    made = np.empty(len(first), dtype=object)
    made[:] = python_values(pc.take(values, pa.array(first)), empty=empty)
    return made[which]


def _distinct_rows(lengths: np.ndarray, codes: Any, nulls: Optional[np.ndarray] = None) -> Optional[tuple]:
    """The first row of each distinct row of a list column and each row's number among them (in order of first
    appearance), the rows given by their lengths and their items' numbers (``codes()``: one number >= 0 per item,
    equal for equal items) and ``nulls`` (a null row is not an empty one). None: no row has an item, a row has
    more than 16, or the numbers do not fit in 62 bits."""
    n = len(lengths)
    widest = int(lengths.max()) if n else 0
    if not 0 < widest <= 16:
        return None
    items = codes()
    if items is None:
        return None
    starts = np.cumsum(lengths) - lengths
    size = int(items.max()) + 2 if len(items) else 2
    if 2 * size**widest < 1 << _BITS:  # a row as one number, a place at a time: told apart by hashing, not sorting
        key = np.zeros(n, dtype=np.int64) if nulls is None else nulls.astype(np.int64)  # place 0: null or not
        for place in range(widest):  # then each item's number + 1 in its place (0: no item there)
            has = np.flatnonzero(lengths > place)
            digit = np.zeros(n, dtype=np.int64)
            digit[has] = items[starts[has] + place] + 1
            key = key * size + digit
            del has, digit
        which, first = numbered(key)
    else:  # the rows as a matrix of their places, sorted
        owner = np.repeat(np.arange(n), lengths)
        rows = np.zeros((n, widest + 1), dtype=np.int64)
        if nulls is not None:
            rows[:, 0] = nulls
        rows[owner, 1 + np.arange(len(owner)) - starts[owner]] = items + 1
        _, first, which = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return first, which.reshape(-1)


def _verdict_codes(items: Any) -> Optional[np.ndarray]:
    """One number per verdict (a struct of the flattened column), equal for equal verdicts; None when the
    distinct values are too many to number in 62 bits."""
    import pyarrow.compute as pc

    judge, passed, score, explanation = items.flatten()
    parts = []
    for texts in (judge, explanation):
        encoded = pc.dictionary_encode(texts)
        size = len(encoded.dictionary) + 1  # the last: null
        parts.append((pc.fill_null(encoded.indices, size - 1).to_numpy(zero_copy_only=False), size))
    parts.append((pc.fill_null(pc.cast(passed, "int8"), 2).to_numpy(zero_copy_only=False), 3))
    numbers = score.to_numpy(zero_copy_only=False).astype(np.float64)
    index, distinct = pd.factorize(numbers.view(np.int64))  # by bits (``_verdicts`` then merges equal values)
    parts.append((index, len(distinct)))
    parts.append((score.is_null().to_numpy(zero_copy_only=False), 2))
    code = np.zeros(len(items), dtype=np.int64)
    radix = 1
    for part, size in parts:
        radix *= size
        if radix >= 1 << _BITS:
            return None
        code = code * size + part.astype(np.int64)
    return code


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
) -> tuple[dict[str, Any], np.ndarray, Optional[np.ndarray]]:
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
    distinct, index = _distinct_extras(table.column("extra"))
    data: dict[str, Any] = {}
    empty: list = []  # held by every case whose list is empty (a derived mode replaces a case's list, never appends)
    any_fields = any(distinct)
    nothing = _Nothing(n)
    for name in Case.model_fields:
        if name in V3_FIELDS:  # made once per distinct extra, shared by its rows
            values = _objects([_v3(name, fields.get(name)) for fields in distinct]) if any_fields else None
            data[name] = nothing() if values is None else pd.Series(values.to_numpy()[index], dtype=object, copy=False)
            continue
        if name in _TEXTS and not texts:
            data[name] = nothing()
            continue
        column = (given if name in _GIVEN else table).column(name)
        if name in _FLOAT:
            data[name] = _floats(column)
        elif name in _INT:  # the table's own memory where it is one chunk of int64 with no null (read-only)
            data[name] = column.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        elif name in _BOOL:
            data[name] = pc.fill_null(column, False).to_numpy(zero_copy_only=False).astype(bool)
        elif name == "verdicts":  # (no case judged by another: one empty mapping seen n times, as ``_Nothing``)
            judged = n and pc.max(pc.fill_null(pc.list_value_length(column), 0)).as_py()
            data[name] = _objects(_verdict_maps(column)) if judged else _one({}, n)
            give_back_between(n)
        elif name in LISTS:
            data[name] = _objects(shared_lists(column, empty))
            give_back_between(n)  # (a list column's distinct rows are found over its whole combined column)
        elif name == "probe_id":  # one a case: held as Arrow text (``metrics.probe_ids``), not one object a case
            data[name] = pd.Series(pd.array(column, dtype="str"), copy=False)
        elif name == "severity":  # the tiers' numbers (``metrics._frame``'s categories), not a string a case
            data[name] = _tiers(column)
        elif column.null_count == n:  # a text no case has: a run with no probe groups, no source ids (most runs)
            data[name] = nothing()
        else:
            data[name] = _shared_texts(column)
            give_back_between(n)
    if evaluated:  # the effective weight and weighted risk, as the reader made them (``metrics._frame``'s own)
        data["effective_weight"], data["effective_risk"] = (_floats(table.column(k)) for k in _GIVEN)
    unknown: dict[int, dict[str, Any]] = {}  # per decoded value (by identity: shared as the values are)
    for fields in distinct:
        if id(fields) not in unknown:
            unknown[id(fields)] = {k: v for k, v in fields.items() if k not in V3_FIELDS}
    extras = _objects([unknown[id(fields)] for fields in distinct]).to_numpy()[index]  # one array, no tuple of it
    return data, extras, positions


def _tiers(column: Any) -> pd.Categorical:
    """A severity column as ``metrics._frame`` holds it, an ordered categorical of ``SEVERITIES`` (a value not among
    them, or null: no category), made from the column's numbers in the list, not from a Python string a case."""
    import pyarrow as pa
    import pyarrow.compute as pc

    codes = pc.fill_null(pc.index_in(column, value_set=pa.array(SEVERITIES)), -1)
    return pd.Categorical.from_codes(
        codes.to_numpy(zero_copy_only=False).astype(np.int8), categories=SEVERITIES, ordered=True
    )


def _one(value: Any, n: int) -> pd.Series:
    """``value`` seen ``n`` times: a read-only view of one object (numpy's stride 0), 8 bytes, not 8 a case."""
    held = np.empty(1, dtype=object)
    held[0] = value
    return pd.Series(np.broadcast_to(held, (n,)), dtype=object, copy=False)


class _Nothing:
    """One value, None, seen ``n`` times: a read-only view of one object (numpy's stride 0), held by every column of
    a frame that has no value in any row (a run's version 3 fields, probe groups or source ids when it names none;
    the texts left out of a figures' frame): 8 bytes, not 8 bytes a case a column (80 MB a column at ten million
    cases). The frame's columns are read, replaced or copied, never written in place: a write would raise."""

    __slots__ = ("_view",)

    def __init__(self, n: int) -> None:
        self._view = _one(None, n).to_numpy()

    def __call__(self) -> pd.Series:
        return pd.Series(self._view, dtype=object, copy=False)


def _floats(column: Any) -> np.ndarray:
    """A column of numbers as float64, nulls NaN: the table's own memory where it is one chunk with no null (a
    read-only view), one NaN seen n times where every value is null, else a copy."""
    import pyarrow as pa

    n = len(column)
    if column.null_count == n:  # (a file that gives no weighted risk: most)
        return np.broadcast_to(np.float64("nan"), (n,))
    if column.num_chunks == 1 and not column.null_count and pa.types.is_float64(column.type):
        return column.chunk(0).to_numpy(zero_copy_only=True)
    return column.to_numpy(zero_copy_only=False).astype(float)


def _distinct_extras(column: Any) -> tuple[list[Any], np.ndarray]:
    """The decoded values of a column of ``extra`` texts, one per distinct text of each chunk ({} for a null), and
    each row's place among them: rows with the same ``extra`` (a garak probe's tags, strategy and plugin over its
    attempts) share one decoded value, which nothing changes."""
    import pyarrow.compute as pc

    decode = plain_json_once()  # a text found in several chunks is decoded once too
    distinct: list[Any] = []
    index = np.empty(len(column), dtype=np.int64)
    at = 0
    for chunk in column.chunks:
        encoded = pc.dictionary_encode(chunk)
        found = encoded.dictionary.to_pylist()
        where = pc.fill_null(encoded.indices, len(found)).to_numpy(zero_copy_only=False)
        index[at : at + len(chunk)] = where + len(distinct)
        distinct += [decode(text) for text in found] + [decode(None)]
        at += len(chunk)
    return distinct, index
