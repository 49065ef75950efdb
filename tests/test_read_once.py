"""A large RunLens document named by its path is read once (``sources.reading._large_document``): straight into
memory the columnar reader gives back as it goes, never first as bytes for the other tools' readers, when its first
bytes say no other tool's reader takes it; the run, the problems and every other file as before."""

import json
import os
from pathlib import Path

import pytest

import reporting
from reporting.format import columnar, problems
from reporting.sources import reading
from tests.test_columnar import BASE, INVALID, per_record

GARAK = Path(__file__).resolve().parent / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"


@pytest.fixture
def counted(monkeypatch):
    """Every file large (``MAPPED_FROM`` 0), seven cases a chunk; the whole reads of a file counted by kind."""
    monkeypatch.setattr(reading, "MAPPED_FROM", 0)
    monkeypatch.setattr(columnar, "CHUNK", 7)
    reads = {"bytes": 0, "mapped": 0}
    as_bytes, as_mapped = reading.read_file_bytes, reading.read_file_mapped

    def read_bytes(*args, **kwargs):
        reads["bytes"] += 1
        return as_bytes(*args, **kwargs)

    def read_mapped(*args, **kwargs):
        reads["mapped"] += 1
        return as_mapped(*args, **kwargs)

    monkeypatch.setattr(reading, "read_file_bytes", read_bytes)
    monkeypatch.setattr(reading, "read_file_mapped", read_mapped)
    return reads


def _alike(a, b):
    assert [str(p) for p in a.problems] == [str(p) for p in b.problems]
    assert (a.run is None) == (b.run is None)
    if a.run is not None:
        assert a.run.model_dump() == b.run.model_dump()


@pytest.mark.parametrize("indent", [None, 1])
def test_a_large_runlens_document_is_read_once(tmp_path, counted, indent):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(BASE, indent=indent))
    read = reporting.load_run(str(path))
    assert counted == {"bytes": 0, "mapped": 1}
    assert type(read.run.cases) is not list  # the columnar reader's table
    _alike(read, reporting.load_run(path.read_bytes(), name=str(path)))


@pytest.mark.parametrize("name", list(INVALID))
def test_a_run_handed_back_is_read_twice_and_named_as_before(tmp_path, counted, name):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(INVALID[name](BASE)))
    read = reporting.load_run(str(path))
    handed_back = read.run is None or type(read.run.cases) is list
    assert counted == {"bytes": int(handed_back), "mapped": 1}  # the columnar reader once, the per-record reader
    assert [str(p) for p in read.problems] == [str(p) for p in per_record(path).problems]


def test_what_is_told_is_what_was_read(tmp_path, counted, monkeypatch):
    """The head read first only says whether to try: a file replaced before the one read is told by what that
    read finds, another tool's file read as that tool's, a RunLens document read whole as it is now."""
    path = tmp_path / "run.json"
    mapped = problems.read_file_mapped
    for replacement, expected in ((GARAK.read_bytes(), "garak"), (None, 30)):
        path.write_text(json.dumps(BASE))
        if replacement is None:
            other = json.loads(json.dumps(BASE))
            other["cases"] = other["cases"][:30]
            replacement = json.dumps(other).encode()

        def replaced_first(where, limit=None, now=replacement):
            (tmp_path / "new.json").write_bytes(now)
            os.replace(tmp_path / "new.json", path)
            return mapped(where, limit)

        monkeypatch.setattr(reading, "read_file_mapped", replaced_first)
        read = reporting.load_run(str(path))
        assert read.ok, read.problems
        if expected == "garak":
            _alike(read, reporting.load_run(GARAK.read_bytes(), name=str(path)))
            assert read.run.run.source.tool == "garak"
        else:
            assert len(read.run.cases) == 30 and type(read.run.cases) is not list


def test_other_files_are_read_as_before(tmp_path, counted):
    """garak's AVID export and a document that opens with another key: neither read the new way, each read as its
    bytes are. A large garak report is read as its import reads it, a line at a time, never whole as bytes
    (``test_large_peer_files``), its import's document then read the new way. A RunLens run named as JSON Lines is
    read by columns a block at a time, never whole as bytes (``columnar_lines``). Each is the run its bytes give."""
    later_key = {"aggregate_metrics": None, **{k: v for k, v in BASE.items() if k != "aggregate_metrics"}}
    files = {
        "garak.report.jsonl": GARAK.read_bytes(),
        "garak.avid.json": GARAK.with_suffix("").with_suffix(".avid.jsonl").read_bytes(),
        "later.json": json.dumps(later_key).encode(),
        "lines.jsonl": b"\n".join(json.dumps(case).encode() for case in BASE["cases"]),
    }
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        before = dict(counted)
        read = reporting.load_run(str(path))
        by_lines, streamed = name == "lines.jsonl", name == "garak.report.jsonl"
        assert counted["bytes"] == before["bytes"] + (not by_lines and not streamed), name  # read as bytes, as before
        assert not streamed or counted["mapped"] == before["mapped"] + 1, name  # (the import's document, aside)
        assert not (by_lines or streamed) or type(read.run.cases) is not list, name  # (those: by columns)
        _alike(read, reporting.load_run(data, name=str(path)))
    assert "a garak AVID export" in str(reporting.load_run(str(tmp_path / "garak.avid.json")).problems)


@pytest.mark.parametrize("large", [True, False])
def test_a_runlens_document_that_names_avid_is_a_run(tmp_path, monkeypatch, large):
    """A run whose first 4 KB hold ``"data_type"`` and ``"AVID"`` (its config, say) is a run, not garak's AVID
    export (it was refused as one), by its path large or small and from its bytes."""
    monkeypatch.setattr(reading, "MAPPED_FROM", 0 if large else 1 << 40)
    document = json.loads(json.dumps(BASE))
    document["run"]["config"] = {"data_type": "AVID"}
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": document.pop("schema_version"), **document}))
    for read in (reporting.load_run(str(path)), reporting.load_run(path.read_bytes(), name=str(path))):
        assert read.ok, read.problems
        assert len(read.run.cases) == len(BASE["cases"]) and read.run.run.config == {"data_type": "AVID"}


def test_a_small_file_or_a_fifo_is_not_read_the_new_way(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(BASE))
    monkeypatch.setattr(reading, "MAPPED_FROM", path.stat().st_size + 1)
    assert reading._large_document(str(path), str(path)) == (False, None)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(reading, "MAPPED_FROM", 0)
    assert reading._large_document(str(fifo), str(fifo)) == (False, None)  # (opened without blocking: no hang)


@pytest.mark.parametrize("name", ["run\x00.json", "run\ud800.json"], ids=["NUL", "lone surrogate"])
def test_a_path_no_file_can_have_is_a_problem_not_an_exception(tmp_path, name):
    """From a caller of the API (argv cannot carry these): a problem naming the file, never an exception."""
    read = reporting.load_run(str(tmp_path / name))
    assert read.run is None and len(read.problems) == 1
    assert "no file name can" in read.problems[0].message


def test_the_dashboard_reads_a_runs_folder_file_by_its_path(tmp_path, counted, monkeypatch):
    """A run of the runs folder is read by its path: a large RunLens document once, never as bytes first."""
    from streamlit.testing.v1 import AppTest

    folder = tmp_path / "runs"
    folder.mkdir()
    document = json.loads(json.dumps(BASE))
    document["run"]["run_id"] = f"read-once-{os.getpid()}-{id(tmp_path)}"  # (a content no other test cached)
    (folder / "run.json").write_text(json.dumps(document))
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120).run()
    assert not at.exception and not at.error
    showing = [str(t.value) for t in at.sidebar.text if str(t.value).startswith("Showing")]
    assert showing == [f"Showing {len(BASE['cases'])} of {len(BASE['cases'])} cases"]
    assert counted == {"bytes": 0, "mapped": 1}


def test_the_dashboard_never_reads_a_fifo_put_in_place_of_a_run(tmp_path):
    """Between the folder's scan and the load, a run replaced by a FIFO: a problem naming it, no hang."""
    from reporting.ui.state import read_run_data

    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    data = read_run_data("run.json", lambda: b"", None, fifo)
    assert data.result.run is None
    assert [str(p) for p in data.result.problems] == ["run.json: $: cannot read the file: not a regular file (a FIFO)"]
