"""Helpers of the live-run tests (test_live.py, test_live_app.py): the runs a writer replays (garak's fixture, a
synthetic JSON Lines run), the writer process (tests/live_writer.py) started and stepped one chunk at a time, a
runs folder whose file is still empty, and the dashboard on it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
GARAK = ROOT / "tests" / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"
WRITER = ROOT / "tests" / "live_writer.py"


def writer(src: Path, dest: Path, chunks: int) -> subprocess.Popen:
    """A writer process appending ``src``'s lines to ``dest`` in ``chunks`` chunks, one a ``step``."""
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(src), str(dest), str(chunks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def step(process: subprocess.Popen) -> int:
    """The writer's next chunk, on disk when this returns: the bytes written so far."""
    process.stdin.write("next\n")
    process.stdin.flush()
    return int(process.stdout.readline().split()[1])


def stop(process: subprocess.Popen) -> None:
    """The writer told there is no more to step, and waited for."""
    process.stdin.close()
    process.wait(timeout=30)


def synthetic_jsonl(tmp_path: Path, cases: int) -> Path:
    """A synthetic RunLens run of ``cases`` cases as JSON Lines, for a writer to replay."""
    from reporting.format.synthetic import synthetic_run

    src = tmp_path / "src.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in synthetic_run(cases)["cases"]))
    return src


@contextmanager
def replaying(src: Path, dest: Path, chunks: int) -> Iterator[subprocess.Popen]:
    """A writer replaying ``src`` into ``dest`` in ``chunks`` chunks, its first chunk written; stopped on leaving."""
    process = writer(src, dest, chunks)
    try:
        step(process)
        yield process
    finally:
        stop(process)


def growing_folder(tmp_path: Path, monkeypatch, name: str) -> Path:
    """An empty run file ``name`` in a runs folder the dashboard is pointed at (REPORTING_RUNS_DIR; the checkout as
    the working folder, as app.py is run)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    dest = runs / name
    dest.write_bytes(b"")
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(runs))
    monkeypatch.chdir(ROOT)
    return dest


def dashboard() -> AppTest:
    """app.py in AppTest, run once."""
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
