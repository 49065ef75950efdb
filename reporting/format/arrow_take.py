"""Chunked Arrow columns: rows taken by position chunk by chunk, and columns of numbers joined into one chunk.

pyarrow's own ``take`` on a ``ChunkedArray`` joins the column's chunks for every call: taking 65,536 rows of a
ten-million-case run's probe ids took 77 ms that way (a chunk of ten read from a Parquet file), 7 ms here. A caller
that takes a large column a slice at a time (the run's fingerprint, in probe id order) pays the join once a slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def take_rows(values: Any, positions: Any) -> Any:
    """``values`` (an Arrow ``Array`` or ``ChunkedArray``) at ``positions`` (whole numbers, each in range), in that
    order, as one ``Array``: each chunk takes its own rows, and the parts are put back in the order asked for."""
    return take_columns([values], positions)[0]


def take_columns(columns: Sequence[Any], positions: Any) -> list[Any]:
    """``take_rows`` of each of ``columns`` (of one length) at the same ``positions``; columns chunked alike share
    the work of finding each position's chunk."""
    import pyarrow as pa

    positions = np.asarray(positions, dtype=np.int64)
    plans: dict[tuple[int, ...], Any] = {}
    taken = []
    for values in columns:
        if isinstance(values, pa.Array):
            taken.append(values.take(pa.array(positions)))
            continue
        chunks = [chunk for chunk in values.chunks if len(chunk)]
        lengths = tuple(len(chunk) for chunk in chunks)
        if lengths not in plans:
            plans[lengths] = _plan(lengths, positions)
        taken.append(_take(values.type, chunks, positions, *plans[lengths]))
    return taken


def _plan(lengths: tuple[int, ...], positions: np.ndarray) -> tuple[Any, Any, Any, Any]:
    """Where each position is: the chunks' first rows, the positions in chunk order (a stable sort, so each chunk's
    rows keep the order asked for), where each chunk's part begins, and the way back to the order asked for."""
    starts = np.cumsum((0, *lengths), dtype=np.int64)
    if len(positions) and (positions.min() < 0 or positions.max() >= starts[-1]):
        raise IndexError(f"take_rows: a position outside the column's {int(starts[-1])} rows")
    which = np.searchsorted(starts, positions, side="right") - 1
    # (a radix sort of small numbers: the chunk's number fits 16 bits for any column read here)
    by_chunk = np.argsort(which.astype(np.uint16) if len(lengths) < 1 << 16 else which, kind="stable")
    cuts = np.searchsorted(which[by_chunk], np.arange(len(lengths) + 1))
    back = np.empty(len(by_chunk), dtype=np.int64)
    back[by_chunk] = np.arange(len(by_chunk))
    return starts, by_chunk, cuts, back


def _take(kind: Any, chunks: list[Any], positions: np.ndarray, starts, by_chunk, cuts, back) -> Any:
    import pyarrow as pa

    if not chunks:
        if len(positions):
            raise IndexError(f"take_rows: position {int(positions[0])} of an empty column")
        return pa.array([], kind)
    if len(chunks) == 1:
        return chunks[0].take(pa.array(positions))
    parts = [
        chunks[k].take(pa.array(positions[by_chunk[cuts[k] : cuts[k + 1]]] - starts[k]))
        for k in range(len(chunks))
        if cuts[k + 1] > cuts[k]
    ]
    if not parts:
        return pa.array([], kind)
    joined = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
    return joined.take(pa.array(back))


def numbers_in_one_chunk(table: Any) -> Any:
    """``table`` with each column of numbers or booleans in one chunk (a column's chunks joined, one column at a
    time): a reader of such a column as a numpy array then reads the table's own memory. Of a case table read from
    a Parquet file of ten row groups, the case frame copied seven such columns (530 MB at ten million cases)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        column = table.column(i)
        if column.num_chunks > 1 and (
            pa.types.is_floating(field.type) or pa.types.is_integer(field.type) or pa.types.is_boolean(field.type)
        ):
            table = table.set_column(i, field, pa.chunked_array([column.combine_chunks()]))
    return table


UNIFIED_AT_MOST = 1 << 30  # bytes of a column's dictionaries, all chunks together, that are made one


def dictionaries_unified(table: Any) -> Any:
    """``table`` with each column of text dictionaries of several chunks holding one dictionary for them all (each
    chunk's indices into it): a run read 10,000 cases at a time held a dictionary a chunk (a ten-million-case JSON
    Lines run's explanations: 3,500 distinct texts a chunk, 12,800 in all, 450 MB of dictionaries)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        column = table.column(i)
        if column.num_chunks > 1 and pa.types.is_dictionary(field.type) and pa.types.is_string(field.type.value_type):
            # (texts that stopped repeating after the first chunk: their one dictionary could pass the 2 GB a text
            # array's offsets hold, so a column whose dictionaries hold more than UNIFIED_AT_MOST keeps its own)
            if sum(chunk.dictionary.nbytes for chunk in column.chunks) <= UNIFIED_AT_MOST:
                table = table.set_column(i, field, column.unify_dictionaries())
    return table


CHUNK_ROWS = 1 << 20  # rows a chunk of a text column holds at least once joined (a Parquet row group's order)
CHUNK_BYTES = 256 << 20  # bytes of a text column's chunks joined into one at most (a text array's offsets: 2 GB)


def texts_in_fewer_chunks(table: Any, names: Sequence[str]) -> Any:
    """``table`` with its text columns ``names`` (plain, or dictionaries whose chunks hold one dictionary:
    ``dictionaries_unified``) in chunks of ``CHUNK_ROWS`` rows or more (or ``CHUNK_BYTES``), the consecutive chunks
    of each joined: a run read 10,000 cases at a time held a thousand chunks a column, each one more step for every
    query that reads it (the engine's probe ids, categories and severities; a ten-million-case filter 0.15 s
    slower than the same table read from a Parquet file of ten row groups). A dictionary stays the one they hold."""
    import pyarrow as pa

    for name in names:
        if name not in table.column_names:
            continue
        i = table.column_names.index(name)
        field, column = table.schema.field(i), table.column(i)
        kind = field.type
        if column.num_chunks <= 1:
            continue
        shared = pa.types.is_dictionary(kind) and len({_held(chunk.dictionary) for chunk in column.chunks}) == 1
        if not (pa.types.is_string(kind) or shared):
            continue
        first = column.chunk(0).dictionary if shared else None
        groups: list[list] = [[]]
        rows = size = 0
        for chunk in column.chunks:
            part = chunk.indices if shared else chunk
            if groups[-1] and (rows >= CHUNK_ROWS or size + part.nbytes > CHUNK_BYTES):
                groups.append([])
                rows = size = 0
            groups[-1].append(part)
            rows, size = rows + len(part), size + part.nbytes
        if len(groups) == column.num_chunks:
            continue
        if shared:
            joined = [pa.DictionaryArray.from_arrays(pa.concat_arrays(group), first) for group in groups]
        else:
            joined = [pa.concat_arrays(group) for group in groups]
        del groups
        table = table.set_column(i, field, pa.chunked_array(joined, kind))
    return table


def _held(values: Any) -> tuple:
    """Where an array's memory is (its buffers, offset and length): two chunks that give the same hold one array."""
    return (*(b.address if b is not None else 0 for b in values.buffers()), values.offset, len(values))
