"""A Parquet case table read by columns (issue 28): ``read_run`` of a table ``recompute --format parquet`` or the
run store wrote gives the run whose cases are the table's rows, with no case document made per row, and the same
run, frames, figures and written report as the per-record reader of the same table; every table that reader finds
a problem in, or that this path cannot vouch for, goes to the per-record reader, which names the problems."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from test_columnar_v3 import PEER_FILES, VARIATIONS, imported, variation_file  # noqa: F401 - the module's fixture
from test_table_run import errors_and_weights

import reporting
from reporting.analysis.metrics import aggregate_metrics, cases_frame, error_frame
from reporting.format.columnar_checks import ColumnarRun
from reporting.format.columnar_parquet import read_parquet_run
from reporting.format.parquet import (
    RUN_METADATA_KEY,
    SCHEMA_VERSION_KEY,
    case_table,
    read_parquet_document,
    write_case_table,
)
from reporting.format.severity import DEFAULT_SEVERITY_WEIGHTS
from reporting.format.table_run import table_of
from reporting.format.writing import dumps
from reporting.report.build import build_report
from reporting.report.serialise import report_document
from reporting.sources import reading

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = [p for p in sorted((ROOT / "sample_runs").glob("*.json")) if p.name.count(".") == 1]


def per_record(path: Path, monkeypatch):
    """The run as the per-record reader reads the table (a case document and a pydantic case per row)."""
    with monkeypatch.context() as patch:
        patch.setattr(reading, "read_parquet_run", read_parquet_document)
        return reporting.load_run(str(path))


def table_file(run, path: Path) -> Path:
    write_case_table(case_table(run), path)
    return path


def assert_alike(path: Path, monkeypatch, by_columns: bool = True) -> None:
    """The same run, frames, figures and written report both ways; ``by_columns``: the first read by columns (or,
    False, handed to the per-record reader)."""
    fast, slow = reporting.load_run(str(path)), per_record(path, monkeypatch)
    assert fast.ok and slow.ok, (fast.problems, slow.problems)
    assert (table_of(fast.run) is not None) == by_columns
    assert table_of(slow.run) is None
    assert fast.cases_in_file == slow.cases_in_file == len(slow.run.cases)
    assert fast.run.model_dump(exclude={"cases"}) == slow.run.model_dump(exclude={"cases"})
    assert fast.run.model_extra == slow.run.model_extra
    assert list(fast.run.cases) == list(slow.run.cases)
    assert [c.model_extra for c in fast.run.cases] == [c.model_extra for c in slow.run.cases]
    pd.testing.assert_frame_equal(cases_frame(fast.run), cases_frame(slow.run))
    pd.testing.assert_frame_equal(error_frame(fast.run), error_frame(slow.run))
    assert aggregate_metrics(fast.run) == aggregate_metrics(slow.run)
    documents = [dumps(report_document(build_report(r.run))) for r in (fast, slow)]
    assert documents[0] == documents[1]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_a_sample_run_as_parquet_is_read_by_columns_alike(path, tmp_path, monkeypatch):
    """A conversation rides in ``extra`` as the JSON columnar reader writes it (the turns as the models dump them,
    nulls too): read by columns as that reader reads it."""
    run = reporting.read_run(str(path))
    assert_alike(table_file(run, tmp_path / "run.parquet"), monkeypatch, by_columns=not any(c.limit for c in run.cases))


@pytest.mark.parametrize("name", PEER_FILES)
def test_an_imported_run_as_parquet_is_read_by_columns_alike(imported, name, tmp_path, monkeypatch):  # noqa: F811
    for i, path in enumerate(imported[name]):
        run = reporting.read_run(str(path))
        whole = not any(case.limit for case in run.cases)  # (a limit rides in extra without its nulls)
        assert_alike(table_file(run, tmp_path / f"run{i}.parquet"), monkeypatch, by_columns=whole)


@pytest.mark.parametrize("name", [n for n in VARIATIONS if VARIATIONS[n][2] is None][:12])
def test_a_hostile_run_as_parquet_is_read_alike(imported, tmp_path, name, monkeypatch):  # noqa: F811
    result = reporting.load_run(str(variation_file(imported, tmp_path, name)))
    if result.run is None or not result.run.cases:
        pytest.fail(f"{name}: no run to write ({result.problems[:1]})")
    whole = not any(case.limit for case in result.run.cases)
    assert_alike(table_file(result.run, tmp_path / "run.parquet"), monkeypatch, by_columns=whole)


def test_errors_weights_and_drift_survive_the_table(tmp_path, monkeypatch):
    document = errors_and_weights(3)
    source = tmp_path / "run.json"
    source.write_text(json.dumps(document))
    path = table_file(reporting.read_run(str(source)), tmp_path / "run.parquet")
    assert_alike(path, monkeypatch)
    run = reporting.read_run(str(path))
    assert run.cases[0].passed is None and run.cases[0].error == "timeout 0"
    assert run.cases[5].severity_weight == 2.5
    assert run.cases[1].severity_weight == DEFAULT_SEVERITY_WEIGHTS[run.cases[1].severity]  # the table's: effective


def _damaged(tmp_path: Path, change) -> Path:
    """The acme sample's table with ``change(table) -> table`` applied, written as a Parquet file."""
    table = change(case_table(reporting.read_run(str(ROOT / "sample_runs" / "acme-assistant-v1.json"))))
    path = tmp_path / "damaged.parquet"
    write_case_table(table, path)
    return path


def _column(name, values):
    def change(table):
        at = table.column_names.index(name)
        return table.set_column(at, table.schema.field(name), pa.array(values(table), table.schema.field(name).type))

    return change


def _verdicts(rows):
    return _column("verdicts", lambda t: rows + [[]] * (t.num_rows - len(rows)))


def _extra(text):
    return _column("extra", lambda t: [text] + [None] * (t.num_rows - 1))


def _version(value):
    def change(table):
        metadata = dict(table.schema.metadata)
        if value is None:
            metadata.pop(SCHEMA_VERSION_KEY)
        else:
            metadata[SCHEMA_VERSION_KEY] = value
        return table.replace_schema_metadata(metadata)

    return change


def _header(text):
    def change(table):
        return table.replace_schema_metadata({**table.schema.metadata, RUN_METADATA_KEY: text})

    return change


V = {"judge": "j", "passed": True, "score": 0.5, "explanation": None}
DAMAGE = {
    "a judge given twice in a case": _verdicts([[V, {**V, "passed": False}]]),
    "a verdict with no judge": _verdicts([[{**V, "judge": None}]]),
    "a verdict that is null": _verdicts([[None]]),
    "an infinite score": _verdicts([[{**V, "score": float("inf")}]]),
    "a NaN score": _verdicts([[{**V, "score": float("nan")}]]),
    "extra not JSON": _extra("{not json"),
    "extra an array": _extra("[1, 2]"),
    "extra with a duplicated key": _extra('{"a": 1, "a": 2}'),
    "extra hiding a field of the format": _extra('{"error": "hidden"}'),
    "extra hiding a count": _extra('{"safe_signal_hits": "many"}'),
    "extra with bad messages": _extra('{"messages": [{"role": 3}]}'),
    "a conversation": _extra('{"messages": [{"role": "assistant", "content": "yo"}], "judged_turn": 0}'),
    "a limit": _extra('{"limit": {"type": "time"}}'),
    "a judged turn that is a user turn": _extra(
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "judged_turn": 0}'
    ),
    "a judged turn past the conversation": _extra(
        '{"messages": [{"role": "assistant", "content": "yo"}], "judged_turn": 4}'
    ),
    "a tag that is not text": _extra('{"tags": [1]}'),
    "a table written before version 3": _version(None),
    "a newer version": _version(b"9"),
    "a header not an object": _header(b"[1]"),
    "a header with a bad time": _header(b'{"run_id": "r", "created_at": "yesterday"}'),
    "a probe id repeated": _column("probe_id", lambda t: ["same"] * t.num_rows),
    "an empty probe id": _column("probe_id", lambda t: [""] + t.column("probe_id").to_pylist()[1:]),
    "a severity unknown": _column("severity", lambda t: ["severe"] * t.num_rows),
    "a risk above 1": _column("risk_score", lambda t: [1.5] + t.column("risk_score").to_pylist()[1:]),
    "a null pattern": _column(
        "matched_safe_patterns", lambda t: [[None]] + t.column("matched_safe_patterns").to_pylist()[1:]
    ),
    "an evaluated case with an error": _column("error", lambda t: ["boom"] + [None] * (t.num_rows - 1)),
    "a case neither evaluated nor in error": _column("passed", lambda t: [None] + t.column("passed").to_pylist()[1:]),
    "a case not evaluated that gives a risk": lambda t: _column(
        "error", lambda t: ["timeout"] + [None] * (t.num_rows - 1)
    )(_column("passed", lambda t: [None] + t.column("passed").to_pylist()[1:])(t)),
    "a column beyond the format's": lambda t: t.append_column("strategy", pa.array(["crescendo"] * t.num_rows)),
    "a column of the format's missing": lambda t: t.drop_columns(["safe_signal_hits"]),
    "a list column missing": lambda t: t.drop_columns(["detected_failure_modes"]),
    "a column given twice": lambda t: t.append_column("probe_id", t.column("probe_id")),
}


@pytest.mark.parametrize("name", DAMAGE)
def test_a_table_it_cannot_vouch_for_goes_to_the_per_record_reader(name, tmp_path, monkeypatch):
    path = _damaged(tmp_path, DAMAGE[name])
    assert not isinstance(read_parquet_run(path.read_bytes(), str(path)), ColumnarRun), name
    fast, slow = reporting.load_run(str(path)), per_record(path, monkeypatch)
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
    if fast.run is not None:
        assert table_of(fast.run) is None
        assert list(fast.run.cases) == list(slow.run.cases)


def test_a_good_verdict_and_extra_are_read_by_columns(tmp_path, monkeypatch):
    """The damage above is what sends a table away: the same columns, well formed, are read by columns."""
    judged = _verdicts([[V, {**V, "judge": "k", "passed": None, "score": None}], [{**V, "score": -3.0}]])
    path = _damaged(tmp_path, lambda t: _extra('{"note": [1, {"x": "y"}], "strategy": "crescendo"}')(judged(t)))
    assert isinstance(read_parquet_run(path.read_bytes(), str(path)), ColumnarRun)
    assert_alike(path, monkeypatch)
    run = reporting.read_run(str(path))
    assert run.cases[0].strategy == "crescendo" and run.cases[0].model_extra == {"note": [1, {"x": "y"}]}
    assert run.cases[0].verdicts["k"].passed is None and run.cases[1].verdicts["j"].score == -3.0


TURNS = (
    '[{"role": "user", "content": "hi", "tool_calls": [], "tool_call_id": null}, '
    '{"role": "assistant", "content": "yo", "tool_calls": [], "tool_call_id": null, "id": "t2"}]'
)


def test_a_conversation_as_the_reader_writes_it_is_read_by_columns(tmp_path, monkeypatch):
    """A conversation in ``extra`` exactly as the columnar reader of JSON writes it (each turn's declared fields with
    their defaults, nulls too, then its own) is read by columns; the same turns with a null left out, or in another
    key order, go to the per-record reader (the "a conversation" damage above: no defaults at all)."""
    given = '{"note": 1, "messages": ' + TURNS + ', "judged_turn": 1, "strategy": "crescendo"}'
    path = _damaged(tmp_path, _extra(given))
    assert isinstance(read_parquet_run(path.read_bytes(), str(path)), ColumnarRun)
    assert_alike(path, monkeypatch)
    case = reporting.read_run(str(path)).cases[0]
    assert [m.role for m in case.messages] == ["user", "assistant"] and case.judged_turn == 1
    assert case.messages[1].model_extra == {"id": "t2"} and case.model_extra == {"note": 1}
    for other in (
        given.replace(', "tool_call_id": null, "id"', ', "id"'),  # a null left out
        '{"messages": ' + TURNS + ', "note": 1, "judged_turn": 1}',  # its own field after the format's
        given.replace('"judged_turn": 1', '"judged_turn": 0'),  # a judged turn that is the user's
    ):
        path = _damaged(tmp_path, _extra(other))
        assert not isinstance(read_parquet_run(path.read_bytes(), str(path)), ColumnarRun), other
        fast, slow = reporting.load_run(str(path)), per_record(path, monkeypatch)
        assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
        assert fast.run is None or list(fast.run.cases) == list(slow.run.cases)


def _pages(folder: Path, monkeypatch) -> dict:
    """Each dashboard page on the one run in ``folder``: its metrics, tables and texts, or its errors."""
    from apptest import PAGE_NAMES, open_page
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    shown = {}
    for name in PAGE_NAMES:
        open_page(at, name).run()
        assert not at.exception, (name, [e.value for e in at.exception])
        shown[name] = {
            "errors": [e.value for e in at.error],
            "metrics": [(m.label, m.value) for m in at.metric],
            "tables": [d.value.astype(str).to_dict("list") for d in at.dataframe],
            "texts": [t.value for t in at.text if "parquet" not in str(t.value) and "json" not in str(t.value)],
        }
    return shown


def test_the_dashboard_shows_a_parquet_run_as_it_shows_the_run(tmp_path, monkeypatch):
    """Every page of the dashboard on the agent-free sample as JSON and as its Parquet table (texts held as
    dictionaries, read by columns): the same figures, tables and texts, no error."""
    source = ROOT / "sample_runs" / "acme-assistant-v2.json"
    as_json, as_table = tmp_path / "json", tmp_path / "table"
    as_json.mkdir()
    as_table.mkdir()
    (as_json / "run.json").write_bytes(source.read_bytes())
    path = table_file(reporting.read_run(str(source)), as_table / "run.parquet")
    assert table_of(reporting.read_run(str(path))).schema.field("response").type == pa.dictionary(
        pa.int32(), pa.string()
    )
    shown, expected = _pages(as_table, monkeypatch), _pages(as_json, monkeypatch)
    assert not any(page["errors"] for page in expected.values())
    for name in expected:
        assert shown[name] == expected[name], name
    assert any(page["metrics"] for page in shown.values()) and any(page["tables"] for page in shown.values())
