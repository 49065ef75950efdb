"""Set-up time on a fresh clone (issue 25): `make run` until the dashboard answers, and optionally `make test`,
before the lock (pip resolving pyproject's ranges) and after it (uv installing uv.lock), with cold and warm
package caches.

    python bench/bench_setup.py [--before COMMIT] [--with-test] [--caches cold warm]

Each measurement clones the checkout afresh (`git clone`, so nothing of this checkout's .venv is seen). Cold: an
empty uv cache and pip's cache turned off; warm: the caches a first install filled. The figures go to
bench/RESULTS.md (section "setup").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "923798b"  # the last commit before the lock: `make` ran `pip install -e .[test]`


def clone(commit: str, where: Path) -> Path:
    target = where / f"clone-{commit}"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "--quiet", commit], check=True)
    return target


def env_for(cold: bool, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    if cold:
        env["UV_CACHE_DIR"] = str(cache)
        env["PIP_NO_CACHE_DIR"] = "1"
    return env


def make_run_until_serving(checkout: Path, env: dict[str, str], port: int = 8501) -> float:
    """Seconds from `make run` to the dashboard's health check answering ok."""
    start = time.perf_counter()
    server = subprocess.Popen(
        ["make", "run"],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                    if response.read() == b"ok":
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"make run exited with {server.returncode} in {checkout}")
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=60)


def make_test(checkout: Path, env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(["make", "test"], cwd=checkout, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--with-test", action="store_true")
    parser.add_argument("--caches", nargs="+", choices=["cold", "warm"], default=["cold", "warm"])
    args = parser.parse_args()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        for label, commit in (("before: pip, ranges", args.before), ("after: uv, uv.lock", head.stdout.strip())):
            for cold in [c == "cold" for c in args.caches]:
                checkout = clone(commit, where / ("cold" if cold else "warm"))
                env = env_for(cold, where / f"uv-cache-{commit}")
                seconds = make_run_until_serving(checkout, env)
                row = [label, commit, "cold" if cold else "warm", f"{seconds:.1f}"]
                if args.with_test:
                    fresh = clone(commit, where / ("test-cold" if cold else "test-warm"))
                    test_seconds, code = make_test(fresh, env_for(cold, where / f"uv-cache-test-{commit}"))
                    row += [f"{test_seconds:.0f}", "pass" if code == 0 else f"fail ({code})"]
                rows.append(row)
                print(" | ".join(row), flush=True)
    header = "| install | commit | caches | `make run` to serving s |"
    rule = "|---|---|---|---:|"
    if args.with_test:
        header += " `make test` s (install included) | result |"
        rule += "---:|---|"
    body = (
        "## Set-up on a fresh clone (`bench/bench_setup.py`)\n\n"
        "A fresh `git clone` each time. Cold: an empty uv cache and pip's cache off (a new machine); warm: the caches "
        "a first install filled (a developer's second clone). `make run` is timed until the dashboard's health "
        "check answers.\n\n" + header + "\n" + rule + "\n" + "\n".join("| " + " | ".join(r) + " |" for r in rows)
    )
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _results import write_section

    write_section("setup", body)


if __name__ == "__main__":
    main()
