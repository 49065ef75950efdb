"""Where runs come from, cached loading, the sidebar (run choice, upload, filters), and the
current view that every page draws from. No figure is computed here: ``reporting.report.build`` does it."""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pandas as pd
import streamlit as st

from reporting.analysis.filters import Filters
from reporting.analysis.observability import DEFAULT_EMBEDDING, EMBEDDINGS
from reporting.format.folders import RUN_SUFFIXES
from reporting.format.problems import FileTooLarge, Problem, read_file_bytes, regular_file_head, unreadable
from reporting.format.reading import LoadResult
from reporting.format.schema import SEVERITIES
from reporting.report.build import build_report, make_run_data, with_geometry
from reporting.report.model import Report, RunData
from reporting.resources import sample_runs_dir
from reporting.sources.folders import Skipped, run_files
from reporting.sources.reading import load_run
from reporting.ui.live import LIVE_MARK, live_data, live_digest, progress_notice, watch_folder


def runs_dir(argv: Optional[list[str]] = None) -> Path:
    """`--runs DIR` after `--` on the streamlit command line, else $REPORTING_RUNS_DIR, else sample_runs/."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--runs")
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    folder = known.runs or os.environ.get("REPORTING_RUNS_DIR")
    if folder:
        return Path(folder)
    local = Path("sample_runs")
    has_runs = local.is_dir() and any(p.name.lower().endswith(RUN_SUFFIXES) for p in local.iterdir())
    return local if has_runs else sample_runs_dir()


@st.cache_data(max_entries=256, show_spinner=False)
def file_digest(path: str, mtime_ns: int, size: int) -> str:
    """Content hash of a file; re-read only when its time stamp or size changes."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


# cache_resource, not cache_data: a run of 100k cases would otherwise be pickled and copied on
# every rerun. The cached objects are treated as read-only by every page.
@st.cache_resource(max_entries=8, show_spinner="Loading and recomputing the run...")
def load_cached(
    digest: str, label: str, model: Optional[str], _read: Callable[[], bytes], _path: Optional[Path] = None
) -> RunData:
    return read_run_data(label, _read, model, _path)


@st.cache_data(max_entries=256, show_spinner=False)
def models_cached(digest: str, _read: Callable[[], bytes], _path: Optional[Path] = None) -> tuple[str, ...]:
    """The models of a file that holds several runs (a promptfoo file of several providers); () otherwise. A file
    on disk whose head already says it is not promptfoo's is not read whole."""
    from reporting.importers import run_models
    from reporting.importers.promptfoo import HEAD_DECIDES, looks_like_promptfoo

    try:
        found = None if _path is None else regular_file_head(_path, HEAD_DECIDES + (1 << 16))
        head = None if found is None else found[0]
        if head is not None:
            whole, at = len(head) < HEAD_DECIDES + (1 << 16), len(head) - len(head.lstrip())
            if (whole or at + HEAD_DECIDES <= len(head)) and not looks_like_promptfoo(head):
                return ()  # the head holds all that promptfoo's test reads
        return tuple(run_models(_read()))
    except Exception:  # noqa: BLE001 - the file's problem is shown when it is loaded
        return ()


def read_run_data(
    label: str, read: Callable[[], bytes], model: Optional[str] = None, path: Optional[Path] = None
) -> RunData:
    """A run as the dashboard holds it; any failure becomes a problem of that file, never an exception. A file of
    the runs folder (``path``) is read by its path, a regular file only, as ``read`` reads it: a large RunLens
    document then once, into memory given back as the cases are read (``reporting.sources.reading``)."""
    source: Any = path
    if path is None:
        try:
            source = read()
        except (OSError, FileTooLarge) as exc:
            return make_run_data(LoadResult(label, None, [unreadable(label, exc)]))
    try:
        return make_run_data(load_run(source, name=label, model=model, regular_only=True))
    except Exception as exc:  # noqa: BLE001 - one bad file must not take the dashboard down
        problem = Problem(label, "$", f"could not be read or computed: {type(exc).__name__}: {str(exc)[:200]}")
        return make_run_data(LoadResult(label, None, [problem]))


# Observability is computed only when a page or the download needs it, once per run and filters.
@st.cache_resource(max_entries=32, show_spinner=False)
def view_cached(digest: str, filters: Filters, _data: RunData) -> Report:
    return build_report(_data, filters=filters, with_observability=False)


@st.cache_resource(max_entries=16, show_spinner="Embedding and clustering the cases...")
def observability_cached(digest: str, filters: Filters, embedding: str, _view: Report) -> Report:
    return with_geometry(_view, embedding=embedding)


@st.cache_resource(max_entries=16, show_spinner="Comparing the runs...")
def comparison_cached(
    base_digest: str, candidate_digest: str, _base: RunData, _candidate: RunData, pair_on: str = "probe_id"
) -> tuple[dict, Any, Any, tuple[pd.DataFrame, pd.DataFrame]]:
    """The comparison, and the two runs and case frames it paired (one probe per text when ``pair_on`` is a
    text: runs of two tools, whose probe ids differ)."""
    from reporting.analysis.compare import compare_runs
    from reporting.analysis.metrics import cases_frame
    from reporting.analysis.pairing import paired_on

    if _base.run is None or _candidate.run is None:
        raise ValueError("both runs must be readable to compare them")
    if pair_on == "probe_id":
        base, candidate, frames = _base.run, _candidate.run, (_base.frame, _candidate.frame)
    else:
        base, candidate = paired_on(_base.run, pair_on), paired_on(_candidate.run, pair_on)
        frames = (cases_frame(base), cases_frame(candidate))
    return compare_runs(base, candidate, frames=frames), base, candidate, frames


@st.cache_resource(max_entries=16, show_spinner=False)
def trend_cached(digests: tuple[str, ...], suite: str, _runs: tuple[RunData, ...]) -> dict:
    """The trend of a suite over the loaded runs, from the figures each RunData holds; once per set of runs."""
    from reporting.analysis.compare import trend

    runs = [d for d in _runs if d.run is not None]
    return trend([d.run for d in runs if d.run is not None], suite=suite, metrics=[d.metrics for d in runs])


@st.cache_data(show_spinner=False)
def shipped_examples() -> list[dict]:
    """The self-contradiction rubric on the examples shipped with RunLens: they never change, so once a process."""
    from reporting.analysis.contradiction import check_examples
    from reporting.resources import examples_dir

    examples, _ = check_examples(examples_dir() / "contradiction")
    return examples


@dataclass
class Source:
    label: str
    digest: str
    read: Callable[[], bytes]
    path: Optional[Path] = None
    model: Optional[str] = None  # the run of this model, in a file that holds several


def one_per_run(sources: list[Source]) -> list[Source]:
    """A file that holds several runs (one per model) is one entry per run, labelled with the model."""
    expanded = []
    for source in sources:
        models = () if LIVE_MARK in source.digest else models_cached(source.digest, source.read, source.path)
        if len(models) < 2:
            expanded.append(source)
            continue
        for model in models:
            label = f"{source.label} [{model}]"
            digest = hashlib.sha256(f"{source.digest}\0{model}".encode()).hexdigest()
            expanded.append(Source(label, digest, source.read, source.path, model))
    return expanded


def folder_sources(folder: Path) -> tuple[list[Source], list[Skipped]]:
    """The runs of the folder (regular files only, size-capped, companions told by content) and what was skipped."""
    if not folder.is_dir():
        return [], []
    paths, skipped = run_files(folder)
    sources = []
    for path in paths:
        try:
            stat = path.stat()
            digest = live_digest(path, stat) or file_digest(str(path), stat.st_mtime_ns, stat.st_size)
        except OSError:
            digest = f"unreadable:{path}"
        sources.append(Source(path.name, digest, functools.partial(read_file_bytes, path, regular_only=True), path))
    return sources, skipped


def _constant(data: bytes) -> Callable[[], bytes]:
    return lambda: data


def upload_sources(files) -> list[Source]:
    sources = []
    for upload in files or []:
        data = upload.getvalue()
        sources.append(Source(f"{upload.name} (uploaded)", hashlib.sha256(data).hexdigest(), _constant(data)))
    return sources


@dataclass
class Context:
    folder: Path
    runs: list[tuple[Source, RunData]]
    current: Optional[tuple[Source, RunData]]
    view: Optional[Report]
    skipped: list = field(default_factory=list)
    judged: Optional[RunData] = None  # the run as judged, when the sidebar shows the figures as reviewed

    def with_geometry(self) -> Report:
        """The current report with observability computed (cached per run and filters)."""
        if self.current is None or self.view is None:
            raise RuntimeError("no run is selected")
        source, _ = self.current
        return observability_cached(source.digest, self.view.filters, self.embedding(), self.view)

    def embedding(self) -> str:
        """The embedding chosen on the Observability page (the default until one is chosen)."""
        chosen = st.session_state.get("embedding", DEFAULT_EMBEDDING)
        return chosen if chosen in EMBEDDINGS else DEFAULT_EMBEDDING

    def observability(self) -> Mapping[str, Any]:
        return self.with_geometry().observability_or_reason


def clear_filters(key: str) -> None:
    """Every filter of this run back to 'everything' (a callback: it runs before the widgets are drawn again)."""
    for name, empty in (("cat", []), ("sev", []), ("out", "all"), ("mode", []), ("text", ""), ("strat", [])):
        st.session_state[f"f_{name}_{key}"] = empty


def _filters_sidebar(data: RunData, digest: str) -> Filters:
    st.sidebar.subheader("Filters")
    key = digest[:12]
    # the run's categories as its figures name them (counted once when the run was loaded), not a scan per rerun
    names = sorted(data.metrics["by_category"])
    categories = st.sidebar.multiselect("Category", names, key=f"f_cat_{key}")
    severities = st.sidebar.multiselect("Severity", list(SEVERITIES), key=f"f_sev_{key}")
    outcome = st.sidebar.radio("Outcome", ["all", "pass", "fail"], horizontal=True, key=f"f_out_{key}")
    modes = st.sidebar.multiselect("Failure mode", data.failure_mode_names, key=f"f_mode_{key}")
    # Attack strategies, where the run names them (schema version 3), as its figures count them.
    strategy_names = sorted(data.metrics.get("by_strategy") or {})
    strategies = st.sidebar.multiselect("Strategy", strategy_names, key=f"f_strat_{key}") if strategy_names else []
    text = st.sidebar.text_input("Search probe id, category, task, input, response, every turn", key=f"f_text_{key}")
    st.sidebar.button("Clear filters", key=f"f_clear_{key}", on_click=clear_filters, args=(key,))
    return Filters(
        tuple(categories),
        tuple(severities),
        None if outcome == "all" else outcome,
        tuple(modes),
        text,
        strategies=tuple(strategies),
    )


def run_description(label: str, data: RunData) -> str:
    """How the run picker names a run: the file, and the tool and model that made it (widget options are shown
    as plain text, never Markdown)."""
    run = data.run
    if run is None:
        return f"{label} (cannot be read)"
    source = run.run.source
    tool = f"{source.tool} {source.tool_version or ''}".strip() if source is not None else "RunLens format"
    return f"{label} | {tool} | {run.run.model}"


def opening_run(runs: list[tuple[Source, RunData]]) -> int:
    """The run the dashboard opens on: the newest that reads without a problem and has cases (by the run's own
    time, ``created_at``, else its file's modification time; an upload is newer than any file; ties: first by
    name); else the first that reads; else the first. A broken file first in the folder is listed in the error box
    of every page, not shown alone, and an empty run beside a full one is not what a reader came to see."""
    from datetime import datetime, timezone

    def newness(source: Source, data: RunData) -> float:
        created = data.run.run.created_at if data.run is not None else None
        if created is not None:  # ISO 8601, checked by the schema; without a zone, UTC
            when = datetime.fromisoformat(created.replace("Z", "+00:00").replace("z", "+00:00"))
            return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()
        if source.path is None:
            return float("inf")
        try:
            return source.path.stat().st_mtime
        except OSError:
            return float("-inf")

    good = [i for i, (_, d) in enumerate(runs) if d.run is not None and not d.result.problems]
    full = [i for i in good if (run := runs[i][1].run) is not None and run.cases]
    if full:
        return max(full, key=lambda i: (newness(*runs[i]), -i))
    return good[0] if good else 0


def build_context() -> Context:
    """Sidebar and loading, run once per rerun by the router before the page."""
    folder = runs_dir()
    st.sidebar.title("RunLens")
    uploads = st.sidebar.file_uploader(
        "Add run reports", type=["json", "jsonl", "ndjson", "eval"], accept_multiple_files=True
    )
    found, skipped = folder_sources(folder)
    sources = one_per_run(found + upload_sources(uploads))
    watch_folder(folder)  # a run file that appears or grows reruns the app (docs/live.md)
    runs = [(s, live_data(s) or load_cached(s.digest, s.label, s.model, s.read, s.path)) for s in sources]
    if not runs:
        return Context(folder, [], None, None, skipped)
    labels = [s.label for s, _ in runs]
    first_good = opening_run(runs)  # the choice (keyed) stays across pages
    described = {s.label: run_description(s.label, d) for s, d in runs}
    choice = (
        st.sidebar.selectbox(
            "Run", labels, index=first_good, key="run_choice", format_func=lambda label: described.get(label, label)
        )
        or labels[0]
    )
    current = runs[labels.index(choice)]
    source, data = current
    progress_notice(source, data)  # a run still being written says so at the top
    view = None
    judged = None
    if data.result.run is not None:
        digest, reviewed = _basis_sidebar(source, data)
        if reviewed is not None:
            judged, data = data, reviewed
            current = (source, data)
        filters = _filters_sidebar(data, source.digest)
        view = view_cached(digest, filters, data)
        st.sidebar.text(f"Showing {view.shown:,} of {view.total:,} cases")
    return Context(folder, runs, current, view, skipped, judged)


@st.cache_resource(max_entries=8, show_spinner="Applying the reviews...")
def reviewed_cached(digest: str, reviews_signature: str, path: str, _data: RunData) -> tuple[Optional[RunData], str]:
    """The run as reviewed (None and the problem when the review file cannot be applied)."""
    from reporting.report.build import reviewed_data
    from reporting.report.reviewing import load_reviews

    assert _data.run is not None
    reviews = load_reviews(_data.run, path)
    if reviews.blocking:
        return None, f"the review file has {len(reviews.blocking)} problem(s): see the Review page"
    data, summary = reviewed_data(_data, reviews, "reviewed")
    return (
        data,
        f"Figures as reviewed: {summary['decided']} case(s) decided by reviewers, {summary['overturned']} overturned",
    )


def _basis_sidebar(source: Source, data: RunData) -> tuple[str, Optional[RunData]]:
    """With a review file beside the run: figures as judged or as reviewed (the view's cache key, and the
    reviewed data when chosen)."""
    from reporting.format.reviews import companion_path

    if source.path is None:
        return source.digest, None
    path = companion_path(source.path)
    try:
        stat = path.stat()
    except OSError:
        return source.digest, None
    choice = st.sidebar.radio(
        "Figures", ["as judged", "as reviewed"], horizontal=True, key=f"basis_{source.digest[:12]}"
    )
    if choice != "as reviewed":
        return source.digest, None
    signature = f"{stat.st_mtime_ns}-{stat.st_size}"
    reviewed, note = reviewed_cached(source.digest, signature, str(path), data)
    if reviewed is None:
        st.sidebar.error(f"Figures as judged: {note}")
        return source.digest, None
    st.sidebar.text(note)
    return f"{source.digest}:reviewed:{signature}", reviewed
