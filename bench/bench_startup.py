"""Start-up time of the command line and of the package, as whole processes, against a bare interpreter.

    python bench/bench_startup.py [--repeat 15]

Median wall time of repeated runs of `python -m reporting --help` and `python -c "import reporting"`, beside
`python -c pass` measured in the same run (the floor). Targets: `--help` under 0.3 s, `import reporting` under 0.2 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def median_wall(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    python = sys.executable
    rows = []
    floor = median_wall([python, "-c", "pass"], args.repeat)
    for label, command, target in (
        ("python -m reporting --help", [python, "-m", "reporting", "--help"], 0.3),
        ('python -c "import reporting"', [python, "-c", "import reporting"], 0.2),
    ):
        wall = median_wall(command, args.repeat)
        rows.append(f"| `{label}` | {wall:.3f} | {target} | {floor:.3f} | {wall / floor:.1f} |")
        print(f"{label}: {wall:.3f} s (floor {floor:.3f} s)")
    from _results import write_section

    write_section(
        "startup",
        "\n".join(
            [
                "## Start-up (`bench/bench_startup.py`)",
                "",
                f"Median wall time of {args.repeat} whole-process runs each. Floor: `python -c pass` in the same run.",
                "",
                "| command | median s | target s | floor s | ratio to floor |",
                "|---|---:|---:|---:|---:|",
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
