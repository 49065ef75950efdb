"""RunLens against the peers' own readers, on large files in the peers' own formats (issue 34).

    python bench/bench_peers.py [--sizes 10000 100000] [--million] [--repeat 1] [--before REF]
                                [--inspect-python PY] [--garak-python PY] [--tools inspect garak]

The peers are installed into virtual environments of their own (``bench/data/peers/venvs``, made on first use
with pip: ``inspect-ai==0.3.285`` with pandas and pyarrow for its ``samples_df``, ``garak==0.17.1``), never into
the project's. ``--inspect-python`` and ``--garak-python`` name an interpreter that has them already.

Files (``bench/data/peers``, kept between runs):

- Inspect: an ``.eval`` of N samples written by Inspect's own writer, from the 20 real samples of
  ``tests/fixtures/inspect/cli_mockllm_default.eval`` (inspect_ai 0.3.285, zstd members) repeated with fresh ids
  and uuids, under the real header with its sample counts set to N (every scorer's mean is unchanged). The
  writer is the ``EvalRecorder`` that ``write_eval_log`` calls, as ``write_eval_log`` calls it (each sample
  condensed, then logged, then ``log_finish``; each of the 20 real samples condensed once, as condensing a copy
  that differs only in its id and uuid gives the same sample), its buffer written into the log's temporary zip
  every 1,000 samples (``write_buffered_samples``, the first half of the recorder's ``flush``):
  ``write_eval_log`` itself buffers every sample of the log and scans the buffer for each one it adds, which
  takes hours at 100,000 samples, and the second half of ``flush`` copies the whole temporary zip to the target
  each time (a million samples: a thousand copies of up to 2.7 GB). The zip's members are the same either way.
- garak: a ``report.jsonl`` of the real attempts of ``tests/fixtures/garak/peers_repeat_small.report.jsonl``
  (garak 0.17.1, 71 attempts x 2 generations) repeated with fresh uuids and seq until N cases, its ``eval`` lines'
  counts multiplied to match (its digest line left out: garak's digest is what is timed).

Each work is its own process, measured by ``os.wait4`` (wall time, CPU time, peak resident set; ratios of CPU
time, which others' work on the machine does not inflate): the floor (unzip + ``json.loads`` of every member; of
every line), the peer's reader (Inspect's ``read_eval_log`` and ``samples_df``; garak's ``report_digest``), and
RunLens's ``import`` (``--before REF``: also an earlier commit's, from a git worktree), ``recompute`` and
``export`` of the imported run; for Inspect also ``stream_inspect_file`` written out as ``import`` writes a run.
Every count is checked against the tool's own. Each size's last measurement is kept (``measured.json``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
DATA = HERE / "data" / "peers"
PEERS = {"inspect": "inspect-ai==0.3.285", "garak": "garak==0.17.1"}
EXTRAS = {"inspect": ["pandas", "pyarrow"], "garak": []}  # samples_df needs them (inspect_ai.analysis)
INSPECT_SOURCE = ROOT / "tests" / "fixtures" / "inspect" / "cli_mockllm_default.eval"
ENV = {"PYTHONWARNINGS": "ignore", "RUNLENS_MAX_FILE_MB": "65536"}  # the size cap above the 1M files (2.3 GB)
GARAK_SOURCE = ROOT / "tests" / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"

# Run in the Inspect environment: argv = source .eval, output .eval, N.
MAKE_INSPECT = """
import asyncio, os, sys
from inspect_ai.log import read_eval_log
from inspect_ai.log._condense import condense_sample
from inspect_ai.log._recorders.eval import EvalRecorder
source, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = read_eval_log(source)
real = [condense_sample(s) for s in log.samples]  # condensed once each: condensing is the same for every copy
results = log.results.model_copy(update={"total_samples": n, "completed_samples": n})
async def write():
    recorder = EvalRecorder(os.path.dirname(os.path.abspath(target)))
    await recorder.log_init(log.eval, target, clean=True)
    await recorder.log_start(log.eval, log.plan)
    for i in range(n):
        s = real[i % len(real)]
        sample = s.model_copy(update={"id": f"{s.id}-{i // len(real)}", "uuid": f"{s.uuid}-{i}"})
        await recorder.log_sample(log.eval, sample)
        if (i + 1) % 1000 == 0:  # the buffer into the temp zip; the whole zip copied to target at log_finish
            await recorder.data[recorder._log_file_key(log.eval)].write_buffered_samples()
    await recorder.log_finish(
        log.eval, log.status, log.stats, results, log.reductions, log.error, invalidated=log.invalidated,
        log_updates=log.log_updates, config_updates=log.config_updates,
    )
asyncio.run(write())
"""
INSPECT_READ = """
import sys
from inspect_ai.log import read_eval_log
log = read_eval_log(sys.argv[1])
print(len(log.samples), log.results.completed_samples)
"""
INSPECT_COUNT = """
import sys
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries
log = read_eval_log(sys.argv[1], header_only=True)
print(len(read_eval_log_sample_summaries(sys.argv[1])), log.results.completed_samples)
"""
WHOLE_UP_TO = 100_000  # Inspect's readers of whole samples (read_eval_log: 8.7 GB at 100,000) run up to this size
INSPECT_DF = """
import sys; from inspect_ai.analysis import samples_df
print(len(samples_df(sys.argv[1])))
"""
GARAK_DIGEST = """
import sys
from garak.analyze.report_digest import build_digest
print(len(build_digest(sys.argv[1])["eval"]))
"""
FLOOR_ZIP = """
import json, sys
from reporting.format.expansion import FileBytes, open_zip
archive, _ = open_zip(FileBytes(open(sys.argv[1], "rb")), sys.argv[1])
names = archive.names(lambda name: name.endswith(".json"))
print(sum(1 for name in names if json.loads(archive.read(name)[0]) or True))
"""
FLOOR_LINES = """
import json, sys
with open(sys.argv[1], "rb") as handle:
    print(sum(1 for line in handle if json.loads(line) or True))
"""
BEFORE = """
import sys, reporting.format.expansion as expansion, reporting.cli as cli
expansion.MAX_MEMBERS = 10**7  # its limit (100,000 members) refused a 100,000-sample log: lifted to time the reader
sys.exit(cli.main(["import", *sys.argv[1:]]))
"""
STREAMED = """
import sys
from reporting.format.writing import document_chunks, write_atomic
from reporting.importers.inspect_stream import stream_inspect_file
header, cases, warnings, problems = stream_inspect_file(sys.argv[1])
assert header is not None and not problems, problems
count = []
write_atomic(sys.argv[2], document_chunks({**header, "cases": (count.append(1) or c for c in cases)}))
print(len(count), len(warnings))
"""


def peer_python(tool: str, given: str | None) -> str:
    """The interpreter of the tool's own environment: the one given, else bench/data/peers/venvs/TOOL (made with
    pip on first use)."""
    if given:
        return given
    venv = DATA / "venvs" / tool
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", PEERS[tool], *EXTRAS[tool]], check=True)
    return str(python)


def version(python: str, distribution: str) -> str:
    code = f"from importlib.metadata import version; print(version({distribution!r}))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def inspect_file(python: str, n: int) -> Path:
    path = DATA / f"inspect-{n}.eval"
    if not path.exists():
        tmp = DATA / f"inspect-{n}.tmp.eval"
        subprocess.run([python, "-c", MAKE_INSPECT, str(INSPECT_SOURCE), str(tmp), str(n)], check=True)
        os.replace(tmp, path)
    return path


def garak_file(n: int) -> Path:
    """The real report's attempts repeated until ``n`` cases (whole repetitions: a few more when ``n`` is not a
    multiple of the report's cases), each with a fresh uuid and seq; eval lines multiplied to match."""
    path = DATA / f"garak-{n}.report.jsonl"
    if path.exists():
        return path
    lines = [json.loads(line) for line in GARAK_SOURCE.read_text().splitlines() if line.strip()]
    attempts = [r for r in lines if r["entry_type"] == "attempt"]
    cases = sum(len(r["outputs"]) for r in attempts if r["status"] == 2)
    times = -(-n // cases)
    head = [r for r in lines if r["entry_type"] in ("start_run setup", "init", "plugin_cache", "payload_init")]
    tail = [r for r in lines if r["entry_type"] in ("probe_summary", "completion")]
    step = 1 + max(int(r.get("seq") or 0) for r in attempts)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        for record in head:
            out.write(json.dumps(record) + "\n")
        for copy in range(times):
            fresh: dict[str, str] = {}
            for record in attempts:
                ids = fresh.setdefault(record["uuid"], str(uuid.UUID(int=copy << 64 | len(fresh), version=4)))
                seq = record.get("seq")
                out.write(json.dumps({**record, "uuid": ids, "seq": None if seq is None else seq + copy * step}))
                out.write("\n")
        evals = [_scaled(r, times) for r in lines if r["entry_type"] == "eval"]
        out.write("".join(json.dumps(record) + "\n" for record in evals + tail))
    os.replace(tmp, path)
    return path


def _scaled(record, times: int):
    counts = ("passed", "fails", "nones", "total_evaluated", "total_processed", "prompts")
    if not isinstance(record, dict):
        return record
    return {k: v * times if k in counts and isinstance(v, int) else _scaled(v, times) for k, v in record.items()}


def measure(command: list[str], env: dict | None = None, cwd: Path = ROOT, refusable: bool = False) -> dict:
    """One process: its wall time, peak resident set (MB, from ``os.wait4``) and what it printed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd, env={**os.environ, **ENV, **(env or {})})
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        printed, errors = out.read().decode(), err.read().decode()
    if process.returncode != 0 and refusable:  # the verb refused the file or failed: said in the table
        cpu = usage.ru_utime + usage.ru_stime
        return {"s": seconds, "cpu": cpu, "mb": usage.ru_maxrss / 1024, "err": errors, "code": process.returncode}
    if process.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{errors[-3000:]}")
    lines = printed.strip().splitlines()
    cpu = usage.ru_utime + usage.ru_stime
    return {"s": seconds, "cpu": cpu, "mb": usage.ru_maxrss / 1024, "out": lines[-1] if lines else "", "err": errors}


def timed(
    command: list[str], repeat: int, env: dict | None = None, fresh: Path | None = None, cwd: Path = ROOT, **kw
) -> dict:
    """The median run of ``repeat`` (by time), each its own process; ``fresh``: an output removed before each."""
    runs = [
        (fresh.unlink(missing_ok=True) if fresh else None, measure(command, env, cwd, **kw))[1] for _ in range(repeat)
    ]
    return sorted(runs, key=lambda r: r["s"])[len(runs) // 2]


def written(result: dict) -> int:
    """The cases ``import`` says it wrote."""
    line = [x for x in result["err"].splitlines() if x.startswith("wrote ")][-1]
    return int(line.split(": ", 1)[1].split(" case(s)")[0])


def runlens(file: Path, work: Path, repeat: int, before: Path | None) -> dict[str, dict]:
    """RunLens's import (and the import of ``before``), recompute and export of the imported run."""
    py = [sys.executable, "-m", "reporting"]
    run, found = work / "run.json", {}
    found["import"] = timed([*py, "import", str(file), "-o", str(run)], repeat, fresh=run)
    found["import"]["count"] = written(found["import"])
    if before is not None:
        old = work / "before.json"
        found["import (before)"] = timed(
            [sys.executable, "-c", BEFORE, str(file), "-o", str(old)], repeat, {"PYTHONPATH": str(before)}, old, before
        )
        found["import (before)"]["count"] = written(found["import (before)"])
        old.unlink()
    found["recompute"] = timed([*py, "recompute", str(run), "-o", str(work / "recomputed.json")], repeat, refusable=1)
    found["export"] = timed([*py, "export", str(run), "-o", str(work / "report.html")], repeat, refusable=True)
    # the columnar way end to end: the run imported as a Parquet case table, its figures and table recomputed as such
    table_run = work / "run.parquet"
    found[PARQUET] = timed([*py, "import", str(file), "-o", str(table_run)], repeat, fresh=table_run)
    found[PARQUET]["count"] = written(found[PARQUET])
    figures = [*py, "recompute", str(table_run), "--format", "parquet", "-o", str(work / "figures.json")]
    found[PARQUET_RECOMPUTE] = timed(figures, repeat, refusable=True)
    return found


PARQUET, PARQUET_RECOMPUTE = "import -o RUN.parquet", "recompute RUN.parquet --format parquet"


def inspect_rows(n: int, python: str, repeat: int, before: Path | None, work: Path) -> tuple[dict, Path]:
    path = inspect_file(python, n)
    found = {"floor": timed([sys.executable, "-c", FLOOR_ZIP, str(path)], repeat)}
    if n <= WHOLE_UP_TO:
        found["read_eval_log"] = timed([python, "-c", INSPECT_READ, str(path)], repeat)
        found["samples_df"] = timed([python, "-c", INSPECT_DF, str(path)], repeat)
    else:  # the log's own count: its sample summaries and its header, as Inspect reads them
        found["sample summaries"] = timed([python, "-c", INSPECT_COUNT, str(path)], repeat)
    streamed = work / "streamed.json"
    found.update(runlens(path, work, repeat, before))
    if n <= WHOLE_UP_TO:  # (the import verb streams the log too: timed apart up to this size)
        found["import, streamed"] = timed(
            [sys.executable, "-c", STREAMED, str(path), str(streamed)], repeat, fresh=streamed
        )
    own = "read_eval_log" if n <= WHOLE_UP_TO else "sample summaries"
    samples, completed = map(int, found[own]["out"].split())
    counts = {
        own: samples,
        "completed_samples": completed,
        **({"samples_df": int(found["samples_df"]["out"])} if n <= WHOLE_UP_TO else {}),
        "import": found["import"]["count"],
        PARQUET: found[PARQUET]["count"],
    }
    if "import, streamed" in found:
        counts["import, streamed"] = int(found["import, streamed"]["out"].split()[0])
    assert len(set(counts.values())) == 1, counts  # every count is the log's own
    drift = [x for x in found["import"]["err"].splitlines() if "score is" in x]
    assert not drift, drift  # Inspect's own figures, recounted
    return found, path


def garak_rows(n: int, python: str, repeat: int, before: Path | None, work: Path) -> tuple[dict, Path]:
    path = garak_file(n)
    found = {"floor": timed([sys.executable, "-c", FLOOR_LINES, str(path)], repeat)}
    found["report_digest"] = timed([python, "-c", GARAK_DIGEST, str(path)], repeat)
    found.update(runlens(path, work, repeat, before))
    own: dict[str, int] = {}  # garak's own count: generations per probe, from its eval lines
    with open(path) as handle:
        for line in handle:
            if '"entry_type": "eval"' in line[:40]:
                record = json.loads(line)
                total = record["passed"] + record["fails"] + record["nones"]
                own[record["probe"]] = max(own.get(record["probe"], 0), total)
    assert found["import"]["count"] == found[PARQUET]["count"] == sum(own.values()), (found["import"]["count"], own)
    assert "eval line for" not in found["import"]["err"], found["import"]["err"][-2000:]
    return found, path


def table(tool: str, n: int, path: Path, found: dict) -> list[str]:
    size = path.stat().st_size / 2**20
    first = f"| {tool} {path.suffix[1:] if tool == 'Inspect' else 'report.jsonl'}, {n:,} ({size:,.0f} MB) "
    rows = []
    for i, (work, r) in enumerate(found.items()):
        said = "" if "out" in r else " (failed: " + " ".join(r["err"].strip().splitlines()[-2:])[-120:] + ")"
        rows.append(f"{first if i == 0 else '| '}| {work}{said} | {r['s']:.1f} | {r['cpu']:.1f} | {r['mb']:,.0f} |")
    return rows


def ratios(tool: str, n: int, found: dict) -> list[str]:
    """The issue's targets, as measured: import + recompute against the peer's own reader, and their memory."""
    peer = "samples_df" if tool == "Inspect" else "report_digest"
    rows = []
    for name in ("import (before)", "import", "import, streamed", PARQUET):
        then = PARQUET_RECOMPUTE if name == PARQUET else "recompute"
        if "out" not in found.get(name, {}) or "out" not in found[then]:
            continue
        wall = found[name]["s"] + found[then]["s"]
        cpu = found[name]["cpu"] + found[then]["cpu"]
        memory = max(found[name]["mb"], found[then]["mb"]) / 1024
        name = f"{name} + {then}" if name == PARQUET else f"{name} + recompute"
        if peer not in found:  # (Inspect's whole readers not run at this size)
            rows.append(f"| {tool} {n:,}: {name} | {cpu:.1f} s CPU, {wall:.1f} s wall | {memory:.2f} GB |")
            continue
        rows.append(
            f"| {tool} {n:,}: {name} vs {peer} | x{cpu / found[peer]['cpu']:.2f} CPU ({cpu:.1f} s / "
            f"{found[peer]['cpu']:.1f} s), x{wall / found[peer]['s']:.2f} wall | {memory:.2f} GB |"
        )
    export, failed = found["export"], "" if "out" in found["export"] else " (failed)"
    said = f"{export['cpu']:.1f} s CPU, {export['s']:.1f} s wall | {export['mb'] / 1024:.2f} GB"
    rows.append(f"| {tool} {n:,}: export{failed} | {said} |")
    return rows


def worktree(ref: str | None) -> Path | None:
    """A checkout of ``ref`` (an earlier RunLens) in a temporary folder, for its import verb."""
    if ref is None:
        return None
    where = Path(tempfile.mkdtemp(prefix="runlens-before-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), ref], check=True)
    return where


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--million", action="store_true", help="also 1,000,000 cases (hours, and tens of GB)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each work; the median is kept")
    parser.add_argument("--before", metavar="REF", help="also time the import verb of this earlier commit")
    parser.add_argument("--tools", nargs="+", choices=("inspect", "garak"), default=["inspect", "garak"])
    parser.add_argument("--inspect-python", metavar="PY")
    parser.add_argument("--garak-python", metavar="PY")
    args = parser.parse_args()
    sizes = args.sizes + ([1_000_000] if args.million else [])
    DATA.mkdir(parents=True, exist_ok=True)
    before = worktree(args.before)
    pythons = {tool: peer_python(tool, getattr(args, f"{tool}_python")) for tool in args.tools}
    versions = {
        tool: f"{PEERS[tool].split('==')[0]} {version(py, PEERS[tool].split('==')[0])}" for tool, py in pythons.items()
    }
    try:
        for n in sizes:  # every tool at one size before the next size: the section is written after each
            for tool, python in pythons.items():
                with tempfile.TemporaryDirectory() as work:
                    reader = inspect_rows if tool == "inspect" else garak_rows
                    found, path = reader(n, python, args.repeat, before, Path(work))
                name = "Inspect" if tool == "inspect" else "garak"
                measured, against = table(name, n, path, found), ratios(name, n, found)
                print("\n".join(measured + against), flush=True)
                _keep(tool, n, {"rows": measured, "targets": against, "version": versions[tool]}, args)
    finally:
        if before is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)


def _keep(tool: str, n: int, measured: dict, args) -> None:
    """The last measurement of each tool and size (bench/data/peers/measured.json, so that sizes measured by
    separate runs make one table), and the section written from them all, under a lock."""
    import fcntl

    from _results import write_section

    with open(DATA / "measured.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        store = DATA / "measured.json"
        kept = json.loads(store.read_text()) if store.exists() else {}
        kept[f"{tool} {n:09d}"] = {**measured, "repeat": args.repeat, "before": args.before}
        store.write_text(json.dumps(kept, indent=1))
        chosen = [kept[key] for key in sorted(kept, key=lambda k: (k.split()[1], k.split()[0]))]
        write_section("peers", _body(chosen))


def _body(kept: list[dict]) -> str:
    versions = sorted({k["version"] for k in kept})
    repeats = sorted({str(k["repeat"]) for k in kept})
    befores = sorted({f"`{k['before']}`" for k in kept if k["before"]})
    rows = [row for k in kept for row in k["rows"]]
    targets = [row for k in kept for row in k["targets"]]
    return (
        "## Peers' own readers (`bench/bench_peers.py`)\n\n"
        f"Peers: {', '.join(versions)}, each in a virtual environment of its own. Inspect: an `.eval` written by\n"
        "Inspect's own writer (its `EvalRecorder`, as `write_eval_log` uses it, its buffer written every 1,000\n"
        "samples) from the 20 real samples of `cli_mockllm_default.eval` repeated (fresh ids and uuids); garak:\n"
        "the real attempts of `peers_repeat_small.report.jsonl` repeated (fresh uuids and seq), eval lines\n"
        "multiplied to match. Each work is its own process: wall and CPU time and peak resident set\n"
        "(`os.wait4`); ratios of CPU time (the machine was shared: wall time is inflated by others' work),\n"
        f"median of {'/'.join(repeats)}. Floor: unzip + `json.loads` of every member / `json.loads` of every line.\n"
        f"`import (before)`: the import verb of {', '.join(befores) or '-'} (a git worktree; its limit of 100,000\n"
        "members lifted: it refused a 100,000-sample log); `import, "
        "streamed`: `stream_inspect_file` written out as `import` writes a run (the verb once it streams an Inspect\n"
        "log as it streams a garak report). Every count equals the tool's own (the log's samples, `samples_df`'s\n"
        "rows; garak's eval lines), and the import finds no drift from the tool's figures. RunLens runs with\n"
        "`RUNLENS_MAX_FILE_MB=65536` (a report of 1M garak cases is 2.3 GB, above the default 2 GB cap). Inspect's\n"
        f"readers of whole samples run up to {WHOLE_UP_TO:,} samples (`read_eval_log` held 8.7 GB there); above\n"
        "it the log's count is Inspect's `read_eval_log_sample_summaries` and its header's `completed_samples`.\n\n"
        "| file | work | wall s | CPU s | peak MB |\n|---|---|---:|---:|---:|\n" + "\n".join(rows) + "\n\n"
        "Against the issue's targets (Inspect 100k: import + recompute <= x0.7 of `samples_df`, <= 1.5 GB; garak 1M:\n"
        "import + recompute <= x0.5 of `report_digest`, <= 2 GB; export <= 30 s, <= 2.5 GB; Inspect 1M: import +\n"
        "recompute works, <= 3 GB):\n\n"
        "| work | time | peak memory |\n|---|---|---|\n" + "\n".join(targets)
    )


if __name__ == "__main__":
    main()
