"""``reporting.format.arrow_take.take_rows``: rows of a chunked column by position, chunk by chunk, the same values
in the same order as Arrow's own ``take``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from reporting.format.arrow_take import take_rows


def _chunked() -> pa.ChunkedArray:
    return pa.chunked_array([pa.array(["a", "b"]), pa.array([], pa.string()), pa.array(["c", None, "e"]), ["f"]])


def test_rows_in_the_order_asked_across_chunks():
    got = take_rows(_chunked(), [5, 0, 3, 2, 2, 1])
    assert isinstance(got, pa.Array)
    assert got.to_pylist() == ["f", "a", None, "c", "c", "b"]


def test_the_same_as_arrows_take_on_random_positions():
    rng = np.random.default_rng(7)
    values = pa.chunked_array([pa.array(rng.normal(size=n)) for n in (5, 0, 17, 1, 40)])
    positions = rng.integers(0, len(values), size=200)
    assert take_rows(values, positions).equals(values.take(pa.array(positions)).combine_chunks())


def test_dictionary_chunks_with_different_dictionaries():
    one = pa.array(["x", "y", "x"]).dictionary_encode()
    two = pa.array(["z", "x"]).dictionary_encode()
    got = take_rows(pa.chunked_array([one, two]), [3, 0, 4, 1])
    assert got.cast(pa.string()).to_pylist() == ["z", "x", "x", "y"]


def test_one_array_and_no_positions():
    assert take_rows(pa.array([1, 2, 3]), [2, 0]).to_pylist() == [3, 1]
    assert take_rows(_chunked(), []).to_pylist() == []
    assert take_rows(pa.chunked_array([], pa.int64()), []).to_pylist() == []


@pytest.mark.parametrize("position", [-1, 6])
def test_a_position_outside_the_column_is_refused(position):
    with pytest.raises(IndexError):
        take_rows(_chunked(), [0, position])
