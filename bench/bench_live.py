"""Live runs (docs/live.md): the cost of a refresh of a growing file, at 10k and 1M lines already read.

For a RunLens JSON Lines run and a garak report.jsonl of N lines, the growing reader (``reporting.format.growing``)
reads the file once; then, again and again, a thousand new lines are appended and the time from the append to the
figures (``refresh`` + ``snapshot`` + ``LiveTally.figures``: what ``runlens watch`` prints and the dashboard's
in-progress line shows) is measured, against a floor measured in the same run: reading the same new bytes and
``json.loads`` on each line. The dashboard also rebuilds its pages' figures over every case so far
(``make_run_data``): measured at 10k. Target (issue 29): a 1M-line growing file refreshes in under 1 s per new
thousand lines. Each size runs in its own process (peak memory of its own).

    python bench/bench_live.py [--sizes 10000 1000000] [--repeat 5]
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _results import rows_from_children, write_section  # noqa: E402

GARAK = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"
NEW = 1000  # lines appended per refresh


def runlens_lines(start: int, count: int, templates: list[dict]) -> bytes:
    out = []
    for i in range(start, start + count):
        case = templates[i % len(templates)]
        out.append(json.dumps({**case, "probe_id": f"{case['probe_id']}-{i}"}))
    return ("\n".join(out) + "\n").encode()


def garak_parts() -> tuple[bytes, list[bytes]]:
    """The fixture's first lines up to its first attempt (setup, init), and one probe's judged attempt lines."""
    lines = GARAK.read_bytes().split(b"\n")
    head = []
    for line in lines:
        if b'"entry_type": "attempt"' in line:
            break
        head.append(line)
    judged = [line for line in lines if b'"status": 2' in line and b'"probe_classname": "ansiescape.AnsiRaw"' in line]
    return b"\n".join(head) + b"\n", judged


def garak_lines(start: int, count: int, judged: list[bytes]) -> bytes:
    """``count`` attempt lines, each a status-1 then status-2 pair in turn, of fresh uuid and seq."""
    out = []
    for i in range(start, start + count, 2):
        line = judged[(i // 2) % len(judged)]
        entry = json.loads(line)
        entry["uuid"] = f"00000000-0000-4000-8000-{i // 2:012d}"
        entry["seq"] = i // 2
        generated = {**entry, "status": 1, "detector_results": {}}
        out.append(json.dumps(generated))
        out.append(json.dumps(entry))
    return ("\n".join(out[:count]) + "\n").encode()


def child(n: int, repeat: int) -> dict:
    from reporting.analysis.live import LiveTally
    from reporting.format.reading import LoadResult
    from reporting.format.synthetic import synthetic_run
    from reporting.report.build import make_run_data
    from reporting.sources.growing import GrowingRun

    templates = synthetic_run(500)["cases"]
    head, judged = garak_parts()
    rows = {}
    for kind in ("runlens", "garak"):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / ("live.jsonl" if kind == "runlens" else "live.report.jsonl")
            make = (
                (lambda s, c: runlens_lines(s, c, templates))
                if kind == "runlens"
                else (lambda s, c: garak_lines(s, c, judged))
            )
            with open(path, "wb") as out:
                if kind == "garak":
                    out.write(head)
                for start in range(0, n, 100_000):
                    out.write(make(start, min(100_000, n - start)))
            growing = GrowingRun(path, idle_seconds=3600)
            began = time.perf_counter()
            growing.refresh()
            live = growing.snapshot()
            tally = LiveTally()
            tally.figures(live.run.cases, live.stable, live.settled)
            first = time.perf_counter() - began
            refresh, refresh_cpu, floor, floor_cpu, dashboard = [], [], [], [], []
            done = n
            for _ in range(repeat):
                chunk = make(done, NEW)
                offset = path.stat().st_size
                with open(path, "ab") as out:
                    out.write(chunk)
                began, cpu = time.perf_counter(), time.process_time()
                growing.refresh()
                live = growing.snapshot()
                figures = tally.figures(live.run.cases, live.stable, live.settled)
                refresh.append(time.perf_counter() - began)
                refresh_cpu.append(time.process_time() - cpu)
                began, cpu = time.perf_counter(), time.process_time()  # the floor: the new bytes, json.loads a line
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    parsed = [json.loads(line) for line in handle.read().split(b"\n") if line]
                floor.append(time.perf_counter() - began)
                floor_cpu.append(time.process_time() - cpu)
                assert len(parsed) == NEW
                if n <= 100_000:
                    began = time.perf_counter()
                    make_run_data(LoadResult(live.label, live.run, live.problems, live.cases_in_file))
                    dashboard.append(time.perf_counter() - began)
                done += NEW
            assert figures["cases"] == len(live.run.cases) and live.problems == []
            rows[kind] = {
                "cases": figures["cases"],
                "first": first,
                "refresh": statistics.median(refresh),
                "refresh_cpu": statistics.median(refresh_cpu),
                "floor": statistics.median(floor),
                "floor_cpu": statistics.median(floor_cpu),
                "dashboard": statistics.median(dashboard) if dashboard else None,
                "read": growing.bytes_read,
                "size": path.stat().st_size,
            }
    rows["lines"] = n
    rows["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return rows


def main() -> None:
    results = rows_from_children(__file__, child, [10_000, 1_000_000])
    if results is None:
        return
    lines = [
        "| file | lines | cases | first read s | refresh per 1,000 new lines: wall s (CPU s) | floor: wall s (CPU s) | "
        "x floor (CPU) | dashboard figures s | bytes read / file size | peak MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        size = row["lines"]
        for kind in ("runlens", "garak"):
            r = row[kind]
            dash = f"{r['dashboard']:.3f}" if r["dashboard"] is not None else "not measured"
            lines.append(
                f"| {'RunLens JSONL' if kind == 'runlens' else 'garak report.jsonl'} | {size:,} | {r['cases']:,} | "
                f"{r['first']:.1f} | {r['refresh']:.3f} ({r['refresh_cpu']:.3f}) | "
                f"{r['floor']:.4f} ({r['floor_cpu']:.4f}) | "
                f"x{r['refresh_cpu'] / max(r['floor_cpu'], 1e-6):.1f} | "
                f"{dash} | {r['read'] / r['size']:.2f} | {row['peak_mb']:.0f} |"
            )
            print(lines[-1], flush=True)
    body = (
        "### Live runs (`bench/bench_live.py`)\n\n"
        "A growing file of N lines read once, then 1,000 lines appended, again and again (3 times unless `--repeat`): "
        "the time from the append to the figures (`refresh` + `snapshot` + the tally's figures; median), against "
        "the floor of reading the same new bytes "
        "with `json.loads` per line. `dashboard figures`: the dashboard's pages rebuilt over every case so far "
        "(`make_run_data`, no file read), at 10k only. `bytes read / file size` 1.00: each byte read once, never the "
        "file whole again. The machine was shared: wall time is inflated by others' work, the ratio is of CPU time. "
        "garak's reader is below its floor: it keeps a generated (status 1) line unparsed and parses a judged line "
        "without its conversations (`garak_lines.py`). Peak MB: the process that read both files of that size "
        "(every case held, as the dashboard holds them). "
        "Target: under 1 s per new thousand lines at 1M lines.\n\n" + "\n".join(lines)
    )
    write_section("live", body)


if __name__ == "__main__":
    main()
