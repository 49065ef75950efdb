"""`runlens watch FILE`: a writer process appends to a garak report.jsonl and to a RunLens JSON Lines run while the
verb prints the counts rising; it ends on garak's completion line or when the file stops growing; --once prints
once; a bad file is a message naming it and exit 2; text from the file is printed escaped."""

import json
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import HAND_CASES

from reporting.cli import main
from reporting.sources.reading import load_run

ROOT = Path(__file__).resolve().parent.parent
GARAK = ROOT / "tests" / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"
WRITER = ROOT / "tests" / "live_writer.py"


def watch_while_writing(src: Path, dest: Path, chunks: int, idle: str) -> str:
    """`runlens watch` on ``dest`` while a writer process appends ``src`` to it chunk by chunk: each chunk is written
    once the verb has printed the figures of the one before. All it printed."""
    dest.write_bytes(b"")
    watch = subprocess.Popen(
        [sys.executable, "-m", "reporting", "watch", str(dest), "--interval", "0.1", "--idle", idle],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in watch.stdout] and None, daemon=True).start()
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(src), str(dest), str(chunks)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    printed = []
    try:
        for _ in range(chunks):
            writer.stdin.write(b"next\n")
            writer.stdin.flush()
            writer.stdout.readline()
            while True:  # the figures of this chunk
                line = lines.get(timeout=60)
                printed.append(line)
                if line.startswith("  cases "):
                    break
        assert watch.wait(timeout=60) == 0, watch.stderr.read()
        assert watch.stderr.read() == ""
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
        watch.kill()
    while not lines.empty():
        printed.append(lines.get())
    return "".join(printed)


def test_watch_prints_the_counts_rising_until_garak_completes(tmp_path):
    out = watch_while_writing(GARAK, tmp_path / "g.report.jsonl", 6, idle="60")
    counts = [int(n.replace(",", "")) for n in re.findall(r"^  cases ([\d,]+):", out, re.MULTILINE)]
    whole = load_run(GARAK.read_bytes(), name="g").run
    assert len(counts) >= 3 and counts == sorted(counts) and counts[0] < counts[-1] == len(whole.cases)
    assert "in progress: " in out and "attempts so far" in out  # while garak writes
    last = out[out.rfind("g.report.jsonl: ") :]
    assert "stopped growing: 71 attempts" in last  # the completion line ended the watch, with no idle wait
    assert "pass rate 60.6% (95% CI 52.3% to 68.2%)" in last
    assert "problems" not in out  # a torn line between chunks is never a problem


def test_watch_ends_when_a_runlens_run_stops_growing(tmp_path):
    src = tmp_path / "src.jsonl"
    lines = [json.dumps({**c, "probe_id": f"{c['probe_id']}{k}"}) for k in range(20) for c in HAND_CASES]
    src.write_text("\n".join(lines) + "\n")
    out = watch_while_writing(src, tmp_path / "live.jsonl", 4, idle="8")
    counts = [int(n.replace(",", "")) for n in re.findall(r"^  cases ([\d,]+):", out, re.MULTILINE)]
    assert counts == sorted(counts) and counts[0] < counts[-1] == 120
    assert "stopped growing: 120 cases" in out


def test_watch_once(tmp_path, capsys):
    run = tmp_path / "r.jsonl"
    hostile = {**HAND_CASES[1], "probe_id": "x\x1b[31m\nred", "response": "::error::owned\x07"}
    run.write_text("\n".join(json.dumps(c) for c in [HAND_CASES[0], hostile]) + "\n" + '{"probe_id": "torn')
    assert main(["watch", str(run), "--once"]) == 0
    out = capsys.readouterr().out
    assert "cases 2: 2 evaluated (1 passed, 1 failed), 0 not evaluated" in out
    assert "pass rate 50.0% (95% CI 9.5% to 90.5%)" in out
    assert "x\\x1b[31m\\nred" in out and "\x1b" not in out and "\x07" not in out
    assert not any(line.lstrip().startswith("::") for line in out.splitlines())  # no CI workflow command


def test_watch_a_file_above_the_size_cap(tmp_path, capsys, monkeypatch):
    from reporting.format import problems

    run = tmp_path / "r.jsonl"
    run.write_text(json.dumps(HAND_CASES[0]) + "\n")
    monkeypatch.setattr(problems, "MAX_FILE_BYTES", 10)
    assert main(["watch", str(run), "--once"]) == 2
    err = capsys.readouterr().err
    assert str(run) in err and "larger than the" in err and "cap" in err


@pytest.mark.parametrize(
    "content,expected",
    [
        (None, "cannot be read"),
        (b'{"schema_version": 1, "cases": []}', "not a RunLens JSON Lines run or a garak report.jsonl"),
        (b"", "holds no complete line yet"),
    ],
)
def test_watch_a_bad_file_is_named_with_exit_2(tmp_path, capsys, content, expected):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content + (b"\n" if content else b""))
    assert main(["watch", str(path), "--once"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and expected in err and "Traceback" not in err
