"""Reviews, gates and severity maps on a run read by columns (issue 28): what each costs against ``recompute`` of
the same run without it, measured in the same run.

    python bench/bench_table_updates.py [--sizes 100000 1000000] [--decisions 1000] [--before REF]

The run: bench_core.data_file(N) (synthetic, seed 1). The review: ``--decisions`` cases drawn at random (seeded),
decided by two reviewers (pass, fail or unsure, a tenth with a severity; each overturn with a reason) through
``python -m reporting review RUN --from D.jsonl``, as a reviewer's batch is recorded. Each work is its own process,
measured by ``os.wait4`` (CPU time, wall time, peak resident set), in one run:

- floor: ``recompute`` of the same run with no review file (a hard link in a folder of its own);
- ``recompute`` with the review file (the figures as judged, and the review's summary);
- ``recompute --as reviewed`` (every figure on the reviewers' verdicts);
- ``review --set`` of one more decision (what a reviewer waits for at the command line);
- ``check --min-pass-rate 0.5 --strict`` (the gates) and ``recompute --severity-map`` (two categories mapped);
- ``--before REF``: the same works by an earlier commit (a git worktree), for the before/after (at 100k).

Results: bench/RESULTS.md, section ``table_updates``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def measure(command: list[str], cwd: Path, refusable: bool = False) -> dict:
    """One process (``bench_peers.measure``: CPU and wall seconds, peak resident MB, under the peers bench's
    environment); ``refusable``: exit 1 (a gate that fails) is an answer, not a failure."""
    from bench_peers import measure as measured

    found = measured(command, cwd=cwd, refusable=refusable)
    if found.get("code", 0) not in (0, 1):
        raise SystemExit(f"failed: {' '.join(command)}\n{found['err'][-2000:]}")
    return {"cpu": found["cpu"], "wall": found["s"], "mb": found["mb"]}


def reviewed_copy(n: int, decisions: int, where: Path) -> tuple[Path, Path]:
    """The run alone in one folder and, in another, the run with its review file."""
    from bench_core import data_file

    source = data_file(n)
    plain, reviewed = where / "plain" / source.name, where / "reviewed" / source.name
    for path in (plain, reviewed):
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, path)
    # The decisions are drawn in a process of their own: a child's peak resident set (ru_maxrss) starts from what
    # its parent held when it was forked, and the run's cases held here would be counted in every measurement.
    subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--draw", str(source), str(where), str(decisions)], check=True
    )
    for reviewer in ("alice", "bob"):
        batch = where / f"{reviewer}.jsonl"
        command = [sys.executable, "-m", "reporting", "review", str(reviewed), "--from", str(batch)]
        measure(command + ["--reviewer", reviewer], ROOT)
    return plain, reviewed


def draw(source: Path, where: Path, decisions: int) -> None:
    """The two reviewers' batches of decisions on cases of ``source`` (seeded)."""
    cases = json.loads(source.read_bytes())["cases"]
    rng = random.Random(7)
    chosen = rng.sample(range(len(cases)), decisions)
    for reviewer in ("alice", "bob"):
        lines = []
        for i in chosen if reviewer == "alice" else chosen[: decisions // 2]:
            decision = {"probe_id": cases[i]["probe_id"], "verdict": rng.choice(["pass", "fail", "unsure"])}
            decision["reason"] = "checked by hand"
            if rng.random() < 0.1:
                decision["severity"] = rng.choice(["low", "medium", "high", "critical"])
            lines.append(json.dumps(decision))
        (where / f"{reviewer}.jsonl").write_text("\n".join(lines) + "\n")


def rows(n: int, decisions: int, before: Path | None) -> dict:
    where = Path(tempfile.mkdtemp(prefix="runlens-table-updates-"))
    plain, reviewed = reviewed_copy(n, decisions, where)
    out = where / "out.json"

    def recompute(run: Path, *more: str, cwd: Path = ROOT) -> dict:
        out.unlink(missing_ok=True)
        return measure([sys.executable, "-m", "reporting", "recompute", str(run), "-o", str(out), *more], cwd)

    severity_map = where / "map.yaml"
    severity_map.write_text("categories:\n  prompt_injection: critical\n  misinformation: low\n")
    check = [sys.executable, "-m", "reporting", "check", str(plain), "--min-pass-rate", "0.5", "--strict"]
    works = {
        "judged": lambda cwd: recompute(reviewed, cwd=cwd),
        "reviewed": lambda cwd: recompute(reviewed, "--as", "reviewed", cwd=cwd),
        "check": lambda cwd: measure(check, cwd, refusable=True),
        "severity_map": lambda cwd: recompute(plain, "--severity-map", str(severity_map), cwd=cwd),
    }
    found = {"floor": recompute(plain)}
    for name, work in works.items():
        found[name] = work(ROOT)
    probe = json.loads((where / "alice.jsonl").read_text().splitlines()[0])["probe_id"]
    command = [sys.executable, "-m", "reporting", "review", str(reviewed), "--set", f"{probe}=fail"]
    found["one_decision"] = measure(command + ["--reviewer", "carol", "--reason", "seen"], ROOT)
    if before is not None:
        for name, work in works.items():
            found[f"before_{name}"] = work(before)
    return found


def section(results: dict, decisions: int, label: str) -> str:
    lines = [
        "## Reviews, gates and severity maps on a run read by columns (`bench/bench_table_updates.py`)",
        "",
        f"The synthetic run with {decisions:,} of its cases decided by two reviewers (half of them by both: some",
        "contested, some unsure, a tenth with a severity), recorded with `review --from`. Each work its own process",
        "(CPU s / wall s / peak); ratio: CPU time against `recompute` of the same run without a review file,",
        f"measured in the same run ({label}).",
        "",
        "| cases | work | CPU s | wall s | peak MB | vs no review |",
        "|---|---|---|---|---|---|",
    ]
    works = {
        "judged": "`recompute` with the review file",
        "reviewed": "`recompute --as reviewed`",
        "check": "`check --min-pass-rate 0.5 --strict`",
        "severity_map": "`recompute --severity-map` (two categories)",
    }
    names = {
        "floor": "`recompute`, no review file (floor)",
        **works,
        "one_decision": "`review --set` one more decision",
        **{f"before_{key}": f"{name}, before" for key, name in works.items()},
    }
    for n, found in results.items():
        floor = found["floor"]["cpu"]
        for key, name in names.items():
            if key in found:
                row = found[key]
                ratio = (
                    "" if key in ("floor", "one_decision") or key.endswith("check") else f"x{row['cpu'] / floor:.2f}"
                )
                lines.append(
                    f"| {int(n):,} | {name} | {row['cpu']:.1f} | {row['wall']:.1f} | {row['mb']:,.0f} | {ratio} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--decisions", type=int, default=1000)
    parser.add_argument("--before", metavar="REF", help="also time an earlier commit's recompute")
    parser.add_argument("--draw", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.draw:
        draw(Path(args.draw[0]), Path(args.draw[1]), int(args.draw[2]))
        return
    before = None
    if args.before:
        before = Path(tempfile.mkdtemp(prefix="runlens-before-")) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=ROOT, check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    label = f"{time.strftime('%H:%M UTC', time.gmtime())}, {commit.stdout.strip()}"
    label += f", before = {args.before}" if args.before else ""
    results = {}
    try:
        for n in args.sizes:
            results[n] = rows(n, args.decisions, before if n <= 100_000 else None)
            print(n, json.dumps(results[n]), flush=True)
    finally:
        if before is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, check=False)
    from _results import write_section

    write_section("table_updates", section(results, args.decisions, label))


if __name__ == "__main__":
    main()
