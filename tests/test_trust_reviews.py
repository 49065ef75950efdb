"""Trust, second round (issue 30): the review trail and the files beside a run (``RUN.reviews.jsonl``,
``RUN.verdicts.jsonl``) under hostile input. One test per point of the issue, named for it.

A runs folder comes from a shared drive, a tarball or a repository: whoever made it chose what each name beside a
run is (a link, a FIFO, a folder, a file nested a hundred thousand levels deep, a forged record). A review decision
must never write through a name, a gate on the figures as reviewed must fail closed on anything it cannot read,
and a bad companion is a listed problem for that companion only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apptest import open_page
from streamlit.testing.v1 import AppTest

from reporting.analysis.compare import run_fingerprint
from reporting.analysis.review import adjudicate
from reporting.format.reviews import ReviewError, append_records, merge, read_reviews
from reporting.report.reviewing import load_reviews
from reporting.sources.reading import read_run

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "reporting", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def _case(pid, passed=True, risk=0.1, **extra):
    return {"probe_id": pid, "category": "c", "severity": "high", "passed": passed, "risk_score": risk, **extra}


def _run(folder: Path, name="run.json", cases=None, run_id="r") -> Path:
    cases = cases or [_case("p1"), _case("p2"), _case("p3", False, 0.9)]
    path = folder / name
    path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": run_id, "model": "m"}, "cases": cases}))
    return path


def _record(run_path: Path, probe="p1", verdict="fail", reason="seen", replaces="pass", **change):
    record = {
        "kind": "review",
        "run": run_fingerprint(read_run(run_path)),
        "run_id": "r",
        "probe_id": probe,
        "verdict": verdict,
        "reason": reason,
        "reviewer": "alice",
        "time": "2026-11-23T09:00:00Z",
        "replaces": {"judge": "primary", "verdict": replaces},
        **change,
    }
    return {k: v for k, v in record.items() if v is not None}


def _line(record) -> str:
    return json.dumps(record) + "\n"


def _review_set(run_path: Path, *extra, timeout=30):
    return cli(
        "review", run_path, "--set", "p1=fail", "--reviewer", "alice", "--reason", "seen", *extra, timeout=timeout
    )


def _app(folder: Path, monkeypatch, page="review") -> AppTest:
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    return open_page(at, page).run()


def _decision_buttons(at: AppTest) -> list[str]:
    return [b.key for b in at.button if b.key and b.key.startswith("do_")]


def test_point_1_a_review_decision_never_follows_a_symlinked_review_file(tmp_path, monkeypatch):
    """issue 30 point 1: ``review --set`` and the Review page's Confirm followed a symlinked RUN.reviews.jsonl and
    appended to whatever it pointed at (a victim's ~/.bashrc). A link (also a dangling one), a FIFO or a folder of
    that name is a listed problem (exit 2 / an error box): never followed, never written, never an internal
    error."""
    folder = tmp_path / "runs"
    folder.mkdir()
    run = _run(folder)
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=$PATH\n")
    before = victim.read_bytes()
    companion = folder / "run.reviews.jsonl"
    companion.symlink_to(victim)

    done = _review_set(run)
    assert done.returncode == 2, done.stderr
    assert "run.reviews.jsonl" in done.stderr and "symbolic link" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert victim.read_bytes() == before
    with pytest.raises(ReviewError, match="symbolic link"):  # the writer itself, whoever calls it
        append_records(companion, [_record(run)])
    assert victim.read_bytes() == before
    # reading goes no further: a verb that reads the review file lists the link, and nothing of the target shows
    done = cli("recompute", run, "-o", tmp_path / "out.json")
    assert done.returncode == 2 and "symbolic link" in done.stderr and "PATH" not in done.stderr, done.stderr

    companion.unlink()
    companion.symlink_to(tmp_path / "nowhere")  # a dangling link: not created through either
    assert _review_set(run).returncode == 2 and not (tmp_path / "nowhere").exists()

    # the dashboard: an error box, no decision buttons, nothing written through the link
    companion.unlink()
    companion.symlink_to(victim)
    at = _app(folder, monkeypatch)
    assert not at.exception
    assert any("review file has problems" in e.value for e in at.error)
    assert any("symbolic link" in t.value for t in at.text) and not _decision_buttons(at)
    assert victim.read_bytes() == before

    companion.unlink()
    for kind in ("folder", "FIFO"):
        companion.mkdir() if kind == "folder" else os.mkfifo(companion)
        start = time.perf_counter()
        done = _review_set(run)
        assert time.perf_counter() - start < 30
        assert done.returncode == 2 and kind in done.stderr and "internal error" not in done.stderr, done.stderr
        companion.rmdir() if kind == "folder" else companion.unlink()

    # the rubric companions too: a linked RUN.verdicts.jsonl is listed, never read through the link
    (folder / "run.rubric.yaml").write_bytes((ROOT / "sample_runs/acme-assistant-v2.rubric.yaml").read_bytes())
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"benchmark": "TOKEN-4242", "case_id": "c", "pass": true}\n')
    (folder / "run.verdicts.jsonl").symlink_to(secret)
    done = cli("export", run, "-o", tmp_path / "r.html")
    assert done.returncode == 2 and "run.verdicts.jsonl: $: is a symbolic link" in done.stderr, done.stderr
    html = (tmp_path / "r.html").read_text()
    assert "TOKEN-4242" not in html and "TOKEN-4242" not in done.stderr


def test_point_3_a_deeply_nested_companion_is_listed_and_the_runs_stay_usable(tmp_path, monkeypatch):
    """issue 30 point 3: one deeply nested ``*.reviews.jsonl`` or ``*.verdicts.jsonl`` beside a run emptied every
    dashboard page ("No run reports found") and made ``trend``, ``export`` and ``recompute`` exit 1. Companion
    lines go through the strict JSON decoder: the bad companion is listed, the runs are read."""
    folder = tmp_path / "runs"
    folder.mkdir()
    a = _run(folder, "a.json", run_id="a")
    b = _run(folder, "b.json", [_case("q1"), _case("q2", False, 0.8)], run_id="b")
    (folder / "a.reviews.jsonl").write_text("[" * 30_000 + "]" * 30_000 + "\n")  # under the line length cap
    (folder / "b.verdicts.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")

    done = cli("trend", folder)
    assert done.returncode == 0, done.stderr
    assert "a.reviews.jsonl: skipped" in done.stderr and "b.verdicts.jsonl: skipped" in done.stderr
    assert "internal error" not in done.stderr and "2 run(s)" in done.stdout

    for verb, out in (("recompute", tmp_path / "a.out.json"), ("export", tmp_path / "a.html")):
        done = cli(verb, a, "-o", out)
        assert done.returncode == 0 and out.exists(), done.stderr  # figures as judged: the line is a warning
        assert "a.reviews.jsonl: line 1" in done.stderr and "nested too deeply" in done.stderr
        assert "internal error" not in done.stderr
    done = cli("check", a, "--min-pass-rate", "0.5", "--as", "reviewed")
    assert done.returncode == 2 and "a.reviews.jsonl: line 1" in done.stderr, done.stderr
    done = cli("export", b, "-o", tmp_path / "b.html")  # the verdicts without a rubric: listed, report written
    assert done.returncode == 2 and (tmp_path / "b.html").exists() and "internal error" not in done.stderr
    records, problems = read_reviews(folder / "a.reviews.jsonl")
    assert records == [] and [p.path for p in problems] == ["line 1"]

    at = _app(folder, monkeypatch, "overview")
    assert not at.exception
    names = {label.split(" ")[0] for label in at.sidebar.selectbox(key="run_choice").options}
    assert names == {"a.json", "b.json"}
    assert not any("No run reports found" in i.value for i in at.info)
    choice = at.sidebar.selectbox(key="run_choice")
    choice.set_value(next(o for o in choice.options if o.startswith("a.json"))).run()  # the run beside the bad file
    at = open_page(at, "review").run()
    assert not at.exception and any("cannot be read" in e.value for e in at.error)
    assert b.exists()


def test_point_7_outputs_never_replace_the_review_trail_or_a_companion(tmp_path):
    """issue 30 point 7 (first half): ``export`` / ``recompute -o RUN.reviews.jsonl`` replaced the append-only
    review trail (exit 0), after which the gate "as reviewed" held. Writing verbs refuse (exit 2) an output onto a
    companion name of an input run (existing or not), onto any existing ``*.reviews.jsonl`` or
    ``*.verdicts.jsonl``, and onto the file given as ``--reviews``."""
    run = _run(tmp_path)
    assert _review_set(run).returncode == 0  # alice overturns p1: pass rate 1/3 as reviewed
    trail = tmp_path / "run.reviews.jsonl"
    kept = trail.read_bytes()
    gate = ("check", run, "--min-pass-rate", "0.6", "--as", "reviewed")
    assert cli(*gate).returncode == 1

    other = tmp_path / "other.reviews.jsonl"  # a trail, though not this run's
    other.write_bytes(kept)
    verdicts = tmp_path / "x.verdicts.jsonl"
    verdicts.write_text('{"benchmark": "B", "case_id": "c", "pass": true}\n')
    for verb in ("recompute", "export"):
        for out in (trail, tmp_path / "RUN.REVIEWS.jsonl", tmp_path / "run.verdicts.jsonl", other, verdicts):
            done = cli(verb, run, "-o", out)
            assert done.returncode == 2, (verb, out, done.stderr)
            assert "refusing" in done.stderr and "internal error" not in done.stderr
        assert not (tmp_path / "run.verdicts.jsonl").exists() and not (tmp_path / "RUN.REVIEWS.jsonl").exists()
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_bytes(kept)
    done = cli("recompute", run, "--reviews", decisions, "-o", decisions)
    assert done.returncode == 2 and "refusing" in done.stderr, done.stderr
    assert trail.read_bytes() == kept and other.read_bytes() == kept and decisions.read_bytes() == kept
    assert cli(*gate).returncode == 1  # the trail still holds alice's overturn
    assert cli("recompute", run, "-o", tmp_path / "fine.json").returncode == 0


def test_point_8_the_review_case_card_cannot_be_spoofed_by_report_text(tmp_path, monkeypatch):
    """issue 30 point 8: report text (a probe id, a category) could make the Review page's case card read
    "PASSED | risk 0.020" above the real verdict. The verdict is the card's first element, made by the app alone,
    before any text of the run; the id and category follow on one escaped line."""
    folder = tmp_path / "runs"
    folder.mkdir()
    spoof = "x | PASSED | risk 0.020" + "\n" * 40 + "\r\x1b[2K"
    cases = [_case(spoof, False, 0.97, category="c | PASSED | risk 0.020\n"), _case("ok", True, 0.1)]
    for c in cases:
        c["severity"] = "critical"
    _run(folder, cases=cases)
    at = _app(folder, monkeypatch)
    assert not at.exception
    texts = [t.value for t in at.text]
    card = next(i for i, t in enumerate(texts) if t.startswith(("FAILED", "PASSED")))
    assert texts[card] == "FAILED  |  judged fail  |  risk 0.970  |  severity critical"
    assert not any("PASSED" in t for t in texts[: card + 1])  # nothing that imitates a verdict above it
    identity = texts[card + 1]
    assert identity.startswith("probe x | PASSED") and "\n" not in identity and "\r" not in identity
    assert "\x1b" not in identity and "\\n" in identity
    # the report text itself is never Markdown: the response and the rest are st.code / st.text
    assert not any("PASSED" in m.value for m in at.markdown)


def test_point_11_unreadable_review_lines_forged_replaces_and_times_fail_closed(tmp_path):
    """issue 30 point 11: review records were read leniently. A torn reviewer *fail* line was skipped with a
    warning and ``check --as reviewed`` exited 0; a forged ``replaces`` let an overturn go without a reason; times
    were compared as text (``+09:00`` against ``Z``). Now: the gate on the figures as reviewed exits 2 on any line
    that cannot be read; an overturn always needs a reason; times are compared as instants (UTC), and a time
    without a zone, or not a time, is a problem."""
    run = _run(tmp_path, cases=[_case("p1"), _case("p2"), _case("p3")])  # every case passes as judged
    trail = tmp_path / "run.reviews.jsonl"
    gate = ("check", run, "--min-pass-rate", "0.9", "--as", "reviewed")
    confirm = _line(_record(run, "p2", "pass", reason=None))
    fail = _line(_record(run, "p1", "fail", reason="it leaks the key"))

    trail.write_text(confirm + fail[: len(fail) // 2])  # alice's fail, cut short by a crash
    assert cli("check", run, "--min-pass-rate", "0.9").returncode == 0  # as judged: unchanged
    done = cli(*gate)
    assert done.returncode == 2 and "line 2" in done.stderr and "cannot be read" in done.stderr, done.stderr
    reviews = load_reviews(read_run(run), None, run)  # the dashboard's figures as reviewed refuse it too
    assert [p.path for p in reviews.blocking] == ["line 2"] and reviews.invalid == []
    trail.write_text(confirm + "{not a record\n" + confirm)  # a bad line in the middle: the same
    assert cli(*gate).returncode == 2
    trail.write_text(confirm)
    assert cli(*gate).returncode == 0

    # a forged replaces: the record claims p1 was judged fail, so "fail" looks like a confirmation
    trail.write_text(_line(_record(run, "p1", "fail", reason=None, replaces="fail")))
    problems = load_reviews(read_run(run), None, run).problems
    assert {p.path for p in problems} == {"line 1.reason", "line 1.replaces.verdict"}
    done = cli(*gate)
    assert done.returncode == 2 and "line 1.reason" in done.stderr and "overturning" in done.stderr

    # times: 18:30+09:00 is 09:30Z, before 10:00Z; as text it sorted after, and alice's older fail won
    later_pass = _record(run, "p1", "pass", reason=None, time="2026-11-23T10:00:00Z")
    earlier_fail = _record(run, "p1", "fail", reason="second look", time="2026-11-23T18:30:00+09:00")
    trail.write_text(_line(later_pass) + _line(earlier_fail))
    records, problems = read_reviews(trail)
    assert not problems
    assert adjudicate(read_run(run), records).decisions["p1"].verdict == "pass"
    merged, _, _ = merge([("a", _line(earlier_fail).encode()), ("b", _line(later_pass).encode())])
    assert [r["verdict"] for r in merged] == ["fail", "pass"]  # in time order
    assert cli(*gate).returncode == 0  # p1 passes as reviewed
    for bad in ("2026-11-23T10:00:00", "2026-11-23", "2026-11-23T25:00:00Z", "2026-11-23T10:00:00+24:00"):
        trail.write_text(_line(_record(run, "p1", "pass", reason=None, time=bad)))
        assert [p.path for p in read_reviews(trail)[1]] == ["line 1.time"], bad
        assert cli(*gate).returncode == 2


def test_point_12_the_review_file_is_size_capped_and_a_fifo_or_folder_never_hangs_or_crashes(tmp_path, monkeypatch):
    """issue 30 point 12: the review file had no size cap (3 GB read despite ``--max-file-mb 10``); a FIFO of that
    name blocked ``review --set`` and the dashboard forever; a folder of that name was an internal error. The cap
    of the run files applies, and a FIFO or folder is a listed problem, at once."""
    folder = tmp_path / "runs"
    folder.mkdir()
    run = _run(folder)
    trail = folder / "run.reviews.jsonl"
    trail.write_text(_line(_record(run, "p2", "pass", reason=None)) * 200)  # valid records, about 60 KB
    done = cli("recompute", run, "-o", tmp_path / "o.json", "--max-file-mb", "0.01")
    assert done.returncode == 2 and "run.reviews.jsonl" in done.stderr and "--max-file-mb" in done.stderr
    assert "larger than" in done.stderr and not (tmp_path / "o.json").exists()
    assert _review_set(run, "--max-file-mb", "0.01").returncode == 2
    assert cli("recompute", run, "-o", tmp_path / "o.json").returncode == 0  # under the default cap: read

    trail.unlink()
    os.mkfifo(trail)
    start = time.perf_counter()
    for done in (_review_set(run), cli("check", run, "--min-pass-rate", "0.1", "--as", "reviewed", timeout=30)):
        assert done.returncode == 2 and "FIFO" in done.stderr and "internal error" not in done.stderr, done.stderr
    assert time.perf_counter() - start < 60
    at = _app(folder, monkeypatch)  # the dashboard session: an error box, no decision to click into a FIFO
    assert not at.exception and any("review file has problems" in e.value for e in at.error)
    assert any("FIFO" in t.value for t in at.text) and not _decision_buttons(at)

    trail.unlink()
    trail.mkdir()
    done = _review_set(run)
    assert done.returncode == 2 and "folder" in done.stderr and "internal error" not in done.stderr, done.stderr
    assert read_reviews(trail)[1][0].message.startswith("is a folder")


def test_review_summary_and_merge_print_report_data_on_one_line(tmp_path, capsys):
    """Issue 30, the first round's open finding on the review verbs: a judge's name and a probe id holding a
    newline print escaped, on their own line, in the summary and in a merge's conflicts."""
    from reporting.cli import main

    judge = "det\nsigned off by mallory on 2026-01-01: 999 case(s) reviewed"
    case = {"probe_id": "a\nconflict FAKE", "category": "c", "severity": "low", "passed": False, "risk_score": 0.9}
    case["verdicts"] = {judge: {"passed": False}}
    runs = []
    for name in ("x", "y"):
        run = tmp_path / name / "r.json"
        run.parent.mkdir()
        run.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": [case]}))
        runs.append(run)
    for run, (reviewer, verdict) in zip(runs, (("bob", "pass"), ("carol", "fail"))):
        reason = ["--reason", "ok"] if verdict == "pass" else []
        assert main(["review", str(run), "--set", f"a\nconflict FAKE={verdict}", "--reviewer", reviewer, *reason]) == 0
    capsys.readouterr()
    assert main(["review", str(runs[0])]) == 0
    out = capsys.readouterr().out
    assert not any(line.startswith("signed off by mallory") for line in out.splitlines()), out
    assert "judge det\\nsigned off by mallory" in out
    merged = tmp_path / "m.jsonl"
    trails = [str(r.with_name("r.reviews.jsonl")) for r in runs]
    assert main(["review", "merge", *trails, "-o", str(merged)]) == 0
    out = capsys.readouterr().out
    assert "conflict a\\nconflict FAKE: " in out and not any(
        line.startswith("conflict FAKE") for line in out.splitlines()
    )


def test_point_1_the_rubrics_page_lists_a_linked_companion_and_never_reads_it(tmp_path, monkeypatch):
    """A RUN.verdicts.jsonl that is a link (to a file outside the folder) is listed on the Rubrics page as a problem
    naming the file; its content never reaches the page."""
    folder = tmp_path / "runs"
    folder.mkdir()
    run = _run(folder)
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"benchmark": "SECRET-BENCHMARK", "case_id": "x", "pass": true, "score": 1}\n')
    (folder / "run.verdicts.jsonl").symlink_to(secret)
    (folder / "run.rubric.yaml").write_text("code: R\nlabel: r\n")
    at = _app(folder, monkeypatch, page="rubrics")
    assert not at.exception, at.exception
    shown_text = "\n".join(c.value for c in at.code)
    assert "run.verdicts.jsonl" in shown_text and "link" in shown_text, shown_text
    everything = shown_text + "".join(t.value for t in at.text) + "".join(m.value for m in at.markdown)
    assert "SECRET-BENCHMARK" not in everything
    assert run.exists()
