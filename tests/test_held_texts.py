"""A run read by columns holds its long texts (task, input, response, explanation) as Arrow dictionaries where they
repeat, each distinct text of a batch once, and plain where they do not, as its first batch says
(``columnar_checks.worth_sharing``, ``shared_texts``): the same values as the per-record reader's, less memory,
whatever the batches' dictionaries; the run store's files keep the texts plain."""

import json

import pyarrow as pa
import pytest
from test_columnar import assert_read_alike, per_record
from test_columnar_lines import _loaded

import reporting
from reporting.format import columnar, columnar_checks, columnar_lines
from reporting.format.columnar import read_table
from reporting.format.columnar_checks import DICTIONARY_TEXTS, worth_sharing
from reporting.format.parquet import case_table
from reporting.format.synthetic import synthetic_run


def held_bytes(column) -> int:
    """The bytes a column's buffers hold, each buffer once: chunks that share one dictionary (the reader unifies
    them) hold it once, where Arrow's ``nbytes`` counts it in every chunk."""
    sizes: dict[int, int] = {}

    def walk(array) -> None:
        for buffer in array.buffers():
            if buffer is not None:
                sizes[buffer.address] = buffer.size
        kind = array.type
        if pa.types.is_dictionary(kind):
            walk(array.dictionary)
        elif pa.types.is_list(kind) and pa.types.is_dictionary(kind.value_type):
            walk(array.values.dictionary)

    for chunk in column.chunks:
        walk(chunk)
    return sum(sizes.values())


def _run(n, unique_responses=False):
    """A synthetic run of ``n`` cases (its tasks, inputs and responses repeat), or with every response its own."""
    document = synthetic_run(n, seed=3)
    if unique_responses:
        for i, case in enumerate(document["cases"]):
            case["response"] = f"{case['response']} [{i}]"
    return document


REPEATED = ("task", "response")  # a synthetic run's (its inputs repeat across batches more than within one)


def _kinds(table):
    return {
        name: "shared" if pa.types.is_dictionary(table.schema.field(name).type) else "plain"
        for name in DICTIONARY_TEXTS
    }


@pytest.mark.parametrize("chunk", [64, 1000])
def test_repeated_texts_are_held_once_and_read_alike(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(columnar, "CHUNK", chunk)  # several batches, each with a dictionary of its own
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(600)))
    fast, slow = read_table(str(path)), per_record(path)
    assert {_kinds(fast.table)[name] for name in REPEATED} == {"shared"}
    assert fast.table.column("response").num_chunks == -(-600 // chunk)
    assert_read_alike(fast, slow)  # every value the per-record reader's, the fingerprint too
    plain = case_table(slow.run)
    for name in REPEATED:
        assert held_bytes(fast.table.column(name)) < plain.column(name).nbytes / 2, name


def test_texts_that_do_not_repeat_stay_plain(tmp_path, monkeypatch):
    monkeypatch.setattr(columnar, "CHUNK", 100)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(400, unique_responses=True)))
    fast, slow = read_table(str(path)), per_record(path)
    kinds = _kinds(fast.table)
    assert kinds["response"] == "plain" and kinds["task"] == "shared"
    assert fast.table.schema.field("response").type == pa.string()
    assert_read_alike(fast, slow)


def test_the_choice_is_by_the_memory_each_form_takes():
    """Shared only where the dictionary takes under three quarters of the plain texts."""
    batch = pa.RecordBatch.from_pydict(
        {
            "task": ["a long text that repeats"] * 50 + [None] * 10,
            "response": [f"text {i}" for i in range(60)],
            "explanation": ["a", "b", "c"] * 20,  # one letter: its index takes more than sharing saves
            "category": ["a category that repeats"] * 60,  # a run's categories and lists' items: by the same rule
            "failure_modes": [["a failure mode that repeats"], []] * 30,
            "matched_safe_patterns": [[f"pattern {i}"] for i in range(60)],
            "probe_id": ["an id that repeats"] * 60,  # neither a long text nor a repeated column: never shared
        }
    )
    assert worth_sharing(batch) == {"task", "category", "failure_modes"}
    shared = columnar_checks.shared_texts(batch, worth_sharing(batch))
    texts = pa.dictionary(pa.int32(), pa.string())
    assert shared.schema.field("category").type == texts
    assert shared.schema.field("failure_modes").type == pa.list_(texts)
    assert shared.schema.field("matched_safe_patterns").type == pa.list_(pa.string())
    assert shared.to_pylist() == batch.to_pylist()


def test_json_lines_hold_their_repeated_columns_as_dictionaries_from_the_first_batch(tmp_path, monkeypatch):
    """The categories and the lists' items of a run read by lines are dictionaries in every batch as it is read (ten
    million cases held 1.2 GB of them as plain texts until the whole run was read, the reading's peak), the values
    the per-record reader's."""
    monkeypatch.setattr(columnar_lines, "LINE_BLOCK", 4096)
    monkeypatch.setattr(columnar, "CHUNK", 64)
    seen = []
    made = columnar_checks.shared_texts

    def shared_texts(batch, names):
        out = made(batch, names)
        seen.append(out.schema)
        return out

    monkeypatch.setattr(columnar, "shared_texts", shared_texts)
    document = _run(300)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in document["cases"]))
    read = _loaded(path)
    assert len(seen) > 3
    texts = pa.dictionary(pa.int32(), pa.string())
    for schema in seen:
        assert schema.field("category").type == texts
        assert schema.field("failure_modes").type == pa.list_(texts)
    slow = per_record(path)
    assert [c.model_dump() for c in read.run.cases] == [c.model_dump() for c in slow.run.cases]
    assert reporting.aggregate_metrics(read.run) == reporting.aggregate_metrics(slow.run)


@pytest.mark.parametrize("repeat_first", [True, False])
def test_the_first_batch_decides_and_the_values_stay_whatever_the_later_ones_hold(tmp_path, monkeypatch, repeat_first):
    """Responses that repeat in the first batch and not after (held shared: an index a case more), or the other
    way round (held plain): never both forms of one text at once, and the values the per-record reader's."""
    monkeypatch.setattr(columnar, "CHUNK", 100)
    document = _run(400)
    for i, case in enumerate(document["cases"]):
        if (i >= 100) == repeat_first:
            case["response"] = f"{case['response']} [{i}]"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    fast, slow = read_table(str(path)), per_record(path)
    assert _kinds(fast.table)["response"] == ("shared" if repeat_first else "plain")
    assert_read_alike(fast, slow)


def test_the_run_store_keeps_the_texts_plain(tmp_path, capsys):
    import pyarrow.parquet as pq

    from reporting.cli import main

    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(300)))
    assert {_kinds(read_table(str(path)).table)[name] for name in REPEATED} == {"shared"}
    assert main(["store", "add", str(path), "--store", str(tmp_path / "store")]) == 0
    capsys.readouterr()
    (stored,) = (tmp_path / "store").rglob("*.parquet")
    schema = pq.read_schema(stored)
    assert [schema.field(name).type for name in DICTIONARY_TEXTS] == [pa.string()] * len(DICTIONARY_TEXTS)
    assert pq.read_table(stored).column("response").to_pylist() == [c["response"] for c in _run(300)["cases"]]


def test_large_json_lines_hold_repeated_texts_once_with_the_same_cases_and_figures(tmp_path, monkeypatch):
    monkeypatch.setattr(columnar_lines, "LINE_BLOCK", 4096)
    document = _run(300)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in document["cases"]))
    read = _loaded(path)
    slow = per_record(path)
    table = read.run.cases.table
    assert {_kinds(table)[name] for name in REPEATED} == {"shared"}
    assert reporting.aggregate_metrics(read.run) == reporting.aggregate_metrics(slow.run)
    assert [c.model_dump() for c in read.run.cases] == [c.model_dump() for c in slow.run.cases]


def test_recompute_and_export_of_shared_texts_write_what_the_per_record_reading_writes(tmp_path, monkeypatch, capsys):
    """The verbs' outputs are the same bytes whether the texts were held shared or plain (the reader's sharing
    turned off by keeping every column plain)."""
    from reporting.cli import main

    monkeypatch.setattr(columnar, "CHUNK", 128)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(500)))
    outputs = {}
    for how in ("shared", "plain"):
        if how == "plain":
            monkeypatch.setattr(columnar, "worth_sharing", lambda batch: frozenset())
        out = tmp_path / f"{how}.json"
        assert main(["recompute", str(path), "-o", str(out)]) == 0
        outputs[how] = out.read_bytes()
    capsys.readouterr()
    assert outputs["shared"] == outputs["plain"]
    assert json.loads(outputs["shared"])["cases"][7]["response"] == _run(500)["cases"][7]["response"]


def test_a_columns_chunks_share_one_dictionary(tmp_path, monkeypatch):
    monkeypatch.setattr(columnar, "CHUNK", 64)  # ten chunks, each read with a dictionary of its own
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(600)))
    table = read_table(str(path)).table
    for name in ("response", "category"):
        chunks = table.column(name).chunks
        # (the engine's columns, the category among them, joined into chunks of CHUNK_ROWS: ``texts_in_fewer_chunks``)
        assert len(chunks) == (1 if name == "category" else 10) and pa.types.is_dictionary(chunks[0].type), name
        assert len({chunk.dictionary.buffers()[2].address for chunk in chunks}) == 1, name
        assert held_bytes(table.column(name)) < table.column(name).nbytes or len(chunks) == 1, name


def test_dictionaries_past_the_limit_stay_a_chunks_own(monkeypatch):
    from reporting.format import arrow_take

    chunks = [pa.array([f"text {i}-{k}" for k in range(50)] * 2).dictionary_encode() for i in range(4)]
    table = pa.table({"response": pa.chunked_array(chunks)})
    unified = arrow_take.dictionaries_unified(table).column("response")
    assert len({chunk.dictionary.buffers()[2].address for chunk in unified.chunks}) == 1
    assert unified.to_pylist() == table.column("response").to_pylist()
    monkeypatch.setattr(arrow_take, "UNIFIED_AT_MOST", sum(c.dictionary.nbytes for c in chunks) - 1)
    kept = arrow_take.dictionaries_unified(table).column("response")
    assert len({chunk.dictionary.buffers()[2].address for chunk in kept.chunks}) == 4


def test_a_text_column_of_many_chunks_is_joined_into_fewer_its_dictionary_kept(monkeypatch):
    """``texts_in_fewer_chunks``: consecutive chunks joined up to ``CHUNK_ROWS`` rows (or ``CHUNK_BYTES``), the values
    and their order unchanged, a dictionary the chunks share kept as the one dictionary; a column whose chunks hold
    dictionaries of their own, and a column of numbers, left as they are."""
    from reporting.format import arrow_take

    monkeypatch.setattr(arrow_take, "CHUNK_ROWS", 25)
    words = pa.array([f"category {i % 7}" for i in range(10)]).dictionary_encode().dictionary
    ids = [pa.array([f"id-{k}-{i}" if i != 3 else None for i in range(10)]) for k in range(10)]
    shared = [
        pa.DictionaryArray.from_arrays(pa.array([(i + k) % 7 for i in range(10)], pa.int32()), words) for k in range(10)
    ]
    own = [pa.array([f"r{k}"] * 9 + ["x"]).dictionary_encode() for k in range(10)]
    table = pa.table(
        {
            "probe_id": pa.chunked_array(ids),
            "category": pa.chunked_array(shared),
            "response": pa.chunked_array(own),
            "risk_score": pa.chunked_array([pa.array([0.5] * 10)] * 10),
        }
    )
    got = arrow_take.texts_in_fewer_chunks(table, ("probe_id", "category", "response", "risk_score", "absent"))
    assert [len(c) for c in got.column("probe_id").chunks] == [30, 30, 30, 10]
    assert [len(c) for c in got.column("category").chunks] == [30, 30, 30, 10]
    held = {c.dictionary.buffers()[2].address for c in got.column("category").chunks}
    assert held == {words.buffers()[2].address}
    assert got.column("response").num_chunks == 10 and got.column("risk_score").num_chunks == 10
    assert got.to_pylist() == table.to_pylist() and got.schema == table.schema
    monkeypatch.setattr(arrow_take, "CHUNK_BYTES", ids[0].nbytes * 2)  # at most two chunks' bytes in one
    assert [len(c) for c in arrow_take.texts_in_fewer_chunks(table, ("probe_id",)).column(0).chunks] == [20] * 5
