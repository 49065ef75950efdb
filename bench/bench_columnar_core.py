"""Issue 28's targets ("one columnar core"), measured: each row against a floor measured in the same run.

    python bench/bench_columnar_core.py [--only ROW ...] [--limit-10m SECONDS] [--cap-mb MB] [--label TEXT]

Rows (``--only`` names): ``api100k``, ``api1m`` (``reporting.read_run`` + ``reporting.aggregate_metrics``),
``recompute`` and ``export`` (the command line on the 1M run, whole process), ``app1m`` (bench_app.run_size: open,
filter change, peak), ``app10m`` (the dashboard on 10M cases as JSON Lines and as Parquet: open, a filter
change, then every page), ``spark`` (the store's figures of the 1M run on Spark and DuckDB).

Every measurement is its own process; its wall time and peak memory (``os.wait4``'s ru_maxrss: the whole process,
interpreter and imports included) are taken by this parent, which stops a process that runs past its time
limit or grows past ``--cap-mb`` resident (the machine is shared) and says so. In-process times (after the
imports, as bench_core and bench_scale take them) come from the child. The floor is a bare ``json.load`` of the
same file in its own process. Data: bench_core.data_file (100k, 1M JSON), bench_scale.lines_file (10M JSON
Lines, the 1M run's cases repeated with new probe ids), and a 10M Parquet case table made here from the 1M run's
columnar table repeated the same way (RunLens's Parquet columns and metadata, ``reporting.format.parquet``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

ROWS = ("api100k", "api1m", "recompute", "export", "app1m", "app10m", "spark")
BIG_FILES_MB = "65536"  # RUNLENS_MAX_FILE_MB for the 10M files (the default cap, 2 GB, skips a 9 GB run)


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measured(argv: list[str], limit_s: float, cap_mb: float, env: dict | None = None) -> dict:
    """Run ``argv`` in its own process (group); wall seconds, peak MB (wait4), its last JSON line if any, and
    ``status``: "ok", "exit N", "did not finish within N s" or "stopped at N MB resident"."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, stdout=out, stderr=err, cwd=ROOT, env={**os.environ, **(env or {})}, start_new_session=True
        )
        status = "ok"
        while True:
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.perf_counter() - start
            if elapsed > limit_s or rss_mb(proc.pid) > cap_mb:
                status = (
                    f"did not finish within {limit_s:.0f} s"
                    if elapsed > limit_s
                    else f"stopped at {cap_mb:.0f} MB resident"
                )
                os.killpg(proc.pid, signal.SIGKILL)
                pid, code, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(code)
        if status == "ok" and proc.returncode != 0:
            status = f"exit {proc.returncode}"
        out.seek(0)
        err.seek(0)
        lines = [line for line in out.read().splitlines() if line.startswith("{")]
        found = {"wall_s": wall, "peak_mb": usage.ru_maxrss / 1024, "status": status}
        if lines:
            found.update(json.loads(lines[-1]))
        if status != "ok":
            found["stderr"] = err.read().strip()[-600:]
        return found


def child(argv: list[str]) -> dict:
    kind = argv[0]
    if kind == "floor":
        start = time.perf_counter()
        with open(argv[1], "rb") as handle:
            json.load(handle)
        return {"seconds": time.perf_counter() - start}
    if kind == "api":
        from bench_core import best, data_file

        import reporting

        reporting.aggregate_metrics(reporting.read_run(data_file(1000)))  # first-call set-up, as bench_scale
        return {"seconds": best(lambda: reporting.aggregate_metrics(reporting.read_run(argv[1])), int(argv[2]))}
    if kind == "app1m":
        from bench_app import run_size

        return run_size(1_000_000, 1)
    if kind == "app10m":
        from bench_columnar_core_app import dashboard_steps

        return dashboard_steps(Path(argv[1]), float(argv[2]))
    if kind == "spark":
        from bench_columnar_core_app import spark_equality

        return spark_equality()
    raise SystemExit(f"no child {kind!r}")


def parquet_10m() -> Path:
    """The 10M Parquet run: the 1M run's columnar table ten times, probe ids as bench_scale.lines_file gives them
    (``-0`` .. ``-9``), RunLens's Parquet metadata (header, schema version) from the 1M run."""
    path = HERE / "data" / "run_10000000.parquet"
    if path.exists():
        return path
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from bench_core import data_file

    from reporting.format.columnar import read_table
    from reporting.format.parquet import RUN_METADATA_KEY, SCHEMA_VERSION_KEY

    run = read_table(str(data_file(1_000_000)))
    assert run is not None, "the columnar reader handed the 1M run back"
    header = json.dumps(run.meta.model_dump(mode="json", exclude_none=True)).encode()
    table = run.table.replace_schema_metadata({RUN_METADATA_KEY: header, SCHEMA_VERSION_KEY: b"3"})
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, table.schema, compression="zstd") as writer:
        for copy in range(10):
            ids = pc.binary_join_element_wise(table["probe_id"], pa.scalar(f"-{copy}"), "")
            writer.write_table(table.set_column(table.column_names.index("probe_id"), "probe_id", ids))
    tmp.rename(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="+", choices=ROWS, default=list(ROWS))
    parser.add_argument(
        "--limit-10m",
        type=float,
        default=900,
        help="seconds a 10M dashboard may take to open (twice that for all its steps)",
    )
    parser.add_argument("--cap-mb", type=float, default=9000, help="resident MB past which a process is stopped")
    parser.add_argument("--label", default="", help="what was measured (e.g. the commit), in the section")
    parser.add_argument("--child", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)), flush=True)
        os._exit(0)  # an AppTest script thread still running past its time limit must not hold the process
    from _results import write_section
    from bench_columnar_core_report import section
    from bench_core import data_file
    from bench_scale import lines_file

    me = [sys.executable, str(Path(__file__).resolve()), "--child"]
    hour = 3600.0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    when = time.strftime("%H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    dirty = subprocess.run(["git", "status", "--porcelain", "reporting"], cwd=ROOT, capture_output=True, text=True)
    code = commit.stdout.strip() + (" + uncommitted reporting/ changes" if dirty.stdout.strip() else "")
    label = args.label or f"{when}, {code}, load {load:.1f}"
    results: dict = {"label": label}

    def note(name: str, value: dict) -> None:
        """Keep a row and write the section at once: a run stopped part way still leaves what it measured."""
        results[name] = value
        print(name, json.dumps(value), flush=True)
        write_section("core28", section(results))

    m100k, m1 = data_file(100_000), data_file(1_000_000)
    if {"api100k", "recompute", "export", "api1m"} & set(args.only):
        note("floor100k", measured(me + ["floor", str(m100k)], hour, args.cap_mb))
        note("floor1m", measured(me + ["floor", str(m1)], hour, args.cap_mb))
    if "api100k" in args.only:
        note("api100k", measured(me + ["api", str(m100k), "3"], hour, args.cap_mb))
    if "api1m" in args.only:
        note("api1m", measured(me + ["api", str(m1), "1"], hour, args.cap_mb))
    out = Path(tempfile.mkdtemp(prefix="runlens-core28-"))
    if "recompute" in args.only:
        argv = [sys.executable, "-m", "reporting", "recompute", str(m1), "-o", str(out / "out.json")]
        note("recompute", measured(argv, hour, args.cap_mb))
    if "export" in args.only:
        argv = [sys.executable, "-m", "reporting", "export", str(m1), "-o", str(out / "out.html")]
        note("export", measured(argv, hour, args.cap_mb))
    if "app1m" in args.only:
        note("app1m", measured(me + ["app1m"], hour, args.cap_mb))
    if "spark" in args.only:
        note("spark", measured(me + ["spark"], hour, args.cap_mb))
    if "app10m" in args.only:
        big = {"RUNLENS_MAX_FILE_MB": BIG_FILES_MB}
        for name, path in (("app10m_parquet", parquet_10m()), ("app10m_jsonl", lines_file(10_000_000))):
            limit = args.limit_10m
            note(name, measured(me + ["app10m", str(path), str(limit)], 2 * limit, args.cap_mb, big))
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"results: {out / 'results.json'}", flush=True)


if __name__ == "__main__":
    main()
