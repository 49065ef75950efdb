"""What a case frame holds a case (issue 28, the 10M dashboard): the probe ids as pandas' Arrow-backed text, not a
Python string a case, and one shared array of None for every column no case has a value in, not one a column. The
values are those of the frame read case by case (``test_table_run`` compares the two frames on every sample)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_columnar import per_record

import reporting
from reporting.analysis.case_table import case_table
from reporting.analysis.grouping import probe_keys
from reporting.analysis.metrics import cases_frame, error_frame
from reporting.format.synthetic import synthetic_run
from reporting.format.table_run import table_of

EMPTY = ("probe_group", "source_id", "strategy", "plugin", "messages", "judged_turn", "tags")


def _run(tmp_path, edit=None, n=40, name="run.json"):
    document = {**synthetic_run(n, seed=3), "schema_version": 2}
    if edit is not None:
        edit(document["cases"])
    path = tmp_path / name
    path.write_text(json.dumps(document))
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert fast.ok and slow.ok and table_of(fast.run) is not None and table_of(slow.run) is None
    return fast.run, slow.run


def test_columns_no_case_has_share_one_array_of_none(tmp_path):
    run, slow = _run(tmp_path)
    frame = cases_frame(run)
    arrays = [frame[name].to_numpy() for name in EMPTY]
    assert all(a.dtype == object and len(a) == 40 and all(v is None for v in a) for a in arrays)
    assert all(np.shares_memory(arrays[0], a) for a in arrays[1:])
    # the figures' frame: the texts it leaves out are that array too
    bare = cases_frame(run, texts=False)
    assert np.shares_memory(bare["response"].to_numpy(), bare["probe_group"].to_numpy())
    assert not np.shares_memory(frame["response"].to_numpy(), frame["probe_group"].to_numpy())
    pd.testing.assert_frame_equal(frame, cases_frame(slow))


def test_a_column_one_case_has_is_its_own(tmp_path):
    def edit(cases):
        cases[5]["source_id"] = "row-5"
        cases[7]["probe_group"] = "g"

    run, slow = _run(tmp_path, edit)
    frame = cases_frame(run)
    assert frame["source_id"].tolist() == [None] * 5 + ["row-5"] + [None] * 34
    assert frame["probe_group"].iat[7] == "g" and frame["probe_group"].isna().sum() == 39
    assert not np.shares_memory(frame["source_id"].to_numpy(), frame["strategy"].to_numpy())
    assert not np.shares_memory(frame["probe_group"].to_numpy(), frame["strategy"].to_numpy())
    assert np.shares_memory(frame["plugin"].to_numpy(), frame["strategy"].to_numpy())
    pd.testing.assert_frame_equal(frame, cases_frame(slow))


def test_the_shared_array_is_one_value_read_only_and_copies_are_the_callers(tmp_path):
    def edit(cases):
        for case in cases:
            case.pop("weighted_risk")

    run, slow = _run(tmp_path, edit)
    frame = cases_frame(run)
    pd.testing.assert_frame_equal(frame, cases_frame(slow))
    shared = frame["strategy"].to_numpy()
    assert shared.strides == (0,) and not shared.flags.writeable  # 8 bytes, whatever the run's size
    assert frame["stored_weighted_risk"].to_numpy().strides == (0,)  # no case gave a weighted risk: NaN, once
    assert frame["stored_weighted_risk"].isna().all()
    with pytest.raises(ValueError, match="read-only"):  # a write in place fails, never changes six other columns
        frame.loc[0, "strategy"] = "changed"
    assert all(v is None for v in frame["tags"])
    kept = frame[frame["passed"].to_numpy()].copy()
    kept["strategy"] = "changed"
    kept.loc[kept.index[0], "tags"] = "mine"
    assert all(v is None for v in frame["strategy"]) and all(v is None for v in frame["tags"])


def test_probe_ids_are_arrow_text_and_read_as_strings(tmp_path):
    def edit(cases):
        cases[0]["probe_id"] = "é-ü 🐍 <b>"  # text beyond ASCII and markup: values, not bytes
        cases[3].update(passed=None, risk_score=None, error="timeout")
        for name in ("severity_weight", "weighted_risk"):
            cases[3].pop(name)

    run, slow = _run(tmp_path, edit)
    ids = [c["probe_id"] for c in json.loads((tmp_path / "run.json").read_text())["cases"]]
    for r in (run, slow):
        frame, errors = cases_frame(r), error_frame(r)
        assert isinstance(frame["probe_id"].dtype, pd.StringDtype) and frame["probe_id"].dtype.storage == "pyarrow"
        assert frame["probe_id"].tolist() == ids[:3] + ids[4:]
        assert all(type(v) is str for v in frame["probe_id"])
        assert errors["probe_id"].tolist() == [ids[3]]
        match = frame["probe_id"] == ids[0]
        assert match.dtype == bool and match.sum() == 1 and frame[match].index.tolist() == [0]
        assert frame["probe_id"].isin(ids[5:7]).to_numpy().nonzero()[0].tolist() == [4, 5]
        assert sorted(frame["probe_id"]) == frame["probe_id"].sort_values().tolist()  # code point order, as Python
        table = case_table(frame, table_of(r))
        assert table.column("probe_id").to_pylist() == ids[:3] + ids[4:]


def test_probe_keys_of_arrow_text_are_those_of_python_strings():
    ids = ["b", "a", "b", "c", "a", "d"]
    text = pd.Series(pd.array(ids, dtype="str"))
    assert probe_keys(text, None).tolist() == probe_keys(ids, None).tolist() == [0, 1, 0, 2, 1, 3]
    groups = [None, "g", None, "g", "", None]
    assert probe_keys(text, groups).tolist() == probe_keys(ids, groups).tolist() == [0, 1, 0, 1, 2, 3]
    nothing = [None] * 6
    assert probe_keys(text, nothing).tolist() == [0, 1, 0, 2, 1, 3]
    # a group spelled as another case's probe id is that key
    assert probe_keys(text, [None, None, None, "a", None, None]).tolist() == [0, 1, 0, 1, 1, 2]


def test_framework_groups_keep_the_ids_as_arrow_text(tmp_path):
    import pyarrow as pa

    from reporting.report.build import build_report, make_run_data
    from reporting.report.frameworks import kept_cases

    def edit(cases):
        cases[3].update(passed=None, risk_score=None, error="timeout")  # an error: the ids of two frames, in order
        for name in ("severity_weight", "weighted_risk"):
            cases[3].pop(name)

    run, slow = _run(tmp_path, edit)
    data = make_run_data(reporting.load_run(str(tmp_path / "run.json")))
    ids = json.loads((tmp_path / "run.json").read_text())
    ids = [c["probe_id"] for c in ids["cases"]]
    assert isinstance(data.cases.ids, pa.ChunkedArray) and data.cases.ids.to_pylist() == ids
    shuffled = cases_frame(run).iloc[::-1]  # frames out of the run's order: taken back into it
    assert kept_cases(run, shuffled, error_frame(run))["probe_id"].to_pylist() == ids
    assert kept_cases(slow, cases_frame(slow), error_frame(slow))["probe_id"].to_pylist() == ids
    fast_figures = build_report(data, with_observability=False).frameworks.figures
    slow_figures = build_report(slow, with_observability=False).frameworks.figures
    assert fast_figures == slow_figures
    failing = [row["failing_case_ids"] for items in fast_figures.values() for row in items.values()]
    assert any(len(f) > 1 for f in failing)
    for found in failing:
        listed = list(found)
        assert all(type(i) is str for i in listed) and listed == sorted(listed, key=ids.index)
        if listed:
            assert found[0] == listed[0] and found[-1] == listed[-1] and found[1:3] == listed[1:3]
            with pytest.raises(IndexError):
                found[len(listed)]


def test_each_case_its_own_repetition_key_when_no_id_repeats_and_no_case_names_a_group(tmp_path, monkeypatch):
    from reporting.analysis import metrics

    run, slow = _run(tmp_path)
    expected = cases_frame(slow)["probe_key"]  # hashed, as the per-record frame's keys are
    calls = []
    monkeypatch.setattr(metrics, "probe_keys", lambda *args: calls.append(args) or probe_keys(*args))
    frame = cases_frame(run)
    assert frame["probe_key"].tolist() == expected.tolist() == list(range(40)) and not calls

    def edit(cases):
        cases[9]["probe_group"] = cases[2]["probe_id"]  # a group spelled as another case's id: one key

    grouped, slow = _run(tmp_path, edit, name="grouped.json")
    keys = cases_frame(grouped)["probe_key"].tolist()
    assert calls and keys == cases_frame(slow)["probe_key"].tolist() and keys[9] == keys[2] and len(set(keys)) == 39


def test_text_columns_no_case_has_are_one_array_of_nulls_in_the_table(tmp_path):
    from reporting.format.columnar_checks import nulls_shared

    run, _ = _run(tmp_path)
    table = table_of(run)
    empty = ["run_key", "probe_group", "error", "source_id", "extra"]
    buffers = {name: table.column(name).chunk(0).buffers()[1].address for name in empty}
    assert len(set(buffers.values())) == 1 and all(table.column(name).null_count == 40 for name in empty)

    def edit(cases):
        cases[4]["source_id"] = "s-4"

    run, slow = _run(tmp_path, edit, name="one.json")
    table = table_of(run)
    assert table.column("source_id").to_pylist() == [None] * 4 + ["s-4"] + [None] * 35
    assert (
        table.column("source_id").chunk(0).buffers()[1].address != table.column("error").chunk(0).buffers()[1].address
    )
    assert [c.source_id for c in run.cases] == [c.source_id for c in slow.cases]
    one = table.select(["probe_id", "source_id"])
    assert nulls_shared(one) is one  # a single empty column: nothing to share


def test_the_frames_risks_are_the_tables_own_numbers(tmp_path):
    run, slow = _run(tmp_path)
    frame, table = cases_frame(run), table_of(run)
    for name in ("risk_score", "severity_weight", "weighted_risk"):
        column = table.column(name)
        values = frame[name].to_numpy()
        assert column.num_chunks == 1 and column.null_count == 0  # read in place: no copy of ten million numbers
        assert values.__array_interface__["data"][0] == column.chunk(0).buffers()[1].address, name
        assert not values.flags.writeable
        assert values.tolist() == cases_frame(slow)[name].tolist(), name


def _split_parquet(tmp_path, groups=4):
    """A run as a Parquet case table of several row groups (read as that many chunks), and the same run as JSON."""
    import pyarrow.parquet as pq

    from reporting.cli import main

    _, slow = _run(tmp_path, n=60)
    assert main(["recompute", str(tmp_path / "run.json"), "--format", "parquet", "-o", str(tmp_path / "r.json")]) == 0
    split = tmp_path / "split.parquet"
    table = pq.read_table(tmp_path / "r.parquet")
    pq.write_table(table, split, row_group_size=table.num_rows // groups, compression="zstd")
    read = reporting.load_run(str(split))
    assert read.ok and table_of(read.run) is not None
    return read.run, slow


def test_a_chunked_tables_numbers_are_one_chunk_read_in_place(tmp_path):
    run, slow = _split_parquet(tmp_path)
    table = table_of(run)
    assert table.column("response").num_chunks >= 4  # the texts keep their row groups' chunks
    assert table.column("probe_id").num_chunks == 1  # (but the engine's, joined up to a million rows a chunk)
    frame = cases_frame(run)
    for name in ("risk_score", "safe_signal_hits", "unsafe_signal_hits"):
        column = table.column(name)
        assert column.num_chunks == 1, name
        assert frame[name].to_numpy().__array_interface__["data"][0] == column.chunk(0).buffers()[1].address, name
    for name in ("risk_score", "severity_weight", "weighted_risk", "safe_signal_hits", "severity"):
        assert frame[name].tolist() == cases_frame(slow)[name].tolist(), name


def test_severities_are_the_tiers_numbers(tmp_path):
    run, slow = _split_parquet(tmp_path)
    severity, expected = cases_frame(run)["severity"], cases_frame(slow)["severity"]
    assert severity.dtype == expected.dtype and severity.cat.ordered
    assert severity.cat.codes.tolist() == expected.cat.codes.tolist()


def test_a_text_repeated_across_chunks_is_one_string():
    import pyarrow as pa

    from reporting.analysis.table_frame import _shared_texts

    first, second = "".join(["a", "b", "c"]), "".join(["x", "y"])  # (made, not literals: not interned by Python)
    chunks = [[first, first, None, second], [second, first, first, first], [f"{first}!", "q", "r", "s"]]
    column = pa.chunked_array([pa.array(chunk, pa.string()) for chunk in chunks])
    values = _shared_texts(column).to_numpy()
    assert values.tolist() == column.to_pylist()
    assert values[0] is values[5] is values[7] and values[3] is values[4]  # across the first two chunks
    assert values[8] == "abc!" and values[2] is None


def test_no_case_judged_by_another_is_one_empty_mapping_seen_n_times(tmp_path):
    """A run no judge but RunLens's scored: the frame's verdicts are one empty mapping seen n times (read-only, as
    the shared None), not a pointer a case (80 MB at ten million cases); judged cases each have theirs."""
    run, slow = _run(tmp_path)
    frame = cases_frame(run)
    verdicts = frame["verdicts"].to_numpy()
    assert verdicts.strides == (0,) and not verdicts.flags.writeable and verdicts.tolist() == [{}] * 40
    pd.testing.assert_frame_equal(frame, cases_frame(slow))

    def edit(cases):
        cases[3]["verdicts"] = {"judge": {"passed": False, "score": 0.9}}

    run, slow = _run(tmp_path, edit, name="judged.json")
    frame = cases_frame(run)
    assert frame["verdicts"].to_numpy().strides != (0,)
    assert frame["verdicts"].iat[3]["judge"].score == 0.9 and frame["verdicts"].iat[4] == {}
    pd.testing.assert_frame_equal(frame, cases_frame(slow))


def test_the_weights_as_given_are_the_tables_own_when_every_case_gives_its_weight(tmp_path):
    """The file's own severity weights (kept for drift) are the table's effective weights where they are the same
    numbers (every case evaluated, each giving its weight): held once. A case that leaves its weight out, or a case
    not evaluated, and they are two columns."""
    run, _ = _run(tmp_path)
    table, given = table_of(run), run.cases.columnar.given
    address = table.column("severity_weight").chunk(0).buffers()[1].address
    assert given.column("severity_weight").chunk(0).buffers()[1].address == address

    def edit(cases):
        del cases[2]["severity_weight"]

    run, slow = _run(tmp_path, edit, name="default.json")
    table, given = table_of(run), run.cases.columnar.given
    assert (
        given.column("severity_weight").chunk(0).buffers()[1].address
        != table.column("severity_weight").chunk(0).buffers()[1].address
    )
    assert given.column("severity_weight").null_count == 1
    assert table.column("severity_weight").null_count == 0
    pd.testing.assert_frame_equal(cases_frame(run), cases_frame(slow))
