"""A case's fields beyond the format's, read by the columnar reader the short way (``columnar_extras``): only the
extra values read strictly where each extra key is written once at the case's top level, else the whole case, as
the per-record reader reads it. A report RunLens wrote has one on every case (``derived_failure_modes``): a
million cases' report took 30 s to read, 12.6 s now (bench/RESULTS.md). Every hostile shape reads as the
per-record reader reads it: the same run, or the same problems."""

from __future__ import annotations

import json

import pytest
from test_columnar import per_record
from test_table_run import assert_same_run

import reporting
from reporting.format import columnar_extras
from reporting.format.synthetic import synthetic_run


def _run(tmp_path, extra_text: str, where: int = 3, name: str = "run.json"):
    """A synthetic run of version 3 whose case ``where`` carries ``extra_text`` (raw JSON members) after its id."""
    document = synthetic_run(40, seed=9)
    document["schema_version"] = 3
    for case in document["cases"]:
        case["derived_failure_modes"] = []
    text = json.dumps(document)
    pid = document["cases"][where]["probe_id"]
    marker = f'"probe_id": "{pid}"'
    assert text.count(marker) == 1
    path = tmp_path / name
    path.write_text(text.replace(marker, marker + ", " + extra_text) if extra_text else text)
    return path


def test_every_case_with_an_extra_is_read_the_short_way(tmp_path, monkeypatch):
    whole = []
    monkeypatch.setattr(columnar_extras, "_whole_case", lambda *a: whole.append(a) or pytest.fail("read whole"))
    path = _run(tmp_path, "")
    assert assert_same_run(path)
    cases = reporting.load_run(str(path)).run.cases
    assert all(case.model_extra == {"derived_failure_modes": []} for case in cases) and not whole


@pytest.mark.parametrize(
    "members, short",
    [
        ('"note": {"a": [1, 2.5, "x"], "b": null}', True),  # an extra object, read alone
        ('"note": "a \\"note\\": inside a string"', True),  # the name in a text: escaped quotes, no match
        ('"meta": {"meta": 1}', False),  # the same name nested: the whole case
        ('"t\\u0061g": 1', False),  # an escaped name: never found as written, the whole case
    ],
)
def test_extras_are_read_alike_either_way(tmp_path, monkeypatch, members, short):
    read_whole = []
    original = columnar_extras._whole_case
    monkeypatch.setattr(columnar_extras, "_whole_case", lambda *a: read_whole.append(1) or original(*a))
    path = _run(tmp_path, members)
    assert assert_same_run(path)
    assert bool(read_whole) != short


@pytest.mark.parametrize(
    "members",
    [
        '"note": 1, "note": 2',  # an extra key given twice: the per-record reader's problem
        '"note": {"a": 1, "a": 2}',  # a key twice inside an extra
        '"note": 1e999',  # not finite
        '"note": 123456789012345678901234567890',  # beyond a whole number's range
        '"note": ' + "[" * 200 + "]" * 200,  # too deep
    ],
)
def test_a_hostile_extra_is_the_per_record_readers_problem(tmp_path, members):
    path = _run(tmp_path, members)
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert [p.path for p in fast.problems] == [p.path for p in slow.problems] and slow.problems, slow.problems
    assert fast.cases_in_file == slow.cases_in_file
    assert [c.probe_id for c in fast.run.cases] == [c.probe_id for c in slow.run.cases]
