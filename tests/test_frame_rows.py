"""The case frame's verdicts and list columns made from a table's (``table_frame._verdict_maps`` and
``shared_lists``): each distinct row made once, told apart by numbers, is row for row what making every row on its
own gives."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest

from reporting.analysis import table_frame
from reporting.analysis.table_frame import _verdict_maps, _verdicts
from reporting.format.columnar_v3 import _arrow_type
from reporting.format.parquet import CASE_COLUMNS

KIND = _arrow_type(CASE_COLUMNS["verdicts"])


def _column(rows):
    return pa.array(rows, KIND)


def _same(rows):
    got = list(_verdict_maps(_column(rows)))
    want = _verdicts(rows)
    assert len(got) == len(want) == len(rows)
    for g, w in zip(got, want):
        assert list(g) == list(w)  # judges, in order
        for judge in w:
            a, b = g[judge], w[judge]
            assert (a.passed, a.explanation) == (b.passed, b.explanation)
            assert (a.score is None) == (b.score is None)
            if b.score is not None:
                assert a.score == b.score and math.copysign(1, a.score) == math.copysign(1, b.score)
    return got


def v(judge, passed=True, score=0.5, explanation=None):
    return {"judge": judge, "passed": passed, "score": score, "explanation": explanation}


def test_rows_alike_share_one_mapping_and_rows_unlike_do_not():
    rows = [
        [v("a"), v("b", False, 1.0)],
        None,
        [v("a"), v("b", False, 1.0)],
        [],
        [v("b", False, 1.0), v("a")],  # the same verdicts in another order: another row
        [v("a", score=0.0)],
        [v("a", score=-0.0)],  # equal as numbers (``_verdicts`` gives both the first's mapping), not as bits
        [v("a", score=None)],
        [v("a", passed=None)],
        [v("a", explanation="x")],
        [v("a", explanation=None)],
        [v(None)],  # a judge without a name
        [v("a"), v("a", False)],  # a judge named twice: merged as making the row alone merges it
    ]
    got = _same(rows)
    assert got[0] is got[2]
    assert got[1] is got[3] and got[1] == {}
    assert len({id(m) for m in got}) == len(rows) - 3
    assert list(got[4]) == ["b", "a"] and got[4] is not got[0]
    assert got[5] is got[6]
    assert list(got[12]) == ["a"] and got[12]["a"].passed is False


def test_no_verdicts_at_all_and_an_empty_column():
    assert _same([None, [], None]) == [{}, {}, {}]
    assert _same([]) == []


def test_rows_wider_than_sixteen_verdicts_are_made_one_by_one():
    wide = [v(f"judge-{i}", i % 2 == 0, i / 20) for i in range(20)]
    got = _same([wide, wide[:3], wide])
    assert list(got[0]) == [f"judge-{i}" for i in range(20)]


def test_rows_too_many_to_number_as_one_are_sorted_and_values_too_many_made_one_by_one(monkeypatch):
    # 5 verdicts a row of 3,000 distinct codes: beyond 62 bits as one number, so rows are told apart by sorting
    rows = [[v(f"j{i}", None, i + 0.25, f"e{i}")] * 5 for i in range(3_000)] * 2
    got = _same(rows)
    assert got[0] is got[3_000] and got[0] is not got[1]
    # the verdicts' own values too many to number: each row made on its own, the same verdicts
    monkeypatch.setattr(table_frame, "_BITS", 8)
    assert table_frame._verdict_codes(_column(rows[:300]).flatten()) is None
    _same(rows[:300])


def test_random_rows_agree_with_making_each_row():
    rng = random.Random(7)
    judges, notes = ["a", "b", "c", None], [None, "", "x", "é", "\x00"]
    rows = []
    for _ in range(3000):
        k = rng.choice([0, 0, 1, 2, 3])
        rows.append(
            None
            if k == 0 and rng.random() < 0.5
            else [
                v(
                    rng.choice(judges),
                    rng.choice([True, False, None]),
                    rng.choice([None, 0.0, -0.0, 1.0, 1e300]),
                    rng.choice(notes),
                )
                for _ in range(k)
            ]
        )
    got = _same(rows)
    first = {}
    for row, mapping in zip(rows, got):  # one mapping per distinct row
        assert first.setdefault(repr(row), mapping) is mapping or repr(row) != repr(row)


@pytest.mark.parametrize("chunks", [1, 3])
def test_a_chunked_column_is_read_whole(chunks):
    rows = [[v("a")], None, [v("b", False)]] * 4
    column = pa.chunked_array([_column(rows[i::chunks]) for i in range(chunks)], KIND) if chunks > 1 else None
    if column is None:
        column = pa.chunked_array([_column(rows)], KIND)
        expected = rows
    else:
        expected = [r for i in range(chunks) for r in rows[i::chunks]]
    got = list(_verdict_maps(column))
    assert [list(m) for m in got] == [list(m) for m in _verdicts(expected)]


def _lists_same(rows):
    from reporting.format.table_records import python_values

    column = pa.array(rows, pa.list_(pa.string()))
    empty: list = []
    got = list(table_frame.shared_lists(column, empty))
    assert got == python_values(column, empty=[]) == rows
    assert all(g is empty for g, r in zip(got, rows) if r == [])
    assert all(g is None for g, r in zip(got, rows) if r is None)
    return got


def test_list_rows_alike_share_one_list_and_a_null_row_is_not_an_empty_one():
    rows = [["a", "b"], None, [], ["a", "b"], ["b", "a"], [None], [None, "a"], [], None, ["a"], ["a", "a"]] * 3
    got = _lists_same(rows)
    assert got[0] is got[3] and got[0] is not got[4] and got[5] is not got[6]
    assert len({id(g) for g in got if g is not None}) == len({repr(r) for r in rows if r is not None})
    assert _lists_same([None, None, []]) == [None, None, []]
    assert _lists_same([]) == []


def test_list_rows_wide_or_many_are_made_one_by_one(monkeypatch):
    wide = [[f"m{i}" for i in range(20)], []] * 3
    _lists_same(wide)
    many = [[f"m{i}", f"n{i}", f"o{i}", f"p{i}", f"q{i}"] for i in range(3_000)] * 2  # sorted, not hashed
    got = _lists_same(many)
    assert got[0] is got[3_000]
    monkeypatch.setattr(table_frame, "_BITS", 4)
    _lists_same(many[:50])


def test_random_list_rows_agree_with_making_each_row():
    rng = random.Random(11)
    words = ["refusal_bypass", "leak", "é", "", None]
    rows = [
        None if rng.random() < 0.1 else [rng.choice(words) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
        for _ in range(5000)
    ]
    _lists_same(rows)


def test_a_column_one_array_cannot_hold_is_made_chunk_by_chunk(monkeypatch):
    """Where a column's chunks cannot be combined into one array (more than 2 GB of text: Arrow's offsets), each
    chunk is made on its own: the same values."""
    rows = [[v("a")], None, [v("b", False)], []] * 5
    lists = [["x"], None, [], ["x", "y"]] * 5
    verdicts = pa.chunked_array([_column(rows[:7]), _column(rows[7:])], KIND)
    texts = pa.chunked_array([pa.array(lists[:9], pa.list_(pa.string())), pa.array(lists[9:], pa.list_(pa.string()))])

    def refuse(column):
        raise pa.ArrowInvalid("offset overflow while concatenating arrays")

    monkeypatch.setattr(table_frame, "_combined", refuse)
    assert [list(m) for m in _verdict_maps(verdicts)] == [list(m) for m in _verdicts(rows)]
    assert list(table_frame.shared_lists(texts, [])) == lists


def _dictionary_arrays():
    import pyarrow.compute as pc

    plain = pc.dictionary_encode(pa.array(["a", None, "b", "a", "c", None, "b"]))
    null_word = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 2, 1], pa.int32()), pa.array(["x", None, "z"]))
    unsigned = pa.DictionaryArray.from_arrays(pa.array([2, None, 0], pa.uint8()), pa.array(["x", "y", "z"]))
    return [plain, plain.slice(2), plain.slice(1, 4), null_word, null_word.slice(2, 2), plain.slice(0, 0), unsigned]


@pytest.mark.parametrize("index", range(7))
def test_a_dictionary_array_reads_as_arrow_reads_it(index):
    from reporting.format.table_records import plain_values, python_values

    array = _dictionary_arrays()[index]
    assert plain_values(array) == array.to_pylist()
    if array.type.index_type == pa.int32():
        chunked = pa.chunked_array([array, _dictionary_arrays()[0]])  # chunks of different dictionaries
        assert python_values(chunked) == chunked.to_pylist()


def test_a_repeated_dictionary_text_is_one_string_and_lists_of_dictionary_items_read_alike():
    from reporting.format.table_records import plain_values, python_values

    words = pa.array(["made " + "at run time"] * 2)  # two strings, equal, not one
    array = pa.DictionaryArray.from_arrays(pa.array([0, 0, 1, None]), words)
    got = plain_values(array)
    assert got[0] is got[1] and got[2] == got[0] and got[3] is None
    rows = [["a", "b"], None, [], ["a"], None, ["c", "a", "a"]]
    items = pa.array(rows, pa.list_(pa.dictionary(pa.int32(), pa.string())))
    assert python_values(items) == items.to_pylist() == rows
    assert python_values(items.slice(1)) == rows[1:]


def test_a_few_rows_of_a_long_dictionary_make_their_values_alone():
    """A slice of a column whose dictionary is longer than it: its rows' values, never the whole dictionary's (here
    a dictionary text no row uses cannot be made: bytes that are no UTF-8, which Arrow refuses to make a string of)."""
    from reporting.format.table_records import plain_values

    buffers = pa.array(["ok", "xx", "fine"]).buffers()
    data = bytearray(buffers[2].to_pybytes())
    data[2:4] = b"\xff\xfe"  # the second text
    words = pa.Array.from_buffers(pa.string(), 3, [None, buffers[1], pa.py_buffer(bytes(data))])
    with pytest.raises(UnicodeDecodeError):
        words.to_pylist()
    column = pa.DictionaryArray.from_arrays(pa.array([0, 2, 0, None, 2]), words)
    assert plain_values(column.slice(0, 2)) == ["ok", "fine"]
    assert plain_values(column.slice(2, 2)) == ["ok", None]
