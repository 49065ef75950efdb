"""Reading a report RunLens wrote (``recompute``'s output: RunLens named as its generator, the filters, drift and
observability at its head, one field beyond the format on every case), against the run it was made from and a bare
``json.load`` of the same file, each in its own process. ``read_run`` + ``aggregate_metrics``, timed after the
imports; peak = the process's maximum resident set (``os.wait4``).

    python bench/bench_report_read.py [--sizes N ...] [--base REV]

``--base REV``: the same rows with RunLens of that commit (a worktree made under a temporary folder), in the same
run: the columnar reader refused any top key beyond the format's until 9342e0c, and read each case's extra fields
through the strict reader until the commit after it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

CHILD = """
import json, sys, time
kind, path = sys.argv[1], sys.argv[2]
if kind == "floor":
    start = time.perf_counter()
    with open(path, "rb") as handle:
        json.load(handle)
    print(json.dumps({"seconds": time.perf_counter() - start}))
else:
    import reporting
    from reporting.format.table_run import table_of
    start = time.perf_counter()
    run = reporting.read_run(path)
    figures = reporting.aggregate_metrics(run)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "by_columns": table_of(run) is not None,
                      "pass_rate": figures["overall"]["pass_rate"]}))
"""


def measured(code_root: Path, kind: str, path: Path) -> dict:
    """One child with RunLens of ``code_root``: its JSON line, and its peak resident MB (``os.wait4``)."""
    env = {**os.environ, "PYTHONPATH": str(code_root), "RUNLENS_MAX_FILE_MB": "65536"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, str(path)], cwd=code_root, env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, (kind, path, proc.returncode)
    return {**json.loads(out.strip().splitlines()[-1]), "peak_mb": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--base", default=None, help="a commit to measure beside this checkout")
    args = parser.parse_args()
    from _results import write_section
    from bench_core import data_file

    roots = {"this checkout": ROOT}
    work = Path(tempfile.mkdtemp(prefix="runlens-report-read-"))
    if args.base:
        base = work / "base"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base), args.base], cwd=ROOT, check=True)
        roots[f"at {args.base}"] = base
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    lines = [
        "## Reading a report RunLens wrote (`bench/bench_report_read.py`)",
        "",
        f"At {commit.stdout.strip()}, {time.strftime('%H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f}. "
        "`read_run` + `aggregate_metrics` of `recompute`'s output of the synthetic run (a report: RunLens as its "
        "generator, filters, drift and observability at its head, `derived_failure_modes` on every case) and of the "
        "run itself, each in its own process after the imports; floor: a bare `json.load` of the report. Peak: the "
        "process's maximum resident set, interpreter and imports included.",
        "",
        "| cases | code | report: read + figures | by columns | run: read + figures | `json.load` of the report |",
        "|---|---|---|---|---|---|",
    ]
    try:
        for n in args.sizes:
            run = data_file(n)
            report = work / f"report_{n}.json"
            subprocess.run(
                [sys.executable, "-m", "reporting", "recompute", str(run), "-o", str(report)],
                cwd=ROOT,
                check=True,
                capture_output=True,
                env={**os.environ, "RUNLENS_MAX_FILE_MB": "65536"},
            )
            floor = measured(ROOT, "floor", report)
            for name, code in roots.items():
                read = measured(code, "api", report)
                plain = measured(code, "api", run)
                ratio = read["seconds"] / floor["seconds"]
                lines.append(
                    f"| {n:,} | {name} | {read['seconds']:.2f} s (x{ratio:.2f} the floor), "
                    f"{read['peak_mb']:,.0f} MB | {read['by_columns']} | {plain['seconds']:.2f} s | "
                    f"{floor['seconds']:.2f} s |"
                )
                assert read["pass_rate"] == plain["pass_rate"], (read, plain)  # the same run, the same figures
                print(lines[-1], flush=True)
            report.unlink()
    finally:
        if args.base:
            subprocess.run(["git", "worktree", "remove", "--force", str(work / "base")], cwd=ROOT, check=False)
    write_section("report_read", "\n".join(lines))


if __name__ == "__main__":
    main()
