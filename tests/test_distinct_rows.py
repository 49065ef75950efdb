"""A batch's value per row made once per distinct row (``table_records.per_distinct_rows``, the version 3 fields'
JSON of a run read by columns): the same array as made over every row, for rows that differ only in ways a
careless key would merge (a list's items joined, null and empty, null and zero), and made over fewer rows when
rows repeat."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from reporting.format.columnar_v3 import _extra_batch
from reporting.format.table_records import DISTINCT_LEAST, per_distinct_rows

TEXTS = [None, "", "a", "b", "a,b", "ab", 'say "hi"\x7f', "é\u2028", "\x00"]
LISTS = [None, [], [""], ["a", "b"], ["a,b"], ["ab"], ["a", None], [None], ['"', "é"], ["\x00", "a"]]


def batch_of(rng: random.Random, n: int, kinds: int) -> pa.RecordBatch:
    """A batch of the columns ``_extra_batch`` reads, ``kinds`` distinct rows repeated (``kinds`` 0: any row)."""

    def row():
        return {
            "extra": rng.choice([None, '{"k": 1}', '{"k": "a:b"}']),
            "messages": rng.choice([None, '[{"role": "user", "content": "x"}]']),
            "judged_turn": rng.choice([None, 0, 1, 2]),
            "strategy": rng.choice(TEXTS),
            "plugin": rng.choice(TEXTS),
            "limit": rng.choice([None, '{"type": "message"}']),
            "tags": rng.choice(LISTS),
        }

    pool = [row() for _ in range(kinds)]
    rows = [rng.choice(pool) if kinds else row() for _ in range(n)]
    schema = pa.schema(
        [
            ("extra", pa.string()),
            ("messages", pa.string()),
            ("judged_turn", pa.int64()),
            ("strategy", pa.string()),
            ("plugin", pa.string()),
            ("limit", pa.string()),
            ("tags", pa.list_(pa.string())),
        ]
    )
    return pa.RecordBatch.from_pylist(rows, schema=schema)


@pytest.mark.parametrize("seed", range(12))
def test_each_distinct_row_made_once_is_the_batch_made_whole(seed):
    rng = random.Random(seed)
    kinds = rng.choice([0, 1, 5, 40, 300])
    batch = batch_of(rng, rng.choice([DISTINCT_LEAST - 1, DISTINCT_LEAST, 3000]), kinds)
    seen = []

    def make(part):
        seen.append(part.num_rows)
        return _extra_batch(part)

    assert per_distinct_rows(batch, make).equals(_extra_batch(batch))
    if kinds and batch.num_rows >= DISTINCT_LEAST:
        assert seen == [len({tuple(map(repr, row.values())) for row in batch.to_pylist()})]  # each distinct once


def test_rows_a_careless_key_would_merge_are_told_apart():
    """Every pair of the lists and texts above is a pair of distinct rows: made once each, never one for both."""
    rows = [{"tags": tags, "plugin": text} for tags in LISTS for text in TEXTS]
    batch = pa.RecordBatch.from_pylist(
        rows * (DISTINCT_LEAST // len(rows) + 3),
        schema=pa.schema([("tags", pa.list_(pa.string())), ("plugin", pa.string())]),
    )
    made = per_distinct_rows(batch, lambda part: pa.array([repr(r) for r in part.to_pylist()], pa.string()))
    assert made.to_pylist() == [repr(r) for r in batch.to_pylist()]
