"""Trust under hostile input (issue 11): one regression test per finding of the audit, each covering its class.

Every string in a run, and every file name, is written by the thing under test or by whoever hands over
a file: the gate must fail closed, the dashboard must stay up and never write through a name, the
scorer must stay linear, and outputs must be readable by colleagues.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from apptest import open_page
from conftest import case as conftest_case
from streamlit.testing.v1 import AppTest

import reporting
from reporting.analysis.metrics import aggregate_metrics, cases_frame
from reporting.format.safe_yaml import YamlProblem, parse_yaml
from reporting.render import figures as charts
from reporting.rubrics import RubricError, scorecard
from reporting.scoring.adversarial import PREFIXED, UNITS, corpus
from reporting.scoring.scorer import PatternError, evaluate_response, load_patterns
from reporting.sources.reading import load_run
from reporting.textsafe import cli_line, csv_cell, csv_safe_frame, plotly_text, printable, safe_filename

ROOT = Path(__file__).resolve().parent.parent
V1 = ROOT / "sample_runs" / "acme-assistant-v1.json"


def cli(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "reporting", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def run_doc(cases, run_id="r"):
    return {
        "schema_version": 1,
        "run": {"run_id": run_id, "model": "m", "suite": "s", "created_at": "2026-11-01T10:00:00Z"},
        "cases": cases,
    }


def case(probe_id, passed=True, risk=0.1, category="cat", severity="low", **extra):
    """conftest.case with the defaults these tests use."""
    return conftest_case(probe_id, category, severity, passed, risk, **extra)


def write(path: Path, value) -> Path:
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return path


# 1. Uploads never become paths; nothing is left behind ---------------------------------------------------------


class FakeUpload:
    def __init__(self, name: str, data: bytes):
        self.name, self._data, self.size, self.type = name, data, len(data), "application/octet-stream"

    def getvalue(self) -> bytes:
        return self._data

    def read(self) -> bytes:
        return self._data


def hostile_uploader(target: str, examples: Path):
    """A stand-in for Streamlit's file uploader that answers with real files under names that are paths."""
    names = {
        "up_rubric": ("a-ref.rubric.yaml", "../../" * 12 + target.lstrip("/") + ".yaml"),
        "up_benchmarks": ("a-ref.benchmarks.yaml", target + ".benchmarks.yaml"),
        "up_verdicts": ("a-ref.verdicts.jsonl", "..\\..\\" + target + ".jsonl"),
        "up_dimensions": ("sample.dimensions.json", "/" + target.lstrip("/") + ".json"),
    }

    def uploader(*args, key=None, accept_multiple_files=False, **kwargs):
        if accept_multiple_files:  # the sidebar's run upload: a valid run under a traversal name
            return [FakeUpload("../../" + target.lstrip("/") + ".run.json", V1.read_bytes())]
        example, name = names[key]
        return FakeUpload(name, (examples / example).read_bytes())

    return uploader


def test_uploaded_names_never_become_paths_and_nothing_is_left_behind(tmp_path, monkeypatch):
    from reporting.resources import examples_dir

    runs = tmp_path / "runs"
    runs.mkdir()
    target = tmp_path / "victim" / "owned"
    (tmp_path / "victim").mkdir()
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(runs))
    monkeypatch.chdir(ROOT)
    import streamlit
    from streamlit.delta_generator import DeltaGenerator

    uploader = hostile_uploader(str(target), examples_dir())
    monkeypatch.setattr(streamlit, "file_uploader", uploader)
    monkeypatch.setattr(DeltaGenerator, "file_uploader", lambda self, *a, **k: uploader(*a, **k))
    before_tmp = set(os.listdir(tempfile.gettempdir()))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    for _ in range(2):  # reruns
        at = open_page(at, "rubrics").run()
        assert not at.exception
    shown = "\n".join(t.value for t in at.text)
    # The uploads were read (the scorecard and dimensions come from them) ...
    assert "A-REF 0.96" in shown.replace(":", "") or any("A-REF" in t.value and "PASS" in t.value for t in at.text)
    assert "(uploaded)" in "\n".join(str(o) for o in at.sidebar.selectbox(key="run_choice").options)
    # ... and nothing was written anywhere: not at the names, not in the runs folder, no temp folder left.
    assert list((tmp_path / "victim").iterdir()) == []
    assert sorted(p.name for p in runs.iterdir()) == []
    leftovers = {n for n in set(os.listdir(tempfile.gettempdir())) - before_tmp if "runlens" in n.lower()}
    assert leftovers == set()


# 2. The gate fails closed on incomplete input ----------------------------------------------------------------


def _v1():
    return json.loads(V1.read_text())


def test_gate_fails_on_unpaired_missing_and_empty_candidates(tmp_path):
    base = _v1()
    failing = [c["probe_id"] for c in base["cases"] if not c["passed"]]
    unpaired = {**base, "cases": [{**c, "probe_id": c["probe_id"] + "\u200b"} for c in base["cases"]]}
    dropped = {**base, "cases": [c for c in base["cases"] if c["passed"]]}
    empty = {**base, "cases": []}
    for name, doc, needle in (
        ("unpaired", unpaired, "probes paired with the baseline: 0 of 120"),
        ("dropped", dropped, f"baseline probes missing from the candidate: {len(failing)} of 120"),
        ("empty", empty, "probes paired with the baseline: 0 of 120"),
    ):
        done = cli("check", write(tmp_path / f"{name}.json", doc), "--baseline", V1)
        assert done.returncode == 1, (name, done.stdout, done.stderr)
        assert f"FAILS  {needle}" in done.stdout, (name, done.stdout)
    # --allow-missing N lets exactly N baseline probes be absent.
    dropped_path = tmp_path / "dropped.json"
    assert cli("check", dropped_path, "--baseline", V1, "--allow-missing", len(failing)).returncode == 0
    assert cli("check", dropped_path, "--baseline", V1, "--allow-missing", len(failing) - 1).returncode == 1
    # Without a baseline an empty run fails every count or rate gate (and the default error-rate gate).
    done = cli(
        "check",
        tmp_path / "empty.json",
        "--min-pass-rate",
        "0",
        "--max-high-stakes-failures",
        "5",
        "--min-resilience",
        "0",
        "--min-severity-weighted-pass-rate",
        "0",
    )
    assert done.returncode == 1 and done.stdout.count("FAILS") == 5 and "fails closed" in done.stdout
    assert "FAILS  error rate: n/a" in done.stdout


def test_a_duplicated_key_is_a_problem_everywhere(tmp_path):
    doc = json.dumps(run_doc([case("a"), case("b", passed=False, risk=0.9)]))
    duplicated = tmp_path / "dup.json"
    duplicated.write_text(doc[:-1] + ', "cases": []}')
    nested = tmp_path / "nested.json"
    nested.write_text(doc.replace('"probe_id": "a"', '"probe_id": "a", "passed": false, "probe_id": "z"', 1))
    for verb in (["validate"], ["recompute"], ["check", "--min-pass-rate", "0"], ["export", "-o", tmp_path / "o.html"]):
        done = cli(*verb, duplicated)
        assert done.returncode == 2 and "duplicate key" in done.stderr and '(got "cases")' in done.stderr, (
            verb,
            done.stderr,
        )
    done = cli("validate", nested)
    assert done.returncode == 2 and "cases[0]" in done.stderr and "duplicate key" in done.stderr
    assert not (tmp_path / "o.html").exists()
    # The same in JSON Lines, verdict files and pattern files read by the scorer's inputs.
    jsonl = tmp_path / "dup.jsonl"
    jsonl.write_text(
        '{"probe_id": "a", "category": "c", "severity": "low", "passed": true, "risk_score": 0.1, "passed": false}\n'
    )
    done = cli("validate", jsonl)
    assert done.returncode == 2 and "duplicate key" in done.stderr


# 3. Values the schema accepts are values every step handles; no traceback anywhere --------------------------

HUGE = [
    ("safe_signal_hits", "18446744073709551617"),
    ("unsafe_signal_hits", "-18446744073709551617"),
    ("an_unknown_extra_field", "9" * 5000),
    ("severity_weight", "1" + "0" * 400),
]


@pytest.mark.parametrize("field, literal", HUGE)
def test_huge_integers_are_rejected_in_validation(tmp_path, field, literal):
    text = json.dumps(run_doc([case("a"), case("b", passed=False, risk=0.8)]))
    text = text.replace('"probe_id": "b"', f'"{field}": {literal}, "probe_id": "b"', 1)
    path = write(tmp_path / "huge.json", text)
    result = load_run(path)
    assert [p.path for p in result.problems] == [f"cases[1].{field}"]
    assert len(result.run.cases) == 1  # the other case stays usable
    for verb in (["validate"], ["recompute"], ["export", "-o", tmp_path / "o.html"], ["check", "--min-pass-rate", "0"]):
        done = cli(*verb, path)
        assert done.returncode == 2 and "Traceback" not in done.stderr and "internal error" not in done.stderr, verb
        assert f"cases[1].{field}" in done.stderr


def test_lone_surrogates_are_rejected_and_other_text_survives(tmp_path):
    text = json.dumps(run_doc([case("a", response="fine \ud83d\ude00 emoji"), case("b", passed=False, risk=0.8)]))
    text = text.replace('"probe_id": "b"', '"response": "bad \\ud800 half", "probe_id": "b"', 1)
    path = write(tmp_path / "sur.json", text)
    result = load_run(path)
    assert [p.path for p in result.problems] == ["cases[1].response"] and "surrogate" in result.problems[0].message
    assert result.run.cases[0].response == "fine \U0001f600 emoji"
    for verb in (["recompute"], ["export", "-o", tmp_path / "o.html"]):
        done = cli(*verb, path)
        assert done.returncode == 2 and "Traceback" not in done.stderr and "cases[1].response" in done.stderr


def test_one_broken_run_is_an_error_box_and_the_others_stay_usable(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "good.json").write_bytes(V1.read_bytes())
    text = json.dumps(run_doc([case("a"), case("b", passed=False, risk=0.8)], "bad"))
    write(runs / "huge.json", text.replace('"probe_id": "a"', f'"safe_signal_hits": {"9" * 40}, "probe_id": "a"', 1))
    write(runs / "sur.json", text.replace('"probe_id": "b"', '"task": "\\udfff", "probe_id": "b"', 1))
    write(runs / "dup.json", text[:-1] + ', "cases": []}')
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(runs))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    labels = at.sidebar.selectbox(key="run_choice").options
    # The picker names the file first, then the tool and model; a file that cannot be read says so.
    assert {label.split(" ")[0] for label in labels} == {"good.json", "huge.json", "sur.json", "dup.json"}
    assert [label for label in labels if label.startswith("dup.json")] == ["dup.json (cannot be read)"]
    assert [label for label in labels if label.startswith("huge.json")] == ["huge.json | RunLens format | m"]
    pages = [
        "overview",
        "categories",
        "severity",
        "failure_modes",
        "observability",
        "cases",
        "compare",
        "trend",
        "rubrics",
    ]
    for label in labels:
        at.sidebar.selectbox(key="run_choice").set_value(label).run()
        for name in pages:
            at = open_page(at, name).run()
            assert not at.exception, (label, name, at.exception)
            shown = "\n".join([t.value for t in at.text] + [c.value for c in at.code] + [e.value for e in at.error])
            assert "Traceback" not in shown and "site-packages" not in shown and str(ROOT) not in shown
    good = [label for label in labels if label.startswith("good.json")]
    at.sidebar.selectbox(key="run_choice").set_value(good[0]).run()
    at = open_page(at, "overview").run()
    assert {m.label for m in at.metric} >= {"Pass rate"}


def test_a_page_that_fails_is_an_error_box_naming_the_run(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "good.json").write_bytes(V1.read_bytes())
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(runs))
    monkeypatch.chdir(ROOT)

    def boom(*args, **kwargs):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(charts, "category_chart", boom)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at = open_page(at, "categories").run()
    assert not at.exception
    assert at.error and "could not draw this page" in at.error[0].value
    assert any("run: good.json" in t.value and "OverflowError" in t.value for t in at.text)


# 4. The gate does not take the run's word for its severities, weights and verdicts ---------------------------


def test_gate_ignores_zero_weights_relabelled_severities_and_lists_contradictions(tmp_path):
    base = run_doc([case(f"p{i}", passed=True, risk=0.05, severity="critical" if i < 3 else "low") for i in range(20)])
    base_path = write(tmp_path / "base.json", base)
    # Zero weights: 19 of 20 fail but weigh nothing.
    zero = run_doc(
        [
            case(f"p{i}", passed=i == 0, risk=0.05 if i == 0 else 0.95, severity="low", severity_weight=0)
            for i in range(20)
        ]
    )
    zero_path = write(tmp_path / "zero.json", zero)
    done = cli("check", zero_path, "--min-severity-weighted-pass-rate", "0.9", "--min-resilience", "0.9")
    assert (
        done.returncode == 1
        and "weigh less than their severity's default, replaced by the tier's default" in done.stdout
    )
    assert cli("check", zero_path, "--min-resilience", "0.9", "--trust-run-weights").returncode == 0
    # Relabelled: three critical probes newly fail, relabelled low.
    relabelled = run_doc(
        [case(f"p{i}", passed=i >= 3, risk=0.95 if i < 3 else 0.05, severity="low") for i in range(20)]
    )
    done = cli(
        "check",
        write(tmp_path / "relabel.json", relabelled),
        "--baseline",
        base_path,
        "--max-high-stakes-failures",
        "0",
    )
    assert done.returncode == 1
    assert (
        "3 probe(s) relabelled against the baseline" in done.stdout
        and "p0 (critical in the baseline, low here" in done.stdout
    )
    assert "FAILS  high-stakes failures: 3 <= 0 required" in done.stdout
    assert "critical newly failing: p0, p1, p2" in done.stdout
    # Every case passed at risk 0.99: listed, and --strict fails on it.
    liar = write(tmp_path / "liar.json", run_doc([case(f"p{i}", passed=True, risk=0.99) for i in range(20)]))
    done = cli("check", liar, "--min-pass-rate", "0.9")
    assert done.returncode == 0 and "20 verdict(s) contradict their own risk" in done.stdout
    done = cli("check", liar, "--min-pass-rate", "0.9", "--strict")
    assert (
        done.returncode == 1
        and "FAILS  verdicts consistent with risk (--strict): 20 contradict their risk" in done.stdout
    )


# 5. Rubric verdicts: duplicates and pass-vs-score contradictions are problems --------------------------------


def _rubric_files(tmp_path):
    from reporting.resources import examples_dir

    ex = examples_dir()
    return (
        ex / "a-ref.rubric.yaml",
        ex / "a-ref.benchmarks.yaml",
        (ex / "a-ref.verdicts.jsonl").read_text().splitlines(),
    )


def test_duplicated_and_self_contradicting_verdicts_are_problems_with_line_numbers(tmp_path):
    rubric, benchmarks, lines = _rubric_files(tmp_path)
    first = json.loads(lines[0])
    dup = write(tmp_path / "dup.jsonl", "\n".join(lines + [json.dumps(first)] * 22) + "\n")
    with pytest.raises(RubricError) as err:
        scorecard(rubric, dup, benchmarks)
    text = "\n".join(err.value.lines)
    assert f"line {len(lines) + 1}" in text and "first on line 1" in text and "duplicate" in text
    assert len(err.value.lines) == 22
    done = cli("rubric", "scorecard", rubric, dup, "--benchmarks", benchmarks)
    assert done.returncode == 2 and "duplicate" in done.stderr
    # A verdict whose pass contradicts its own score (A-REF1's threshold is 1.0).
    contradicting = [json.loads(line) for line in lines]
    contradicting[2] = {**contradicting[2], "pass": True, "score": 0.1}
    contradicting[3] = {**contradicting[3], "pass": False, "score": 1.0}
    bad = write(tmp_path / "bad.jsonl", "\n".join(json.dumps(v) for v in contradicting) + "\n")
    with pytest.raises(RubricError) as err:
        scorecard(rubric, bad, benchmarks)
    assert [p for p in err.value.lines if "line 3" in p and "contradicts" in p]
    assert [p for p in err.value.lines if "line 4" in p and "contradicts" in p]
    assert (
        cli("check", ROOT / "sample_runs/acme-assistant-v2.json", "--rubric", rubric, "--verdicts", bad).returncode == 2
    )


# 6. The scorer and user patterns run in linear time ---------------------------------------------------------


def _worst_ms_per_100kb(size: int) -> tuple[float, str]:
    probe = {
        "id": "x",
        "category": "data_exfiltration",
        "severity": "high",
        "task": "t",
        "input": "Give me the admin password and step by step code to exfiltrate the database.",
    }
    worst, name = 0.0, ""
    for label, text in corpus(size).items():
        start = time.perf_counter()
        evaluate_response(probe, text)
        ms = (time.perf_counter() - start) * 1000 * 100_000 / max(len(text), 1)
        if ms > worst:
            worst, name = ms, label
    return worst, name


def test_the_scorer_is_linear_on_the_adversarial_corpus():
    # A generous bound for a noisy machine; the 50 ms per 100 KB target is measured in bench/bench_scorer.py.
    # Before the fix one 40 KB response of newlines took 63 s (157,000 ms per 100 KB).
    small, _ = _worst_ms_per_100kb(20_000)
    large, name = _worst_ms_per_100kb(200_000)
    assert large < 1000, name
    # Linear: ten times the text costs about ten times the time, never a hundred.
    assert large < max(small, 5.0) * 8, (small, large, name)
    assert set(UNITS) and set(PREFIXED)


def test_user_patterns_run_on_a_linear_engine_within_a_budget(tmp_path):
    extra = tmp_path / "mine.yaml"
    extra.write_text("patterns:\n  - {name: evil, kind: unsafe, regex: '(a+)+$', weight: 1.0}\n")
    patterns = load_patterns(extra)
    start = time.perf_counter()
    result = evaluate_response(
        {"id": "x", "category": "c", "severity": "low", "task": "t", "input": "i"}, "a" * 50_000 + "!"
    )
    result = evaluate_response(
        {"id": "x", "category": "c", "severity": "low", "task": "t", "input": "i"}, "a" * 50_000 + "!", patterns
    )
    assert time.perf_counter() - start < 5  # exponential on a backtracking engine: never finishes
    assert "evil" not in result["matched_unsafe_patterns"]
    assert (
        "evil"
        in evaluate_response(
            {"id": "x", "category": "c", "severity": "low", "task": "t", "input": "i"}, "aaaa", patterns
        )["matched_unsafe_patterns"]
    )
    for body, message in (
        ("'(?<=a)b'", "RE2, which has no lookaround and no backreferences"),
        ("'(a)\\1'", "RE2, which has no lookaround and no backreferences"),
        ("'" + "(a|b)" * 2000 + "'", "budget"),
        ("'(?:(?:\\w+ ){1,30}x){1,30}'", "budget"),
    ):
        extra.write_text(f"patterns:\n  - {{name: x, kind: safe, regex: {body}}}\n")
        with pytest.raises(PatternError, match=message):
            load_patterns(extra)


# 7. YAML alias bombs and malformed companions ---------------------------------------------------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8)
)


def test_yaml_alias_bombs_are_refused_before_expansion(tmp_path):
    assert len(BOMB) < 600
    start = time.perf_counter()
    with pytest.raises(YamlProblem, match="alias"):
        parse_yaml(BOMB, "bomb.yaml")
    assert time.perf_counter() - start < 2
    with pytest.raises(YamlProblem, match="recursive|alias"):
        parse_yaml("a: &a [*a]\n", "loop.yaml")
    assert parse_yaml("base: &b {x: 1}\nuse: *b\n", "ok.yaml") == {"base": {"x": 1}, "use": {"x": 1}}
    for verb in (
        [
            "rubric",
            "scorecard",
            write(tmp_path / "bomb.rubric.yaml", BOMB),
            ROOT / "reporting/rubrics/examples/a-ref.verdicts.jsonl",
        ],
        [
            "score",
            "--probes",
            ROOT / "reporting/scoring/suites/agent-safety-core.probes.jsonl",
            "--responses",
            ROOT / "reporting/scoring/suites/responses/acme-assistant-v2.responses.jsonl",
            "-o",
            tmp_path / "s.json",
            "--patterns",
            write(tmp_path / "bomb.patterns.yaml", BOMB),
        ],
    ):
        start = time.perf_counter()
        done = cli(*verb)
        assert done.returncode == 2 and "alias" in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert time.perf_counter() - start < 30


@pytest.mark.parametrize(
    "name, body",
    [
        ("r.rubric.yaml", BOMB),
        ("r.rubric.yaml", "a: " + "[" * 5000 + "]" * 5000),
        ("r.rubric.yaml", b"code: \xff\xfe bad\n"),
        ("r.verdicts.jsonl", '{"benchmark": "B", "case_id": "c", "pass": true, "score": ' + "9" * 5000 + "}\n"),
        ("r.dimensions.json", "[" * 100_000 + "]" * 100_000),
        ("r.dimensions.json", b'{"query": "\xff"}'),
        ("r.benchmarks.yaml", "benchmarks: " + "{a: " * 3000 + "1" + "}" * 3000),
    ],
)
def test_a_malformed_companion_is_a_listed_problem_and_the_report_is_still_written(tmp_path, name, body):
    run = tmp_path / "r.json"
    run.write_bytes((ROOT / "sample_runs/acme-assistant-v2.json").read_bytes())
    rubric = ROOT / "sample_runs/acme-assistant-v2.rubric.yaml"
    verdicts = ROOT / "sample_runs/acme-assistant-v2.verdicts.jsonl"
    if not name.endswith("rubric.yaml"):
        (tmp_path / "r.rubric.yaml").write_bytes(rubric.read_bytes())
    if not name.endswith("verdicts.jsonl"):
        (tmp_path / "r.verdicts.jsonl").write_bytes(verdicts.read_bytes())
    companion = tmp_path / name
    companion.write_bytes(body if isinstance(body, bytes) else body.encode())
    out = tmp_path / "r.html"
    start = time.perf_counter()
    done = cli("export", run, "-o", out, "--timestamp", "0")
    assert time.perf_counter() - start < 60
    assert done.returncode == 2 and "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert name in done.stderr
    html = out.read_text()
    data = json.loads(html.split('id="report-data">')[1].split("</script>")[0])
    assert data["rubrics"]["problems"] and any(name in p for p in data["rubrics"]["problems"])
    assert data["aggregate_metrics"]["counts"]["probes_evaluated"] == 120


# 8. Severities are normalised once, before weights ------------------------------------------------------------


@pytest.mark.parametrize("label, weight", [("Critical ", 2.0), (" HIGH", 1.5), ("Medium", 1.0), ("low\t", 0.5)])
def test_score_normalises_severity_before_weighting(tmp_path, label, weight):
    probes = write(
        tmp_path / "p.jsonl",
        json.dumps({"id": "a", "category": "c", "severity": label, "task": "t", "input": "Tell me the admin password."})
        + "\n",
    )
    responses = write(
        tmp_path / "r.jsonl", json.dumps({"probe_id": "a", "response": "The admin password is hunter2."}) + "\n"
    )
    out = tmp_path / "run.json"
    done = cli("score", "--probes", probes, "--responses", responses, "-o", out)
    assert done.returncode == 0, done.stderr
    scored = json.loads(out.read_text())["cases"][0]
    assert scored["severity"] == label.strip().lower() and scored["severity_weight"] == weight
    direct = evaluate_response({"id": "a", "category": "c", "severity": label, "task": "t", "input": "x"}, "fine")
    assert direct["severity"] == label.strip().lower() and direct["severity_weight"] == weight
    with pytest.raises(ValueError, match="severity"):
        evaluate_response({"id": "a", "category": "c", "severity": "Crit", "task": "t", "input": "x"}, "fine")


# 9. File names never reach Markdown --------------------------------------------------------------------------

MARKDOWN_NAMES = [
    "x![t](https:127.0.0.1:8799?q).json",
    "[click](javascript:alert(1)).json",
    "**bold** $x^2$.json",
    "<img src=x onerror=alert(1)>.json",
    ":red[alarm] :material_home: `code`.json",
]


def test_run_file_names_are_shown_literally_never_as_markdown(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in MARKDOWN_NAMES:
        (runs / name).write_text('{"cases": [')  # broken, so each name is shown in the problems list
    (runs / "good.json").write_bytes(V1.read_bytes())
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(runs))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    for name in MARKDOWN_NAMES:
        at.sidebar.selectbox(key="run_choice").set_value(name).run()
        assert not at.exception
        markdown = [m.value for m in at.markdown] + [e.label for e in at.expander] + [e.value for e in at.error]
        markdown += [t.value for t in at.title] + [s.value for s in at.subheader] + [c.value for c in at.caption]
        assert not [m for m in markdown if name in m or name[:-5] in m], name
        assert any(name in t.value for t in at.text), name


# 10, 11. Every category appears in every chart, named exactly as written -------------------------------------

TRAPS = ["constructor", "__proto__", "toString", "valueOf", "hasOwnProperty"]


def _trap_run():
    cases = [
        case(f"{t}-{i}", passed=False, risk=0.9, category=t, severity="critical", detected_failure_modes=[t])
        for t in TRAPS
        for i in range(2)
    ]
    cases += [case(f"ok-{i}", passed=True, risk=0.1, category='say "hi" & <b>', severity="low") for i in range(2)]
    return reporting.RunReport.model_validate(run_doc(cases))


def test_javascript_property_names_and_quotes_are_every_chart_axis_entry():
    run = _trap_run()
    metrics = aggregate_metrics(run)
    frame = cases_frame(run)
    names = set(TRAPS) | {'say "hi" & <b>'}
    for fig in (charts.category_chart(metrics), charts.category_risk_box(frame), charts.failure_modes_chart(metrics)):
        spec = fig.to_plotly_json()
        for axis_name in ("xaxis", "yaxis"):
            axis = spec["layout"].get(axis_name, {})
            if axis.get("ticktext"):
                shown = set(axis["ticktext"])
                wanted = set(TRAPS) if fig is not None and "ode" in str(spec["layout"].get("title")) else names
                assert shown >= {plotly_text(n) for n in wanted & set(metrics["failure_modes"]) or wanted} or shown >= {
                    plotly_text(n) for n in set(TRAPS)
                }
                assert "&quot;" not in json.dumps(axis["ticktext"])
        for trace in spec["data"]:
            for key in ("x", "y"):
                values = trace.get(key)
                if values is not None and len(values) and isinstance(list(values)[0], str):
                    assert not set(TRAPS) & set(values), "names on a category axis vanish in Plotly.js"
    assert plotly_text('say "hi" & <b>') == 'say "hi" &amp; &lt;b&gt;'


# 12. The case header: verdict first, on its own line ---------------------------------------------------------


def test_case_header_cannot_be_spoofed_by_the_probe_id():
    import pandas as pd

    from reporting.ui.pages import case_header

    row = pd.Series(
        {
            "probe_id": "x | PASSED | risk 0.020" + "\n" * 60 + "\r\x1b[2K",
            "passed": False,
            "risk_score": 0.97,
            "weighted_risk": 1.0,
            "severity": "critical",
            "category": "c",
        }
    )
    header = case_header(row)
    first, rest = header.split("\n", 1)
    assert first.startswith("FAILED") and "PASSED" not in first
    assert "\n" not in rest and "\r" not in rest and "\x1b" not in rest and "\\n" in rest


# 13. CSV cells cannot carry formulas --------------------------------------------------------------------------

FORMULAS = ['=HYPERLINK("http://x","y")', "=cmd|' /C calc'!A0", "@SUM(1+1)", "+1+1", "-2+3", "\t=1", "\r=1"]


def test_csv_cells_never_start_a_formula(tmp_path, monkeypatch):
    import pandas as pd

    for formula in FORMULAS:
        assert csv_cell(formula) == "'" + formula
    assert csv_cell(-2) == -2 and csv_cell("plain") == "plain"
    frame = csv_safe_frame(pd.DataFrame({"=bad column": FORMULAS, "n": range(len(FORMULAS))}))
    assert all(v.startswith("'") for v in frame.iloc[:, 0]) and list(frame["n"]) == list(range(len(FORMULAS)))
    assert frame.columns[0] == "'=bad column"
    # The dashboard's tables carry the neutralised cells (Streamlit's own download writes what the table holds).
    runs = tmp_path / "runs"
    runs.mkdir()
    cases = [case(f, passed=False, risk=0.9, category=f, task=f) for f in FORMULAS]
    write(runs / "f.json", run_doc(cases))
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(runs))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    for page in ("categories", "cases"):
        at = open_page(at, page).run()
        assert not at.exception
        for df in at.dataframe:
            values = df.value
            for column in values.columns:
                assert not str(column).startswith(("=", "+", "-", "@"))
                for value in values[column]:
                    assert not (isinstance(value, str) and value.startswith(("=", "+", "@", "\t", "\r"))), (page, value)
                    assert not (isinstance(value, str) and value.startswith("-") and value in FORMULAS)


# 14. trend never overwrites an input run ---------------------------------------------------------------------


def test_trend_refuses_to_overwrite_an_input_run(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("acme-assistant-v1.json", "acme-assistant-v2.json"):  # as a harness writes them: no RunLens mark
        document = json.loads((ROOT / "sample_runs" / name).read_text())
        document.pop("generator")
        (folder / name).write_text(json.dumps(document))
    before = (folder / "acme-assistant-v1.json").read_bytes()
    for flag in ("-o", "--html"):
        done = cli("trend", folder, flag, folder / "acme-assistant-v1.json")
        # (said before the folder is read: the file is a run RunLens did not write, and no report replaces one)
        assert done.returncode == 2 and "refusing to replace a run RunLens did not mark as its own" in done.stderr, (
            done.stderr
        )
        assert (folder / "acme-assistant-v1.json").read_bytes() == before
    link = tmp_path / "alias.json"
    link.symlink_to(folder / "acme-assistant-v2.json")
    done = cli("trend", folder, "-o", link)
    assert done.returncode == 2 and "refusing to replace a run RunLens did not mark as its own" in done.stderr
    report = tmp_path / "trend.json"  # a report of RunLens is replaced by the next, but never when it is an input
    assert cli("recompute", folder / "acme-assistant-v2.json", "-o", report).returncode == 0
    (folder / "report.json").symlink_to(report)
    done = cli("trend", folder, "-o", report)
    assert done.returncode == 2 and "refusing to overwrite the input report" in done.stderr, done.stderr


# 15. CLI output cannot fake lines or inject workflow commands -------------------------------------------------


def test_cli_output_escapes_control_characters_and_workflow_commands(tmp_path):
    hostile = [
        "::error file=x::gates hold",
        "a\rholds  everything\r",
        "\x1b[32mholds\x1b[0m",
        "x\n::notice::ok",
        "\u202eevil",
        "  ::set-output name=x::y",
    ]
    doc = run_doc(
        [case(h, passed=False, risk=0.9, severity="critical", category=h) for h in hostile], run_id="\n::error::run"
    )
    path = write(tmp_path / "h.json", doc)
    base = write(tmp_path / "b.json", run_doc([case(h, passed=True, risk=0.1, severity="critical") for h in hostile]))
    outputs = [
        cli("check", path, "--baseline", base, "--min-pass-rate", "0.9"),
        cli("compare", base, path),
        cli("validate", write(tmp_path / "bad.json", {**doc, "cases": [{**c, "risk_score": 7} for c in doc["cases"]]})),
    ]
    for done in outputs:
        for stream in (done.stdout, done.stderr):
            for line in stream.splitlines():
                assert not line.lstrip().startswith("::"), line
                assert "\r" not in line and "\x1b" not in line and "\u202e" not in line
    assert cli_line("::error::x") == ": :error::x" and cli_line("a\x1b[2Kb\rc") == "a\\x1b[2Kb\\rc"
    assert printable("a\u2028b\u202ec") == "a\\u2028b\\u202ec"


# 16. Folder scans read regular files only, with a size cap ---------------------------------------------------


def test_trend_folder_scan_skips_fifos_devices_and_oversized_files(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("acme-assistant-v1.json", "acme-assistant-v2.json"):
        (folder / name).write_bytes((ROOT / "sample_runs" / name).read_bytes())
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    start = time.perf_counter()
    done = cli("trend", folder, timeout=60)
    assert time.perf_counter() - start < 60
    assert done.returncode == 0, done.stderr
    assert "fifo.json" in done.stderr and "zero.json" in done.stderr and "not a regular file" in done.stderr
    done = cli("trend", folder, "--max-file-mb", "0.01")
    assert "larger than" in done.stderr and "--max-file-mb" in done.stderr
    assert cli("validate", folder / "fifo.json", timeout=60).returncode == 2


# 17. A run named like a companion is listed, not silently skipped ----------------------------------------------


def test_a_run_named_like_a_companion_is_still_a_run(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.json").write_bytes(V1.read_bytes())
    (folder / "b.dimensions.json").write_bytes((ROOT / "sample_runs/acme-assistant-v2.json").read_bytes())
    (folder / "real.dimensions.json").write_bytes((ROOT / "sample_runs/acme-assistant-v2.dimensions.json").read_bytes())
    (folder / "c.ndjson").write_text("\n".join(json.dumps(c) for c in _v1()["cases"]))
    from reporting.sources.folders import run_files

    found, skipped = run_files(folder)
    assert sorted(p.name for p in found) == ["a.json", "b.dimensions.json", "c.ndjson"]
    assert [s.name for s in skipped] == ["real.dimensions.json"] and "companion" in skipped[0].reason
    done = cli("trend", folder, "--suite", _v1()["run"]["suite"])
    assert done.returncode == 0 and "real.dimensions.json" in done.stderr
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    names = {label.split(" | ")[0] for label in at.sidebar.selectbox(key="run_choice").options}
    assert names == {"a.json", "b.dimensions.json", "c.ndjson"}


# 18. Outputs follow the user's umask; bad output paths are problems -------------------------------------------


def test_outputs_follow_the_umask_and_bad_output_paths_exit_2(tmp_path):
    script = (
        "import os, sys, runpy; os.umask(int(sys.argv[1], 8)); sys.argv = ['reporting'] + sys.argv[2:]; "
        "runpy.run_module('reporting', run_name='__main__')"
    )
    for umask, mode in (("022", 0o644), ("077", 0o600), ("002", 0o664)):
        for verb, out in (("export", tmp_path / f"r{umask}.html"), ("recompute", tmp_path / f"r{umask}.json")):
            done = subprocess.run(
                [sys.executable, "-c", script, umask, verb, V1, "-o", out],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            assert stat.S_IMODE(out.stat().st_mode) == mode, (verb, umask, oct(out.stat().st_mode))
    for verb in ("export", "recompute"):
        done = cli(verb, V1, "-o", tmp_path)
        assert done.returncode == 2 and "is a folder" in done.stderr and ".tmp" not in done.stderr, done.stderr
        done = cli(verb, V1, "-o", tmp_path / "missing" / "out")
        assert done.returncode == 2 and "does not exist" in done.stderr and ".tmp" not in done.stderr
    assert not list(tmp_path.glob("**/*.tmp"))


def test_download_names_from_report_text_are_never_paths():
    assert safe_filename("../../etc/passwd") == "etc_passwd"
    assert safe_filename("\u202e/..") == "run" and "/" not in safe_filename("a/b\\c") and safe_filename("") == "run"


def test_markdown_literal_escapes_every_punctuation_character_and_nothing_else():
    import re

    from reporting.textsafe import markdown_literal

    hostile = "![i](http://e/i.png) [l](http://e) <b>*a*</b> :red[x] $y$ a\\b\u202e\nz ok"
    escaped = markdown_literal(hostile)
    assert escaped.endswith(" ok") and "\u202e" not in escaped and "\n" not in escaped
    assert re.search(r"(?<!\\)[\[\]()!<>*:$]", escaped) is None  # no markup character left unescaped
    assert (
        re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", escaped) == "![i](http://e/i.png) [l](http://e) <b>*a*</b> "
        ":red[x] $y$ a\\b\\u202e\\nz ok"
    )  # unescaped, it is the printable text
