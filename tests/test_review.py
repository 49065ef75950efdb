"""Review of verdicts (issue 16): records kept beside the run, adjudicated figures, agreement, nothing lost."""

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reporting.analysis.compare import run_fingerprint
from reporting.analysis.judges import cohen_kappa
from reporting.analysis.review import adjudicate, agreement_with, pass_rate_change, reviewed_run
from reporting.cli import main
from reporting.format.reviews import append_records, companion_path, merge, parse_lines, read_reviews
from reporting.report.build import build_report
from reporting.report.reviewing import load_reviews
from reporting.sources.reading import read_run

ROOT = Path(__file__).resolve().parent.parent


def _case(pid, passed, risk, category="c", severity="high", verdicts=None):
    case = {
        "probe_id": pid,
        "category": category,
        "severity": severity,
        "passed": passed,
        "risk_score": risk,
        "response": f"answer {pid}",
    }
    if verdicts:
        case["verdicts"] = verdicts
    return case


def _run(tmp_path, cases=None):
    """Six cases, four passed: pass rate 4/6 as judged."""
    cases = cases or [
        _case("p1", True, 0.1),
        _case("p2", True, 0.2),
        _case("p3", True, 0.3),
        _case("p4", True, 0.4),
        _case("p5", False, 0.8),
        _case("p6", False, 0.9),
    ]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}))
    return path


def _review(path, *items, reviewer="alice", reason="seen in the meeting", extra=()):
    sets = [arg for item in items for arg in ("--set", item)]
    return main(["review", str(path), *sets, "--reviewer", reviewer, "--reason", reason, *extra])


def test_reviews_go_beside_the_run_which_is_never_modified(tmp_path):
    path = _run(tmp_path)
    before = path.read_bytes()
    assert _review(path, "p1=fail") == 0
    assert path.read_bytes() == before
    companion = companion_path(path)
    assert companion.name == "run.reviews.jsonl"
    (record,) = [json.loads(line) for line in companion.read_text().splitlines()]
    assert record["verdict"] == "fail" and record["replaces"] == {"judge": "primary", "verdict": "pass"}
    assert record["run"] == run_fingerprint(read_run(path)) and record["reviewer"] == "alice"


def test_adjudicated_pass_rate_computed_by_hand(tmp_path):
    """p1 overturned to fail by alice, p5 overturned to pass by alice; p2 contested (alice pass, bob fail: fail);
    p3 unsure. As reviewed: passes p2? no (contested -> fail), p3, p4, p5 -> 3 of 6."""
    path = _run(tmp_path)
    assert _review(path, "p1=fail", "p5=pass", "p2=pass") == 0
    assert _review(path, "p2=fail", "p3=unsure", reviewer="bob") == 0
    run = read_run(path)
    reviews = load_reviews(run, None, path)
    assert not reviews.problems
    report = build_report(run, reviews=reviews, basis="reviewed", with_observability=False)
    assert report.metrics["overall"]["pass_rate"] == pytest.approx(3 / 6)
    judged = build_report(run, reviews=reviews, basis="judged", with_observability=False)
    assert judged.metrics["overall"]["pass_rate"] == pytest.approx(4 / 6)
    review = report.review
    assert (review["reviewed"], review["decided"], review["contested"], review["unsure"]) == (4, 3, 1, 1)
    assert [c["probe_id"] for c in review["contested_cases"]] == ["p2"]
    assert {c["probe_id"] for c in review["overturned_cases"]} == {"p1", "p5"}
    # the paired change: p1 and p2 pass -> fail (b = 2), p5 fail -> pass (c = 1), over 6 cases
    change = review["pass_rate_change"]
    assert (change["pass_to_fail"], change["fail_to_pass"]) == (2, 1)
    assert change["difference"] == pytest.approx(-1 / 6)
    low, high = change["difference_ci"]
    assert low < -1 / 6 < high
    row = next(r for r in review["headline"] if r["key"] == "pass_rate")
    assert row["difference"] == pytest.approx(-1 / 6)
    assert review["states"]["p1"]["state"] == "overturned" and review["states"]["p3"]["state"] == "unsure"
    assert review["states"]["p2"]["reasons"] == ["alice: seen in the meeting", "bob: seen in the meeting"]


def test_a_later_record_by_the_same_reviewer_supersedes_and_both_stay(tmp_path):
    path = _run(tmp_path)
    assert _review(path, "p1=fail") == 0
    assert _review(path, "p1=pass") == 0  # changed her mind: confirms the judge
    records, problems = read_reviews(companion_path(path))
    assert not problems and len(records) == 2  # the audit trail keeps both
    adjudication = adjudicate(read_run(path), records)
    assert adjudication.decisions["p1"].verdict == "pass" and not adjudication.decisions["p1"].overturned


def test_cohens_kappa_against_a_published_example():
    """Wikipedia's worked example of Cohen's kappa: 50 proposals, both yes 20, A yes B no 5, A no B yes 10, both
    no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4."""
    a = [True] * 20 + [True] * 5 + [False] * 10 + [False] * 15
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    figures = agreement_with(a, b)
    assert figures["kappa"] == pytest.approx(0.4)
    assert figures["confusion"] == {"fail_fail": 20, "pass_fail": 5, "fail_pass": 10, "pass_pass": 15}
    assert figures["sensitivity"] == pytest.approx(20 / 25) and figures["specificity"] == pytest.approx(15 / 25)
    assert figures["balanced_accuracy"] == pytest.approx(0.7)
    low, high = figures["kappa_ci"]
    assert low < 0.4 < high and 0 < low


def test_agreement_of_each_judge_with_the_reviewers(tmp_path):
    cases = [
        _case("p1", True, 0.1, verdicts={"detector": {"passed": False}}),
        _case("p2", False, 0.9, verdicts={"detector": {"passed": False}}),
        _case("p3", True, 0.2, verdicts={"detector": {"passed": True}}),
        _case("p4", False, 0.7, verdicts={"detector": {"passed": None}}),
    ]
    path = _run(tmp_path, cases)
    assert _review(path, "p1=fail", "p2=fail", "p3=pass", "p4=pass") == 0
    run = read_run(path)
    review = build_report(run, reviews=load_reviews(run, None, path), with_observability=False).review
    primary, detector = review["judges"]["primary"], review["judges"]["detector"]
    # primary: harms p1, p2; it failed p2 and p4 -> tp 1 (p2), fn 1 (p1), fp 1 (p4), tn 1 (p3)
    assert primary["confusion"] == {"fail_fail": 1, "pass_fail": 1, "fail_pass": 1, "pass_pass": 1}
    assert primary["balanced_accuracy"] == pytest.approx(0.5)
    # the detector judged p1-p3 and agrees on all three
    assert detector["n"] == 3 and detector["balanced_accuracy"] == 1.0 and detector["kappa"] == pytest.approx(1.0)


def test_review_of_failures_only_says_it_cannot_measure_misses(tmp_path):
    path = _run(tmp_path)
    assert _review(path, "p5=fail", "p6=fail") == 0
    run = read_run(path)
    review = build_report(run, reviews=load_reviews(run, None, path), with_observability=False).review
    assert "misses" in review["sample_note"]


def _append_many(args):
    path, worker = args
    for i in range(200):
        record = {
            "kind": "review",
            "run": "x",
            "run_id": "r",
            "probe_id": f"p{worker}-{i}",
            "verdict": "unsure",
            "reviewer": f"w{worker}",
            "time": "2026-11-23T09:00:00Z",
            "replaces": {"judge": "primary", "verdict": "pass"},
        }
        append_records(path, [record])


def test_eight_processes_appending_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "run.reviews.jsonl")
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        pool.map(_append_many, [(path, w) for w in range(8)])
    lines = Path(path).read_bytes().split(b"\n")
    assert lines[-1] == b""
    records = [json.loads(line) for line in lines[:-1]]
    assert len(records) == 1600
    assert {r["probe_id"] for r in records} == {f"p{w}-{i}" for w in range(8) for i in range(200)}


def test_a_torn_last_line_is_reported_skipped_and_never_breaks_the_next_append(tmp_path):
    path = _run(tmp_path)
    assert _review(path, "p1=fail") == 0
    companion = companion_path(path)
    good = companion.read_bytes()
    companion.write_bytes(good + good[: len(good) // 2])  # a crash mid-write
    records, problems = read_reviews(companion)
    assert len(records) == 1 and len(problems) == 1 and "incomplete record" in problems[0].message
    assert _review(path, "p2=fail") == 0  # the next append starts on its own line
    records, problems = read_reviews(companion)
    assert [r["probe_id"] for r in records] == ["p1", "p2"]
    assert len(problems) == 1 and problems[0].path == "line 2"  # still reported, never silently dropped
    assert main(["recompute", str(path), "-o", str(tmp_path / "o.json")]) == 0  # a warning, not a stop


def test_records_for_another_run_or_absent_probes_are_problems_never_applied(tmp_path, capsys):
    path = _run(tmp_path)
    assert _review(path, "p1=fail") == 0
    other = tmp_path / "other"
    other.mkdir()
    moved = _run(other, [_case("p1", True, 0.1), _case("q9", True, 0.2)])
    companion_path(moved).write_bytes(companion_path(path).read_bytes())
    capsys.readouterr()
    assert main(["recompute", str(moved), "--as", "reviewed", "-o", str(other / "o.json")]) == 2
    assert "another run" in capsys.readouterr().err
    assert not (other / "o.json").exists()
    run = read_run(path)
    record = json.loads(companion_path(path).read_text())
    record["probe_id"] = "nope"
    reviews_file = tmp_path / "bad.jsonl"
    reviews_file.write_text(json.dumps(record) + "\n")
    problems = load_reviews(run, reviews_file).problems
    assert [p.path for p in problems] == ["line 1.probe_id"]


@pytest.mark.parametrize(
    "change, where",
    [
        ({"verdict": "maybe"}, "line 1.verdict"),
        ({"reason": None}, "line 1.reason"),  # an overturn (pass -> fail) without a reason
        ({"reason": "x" * 5000}, "line 1.reason"),
        ({"reviewer": "eve\u202e"}, "line 1.reviewer"),  # a bidirectional override
        ({"reviewer": "a\x1b[31m"}, "line 1.reviewer"),
        ({"time": "yesterday"}, "line 1.time"),
        ({"kind": "vote"}, "line 1.kind"),
    ],
)
def test_bad_records_are_listed_with_their_line(tmp_path, capsys, change, where):
    path = _run(tmp_path)
    run = read_run(path)
    record = {
        "kind": "review",
        "run": run_fingerprint(run),
        "run_id": "r",
        "probe_id": "p1",
        "verdict": "fail",
        "reason": "why",
        "reviewer": "alice",
        "time": "2026-11-23T09:00:00Z",
        "replaces": {"judge": "primary", "verdict": "pass"},
    }
    record.update(change)
    companion_path(path).write_text(json.dumps(record) + "\n")
    assert [p.path for p in read_reviews(companion_path(path))[1]] == [where]
    capsys.readouterr()
    assert main(["export", str(path), "-o", str(tmp_path / "r.html")]) == 2
    assert f"{where}" in capsys.readouterr().err


def test_a_batch_from_a_file_is_checked_whole_before_anything_is_written(tmp_path, capsys):
    path = _run(tmp_path)
    batch = tmp_path / "d.jsonl"
    batch.write_text(
        json.dumps({"probe_id": "p1", "verdict": "fail", "reason": "r"})
        + "\n"
        + json.dumps({"probe_id": "p2", "verdict": "fail"})
        + "\n"
    )
    assert main(["review", str(path), "--from", str(batch), "--reviewer", "alice"]) == 2
    assert "line 2.reason" in capsys.readouterr().err
    assert not companion_path(path).exists()
    batch.write_text(json.dumps({"probe_id": "p1", "verdict": "fail", "reason": "r"}) + "\n")
    assert main(["review", str(path), "--from", str(batch), "--reviewer", "alice"]) == 0
    assert len(read_reviews(companion_path(path))[0]) == 1


def test_merge_deduplicates_and_lists_conflicts(tmp_path, capsys):
    path = _run(tmp_path)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert _review(path, "p1=fail", "p5=fail", extra=["--reviews", str(a)]) == 0
    b.write_bytes(a.read_bytes())  # bob's copy started from alice's file
    assert _review(path, "p1=pass", reviewer="bob", extra=["--reviews", str(b)]) == 0
    out = tmp_path / "merged.jsonl"
    capsys.readouterr()
    assert main(["review", "merge", str(a), str(b), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "conflict p1: alice fail, bob pass" in printed and "1 conflict(s)" in printed
    records, problems = read_reviews(out)
    assert not problems and len(records) == 3  # alice's two records once, bob's one
    assert main(["review", "merge", str(a), str(b), "-o", str(out)]) == 2  # never over a file
    merged, _, conflicts = merge([("a", a.read_bytes()), ("a again", a.read_bytes())])
    assert len(merged) == 2 and conflicts == []


def test_check_as_reviewed_gates_on_the_reviewed_figures_and_fails_closed_without_reviews(tmp_path):
    path = _run(tmp_path)
    assert main(["check", str(path), "--min-pass-rate", "0.6"]) == 0  # 4/6 as judged
    assert main(["check", str(path), "--min-pass-rate", "0.6", "--as", "reviewed"]) == 2  # no review file
    assert _review(path, "p1=fail") == 0
    assert main(["check", str(path), "--min-pass-rate", "0.6", "--as", "reviewed"]) == 1  # 3/6


def test_signoff_is_recorded_in_the_same_file(tmp_path, capsys):
    path = _run(tmp_path)
    assert _review(path, "p1=fail") == 0
    capsys.readouterr()
    assert main(["review", str(path), "--signoff", "--reviewer", "lead"]) == 0
    assert "signed off by lead" in capsys.readouterr().out
    records, _ = read_reviews(companion_path(path))
    assert records[-1]["kind"] == "signoff" and records[-1]["cases_reviewed"] == 1


def test_the_review_file_is_a_companion_not_a_run_in_a_folder(tmp_path):
    from reporting.sources.folders import run_files

    path = _run(tmp_path)
    assert _review(path, "p1=fail") == 0
    runs, skipped = run_files(tmp_path)
    assert runs == [path] and [s.name for s in skipped] == ["run.reviews.jsonl"]


def test_parse_lines_keeps_the_lines_after_a_bad_one():
    good = json.dumps(
        {
            "kind": "signoff",
            "run": "x",
            "run_id": "r",
            "reviewer": "a",
            "time": "2026-11-23T09:00:00Z",
            "cases_reviewed": 0,
            "basis": "reviewed",
        }
    ).encode()
    records, problems = parse_lines(b"{nope\n" + good + b"\n", "f")
    assert len(records) == 1 and [p.path for p in problems] == ["line 1"]
    assert problems[0].message.startswith("an incomplete record")


def test_append_respects_the_umask(tmp_path):
    script = (
        "import os, sys; os.umask(0o077); sys.path.insert(0, sys.argv[2]);"
        "from reporting.format.reviews import append_records;"
        "append_records(sys.argv[1], [{'kind': 'x'}])"
    )
    target = tmp_path / "r.jsonl"
    subprocess.run([sys.executable, "-c", script, str(target), str(ROOT)], check=True)
    assert os.stat(target).st_mode & 0o777 == 0o600


def test_reviewed_run_keeps_the_judged_drift_and_gives_an_error_case_a_verdict(tmp_path):
    cases = [_case("p1", True, 0.1), {**_case("p2", None, None), "error": "timed out"}]
    path = _run(tmp_path, cases)
    run = read_run(path)
    records = [
        {
            "kind": "review",
            "run": run_fingerprint(run),
            "run_id": "r",
            "probe_id": "p2",
            "verdict": "fail",
            "reviewer": "a",
            "time": "2026-11-23T09:00:00Z",
            "reason": "read the transcript",
            "replaces": {"judge": "primary", "verdict": "error"},
        }
    ]
    adjudication = adjudicate(run, records)
    reviewed = reviewed_run(run, adjudication)
    case = next(c for c in reviewed.cases if c.probe_id == "p2")
    assert case.passed is False and case.error is None and case.risk_score == 1.0
    assert pass_rate_change(run, adjudication)["n"] == 1  # only cases evaluated in both are paired
