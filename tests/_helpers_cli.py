"""The command line run as a user runs it, for the tests: ``python -m reporting ARGS`` in a child process from the
checkout, and the check that a bad input is a listed problem (exit 2) naming the file, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, env: Optional[dict] = None, timeout: float = 300, cwd: Optional[Path] = None):
    """``python -m reporting ARGS`` (each argument as text) from the checkout (or ``cwd``), its output captured;
    ``env`` adds to (or replaces single variables of) this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "reporting", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def assert_listed(result, path, *words):
    """Exit 2 with a message line naming the file and each of ``words``; never a traceback or internal error."""
    err = result.stderr
    assert result.returncode == 2, (result.returncode, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err.lower(), err[-2000:]
    assert str(path) in err, err[-2000:]
    for word in words:
        assert word in err, (word, err[-2000:])
