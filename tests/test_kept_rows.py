"""A filtered report copies the kept rows' every column only when the frame is read (``KeptRows``): the figures
come from the columns they read; the frame, once read, is the kept rows of the run's frame, made once even when two
threads read it at once, shared by the reports made from it, and pickled with its rows."""

from __future__ import annotations

import json
import pickle
import threading
from dataclasses import replace

import pandas as pd
import pytest

from reporting.analysis.filters import Filters
from reporting.report.build import build_report, make_run_data
from reporting.report.model import KeptRows
from reporting.sources.reading import load_run
from tests.conftest import case


def _data():
    cases = [
        case(f"p{i}", ("jailbreak", "toxicity")[i % 2], ("low", "high")[i % 3 == 0], i % 4 != 0, i / 50)
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

    def make():
        gate.wait(5)
        made.append(1)
        return pd.DataFrame({"x": [1, 2, 3]})

    rows = KeptRows(make=make, count=3)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(rows.get())) for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(10)
    assert len(made) == 1 and len(seen) == 4 and all(frame is seen[0] for frame in seen)


def test_a_wrong_count_or_both_sources_is_refused_and_pickling_keeps_the_rows():
    with pytest.raises(AssertionError, match="2 rows made, 3 kept"):
        KeptRows(make=lambda: pd.DataFrame({"x": [1, 2]}), count=3).get()
    with pytest.raises(ValueError):
        KeptRows(pd.DataFrame({"x": [1]}), make=lambda: pd.DataFrame())
    with pytest.raises(ValueError):
        KeptRows()
    copied = pickle.loads(pickle.dumps(KeptRows(make=lambda: pd.DataFrame({"x": [4, 5]}), count=2)))
    assert copied.count == 2 and copied.get()["x"].tolist() == [4, 5]
