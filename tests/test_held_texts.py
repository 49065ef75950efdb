"""A run read by columns holds its long texts (task, input, response, explanation) as Arrow dictionaries where they
repeat, each distinct text of a batch once, and plain where they do not (``columnar_checks.shared_texts`` and
``held_texts``): the same values as the per-record reader's, less memory, whatever the batches' dictionaries."""

import json

import pyarrow as pa
import pytest
from test_columnar import assert_read_alike, per_record
from test_columnar_lines import _loaded

import reporting
from reporting.format import columnar, columnar_lines
from reporting.format.columnar import read_table
from reporting.format.columnar_checks import DICTIONARY_TEXTS, held_texts
from reporting.format.parquet import case_table
from reporting.format.synthetic import synthetic_run


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
        assert fast.table.column(name).nbytes < plain.column(name).nbytes / 2, name


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
    """Shared only where the dictionary takes under three quarters of the plain texts; nulls are no text."""
    repeated = pa.chunked_array([pa.array(["a long text that repeats"] * 50 + [None] * 10).dictionary_encode()] * 2)
    distinct = pa.chunked_array([pa.array([f"text {i}" for i in range(120)]).dictionary_encode()])
    kept = held_texts(pa.table({"task": repeated, "response": distinct, "category": pa.array(["c"] * 120)}))
    assert pa.types.is_dictionary(kept.schema.field("task").type)
    assert kept.schema.field("response").type == pa.string()
    assert kept.column("response").to_pylist() == [f"text {i}" for i in range(120)]
    assert kept.column("task").to_pylist() == (["a long text that repeats"] * 50 + [None] * 10) * 2
    assert kept.schema.field("category").type == pa.string()


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
            monkeypatch.setattr(columnar, "held_texts", lambda table: table.cast(_plain_schema(table.schema)))
        out = tmp_path / f"{how}.json"
        assert main(["recompute", str(path), "-o", str(out)]) == 0
        outputs[how] = out.read_bytes()
    capsys.readouterr()
    assert outputs["shared"] == outputs["plain"]
    assert json.loads(outputs["shared"])["cases"][7]["response"] == _run(500)["cases"][7]["response"]


def _plain_schema(schema):
    return pa.schema(
        [pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f for f in schema], schema.metadata
    )
