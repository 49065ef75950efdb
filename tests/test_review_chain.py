"""Review records that cannot be quietly changed (issue 27): each record linked to the one before it (seq, prev),
the first link bound to the run, sign-offs naming what they cover; ``review verify`` names the first changed,
reordered, removed or cut line; records written before the chain still read, marked unsigned; the 8 x 200
concurrent appends make one intact chain."""

import hashlib
import json
import multiprocessing
import re
from pathlib import Path

from reporting.analysis.compare import run_fingerprint
from reporting.cli import main
from reporting.format.review_chain import line_hash, start_hash, verify
from reporting.format.reviews import append_records, companion_path, read_reviews
from reporting.report.build import build_report
from reporting.report.reviewing import load_reviews
from reporting.sources.reading import read_run


def _run(tmp_path):
    cases = [
        {"probe_id": f"p{i}", "category": "c", "severity": "high", "passed": i < 4, "risk_score": i / 10}
        for i in range(1, 7)
    ]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}))
    return path


def _reviewed(tmp_path, capsys):
    """A run with three decisions and a sign-off made through the command line: four linked lines."""
    path = _run(tmp_path)
    args = ["--reviewer", "dana", "--reason", "seen"]
    assert main(["review", str(path), "--set", "p1=fail", *args]) == 0
    assert main(["review", str(path), "--set", "p2=pass", *args]) == 0
    assert main(["review", str(path), "--set", "p5=pass", *args]) == 0
    assert main(["review", str(path), "--signoff", "--reviewer", "lead"]) == 0
    capsys.readouterr()
    return path, companion_path(path)


def _verify(path, capsys, *extra):
    code = main(["review", "verify", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_each_record_links_to_the_line_before_it_and_the_first_to_the_run(tmp_path, capsys):
    path, trail = _reviewed(tmp_path, capsys)
    lines = trail.read_bytes().split(b"\n")[:-1]
    records = [json.loads(line) for line in lines]
    assert [r["seq"] for r in records] == [0, 1, 2, 3]
    fingerprint = run_fingerprint(read_run(path))
    start = "sha256:" + hashlib.sha256(b"runlens-review-chain\0" + fingerprint.encode()).hexdigest()
    assert records[0]["prev"] == start == start_hash(fingerprint)
    for before, record in zip(lines, records[1:]):
        assert record["prev"] == "sha256:" + hashlib.sha256(before).hexdigest()
    signoff = records[3]
    assert signoff["kind"] == "signoff" and signoff["covers"] == {"records": 3, "hash": line_hash(lines[2])}
    code, out, err = _verify(path, capsys)
    assert code == 0 and err == ""
    assert "intact: 4 linked record(s)" in out and f"head {line_hash(lines[3])}" in out
    assert "line 4: signed off by lead (typed name, not signed in), covering 3 record(s) up to " in out


def _rewrite(trail, lines):
    trail.write_bytes(b"".join(line + b"\n" for line in lines))


def test_verify_names_the_first_changed_reordered_removed_or_cut_line(tmp_path, capsys):
    path, trail = _reviewed(tmp_path, capsys)
    original = trail.read_bytes().split(b"\n")[:-1]

    changed = list(original)
    changed[1] = changed[1].replace(b'"verdict": "pass"', b'"verdict": "fail"')
    assert changed[1] != original[1]
    _rewrite(trail, changed)
    code, out, err = _verify(path, capsys)
    assert code == 1 and out == ""
    assert "run.reviews.jsonl: line 3: its link does not match line 2: that line was changed" in err

    _rewrite(trail, [original[1], original[0], *original[2:]])  # two lines swapped
    code, _, err = _verify(path, capsys)
    assert code == 1 and "line 1: it is record #1 of the chain where #0 belongs" in err

    _rewrite(trail, [original[0], *original[2:]])  # a line in the middle removed
    code, _, err = _verify(path, capsys)
    assert (
        code == 1 and "line 2: it is record #2 of the chain where #1 belongs: 1 record(s) before it were removed" in err
    )

    _rewrite(trail, original[1:])  # the first line removed
    code, _, err = _verify(path, capsys)
    assert code == 1 and "line 1: it is record #1 of the chain where #0 belongs" in err

    trail.write_bytes(b"".join(line + b"\n" for line in original[:3]) + original[3][:40])  # cut mid-record
    code, _, err = _verify(path, capsys)
    assert code == 1 and "line 4: the line cannot be read: cut short (the file was truncated mid-record?)" in err

    _rewrite(trail, [*original[:2], b'{"kind": "review"}', *original[2:]])  # a record without a link inserted
    code, _, err = _verify(path, capsys)
    assert code == 1 and "line 3: a record without a link after the chain started" in err

    head = line_hash(original[3])
    _rewrite(trail, original[:3])  # the last line removed: a shorter chain, intact, but the head seen before is gone
    code, out, _ = _verify(path, capsys)
    assert code == 0 and "intact: 3 linked record(s)" in out
    code, _, err = _verify(path, capsys, "--head", head)
    assert code == 1 and f"line 3: the head {head} is not in the file: records after line 3 were removed" in err

    _rewrite(trail, original)
    assert _verify(path, capsys, "--head", head)[0] == 0
    assert _verify(path, capsys, "--head", "abc")[0] == 2


def test_a_chain_moved_to_another_run_is_broken_at_its_first_line(tmp_path, capsys):
    path, trail = _reviewed(tmp_path, capsys)
    assert verify(trail.read_bytes(), run_fingerprint(read_run(path))).state == "intact"
    state = verify(trail.read_bytes(), "another run's fingerprint")
    assert state.broken and state.line == 1 and "not the start of this run's chain" in (state.problem or "")


def test_records_written_before_the_chain_read_and_are_marked_unsigned(tmp_path, capsys):
    path = _run(tmp_path)
    fingerprint = run_fingerprint(read_run(path))
    old = {
        "kind": "review",
        "run": fingerprint,
        "run_id": "r",
        "probe_id": "p1",
        "verdict": "fail",
        "reason": "old",
        "reviewer": "ann",
        "time": "2026-11-20T09:00:00Z",
        "replaces": {"judge": "primary", "verdict": "pass"},
    }
    trail = companion_path(path)
    trail.write_text(json.dumps(old) + "\n" + json.dumps({**old, "probe_id": "p2"}) + "\n")
    code, out, _ = _verify(path, capsys)
    assert code == 0 and "2 record(s), all written before the chain (unsigned: not verifiable)" in out
    assert main(["review", str(path), "--set", "p3=fail", "--reviewer", "bob", "--reason", "new"]) == 0
    records, problems = read_reviews(trail)
    assert problems == [] and [r.get("seq") for r in records] == [None, None, 2]
    code, out, _ = _verify(path, capsys)
    assert code == 0 and "intact: 1 linked record(s) after 2 older unsigned record(s)" in out
    run = read_run(path)
    review = build_report(run, reviews=load_reviews(run, None, path), with_observability=False).review
    assert review["decided"] == 3 and review["chain"]["state"] == "partly unsigned"


def test_a_broken_chain_stops_the_figures_as_reviewed(tmp_path, capsys):
    path, trail = _reviewed(tmp_path, capsys)
    lines = trail.read_bytes().split(b"\n")[:-1]
    _rewrite(trail, [lines[1], lines[0], *lines[2:]])
    assert main(["check", str(path), "--min-pass-rate", "0.1", "--as", "reviewed"]) == 2
    assert "the review chain is broken" in capsys.readouterr().err
    reviews = load_reviews(read_run(path), None, path)
    assert reviews.invalid == [] and reviews.chain_problem is not None and reviews.chain_problem.path == "line 1"


def test_merge_keeps_each_record_once_and_writes_a_chain_of_its_own(tmp_path, capsys):
    a = _run(tmp_path)
    b_dir = tmp_path / "b"
    b_dir.mkdir()
    b = _run(b_dir)
    assert main(["review", str(a), "--set", "p1=fail", "--reviewer", "ann", "--reason", "x"]) == 0
    assert main(["review", str(b), "--set", "p2=fail", "--reviewer", "bob", "--reason", "y"]) == 0
    out = tmp_path / "merged.jsonl"
    assert main(["review", "merge", str(companion_path(a)), str(companion_path(b)), "-o", str(out)]) == 0
    state = verify(out.read_bytes(), run_fingerprint(read_run(a)))
    assert state.state == "intact" and state.signed == 2
    lines = companion_path(b).read_bytes().split(b"\n")[:-1]
    companion_path(b).write_bytes(lines[0].replace(b'"y"', b'"z"') + b"\n")  # alone: still linked, but changed
    out2 = tmp_path / "merged2.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(lines[0] + b"\n" + lines[0] + b"\n")  # the same line twice: the second's seq is wrong
    capsys.readouterr()
    assert main(["review", "merge", str(companion_path(a)), str(bad), "-o", str(out2)]) == 2
    assert "bad.jsonl: line 2: it is record #0 of the chain where #1 belongs" in capsys.readouterr().err
    assert not out2.exists()


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


def test_eight_processes_appending_at_once_make_one_intact_chain(tmp_path):
    path = str(tmp_path / "run.reviews.jsonl")
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        pool.map(_append_many, [(path, w) for w in range(8)])
    data = Path(path).read_bytes()
    records = [json.loads(line) for line in data.split(b"\n")[:-1]]
    assert len(records) == 1600 and [r["seq"] for r in records] == list(range(1600))
    assert {r["probe_id"] for r in records} == {f"p{w}-{i}" for w in range(8) for i in range(200)}
    state = verify(data, "x")
    assert state.state == "intact" and state.signed == 1600 and state.line is None


def test_the_export_shows_the_chain_state_and_what_the_sign_off_covers(tmp_path, capsys):
    path, trail = _reviewed(tmp_path, capsys)
    lines = trail.read_bytes().split(b"\n")[:-1]
    out = tmp_path / "r.html"
    assert main(["export", str(path), "-o", str(out)]) == 0
    html = out.read_text()
    chain = re.sub(r"<[^>]+>", "", html[html.index('<p id="review-chain">') :].split("</p>")[0])
    assert "Review records: intact: 4 linked record(s); head " in chain and line_hash(lines[3]) in chain
    assert "Sign-off by lead (typed name, not signed in) covers 3 record(s) up to " in chain
    assert line_hash(lines[2]) in chain
    _rewrite(trail, [lines[0], lines[2], lines[1], lines[3]])
    assert main(["export", str(path), "-o", str(out)]) == 0  # as judged: a warning, and the state in the report
    html = out.read_text()
    assert "Review records: BROKEN at line 2: it is record #2 of the chain where #1 belongs" in html
