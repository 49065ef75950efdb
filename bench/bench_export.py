"""Export benchmark: time and size of the HTML report for 1k, 10k and 100k cases, and the time
headless Chromium takes to draw the 10k report; compared in the same run with ydata-profiling
producing an HTML report from the same case table, when it is installed.

    python bench/bench_export.py [--sizes 1000 10000 100000] [--ydata-python PATH]

Size target: plotly.js + at most 400 bytes per case at 100k cases. Time targets: export of
100k cases under 10 s; the 10k report drawn in under 3 s.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

sys.path.insert(0, str(ROOT / "tests"))
from browser import ARGS  # noqa: E402 - the one list of Chromium flags, shared with the browser tests

YDATA_SCRIPT = """
import json, sys, time
import pandas as pd
from ydata_profiling import ProfileReport
cases = json.load(open(sys.argv[1]))["cases"]
columns = ["probe_id", "category", "severity", "passed", "risk_score", "weighted_risk", "safe_signal_hits",
           "unsafe_signal_hits", "boundary_or_refusal_signal", "task", "probe_input", "response", "explanation"]
frame = pd.DataFrame([{c: case.get(c) for c in columns} for case in cases])
start = time.perf_counter()
ProfileReport(frame, title="cases", minimal=True, progress_bar=False).to_file(sys.argv[2])
print(time.perf_counter() - start)
"""


def export_once(path: Path, out: Path) -> float:
    import reporting
    from reporting.format.writing import write_atomic
    from reporting.render.html import render_html

    start = time.perf_counter()
    run = reporting.read_run(path)
    write_atomic(out, render_html(reporting.build_report(run), timestamp="0"))
    return time.perf_counter() - start


def plotly_floor(folder: Path) -> float:
    """Cold start of a page holding only the inlined plotly.js: the part of the draw time that is the library's."""
    from plotly.offline import get_plotlyjs

    page = folder / "plotly_only.html"
    page.write_text(
        "<!DOCTYPE html><html><body><p>x</p><script>" + get_plotlyjs() + "</script>"
        "<script>document.body.setAttribute('data-ready', 'true')</script></body></html>"
    )
    return min(draw_time(page, charts=False) for _ in range(2))


def draw_time(html: Path, charts: bool = True) -> float:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        start = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-ready=true]", timeout=120000, state="attached")
        if charts:
            page.wait_for_function(
                "document.querySelectorAll('[data-figure]').length === "
                "document.querySelectorAll('[data-drawn=true]').length",
                timeout=120000,
            )
        elapsed = time.perf_counter() - start
        browser.close()
    return elapsed


def main() -> None:
    from bench_core import data_file
    from plotly.offline import get_plotlyjs

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument(
        "--ydata-python",
        default=os.environ.get("YDATA_PYTHON"),
        help="a Python with ydata-profiling installed (kept out of the project's venv)",
    )
    args = parser.parse_args()
    plotly_bytes = len(get_plotlyjs().encode())
    tmp = Path(tempfile.mkdtemp(prefix="runlens-export-"))
    rows = []
    for n in args.sizes:
        source = data_file(n)
        out = tmp / f"report_{n}.html"
        seconds = export_once(source, out)
        size = out.stat().st_size
        row = {"n": n, "export_s": seconds, "bytes": size, "per_case": (size - plotly_bytes) / n}
        if n == 10000 and os.access("/usr/bin/chromium", os.X_OK):
            row["draw_s"] = min(draw_time(out) for _ in range(2))
            row["plotly_floor_s"] = plotly_floor(tmp)
        if args.ydata_python and n <= 10000:
            ydata_out = tmp / f"ydata_{n}.html"
            done = subprocess.run(
                [args.ydata_python, "-c", YDATA_SCRIPT, str(source), str(ydata_out)], capture_output=True, text=True
            )
            if done.returncode == 0:
                row["ydata_s"] = float(done.stdout.strip().splitlines()[-1])
                row["ydata_bytes"] = ydata_out.stat().st_size
            else:
                row["ydata_error"] = done.stderr.strip().splitlines()[-1][:120] if done.stderr.strip() else "failed"
        rows.append(row)
        print(json.dumps(row), flush=True)
    lines = [
        "## HTML export (`bench/bench_export.py`)",
        "",
        "Export = read + recompute (with observability) + render + atomic write, in one process. plotly.js inlined: "
        f"{plotly_bytes:,} bytes.",
        "Per-case bytes = (file size - plotly.js) / cases; target <= 400 at 100k. Texts are capped per field at",
        "min(2000, max(40, 6,000,000 / (4 x cases))) characters in the file (the full text stays in `recompute`).",
        "Draw = headless Chromium (a fresh browser each time) from navigation to every chart drawn and the case table",
        "ready, best of 2. Floor: the same for a page holding only the inlined plotly.js (the library's own cold "
        "start).",
        "",
        "| cases | export s (target < 10 at 100k) | file MB | bytes per case | draw s (target < 3 at 10k) | "
        "ydata-profiling s | ydata-profiling MB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ydata = (
            f"{r['ydata_s']:.2f} | {r['ydata_bytes'] / 1e6:.1f}"
            if "ydata_s" in r
            else ("failed | -" if "ydata_error" in r else "not run | -")
        )
        lines.append(
            f"| {r['n']} | {r['export_s']:.2f} | {r['bytes'] / 1e6:.1f} | {r['per_case']:.0f} | "
            f"{r.get('draw_s', float('nan')):.2f} | {ydata} |".replace("nan", "-")
        )
    floors = [r for r in rows if "plotly_floor_s" in r]
    for r in floors:
        lines += [
            "",
            f"Draw of the {r['n']:,}-case report: {r['draw_s']:.2f} s against {r['plotly_floor_s']:.2f} s for "
            "plotly.js alone "
            f"(x{r['draw_s'] / r['plotly_floor_s']:.2f}); the report's own work is "
            f"{r['draw_s'] - r['plotly_floor_s']:.2f} s.",
        ]
    lines += [
        "",
        "ydata-profiling is run with `minimal=True` on the same case table (13 columns), from its own virtual",
        "environment so that its pins do not touch the project's; it is run up to 10k cases.",
    ]
    from _results import write_section

    write_section("export", "\n".join(lines))


if __name__ == "__main__":
    main()
