"""A large run of JSON Lines read by columns, a block at a time (``columnar_lines.read_lines``, what ``load_run``
asks first of a ``.jsonl`` file of 64 MB or more): the same table the per-record reader gives, and whatever the
per-record reader reads otherwise (a line broken where Python breaks lines, two cases on a line, a blank line,
another tool's file) handed back to it, never read another way."""

import json
import os

import pytest
from test_columnar import BASE, INVALID, VALID, assert_read_alike, per_record

import reporting
from reporting.format import columnar, columnar_lines, problems
from reporting.format.columnar_checks import NotMine
from reporting.sources import reading

# Mutations of a case (a JSON Lines file has no header: each is of version 1, its run id from the file's name)
CASE_MUTATIONS = {
    name: change
    for name, change in {**VALID, **INVALID}.items()
    if name not in {"indented", "version 2", "errors", "empty run", "no run header", "bad run time", "newer version"}
    and not name.endswith("version 2")
}


def _lines(cases, end="\n"):
    return "".join(json.dumps(case) + end for case in cases)


def _read(tmp_path, text, name="run.jsonl"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return columnar_lines.read_lines(path, str(path)), per_record(path)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(columnar_lines, "LINE_BLOCK", 2048)  # a block holds a case or two: many blocks, cut mid-line


@pytest.mark.parametrize("name", list(CASE_MUTATIONS))
def test_the_table_of_lines_is_the_per_record_one(tmp_path, name):
    cases = CASE_MUTATIONS[name](BASE)["cases"]
    fast, slow = _read(tmp_path, _lines(cases))
    if slow.problems:
        assert fast is None, name
    elif name in VALID:
        assert_read_alike(fast, slow)
    elif fast is not None:
        assert_read_alike(fast, slow)


def test_a_case_longer_than_a_block_and_no_newline_at_the_end(tmp_path, monkeypatch):
    cases = json.loads(json.dumps(BASE["cases"]))
    cases[3]["response"] = "long " * 5000  # 25 KB: a dozen blocks
    text = _lines(cases).rstrip("\n")
    fast, slow = _read(tmp_path, text)
    assert slow.ok
    assert_read_alike(fast, slow)


@pytest.mark.parametrize(
    "shape",
    [
        "carriage returns",
        "carriage return in a case",
        "line separator in a text",
        "paragraph separator in a text",
        "next line in a text",
        "two cases on a line",
        "a case over two lines",
        "a case over two lines, two on another",
        "blank line",
        "byte order mark",
        "vertical tab in a text",
        "an array line",
        "a number line",
        "nothing but spaces",
    ],
)
def test_lines_broken_otherwise_are_read_as_the_per_record_reader_reads_them(tmp_path, monkeypatch, shape):
    """Python's str.splitlines (the per-record reader's) breaks lines at \\r, U+0085, U+2028 and U+2029 too, where
    JSON's parsers see white space or text: such a file is handed back, never read as other lines than those."""
    cases = BASE["cases"]
    one = json.dumps(cases[2])
    text = {
        "carriage returns": _lines(cases, "\r\n"),
        "carriage return in a case": _lines(cases).replace(one, one.replace(', "category"', ',\r"category"')),
        "line separator in a text": _lines(cases).replace(one, one.replace('"task": "', '"task": "a\u2028', 1)),
        "paragraph separator in a text": _lines(cases).replace(one, one.replace('"task": "', '"task": "a\u2029', 1)),
        "next line in a text": _lines(cases).replace(one, one.replace('"task": "', '"task": "a\u0085', 1)),
        "two cases on a line": _lines(cases).replace(one + "\n", one + " "),
        "a case over two lines": _lines(cases).replace(one, one.replace(', "category"', ',\n"category"')),
        "a case over two lines, two on another": _lines(cases)
        .replace(one, one.replace(', "category"', ',\n"category"'))
        .replace(json.dumps(cases[5]) + "\n", json.dumps(cases[5]) + " "),
        "blank line": _lines(cases).replace(one + "\n", one + "\n  \n"),
        "byte order mark": "\ufeff" + _lines(cases),
        "vertical tab in a text": _lines(cases).replace(one, one.replace('"task": "', '"task": "a\x0b', 1)),
        "an array line": _lines(cases) + "[1, 2]\n",
        "a number line": _lines(cases) + "3\n",
        "nothing but spaces": "   \n \n",
    }[shape]
    assert ("\u2028" in text) == (shape == "line separator in a text")
    if shape == "a case over two lines, two on another":
        monkeypatch.setattr(columnar_lines, "LINE_BLOCK", 1 << 20)  # one block: as many lines as cases
    fast, _ = _read(tmp_path, text)
    assert fast is None
    path = tmp_path / "run.jsonl"
    read, slow = _loaded(path), reporting.load_run(str(path))  # (a small file: the per-record reader's, as always)
    assert [str(p) for p in read.problems] == [str(p) for p in slow.problems]
    assert (read.run is None) == (slow.run is None)
    if slow.run is not None:
        assert type(read.run.cases) is list and read.run == slow.run


def _loaded(path):
    """``load_run`` of ``path`` with every file large enough for the columnar readers."""
    saved = reading.MAPPED_FROM
    reading.MAPPED_FROM = 0
    try:
        return reporting.load_run(str(path))
    finally:
        reading.MAPPED_FROM = saved


def test_load_run_reads_large_lines_by_columns_with_the_same_figures(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(_lines(BASE["cases"]))
    read = _loaded(path)
    slow = per_record(path)
    assert read.ok and type(read.run.cases).__name__ == "TableCases"
    assert read.run.run == slow.run.run and read.run.run.run_id == "run"
    assert reporting.aggregate_metrics(read.run) == reporting.aggregate_metrics(slow.run)
    assert [c.model_dump() for c in read.run.cases] == [c.model_dump() for c in slow.run.cases]


def test_another_tools_lines_are_still_that_tools(tmp_path):
    """A garak report is JSON Lines too: its first line tells it, and it is imported, not read as RunLens cases, even
    where each of its lines would pass for a case with extra fields."""
    cases = [{**case, "entry_type": "attempt"} for case in BASE["cases"]]
    path = tmp_path / "report.jsonl"
    path.write_text(_lines(cases))
    assert columnar_lines.read_lines(path, str(path)) is not None  # (read alone, the lines are cases)
    read = _loaded(path)
    slow = reporting.load_run(str(path))  # (below MAPPED_FROM: the importers first, as always)
    assert read.problems and [str(p) for p in read.problems] == [str(p) for p in slow.problems]
    assert read.run == slow.run


def test_a_file_that_grew_while_it_was_read_is_handed_back(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(_lines(BASE["cases"]))
    with open(path, "rb") as handle, pytest.raises(NotMine):
        list(columnar_lines._line_blocks(handle, path.stat().st_size - 1))


def test_the_size_cap_holds_for_lines_read_by_columns(tmp_path, monkeypatch):
    path = tmp_path / "run.jsonl"
    path.write_text(_lines(BASE["cases"]))
    monkeypatch.setattr(problems, "MAX_FILE_BYTES", 1000)
    read = _loaded(path)
    assert read.run is None and len(read.problems) == 1 and "larger than the" in read.problems[0].message


def test_a_blank_line_and_two_cases_on_another_in_one_block(tmp_path, monkeypatch):
    """msgspec skips a blank line and splits two values on one line: one of each in a block kept its count of lines
    equal to its count of cases (the first audit of 1dacc4c)."""
    monkeypatch.setattr(columnar_lines, "LINE_BLOCK", 64 << 20)
    lines = [json.dumps(case) for case in BASE["cases"]]
    for two in (lines[10] + " " + lines[11], lines[10] + lines[11]):
        for blank in ("\n", "  \n", "\t\n"):
            text = "".join(line + "\n" for line in lines[:10] + [two] + lines[12:]) + blank
            fast, _ = _read(tmp_path, text)
            assert fast is None
            path = tmp_path / "run.jsonl"
            read, slow = _loaded(path), reporting.load_run(str(path))
            assert read.problems and [str(p) for p in read.problems] == [str(p) for p in slow.problems]
            assert read.run == slow.run


@pytest.mark.parametrize("value", ["null", "true", "1", '"s"', "[]", "[null]", "{}"])
def test_a_line_that_is_no_case_is_the_per_record_readers_problem(tmp_path, value):
    """A ``null`` line crashed the reader (msgspec's ValidationError from a case's keys): handed back, named."""
    lines = [json.dumps(case) for case in BASE["cases"]]
    text = "".join(line + "\n" for line in lines[:3] + [value] + lines[3:])
    fast, slow = _read(tmp_path, text)
    assert fast is None and slow.problems
    read = _loaded(tmp_path / "run.jsonl")
    assert [str(p) for p in read.problems] == [str(p) for p in slow.problems]


def test_a_null_case_in_a_document_is_the_per_record_readers_problem(tmp_path):
    document = json.loads(json.dumps(BASE))
    document["cases"][3] = None
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert columnar.read_document(path.read_bytes(), str(path)) is None
    read = reporting.load_run(str(path))
    assert read.problems == per_record(path).problems and "must be" in read.problems[0].message


def test_another_tools_first_line_after_a_blank_line_is_still_that_tools(tmp_path):
    """The detectors read the first line after any white space: a file opening with white space is not read here,
    however far its first line reaches (a garak hit log whose keys come after the first megabyte)."""
    first = {**BASE["cases"][0], "pad": "x" * 1_200_000, "attempt_id": "a", "detector": "d", "probe": "p", "score": 1.0}
    lines = [json.dumps(first)] + [json.dumps(case) for case in BASE["cases"][1:]]
    path = tmp_path / "hits.jsonl"
    path.write_text("\n" + "".join(line + "\n" for line in lines))
    read, slow = _loaded(path), reporting.load_run(str(path))
    assert [str(p) for p in read.problems] == [str(p) for p in slow.problems] and read.run == slow.run


def test_a_file_rewritten_while_it_was_read_is_handed_back(tmp_path, monkeypatch):
    """Rewritten in place at the same size after its first block: what was read is of no one file."""
    path = tmp_path / "run.jsonl"
    path.write_text(_lines(BASE["cases"]))
    blocks = columnar_lines._line_blocks

    def rewritten(handle, size):
        for i, raws in enumerate(blocks(handle, size)):
            if i == 0:
                text = path.read_text()
                with open(path, "r+") as again:
                    again.write(text.replace('"probe_id": "p', '"probe_id": "X', 5))
                os.utime(path, ns=(1, 1))
            yield raws

    monkeypatch.setattr(columnar_lines, "_line_blocks", rewritten)
    assert columnar_lines.read_lines(path, str(path)) is None


def test_a_growing_file_is_read_no_further_than_a_byte_past_its_size(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(_lines(BASE["cases"]))
    size = path.stat().st_size

    class Counted:
        read_bytes = 0

        def __init__(self, handle):
            self.handle = handle

        def read(self, n):
            got = self.handle.read(n)
            Counted.read_bytes += len(got)
            return got

    with open(path, "rb") as handle, pytest.raises(NotMine):
        list(columnar_lines._line_blocks(Counted(handle), size - 100))
    assert Counted.read_bytes == size - 99
