"""A filtered report copies the kept rows' every column only when the frame is read (``KeptRows``): the figures
come from the columns they read; the frame, once read, is the kept rows of the run's frame, made once even when two
threads read it at once, shared by the reports made from it, and pickled with its rows."""

from __future__ import annotations

import json
import pickle
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reporting.analysis import observability as observability_module
from reporting.analysis.engine import Session
from reporting.analysis.filters import Filters
from reporting.analysis.metrics import FIGURE_COLUMNS, metrics_while, worst_first
from reporting.analysis.observability import stratified_sample
from reporting.render.figures import SCATTER_COLUMNS, cluster_scatter
from reporting.report import build as build_module
from reporting.report.build import build_report, make_run_data
from reporting.report.model import KeptRows
from reporting.sources.reading import load_run
from tests.conftest import case

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"

WORDS = ("bomb", "poem", "password", "recipe", "malware", "weather", "insult", "essay", "phishing", "math")


def _data():
    cases = [
        case(
            f"p{i}",
            ("jailbreak", "toxicity")[i % 2],
            ("low", "high")[i % 3 == 0],
            i % 4 != 0,
            i / 50,
            task=f"write about {WORDS[i % 10]} {WORDS[i % 7]}",
            response=f"here is {WORDS[(i * 3) % 10]} and {WORDS[i % 4]} number {i}",
        )
        for i in range(50)
    ]
    cases[7] = {**cases[7], "passed": None, "error": "timeout"}
    document = {"schema_version": 3, "run": {"run_id": "k", "model": "m"}, "cases": cases}
    return make_run_data(load_run(json.dumps(document).encode(), "k.json"))


def test_the_frame_is_made_when_read_and_is_the_kept_rows():
    data = _data()
    filters = Filters(outcome="fail", categories=("jailbreak",))
    report = build_report(data, filters=filters, with_observability=False)
    assert report.rows._frame is None  # the figures did not need it
    expected = data.frame[filters.mask(data.frame)]
    assert report.shown == len(expected) == report.metrics["counts"]["failed"] > 0 and report.rows._frame is None
    pd.testing.assert_frame_equal(report.frame, expected)
    assert report.frame is report.frame  # made once
    again = replace(report, observability={"skipped": True})
    assert again.frame is report.frame  # shared by a report made from it
    unfiltered = build_report(data, with_observability=False)
    assert unfiltered.frame is data.frame and unfiltered.shown == len(data.frame) == 49


def test_two_threads_reading_at_once_get_one_frame_made_once():
    made = []
    gate = threading.Event()

    class Slow(pd.DataFrame):
        def __getitem__(self, key):
            if isinstance(key, np.ndarray) and key.dtype == bool:
                gate.wait(5)
                made.append(1)
            return super().__getitem__(key)

    rows = KeptRows(whole=Slow({"x": [1, 2, 3, 4]}), kept=np.array([True, False, True, True]))
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(rows.get())) for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(10)
    assert len(made) == 1 and len(seen) == 4 and all(frame is seen[0] for frame in seen)
    assert seen[0]["x"].tolist() == [1, 3, 4] and rows.count == 3


def test_wrong_sources_are_refused_and_pickling_keeps_the_rows():
    whole = pd.DataFrame({"x": [4, 5, 6]})
    with pytest.raises(ValueError):
        KeptRows(whole, whole=whole, kept=np.ones(3, dtype=bool))
    with pytest.raises(ValueError):
        KeptRows(whole=whole)
    with pytest.raises(ValueError):
        KeptRows()
    copied = pickle.loads(pickle.dumps(KeptRows(whole=whole, kept=np.array([True, False, True]))))
    assert copied.count == 2 and copied.get()["x"].tolist() == [4, 6]


def _filtered():
    data = _data()
    filters = Filters(outcome="fail")
    return data, filters, build_report(data, filters=filters, with_observability=False)


@pytest.mark.parametrize("made", [False, True])
def test_some_columns_or_rows_of_the_kept_cases_are_the_frames_own(made):
    data, filters, report = _filtered()
    expected = data.frame[filters.mask(data.frame)]
    if made:
        assert len(report.frame) == len(expected)  # the frame made first
    names = ["probe_id", "risk_score", "category", "severity", "verdicts", "detected_failure_modes"]
    pd.testing.assert_frame_equal(report.columns(names), expected[names])
    positions = [len(expected) - 1, 0, 2]
    pd.testing.assert_frame_equal(report.at(positions), expected.iloc[positions])
    pd.testing.assert_frame_equal(report.at(positions, names[:2]), expected.iloc[positions][names[:2]])
    wanted = [str(expected["probe_id"].iloc[3]), "p1", "no such id"]  # p1 passed: not kept
    pd.testing.assert_frame_equal(report.with_ids(wanted), expected[expected["probe_id"].isin(wanted)])
    assert (report.rows._frame is not None) == made  # a page reading some columns never copies every one
    np.testing.assert_array_equal(report.worst_order, worst_first(expected))
    unfiltered = build_report(data, with_observability=False)
    np.testing.assert_array_equal(unfiltered.worst_order, worst_first(data.frame))
    pd.testing.assert_frame_equal(unfiltered.columns(names), data.frame[names])


def test_a_column_of_one_value_stays_one_value():
    none = np.broadcast_to(np.array([None], dtype=object), (6,))  # as the case frame holds a column no case has
    whole = pd.DataFrame({"probe_group": none, "risk_score": np.arange(6) / 10}, index=[0, 2, 3, 5, 8, 9], copy=False)
    assert whole["probe_group"].to_numpy().strides == (0,)
    rows = KeptRows(whole=whole, kept=np.array([True, False, True, True, False, True]))
    taken = rows.columns(["probe_group", "risk_score"])
    held = taken["probe_group"].to_numpy()
    assert held.strides == (0,) and len(held) == rows.count == 4 and not held.flags.writeable
    assert taken["probe_group"].isna().all() and taken.index.tolist() == [0, 3, 5, 9]
    assert taken["risk_score"].tolist() == [0.0, 0.2, 0.3, 0.5]
    with pytest.raises(ValueError):
        held[0] = "x"


def _old_stratified(frame, size, seed):
    """The stratified sample as it was written first (the strata as strings, one a case): the reference. Its NUL
    joins nothing (numpy's string scalar drops trailing NULs): a stratum's name is the category then "p" or "f"."""
    n = len(frame)
    strata = pd.Series(
        frame["category"].astype(str).to_numpy() + "\x00" + np.where(frame["passed"].to_numpy(dtype=bool), "p", "f")
    )
    codes, names = pd.factorize(strata, sort=True)
    rng = np.random.default_rng(seed)
    chosen = []
    for code in range(len(names)):
        members = np.flatnonzero(codes == code)
        take = max(1, int(round(size * len(members) / n)))
        chosen.append(rng.choice(members, size=min(take, len(members)), replace=False))
    return np.sort(np.concatenate(chosen))


def test_the_stratified_sample_is_the_one_drawn_from_its_names():
    rng = np.random.default_rng(3)
    # names whose order as (category, outcome) pairs and as joined strings differ: "a", "a\x00a" and ""
    names = ["a", "a\x00a", "a\x00z", "b", "", "\u00e9", "Z", "a\x00"]
    frame = pd.DataFrame({"category": rng.choice(names, size=5000).astype(object), "passed": rng.random(5000) < 0.3})
    for size, seed in ((50, 0), (700, 5), (4999, 1)):
        np.testing.assert_array_equal(stratified_sample(frame, size, seed), _old_stratified(frame, size, seed))


def test_a_large_filters_geometry_reads_its_sample_alone(monkeypatch):
    monkeypatch.setattr(observability_module, "SAMPLE_SIZE", 8)
    monkeypatch.setattr(build_module, "SAMPLE_ABOVE", 10)
    data, filters, report = _filtered()
    assert report.shown > 10
    found = build_module.with_geometry(report, min_cases=5)
    assert report.rows._frame is None  # the sample's rows were taken, not every kept row
    want = observability_module.observability(report.frame, min_cases=5, sample_above=10, sample_size=8)
    assert found.observability == want and want["sampled"]["n"] < report.shown
    points, by_id = found.points_rows(SCATTER_COLUMNS)
    assert by_id and len(points) == want["sampled"]["n"]
    drawn = cluster_scatter(points, want, "category", by_id=by_id).to_json()
    assert drawn == cluster_scatter(report.frame, want, "category").to_json()


FILTERS = (
    Filters(outcome="fail"),
    Filters(outcome="pass", severities=("high", "critical")),
    Filters(categories=("jailbreak",)),
    Filters(text="password"),
)


@pytest.mark.parametrize("source", ["built", *sorted(p.name for p in SAMPLES.glob("*.json") if p.name.count(".") == 1)])
def test_a_filters_figures_read_through_its_mask_are_those_of_its_rows_copied(source):
    """The engine reads a filter's kept rows through its mask; the figures are those of a table of the kept rows
    alone, to the last bit, positions too."""
    data = _data() if source == "built" else make_run_data(load_run(str(SAMPLES / source)))
    for filters in FILTERS:
        kept = filters.mask(data.frame)
        columns = KeptRows(whole=data.frame, kept=kept).columns(FIGURE_COLUMNS)
        through, _ = metrics_while(data.table, lambda columns=columns: columns, 0, None, kept=kept)
        copied, _ = metrics_while(data.table.filter(kept), lambda columns=columns: columns, 0, None)
        assert json.dumps(through, sort_keys=True, default=str) == json.dumps(copied, sort_keys=True, default=str)
        with Session(data.table, kept) as masked, Session(data.table.filter(kept)) as alone:
            np.testing.assert_array_equal(masked.worst_positions(), alone.worst_positions())
            assert masked.groups("category") == alone.groups("category") and masked.columns == alone.columns


def test_a_large_runs_filter_reads_the_runs_table_through_its_mask(monkeypatch):
    """Above ``MASKED_ABOVE`` cases a filter's figures are read through its mask: the report is the same."""
    data = _data()
    for filters in FILTERS:
        copied = build_report(data, filters=filters, with_observability=False)
        monkeypatch.setattr(build_module, "MASKED_ABOVE", 10)
        monkeypatch.setattr(build_module, "COPIED_BYTES", 0)
        kept = filters.mask(data.frame)
        assert build_module._kept_table(data, kept, int(kept.sum()))[1] is not None  # the mask is read
        through = build_report(data, filters=filters, with_observability=False)
        monkeypatch.setattr(build_module, "MASKED_ABOVE", 2_000_000)
        assert json.dumps(through.metrics, sort_keys=True, default=str) == json.dumps(
            copied.metrics, sort_keys=True, default=str
        )
        np.testing.assert_array_equal(through.worst_order, copied.worst_order)


def _judged_data():
    """A run whose cases carry three judges' verdicts, some not judged, one judge on some cases only, and an
    error case with a verdict: the judges' figures of a filter count each of them."""
    cases = []
    for i in range(40):
        verdicts = {
            "rules": {"passed": i % 3 != 0, "score": 0.5},
            "model": {"passed": None if i % 7 == 0 else i % 2 == 0},
        }
        if i % 5 == 0:
            verdicts["human"] = {"passed": i % 10 == 0}
        cases.append(
            {
                **case(f"j{i}", ("jailbreak", "toxicity")[i % 2], ("low", "high")[i % 3 == 0], i % 4 != 0, i / 40),
                "verdicts": verdicts,
            }
        )
    cases[9] = {**cases[9], "passed": None, "error": "timeout"}
    document = {"schema_version": 3, "run": {"run_id": "j", "model": "m"}, "cases": cases}
    return make_run_data(load_run(json.dumps(document).encode(), "j.json"))


JUDGED_FILTERS = (*FILTERS, Filters(outcome="fail", categories=("toxicity",)), Filters(categories=("nothing",)))


@pytest.mark.parametrize("source", ["judged", "built", "mail-agent-inspect.json", "acme-assistant-v1.json"])
def test_a_filters_figures_are_those_of_its_kept_rows_every_column(source, monkeypatch):
    """A filter reads no column of its kept rows for its figures (the run's judges' rows kept, the worst cases'
    rows read once known): the figures are those ``aggregate_metrics`` gives of the kept rows' every column, and
    the judges' kept rows those ``judge_rows`` finds in them, through the mask or a table of the kept rows."""
    from reporting.analysis.judges import judge_rows, kept_judge_rows
    from reporting.analysis.metrics import aggregate_metrics

    data = {"judged": _judged_data, "built": _data}.get(
        source, lambda: make_run_data(load_run(str(SAMPLES / source)))
    )()
    assert data.judged is not None and (source != "judged" or set(data.judged) == {"rules", "model", "human"})
    for masked in (False, True):
        monkeypatch.setattr(build_module, "MASKED_ABOVE", 10 if masked else 2_000_000)
        monkeypatch.setattr(build_module, "COPIED_BYTES", 0 if masked else 400 * 2**20)
        for filters in JUDGED_FILTERS:
            kept = filters.mask(data.frame)
            frame, errors = data.frame[kept], filters.apply_errors(data.errors)
            want = {name: (at.tolist(), said.tolist()) for name, (at, said) in judge_rows(frame).items()}
            found = kept_judge_rows(data.judged, kept)
            assert {name: (at.tolist(), said.tolist()) for name, (at, said) in found.items()} == want
            report = build_report(data, filters=filters, with_observability=False)
            assert report.rows._frame is None  # no column of the kept rows was copied for the figures
            figures = {key: value for key, value in report.metrics.items() if key != "frameworks"}
            expected = aggregate_metrics(frame.reset_index(drop=True), len(errors), errors)
            assert json.dumps(figures, sort_keys=True, default=str) == json.dumps(expected, sort_keys=True, default=str)
            if source == "judged" and kept.sum():
                assert figures["judges"] and figures["judge_agreement"]


def test_rows_at_positions_are_the_frames_own_taken_column_by_column():
    """``rows_of`` takes each column alone (an Arrow-backed, chunked one chunk by chunk): the rows, their order,
    index and dtypes are ``frame.iloc[positions][names]``'s, for positions in any order, repeated or none."""
    import pyarrow as pa

    from reporting.report.model import rows_of

    ids = pa.chunked_array([pa.array([f"p{i}" for i in range(k, k + 7)]) for k in range(0, 35, 7)])
    frame = pd.DataFrame(
        {
            "probe_id": pd.Series(pd.arrays.ArrowStringArray(ids)),
            "risk_score": np.linspace(0, 1, 35),
            "verdicts": [None if i % 3 else {"a": {"passed": True}} for i in range(35)],
            "passed": [i % 2 == 0 for i in range(35)],
        },
        index=pd.RangeIndex(35),
    )
    for positions in ([34, 0, 7, 6, 13, 13], [], [20], list(range(35))[::-1]):
        found = rows_of(frame, positions, ["probe_id", "passed", "risk_score", "verdicts"])
        want = frame.iloc[positions][["probe_id", "passed", "risk_score", "verdicts"]]
        pd.testing.assert_frame_equal(found, want, check_exact=True)
        assert found["probe_id"].tolist() == [f"p{i}" for i in positions]


def test_a_large_runs_filter_copies_its_kept_rows_when_their_table_is_small(monkeypatch):
    """Above ``MASKED_ABOVE`` cases a filter's kept rows are copied into a table of their own when it takes at most
    ``COPIED_BYTES`` (the run's bytes a row times the kept rows), else read through the mask: the same report."""
    data = _data()
    per_row = data.table.nbytes / data.table.num_rows
    monkeypatch.setattr(build_module, "MASKED_ABOVE", 10)
    for filters in FILTERS:
        kept = filters.mask(data.frame)
        count = int(kept.sum())
        reports = []
        for budget, masked in ((count * per_row + 1, False), (count * per_row - 1, True)):
            monkeypatch.setattr(build_module, "COPIED_BYTES", budget)
            table, through = build_module._kept_table(data, kept, count)
            assert (through is not None) == masked and table.num_rows == (data.table.num_rows if masked else count)
            reports.append(build_report(data, filters=filters, with_observability=False))
        assert json.dumps(reports[0].metrics, sort_keys=True, default=str) == json.dumps(
            reports[1].metrics, sort_keys=True, default=str
        )


@pytest.mark.parametrize("limit", [0, 1, 3, 17, 1000])
@pytest.mark.parametrize("filters", [Filters(), *FILTERS], ids=repr)
def test_the_case_tables_top_is_the_worst_orders_head(filters, limit):
    """The Cases page lists the top of the worst order by the engine's LIMIT (no sort of every kept case): the same
    positions as the whole order's head, and as many cases counted, ties (weighted risk, risk) included."""
    tied = json.loads(json.dumps(_data().run.model_dump(mode="json")))
    for i, record in enumerate(tied["cases"]):
        record["risk_score"] = (i % 3) / 2 if record.get("passed") is not None else None
    for data in (_data(), make_run_data(load_run(json.dumps(tied).encode(), "t.json"))):
        whole = build_report(data, filters=filters, with_observability=False).worst_order
        report = build_report(data, filters=filters, with_observability=False)
        top, evaluated = report.worst_top(limit)
        assert "worst_order" not in report.__dict__  # (the whole order was not made)
        np.testing.assert_array_equal(top, whole[:limit])
        assert evaluated == len(whole) == int(report.frame["passed"].notna().sum())
