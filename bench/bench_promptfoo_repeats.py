"""promptfoo assertions that repeat one metric name (issue 30 point 5): reading and exporting them stays linear.

    python bench/bench_promptfoo_repeats.py [--sizes 300 3000 30000] [--repeat 3]

A promptfoo file of one result whose N assertions all name the metric "m" (the same file as
tests/test_trust_decoding.py makes). Reading (``read_promptfoo``, CPU time, best of --repeat): microseconds per
assertion at each N, against the smallest N measured in the same run (the floor): linear reading keeps the ratio near
1 (names grown to tell repeats apart made it quadratic: about N / floor N). Export (``python -m reporting export``,
a whole process, median wall time): against the export of the same file with the floor's N assertions. Targets
(the unit test's former timings, now here): reading 3,000 assertions under 2 s, exporting them under 60 s; ratios
under 2. The unit test counts the lines run and the memory instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

PROMPTFOO = ROOT / "tests" / "fixtures" / "promptfoo" / "promptfoo.json"


def repeated_metric(folder: Path, assertions: int) -> Path:
    document = json.loads(PROMPTFOO.read_text())
    result = document["results"]["results"][0]
    result["gradingResult"]["componentResults"] = [
        {"pass": i != 7, "score": 1.0 if i != 7 else 0.25, "reason": f"r{i}", "assertion": {"metric": "m"}}
        for i in range(assertions)
    ]
    document["results"]["results"] = [result]
    path = folder / f"repeat-{assertions}.json"
    path.write_text(json.dumps(document))
    return path


def read_cpu(path: Path, repeat: int) -> float:
    """Best CPU seconds of ``read_promptfoo`` on the file."""
    from reporting.importers.promptfoo import read_promptfoo

    data, best = path.read_bytes(), float("inf")
    for _ in range(repeat):
        start = time.process_time()
        _, _, problems = read_promptfoo(data, str(path))
        best = min(best, time.process_time() - start)
        assert not problems, problems
    return best


def export_wall(path: Path, repeat: int) -> float:
    """Median wall seconds of a whole ``python -m reporting export`` of the file."""
    times = []
    for i in range(repeat):
        out = path.with_name(f"{path.stem}-{i}.html")
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "reporting", "export", str(path), "-o", str(out)],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 3000, 30000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        paths = {n: repeated_metric(Path(folder), n) for n in sizes}
        reads = {n: read_cpu(paths[n], args.repeat) for n in sizes}
        exports = {n: export_wall(paths[n], args.repeat) for n in sizes}
    floor = sizes[0]
    per_floor = reads[floor] / floor
    for n in sizes:
        per = reads[n] / n
        ratio, export_ratio = per / per_floor, exports[n] / exports[floor]
        rows.append(
            f"| {n:,} | {reads[n]:.3f} | {per * 1e6:.1f} | {ratio:.2f} | {exports[n]:.2f} | {export_ratio:.2f} |"
        )
        print(
            f"{n:>6} assertions: read {reads[n]:.3f} s CPU ({ratio:.2f} x floor per assertion), "
            f"export {exports[n]:.2f} s ({export_ratio:.2f} x floor)"
        )
    from _results import write_section

    write_section(
        "promptfoo-repeats",
        "\n".join(
            [
                "## promptfoo assertions repeating one metric (`bench/bench_promptfoo_repeats.py`)",
                "",
                f'One result whose N assertions all name the metric "m". Read: `read_promptfoo`, best CPU time of '
                f"{args.repeat}; per assertion against the floor (N = {floor:,}, same run): linear stays near 1. "
                f"Export: `python -m reporting export`, median wall time of {args.repeat} whole processes, against "
                f"the floor's export. Targets: 3,000 read under 2 s and exported under 60 s; ratios under 2.",
                "",
                "| assertions | read s (CPU) | read us per assertion | ratio to floor | export s | ratio to floor |",
                "|---:|---:|---:|---:|---:|---:|",
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
