"""A large garak report or Inspect log read by any verb or the dashboard (``load_run`` of its path) as its import
reads it, a case at a time, then by columns: the run a case table, never a case object a case, and the same run,
the same problems, as the whole reading of the file gives."""

import os
import tempfile
from pathlib import Path

import pytest

from reporting.format.table_run import TableCases
from reporting.sources import reading

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PEER_FILES = [
    *sorted(str(p.relative_to(FIXTURES)) for p in (FIXTURES / "garak").rglob("*.jsonl")),
    *sorted(f"inspect/{p.name}" for p in (FIXTURES / "inspect").glob("*.eval")),
    *sorted(f"inspect/{p.name}" for p in (FIXTURES / "inspect").glob("*.json")),
]


@pytest.fixture
def large(monkeypatch, tmp_path):
    """Every file large (``MAPPED_FROM`` 0), the temporary folders made under ``tmp_path / "tmp"``."""
    monkeypatch.setattr(reading, "MAPPED_FROM", 0)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    return temporary


SHOWN = "shown as <this> name.jsonl"  # the name the dashboard shows: every problem names it, never the path


def _whole(path, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(reading, "_large_import", lambda *args: None)
        return reading.load_run(str(path), name=SHOWN)


def _cases(result):
    return [case.model_dump(mode="json") for case in result.run.cases]


@pytest.mark.parametrize("name", PEER_FILES)
def test_a_large_peer_file_is_the_run_its_whole_reading_gives(name, large, monkeypatch):
    path = FIXTURES / name
    whole = _whole(path, monkeypatch)
    streamed = reading.load_run(str(path), name=SHOWN)
    assert [str(p) for p in streamed.problems] == [str(p) for p in whole.problems]
    assert all(p.file == SHOWN for p in streamed.problems)
    if whole.run is None:
        assert streamed.run is None
        return
    assert isinstance(streamed.run.cases, TableCases), "read by columns"
    assert not isinstance(whole.run.cases, TableCases)
    assert streamed.run.run == whole.run.run
    assert streamed.run.model_extra == whole.run.model_extra  # the tool's own figures, for the drift check
    assert _cases(streamed) == _cases(whole)
    assert os.listdir(large) == [], "the temporary folder is deleted"


def test_a_peer_file_below_the_size_is_read_whole_and_one_at_it_by_columns_whatever_its_documents_size(
    monkeypatch, large
):
    """The size is the file's: its import's document (a tenth of it, or less) is read by columns however small."""
    path = FIXTURES / "garak" / "peers_repeat_small.report.jsonl"
    monkeypatch.setattr(reading, "MAPPED_FROM", path.stat().st_size + 1)
    assert not isinstance(reading.load_run(str(path)).run.cases, TableCases)
    monkeypatch.setattr(reading, "MAPPED_FROM", path.stat().st_size)
    read = reading.load_run(str(path))
    assert isinstance(read.run.cases, TableCases)
    picked = reading.load_run(str(path), model=read.run.run.model)  # a file of one run: --model picks it
    assert isinstance(picked.run.cases, TableCases) and _cases(picked) == _cases(read)
    other = reading.load_run(str(path), model="no such model")  # (as the whole reading: a file of one is that run)
    assert _cases(other) == _cases(read)


def test_a_file_the_stream_finds_wrong_is_left_to_the_whole_reading(monkeypatch, large):
    """The stream tells the file's kind from its first 64 KB (or the file changed since): what it finds wrong is
    not told; the whole reading reads the file again and says what it finds."""
    from reporting.format.problems import Problem
    from reporting.importers import garak

    path = FIXTURES / "garak" / "peers_repeat_small.report.jsonl"
    monkeypatch.setattr(
        garak, "stream_garak_file", lambda path, label: (None, iter(()), [], [Problem(label, "$", "the stream's own")])
    )
    read = reading.load_run(str(path), name=SHOWN)
    assert read.problems == [] and not isinstance(read.run.cases, TableCases), read.problems
    assert _cases(read) == _cases(_whole(path, monkeypatch))
    assert os.listdir(large) == []


def test_a_case_the_import_cannot_make_leaves_the_whole_reading_to_say_so(monkeypatch, large):
    """A garak report whose second attempt cannot be made as a case (found once the first was written): the whole
    reading's problem, nothing left behind."""
    from reporting.importers import garak

    made = garak._cases

    def broken(*args, **kwargs):
        cases = made(*args, **kwargs)
        yield next(cases)
        raise ValueError("an attempt of an unexpected shape")

    monkeypatch.setattr(garak, "_cases", broken)
    path = FIXTURES / "garak" / "peers_repeat_small.report.jsonl"
    result = reading.load_run(str(path))
    assert result.run is None and any("unexpected shape" in str(p) for p in result.problems), result.problems
    assert os.listdir(large) == []


def test_a_fifo_named_like_a_garak_report_is_not_opened(tmp_path, large):
    fifo = tmp_path / "run.report.jsonl"
    os.mkfifo(fifo)
    result = reading.load_run(str(fifo), regular_only=True)  # (no writer: opening it to read would hang)
    assert result.run is None and result.problems


def test_the_garak_stream_refuses_a_fifo_before_reading_a_byte(tmp_path):
    from reporting.format.problems import NotRegularFile
    from reporting.importers.garak import stream_garak_file

    fifo = tmp_path / "run.report.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="FIFO"):
        stream_garak_file(str(fifo))  # (opened without blocking: no writer, no hang)
