"""A run's case table holds its category and the items of its four lists (patterns, failure modes) as Arrow
dictionaries where the first batch's values repeat (``columnar_checks.worth_sharing``, ``repeated_kept``): a run's
dozen categories over its cases, a detector's patterns over its attempts. The values are the per-record reader's,
the verbs write the same bytes, and the run store's files keep the format's plain types."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_columnar import assert_read_alike, per_record
from test_held_texts import held_bytes

import reporting
from reporting.format import columnar, columnar_checks
from reporting.format.columnar import read_table
from reporting.format.columnar_checks import REPEATED, repeated_kept
from reporting.format.parquet import LISTS, _plain, case_table
from reporting.format.synthetic import synthetic_run

TEXTS = pa.dictionary(pa.int32(), pa.string())


def _run(n, unique=False):
    document = synthetic_run(n, seed=5)
    if unique:  # every category and every list item its own, and long: a dictionary would save nothing
        for i, case in enumerate(document["cases"]):
            case["category"] = f"category number {i} of a run whose categories never repeat"
            for name in LISTS:
                case[name] = [f"{name} item {i} {j} that never repeats anywhere" for j in range(2)]
    return document


def _held(table):
    return {name: _plain(table.schema.field(name).type) != table.schema.field(name).type for name in REPEATED}


@pytest.mark.parametrize("chunk", [64, 1000])
def test_repeated_categories_and_list_items_are_held_once_and_read_alike(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(columnar, "CHUNK", chunk)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(600)))
    fast, slow = read_table(str(path)), per_record(path)
    held = _held(fast.table)
    assert held["category"] and held["failure_modes"] and held["matched_safe_patterns"]
    assert fast.table.schema.field("category").type == TEXTS
    assert fast.table.schema.field("failure_modes").type == pa.list_(TEXTS)
    assert_read_alike(fast, slow)  # every value, the fingerprint too
    plain = case_table(slow.run)
    for name in REPEATED:
        if held[name]:
            assert held_bytes(fast.table.column(name)) < plain.column(name).nbytes * 3 / 4, name
    assert [c.model_dump() for c in reporting.load_run(str(path)).run.cases] == [c.model_dump() for c in slow.run.cases]


def test_values_that_do_not_repeat_stay_plain(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(300, unique=True)))
    fast, slow = read_table(str(path)), per_record(path)
    assert _held(fast.table) == {name: False for name in REPEATED}
    assert fast.table.schema.field("category").type == pa.string()
    assert_read_alike(fast, slow)


def test_the_choice_is_the_first_chunks_and_an_empty_table_is_left_as_it_is():
    table = pa.table(
        {
            "category": pa.chunked_array([["a repeated category"] * 40, [f"unique {i}" for i in range(40)]]),
            "failure_modes": pa.chunked_array([[[f"mode {i}"] for i in range(40)], [["same mode"]] * 40]),
            "probe_id": [f"p{i}" for i in range(80)],  # not a repeated column: never held so
        }
    )
    kept = repeated_kept(table)
    assert kept.schema.field("category").type == TEXTS
    assert kept.schema.field("failure_modes").type == pa.list_(pa.string())
    assert kept.schema.field("probe_id").type == pa.string()
    assert kept.column("category").to_pylist() == table.column("category").to_pylist()
    empty = table.slice(0, 0)
    assert repeated_kept(empty) is empty


def test_a_parquet_run_keeps_the_dictionaries_it_is_read_as(tmp_path):
    document = _run(200)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    run = reporting.load_run(str(path)).run
    out = tmp_path / "run.parquet"
    pq.write_table(case_table(run), out)  # the format's plain types, as another tool writes them
    assert pq.read_schema(out).field("category").type == pa.string()
    read = reporting.load_run(str(out))
    assert read.ok, read.problems
    table = read.run.cases.table
    assert _held(table) == {name: True for name in REPEATED}
    assert [c.model_dump() for c in read.run.cases] == [c.model_dump() for c in run.cases]
    assert reporting.aggregate_metrics(read.run) == reporting.aggregate_metrics(run)


def test_the_run_store_writes_them_plain(tmp_path, capsys):
    from reporting.cli import main

    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(300)))
    assert main(["store", "add", str(path), "--store", str(tmp_path / "store")]) == 0
    capsys.readouterr()
    (stored,) = (tmp_path / "store").rglob("*.parquet")
    schema = pq.read_schema(stored)
    assert schema.field("category").type == pa.string()
    assert [schema.field(name).type for name in LISTS] == [pa.list_(pa.string())] * len(LISTS)
    cases = _run(300)["cases"]
    assert pq.read_table(stored).column("failure_modes").to_pylist() == [c["failure_modes"] for c in cases]


@pytest.mark.parametrize("verb", ["recompute", "export", "lines"])
def test_the_verbs_write_the_same_bytes_held_or_plain(tmp_path, monkeypatch, capsys, verb):
    from reporting.cli import main

    monkeypatch.setattr(columnar, "CHUNK", 128)
    if verb == "lines":  # recompute's large-run writer: one case a line, made over the table's columns
        from reporting.commands import reports

        monkeypatch.setattr(reports, "COMPACT_ABOVE", 100)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(500)))
    outputs = {}
    for how in ("held", "plain"):
        if how == "plain":  # (neither as each batch is read, ``worth_sharing``, nor once all is: ``repeated_kept``)
            monkeypatch.setattr(columnar_checks, "REPEATED", ())
            monkeypatch.setattr(columnar_checks, "repeated_kept", lambda table: table)
        run = reporting.load_run(str(path)).run
        assert _held(run.cases.table)["category"] == (how == "held")
        suffix = {"recompute": "json", "export": "html", "lines": "lines.json"}[verb]  # (a report is never .jsonl)
        out = tmp_path / f"{how}.{suffix}"
        argv = ["export" if verb == "export" else "recompute", str(path), "-o", str(out)]
        argv += ["--timestamp", "2026-11-01T00:00:00Z"] if verb == "export" else []
        assert main(argv) == 0, capsys.readouterr()
        outputs[how] = out.read_bytes()
    capsys.readouterr()
    assert outputs["held"] == outputs["plain"]
    assert b"harmful_instructions" in outputs["held"]
