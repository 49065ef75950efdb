"""Two children of bench/bench_columnar_core.py: the dashboard on a 10M-case run (open, a filter change, every
page), and the store's figures of the 1M run on Spark against DuckDB. Each runs in its own process."""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))


def _shown(at) -> dict:
    """What the page says: the error boxes (first 160 characters each) and the sidebar's "Showing x of y"."""
    errors = [str(e.value)[:160] for e in at.error]
    showing = [str(t.value) for t in at.sidebar.text if str(t.value).startswith("Showing")]
    found = {"errors": errors, "showing": showing[:1], "exception": [str(e.value)[:160] for e in at.exception]}
    if errors:  # the problems are listed under the box, a file's in one code block
        found["problems"] = [str(c.value)[:300] for c in at.code][:2]
    return found


def dashboard_steps(path: Path, limit_s: float) -> dict:
    """AppTest as bench/bench_app.py drives it, on ``path`` alone in a runs folder: open (at most ``limit_s``),
    the Outcome filter set to fail, then each page of the navigation (tests/apptest.open_page) with the filter
    kept. The first step past its limit ends the measurement (the script thread may still be running)."""
    from apptest import PAGE_NAMES, open_page
    from streamlit.testing.v1 import AppTest

    folder = Path(tempfile.mkdtemp(prefix="runlens-core28-app-"))
    os.symlink(path, folder / path.name)
    os.environ["REPORTING_RUNS_DIR"] = str(folder)
    os.chdir(ROOT)
    found: dict = {"file": path.name, "file_gb": path.stat().st_size / 1e9, "steps": []}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=limit_s)

    def step(name: str, action) -> bool:
        start = time.perf_counter()
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - AppTest's time-out is a RuntimeError: recorded, then stop
            found["steps"].append({"step": name, "seconds": time.perf_counter() - start, "failed": str(exc)[:200]})
            return False
        found["steps"].append({"step": name, "seconds": time.perf_counter() - start, **_shown(at), **_memory()})
        return True

    if not step("open", at.run):
        return found

    def filter_fail() -> None:
        outcome = [w for w in at.sidebar.radio if w.label == "Outcome"]
        if not outcome:
            raise LookupError("no Outcome filter in the sidebar (no run loaded)")
        outcome[0].set_value("fail")
        at.run(timeout=min(limit_s, 300))

    if not step("filter outcome=fail", filter_fail):
        return found
    for name in PAGE_NAMES:
        if not step(f"page {name}", lambda name=name: open_page(at, name).run(timeout=min(limit_s, 300))):
            break
    return found


def _memory() -> dict:
    """Resident MB at the end of a step and the process's peak so far (the step that raised it sets the peak)."""
    import resource

    with open("/proc/self/status") as status:
        resident = next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rss_mb": round(resident / 1024), "peak_mb": round(peak / 1024)}


def spark_equality() -> dict:
    """The 1M run (columnar reader) in a fresh store; the store's figures (every run aggregate, pass rate per
    category) by DuckDB and by Spark, and the largest difference between the two over every number. The SQL:
    ``reporting.analysis.engine.query`` of one text per aggregate (AGGREGATES), the dialects changing only the
    exact-sum and percentile function names."""
    import shutil

    from bench_core import data_file

    from reporting.analysis.engine import AGGREGATES, DUCKDB, SPARK, query
    from reporting.format.columnar import read_table
    from reporting.store.engine import DuckDBEngine, SparkEngine
    from reporting.store.layout import Store
    from reporting.store.views import run_figures

    # every spelling of the DuckDB dialect (its exact sum, percentile, the two levels and their items) swapped for
    # Spark's in one pass: the rest of each query's text must be the same characters
    swaps = {getattr(DUCKDB, f): getattr(SPARK, f) for f in ("quantile", "sum", "levels", "first", "second")}
    spelled = re.compile("|".join(re.escape(k) for k in sorted(swaps, key=len, reverse=True)))
    same_text = all(
        query(group, SPARK) == spelled.sub(lambda m: swaps[m.group(0)], query(group, DUCKDB))
        for group in ("run", "category", "severity")
    )
    found: dict = {"aggregates": len(AGGREGATES), "same_sql_text_but_dialect": same_text}
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        found["spark"] = "no Java runtime here"
        return found
    run = read_table(str(data_file(1_000_000)))
    assert run is not None
    store = Store.open(tempfile.mkdtemp(prefix="runlens-core28-store-"), create=True)
    store.add_table(run, "run_1000000.json")
    del run
    runs = store.runs()
    results = {}
    for engine in (DuckDBEngine(), SparkEngine()):
        start = time.perf_counter()
        if engine.name == "spark":
            engine.session  # noqa: B018 - started apart from the measured work
            found["spark_start_s"] = time.perf_counter() - start
            start = time.perf_counter()
        results[engine.name] = run_figures(store, engine, runs)
        found[f"{engine.name}_s"] = time.perf_counter() - start
        engine.close()
    numbers = {"duckdb": [], "spark": []}
    for name, figures in results.items():
        _leaves(figures, "", numbers[name])
    found["numbers"] = len(numbers["duckdb"])
    paths_equal = [p for p, _ in numbers["duckdb"]] == [p for p, _ in numbers["spark"]]
    found["same_figures"] = paths_equal
    if paths_equal:
        diffs = [_difference(a, b) for (_, a), (_, b) in zip(numbers["duckdb"], numbers["spark"])]
        found["max_abs_diff"] = max(diffs) if diffs else 0.0
        found["exactly_equal"] = sum(d == 0 for d in diffs)
    return found


def _difference(a, b) -> float:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return 0.0 if (a is None) == (b is None) and (a is None or math.isnan(a) == math.isnan(b)) else math.inf
    return abs(a - b)


def _leaves(value, path: str, into: list) -> None:
    """Every number of a nested figure dictionary, with its path, in a fixed order."""
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            _leaves(value[key], f"{path}/{key}", into)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _leaves(item, f"{path}/{i}", into)
    elif isinstance(value, bool) or value is None:
        into.append((path, None if value is None else float(value)))
    elif isinstance(value, (int, float)):
        into.append((path, float(value)))
