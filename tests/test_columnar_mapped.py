"""A large run file read into memory the columnar reader gives back as it goes (``problems.Mapped``): the same run,
the same problems, and the pages before the chunk being read given back a chunk at a time."""

import json
import mmap
import os

import pytest

import reporting
from reporting.format import columnar, problems
from reporting.format.problems import FileTooLarge, Mapped, NotRegularFile, read_file_mapped
from reporting.sources import reading
from tests.test_columnar import BASE, INVALID, _mixed, assert_read_alike, per_record


def test_a_mapped_file_is_its_bytes_and_gives_back_whole_pages_only(tmp_path):
    data = os.urandom(3 * mmap.PAGESIZE + 100)
    path = tmp_path / "run.json"
    path.write_bytes(data)
    mapped = read_file_mapped(path)
    assert mapped is not None and bytes(mapped.view) == data
    mapped.release(mmap.PAGESIZE - 1)  # no whole page before it: nothing given back
    assert bytes(mapped.view) == data
    mapped.release(2 * mmap.PAGESIZE + 10)
    assert bytes(mapped.view[: 2 * mmap.PAGESIZE]) == bytes(2 * mmap.PAGESIZE)  # given back: zeros
    assert bytes(mapped.view[2 * mmap.PAGESIZE :]) == data[2 * mmap.PAGESIZE :]
    mapped.release(mmap.PAGESIZE)  # behind what was given back: nothing changes
    assert bytes(mapped.view[2 * mmap.PAGESIZE :]) == data[2 * mmap.PAGESIZE :]


def test_a_mapped_read_is_capped_and_refuses_what_is_not_a_regular_file(tmp_path):
    path = tmp_path / "run.json"
    path.write_bytes(b"{}" * 100)
    with pytest.raises(FileTooLarge, match="larger than the"):
        read_file_mapped(path, limit=10)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="FIFO"):
        read_file_mapped(fifo)  # (opened without blocking: no writer, no hang)
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert bytes(read_file_mapped(empty).view) == b""


@pytest.fixture
def mapped_always(monkeypatch):
    """Every file the mapped way (``MAPPED_FROM``: 64 MB), seven cases a chunk; each page given back recorded."""
    monkeypatch.setattr(reading, "MAPPED_FROM", 0)
    monkeypatch.setattr(columnar, "CHUNK", 7)
    given: list[int] = []
    release = Mapped.release

    def recorded(self, upto):
        given.append(upto)
        release(self, upto)

    monkeypatch.setattr(Mapped, "release", recorded)
    return given


def test_a_run_read_the_mapped_way_is_the_run_read_from_its_bytes(tmp_path, mapped_always):
    document = _mixed(BASE)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document, indent=1))  # (a case over several lines: Arrow finds where each ends)
    from_path = reporting.load_run(str(path))
    from_bytes = reporting.load_run(path.read_bytes(), name=str(path))
    assert from_path.ok and from_bytes.ok
    assert from_path.run.model_dump() == from_bytes.run.model_dump()
    assert_read_alike(columnar.read_table(str(path)), per_record(path))
    # before each chunk but the first, what was read before it; increasing, never past the cases' array
    chunks = -(-len(document["cases"]) // 7)
    assert len(mapped_always) == 2 * (chunks - 1)  # (load_run and read_table)
    first = mapped_always[: chunks - 1]
    assert first == sorted(first) and len(set(first)) == len(first)
    assert first[-1] < path.stat().st_size


@pytest.mark.parametrize("name", list(INVALID))
def test_a_run_handed_back_after_being_read_the_mapped_way_is_read_again(tmp_path, mapped_always, name):
    """Pages given back read as zeros: a run the columnar reader hands back is read from the file again, and the
    problems are the per-record reader's."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(INVALID[name](BASE)))
    expected = [str(p) for p in per_record(path).problems]
    assert [str(p) for p in reporting.load_run(str(path)).problems] == expected


def test_a_file_that_grew_while_read_the_mapped_way_is_read_as_bytes(tmp_path, monkeypatch):
    """``read_file_mapped`` reads as many bytes as fstat said; more after them: None, and the run is read whole."""
    monkeypatch.setattr(reading, "MAPPED_FROM", 0)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(BASE))
    opened = problems._open_checked

    def smaller(where, limit, regular_only):
        fd, info = opened(where, limit, regular_only)
        return fd, os.stat_result((*info[:6], info.st_size // 2, *info[7:]))

    monkeypatch.setattr(problems, "_open_checked", smaller)
    assert read_file_mapped(path) is None
    read = reporting.load_run(str(path))
    assert read.ok and len(read.run.cases) == len(BASE["cases"])


def test_a_large_run_given_through_a_pipe_is_read_from_the_bytes_already_read(tmp_path, monkeypatch):
    """A pipe cannot be read twice: its bytes, read once, are the run (``recompute <(zcat run.json.gz)``); the
    store's reader leaves a pipe or FIFO, whatever its name, to ``load_run`` (one read, under the size cap)."""
    import threading

    from _helpers_cli import cli

    monkeypatch.setattr(reading, "MAPPED_FROM", 0)
    data = json.dumps(BASE).encode()
    given, taken = os.pipe()
    threading.Thread(target=lambda: (os.write(taken, data), os.close(taken))).start()
    read = reporting.load_run(f"/dev/fd/{given}")
    assert read.ok and len(read.run.cases) == len(BASE["cases"]), read.problems
    os.close(given)
    lines = "\n".join(json.dumps(case) for case in BASE["cases"]).encode()
    for name, content in (("run.json", data), ("run.jsonl", lines)):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        assert columnar.read_table(str(fifo)) is None  # (opened without a writer: nothing read, no hang)
        writer = threading.Thread(target=lambda: fifo.write_bytes(content))  # noqa: B023 - joined below
        writer.start()
        added = cli("store", "add", "--store", str(tmp_path / "store"), str(fifo))
        writer.join(timeout=60)
        assert added.returncode == 0 and "internal error" not in added.stderr, added.stderr
        fifo.unlink()


def test_a_file_replaced_between_the_two_reads_is_read_again_as_it_is_now(tmp_path, monkeypatch):
    """The second read is of the file the first one read (device, inode, size, time); replaced meanwhile, the file
    is read again as it is now by the per-record reader, never half of one and half of the other."""
    monkeypatch.setattr(reading, "MAPPED_FROM", 0)
    monkeypatch.setattr(reading, "surely_runlens", lambda head: False)  # (read first as bytes: two reads)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(BASE))
    other = json.loads(json.dumps(BASE))
    other["cases"] = other["cases"][:30]
    mapped = problems.read_file_mapped

    def replaced_first(where, limit=None):
        (tmp_path / "new.json").write_text(json.dumps(other))
        os.replace(tmp_path / "new.json", path)
        return mapped(where, limit)

    monkeypatch.setattr(reading, "read_file_mapped", replaced_first)
    read = reporting.load_run(str(path))
    assert read.ok and len(read.run.cases) == 30
    assert type(read.run.cases) is list  # the per-record reader's


@pytest.mark.parametrize("bad", [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80"], ids=["ff", "overlong", "surrogate"])
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_bytes_that_are_not_utf8_in_a_case_text_are_a_listed_problem(tmp_path, bad, suffix):
    """Arrow's JSON parser takes any byte inside a string: the columnar reader checks each text's UTF-8 and hands
    such a run back, and the per-record reader names the byte (it was an internal error of ``recompute``)."""
    from _helpers_cli import cli

    if suffix == ".json":
        text = json.dumps(BASE).encode()
    else:
        text = "\n".join(json.dumps(case) for case in BASE["cases"]).encode()
    at = text.rindex(b'"task": "') + len(b'"task": "')
    path = tmp_path / f"run{suffix}"
    path.write_bytes(text[:at] + bad + text[at:])
    assert columnar.read_table(str(path)) is None
    read = reporting.load_run(str(path))
    assert [p.message.split(":")[0] for p in read.problems] == ["not UTF-8 text"], read.problems
    result = cli("recompute", str(path), "-o", str(tmp_path / "out.json"))
    assert result.returncode == 2 and "not UTF-8 text" in result.stderr and "internal error" not in result.stderr


def test_a_fifo_is_told_apart_without_being_opened(tmp_path, monkeypatch):
    """Opened only to be told apart, a FIFO pairs with its writer, and the reader that opens it next misses the
    bytes (``store add FIFO`` read "the file is empty" now and then): its path says what it is first."""
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: (opened.append(str(path)), real_open(path, *a, **k))[1])
    assert problems.regular_file_head(fifo, 100) is None
    assert str(fifo) not in opened
    regular = tmp_path / "run.json"
    regular.write_bytes(b'{"cases": []}')
    assert problems.regular_file_head(regular, 5)[0] == b'{"cas' and str(regular) in opened
