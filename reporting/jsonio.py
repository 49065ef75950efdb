"""JSON output: no NaN or Infinity ever written (null instead), and atomic file writes."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Union


def clean(value: Any) -> Any:
    """Replace non-finite floats with None, recursively, so the JSON written is standard."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def dumps(value: Any, indent: Union[int, None] = 2) -> str:
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(clean(value), indent=indent, ensure_ascii=False, allow_nan=False)


def write_atomic(path: Union[str, os.PathLike], text: str) -> Path:
    """Write text to ``path`` through a temporary file in the same folder and a rename.

    A failure leaves no partial file and keeps whatever was at ``path`` before.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target
