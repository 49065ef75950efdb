"""What the Parquet paths write, tried as an attacker and a hurried user would (the second audit of the Parquet
paths): no output over an existing file or over the cases themselves, a folder that cannot be written said as such,
a file name that is not UTF-8 kept as text, and no run written that every verb then refuses."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from test_columnar_v3 import FIXTURES

import reporting
from reporting.cli import main
from reporting.commands.importing import CaseScreen, StagedOutputs
from reporting.format.parquet import case_table, write_case_table
from reporting.format.problems import InputError
from reporting.format.writing import OutputError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_runs" / "acme-assistant-v1.json")
GARAK = FIXTURES / "garak/peers_repeat_small.report.jsonl"
INSPECT = FIXTURES / "inspect/2025-05-12T20-28-13-04-00_popularity.json"
JBB = FIXTURES / "jailbreakbench/PAIR-black_box-gpt-3.5-turbo-1106.json"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_recompute_parquet_never_writes_the_figures_over_their_table(tmp_path, capsys):
    """-o OUT.parquet named the table and the figures alike: the figures went over the cases, exit 0."""
    out = tmp_path / "out.parquet"
    for name in ("out.parquet", "OUT.PARQUET"):
        assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / name)]) == 2
        assert "-o names the figures' JSON file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "out.json")]) == 0
    table = reporting.load_run(str(out)).run
    assert len(table.cases) == len(reporting.read_run(SAMPLE).cases) == 120


@pytest.mark.parametrize("taken", ["run.json", "run.parquet"])
def test_recompute_parquet_replaces_no_existing_file(tmp_path, capsys, taken):
    """The table `import -o run.parquet` wrote, or a figures file, was replaced without a word."""
    assert main(["import", str(GARAK), "-o", str(tmp_path / "run.parquet")]) == 0
    if taken == "run.json":
        (tmp_path / "run.json").write_text("mine")
    before = _files(tmp_path)
    capsys.readouterr()
    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "run.json")]) == 2
    err = capsys.readouterr().err
    assert "exists already; RunLens never overwrites a file" in err and taken in err
    assert _files(tmp_path) == before  # nothing replaced, nothing left behind


def test_recompute_parquet_of_its_own_table_refuses_the_input(tmp_path, capsys):
    assert main(["import", str(GARAK), "-o", str(tmp_path / "run.parquet")]) == 0
    before = _files(tmp_path)
    assert main(["recompute", str(tmp_path / "run.parquet"), "--format", "parquet", "-o", str(tmp_path / "run.json")])
    assert "refusing to overwrite the input report" in capsys.readouterr().err
    assert _files(tmp_path) == before


def test_an_unwritable_folder_is_an_output_problem(tmp_path, capsys, monkeypatch):
    """mkstemp's PermissionError was an internal error (exit 1) for recompute, and a problem of the input's shape
    for import."""

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    runs = [
        ["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "f.json")],
        ["import", str(GARAK), "-o", str(tmp_path / "g.parquet")],
        ["import", str(GARAK), "-o", str(tmp_path / "g.json")],
        ["import", "jailbreakbench", str(JBB), "-o", str(tmp_path / "j.json")],
    ]
    for argv in runs:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "cannot write in" in err and "Permission denied" in err, err
        assert "internal error" not in err and "shape" not in err, err
    with pytest.raises(OutputError, match="cannot write in"):
        write_case_table(case_table(reporting.read_run(SAMPLE)), tmp_path / "t.parquet")
    assert list(tmp_path.iterdir()) == []


def test_recompute_parquet_is_all_or_nothing(tmp_path, capsys, monkeypatch):
    """The figures cannot be written: the table, made first, is not left behind alone."""
    write = StagedOutputs.write

    def failing(self, target, pieces):
        if target.suffix == ".json":
            raise OutputError(f"{target}: cannot write: No space left on device")
        return write(self, target, pieces)

    monkeypatch.setattr(StagedOutputs, "write", failing)
    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "f.json")]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_legacy_jailbreakbench_import_keeps_what_exists(tmp_path, capsys):
    out = tmp_path / "j.json"
    out.write_text("mine")
    assert main(["import", "jailbreakbench", str(JBB), "-o", str(out)]) == 2
    assert "exists already" in capsys.readouterr().err and out.read_text() == "mine"
    for argv in (["-o", str(tmp_path / "k.json"), "--format", "parquet"], ["-o", str(tmp_path / "k.parquet")]):
        assert main(["import", "jailbreakbench", str(JBB), *argv]) == 2
        assert "writes a scored RunLens JSON run" in capsys.readouterr().err
    assert _files(tmp_path) == {"j.json": b"mine"}
    assert main(["import", "jailbreakbench", str(JBB), "-o", str(tmp_path / "k.json")]) == 0
    assert len(reporting.read_run(str(tmp_path / "k.json")).cases) > 0


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_a_file_name_not_utf8_is_kept_as_text(tmp_path, capsys, fmt):
    """A garak report named with a byte that is not UTF-8: the Parquet import wrote a table every verb refused (a
    lone surrogate in its metadata), the JSON import refused the file. Both now keep the name with U+FFFD."""
    folder = os.fsencode(tmp_path)
    name = folder + b"/g\xfe\xff.report.jsonl"
    with open(name, "wb") as handle:
        handle.write(GARAK.read_bytes())
    out = tmp_path / f"run.{fmt}"
    assert main(["import", os.fsdecode(name), "-o", str(out)]) == 0, capsys.readouterr().err
    run = reporting.load_run(str(out)).run
    assert run.run.source.file == "g\ufffd\ufffd.report.jsonl"
    assert main(["recompute", str(out), "-o", str(tmp_path / f"fig.{fmt}.json")]) == 0
    figures = json.loads((tmp_path / f"fig.{fmt}.json").read_text())
    assert figures["run"]["source"]["file"] == "g\ufffd\ufffd.report.jsonl"


def test_file_name_known_answers():
    from reporting.textsafe import file_name

    assert file_name("/a/b/ok.json") == "ok.json"
    assert file_name(os.fsdecode(b"/a/x\xe9y.json")) == "x\ufffdy.json"
    assert file_name(b"/a/\xc3\xa9.json") == "\u00e9.json"  # (UTF-8 bytes: the letter)
    assert file_name("/a/\ud800.json") == "\ufffd\ufffd\ufffd.json"  # (a surrogate spelt in text: no file gave it)


def _inspect_with(tmp_path: Path, change) -> Path:
    log = json.loads(INSPECT.read_text())
    change(log)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    return path


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_import_writes_no_run_every_verb_refuses(tmp_path, capsys, fmt):
    """An Inspect log giving one sample twice (id and epoch): import wrote a run with a repeated probe_id, which
    every verb then refused. Now import refuses it, naming the file and the case, and writes nothing."""
    path = _inspect_with(tmp_path, lambda log: log["samples"].append(dict(log["samples"][0])))
    out = tmp_path / "out" / f"run.{fmt}"
    out.parent.mkdir()
    assert main(["import", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    first = json.loads(INSPECT.read_text())["samples"][0]
    assert str(path) in err and f"cases[{len(json.loads(path.read_text())['samples']) - 1}].probe_id" in err, err
    assert "first as cases[0]" in err and f"{first['id']}" in err
    assert list(out.parent.iterdir()) == []
    assert main(["import", str(INSPECT), "-o", str(out)]) == 0  # (the file as Inspect wrote it)


BASE = {"probe_id": "a", "category": "c", "severity": "high", "passed": False, "risk_score": 0.5}
TURNS = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


DEEP = _nested(70)


@pytest.mark.parametrize(
    "case, where, what",
    [
        ({**BASE, "error": "timeout"}, "cases[1].error", "only a case not evaluated"),
        ({**BASE, "passed": None, "risk_score": None, "error": ""}, "cases[1].error", "required when passed is null"),
        ({**BASE, "passed": None, "risk_score": None}, "cases[1].error", "required when passed is null"),
        ({**BASE, "risk_score": None}, "cases[1].risk_score", "required for an evaluated case"),
        ({**BASE, "judged_turn": 1}, "cases[1].judged_turn", "(it has 0)"),
        ({**BASE, "judged_turn": 0, "messages": TURNS}, "cases[1].judged_turn", "an assistant turn"),
        ({**BASE, "judged_turn": 2, "messages": TURNS}, "cases[1].judged_turn", "(it has 2)"),
        ({**BASE, "probe_id": "first"}, "cases[1].probe_id", "first as cases[0]"),
        ({**BASE, "judged_turn": True, "messages": TURNS}, "cases[1].judged_turn", "(it has 2)"),  # a flag
        (
            {**BASE, "judged_turn": 1, "messages": [*TURNS[:1], {**TURNS[1], "tool_calls": [{"arguments": DEEP}]}]},
            "cases[1].messages[1].tool_calls[0].arguments",
            "nesting deeper than 64",
        ),
        (
            {**BASE, "judged_turn": 1, "messages": [TURNS[0], {**TURNS[1], "score": float("nan")}]},
            "cases[1].messages[1].score",
            "finite",
        ),
        ({**BASE, "limit": {"type": "token", "limit": 2**60}}, "cases[1].limit.limit", "integer"),
        ({**BASE, "mine": {"x": float("inf")}}, "cases[1].mine.x", "finite"),
        ({**BASE, "mine": DEEP}, "cases[1].mine", "nesting deeper than 64"),
    ],
)
def test_the_screen_refuses_what_the_reader_refuses(case, where, what):
    screen = CaseScreen("tool.json")
    screen.check(0, {**BASE, "probe_id": "first"})
    with pytest.raises(InputError) as caught:
        screen.check(1, case)
    problem = caught.value.problems[0]
    assert problem.file == "tool.json" and problem.path.endswith(where) and what in problem.message


def test_the_screen_passes_what_the_reader_reads(tmp_path):
    """The same cases in a run file: the ones the screen passes are read, the ones it refuses are refused."""
    screen = CaseScreen("tool.json")
    good = [
        {**BASE, "probe_id": "p1"},
        {**BASE, "probe_id": "p2", "passed": None, "risk_score": None, "error": "timeout"},
        {**BASE, "probe_id": "p3", "judged_turn": 1, "messages": TURNS},
    ]
    good.append({**BASE, "probe_id": "p4", "judged_turn": 1, "messages": [TURNS[0], {**TURNS[1], "x": _nested(60)}]})
    for index, case in enumerate(good):
        screen.check(index, case)
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": 3, "run": {"run_id": "r", "model": "m"}, "cases": good}))
    assert [c.probe_id for c in reporting.read_run(str(path)).cases] == ["p1", "p2", "p3", "p4"]


def test_a_folder_skips_the_figures_beside_their_table(tmp_path, capsys):
    """trend DIR failed on the figures file recompute --format parquet writes beside its table; it is skipped as a
    companion when the table it names is there (the table is the run), and read (refused, naming the table it
    wants) when not. A head naming a path or a missing file is no companion."""
    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "v1.json")]) == 0
    (tmp_path / "v2.json").write_bytes((ROOT / "sample_runs" / "acme-assistant-v2.json").read_bytes())
    capsys.readouterr()
    assert main(["trend", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "v1.json: skipped: the figures `recompute --format parquet` wrote" in err and "'v1.parquet'" in err
    assert "acme-assistant-v1_agent-safety-core" in out and "acme-assistant-v2_agent-safety-core" in out
    figures = (tmp_path / "v1.json").read_text()
    for name in ("../v1.parquet", "missing.parquet", ""):
        (tmp_path / "v1.json").write_text(figures.replace('"cases_file": "v1.parquet"', f'"cases_file": "{name}"'))
        assert main(["trend", str(tmp_path)]) == 2, name
        assert "cases_file" in capsys.readouterr().err
    (tmp_path / "v1.json").write_text(figures)
    (tmp_path / "v1.parquet").unlink()
    assert main(["trend", str(tmp_path)]) == 2
    assert "read that table" in capsys.readouterr().err


def test_a_run_naming_a_table_beside_it_is_still_a_run(tmp_path, capsys):
    """The folder scan skipped any file whose head named a file beside it in cases_file, a valid run with its cases
    (or one naming itself) too: only figures that hold no case, naming another Parquet file, are skipped."""
    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "v1.json")]) == 0
    run = json.loads((ROOT / "sample_runs" / "acme-assistant-v2.json").read_text())
    for name, table in (("named.json", "v1.parquet"), ("self.json", "self.json")):
        (tmp_path / name).write_text(json.dumps({"schema_version": run["schema_version"], "cases_file": table, **run}))
        assert main(["validate", str(tmp_path / name)]) == 0
    capsys.readouterr()
    assert main(["trend", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "acme-assistant-v2_agent-safety-core" in out and "named.json: skipped" not in err
    assert "self.json: skipped" not in err and "v1.json: skipped" in err


def test_recompute_writes_no_report_under_a_run_name(tmp_path, capsys):
    """`recompute RUN -o TABLE.parquet` replaced a case table with JSON, exit 0; figures named .eval, .jsonl or a
    bare .parquet broke the folder they landed in."""
    assert main(["import", str(GARAK), "-o", str(tmp_path / "t.parquet")]) == 0
    before = _files(tmp_path)
    assert main(["recompute", SAMPLE, "-o", str(tmp_path / "t.parquet")]) == 2
    assert "t.parquet: refusing to replace a run (a case table" in capsys.readouterr().err
    for name in ("o.jsonl", "o.ndjson", "o.eval", "O.JSONL"):
        assert main(["recompute", SAMPLE, "-o", str(tmp_path / name)]) == 2
        assert f"{name}: refusing this name: it is a run's" in capsys.readouterr().err
    for name in ("o.eval", ".parquet", ".json", "o"):
        assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / name)]) == 2
        assert "-o names the figures' JSON file" in capsys.readouterr().err
    assert _files(tmp_path) == before


def test_output_names_that_cannot_be_are_said(tmp_path, capsys):
    """A name too long, a folder under a file, a name not UTF-8 where the figures must name their table: exit 2 and
    a message, never an internal error; an import refused leaves no folder it made."""
    (tmp_path / "file").write_text("mine")
    long = str(tmp_path / ("a" * 300))
    runs = [
        (["recompute", SAMPLE, "-o", long + ".json"], "cannot be an output: File name too long"),
        (["recompute", SAMPLE, "--format", "parquet", "-o", long + ".json"], "File name too long"),
        (["import", str(GARAK), "-o", long], "File name too long"),
        (["import", str(GARAK), "-o", str(tmp_path / "file" / "sub")], "cannot"),
        (
            ["recompute", SAMPLE, "--format", "parquet", "-o", os.fsdecode(os.fsencode(tmp_path) + b"/o\xff.json")],
            "not UTF-8",
        ),
    ]
    for argv, what in runs:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert what in err and "internal error" not in err, err
    duplicated = _inspect_with(tmp_path, lambda log: log["samples"].append(dict(log["samples"][0])))
    assert main(["import", str(duplicated), "-o", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists() and (tmp_path / "file").read_text() == "mine"


def test_a_run_header_the_reader_refuses_is_refused_at_import(tmp_path, capsys):
    """An Inspect log's creation time that is no time: the Parquet import refused it, the JSON import wrote a run
    every verb then refused."""
    path = _inspect_with(tmp_path, lambda log: log["eval"].update(created="yesterday at noon"))
    for fmt in ("json", "parquet"):
        assert main(["import", str(path), "-o", str(tmp_path / f"run.{fmt}")]) == 2
        err = capsys.readouterr().err
        assert "run.created_at" in err and "yesterday at noon" in err
        assert not (tmp_path / f"run.{fmt}").exists()


def test_names_not_utf8_in_the_legacy_import_and_the_reader(tmp_path, capsys):
    """import jailbreakbench kept the file name's surrogates in run_id (refused); a run without run_id in a file
    named so was an internal error in recompute."""
    folder = os.fsencode(tmp_path)
    artifact = os.fsdecode(folder + b"/j\xff.json")
    Path(artifact).write_bytes(JBB.read_bytes())
    assert main(["import", "jailbreakbench", artifact, "-o", str(tmp_path / "j.json")]) == 0
    assert "j\ufffd" in reporting.read_run(str(tmp_path / "j.json")).run.run_id
    run = json.loads(Path(SAMPLE).read_text())
    del run["run"]["run_id"]
    unnamed = os.fsdecode(folder + b"/r\xff.json")
    Path(unnamed).write_text(json.dumps(run))
    assert main(["recompute", unnamed, "-o", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["run"]["run_id"] == "r\ufffd"


def test_no_report_over_a_run_whatever_the_spelling(tmp_path, capsys):
    """`-o t.parquet/` passed the name check and replaced the table; export, like every verb writing a report,
    replaced a case table or a run of JSON Lines: a report never goes over a run's file."""
    assert main(["import", str(GARAK), "-o", str(tmp_path / "t.parquet")]) == 0
    (tmp_path / "lines.jsonl").write_text(json.dumps({"probe_id": "x"}) + "\n")
    hidden = tmp_path / "table.json"  # a Parquet table under a report's name
    hidden.write_bytes((tmp_path / "t.parquet").read_bytes())
    before = _files(tmp_path)
    argvs = [
        ["recompute", SAMPLE, "-o", str(tmp_path / "t.parquet") + "/"],
        ["recompute", SAMPLE, "-o", str(tmp_path / "t.parquet") + "/."],
        ["recompute", SAMPLE, "-o", str(hidden)],
        ["export", SAMPLE, "-o", str(tmp_path / "t.parquet")],
        ["export", SAMPLE, "-o", str(tmp_path / "lines.jsonl")],
        ["compare", SAMPLE, SAMPLE, "-o", str(hidden)],
    ]
    for argv in argvs:
        assert main(argv) == 2, argv
        assert "refusing" in capsys.readouterr().err, argv
    assert main(["import", "jailbreakbench", str(JBB), "-o", str(tmp_path / "out.jsonl")]) == 2
    assert "writes a scored RunLens JSON run" in capsys.readouterr().err
    assert _files(tmp_path) == before
    assert main(["export", SAMPLE, "-o", str(tmp_path / "r.html")]) == 0  # (a report over a report: as before)
    assert main(["export", SAMPLE, "-o", str(tmp_path / "r.html")]) == 0


def test_import_checks_the_header_as_the_reader_does(tmp_path, capsys):
    """Nesting past 64 levels in a run's header (a tool's config) was written, then refused by every verb."""
    path = _inspect_with(tmp_path, lambda log: log["eval"]["config"].update(epochs=DEEP))
    for fmt in ("json", "parquet"):
        assert main(["import", str(path), "-o", str(tmp_path / f"run.{fmt}")]) == 2
        assert "nesting deeper than 64" in capsys.readouterr().err
        assert not (tmp_path / f"run.{fmt}").exists()


def test_old_figures_files_are_skipped_and_made_folders_taken_back(tmp_path, capsys):
    """Figures written before cases_file led the file (the key last) still broke a folder; an import refused left
    the parent folders it made."""
    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "v1.json")]) == 0
    document = json.loads((tmp_path / "v1.json").read_text())
    name = document.pop("cases_file")
    (tmp_path / "v1.json").write_text(json.dumps({**document, "cases_file": name}, indent=2))
    capsys.readouterr()
    assert main(["trend", str(tmp_path)]) == 0
    assert "v1.json: skipped: the figures" in capsys.readouterr().err
    duplicated = _inspect_with(tmp_path, lambda log: log["samples"].append(dict(log["samples"][0])))
    assert main(["import", str(duplicated), "-o", str(tmp_path / "a" / "b" / "c")]) == 2
    assert not (tmp_path / "a").exists()


def test_a_store_keeps_a_name_not_utf8_as_text(tmp_path, capsys):
    folder = os.fsencode(tmp_path)
    for raw in (b"/run\xff.json", b"/lines\xff.jsonl"):
        source = os.fsdecode(folder + raw)
        cases = json.loads(Path(SAMPLE).read_text())["cases"]
        Path(source).write_text(
            Path(SAMPLE).read_text() if raw.endswith(b".json") else "".join(json.dumps(c) + "\n" for c in cases)
        )
        store = tmp_path / f"store{len(raw)}"
        assert main(["store", "add", "--store", str(store), source]) == 0, capsys.readouterr().err
        assert "\ufffd" in json.dumps([json.loads(p.read_text()) for p in store.rglob("*.json")], ensure_ascii=False)


def test_devices_fifos_strict_streams_and_a_full_disk(tmp_path, monkeypatch):
    """-o naming a FIFO replaced it with a file (as root, a device too); a name not UTF-8 printed to a stream whose
    encoding refuses it was an internal error; a store's table on a full disk was an internal error."""
    import io
    import sys

    from reporting.format import parquet

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for argv in (["recompute", SAMPLE, "-o", str(fifo)], ["export", SAMPLE, "-o", str(fifo)]):
        assert main(argv) == 2
        assert fifo.is_fifo()
    named = os.fsdecode(os.fsencode(tmp_path) + b"/r\xff.json")
    Path(named).write_text(Path(SAMPLE).read_text())
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    assert main(["validate", named]) == 0
    strict.flush()
    assert b"r\\udcff.json: ok" in strict.buffer.getvalue()
    monkeypatch.undo()

    def full(table, handle):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(parquet, "fill_case_table", full)
    with pytest.raises(OutputError, match="No space left on device"):
        write_case_table(case_table(reporting.read_run(SAMPLE)), tmp_path / "t.parquet")
    assert not (tmp_path / "t.parquet").exists() and not list(tmp_path.glob(".t.parquet*"))


def test_legacy_problems_name_the_artifact_and_no_folder_through_dotdot_is_left(tmp_path, capsys, monkeypatch):
    artifact = json.loads(JBB.read_text())
    artifact["jailbreaks"].append(
        dict(next(j for j in artifact["jailbreaks"] if j.get("prompt") and j.get("response")))
    )
    path = tmp_path / "dup.jsonl"  # (a suffix of lines: the scored document is still read as one document)
    path.write_text(json.dumps(artifact))
    assert main(["import", "jailbreakbench", str(path), "-o", str(tmp_path / "x.json")]) == 2
    assert f"{path} (scored): cases[" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    duplicated = _inspect_with(tmp_path, lambda log: log["samples"].append(dict(log["samples"][0])))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["import", str(duplicated), "-o", "a/../b/c"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == before
