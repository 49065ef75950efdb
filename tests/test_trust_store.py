"""Issue 30, the run store and the command line's printing under hostile input: no store verb writes inside a
store (point 7), a store's files are read by exact path, never as a glob pattern (point 15), a store.json whose
version is no version is a listed problem (point 16), and report data never prints as two lines or as another
name's twin (the first round's open finding)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from reporting.cli import main
from reporting.store.engine import DuckDBEngine, SparkEngine
from reporting.store.layout import Store
from reporting.store.views import run_figures
from reporting.textsafe import json_text, printable, shown


def _case(probe_id: str, passed: bool = True, category: str = "cat") -> dict:
    return {"probe_id": probe_id, "category": category, "severity": "low", "passed": passed, "risk_score": 0.1}


def _run(path: Path, cases: int, run_id: str = "r", model: str = "m", when: str = "2026-11-01T10:00:00Z") -> Path:
    doc = {
        "schema_version": 1,
        "run": {"run_id": run_id, "model": model, "suite": "s", "created_at": when},
        "cases": [_case(f"p{i}", passed=i % 2 == 0) for i in range(cases)],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _store(tmp_path: Path, name: str = "store", cases: int = 4) -> Path:
    folder = tmp_path / name
    assert main(["store", "add", str(_run(tmp_path / f"{name}-run.json", cases)), "--store", str(folder)]) == 0
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_point_7_no_store_verb_writes_inside_the_store(tmp_path, capsys):
    """issue 30 point 7: `store trend --html` over a run record made the store unreadable. An output inside the
    store's folder (a record, store.json, a case table, a new file, through a link) or a hard link to one of its
    files is refused with exit 2 and a message naming it; the store stays as it was and readable."""
    folder = _store(tmp_path)
    before = _snapshot(folder)
    record = next((folder / "runs").glob("*.json"))
    table = next((folder / "cases").rglob("*.parquet"))
    (tmp_path / "into").symlink_to(folder / "runs")
    os.link(folder / "store.json", tmp_path / "hard.json")
    outputs = [
        ["trend", "--html", str(record)],
        ["trend", "-o", str(folder / "store.json")],
        ["trend", "--html", str(folder / "trend.html")],
        ["trend", "-o", str(tmp_path / "into" / record.name)],
        ["trend", "-o", str(tmp_path / "hard.json")],
        ["compare", "-o", str(table)],
        ["compare", "-o", str(folder / "runs" / "new.json")],
    ]
    capsys.readouterr()
    for verb, option, output in outputs:
        assert main(["store", verb, "--store", str(folder), option, output]) == 2, output
        err = capsys.readouterr().err
        assert "refusing to write inside the store" in err and output in err, err
        assert "internal error" not in err
        assert _snapshot(folder) == before, output
    assert main(["store", "trend", "--store", str(folder)]) == 0  # still readable
    assert main(["store", "trend", "--store", str(folder), "--html", str(tmp_path / "t.html")]) == 0
    assert (tmp_path / "t.html").read_text().startswith("<!DOCTYPE html>")
    assert _snapshot(folder) == before
    capsys.readouterr()
    one = str(tmp_path / "t.html")  # -o and --html naming one file (the HTML went over the JSON): refused
    assert main(["store", "trend", "--store", str(folder), "-o", one, "--html", one]) == 2
    assert "named twice as an output" in capsys.readouterr().err


def test_point_7_the_store_writes_nothing_through_a_link_out_of_it(tmp_path, capsys):
    """issue 30 point 7, the other way round: the store's own writes stay inside its folder. A store from a
    tarball or a shared drive whose `cases` or `runs` folder is a link elsewhere is refused (exit 2) before a byte
    is written through it."""
    for name in ("cases", "runs"):
        folder = _store(tmp_path, f"store-{name}")
        elsewhere = tmp_path / f"elsewhere-{name}"
        elsewhere.mkdir()
        shutil.move(str(folder / name), str(tmp_path / f"moved-{name}"))
        (folder / name).symlink_to(elsewhere)
        capsys.readouterr()
        run = _run(tmp_path / f"new-{name}.json", 5, run_id="new")
        assert main(["store", "add", str(run), "--store", str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"{folder}: {name}: not a folder of the store" in err and "internal error" not in err, err
        assert list(elsewhere.iterdir()) == []


GLOB_NAMES = ["st*", "st1", "st2", "s?", "sa", "s[ab]", "sb", "s{a,b}", "s]"]


def test_point_15_store_folders_named_like_globs_read_only_their_own_cases(tmp_path):
    """issue 30 point 15: DuckDB reads paths as glob patterns: a store folder named `st*` computed a 6-case run over
    the 18 cases of three stores holding the same run. Each store beside stores its name would match reads its own
    cases only, by DuckDB and (where Java is present) by Spark."""
    run = _run(tmp_path / "run.json", 6)  # the same run (the same key, the same file name) in every store
    for name in GLOB_NAMES:
        assert main(["store", "add", str(run), "--store", str(tmp_path / name)]) == 0
    engines = [DuckDBEngine()] + ([SparkEngine()] if shutil.which("java") or os.environ.get("JAVA_HOME") else [])
    try:
        for engine in engines:
            for name in GLOB_NAMES:
                store = Store.open(str(tmp_path / name))
                figures, _ = run_figures(store, engine, store.runs())
                assert [f["counts"]["cases"] for f in figures.values()] == [6], (engine.name, name)
    finally:
        for engine in engines:
            engine.close()


def test_point_15_a_store_record_cannot_name_a_case_table_outside_the_store(tmp_path, capsys):
    """issue 30 point 15: the store's files are listed in Python, as exact paths inside the store: a record whose
    case table is a pattern, an absolute path or a path out of the store is a listed problem (exit 2), not read."""
    other = _store(tmp_path, "other", cases=9)
    outside = next((other / "cases").rglob("*.parquet"))
    for path in (str(outside), "cases/../../other/" + str(outside.relative_to(other)), "cases/**/*.parquet"):
        folder = tmp_path / f"s{abs(hash(path))}"
        shutil.copytree(_store(tmp_path, f"src{abs(hash(path))}"), folder)
        record = next((folder / "runs").glob("*.json"))
        record.write_text(json.dumps({**json.loads(record.read_text()), "path": path}))
        capsys.readouterr()
        assert main(["store", "trend", "--store", str(folder)]) == 2, path
        err = capsys.readouterr().err
        assert f"{record}: path: " in err and "internal error" not in err, err
    folder = _store(tmp_path, "typed")
    record = next((folder / "runs").glob("*.json"))
    record.write_text(json.dumps({**json.loads(record.read_text()), "cases": "many", "model": None}))
    assert main(["store", "compare", "--store", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{record}: cases: of the wrong type" in err and f"{record}: model: " in err


def test_point_16_a_store_json_version_that_is_no_version_is_a_listed_problem(tmp_path, capsys):
    """issue 30 point 16: store.json with version 0 or -1 was an AssertionError (exit 1). Any version that is not a
    whole number from 1 (a string, a float, a boolean, null, missing, a huge number) is a problem naming store.json
    and the field, exit 2, for every store verb."""
    folder = _store(tmp_path)
    run = _run(tmp_path / "more.json", 3, run_id="more")
    for version in (0, -1, "1", 1.5, 10**30, True, None, [1], "missing"):
        header = {"format": "runlens-store", "version": version}
        (folder / "store.json").write_text(json.dumps({"format": "runlens-store"} if version == "missing" else header))
        for argv in (["trend"], ["compare"], ["add", str(run)]):
            capsys.readouterr()
            assert main(["store", *argv, "--store", str(folder)]) == 2, (version, argv)
            err = capsys.readouterr().err
            assert f"{folder}: store.json.version: " in err, err
            assert "internal error" not in err and "AssertionError" not in err
    assert len(list((folder / "runs").glob("*.json"))) == 1  # nothing added to a store that could not be read


def test_first_round_data_newlines_and_zero_width_twins_never_forge_cli_lines(tmp_path, capsys):
    """issue 30, still open from the first round: data newlines (and zero-width twins of names) in CLI output
    forged rows of `store compare`, `trend` and `validate`. Every value printed goes through one escaping function
    (textsafe.shown): one value is one line, and names differing by an invisible character print differently."""
    forged = "evil\n  acme-assistant-v9                        2026-11-09T00:00:00Z         pass rate 1.000"
    models = ["acme", "acme\u200b", "acme\u2060", "acme\ufeff", "acme\u202e", forged, "acme\\u200b"]
    runs = tmp_path / "runs"
    runs.mkdir()
    for i, model in enumerate(models):
        _run(runs / f"r{i}.json", 3, run_id=f"{model}-id", model=model, when=f"2026-11-0{i + 1}T10:00:00Z")
    folder = tmp_path / "store"
    assert main(["store", "add", *map(str, sorted(runs.glob("*.json"))), "--store", str(folder)]) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == len(models), err  # one line per run added

    assert main(["store", "compare", "--store", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + len(models), lines  # the header and one row per model: no forged row
    names = [line.split()[0] for line in lines[1:]]
    assert len(set(names)) == len(models), names  # the twins print differently
    assert {"acme", "acme\\u200b", "acme\\u2060", "acme\\ufeff", "acme\\u202e", "acme\\\\u200b"} <= set(names)
    assert all(printable(line) == line for line in lines)

    assert main(["trend", str(runs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + len(models), lines
    assert len({line.split()[1] for line in lines[1:]}) == len(models)

    hostile = tmp_path / "bad\nfile.json"
    hostile.write_text(json.dumps({"schema_version": 1, "run": {"run_id": "x\ny"}, "cases": [{"probe_id": "a\nb"}]}))
    good = tmp_path / "ok\u200bfile.json"
    _run(good, 2)
    assert main(["validate", str(hostile), str(good)]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{shown(good)}: ok, 2 case(s), schema version 1"]
    assert "ok\\u200bfile.json" in out
    assert err.splitlines() and all(line.startswith(shown(hostile)) for line in err.splitlines()), err

    # A JSON document printed is still the same document.
    assert main(["store", "compare", "--store", str(folder), "-o", str(tmp_path / "c.json")]) == 0
    data = json.loads((tmp_path / "c.json").read_text())
    assert json.loads(json_text(json.dumps(data, ensure_ascii=False))) == data
    assert shown("a\nb") == "a\\nb" and shown("a\u200bb") != shown("ab") and shown("a\\u200bb") != shown("a\u200bb")
