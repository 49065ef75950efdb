"""The section of bench/RESULTS.md that bench/bench_columnar_core.py writes: issue 28's targets table, one column
per run of the bench (each run's results kept in bench/data/core28_runs.json, so a later run sits beside the
earlier one), then each run's 10M dashboard steps and the Spark check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
RUNS = HERE / "core28_runs.json"  # committed beside RESULTS.md: a run on a fresh machine adds its column to them

# work, the issue's "before", the target
TABLE = (
    ("api100k", "100k: `read_run` + `aggregate_metrics` vs `json.load`", "x1.93", "<= x0.6"),
    ("api1m", "1M: `read_run` + `aggregate_metrics`", "x2.6, 3.2 GB", "<= x1.1, <= 2.0 GB"),
    (
        "recompute",
        "1M: `python -m reporting recompute RUN -o OUT.json`",
        "117 s, 3.85 GB",
        "<= x3 `json.load`, <= 2.5 GB",
    ),
    ("export", "1M: `python -m reporting export RUN -o OUT.html`", "76 s, 4.6 GB", "<= 30 s, <= 2.5 GB"),
    (
        "app1m",
        "1M: dashboard open / filter change / peak",
        "35-43 s / 0.47 s / 4.1 GB",
        "<= 10 s / <= 0.3 s / <= 2.5 GB",
    ),
    (
        "app10m_parquet",
        "10M Parquet: dashboard open, filter, every page",
        "impossible",
        "opens, filter <= 1 s, <= 4 GB",
    ),
    (
        "app10m_jsonl",
        "10M JSON Lines: dashboard open, filter, every page",
        "impossible",
        "opens, filter <= 1 s, <= 4 GB",
    ),
    ("spark", "store figures on Spark vs DuckDB (1M run)", "equal to 1e-9", "equal, from the same SQL text"),
)


# What the runs found beyond the table (profiles by py-spy from a scratch environment, on the 100k run).
NOTES = """
What changed on 2026-11-27 (each a commit; resident memory read every 0.5 s with the main thread's stack, py-spy
profiles from a scratch environment):

- Export made a record of every case to keep 100,000 of them for the page: now only the held cases are made,
  taken from the table by their rows (`TableCases.dumped`: Arrow's `take`, never every chunk). The worst-case
  order is computed once a report (`Report.worst_order`, three engine passes before).
- Observability above 20,000 cases is the stratified sample's geometry (20,000 cases, the dashboard scatter's cap):
  embedding every case of a 1M run through the fitted TF-IDF/SVD took 60-80 s of `recompute` and `export`
  (docs/metrics.md says what the sample covers; `assign_all=True` keeps the old way).
- The case frame shares one `str` per distinct text of a table chunk (`table_frame._shared_texts`), one decoded
  value per distinct `extra` text and one judge -> Verdict mapping per distinct row of verdicts. On this bench's
  synthetic run the texts repeat a great deal (100,000 cases hold 24 distinct tasks, 250 inputs, 51 responses,
  10,405 explanations), so its memory gain is larger than on a run whose every response differs; on the garak
  import (bench_peers) the tags, strategies and verdicts repeat as they do in garak's own report.
- One-line JSON (recompute's cases of a large run, every import) encoded by msgspec; a regular file read at one
  read of its size (no second copy when the pieces were joined); an empty file told without copying the file
  (`data.strip()` copied it when it ended in a newline).
- A filter change: framework figures tallied by whole columns (`analysis/framework_tally.py`), failing case ids
  taken from one array; the risk box groups four columns, not the whole frame.
- A Parquet case table of several row groups is read a group at a time (the finding below).
- (20:20 column) A JSON document is parsed two chunks ahead in threads of their own (Arrow's parser runs without
  Python's lock) while the main thread reads the previous chunk's keys; a chunk Arrow parses refusing any key its
  schema does not name has no extras and nothing nested, and skips msgspec's decoding of every case's keys; the
  garak and hit-log detectors search a one-line document's first line in place instead of copying it (894 MB,
  twice); scikit-learn and scipy.stats are imported when used, not when the dashboard opens (3.8 s to 1.7 s of
  imports). `load_run` of the 1M file alone: 20.3 s to 10.2 s. The dashboard's open is now about 10 s of reading
  and 5.3 s of `make_run_data` (the case frame 3.6 s of it) and 1.6 s of the first view.
- (21:08 column, measurement only) The dashboard on 10M cases: stopped at the bench's 9 GB cap, after 131 s on
  the Parquet table (read a row group at a time, then the case frame) and after 34 s on the 9 GB JSON Lines file
  (read whole into memory first, as the finding below says). Neither opens within the target's 4 GB: the
  dashboard still builds a pandas case frame of every case.
- (23:07 column, a990ce3) The machine was slower than at 20:20 (the same `json.load` took 19.4 s, not 12.2 s:
  perhaps another tenant's work), so read this column by its ratios and its memory, not its seconds. Since 20:20: a
  writer makes each case's record from the table a column at a time (`table_records.dumped_rows`: lists from their
  offsets, verdicts from their struct fields, one `dict(zip())` a case, unused fields never put in); `recompute`
  of a large run writes its cases' JSON over whole columns (`format/case_lines.py`, 4,096 cases a chunk; the same
  bytes as the per-case writer); the case frame's list columns are made from their offsets, every empty list one
  shared list. On the 100k run the write of the cases took 1.31 s -> 0.98 s (best of 3 each, one process).

- (02:18 UTC (11-28) column, 75e6ace) Rows of the case frame shared: each list column's and the verdicts'
  distinct rows made into Python objects once (rows told apart by their items' numbers; a null row kept apart from
  an empty one), the version 3 fields and unknown extras once per distinct `extra` text; the reader decodes each
  distinct verdicts text once, and a document's top and its cases' raw bytes in one pass; texts escaped once per
  distinct text where they repeat (`per_distinct`); a view's framework figures read the failing ids only as far
  as shown and take the kept cases as object arrays; the dashboard looks for a file's models in its head, not by
  reading the file once more. The machine was noisy again: the 100k floor took 1.74 s (1.15 s at 01:30, 1.45 s
  at 02:03), which flatters the 100k ratio (x0.66; x0.84 and x1.50 in two runs during the same hour, dropped from
  this table as measured with tests running or a slow host). The synthetic run's lists repeat (its failure
  modes), so the frame's gain here is mostly memory: the dashboard's peak 2.68 -> 2.26 GB; export now meets both
  of its targets (28 s, 2.10 GB).
- (02:55 UTC (11-28) column, 9a8e36a, measurement only) The dashboard on 10M cases still stops at the bench's 9 GB
  cap: after 140 s on the Parquet table and 51 s on the JSON Lines file (131 s and 34 s at 21:08). Sharing the
  frame's rows does not change this: the frame still holds a row of Python object pointers per case.

Findings of the first run (2026-11-25, profiles by py-spy from a scratch environment, 17:58-18:37 UTC):

- A Parquet case table of more than one row group is refused by every verb and the dashboard: "not a readable
  Parquet file: Nested data conversions not implemented for chunked array outputs". `reporting/format/parquet.py`
  `_read_table` asks pyarrow for dictionary arrays (`read_dictionary`) of every text column, the list columns'
  elements (`detected_failure_modes.list.element`, `verdicts.list.element.judge`, ...) included, which pyarrow
  cannot return chunked. Seen on a 200,000-case table written with two row groups (0.1 s to the refusal); the
  10M table (10 row groups) read with dictionaries for the top-level texts only: 30 s, 3.4 GB peak.
  `pq.write_table` starts a new row group every 1,048,576 rows, so `recompute --format parquet` of a larger run
  writes a file RunLens then refuses. (With the default cap the 10M table is refused earlier, clearly: "expands
  to more than 2,147 MB: the size cap".)
- 10M JSON Lines in the dashboard: the whole 9 GB file is read into memory first (stopped at 9 GB resident
  after about a minute); the streaming reader (`read_table(columns=...)`, bench_scale) is not what the app uses.
- 100k `read_run` (4.6 s of 6.0 s, machine loaded): Arrow's JSON parse 27 %, `columnar_v3.case_keys` (msgspec:
  every case's keys as raw values) 23 %, `columnar_v3._nested` (per-case Python loops over those keys, for
  verdicts/messages/limit/extras a synthetic run does not have) 16 %, reading the bytes 7 %, content sniffing of
  other tools' formats before the columnar path (`import_document`: garak hit log, garak, promptfoo) 6 %.
- 100k `aggregate_metrics` (1.4 s): `cases_frame` 69 % (`table_frame.table_columns`: every text and list column
  turned into Python objects per case), then the engine rebuilds an Arrow table from that frame
  (`engine.case_table` + `Session`: 19 %): table -> pandas -> table for figures that need seven columns.
- 100k `recompute` (17:58): observability 38 %, writing 29 % (`serialise.iter_case_records`: each row made a
  pydantic `Case` by `TableCases` (18 %) and dumped back to JSON).
- 1M `export` (18:24, 195 s; resident memory every 6 s with the stack): read 0-45 s (1.0-1.8 GB; the whole file's
  bytes first), case frame 2.5 GB, observability 55-135 s (fit on a sample, then every case's text through
  TF-IDF/SVD in chunks: about 60 s), then the case records for the page (`TableCases.dumped`,
  `serialise.case_columns`: every case as a dict at once) take resident memory from 3.1 to 5.3 GB: the peak.
- 1M dashboard (18:28, open 41 s): hashing the 0.9 GB file 5 s, reading it (bytes, Arrow parse, checks) 25 s,
  the case frame (3.45 GB resident at `table_columns`), frameworks, the report; the importers' sniffing runs on
  the file again to list its models (`models_cached` -> `detect`: 6 % of the samples). A view's rebuild
  (`view_cached` -> `build_report`, what a filter change runs): framework figures 42 % (`report/frameworks.
  column_figures` -> `analysis/frameworks.framework_figures`, `kept_cases` per column), `aggregate_metrics` 26 %,
  pandas boolean takes 8 %.
- bench_scale's 10M JSON Lines through the columnar reader: 4.18 GB peak at 18:35 (3.29 GB on 2026-11-23).
"""


def remember(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Add this run's results to the kept runs (a run with the same label is updated row by row)."""
    runs = json.loads(RUNS.read_text()) if RUNS.exists() else []
    for run in runs:
        if run.get("label") == results.get("label"):
            run.update(results)
            break
    else:
        runs.append(results)
    RUNS.parent.mkdir(exist_ok=True)
    RUNS.write_text(json.dumps(runs, indent=1))
    return runs


def gb(mb: float) -> str:
    return f"{mb / 1024:.2f} GB"


def _failed(row: dict) -> Optional[str]:
    return None if row.get("status") == "ok" else f"{row.get('status')} ({row.get('stderr', '')[-120:]!r})"


def cell(name: str, run: dict[str, Any]) -> str:
    row = run.get(name)
    if row is None:
        return "not run"
    if name in ("api100k", "api1m"):
        floor = run[name.replace("api", "floor")]
        if _failed(row):
            return _failed(row) or ""
        ratio = row["seconds"] / floor["seconds"]
        return f"x{ratio:.2f} ({row['seconds']:.2f} s / {floor['seconds']:.2f} s), {gb(row['peak_mb'])}"
    if name in ("recompute", "export"):
        floor = run["floor1m"]
        ratio = row["wall_s"] / floor["wall_s"]
        text = f"{row['wall_s']:.0f} s (x{ratio:.2f} `json.load` {floor['wall_s']:.1f} s), {gb(row['peak_mb'])}"
        return text if row["status"] == "ok" else f"{row['status']}: {text}"
    if name == "app1m":
        if _failed(row):
            return _failed(row) or ""
        change = f"{row['change_median_s']:.2f} s (max {row['change_max_s']:.2f})"
        return f"{row['open_s']:.1f} s / {change} / {gb(row['peak_mb'])}"
    if name.startswith("app10m"):
        steps = row.get("steps", [])
        if not steps:
            return f"{row['status']} after {row['wall_s']:.0f} s, peak {gb(row['peak_mb'])}"
        opened = steps[0]
        if "failed" in opened:
            return f"did not open: {opened['failed'][:100]} (peak {gb(row['peak_mb'])})"
        if opened.get("errors") and not opened.get("showing"):
            said = (opened.get("problems") or opened["errors"])[0]
            peak = gb(row["peak_mb"])
            return f"the page drew in {opened['seconds']:.0f} s with the run refused: {said[:200]!r} (peak {peak})"
        parts = [f"opened in {opened['seconds']:.0f} s"]
        if len(steps) > 1:
            parts.append(f"filter {steps[1]['seconds']:.2f} s" + (" (failed)" if "failed" in steps[1] else ""))
        pages = [s for s in steps if s["step"].startswith("page")]
        if pages:
            ok = [s for s in pages if "failed" not in s and not s.get("errors") and not s.get("exception")]
            slowest = max(pages, key=lambda s: s["seconds"])
            parts.append(
                f"{len(ok)} of {len(pages)} pages drawn without an error, slowest {slowest['step'][5:]} "
                f"{slowest['seconds']:.1f} s"
            )
        parts.append(f"peak {gb(row['peak_mb'])}")
        if row["status"] != "ok":
            parts.append(row["status"])
        return ", ".join(parts)
    if name == "spark":
        if "max_abs_diff" not in row:
            return row.get("spark") or row.get("status", "")
        return (
            f"max difference {row['max_abs_diff']:.1e} over {row['numbers']} numbers "
            f"({row['exactly_equal']} identical); one SQL text per aggregate: {row['same_sql_text_but_dialect']}"
        )
    return "?"


def section(results: dict[str, Any]) -> str:
    runs = remember(results)
    head = "| work | before (issue 28) | target | " + " | ".join(f"{r['label']}" for r in runs) + " |"
    lines = [
        "## Issue 28's targets: one columnar core (`bench/bench_columnar_core.py`)",
        "",
        "Each measurement in its own process; peak = that process's maximum resident set (`os.wait4`, interpreter",
        "and imports included). Floor: a bare `json.load` of the same file in its own process, measured in the",
        "same run (in-process time for the API rows, whole-process wall time for the command-line rows). API rows",
        "are timed after the imports (bench_scale's way; 100k best of 3, 1M once); command lines and the dashboard",
        "from process start. Dashboard: `bench/bench_app.py`'s AppTest (`run_size`) at 1M; at 10M the same AppTest",
        "on the file alone in a runs folder (`RUNLENS_MAX_FILE_MB` raised: the default 2 GB cap skips a 9 GB file),",
        "open, Outcome = fail, then every page with that filter. One column per run of this bench (label: when, which",
        "commit, the machine's load average at start: 2 cores, shared with other workers).",
        "",
        head,
        "|---|---|---|" + "---|" * len(runs),
    ]
    for name, work, before, target in TABLE:
        lines.append(f"| {work} | {before} | {target} | " + " | ".join(cell(name, r) for r in runs) + " |")
    lines += ["", NOTES.strip()]
    for run in runs:
        details = []
        for name in ("app10m_parquet", "app10m_jsonl"):
            row = run.get(name)
            if not row or not row.get("steps"):
                continue
            steps = ", ".join(
                f"{s['step']} {s['seconds']:.1f} s"
                + (f" (failed: {s['failed'][:80]})" if "failed" in s else "")
                + (f" (error box: {s['errors'][0][:80]})" if s.get("errors") else "")
                for s in row["steps"]
            )
            showing = next((s["showing"][0] for s in row["steps"] if s.get("showing")), "")
            details.append(f"- {row.get('file')} ({row.get('file_gb', 0):.1f} GB; sidebar: {showing!r}): {steps}")
        spark = run.get("spark")
        if spark and "duckdb_s" in spark:
            details.append(
                f"- Spark: DuckDB {spark['duckdb_s']:.1f} s, Spark {spark.get('spark_s', 0):.1f} s "
                f"(+{spark.get('spark_start_s', 0):.0f} s start), {spark['aggregates']} aggregates"
            )
        if details:
            lines += ["", f"{run['label']}:", ""] + details
    return "\n".join(lines)
