"""A review of a run read by columns never makes a case object per case of the run (issue 28): the run's own
verdicts are read for the reviewed cases alone, and the run as reviewed is its case table with the decided cases'
rows replaced (``table_run.updated_cases``). Everything the review gives must be what the same run read case by
case gives: the cases as reviewed, their fingerprint, every figure as judged and as reviewed, the review's
summary."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_columnar import per_record

import reporting
from reporting.analysis.compare import run_fingerprint
from reporting.analysis.review import adjudicate, pass_rate_change, reviewed_run
from reporting.cli import main
from reporting.format import table_run
from reporting.format.reviews import judged_verdicts
from reporting.format.table_run import TableCases, table_of, updated_cases
from reporting.format.writing import dumps
from reporting.report.build import build_report
from reporting.report.reviewing import load_reviews
from reporting.report.serialise import report_document

SEVERITIES = ("low", "medium", "high", "critical")


def _random_run(rng: random.Random, n: int) -> dict:
    """Passes, failures and errors (some with a risk kept, which the reader refuses by columns, so none here), given
    and absent severity weights and weighted risks, judges that agree, differ or did not judge."""
    cases = []
    for i in range(n):
        passed = rng.choice([True, False, None])
        case = {
            "probe_id": f"p{i:03d}",
            "category": rng.choice(["jailbreak", "pii", "<b>x</b>"]),
            "severity": rng.choice(SEVERITIES),
            "passed": passed,
            "risk_score": None if passed is None else round(rng.random(), 3),
            "response": f"answer {i}",
        }
        if passed is None:
            case["error"] = "timeout"
        elif rng.random() < 0.4:
            case["severity_weight"] = rng.choice([0.25, 1.0, 3.0])
        if passed is not None and rng.random() < 0.3:
            case["weighted_risk"] = 0.123  # stored: drift of the run as judged, never of the run as reviewed
        if rng.random() < 0.6:
            case["verdicts"] = {
                judge: {"passed": rng.choice([True, False, None]), "score": rng.random()}
                for judge in rng.sample(["llama-guard", "harmbench", "rules"], rng.randint(1, 3))
            }
        cases.append(case)
    return {"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}


def _reviewed(tmp_path: Path, seed: int) -> Path:
    """A random run and decisions on a third of its cases by up to three reviewers (some contested, some unsure,
    some with a severity), recorded through the ``review`` command as a user records them."""
    rng = random.Random(seed)
    path = tmp_path / f"run{seed}.json"
    document = _random_run(rng, rng.randint(12, 60))
    path.write_text(json.dumps(document))
    probes = [c["probe_id"] for c in document["cases"]]
    for reviewer in ("alice", "bob", "carol")[: rng.randint(1, 3)]:
        lines = []
        for probe in rng.sample(probes, max(1, len(probes) // 3)):
            decision = {"probe_id": probe, "verdict": rng.choice(["pass", "fail", "unsure"]), "reason": "seen"}
            if rng.random() < 0.3:
                decision["severity"] = rng.choice(SEVERITIES)
            lines.append(json.dumps(decision))
        batch = tmp_path / f"{reviewer}.jsonl"
        batch.write_text("\n".join(lines) + "\n")
        assert main(["review", str(path), "--from", str(batch), "--reviewer", reviewer]) == 0
    return path


@pytest.mark.parametrize("seed", range(6))
def test_a_review_of_a_run_read_by_columns_is_that_of_its_cases(tmp_path, seed):
    path = _reviewed(tmp_path, seed)
    fast, slow = reporting.load_run(str(path)).run, per_record(path).run
    assert table_of(fast) is not None and table_of(slow) is None
    reviews = [load_reviews(run, None, path) for run in (fast, slow)]
    assert not reviews[0].problems and reviews[0].records == reviews[1].records
    assert judged_verdicts(fast) == judged_verdicts(slow)
    adjudications = [adjudicate(run, r.records) for run, r in zip((fast, slow), reviews)]
    assert adjudications[0] == adjudications[1] and adjudications[0].decisions
    as_reviewed = [reviewed_run(run, a) for run, a in zip((fast, slow), adjudications)]
    assert isinstance(as_reviewed[0].cases, TableCases)  # still a table, not a list of cases
    assert list(as_reviewed[0].cases) == list(as_reviewed[1].cases)
    assert run_fingerprint(as_reviewed[0]) == run_fingerprint(as_reviewed[1]) != run_fingerprint(fast)
    assert pass_rate_change(fast, adjudications[0]) == pass_rate_change(slow, adjudications[1])
    for basis in ("judged", "reviewed"):
        reports = [
            build_report(run, reviews=r, basis=basis, with_observability=False) for run, r in zip((fast, slow), reviews)
        ]
        assert dumps(report_document(reports[0])) == dumps(report_document(reports[1]))


def test_the_run_as_reviewed_by_hand(tmp_path):
    """p1 pass -> fail; p2 an error decided pass (takes risk 0) at severity critical (its weight 2.0, the given 3.0
    dropped); p3 unsure with severity low (verdict kept, weight 0.5). Pass rate: judged 2/3 (p1, p3 of p1, p3, p4),
    reviewed 2/4 (p2, p3 of p1..p4); the change over the cases evaluated in both: p1 pass -> fail (b = 1)."""
    cases = [
        {"probe_id": "p1", "category": "c", "severity": "high", "passed": True, "risk_score": 0.2},
        {"probe_id": "p2", "category": "c", "severity": "low", "passed": None, "risk_score": None, "error": "timeout"},
        {"probe_id": "p3", "category": "c", "severity": "high", "passed": True, "risk_score": 0.4},
        {"probe_id": "p4", "category": "c", "severity": "medium", "passed": False, "risk_score": 0.9},
    ]
    cases[1]["severity_weight"] = 3.0
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}))
    assert main(["review", str(path), "--set", "p1=fail", "--set", "p2=pass", "--reviewer", "a", "--reason", "x"]) == 0
    assert (
        main(["review", str(path), "--set", "p2=pass", "--severity", "critical", "--reviewer", "b", "--reason", "y"])
        == 0
    )
    assert main(["review", str(path), "--set", "p3=unsure", "--severity", "low", "--reviewer", "c"]) == 0
    run = reporting.load_run(str(path)).run
    assert table_of(run) is not None
    adjudication = adjudicate(run, load_reviews(run, None, path).records)
    reviewed = reviewed_run(run, adjudication)
    got = {c.probe_id: c for c in reviewed.cases}
    assert (got["p1"].passed, got["p2"].passed, got["p2"].risk_score, got["p2"].error) == (False, True, 0.0, None)
    assert (got["p2"].severity, got["p2"].severity_weight, got["p3"].severity, got["p3"].passed) == (
        "critical",
        None,
        "low",
        True,
    )
    table = table_of(reviewed)
    assert table.column("severity_weight").to_pylist() == [1.5, 2.0, 0.5, 1.0]  # effective: each tier's default
    assert table.column("weighted_risk").to_pylist() == [0.30000000000000004, 0.0, 0.2, 0.9]
    change = pass_rate_change(run, adjudication)
    assert (change["n"], change["pass_to_fail"], change["fail_to_pass"]) == (3, 1, 0)
    assert (change["judged"], change["reviewed"]) == (2 / 3, 1 / 3)
    figures = build_report(run, reviews=load_reviews(run, None, path), basis="reviewed", with_observability=False)
    assert figures.metrics["overall"]["pass_rate"] == 2 / 4
    assert table_of(run).column("passed").to_pylist() == [True, None, True, False]  # the run as judged unchanged


def test_only_the_reviewed_cases_are_made_into_case_objects(tmp_path, monkeypatch):
    """The review of a run read by columns makes no ``Case`` of the run (the review's figures read rows alone)."""
    path = _reviewed(tmp_path, 3)
    run = reporting.load_run(str(path)).run
    made = []
    monkeypatch.setattr(TableCases, "_cases", lambda self, start: made.append(start) or [])
    reviews = load_reviews(run, None, path)
    build_report(run, reviews=reviews, basis="reviewed", with_observability=False)
    assert made == []


def test_updated_cases_refuses_a_field_it_does_not_replace(tmp_path):
    path = _reviewed(tmp_path, 1)
    for run in (reporting.load_run(str(path)).run, per_record(path).run):
        with pytest.raises(
            ValueError, match="only passed, error, risk_score, severity, severity_weight, weighted_risk"
        ):
            updated_cases(run, {run.cases[0].probe_id: {"response": "changed"}})
    assert table_run.UPDATABLE == ("passed", "error", "risk_score", "severity", "severity_weight", "weighted_risk")


def test_a_probe_id_no_run_can_hold_is_refused_by_name(tmp_path):
    """A lone surrogate (an undecodable byte of the command line) names no case: refused as such, never an internal
    error (the run's verdicts are read for the named cases alone, by an Arrow filter that cannot hold it)."""
    import subprocess
    import sys

    path = _reviewed(tmp_path, 2)
    argv = [sys.executable, "-m", "reporting", "review", str(path), "--set", b"\xff=fail", "--reviewer", "a"]
    done = subprocess.run([*argv, "--reason", "x"], capture_output=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 2 and b"no case of the run has this probe id" in done.stderr, done.stderr[-300:]
    assert judged_verdicts(reporting.load_run(str(path)).run, {"\udcff", "p000"}) == {"p000": mock_verdict(path)}


def mock_verdict(path: Path) -> str:
    passed = json.loads(path.read_text())["cases"][0]["passed"]
    return "error" if passed is None else ("pass" if passed else "fail")


def test_a_record_too_long_to_be_read_back_is_refused_before_it_is_written(tmp_path, capsys):
    """A review line is at most reviews.MAX_LINE bytes when read: a decision whose record would be longer (a probe id
    of 70,000 characters) is refused, not appended and then read back as a torn line."""
    probe = "x" * 70_000
    case = {"probe_id": probe, "category": "c", "severity": "low", "passed": True, "risk_score": 0.1}
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": [case]}))
    assert main(["review", str(path), "--set", f"{probe}=fail", "--reviewer", "a", "--reason", "x"]) == 2
    assert "the record is too long: a review line is at most 65536 bytes" in capsys.readouterr().err
    assert not (tmp_path / "run.reviews.jsonl").exists()


def test_the_run_as_reviewed_carries_none_of_the_figures_the_file_stored(tmp_path):
    """An imported garak run keeps garak's eval lines (tool figures) in its case table's metadata; the run as
    reviewed has other verdicts, so neither its header nor its table carries them."""
    from reporting.format.parquet import TOOL_FIGURES_KEY

    source = Path(__file__).resolve().parent / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"
    path = tmp_path / "run.json"
    assert main(["import", str(source), "-o", str(path)]) == 0
    run = reporting.load_run(str(path)).run
    assert TOOL_FIGURES_KEY in table_of(run).schema.metadata and run.model_extra["tool_figures"]
    first = run.cases[0].probe_id
    assert main(["review", str(path), "--set", f"{first}=fail", "--reviewer", "a", "--reason", "x"]) == 0
    reviewed = reviewed_run(run, adjudicate(run, load_reviews(run, None, path).records))
    assert TOOL_FIGURES_KEY not in table_of(reviewed).schema.metadata and "tool_figures" not in reviewed.model_extra
    assert TOOL_FIGURES_KEY in table_of(run).schema.metadata  # the run as judged keeps them


def test_the_chain_adds_less_than_the_room_a_record_keeps_for_it():
    """check_record keeps reviews.CHAIN_ROOM bytes of a review line for the links the chain adds when the record is
    appended (seq, prev; a sign-off's covers): the most they add, at a sequence number no file reaches, fits."""
    from reporting.format.review_chain import link
    from reporting.format.reviews import CHAIN_ROOM, record_line

    record = {"kind": "signoff", "run": "f" * 16, "run_id": "r", "reviewer": "a", "time": "2026-12-01T00:00:00Z"}
    (line,) = link([record], 10**18, "sha256:" + "0" * 64, "f" * 16)
    assert len(line) - len(record_line(record)) < CHAIN_ROOM
