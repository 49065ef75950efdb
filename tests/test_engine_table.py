"""The engine's table of a run read by columns takes its probe ids, categories and severities from the run's own
case table (``case_table.case_table(frame, run_table)``, what the dashboard and the report's data do): the same table,
column for column, as converting them back from the frame's Python strings, for every sample, imported and random
run, with and without cases not evaluated."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_columnar_v3 import PEER_FILES, imported  # noqa: F401 - the module's fixture
from test_pairing_table import _random_run

import reporting
from reporting.analysis.case_table import _evaluated_texts, case_table
from reporting.analysis.metrics import aggregate_metrics, cases_frame
from reporting.format.columnar_checks import plain_texts
from reporting.format.table_run import table_of
from reporting.report.build import run_data

SAMPLES = sorted(p for p in Path(__file__).resolve().parents[1].glob("sample_runs/*.json") if p.name.count(".") == 1)


def assert_same_engine_table(path):
    run = reporting.load_run(str(path)).run
    table = table_of(run)
    frame = cases_frame(run)
    if table is None:  # a run of case objects (another tool's file read by its importer): converted, as before
        assert run_data(run).table.equals(case_table(frame))
        return frame
    held, made = case_table(frame, table), case_table(frame)
    # (a category held as a dictionary, as the run's table holds it, the failure modes' names coded: the same texts)
    taken, converted = plain_texts(held), plain_texts(made)
    assert (
        str(made.schema.field("detected_failure_modes").type)
        == "list<item: dictionary<values=string, indices=int32, ordered=0>>"
    )
    assert taken.schema == converted.schema
    for name in converted.column_names:
        assert taken.column(name).equals(converted.column(name)), (path, name)
    assert set(_evaluated_texts(table, len(frame))) == {"probe_id", "category", "severity"}
    assert plain_texts(run_data(run).table).equals(converted)  # the report's data keeps the table taken so
    assert aggregate_metrics(frame, table=held) == aggregate_metrics(frame, table=made)  # the engine's figures
    return frame


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples(path):
    assert_same_engine_table(path)


@pytest.mark.parametrize("name", PEER_FILES)
def test_imported_runs(imported, name):  # noqa: F811 - the fixture
    for path in imported[name]:
        assert_same_engine_table(path)


@pytest.mark.parametrize("seed", range(8))
def test_random_runs_with_cases_not_evaluated(tmp_path, seed):
    document = _random_run(random.Random(seed), 120, version=2 + seed % 2)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert table_of(reporting.load_run(str(path)).run) is not None  # read by columns: the table is taken
    frame = assert_same_engine_table(path)
    evaluated = sum(case["passed"] is not None for case in document["cases"])
    assert len(frame) == evaluated < len(document["cases"])


def test_a_table_whose_rows_are_not_the_frames_gives_nothing_taken(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_random_run(random.Random(1), 50)))
    run = reporting.load_run(str(path)).run
    frame = cases_frame(run)
    assert _evaluated_texts(table_of(run), len(frame) - 1) == {}
    assert case_table(frame.iloc[1:], table_of(run)).equals(case_table(frame.iloc[1:]))
