"""Reading and summing a run of 1k to 10M cases: RunLens's public API, the columnar reader and DuckDB, against a bare
parse of the same file.

    python bench/bench_scale.py [--sizes 1000 10000 100000 1000000 10000000] [--limit SECONDS] [--cap-mb MB]

Runs up to 1M cases are the `bench/` synthetic JSON documents (``bench/data/run_N.json``, made by
``bench_core.data_file``); 10M cases are JSON Lines (9 GB, made once from the 1M run's cases repeated with new
probe ids, ``bench/data/run_10000000.jsonl``). Each measurement runs in its own process, its modules imported
before the clock starts; peak memory is that process's maximum resident set (interpreter and imports included),
taken by ``bench_columnar_core.measured``, which stops a process past ``--limit`` seconds or ``--cap-mb`` resident:

- floor: ``json.load`` of the document (for JSON Lines: ``json.loads`` of each line, nothing kept, since the
  whole file would not fit in memory);
- RunLens: the public API, ``reporting.read_run`` and ``reporting.aggregate_metrics`` (every run-level figure);
  at 10M with the file size cap raised (``RUNLENS_MAX_FILE_MB``), as far as it goes within the limits;
- columnar: the reader and the engine alone: read and validate (``reporting.format.columnar.read_table``) and the
  store's aggregates (``reporting.store.engine.table_figures``: counts, rates with intervals, risk statistics,
  indices, per category); 10M JSON Lines keep only the columns the figures need (``columns=``).

Writes the table and ``bench/scale.svg`` (log-log, time against cases; the "RunLens" line is the public API).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

FIGURE_COLUMNS = ["probe_id", "category", "severity", "passed", "risk_score", "severity_weight", "weighted_risk"]


def lines_file(n: int) -> Path:
    """JSON Lines of ``n`` cases: the 1M run's cases again and again, each copy with its own probe ids."""
    path = HERE / "data" / f"run_{n}.jsonl"
    if path.exists():
        return path
    from bench_core import data_file

    base = json.loads(data_file(1_000_000).read_text())["cases"]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as handle:
        written = 0
        while written < n:
            copy = written // len(base)
            for case in base[: n - written]:
                handle.write(json.dumps({**case, "probe_id": f"{case['probe_id']}-{copy}"}) + "\n")
            written += min(len(base), n - written)
    tmp.rename(path)
    return path


def file_for(n: int) -> Path:
    if n > 1_000_000:
        return lines_file(n)
    from bench_core import data_file

    return data_file(n)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(kind: str, n: int) -> dict:
    """One measurement; the modules each path needs are imported before the clock starts (about 1.5 s for
    pyarrow, DuckDB and pydantic, once per process: not what grows with a run)."""
    path = file_for(n)
    from reporting import aggregate_metrics, read_run
    from reporting.format.columnar import read_table
    from reporting.store.engine import table_figures

    table_figures(read_table(str(file_for(1_000))).table)  # DuckDB's and Arrow's first-call set-up
    aggregate_metrics(read_run(file_for(1_000)))
    start = time.perf_counter()
    if kind == "floor":
        if path.suffix == ".jsonl":
            with open(path, "rb") as handle:
                for line in handle:
                    json.loads(line)
        else:
            with open(path, "rb") as handle:
                json.load(handle)
    elif kind == "columnar":
        run = read_table(str(path), columns=FIGURE_COLUMNS if path.suffix == ".jsonl" else None)
        assert run is not None, "the columnar reader handed the benchmark run back"
        figures = table_figures(run.table)
        assert figures["counts"]["cases"] == n
    else:
        aggregate_metrics(read_run(path))
    return {"seconds": time.perf_counter() - start, "peak_mb": peak_mb()}


def measure(kind: str, n: int, limit_s: float, cap_mb: float) -> dict:
    """One child; ``seconds`` (after the imports) and ``peak_mb`` (wait4), or None and its ``status``."""
    from bench_columnar_core import measured

    env = {"RUNLENS_MAX_FILE_MB": "65536"} if n > 1_000_000 else None
    found = measured([sys.executable, __file__, "--child", kind, str(n)], limit_s, cap_mb, env)
    if found["status"] != "ok":
        found["seconds"] = None
    return found


LEGEND = {
    "floor": "floor: json.load",
    "RunLens": "RunLens: read_run + aggregate_metrics",
    "columnar": "columnar: read_table + table_figures",
}


def svg(rows: list[dict]) -> str:
    """Time against cases, log-log, one line per path: small enough to read in the file."""
    import math

    width, height, pad = 640, 400, 60
    series = {"floor": "#555555", "RunLens": "#d62728", "columnar": "#1f77b4"}
    xs = [r["cases"] for r in rows]
    ys = [r[k]["seconds"] for r in rows for k in series if r.get(k) and r[k]["seconds"]]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))

    def px(x: float, y: float) -> tuple[float, float]:
        fx = (math.log10(x) - x0) / ((x1 - x0) or 1)
        fy = (math.log10(y) - y0) / ((y1 - y0) or 1)
        return pad + fx * (width - 2 * pad), height - pad - fy * (height - 2 * pad)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle">Read and validate a run, then its figures: seconds '
        "(log) against cases (log)</text>",
    ]
    for n in xs:
        x, _ = px(n, 10**y0)
        parts.append(f'<text x="{x}" y="{height - pad + 18}" text-anchor="middle">{n:,}</text>')
    for e in range(y0, y1 + 1):
        _, y = px(xs[0], 10**e)
        parts.append(f'<line x1="{pad}" x2="{width - pad}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        parts.append(f'<text x="{pad - 6}" y="{y + 4}" text-anchor="end">{10.0**e:g} s</text>')
    for i, (name, colour) in enumerate(series.items()):
        points = [px(r["cases"], r[name]["seconds"]) for r in rows if r.get(name) and r[name]["seconds"]]
        if points:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in points)
        parts.append(f'<text x="{pad + 10}" y="{50 + 16 * i}" fill="{colour}">{LEGEND[name]}</text>')
    missing = [(name, r) for r in rows for name in series if r.get(name) and not r[name]["seconds"]]
    for i, (name, r) in enumerate(missing):  # a measurement stopped at its limit: said, not drawn
        parts.append(
            f'<text x="{width - pad}" y="{height - pad - 10 - 16 * i}" text-anchor="end" fill="{series[name]}">'
            f"{name} at {r['cases']:,}: {r[name]['status']}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000, 10_000_000])
    parser.add_argument("--limit", type=float, default=900, help="seconds a measurement may take")
    parser.add_argument("--cap-mb", type=float, default=9000, help="resident MB past which a process is stopped")
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    from _results import write_section

    rows = []
    for n in args.sizes:
        file_for(n)
        row = {
            "cases": n,
            **{kind: measure(kind, n, args.limit, args.cap_mb) for kind in ("floor", "RunLens", "columnar")},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    (HERE / "scale.svg").write_text(svg(rows))
    lines = [
        "## Reading and summing runs of 1k to 10M cases (`bench/bench_scale.py`)",
        "",
        "Read + validate + the figures, each in its own process, timed after its imports (peak memory: the whole",
        "process, imports included, by `os.wait4`). Floor: a bare `json.load` of the same file (10M: `json.loads` of",
        "each line, nothing kept). RunLens: the public API, `reporting.read_run` + `reporting.aggregate_metrics`",
        "(every run-level figure; at 10M with the file size cap raised). Columnar: the columnar reader and DuckDB",
        "over its Arrow table, the store's aggregates (10M JSON Lines: only the columns the figures need). A",
        f"measurement is stopped past {args.limit:.0f} s or {args.cap_mb / 1024:.1f} GB resident (a shared machine).",
        "Plot: [scale.svg](scale.svg).",
        "",
        "| cases | file | floor s | floor peak MB | RunLens s | x floor | RunLens peak MB | columnar s | x floor | "
        "columnar peak MB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cells(found: dict, floor: float) -> str:
        if found["seconds"] is None:
            return f"{found['status']} | | {found['peak_mb']:.0f}"
        return f"{found['seconds']:.2f} | x{found['seconds'] / floor:.2f} | {found['peak_mb']:.0f}"

    for r in rows:
        kind = "JSON Lines" if r["cases"] > 1_000_000 else "JSON"
        floor = r["floor"]["seconds"]
        lines.append(
            f"| {r['cases']:,} | {kind} | {floor:.2f} | {r['floor']['peak_mb']:.0f} | "
            f"{cells(r['RunLens'], floor)} | {cells(r['columnar'], floor)} |"
        )
    write_section("scale", "\n".join(lines))


if __name__ == "__main__":
    main()
