"""The columnar reader on the runs `import` writes (issues 28 and 34): judges' verdicts and version 3 fields read by
columns, against the per-record reader, at 100k and 1M garak cases.

    python bench/bench_columnar_v3.py [--sizes 100000 1000000] [--repeat 1] [--conversations 100000]

Files (``bench/data/columnar_v3``, kept between runs): ``garak-N.json`` is what ``runlens import`` writes of the garak
report ``bench/bench_peers.py`` makes (the real attempts of ``tests/fixtures/garak/peers_repeat_small.report.jsonl``,
garak 0.17.1, repeated with fresh uuids: every case has verdicts, strategy, plugin and 8 tags); ``garak-N-bare.json``
is the same run without its verdicts (what the verdicts cost). ``--conversations N``: also the synthetic run of N
cases with 8 turns each of ``bench/bench_conversations.py`` (version 3 ``messages``, ``judged_turn``, ``strategy``).

Each work is its own process, timed after its imports (CPU time, which others' work on the machine does not
inflate, and wall time), its peak resident set from ``os.wait4`` (imports included):

- floor: ``json.load`` of the file, nothing checked;
- read_table: ``reporting.format.columnar.read_table``, the case table (every column);
- load_run: the per-record reader (pydantic models per case: ``reporting.format.reading.load_document`` under a
  paused collector, as ``reporting.load_run`` read a RunLens file before it asked the columnar reader first);
- load_run + case_table: the per-record way to the same table.

Every read is checked: the columnar reader reads the run (never hands it back) and both count the same cases.
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
DATA = HERE / "data" / "columnar_v3"
ENV = {"RUNLENS_MAX_FILE_MB": "65536", "PYTHONWARNINGS": "ignore"}  # the 1M garak report is 2.3 GB
WORKS = ("floor", "read_table", "load_run", "load_run + case_table")


def garak_run(n: int) -> Path:
    """The run `import` writes of an n-case garak report (made by bench_peers, kept in its folder)."""
    path = DATA / f"garak-{n}.json"
    if not path.exists():
        from bench_peers import garak_file

        DATA.mkdir(parents=True, exist_ok=True)
        tmp = DATA / f"garak-{n}.tmp.json"
        command = [sys.executable, "-m", "reporting", "import", str(garak_file(n)), "-o", str(tmp)]
        subprocess.run(command, check=True, cwd=ROOT, env={**os.environ, **ENV})
        os.replace(tmp, path)
    return path


def bare_run(n: int) -> Path:
    """The same run without its verdicts, rewritten 100,000 cases at a time (each case's fields kept as raw bytes)."""
    import msgspec

    path = DATA / f"garak-{n}-bare.json"
    if path.exists():
        return path
    data = garak_run(n).read_bytes()
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    cases = msgspec.json.decode(top.pop("cases"), type=list[msgspec.Raw])
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        out.write(b"{" + b", ".join(b'"%s": %s' % (k.encode(), bytes(v)) for k, v in top.items()) + b', "cases": [')
        for at in range(0, len(cases), 100_000):
            chunk = msgspec.json.decode(b"[" + b",".join(cases[at : at + 100_000]) + b"]", type=list[dict])
            for case in chunk:
                case.pop("verdicts", None)
            out.write((b"," if at else b"") + b",".join(msgspec.json.encode(case) for case in chunk))
        out.write(b"]}")
    os.replace(tmp, path)
    return path


def conversation_run(n: int) -> Path:
    from bench_conversations import data_file

    return data_file(n, turns=True)


MAKERS = {"garak": garak_run, "bare": bare_run, "conversations": conversation_run}


def prepared(kind: str, n: int) -> Path:
    """The file, made (if missing) in a process of its own: a child forked from a parent that had read a large file
    would report the parent's resident set as its own peak (Linux keeps the high-water mark across exec)."""
    command = [sys.executable, __file__, "--make", kind, str(n)]
    done = subprocess.run(command, check=True, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **ENV})
    return Path(done.stdout.strip().splitlines()[-1])


def child(work: str, path: str) -> dict:
    """One work on one file, in this process; what it read and how long it took after its imports."""
    from reporting._gc import gc_paused
    from reporting.format.columnar import read_table
    from reporting.format.parquet import case_table
    from reporting.format.reading import load_document

    def load_run(path: str):
        """The per-record reader as ``reporting.load_run`` ran it before it asked the columnar reader first."""
        with gc_paused():
            with open(path, "rb") as handle:
                return load_document(path, [handle.read()])

    read_table(str(ROOT / "tests" / "fixtures" / "format" / "v3.json"))  # Arrow's and msgspec's first-call set-up
    wall, cpu = time.perf_counter(), time.process_time()
    if work == "floor":
        with open(path, "rb") as handle:
            cases = len(json.load(handle)["cases"])
    elif work == "read_table":
        run = read_table(path)
        assert run is not None, "the columnar reader handed the run back"
        cases = run.cases
    else:
        result = load_run(path)
        assert result.ok, result.problems[:3]
        cases = len(result.run.cases)
        if work == "load_run + case_table":
            cases = case_table(result.run).num_rows
    return {"s": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "cases": cases}


def measure(work: str, path: Path) -> dict:
    with tempfile.TemporaryFile() as out:
        command = [sys.executable, __file__, "--child", work, str(path)]
        process = subprocess.Popen(command, stdout=out, cwd=ROOT, env={**os.environ, **ENV})
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {work} on {path}")
        out.seek(0)
        found = json.loads(out.read().decode().strip().splitlines()[-1])
    return {**found, "mb": usage.ru_maxrss / 1024}


def timed(work: str, path: Path, repeat: int) -> dict:
    runs = sorted((measure(work, path) for _ in range(repeat)), key=lambda r: r["cpu"])
    return runs[len(runs) // 2]


def rows(label: str, path: Path, repeat: int) -> dict:
    found = {work: timed(work, path, repeat) for work in WORKS}
    counts = {r["cases"] for r in found.values()}
    assert len(counts) == 1, f"the works read different numbers of cases: {found}"
    return {"label": label, "size": path.stat().st_size, "cases": counts.pop(), "works": found}


def table(measured: list[dict]) -> str:
    lines = [
        "| run | cases | file MB | work | wall s | CPU s | x floor (CPU) | peak MB |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for m in measured:
        floor = m["works"]["floor"]["cpu"]
        for i, work in enumerate(WORKS):
            r = m["works"][work]
            head = f"| {m['label']} | {m['cases']:,} | {m['size'] / 1e6:,.0f} |" if i == 0 else "| | | |"
            lines.append(f"{head} {work} | {r['s']:.1f} | {r['cpu']:.1f} | x{r['cpu'] / floor:.2f} | {r['mb']:,.0f} |")
    return "\n".join(lines)


def summary(measured: list[dict]) -> str:
    out = []
    for m in measured:
        w = m["works"]
        fast, slow, table_ = w["read_table"], w["load_run"], w["load_run + case_table"]
        line = (
            f"- {m['label']}, {m['cases']:,} cases: read_table {fast['cpu']:.1f} s CPU / {fast['mb']:,.0f} MB against "
            f"load_run {slow['cpu']:.1f} s / {slow['mb']:,.0f} MB (x{fast['cpu'] / slow['cpu']:.2f} the time, "
            f"x{fast['mb'] / slow['mb']:.2f} the peak) and load_run + case_table {table_['cpu']:.1f} s / "
            f"{table_['mb']:,.0f} MB (x{fast['cpu'] / table_['cpu']:.2f}, x{fast['mb'] / table_['mb']:.2f})"
        )
        out.append(line + ".")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--conversations", type=int, nargs="*", default=[100_000])
    parser.add_argument("--child", nargs=2, metavar=("WORK", "PATH"))
    parser.add_argument("--make", nargs=2, metavar=("KIND", "N"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.make:
        print(MAKERS[args.make[0]](int(args.make[1])))
        return
    measured = []
    for n in args.sizes:
        measured.append(rows("garak import", prepared("garak", n), args.repeat))
        measured.append(rows("garak import, verdicts removed", prepared("bare", n), args.repeat))
        print(table(measured), flush=True)
    for n in args.conversations:
        measured.append(rows("conversations, 8 turns", prepared("conversations", n), args.repeat))
    from _results import write_section

    body = (
        "## The columnar reader on imported runs (`bench/bench_columnar_v3.py`, issues 28 and 34)\n\n"
        "Runs `runlens import` writes of garak reports (bench_peers' replicated real report: each case with its\n"
        "detectors' verdicts, strategy, plugin and 8 tags), the same runs with their verdicts removed (what reading\n"
        "the verdicts costs: msgspec over each case's raw bytes), and a synthetic run whose cases carry 8 turns.\n"
        "Each work is its own process, timed after its imports; CPU time (the machine was shared), median of\n"
        f"{args.repeat}; peak resident set of the process. Floor: `json.load` of the file. `read_table`: the\n"
        "columnar reader's case table; `load_run`: the per-record reader (pydantic models); `load_run + case_table`:\n"
        "the per-record way to the same table. Every work read every case.\n\n"
        f"{table(measured)}\n\n{summary(measured)}\n"
    )
    write_section("columnar_v3", body)
    print(body)


if __name__ == "__main__":
    main()
