"""Runs as Parquet case tables (issue 15): `recompute --format parquet` writes one beside the figures, and every
verb, the folder scan and the dashboard read it back as the same run; a broken or foreign Parquet file is a
named problem."""

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import reporting
from reporting.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SOURCES = [
    (ROOT / "sample_runs" / "acme-assistant-v1.json", None),  # signals, patterns, failure modes
    (FIXTURES / "garak" / "analyze_test_with_ci.report.jsonl", None),  # garak's own figures, which drift
    (FIXTURES / "garak" / "peers_repeat_small.report.jsonl", None),  # verdicts of several judges, repetitions
    (FIXTURES / "promptfoo" / "promptfoo.json", "canned-model"),  # errors
    (FIXTURES / "inspect" / "cli_mockllm_default.eval", None),
]


@pytest.mark.parametrize("source, model", SOURCES, ids=[s.name for s, _ in SOURCES])
def test_the_case_table_reads_back_as_the_same_run(tmp_path, source, model):
    extra = ["--model", model] if model else []
    out = tmp_path / "r.json"
    assert main(["recompute", str(source), *extra, "--format", "parquet", "-o", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["cases_file"] == "r.parquet" and "cases" not in written
    again = tmp_path / "again.json"
    assert main(["recompute", str(tmp_path / "r.parquet"), "-o", str(again)]) == 0
    reread = json.loads(again.read_text())
    for key in ("aggregate_metrics", "observability", "drift"):
        assert reread[key] == written[key], key
    original = reporting.load_run(source, model=model).run
    back = reporting.read_run(tmp_path / "r.parquet")
    assert back.run.run_id == original.run.run_id and back.run.model == original.run.model
    assert [c.probe_id for c in back.cases] == [c.probe_id for c in original.cases]
    assert [c.verdicts for c in back.cases] == [c.verdicts for c in original.cases]


def test_parquet_needs_an_output_and_bad_files_are_named(tmp_path, capsys):
    run = ROOT / "sample_runs" / "acme-assistant-v1.json"
    assert main(["recompute", str(run), "--format", "parquet"]) == 2
    assert "--format parquet: name the figures' file with -o OUT.json" in capsys.readouterr().err
    assert main(["recompute", str(run), "--format", "parquet", "-o", str(tmp_path / "r.json")]) == 0
    data = (tmp_path / "r.parquet").read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[:100] + data[-8:])
    assert main(["validate", str(cut)]) == 2
    assert f"{cut}: $: not a readable Parquet file" in capsys.readouterr().err
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"probe_id": ["a"], "score": [1.0]}), foreign)
    assert main(["validate", str(foreign)]) == 2
    err = capsys.readouterr().err
    assert "a Parquet case table needs the column(s) category, severity, passed, risk_score" in err


def test_a_folder_with_a_case_table_in_trend_and_the_dashboard(tmp_path, monkeypatch, capsys):
    from streamlit.testing.v1 import AppTest

    folder = tmp_path / "runs"
    folder.mkdir()
    v1 = ROOT / "sample_runs" / "acme-assistant-v1.json"
    assert main(["recompute", str(v1), "--format", "parquet", "-o", str(tmp_path / "v1.json")]) == 0
    shutil.copy(tmp_path / "v1.parquet", folder / "v1.parquet")
    shutil.copy(ROOT / "sample_runs" / "acme-assistant-v2.json", folder)
    assert main(["trend", str(folder), "-o", str(tmp_path / "t.json")]) == 0
    points = json.loads((tmp_path / "t.json").read_text())["points"]
    assert [p["run_id"] for p in points] == [
        "acme-assistant-v1_agent-safety-core",
        "acme-assistant-v2_agent-safety-core",
    ]
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert "v1.parquet | RunLens format | acme-assistant-v1" in at.sidebar.selectbox(key="run_choice").options
    at.sidebar.selectbox(key="run_choice").set_value("v1.parquet").run()
    expected = reporting.aggregate_metrics(reporting.read_run(v1))["overall"]["pass_rate"]
    assert {m.label: m.value for m in at.metric}["Pass rate"] == f"{expected:.1%}" and not at.exception


def test_the_stores_case_tables_are_runs_too(tmp_path):
    store = tmp_path / "store"
    run = ROOT / "sample_runs" / "acme-assistant-v2.json"
    assert main(["store", "add", str(run), "--store", str(store)]) == 0
    (table,) = store.rglob("*.parquet")
    back = reporting.read_run(table)
    original = reporting.read_run(run)
    assert back.run.model == original.run.model and len(back.cases) == len(original.cases)
    assert reporting.aggregate_metrics(back)["overall"] == reporting.aggregate_metrics(original)["overall"]


@pytest.mark.parametrize("source, model", SOURCES[:3], ids=[s.name for s, _ in SOURCES[:3]])
def test_a_table_of_several_row_groups_reads_as_one(tmp_path, source, model):
    """pq.write_table starts a row group every 1,048,576 rows, so a large run's table has several; pyarrow cannot read
    the list columns' texts as dictionaries across them (the 10M bench table was refused). Read a group at a time."""
    extra = ["--model", model] if model else []
    assert main(["recompute", str(source), *extra, "--format", "parquet", "-o", str(tmp_path / "r.json")]) == 0
    table = pq.read_table(tmp_path / "r.parquet")
    split = tmp_path / "split.parquet"
    pq.write_table(table, split, row_group_size=max(1, table.num_rows // 3), compression="zstd")
    assert pq.ParquetFile(split).num_row_groups >= 3
    whole, parts = reporting.read_run(tmp_path / "r.parquet"), reporting.read_run(split)
    assert [c.model_dump() for c in parts.cases] == [c.model_dump() for c in whole.cases]
    assert main(["recompute", str(split), "-o", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["aggregate_metrics"] == json.loads((tmp_path / "r.json").read_text())["aggregate_metrics"]
