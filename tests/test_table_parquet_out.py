"""``recompute --format parquet`` of a run read by columns writes the run's own table (``table_run.run_case_table``),
no case object made: the same case table ``parquet.case_table`` makes of the run read case by case, column by column
and in its metadata, for sample, imported, hostile, reviewed and relabelled runs."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_columnar_v3 import PEER_FILES, VARIATIONS, imported, variation_file  # noqa: F401 - the module's fixture
from test_review_table import _reviewed
from test_table_run import SAMPLES, errors_and_weights, read_by_columns

import reporting
from reporting.cli import main
from reporting.format import table_run
from reporting.format.parquet import TOOL_FIGURES_KEY, case_table
from reporting.format.reading import load_document
from reporting.format.table_run import TableCases, run_case_table, table_of, updated_cases
from reporting.report import serialise


def per_record(path: Path):
    return load_document(str(path), [path.read_bytes()]).run


def assert_same_table(fast, slow, key=None) -> None:
    made, reference = run_case_table(fast, key), case_table(slow, key)
    assert made.schema.names == reference.schema.names
    for name in reference.column_names:
        assert made.column(name).equals(reference.column(name)), name
    assert made.schema.equals(reference.schema, check_metadata=True)


def _by_columns(path: Path):
    run = reporting.load_run(str(path)).run
    assert table_of(run) is not None, path
    return run


@pytest.mark.parametrize("path", [p for p in SAMPLES if '"limit"' not in p.read_text()], ids=lambda p: p.name)
def test_a_sample_runs_table_is_its_case_table(path):
    assert_same_table(_by_columns(path), per_record(path))
    assert_same_table(_by_columns(path), per_record(path), key="k1")


def test_errors_given_weights_and_stored_figures(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(errors_and_weights(2)))
    assert_same_table(_by_columns(path), per_record(path))


@pytest.mark.parametrize("name", PEER_FILES)
def test_an_imported_runs_table_is_its_case_table(imported, name):  # noqa: F811
    for path in imported[name]:
        if read_by_columns(path, name):
            assert_same_table(_by_columns(path), per_record(path))


@pytest.mark.parametrize("name", [n for n in VARIATIONS if VARIATIONS[n][2] is None][:8])
def test_a_hostile_runs_table_is_its_case_table(imported, tmp_path, name):  # noqa: F811
    path = variation_file(imported, tmp_path, name)
    fast = reporting.load_run(str(path)).run
    if fast is not None and table_of(fast) is not None:
        assert_same_table(fast, per_record(path))


def test_updated_rows_and_dropped_tool_figures(imported):  # noqa: F811
    """A run as reviewed or relabelled is its table with rows replaced: written, it is the case table of the case
    objects updated alike; the producer's figures go with ``stored_figures=False``."""
    path = imported["garak/peers_repeat_small.report.jsonl"][0]
    fast, slow = _by_columns(path), per_record(path)
    ids = [case.probe_id for case in slow.cases]
    updates = {
        ids[0]: {"passed": False, "risk_score": 0.9, "severity": "critical"},
        ids[2]: {"passed": None, "error": "reviewed as unsure", "risk_score": None},
        ids[3]: {"severity_weight": 2.0, "weighted_risk": 0.5},
    }
    for stored in (True, False):
        runs = [
            run.model_copy(update={"cases": updated_cases(run, updates, stored_figures=stored)}) for run in (fast, slow)
        ]
        if not stored:  # (as reviewed_run drops them from the header too)
            runs = [run.model_copy(update={"tool_figures": None}) for run in runs]
        assert isinstance(runs[0].cases, TableCases)
        assert_same_table(*runs)
        assert (TOOL_FIGURES_KEY in (run_case_table(runs[0]).schema.metadata or {})) == stored


def test_recompute_format_parquet_makes_no_case(tmp_path, monkeypatch):
    """The command line: the Parquet file written of a run read by columns is the case table of the run read case by
    case, and no ``Case`` was made for it, nor a record of each case for the figures' file."""
    path = _reviewed(tmp_path, 3)
    made = []
    rows = TableCases._cases

    def counted(self, *args, **kwargs):
        made.append(1)
        return rows(self, *args, **kwargs)

    monkeypatch.setattr(TableCases, "_cases", counted)
    monkeypatch.setattr(table_run, "case_table", lambda *a, **k: pytest.fail("made a case per case"))
    # nor a record of every case for the figures' document, which holds none (cases_file names the table)
    monkeypatch.setattr(serialise, "case_records", lambda *a, **k: pytest.fail("made a record per case"))
    out = tmp_path / "out.json"
    assert main(["recompute", str(path), "--as", "reviewed", "--format", "parquet", "-o", str(out)]) == 0
    written = pq.read_table(out.with_suffix(".parquet"))
    monkeypatch.undo()
    assert main(["recompute", str(path), "--as", "reviewed", "-o", str(tmp_path / "plain.json")]) == 0
    assert not made
    run = reporting.load_run(str(path)).run
    assert table_of(run) is not None and written.num_rows == len(run.cases)
    reread = reporting.load_run(str(out.with_suffix(".parquet"))).run
    plain = json.loads((tmp_path / "plain.json").read_text())
    written_verdicts = {c.probe_id: c.passed for c in reread.cases}
    assert written_verdicts == {c["probe_id"]: c.get("passed") for c in plain["cases"] + plain.get("errors", [])}
    assert None in written_verdicts.values()  # (the unsure decisions: not evaluated as reviewed)


def test_the_figures_file_beside_the_table_is_no_run(tmp_path, capsys):
    """`recompute --format parquet` writes the figures with no cases (`cases_file` names the table): read as a run it
    is refused, naming the table to read, rather than read as a run of no case drifting from every figure; the name
    is shown as text, never opened."""
    out = tmp_path / "out.json"
    assert main(["recompute", str(SAMPLES[0]), "--format", "parquet", "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    assert "cases" not in document and document["cases_file"] == "out.parquet"
    large = tmp_path / "large.json"  # (a large run's figures are written with an empty list of cases)
    large.write_text(json.dumps({**document, "cases": []}))
    capsys.readouterr()
    for path in (out, large):
        verbs = (["validate", str(path)], ["recompute", str(path)], ["export", str(path), "-o", str(tmp_path / "r")])
        for verb in verbs:
            assert main(verb) == 2, verb
            err = capsys.readouterr().err
            assert "cases_file" in err and "read that table" in err and '"out.parquet"' in err, err
    assert main(["recompute", str(out.with_suffix(".parquet")), "-o", str(tmp_path / "again.json")]) == 0
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps({**document, "cases_file": "../../etc/passwd\n<script>"}))
    assert main(["validate", str(hostile)]) == 2
    assert "\\n<script>" in capsys.readouterr().err  # one line, as text
