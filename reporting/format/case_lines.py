"""The cases of a run read by columns as ``recompute`` writes them, one line of JSON each, made over whole columns:
no record and no encoder call a case.

Each field becomes a column of JSON text (its key and value, or nothing where the case leaves it out), made by
Arrow, and each case's line is its pieces joined (by Python: Arrow's element-wise join of 30 columns was slower). A
text with no character ``_ESCAPED`` names is escaped over the column (a backslash and a quote are then its only
JSON escapes); any other text, every distinct float and the fields each distinct ``extra`` carries (its version 3
fields and its own) go through ``writing.dumps_line``, the encoder of the per-case way, so a line is byte for byte
what ``dumps_line`` makes of the case's record (tests/test_case_lines.py compares them on every sample, imported
and hostile run). Where a chunk holds what this does not make (a column it does not know, a judge without a name
or named twice in a case, an ``extra`` naming a field of the table's, a key the writer adds or a value msgspec
does not encode) its lines are made the per-case way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from reporting.format.parquet import CASE_COLUMNS, LISTS, REQUIRED, plain_json_once
from reporting.format.parquet import _plain as plain_type
from reporting.format.table_records import (
    DEFAULTS,
    FIELD_SET,
    FIELDS,
    dumped_rows,
    joined_rows,
    list_items,
    offsets_from_zero,
    per_distinct,
    unused_left_out,
)
from reporting.format.writing import _encode, dumps_line, unsafe_escaped

ROWS = 4096  # cases made at once (a chunk's texts are held several times over while its lines are joined)
ADDED = ("severity_weight", "weighted_risk", "derived_failure_modes")  # what the writer puts in each case
_KNOWN = frozenset(CASE_COLUMNS)  # the case table's columns
_TEXT = {name for name, kind in CASE_COLUMNS.items() if kind == "string"} - {"run_key", "extra"}
_LISTS = frozenset(LISTS)
# The fields after the table's own, which a case's ``extra`` carries (in the schema's order, last).
CARRIED = tuple(name for name in FIELDS if name not in _KNOWN)
assert FIELDS[len(FIELDS) - len(CARRIED) :] == CARRIED, "the carried fields are the schema's last"


class Rows:
    """Which cases, with what the writer adds to each: its effective severity weight and recomputed weighted risk
    (floats, NaN for none) and the failure modes RunLens derived (a list a case)."""

    def __init__(self, positions: np.ndarray, weights: np.ndarray, weighted: np.ndarray, derived: list) -> None:
        self.positions, self.weights, self.weighted, self.derived = positions, weights, weighted, derived


def case_lines(
    cases: Any,
    rows: Rows,
    none: Sequence[str],
    empty: Sequence[str],
    shape: Callable[[dict[str, Any]], dict[str, Any]],
) -> Iterator[str]:
    """The JSON lines of ``rows`` of ``cases`` (a ``TableCases``), a chunk at a time, each chunk's lines joined by
    the separator ``document_chunks`` puts between cases. ``none``/``empty``: fields left out of a case where None
    or empty; ``shape``: what the writer does to the fields an ``extra`` carries (a conversation's turns)."""
    import pyarrow as pa

    table = cases._rows
    positions = rows.positions
    whole = len(positions) == 0 or int(positions[-1]) - int(positions[0]) + 1 == len(positions)
    for start in range(0, len(positions), ROWS):
        at = positions[start : start + ROWS]
        part = table.slice(int(at[0]), len(at)) if whole else table.take(pa.array(at, pa.int64()))
        end = start + len(at)
        added = (rows.weights[start:end], rows.weighted[start:end], rows.derived[start:end])
        yield ",\n    ".join(_chunk(part, added, cases.columnar.label, int(at[0]), none, empty, shape))


def _chunk(part, added, label: str, first: int, none, empty, shape) -> list[str]:
    part = _plain(part.combine_chunks())
    lines = None
    if set(part.column_names) <= _KNOWN:
        carried, odd, wide = _extras(part, none, empty, shape)
        lines = _lines(part, added, carried, none, empty, wide)
    if lines is None:
        return [_per_case(part, i, added, label, first, none, empty, shape) for i in range(part.num_rows)]
    made = lines
    for i in odd:  # an extra naming a field of the table's or a key the writer adds: made the per-case way
        made[i] = _per_case(part, i, added, label, first, none, empty, shape)
    return made


def _plain(part):
    """The chunk with each dictionary column (a run's repeated texts, a list's repeated items, as the case table holds
    them) as its texts: the string functions below take no dictionary (a Parquet run above ``COMPACT_ABOVE`` cases
    was an internal error of ``recompute``)."""
    for i, field in enumerate(part.schema):
        kind = plain_type(field.type)
        if not kind.equals(field.type):
            part = part.set_column(i, field.name, part.column(i).cast(kind))
    return part


def _per_case(part, i: int, added, label: str, first: int, none, empty, shape) -> str:
    """One case's line made as ``serialise.iter_case_records`` and ``dumps_line`` make it."""
    weights, weighted, derived = added
    record = shape(dumped_rows(part.slice(i, 1), label, first + i, none, empty)[0])
    record["severity_weight"], record["weighted_risk"] = float(weights[i]), float(weighted[i])
    record["derived_failure_modes"] = derived[i]
    return dumps_line(record)


def _extras(part, none, empty, shape) -> tuple[Any, list[int], np.ndarray]:
    """Per case, the JSON text of the fields its ``extra`` carries (``,"key":value`` each, or "" with none), and the
    cases whose ``extra`` names a field it does not carry or a key the writer adds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = (FIELD_SET - set(CARRIED)) | set(ADDED)
    decode = plain_json_once()
    if "extra" in part.column_names:
        encoded = pc.dictionary_encode(part.column("extra").combine_chunks())
        distinct, indices = encoded.dictionary.to_pylist(), encoded.indices
    else:
        distinct, indices = [], pa.nulls(part.num_rows, pa.int32())
    fragments: list[str] = []
    odd: list[int] = []
    wide: list[bool] = []
    for text in [*distinct, None]:
        found = decode(text) if text else {}
        if not isinstance(found, dict):
            found = {}
        if not columns.isdisjoint(found):
            odd.append(len(fragments))
        record = {name: found.get(name, DEFAULTS[name]) for name in CARRIED}
        record = shape(unused_left_out(record, none, empty))
        record.update((key, value) for key, value in found.items() if key not in FIELD_SET)
        try:
            wide.append(not _encode(record).isascii())  # msgspec's text, before dumps_line escapes
        except (TypeError, OverflowError, ValueError):  # what msgspec does not encode: the per-case way
            odd.append(len(fragments))
            wide.append(True)
        inner = dumps_line(record)[1:-1]
        fragments.append("," + inner if inner else "")
    where = pc.fill_null(indices, len(distinct)).to_numpy(zero_copy_only=False).astype(np.int64)
    rows = np.flatnonzero(np.isin(where, odd)).tolist() if odd else []
    return pa.array(fragments, pa.string()).take(pa.array(where)), rows, np.array(wide, dtype=bool)[where]


def _lines(part, added, carried, none, empty, wide):
    """Every case's line, or None where the chunk holds what this does not make."""
    import pyarrow as pa

    weights, weighted, derived = added
    n = part.num_rows
    # each piece of a line: (its text before the value, the values (None: the text alone), the text of a null)
    pieces = []
    for name in FIELDS:
        key = ('{"' if not pieces else ',"') + name + '":'
        if name in CARRIED:
            continue
        if name == "severity_weight":
            value = _floats(pa.array(weights, pa.float64()), encoded=True)
        elif name == "weighted_risk":
            value = _floats(pa.array(weighted, pa.float64()), encoded=True)
        elif name not in part.column_names:
            fallback = _empty(name)
            if (name in none and fallback is None) or (name in empty and not fallback):
                continue  # every case leaves it out
            pieces.append((key + dumps_line(fallback), None, ""))
            continue
        elif name == "verdicts":
            value = verdicts_json(part.column(name).combine_chunks())
            if value is None:
                return None
        else:
            value = _values(name, part.column(name).combine_chunks())
        if name in none or name in empty:  # left out where null (None, or no verdicts)
            pieces.append((key, value, ""))
        else:
            pieces.append((key, value, key + ("null" if name in REQUIRED else dumps_line(_empty(name)))))
    pieces.append(("", carried, ""))
    pieces.append((',"derived_failure_modes":', _lists_of(derived), ""))
    pieces.append(("}", None, ""))
    lines = joined_rows(pieces, n)
    # dumps_line escapes DEL (ASCII) only in a line whose text holds a character beyond ASCII; a value of ASCII
    # alone was made without, so such a line has its DEL escaped here (the other characters it escapes are beyond
    # ASCII: escaped in their value already)
    if any(values is not None and _holds_delete(values) for _, values, _ in pieces):
        wide = _beyond_ascii(part, wide, derived)
        lines = [unsafe_escaped(line) if wide[i] and "\x7f" in line else line for i, line in enumerate(lines)]
    return lines


def _holds_delete(piece) -> bool:
    """Whether the bytes of a string array, or of a dictionary array's texts (all of its buffer: a slice's
    neighbours too), hold DEL."""
    data = (piece.dictionary if hasattr(piece, "dictionary") else piece).buffers()[2]
    return data is not None and bool((np.frombuffer(data, dtype=np.uint8) == 0x7F).any())


def _beyond_ascii(part, wide, derived) -> np.ndarray:
    """Per case, whether any text of its record (a value, a list's item, a judge, a key or value an ``extra``
    carries, a derived mode) holds a character beyond ASCII."""
    found = wide.copy()
    for name in part.column_names:
        column = part.column(name).combine_chunks()
        if name in _TEXT:
            found |= _wide(column)
        elif name in _LISTS:
            found |= _wide_rows(column, [list_items(column)])
        elif name == "verdicts":
            judge, _, _, explanation = list_items(column).flatten()
            found |= _wide_rows(column, [judge, explanation])
    for i, modes in enumerate(derived):
        if modes and not all(mode.isascii() for mode in modes):
            found[i] = True
    return found


def _wide(values) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.fill_null(pc.invert(pc.string_is_ascii(values)), False).to_numpy(zero_copy_only=False)


def _wide_rows(lists, items) -> np.ndarray:
    """Per row of a list column, whether any of its items' texts (``items``: arrays of the flattened values) is."""
    import pyarrow.compute as pc

    owner = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    hit = np.zeros(len(owner), dtype=bool)
    for values in items:
        hit |= _wide(values)
    return np.bincount(owner[hit], minlength=len(lists)) > 0


def _empty(name: str) -> Any:
    value = DEFAULTS[name]
    return [] if isinstance(value, list) else value


def _values(name: str, column):
    """A field's JSON values, null where the case has none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name in _TEXT:
        value = per_distinct(column, _texts, encoded=True)
    elif name in _LISTS:
        value = _text_lists(column)
    elif pa.types.is_boolean(column.type):
        value = pc.if_else(column, "true", "false")
    elif pa.types.is_integer(column.type):
        value = pc.cast(column, pa.string())
    else:
        value = _floats(column, encoded=True)
    return value


# What msgspec writes as an escape beyond a quote and a backslash (control characters), and what dumps_line does
# (``writing._UNSAFE_IN_JSON``): a text without any is its own JSON between quotes, once those two are escaped.
_ESCAPED = r"[\x00-\x1f\x{7f}-\x{9f}\x{2028}\x{2029}\x{202a}-\x{202e}\x{2066}-\x{2069}]"


def texts(values):
    """``dumps_line`` of each text (null stays null): a text with no character ``_ESCAPED`` names escaped over
    the column, the rest one by one; each distinct text once."""
    return per_distinct(values, _texts)


def _texts(values):
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), '"', '\\"')
    quoted = pc.binary_join_element_wise('"', plain, '"', "")
    special = pc.fill_null(pc.match_substring_regex(values, _ESCAPED), False)
    if not len(values) or not pc.any(special).as_py():
        return quoted
    rows = pc.indices_nonzero(special)
    escaped = [dumps_line(text) for text in pc.take(values, rows).to_pylist()]
    return pc.replace_with_mask(quoted, special, pa.array(escaped, pa.string()))


def _floats(values, encoded: bool = False):
    """``dumps_line`` of each float (null stays null), each distinct value's bits encoded once; ``encoded``: as a
    dictionary array of those texts."""
    import pyarrow as pa

    numbers = values.to_numpy(zero_copy_only=False).astype(np.float64)
    bits, where = np.unique(numbers.view(np.int64), return_inverse=True)
    spelled = np.array([dumps_line(float(x)) for x in bits.view(np.float64)], dtype=object)
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    if encoded:
        indices = pa.array(where.reshape(-1).astype(np.int32), pa.int32(), mask=mask)
        return pa.DictionaryArray.from_arrays(indices, pa.array(spelled, pa.string()))
    return pa.array(spelled[where.reshape(-1)], pa.string(), mask=mask)


def _rebased(values):
    import pyarrow as pa

    return pa.array(offsets_from_zero(values).astype(np.int32), pa.int32())


def _text_lists(values):
    """Each list of texts as JSON (null stays null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    items = texts(list_items(values))
    mask = values.is_null() if values.null_count else None
    lists = pa.ListArray.from_arrays(_rebased(values), items, mask=mask)
    return pc.binary_join_element_wise("[", pc.binary_join(lists, ","), "]", "")


def _lists_of(rows: list) -> Any:
    import pyarrow as pa

    return _text_lists(pa.array(rows, pa.list_(pa.string())))


def verdicts_json(values):
    """Each case's verdicts as the JSON object ``verdict_map`` makes, judge -> verdict (null where it has none);
    None where a judge has no name or is named twice in a case (``verdict_map`` would merge them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    judge, passed, score, explanation = list_items(values).flatten()
    if judge.null_count:
        return None
    owner = pc.list_parent_indices(values)
    if len(judge) and pa.table({"o": owner, "j": judge}).group_by(["o", "j"], use_threads=False).aggregate(
        []
    ).num_rows != len(judge):
        return None
    item = pc.binary_join_element_wise(
        texts(judge),
        ':{"passed":',
        pc.fill_null(pc.if_else(passed, "true", "false"), "null"),
        ',"score":',
        pc.fill_null(_floats(score), "null"),
        ',"explanation":',
        pc.fill_null(texts(explanation), "null"),
        "}",
        "",
    )
    mask = values.is_null() if values.null_count else None
    lists = pa.ListArray.from_arrays(_rebased(values), item, mask=mask)
    joined = pc.binary_join_element_wise("{", pc.binary_join(lists, ","), "}", "")
    some = pc.greater(pc.fill_null(pc.list_value_length(values), 0), 0)
    return pc.if_else(some, joined, pa.scalar(None, pa.string()))
