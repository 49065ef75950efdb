"""Runs of JSON Lines read by columns (issue 28): ``recompute`` and ``export`` of a run written one case a line, against
the floor (``json.loads`` of every line) and against the same run as a JSON document, measured in the same run.

    python bench/bench_lines.py [--sizes 1000000] [--before REF]

The runs: bench_scale.lines_file(N) (the 1M synthetic run's cases, each copy with its own probe ids) and, for the
same cases as a document, bench_core.data_file(N) (N <= 1M: the same cases but for the ids' suffix). Each work is its
own process, measured by ``os.wait4`` (CPU time, wall time, peak resident set):

- floor: ``json.loads`` of every line of the file (what any reader of the file must at least do);
- ``recompute`` and ``export`` of the JSON Lines file, and of the JSON document (the columnar reader's other input);
- ``--before REF``: ``recompute`` and ``export`` of the JSON Lines file by an earlier commit (a git worktree), for the
  before/after (before 1dacc4c, a JSON Lines run was read a pydantic case per line).

Results: bench/RESULTS.md, section ``lines``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

FLOOR = "import json, sys\nwith open(sys.argv[1], 'rb') as f:\n    for line in f:\n        json.loads(line)\n"
BIG_FILES = {"RUNLENS_MAX_FILE_MB": "65536"}


def rows(n: int, before: Path | None) -> dict:
    from bench_core import data_file
    from bench_peers import measure
    from bench_scale import lines_file

    lines = lines_file(n)
    out = Path(tempfile.mkdtemp(prefix="runlens-lines-"))
    found: dict = {"floor": measure([sys.executable, "-c", FLOOR, str(lines)])}

    def verbs(run: Path, cwd: Path, tag: str) -> None:
        for verb, suffix in (("recompute", "json"), ("export", "html")):
            target = out / f"{tag}-{verb}.{suffix}"
            found[f"{tag}_{verb}"] = measure(
                [sys.executable, "-m", "reporting", verb, str(run), "-o", str(target)], BIG_FILES, cwd
            )
            target.unlink(missing_ok=True)

    verbs(lines, ROOT, "lines")
    if n <= 1_000_000:
        verbs(data_file(n), ROOT, "document")
    if before is not None:
        verbs(lines, before, "before")
    return found


def section(results: dict, label: str) -> str:
    names = {
        "floor": "floor: `json.loads` of every line",
        "lines_recompute": "`recompute` of the JSON Lines file",
        "lines_export": "`export` of the JSON Lines file",
        "document_recompute": "`recompute` of the same cases as a JSON document",
        "document_export": "`export` of the same cases as a JSON document",
        "before_recompute": "`recompute` of the JSON Lines file, before",
        "before_export": "`export` of the JSON Lines file, before",
    }
    out = [
        "## Runs of JSON Lines read by columns (`bench/bench_lines.py`)",
        "",
        f"{label}. Each work its own process (`os.wait4`): wall and CPU seconds, peak resident set; the ratio",
        "is of CPU time against the floor measured in the same run.",
        "",
        "| cases | work | wall s | CPU s | x floor (CPU) | peak MB |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for n, found in results.items():
        floor = found["floor"]["cpu"]
        for key, name in names.items():
            if key in found:
                row = found[key]
                ratio = row["cpu"] / floor
                out.append(f"| {n:,} | {name} | {row['s']:.1f} | {row['cpu']:.1f} | x{ratio:.2f} | {row['mb']:,.0f} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="+", type=int, default=[1_000_000])
    parser.add_argument("--before", metavar="REF", help="also time an earlier commit's recompute and export")
    args = parser.parse_args()
    from _results import write_section

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    label = f"{time.strftime('%H:%M UTC', time.gmtime())}, {commit.stdout.strip()}, load {os.getloadavg()[0]:.1f}"
    label += f", before = {args.before}" if args.before else ""
    before = None
    if args.before:
        before = Path(tempfile.mkdtemp(prefix="runlens-before-")) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=ROOT, check=True)
    results: dict = {}
    try:
        for n in args.sizes:
            results[n] = rows(n, before)
            print(n, {k: (round(v["cpu"], 1), round(v["mb"])) for k, v in results[n].items()}, flush=True)
            write_section("lines", section(results, label))
    finally:
        if before is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
