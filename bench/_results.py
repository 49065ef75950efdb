"""Write one benchmark's section of bench/RESULTS.md, leaving the other sections as they are."""

from __future__ import annotations

import platform
import re
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(name: str, body: str) -> None:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    block = f"{start}\n_Measured {stamp} on {platform.machine()}, Python {platform.python_version()}._\n\n{body.strip()}\n{end}"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nWritten by the scripts in `bench/`; ratios are against a floor measured in the same run.\n"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text)
