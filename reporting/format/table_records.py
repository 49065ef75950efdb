"""A case table's rows as the run file holds its cases (``Case.model_dump(mode="json")``), made a column at a time.

``parquet.case_records`` makes a case document a row at a time, and ``TableCases`` turned each into the dump's shape
with a second dict: three dicts and a loop over every field per case, 22 s of writing a million cases. Here each
field's values are one list for the whole chunk (defaults put in where the column is null, the fields a row's
``extra`` carries taken from its decoded text, decoded once per distinct text), and each case is one ``dict(zip())``.
A row whose ``extra`` names one of the table's own columns (the per-row merge decides which wins) is made the
per-row way; the result is the same dict in every case (tests/test_table_run.py compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from reporting.format.parquet import REQUIRED, case_records, plain_json_once
from reporting.format.schema import Case

FIELDS = tuple(Case.model_fields)
FIELD_SET = frozenset(FIELDS)
DEFAULTS = {name: field.get_default(call_default_factory=True) for name, field in Case.model_fields.items()}


def default(name: str) -> Any:
    """A field's default as ``model_dump`` gives it (a new empty list where the default is one)."""
    value = DEFAULTS[name]
    return [] if isinstance(value, list) else value


def dump_row(record: dict[str, Any]) -> dict[str, Any]:
    """A case document (``case_records``) in the dump's shape: every field in the schema's order (its default where
    the document has none), then the case's own extra fields."""
    dumped = {name: record[name] if name in record else default(name) for name in FIELDS}
    dumped.update((key, value) for key, value in record.items() if key not in FIELD_SET)
    return dumped


def unused_left_out(record: dict[str, Any], none: Sequence[str] = (), empty: Sequence[str] = ()) -> dict[str, Any]:
    """``record`` without the fields of ``none`` that are None and those of ``empty`` that are empty."""
    for name in none:
        if name in record and record[name] is None:
            del record[name]
    for name in empty:
        if name in record and not record[name]:
            del record[name]
    return record


def dumped_rows(
    rows: Any, label: str, first: int = 0, none: Sequence[str] = (), empty: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Every row of ``rows`` (a slice of the columnar reader's case table) in the dump's shape, without the fields
    of ``none`` where they are None and of ``empty`` where they are empty (``unused_left_out``): a field no row of
    the slice uses is never put in."""
    count = rows.num_rows
    keep = [c for c in rows.column_names if c != "run_key"]
    columns = {name: python_values(rows.column(name)) for name in keep if name != "verdicts"}
    if "verdicts" in keep:
        columns["verdicts"] = verdict_maps(rows.column("verdicts"))
    texts = columns.get("extra") or [None] * count
    decode = plain_json_once()
    extras = [decode(text) if text else None for text in texts]
    own = {c for c in keep if c != "extra"}
    # Per distinct decoded extra (shared by the rows of one text): whether it names a column (made the per-row way)
    # and its keys that are no field of the schema (the case's own extras, in the text's order).
    per_extra: dict[int, tuple[bool, list[tuple[str, Any]]]] = {}
    for extra in extras:
        if extra is not None and id(extra) not in per_extra:
            named = isinstance(extra, dict) and not own.isdisjoint(extra)
            tail = [(k, v) for k, v in extra.items() if k not in FIELD_SET] if isinstance(extra, dict) else []
            per_extra[id(extra)] = (named, tail)
    carried = {k for extra in extras if isinstance(extra, dict) for k in extra}
    values = []
    for name in FIELDS:
        if name == "verdicts" and "verdicts" in columns:
            fixed = DEFAULTS["verdicts"]
            values.append([v or fixed for v in columns["verdicts"]])
        elif name in columns and name != "extra":
            column, fallback = columns[name], DEFAULTS[name]
            if name in REQUIRED or None not in column:
                values.append(column)
            elif isinstance(fallback, list):
                values.append([[] if v is None else v for v in column])
            else:
                values.append([fallback if v is None else v for v in column])
        elif name in carried:
            fallback = DEFAULTS[name]
            assert not isinstance(fallback, list), name  # the carried fields' defaults are None
            values.append([e.get(name, fallback) if isinstance(e, dict) else fallback for e in extras])
        else:
            fallback = DEFAULTS[name]
            values.append([[] for _ in range(count)] if isinstance(fallback, list) else [fallback] * count)
    names, some_none, some_empty = [], [], []
    for name, column in zip(FIELDS, values):
        if name in none and column.count(None) == count:
            continue  # None in every row: left out of each
        if name in empty and not any(column):
            continue
        names.append((name, column))
        if name in none and None in column:
            some_none.append(name)
        elif name in empty and not all(column):
            some_empty.append(name)
    keys = [name for name, _ in names]
    records = [dict(zip(keys, row)) for row in zip(*(column for _, column in names))]
    if some_none or some_empty:
        records = [unused_left_out(record, some_none, some_empty) for record in records]
    for i, extra in enumerate(extras):
        if extra is None:
            continue
        named, tail = per_extra[id(extra)]
        if named:
            problems: list[Any] = []
            record = dump_row(case_records(rows.slice(i, 1), label, problems, first=first + i, ours=True)[0])
            records[i] = unused_left_out(record, none, empty)
        elif tail:
            records[i].update(tail)
    return records


def _single(column: Any) -> Any:
    return column.combine_chunks() if hasattr(column, "combine_chunks") else column


def offsets_from_zero(array: Any) -> Any:
    """A list array's row boundaries in its items (``list_items``), which start at the slice."""
    offsets = array.offsets.to_numpy()
    return offsets - offsets[0]


def list_items(array: Any) -> Any:
    """A list array's items from its first row's start to its last row's end, as its offsets count them: a null row
    whose span is not empty keeps its items here (``array.flatten()`` drops them, and every later row would take
    the wrong items)."""
    offsets = array.offsets.to_numpy()
    return array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


DISTINCT_LEAST = 1024  # per_distinct looks for repeats in arrays of this many texts or more


def per_distinct(values: Any, make: Any, encoded: bool = False) -> Any:
    """``make(values)`` for an Arrow array of texts, made over its distinct texts and taken back to every row where
    they repeat (a probe's tags, plugin or prompt over its attempts): the same array, nulls null. ``make`` maps each
    text to one value alone (escaping, quoting). ``encoded``: where they repeat, a dictionary array of the distinct
    values made (``joined_rows`` then reads them without looking for the repeats again)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(values) < DISTINCT_LEAST or not isinstance(values, pa.Array):
        return make(values)
    distinct = pc.dictionary_encode(values)
    if 2 * len(distinct.dictionary) > len(values):
        return make(values)
    if encoded:
        return pa.DictionaryArray.from_arrays(distinct.indices, make(distinct.dictionary))
    return pc.take(make(distinct.dictionary), distinct.indices)


def _spans(array: Any) -> list[int]:
    return offsets_from_zero(array).tolist()


def python_values(column: Any, empty: Optional[list] = None) -> list[Any]:
    """A column as Python values, like ``to_pylist``; a list column by its flat values and offsets (Arrow makes
    each row's list one at a time: 0.11 s a 100,000 rows, mostly empty, against 0.01 s). ``empty``: the one list
    every empty row holds (a frame's columns, which nothing changes: 56 bytes a row saved), else a new one each."""
    import pyarrow as pa

    if not pa.types.is_list(column.type):
        if not isinstance(column, pa.ChunkedArray):
            return plain_values(column)
        values: list[Any] = []
        for chunk in column.chunks:  # each by its own dictionary, if any
            values.extend(plain_values(chunk))
        return values
    array = _single(column)
    flat, spans = plain_values(list_items(array)), _spans(array)
    lists: list[Any]
    if empty is None:
        lists = [flat[a:b] for a, b in zip(spans, spans[1:])]
    else:
        lists = [flat[a:b] if a != b else empty for a, b in zip(spans, spans[1:])]
    if array.null_count:
        for i in array.is_null().to_numpy(zero_copy_only=False).nonzero()[0].tolist():
            lists[i] = None
    return lists


def plain_values(array: Any) -> list[Any]:
    """An Arrow array as Python values, like ``to_pylist``; a dictionary array by its dictionary's values taken to
    its rows (Arrow makes a scalar a row of one: 4 s a million rows, against 0.1 s), a row's text then one string
    wherever it repeats. A dictionary longer than the array (a slice of a run's column, a few rows taken) is taken
    to the rows first: the rows' values alone are made."""
    import pyarrow as pa

    if not pa.types.is_dictionary(array.type):
        return array.to_pylist()
    if len(array.dictionary) > len(array):
        return array.dictionary_decode().to_pylist()
    words = np.empty(len(array.dictionary) + 1, dtype=object)
    words[:-1] = array.dictionary.to_pylist()  # the last: None, for a null row
    indices = array.indices
    at = indices.to_numpy(zero_copy_only=False) if not indices.null_count else _signed(indices).fill_null(-1).to_numpy()
    return words[at].tolist()  # -1: the last, None


def _signed(indices: Any) -> Any:
    """Dictionary indices a type that holds -1 (a Parquet file's may be unsigned)."""
    import pyarrow as pa

    return indices.cast(pa.int64()) if pa.types.is_unsigned_integer(indices.type) else indices


def verdict_maps(column: Any) -> list[Any]:
    """The verdicts column (a list of structs a row) as each case holds them, judge -> verdict (``verdict_map``);
    a null row is None, an empty one {}."""
    array = _single(column)
    judges, passed, scores, explanations = (child.to_pylist() for child in list_items(array).flatten())
    spans = _spans(array)
    maps: list[Any] = [
        {str(judges[k]): {"passed": passed[k], "score": scores[k], "explanation": explanations[k]} for k in range(a, b)}
        for a, b in zip(spans, spans[1:])
    ]
    if array.null_count:
        for i in array.is_null().to_numpy(zero_copy_only=False).nonzero()[0].tolist():
            maps[i] = None
    return maps


def joined_rows(pieces: list[tuple[str, Any, str]], n: int) -> list[str]:
    """Each row's pieces joined (``case_lines``: a case's JSON line), by Python (Arrow's element-wise join of 30
    columns ran at 190 MB/s). A piece is (the text before its value, its values: an Arrow string or dictionary array
    or None for the text alone, the text of a row whose value is null). A piece's values are read as their distinct
    values (most are a few over a chunk: a detector's verdict, a category), each with the piece's text before it; a
    piece of one text over the chunk is folded into the texts of the piece before it (or of the first after it),
    so that a row joins only the pieces that vary (a garak chunk: 16 of 24; the lines of a million garak cases,
    best of two: 9.6 -> 6.4 s)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # each piece that varies: (texts folded after it, its texts, each row's text: None when rows are the texts)
    varying: list[tuple[list[str], list[str], Any]] = []
    lead = ""
    for before, array, null in pieces:
        texts, at = [before], None
        if array is not None:
            array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
            fresh = not pa.types.is_dictionary(array.type)  # (a dictionary array: its texts made once already)
            encoded = pc.dictionary_encode(array) if fresh else array
            texts = [before + text for text in encoded.dictionary.to_pylist()]
            at = encoded.indices
            if at.null_count:
                texts.append(null)
                at = pc.fill_null(at, len(texts) - 1).to_numpy()
            elif fresh and len(texts) == n:
                at = None  # every value once: the dictionary is the rows, in their order
            else:
                at = at.to_numpy()
        if len(texts) == 1:
            if varying:
                varying[-1][0].append(texts[0])
            else:
                lead += texts[0]
        else:
            varying.append(([], texts, at))
    if not varying:
        return [lead] * n
    columns = []
    for k, (after, texts, at) in enumerate(varying):
        head, tail = (lead if k == 0 else ""), "".join(after)
        if head or tail:
            texts = [head + text + tail for text in texts]
        columns.append(texts if at is None else np.array(texts, dtype=object)[at].tolist())
    return ["".join(row) for row in zip(*columns)]


def per_distinct_rows(batch: Any, make: Any) -> Any:
    """``make(batch)`` (an Arrow array of a value a row) made over the batch's distinct rows and taken back to every
    row, where its rows repeat (a garak run's version 3 fields over a probe's attempts); over the batch itself
    otherwise. Rows are alike when every column's value is (lists item for item; nulls alike)."""
    import pyarrow as pa

    n = batch.num_rows
    key = _row_keys(batch) if n >= DISTINCT_LEAST else None
    if key is None:
        return make(batch)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if 2 * len(first) > n:
        return make(batch)
    return make(batch.take(pa.array(first))).take(pa.array(inverse.reshape(-1)))


def _row_keys(batch: Any) -> Optional[np.ndarray]:
    """A number a row, equal for rows alike in every column; None for a column this cannot number."""
    import pyarrow as pa

    try:
        return combined_codes((_codes(column) for column in batch.columns), batch.num_rows)
    except (pa.ArrowException, TypeError, ValueError):
        return None


def combined_codes(parts: Any, n: int, limit: int = 1 << 62) -> np.ndarray:
    """One number a row for its codes in several columns (``parts``: each the ``n`` rows' codes from 0 and how many
    codes there are), equal where every column's code is, in the order of the columns' codes taken in turn;
    renumbered from 0 before the product could pass ``limit`` (int64)."""
    key, span = np.zeros(n, dtype=np.int64), 1
    for codes, count in parts:
        if span * count >= limit:
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            span = int(key.max()) + 1 if len(key) else 1
        key *= count  # in place: the key is this function's own (no array of n made a column)
        key += codes
        span *= count
    return key


def _codes(column: Any) -> tuple[np.ndarray, int]:
    """A number a value of ``column`` (null one of its own) and how many numbers there are. A list is numbered by
    its items' numbers, as bytes, and whether it is null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_list(column.type):
        items, count = _codes(list_items(column))
        spans = (offsets_from_zero(column) * 4).astype(np.int32)
        keys = pa.Array.from_buffers(
            pa.binary(), len(column), [None, pa.py_buffer(spans), pa.py_buffer(items.astype("<i4").tobytes())]
        )
        codes, count = _codes(keys)
        return codes * 2 + column.is_null().to_numpy(zero_copy_only=False), count * 2
    encoded = pc.dictionary_encode(column)
    size = len(encoded.dictionary)
    return pc.fill_null(encoded.indices, size).to_numpy().astype(np.int64), size + 1
