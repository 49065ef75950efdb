"""The columnar reader's fields of versions 2 and 3: each judge's verdict (``verdicts``, a map with free keys) and
the conversation and its labels (``messages``, ``judged_turn``, ``strategy``, ``plugin``, ``limit``, ``tags``), read
into the columns ``reporting.format.parquet.case_table`` gives them: ``verdicts`` as a list of structs, the version
3 fields as the JSON of the ``extra`` column, byte for byte.

A document's cases are read twice per chunk, both times over the raw case slices: by Arrow's JSON parser (the
format's fields it can type: texts, numbers, ``tags``, ``judged_turn``; a key given twice is an error there) and by
msgspec into each case's keys with their values as raw bytes (skipped for a chunk Arrow parses refusing any key
its schema does not name: no extras there, nothing nested; a case's keys are then decoded only where a null needs
them). From those raw values: a case's fields beyond the
format's (free-form extras) are read by the strict JSON decoder and screened as the per-record reader screens them;
verdicts are decoded by msgspec into typed structs (a verdict's own extra fields are refused), and a key given
twice in them (msgspec keeps the last) is found by counting the keys of the bytes against the keys decoded;
``messages`` and ``limit`` go through the strict JSON decoder and the schema's rules (``columnar_turns``; a limit,
rare, by its pydantic model), as the per-record reader reads them. Anything wrong: ``NotMine``.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, Raw, UnsetType

from reporting.format.columnar_checks import CHECKED, NotMine
from reporting.format.columnar_extras import case_extra
from reporting.format.columnar_heads import Heads, KeyDicts
from reporting.format.columnar_turns import conversations
from reporting.format.parquet import CASE_COLUMNS, _arrow_type
from reporting.format.schema import MAX_INTEGER, Case
from reporting.format.table_records import per_distinct, per_distinct_rows

_V2 = ("error", "verdicts", "probe_group", "source_id")
_V3 = ("messages", "judged_turn", "strategy", "plugin", "limit", "tags")
NESTED = ("verdicts", "messages", "limit")  # read from the raw bytes, not by Arrow
_DECODE = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)
Keys = Union[KeyDicts, Heads]


class _Verdict(msgspec.Struct, forbid_unknown_fields=True):
    """``reporting.format.schema.Verdict`` without extra fields (a table has no place for them); UNSET: absent."""

    passed: Union[bool, None, UnsetType] = UNSET
    score: Union[int, float, None, UnsetType] = UNSET
    explanation: Union[str, None, UnsetType] = UNSET


def parse_fields(version: int) -> list[tuple[str, Any]]:
    """The fields of versions 2 and 3 Arrow's parser reads (the nested ones only as 'an object' or 'a list of
    objects': their content is read from the raw bytes)."""
    import pyarrow as pa

    fields: list[tuple[str, Any]] = []
    if version >= 2:
        fields.append(("verdicts", pa.struct([])))
    if version >= 3:
        fields += [
            ("messages", pa.list_(pa.struct([]))),
            ("judged_turn", pa.int64()),
            ("strategy", pa.string()),
            ("plugin", pa.string()),
            ("limit", pa.struct([])),
            ("tags", pa.list_(pa.string())),
        ]
    return fields


def read_schema(parse_schema):
    """The schema of a chunk once ``nested`` has read it: verdicts as the case table's, messages and limit as the
    JSON text they take in ``extra``."""
    import pyarrow as pa

    kinds = {"verdicts": _arrow_type(CASE_COLUMNS["verdicts"]), "messages": pa.string(), "limit": pa.string()}
    return pa.schema([*((f.name, kinds.get(f.name, f.type)) for f in parse_schema), ("extra", pa.string())])


@functools.cache
def case_names(version: int) -> frozenset:
    """The case fields of ``version``: in an older file the later names are free-form extras (``migrate.py``)."""
    return frozenset(
        name for name in Case.model_fields if (version >= 2 or name not in _V2) and (version >= 3 or name not in _V3)
    )


def case_keys(lines: bytes, raws: list, spread: bool) -> KeyDicts:
    """Each case's keys, each value as raw bytes (msgspec keeps the last of a key given twice: Arrow refuses a
    field's, ``_extras`` any other). ``lines``: the cases one a line, unless a case spans lines (``spread``)."""
    try:
        if not spread:
            return KeyDicts(_KEYS.decode_lines(lines))
        return KeyDicts(msgspec.json.decode(b"[" + b",".join(raws) + b"]", type=list[dict[str, Raw]]))
    except _DECODE:
        raise NotMine from None


_KEYS = msgspec.json.Decoder(dict[str, Raw])


def _keys_of(raw: Raw) -> dict[str, Raw]:
    """One case's keys (a case that is no object, ``null`` say, which Arrow reads as a row of nulls: not this
    reader's, the per-record reader names it)."""
    try:
        return _KEYS.decode(raw)
    except _DECODE:
        raise NotMine from None


def nested(label: str, version: int, batch, raws: list, keys: Optional[Keys], explicit: dict[str, int], whole=False):
    """``_nested``; an Arrow error (a batch's texts beyond what one array holds, say) hands the run back. ``whole``:
    hand back a case the table would not keep whole (a limit, whose nulls it leaves out; an empty conversation in
    a chunk Arrow's parse read alone, which it holds as none; a judge's whole-number score, which it holds as a
    float)."""
    import pyarrow as pa

    try:
        return _nested(label, version, batch, raws, keys, explicit, whole)
    except pa.ArrowException:
        raise NotMine from None


def _nested(label: str, version: int, batch, raws: list, keys: Optional[Keys], explicit: dict[str, int], whole):
    """``batch`` (Arrow's parse of the cases ``raws``, whose keys are ``keys``: every key, or the heads of judged
    cases, ``columnar_heads``) with verdicts, messages and limit read from the raw bytes, and ``extra``: the JSON of
    a case's fields beyond the format's, null without any. ``explicit`` counts, per name of ``CHECKED``, the cases
    whose null is written ``null`` (not left out). ``keys`` None: Arrow's schema names every key of these cases and
    none is one of ``NESTED`` (no extras, nothing nested), and a case's keys are decoded only where a null needs
    them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    if keys is not None and len(keys) != n:
        raise NotMine
    for name in CHECKED:
        column = batch.column(name)
        if column.null_count:  # a case where Arrow read null and the key is there: the key's value is null
            rows = pc.indices_nonzero(pc.is_null(column)).to_pylist()
            if keys is not None:
                written = keys.written(rows, name)
            else:
                written = sum(map(operator.contains, (_keys_of(raws[i]) for i in rows), itertools.repeat(name)))
            explicit[name] = explicit.get(name, 0) + written
    if whole and (
        (version >= 3 and batch.column("limit").null_count < n)
        or (version >= 3 and keys is None and batch.column("messages").null_count < n)  # an empty conversation
        or (keys is not None and keys.any_has("limit"))
    ):
        raise NotMine  # (an empty list of messages is no key Arrow's first parse refuses: its column says)
    known = case_names(version)
    extras: list[Optional[str]] = [None] * n
    fields, memo = case_names(3), dict[Any, Any]()  # (every field, once an older file's case is upgraded)
    for i in keys.beyond(known) if keys is not None else ():
        extras[i] = case_extra(label, version, raws[i], keys.case(i) if keys is not None else None, fields, memo)
    found: dict[str, tuple[list[int], list]] = {}
    for name in NESTED:
        if keys is None:
            found[name] = ([], [])
        elif name in known:
            rows, values = keys.values(name)
            if name != "verdicts":  # null: no conversation, no limit (a null verdicts is refused by msgspec)
                kept = [k for k, value in enumerate(values) if not _is_null(value)]
                rows, values = [rows[k] for k in kept], [values[k] for k in kept]
            found[name] = (rows, values)
    distinct = keys.distinct() if keys is not None else None  # (the verdicts' distinct texts, when found already)
    del keys
    columns = {"extra": pa.array(extras, pa.string())}
    if version >= 2:
        columns["verdicts"] = _verdicts(n, *found["verdicts"], whole, distinct)
    if version >= 3:
        roles, texts = conversations(label, n, *found["messages"])
        _check_turns(batch.column("judged_turn"), roles)
        columns["messages"] = pa.array(texts, pa.string())
        columns["limit"] = _limits(label, n, *found["limit"])
    schema = read_schema(batch.schema)
    return pa.RecordBatch.from_arrays(
        [columns[f.name] if f.name in columns else batch.column(f.name) for f in schema], schema=schema
    )


def _is_null(raw: Any) -> bool:
    return raw is not UNSET and len(raw) == 4 and bytes(raw) == b"null"


def _verdicts(n: int, rows: list[int], raws: list, whole: bool = False, distinct: Optional[tuple] = None):
    """The verdicts column: each case's judges in the order written, as ``case_table`` writes them; each distinct
    text of verdicts (``distinct``: found already) decoded and checked once, the rows' lists taken from them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = _arrow_type(CASE_COLUMNS["verdicts"])
    if distinct is None:
        seen: dict[bytes, int] = {}
        which = np.fromiter((seen.setdefault(bytes(raw), len(seen)) for raw in raws), np.int64, len(raws))
        distinct = which, list(seen)
    which, unique = distinct
    counts = np.zeros(len(unique) + 1, dtype=np.int64)  # the last: the empty list of a case without verdicts
    judges: list[str] = []
    fields: list[list[Any]] = [[], [], []]  # passed, score, explanation
    if unique:
        joined = b"[" + b",".join(unique) + b"]"
        try:
            maps = msgspec.json.decode(joined, type=list[dict[str, _Verdict]])
        except _DECODE:
            raise NotMine from None
        counts[:-1] = [len(verdicts) for verdicts in maps]
        judges = [judge for verdicts in maps for judge in verdicts]
        every = [verdict for verdicts in maps for verdict in verdicts.values()]
        del maps
        fields = [[getattr(verdict, name) for verdict in every] for name in ("passed", "score", "explanation")]
        # the keys msgspec kept: fewer than the bytes hold when a key is given twice
        decoded = len(judges) + sum(len(values) - values.count(UNSET) for values in fields)
        if count_keys(joined) != decoded:
            raise NotMine  # a duplicated key: the per-record reader names it
        if whole and any(type(score) is int for score in fields[1]):
            raise NotMine
        fields = [[None if value is UNSET else value for value in values] for values in fields]
        if any(score is not None and not -MAX_INTEGER <= score <= MAX_INTEGER for score in fields[1]):
            raise NotMine
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    values = pa.StructArray.from_arrays(
        [
            pa.array(judges, pa.string()),
            pa.array(fields[0], pa.bool_()),
            pa.array(fields[1], pa.float64()),
            pa.array(fields[2], pa.string()),
        ],
        fields=list(kind.value_type),
    )
    lists = pa.ListArray.from_arrays(pa.array(offsets), values, type=kind)
    index = np.full(n, len(unique), dtype=np.int64)
    index[np.asarray(rows, dtype=np.int64)] = which
    return pc.take(lists, pa.array(index))


@functools.cache
def _limit_adapter():
    from pydantic import TypeAdapter

    from reporting.format.schema import Limit

    return TypeAdapter(list[Limit])


def _limits(label: str, n: int, rows: list[int], raws: list):
    """``limit`` of the cases that have one (rare): decoded strictly and validated by the schema's model, as the
    per-record reader does, and the JSON ``case_table`` writes of it; null where a case has none."""
    import pyarrow as pa
    from pydantic import ValidationError

    from reporting.format.strict_json import parse_json_text

    texts: list[Optional[str]] = [None] * n
    if rows:
        value, problems = parse_json_text(label, (b"[" + b",".join(raws) + b"]").decode("utf-8"))
        if problems or not isinstance(value, list) or len(value) != len(rows):
            raise NotMine
        try:
            models = _limit_adapter().validate_python(value)
            dumped = _limit_adapter().dump_python(models, mode="json", exclude_none=True)
            for at, plain in zip(rows, dumped):
                texts[at] = json.dumps(plain)
        except (ValidationError, TypeError, ValueError):
            raise NotMine from None
    return pa.array(texts, pa.string())


def _check_turns(turns, roles: list) -> None:
    """``judged_turn``, where given, is an assistant turn of the case's messages (``schema.state_problem``)."""
    if turns.null_count == len(turns):
        return
    for turn, spoke in zip(turns.to_pylist(), roles):
        if turn is not None and (not 0 <= turn < len(spoke or ()) or spoke[turn] != "assistant"):
            raise NotMine


def count_keys(data: bytes) -> int:
    """The number of object keys in valid JSON ``data``: strings followed by a colon. Quotes are paired (a quote
    after an odd run of backslashes is inside a string), so text that looks like a key is not one."""
    import numpy as np

    codes = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(codes == 0x22)
    escaped = quotes[(quotes > 0) & (codes[quotes - 1] == 0x5C)]
    if escaped.size:
        run = np.zeros(escaped.size, dtype=np.int64)
        going = np.ones(escaped.size, dtype=bool)
        for back in range(1, 65):
            going &= escaped - back >= 0
            going[going] = codes[escaped[going] - back] == 0x5C
            if not going.any():
                break
            run += going
        else:
            raise NotMine  # 64 backslashes before a quote: not worth reading here
        quotes = np.setdiff1d(quotes, escaped[run % 2 == 1], assume_unique=True)
    if quotes.size % 2:
        raise NotMine
    after = quotes[1::2] + 1  # the byte after each string
    after = after[after < codes.size]
    while True:
        blank = np.isin(codes[after], (0x20, 0x09, 0x0A, 0x0D))
        if not blank.any():
            break
        after[blank] += 1
        after = after[after < codes.size]
    return int(np.count_nonzero(codes[after] == 0x3A))


def extra_column(table):
    """The ``extra`` column of ``case_table`` for a version 3 table: the JSON of each case's own extra fields and its
    version 3 fields in the order ``parquet.V3_FIELDS`` names them (``json.dumps`` of the same values, byte for
    byte), null without any. Made batch by batch (a batch's texts stay far below Arrow's 2 GB per array); texts of
    printable ASCII are escaped over whole columns, the rest by ``json.dumps``, one value at a time."""
    import pyarrow as pa

    from reporting.format.parquet import V3_FIELDS

    try:
        batches = table.select(["extra", *V3_FIELDS]).to_batches()
        chunks = [per_distinct_rows(batch, _extra_batch) for batch in batches]  # each distinct row made once
        return pa.chunked_array(chunks, pa.string())
    except pa.ArrowException:
        raise NotMine from None


def _extra_batch(batch):
    import pyarrow as pa
    import pyarrow.compute as pc

    from reporting.format.parquet import V3_FIELDS

    extra = batch.column("extra")  # the case's own fields beyond the format's, first, as case_table puts them
    parts = [pc.binary_join_element_wise(", ", pc.utf8_slice_codeunits(extra, 1, -1), "")]
    for name in V3_FIELDS:
        values = batch.column(name)
        if name in ("messages", "limit"):
            text = values  # already JSON
        elif name == "judged_turn":
            text = pc.cast(values, pa.string())
        elif name == "tags":
            text = _json_lists(values)
        else:
            text = json_strings(values)
        parts.append(pc.binary_join_element_wise(f', "{name}": ', text, ""))  # null where the case has none
    if not len(batch):
        return pa.nulls(0, pa.string())
    some = functools.reduce(pc.or_, [pc.is_valid(part) for part in parts])
    # (binary_join_element_wise's null_handling="skip" drops a row whose every part is null: not used)
    joined = pc.binary_join_element_wise(*[pc.fill_null(part, "") for part in parts], "")
    wrapped = pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(joined, 2), "}", "")
    return pc.if_else(some, wrapped, pa.scalar(None, pa.string()))


def _json_lists(values):
    import pyarrow as pa
    import pyarrow.compute as pc

    items = pa.ListArray.from_arrays(values.offsets, json_strings(values.values), mask=values.is_null())
    return pc.binary_join_element_wise("[", pc.binary_join(items, ", "), "]", "")


def json_strings(values):
    """``json.dumps`` of each text of a string array (nulls stay null), each distinct text once."""
    return per_distinct(values, _json_strings)


def _json_strings(values):
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), '"', '\\"')
    quoted = pc.binary_join_element_wise('"', plain, '"', "")
    special = pc.fill_null(pc.match_substring_regex(values, r"[^ -~]"), False)
    if not pc.any(special).as_py():
        return quoted
    rows = pc.indices_nonzero(special)
    escaped = [json.dumps(text) for text in pc.take(values, rows).to_pylist()]
    return pc.replace_with_mask(quoted, special, pa.array(escaped, pa.string()))
