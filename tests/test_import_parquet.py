"""`import FILE -o RUN.parquet` (`--format parquet`): the run an importer makes written straight to a Parquet case
table, the same table `recompute RUN.json --format parquet` writes of the JSON run `import` writes, and the same
figures recomputed from either."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_columnar_v3 import FIXTURES, PEER_FILES

from reporting.cli import main
from reporting.format import import_table
from reporting.format.import_table import write_import_table
from reporting.format.parquet import case_table
from reporting.format.problems import InputError
from reporting.format.schema import RunReport

HEADER = {"schema_version": 3, "run": {"run_id": "r1", "model": "m"}, "tool_figures": {"garak_eval": [{"probe": "p"}]}}
BASE = {"probe_id": "a", "category": "c", "severity": "high", "passed": False, "risk_score": 0.75}


def _imported(tmp_path: Path, name: str, fmt: str) -> dict[str, Path]:
    out = tmp_path / fmt
    assert main(["import", str(FIXTURES / name), "-o", str(out), "--format", fmt]) == 0, name
    return {path.stem: path for path in sorted(out.glob(f"*.{fmt}"))}


@pytest.mark.parametrize("name", PEER_FILES)
def test_every_peer_file_imported_as_parquet_is_the_table_recompute_writes(tmp_path, name):
    as_json, as_parquet = _imported(tmp_path, name, "json"), _imported(tmp_path, name, "parquet")
    assert as_json.keys() == as_parquet.keys() and as_json
    (tmp_path / "recomputed").mkdir()
    for stem, path in as_json.items():
        table = tmp_path / "recomputed" / f"{stem}.json"
        assert main(["recompute", str(path), "--format", "parquet", "-o", str(table)]) == 0
        written, expected = pq.read_table(as_parquet[stem]), pq.read_table(table.with_suffix(".parquet"))
        assert written.equals(expected), stem
        assert written.schema.metadata == expected.schema.metadata, stem
        figures = [tmp_path / f"{stem}.{kind}.json" for kind in ("imported", "converted")]
        assert main(["recompute", str(as_parquet[stem]), "-o", str(figures[0])]) == 0
        assert main(["recompute", str(table.with_suffix(".parquet")), "-o", str(figures[1])]) == 0
        assert figures[0].read_bytes() == figures[1].read_bytes(), stem
        assert written.num_rows == len(json.loads(path.read_text())["cases"]) > 0


def test_plain_cases_are_written_without_the_model(tmp_path, monkeypatch):
    """garak's cases (texts, flags, numbers, verdicts, tags) take the direct way; a conversation takes the model's."""
    made = []
    validated = import_table._validated_row
    monkeypatch.setattr(import_table, "_validated_row", lambda case, *a: made.append(case) or validated(case, *a))
    garak = FIXTURES / "garak/peers_repeat_small.report.jsonl"
    assert main(["import", str(garak), "-o", str(tmp_path / "g.parquet")]) == 0
    assert pq.read_table(tmp_path / "g.parquet").num_rows == 142 and not made
    goat = FIXTURES / "garak/multiturn/goat_multiturn.report.jsonl"
    assert main(["import", str(goat), "-o", str(tmp_path / "m.parquet")]) == 0
    assert made and all(case.get("messages") for case in made)


def _written(cases: list) -> object:
    handle = io.BytesIO()
    assert write_import_table(handle, HEADER, iter(cases), "in.jsonl") == len(cases)
    return pq.read_table(io.BytesIO(handle.getvalue()))


EDGES = [
    {},
    {"passed": True, "risk_score": 0.0, "severity_weight": 0.5, "weighted_risk": 0.2},
    {"passed": None, "risk_score": None, "error": "timeout"},
    {"severity": " High "},  # normalised by the model
    {"verdicts": {"d": {"passed": False, "score": 1, "explanation": "e"}, "e": {"score": 0.5}}},  # an integer score
    {"verdicts": {"d": {"passed": True, "note": "kept?"}}},  # a verdict's own field
    {"tags": ["owasp:llm01"], "strategy": "s", "plugin": "p", "judged_turn": 1, "messages": None},
    {"tags": ["t"], "plugin": "p", "strategy": "s"},
    {"custom": {"deep": [1, 2]}, "task": "t", "response": "r"},
    {"matched_safe_patterns": ["x"], "failure_modes": ["f"], "safe_signal_hits": 2, "boundary_or_refusal_signal": True},
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "judged_turn": 1},
    {"limit": {"type": "token", "limit": 5}},
]


@pytest.mark.parametrize("edge", EDGES, ids=lambda e: ",".join(e) or "base")
def test_a_case_is_the_row_case_table_makes_of_it(edge):
    cases = [{**BASE, **edge, "probe_id": "a"}, {**BASE, "probe_id": "b"}]
    expected = case_table(RunReport.model_validate({**HEADER, "cases": cases}))
    assert _written(cases).equals(expected)


REFUSED = [
    ({"risk_score": 1.5}, "$.cases[1].risk_score"),
    ({"severity": "extreme"}, "$.cases[1].severity"),
    ({"passed": 1}, "$.cases[1].passed"),
    ({"boundary_or_refusal_signal": None}, "$.cases[1].boundary_or_refusal_signal"),
    ({"matched_safe_patterns": None}, "$.cases[1].matched_safe_patterns"),
    ({"safe_signal_hits": True}, "$.cases[1].safe_signal_hits"),
    ({"verdicts": {"d": {"score": float("nan")}}}, "$.cases[1].verdicts"),
    ({"probe_id": ""}, "$.cases[1].probe_id"),
    ({"passed": None, "error": "e"}, "$.cases[1].risk_score"),  # not evaluated, yet a risk
]


@pytest.mark.parametrize("edge,where", REFUSED, ids=[w for _, w in REFUSED])
def test_a_case_the_format_refuses_is_named(edge, where):
    with pytest.raises(InputError) as caught:
        _written([{**BASE, "probe_id": "z"}, {**BASE, **edge}])
    assert any(p.path.startswith(where) and p.file == "in.jsonl" for p in caught.value.problems), caught.value.lines


def test_a_text_parquet_cannot_hold_is_a_problem_of_its_cases():
    with pytest.raises(InputError) as caught:
        _written([{**BASE, "response": "\ud800"}])
    assert caught.value.problems[0].path == "$.cases[0:1]" and "Parquet" in caught.value.lines[0]


def test_batches_are_row_groups_and_the_header_rides_in_the_metadata(monkeypatch):
    monkeypatch.setattr(import_table, "BATCH", 4)
    cases = [{**BASE, "probe_id": f"c{i}", "risk_score": i / 10} for i in range(10)]
    handle = io.BytesIO()
    write_import_table(handle, HEADER, iter(cases), "in.jsonl")
    parquet = pq.ParquetFile(io.BytesIO(handle.getvalue()))
    assert [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)] == [4, 4, 2]
    assert parquet.read().equals(case_table(RunReport.model_validate({**HEADER, "cases": cases})))
    metadata = parquet.schema_arrow.metadata
    assert json.loads(metadata[b"runlens.run"]) == {**HEADER["run"], "suite": "unknown", "config": {}}  # (defaults)
    assert json.loads(metadata[b"runlens.tool_figures"]) == HEADER["tool_figures"]
    assert metadata[b"runlens.schema_version"] == b"3"


def test_an_empty_run_is_an_empty_table():
    table = _written([])
    assert table.num_rows == 0 and table.schema.metadata[b"runlens.run"]


def test_a_header_the_format_refuses_is_named():
    with pytest.raises(InputError) as caught:
        write_import_table(io.BytesIO(), {"run": {"run_id": 5, "model": "m"}}, iter([]), "in.jsonl")
    assert caught.value.problems[0].path.startswith("run.run_id")  # (the reader's own check of a run's header)


def test_the_command_line_names_and_refusals(tmp_path, capsys):
    garak = str(FIXTURES / "garak/peers_repeat_small.report.jsonl")
    out = tmp_path / "g.parquet"
    out.write_bytes(b"mine")
    assert main(["import", garak, "-o", str(out)]) == 2  # never overwritten
    assert out.read_bytes() == b"mine" and "exists already" in capsys.readouterr().err
    assert main(["import", garak, "-o", str(tmp_path / "g.json"), "--format", "parquet"]) == 2
    assert "disagree" in capsys.readouterr().err and not (tmp_path / "g.json").exists()
    assert main(["import", garak, "-o", str(tmp_path / "h.parquet"), "--format", "json"]) == 2
    promptfoo = str(FIXTURES / "promptfoo/promptfoo.json")
    assert main(["import", promptfoo, "-o", str(tmp_path / "p.parquet")]) == 2  # two models: a folder
    assert "must name a folder" in capsys.readouterr().err
    assert main(["import", promptfoo, garak, "-o", str(tmp_path / "runs"), "--format", "parquet"]) == 0
    written = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert written and all(name.endswith(".parquet") for name in written) and len(written) >= 3


def test_a_field_equal_to_a_plain_ones_value_is_still_checked():
    """The version 3 fields' JSON is made once per distinct values: true (a flag, equal to 1) is no turn's index."""
    first = {**BASE, "probe_id": "x", "judged_turn": 1, "tags": ["t"]}
    with pytest.raises(InputError) as caught:
        _written([first, {**first, "probe_id": "y", "judged_turn": True}])
    assert caught.value.problems[0].path.startswith("$.cases[1].judged_turn")
