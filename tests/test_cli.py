"""The command line as a user meets it: exit codes, messages, never a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "reporting", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        timeout=120,
    )


def test_help_lists_the_verbs():
    out = cli("--help")
    assert out.returncode == 0
    for verb in ("validate", "recompute", "schema"):
        assert verb in out.stdout


def test_validate_good_and_bad(hand_report, write_json, tmp_path):
    good = write_json("good.json", hand_report)
    assert cli("validate", good).returncode == 0
    hand_report["cases"][2]["risk_score"] = 1.7
    hand_report["cases"][3]["severity"] = "urgent"
    bad = write_json("bad.json", hand_report)
    out = cli("validate", good, bad, tmp_path / "missing.json", write_json("empty.json", ""))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert f"{bad}: cases[2].risk_score: must be between 0 and 1 (got 1.7)" in out.stderr
    assert f'{bad}: cases[3].severity: must be one of low, medium, high, critical (got "urgent")' in out.stderr
    assert f"{bad}: invalid: 2 problem(s); 4 of 6 case(s) are valid" in out.stderr
    assert "missing.json: $: cannot read the file" in out.stderr
    assert "empty.json: $: the file is empty" in out.stderr


def test_recompute_stdout_and_atomic_output(hand_report, write_json, tmp_path):
    src = write_json("run.json", hand_report)
    out = cli("recompute", src)
    assert out.returncode == 0
    report = json.loads(out.stdout)
    assert report["aggregate_metrics"]["counts"]["passed"] == 3
    assert set(report) >= {"run", "cases", "aggregate_metrics", "observability", "drift"}
    target = tmp_path / "out.json"
    assert cli("recompute", src, "-o", target).returncode == 0
    assert json.loads(target.read_text()) == report
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_recompute_bad_input_keeps_earlier_output(write_json, tmp_path):
    target = tmp_path / "out.json"
    target.write_text("earlier report")
    bad = write_json("bad.json", '{"cases": [')
    out = cli("recompute", bad, "-o", target)
    assert out.returncode == 2 and "truncated JSON" in out.stderr and "Traceback" not in out.stderr
    assert target.read_text() == "earlier report"
    src = write_json("run.json", [])
    out = cli("recompute", src, "-o", src)
    assert out.returncode == 2 and "refusing to overwrite the input" in out.stderr
    assert src.read_text() == "[]"


def test_recompute_output_never_contains_nan(write_json):
    src = write_json("run.json", {"cases": []})
    out = cli("recompute", src)
    assert out.returncode == 0 and "NaN" not in out.stdout
    assert json.loads(out.stdout)["aggregate_metrics"]["overall"]["pass_rate"] is None


def test_schema_prints_the_json_schema():
    out = cli("schema")
    schema = json.loads(out.stdout)
    case = schema["$defs"]["Case"]
    assert {"probe_id", "category", "severity", "passed", "risk_score"} <= set(case["required"])
    number, null = case["properties"]["risk_score"]["anyOf"]  # null: a case not evaluated (schema version 2)
    assert number["maximum"] == 1.0 and null == {"type": "null"}
    assert schema["title"] == "RunLens run report (schema version 3)" and "Verdict" in schema["$defs"]


def test_unknown_verb_exits_2():
    out = cli("frobnicate")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_an_internal_error_is_one_line_and_debug_adds_the_traceback(monkeypatch, capsys):
    import reporting.cli as cli_module

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli_module, "cmd_schema", broken)
    assert cli_module.main(["schema"]) == 1
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: boom" in err and "Traceback" not in err and "--debug" in err
    assert cli_module.main(["--debug", "schema"]) == 1
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: boom" in err and "Traceback (most recent call last)" in err


SAMPLE = ROOT / "sample_runs" / "acme-assistant-v1.json"
V2 = ROOT / "sample_runs" / "acme-assistant-v2.json"


def test_gate_limits_outside_their_range_are_bad_input_with_a_hint():
    done = cli("check", SAMPLE, "--min-pass-rate", "85")
    assert done.returncode == 2 and "--min-pass-rate: must be between 0 and 1 (a fraction: 0.85 for 85%)" in done.stderr
    done = cli("check", SAMPLE, "--min-resilience", "-0.1")
    assert done.returncode == 2 and "--min-resilience: must be between 0 and 1" in done.stderr
    done = cli("check", SAMPLE, "--max-high-stakes-failures", "-1")
    assert done.returncode == 2 and "--max-high-stakes-failures: must be 0 or more" in done.stderr
    assert cli("check", SAMPLE, "--min-pass-rate", "0").returncode == 0


def test_every_option_of_every_verb_has_help():
    import argparse

    from reporting.cli import build_parser

    missing = []

    def walk(parser, where):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{where} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{where} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "reporting")
    assert not missing, missing


def test_compare_with_html_only_writes_and_says_so(tmp_path):
    page = tmp_path / "c.html"
    done = cli(
        "compare",
        ROOT / "sample_runs" / "acme-assistant-v1.json",
        ROOT / "sample_runs" / "acme-assistant-v2.json",
        "--html",
        page,
    )
    assert done.returncode == 0 and page.exists() and done.stdout == ""
    assert f"wrote {page}: the comparison as a self-contained HTML file" in done.stderr


def test_the_readme_validate_example_works_as_written():
    done = subprocess.run(
        "python -m reporting validate sample_runs/*.json",
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"},
    )
    assert "python -m reporting validate sample_runs/*.json" in (ROOT / "README.md").read_text()
    assert done.returncode == 0, done.stderr
    assert "acme-assistant-v2.dimensions.json: skipped: dimension scores" in done.stdout
    assert done.stdout.count(": ok, ") == 4  # three runs of the suite and the agent run (issue 32)


def test_the_dashboard_runs_offline_without_a_deploy_button():
    import tomllib

    from reporting.commands.tools import dashboard_command

    command = dashboard_command(None, 8501, "127.0.0.1")
    settings = dict(zip(command[5::2], command[6::2]))
    assert settings["--client.toolbarMode"] == "viewer" and settings["--browser.gatherUsageStats"] == "false"
    assert settings["--server.address"] == "127.0.0.1" and settings["--server.headless"] == "true"
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["toolbarMode"] == "viewer" and config["browser"]["gatherUsageStats"] is False


def test_export_pdf_without_a_browser_names_what_to_install(tmp_path, monkeypatch, capsys):
    from reporting.cli import main

    monkeypatch.setenv("RUNLENS_CHROMIUM", str(tmp_path / "no-such-browser"))
    out = tmp_path / "handout.pdf"
    source = Path(__file__).resolve().parent.parent / "sample_runs" / "acme-assistant-v2.json"
    assert main(["export", str(source), "--pdf", str(out)]) == 2
    err = capsys.readouterr().err
    assert "apt-get install chromium" in err and str(out) in err and not out.exists()
    assert main(["export", str(source), "--pdf", str(out), "-o", str(out)]) == 2  # one file for both: refused


def test_the_dashboard_opens_a_browser_only_where_there_is_a_desktop():
    """Issue 14, point 20: `make run` (= `python -m reporting dashboard sample_runs`) opens the browser on a
    desktop and stays headless on a server or in CI."""
    from reporting.commands.tools import dashboard_command, has_desktop

    assert has_desktop({"DISPLAY": ":0"}, "linux") and has_desktop({"WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert has_desktop({}, "darwin") and has_desktop({}, "win32")
    assert not has_desktop({}, "linux") and not has_desktop({"DISPLAY": ""}, "linux")

    def headless(command):
        return command[command.index("--server.headless") + 1]

    assert headless(dashboard_command(None, 8501, "127.0.0.1", open_browser=True)) == "false"
    assert headless(dashboard_command(None, 8501, "127.0.0.1", open_browser=False)) == "true"
    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    run_recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "-m reporting dashboard" in run_recipe
    # The install before it is quiet and takes exactly the lock (issue 25).
    assert "$(UV) sync --locked --all-extras --quiet" in makefile
    # ... and compiles the libraries' bytecode, as pip does: uv writes none, so each command compiled pyarrow, pandas
    # and scikit-learn from source at every start where PYTHONDONTWRITEBYTECODE is set (as on the CI machines)
    assert "--compile-bytecode" in makefile.split("\n$(STAMP):", 1)[1].split("\n\n", 1)[0]


def test_the_dashboard_takes_streamlits_settings_flags_first_then_environment_then_config(tmp_path, monkeypatch):
    """Issue 29: `runlens dashboard` used to pass --server.port 8501 whatever STREAMLIT_SERVER_PORT or Streamlit's
    config file said. Now: flags, then the environment, then .streamlit/config.toml (the working folder's, then the
    home folder's), then 8501 and 127.0.0.1."""
    from reporting.cli import main
    from reporting.commands import BadInput
    from reporting.commands.dashboard_settings import resolve_server

    work, home = tmp_path / "work", tmp_path / "home"
    (work / ".streamlit").mkdir(parents=True)
    (home / ".streamlit").mkdir(parents=True)
    assert resolve_server(None, None, {}, work, home) == (8501, "127.0.0.1")
    (home / ".streamlit" / "config.toml").write_text('[server]\nport = 8600\naddress = "127.0.0.2"\n')
    assert resolve_server(None, None, {}, work, home) == (8600, "127.0.0.2")
    (work / ".streamlit" / "config.toml").write_text("[server]\nport = 8700\n")
    assert resolve_server(None, None, {}, work, home) == (8700, "127.0.0.2")  # the working folder's first
    env = {"STREAMLIT_SERVER_PORT": "8800", "STREAMLIT_SERVER_ADDRESS": "127.0.0.3"}
    assert resolve_server(None, None, env, work, home) == (8800, "127.0.0.3")
    assert resolve_server(8900, "127.0.0.4", env, work, home) == (8900, "127.0.0.4")
    with pytest.raises(BadInput, match="STREAMLIT_SERVER_PORT: must be a port number"):
        resolve_server(None, None, {"STREAMLIT_SERVER_PORT": "eighty"}, work, home)
    (work / ".streamlit" / "config.toml").write_text("[server\nport = ")
    with pytest.raises(BadInput, match="config.toml: not valid TOML"):
        resolve_server(None, None, {}, work, home)
    # The verb itself: the environment's port reaches Streamlit's command line (the server is not started here).
    ran = {}

    def execv(path, command):
        ran["command"] = command
        raise SystemExit(0)

    monkeypatch.setattr("os.execv", execv)
    monkeypatch.setenv("STREAMLIT_SERVER_PORT", "8765")
    monkeypatch.delenv("STREAMLIT_SERVER_ADDRESS", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["dashboard", str(ROOT / "sample_runs"), "--no-browser"])
    command = ran["command"]
    assert command[command.index("--server.port") + 1] == "8765"
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    # An address from the environment is checked like a flag: not loopback and no sign-in is refused.
    monkeypatch.setenv("STREAMLIT_SERVER_ADDRESS", "0.0.0.0")
    assert main(["dashboard", str(ROOT / "sample_runs"), "--no-browser"]) == 2


def test_dashboard_judge_cards_are_checked_then_handed_to_the_app(tmp_path, monkeypatch, capsys):
    from reporting.cli import main
    from reporting.report.cards import ENVIRONMENT

    monkeypatch.setattr("os.execv", lambda path, command: (_ for _ in ()).throw(SystemExit(0)))
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    monkeypatch.delenv("STREAMLIT_SERVER_ADDRESS", raising=False)
    bad = tmp_path / "cards.json"
    bad.write_text('{"judge_cards": [{"card_version": 9}]}')
    assert main(["dashboard", str(ROOT / "sample_runs"), "--no-browser", "--judge-cards", str(bad)]) == 2
    assert "cards.json" in capsys.readouterr().err and ENVIRONMENT not in os.environ
    good = tmp_path / "good.json"
    good.write_text((ROOT / "reporting" / "scoring" / "models" / "judge_cards.json").read_text())
    with pytest.raises(SystemExit):
        main(["dashboard", str(ROOT / "sample_runs"), "--no-browser", "--judge-cards", str(good)])
    assert os.environ[ENVIRONMENT] == str(good)
