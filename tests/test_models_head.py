"""The dashboard lists a file's runs one per model (``ui.state.models_cached``): a file on disk whose head already
says it is not promptfoo's is not read whole, and a promptfoo file of several models is listed per model wherever
its head is decisive or not (leading white space past the head: the whole file is read)."""

from __future__ import annotations

import shutil
from pathlib import Path

from reporting.format.problems import regular_file_head
from reporting.importers.promptfoo import HEAD_DECIDES
from reporting.ui import state

ROOT = Path(__file__).resolve().parent.parent
PROMPTFOO = ROOT / "tests" / "fixtures" / "promptfoo"


def _models(path: Path, read=None) -> tuple:
    state.models_cached.clear()
    return state.models_cached(str(path), read or path.read_bytes, path)


def test_a_promptfoo_file_of_two_models_is_listed_per_model(tmp_path):
    for name in ("promptfoo.json", "promptfoo.jsonl"):
        assert _models(PROMPTFOO / name) == ("canned-model", "echo-baseline")
    padded = tmp_path / "padded.json"  # white space beyond the head: the head cannot decide
    padded.write_bytes(b" " * (HEAD_DECIDES + 100) + (PROMPTFOO / "promptfoo.json").read_bytes())
    assert _models(padded) == ("canned-model", "echo-baseline")


def test_a_file_whose_head_is_not_promptfoo_is_not_read_whole(tmp_path):
    path = tmp_path / "run.json"
    shutil.copy(ROOT / "sample_runs" / sorted(p.name for p in (ROOT / "sample_runs").glob("*.json"))[0], path)
    reads = []

    def read():
        reads.append(1)
        return path.read_bytes()

    assert _models(path, read) == ()
    assert reads == []
    big = tmp_path / "big.jsonl"  # a head that decides, the file far longer than it
    line = b'{"probe_id": "p", "response": "' + b"x" * 1000 + b'"}\n'
    big.write_bytes(line * (2 * HEAD_DECIDES // len(line)))
    assert _models(big, read) == () and reads == []


def test_a_fifo_in_the_folder_does_not_hang_the_page(tmp_path):
    """A FIFO with no writer: its head is not read (opened without blocking, not a regular file), and the loader's
    own reading decides."""
    import os

    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    assert regular_file_head(fifo, 1024) is None
    assert _models(fifo, lambda: b"{}") == ()
