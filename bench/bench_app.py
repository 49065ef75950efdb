"""Dashboard benchmark: time to draw the overview on opening the app, and the rerun after a
filter change, measured with Streamlit's AppTest on synthetic runs of 10k, 100k and 1M cases.

    python bench/bench_app.py [--sizes 10000 100000 1000000] [--repeat 3]

The floor is a bare AppTest rerun of a page that draws nothing, measured in the same run.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

TARGETS = {10000: 0.3, 100000: 1.0, 1000000: 1.0}


def run_size(n: int, repeat: int) -> dict:
    from bench_core import data_file
    from streamlit.testing.v1 import AppTest

    folder = Path(tempfile.mkdtemp(prefix="runlens-bench-"))
    os.symlink(data_file(n), folder / f"run_{n}.json")
    os.environ["REPORTING_RUNS_DIR"] = str(folder)
    os.chdir(ROOT)
    start = time.perf_counter()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    open_s = time.perf_counter() - start
    assert not at.exception, at.exception
    # Each change: (which widget, its new value); the widget is looked up afresh after every rerun.
    steps = [("Outcome", "fail"), ("Severity", ["critical", "high"]), ("Outcome", "all"), ("Severity", [])]
    changes = []
    for _ in range(repeat):
        for label, value in steps:
            widgets = at.sidebar.radio if label == "Outcome" else at.sidebar.multiselect
            next(w for w in widgets if w.label == label).set_value(value)
            start = time.perf_counter()
            at.run()
            changes.append(time.perf_counter() - start)
            assert not at.exception
    # Floor: the same AppTest machinery rerunning a script that draws one line.
    blank = folder / "blank.py"
    blank.write_text("import streamlit as st\nst.text('x')\n")
    floor_at = AppTest.from_file(str(blank)).run()
    floors = []
    for _ in range(10):
        start = time.perf_counter()
        floor_at.run()
        floors.append(time.perf_counter() - start)
    first, again = changes[:4], changes[4:] or changes[:4]
    return {
        "n": n,
        "open_s": open_s,
        "change_median_s": statistics.median(first),
        "change_max_s": max(first),
        "cached_median_s": statistics.median(again),
        "floor_s": statistics.median(floors),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    from _results import rows_from_children

    children = rows_from_children(__file__, run_size, [10000, 100000, 1000000])
    if children is None:  # this process was a child
        return
    rows = []
    for row in children:
        n = row["n"]
        rows.append(row)
        print(
            f"{n:>7} cases  open {row['open_s']:.2f}s  filter change median {row['change_median_s']:.3f}s "
            f"(max {row['change_max_s']:.3f}s, target {TARGETS.get(n, '-')}s)  cached {row['cached_median_s']:.3f}s  "
            f"blank rerun {row['floor_s']:.4f}s",
            flush=True,
        )
    lines = [
        "## Dashboard (`bench/bench_app.py`)",
        "",
        "AppTest in one process: opening the app (load, validate, recompute, draw the overview) and reruns after",
        "filter changes (outcome and severity, set and cleared). First: the first four changes, each a filter",
        "combination not seen before (nothing cached); cached: the same combinations again. Floor: AppTest",
        "rerunning a one-line page. Peak: the process's maximum resident set.",
        "",
        "| cases | open s | first filter change median s | first max s | target s | cached change median s | blank "
        "rerun s | peak MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['open_s']:.2f} | {r['change_median_s']:.3f} | {r['change_max_s']:.3f} | "
            f"{TARGETS.get(r['n'], '-')} | {r['cached_median_s']:.3f} | {r['floor_s']:.4f} | {r['peak_mb']:.0f} |"
        )
    from _results import write_section

    write_section("app", "\n".join(lines))


if __name__ == "__main__":
    main()
