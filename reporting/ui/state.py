"""Where runs come from, cached loading, the sidebar (run choice, upload, filters), and the
current view that every page draws from. No figure is computed here: ``reporting.view`` does it."""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import streamlit as st

from ..companions import is_companion
from ..filters import Filters
from ..loader import load_run
from ..resources import sample_runs_dir
from ..schema import SEVERITIES
from ..report import RunData, RunView, make_run_data, make_view, view_observability

RUN_SUFFIXES = (".json", ".jsonl", ".ndjson")


def runs_dir(argv: Optional[list[str]] = None) -> Path:
    """`--runs DIR` after `--` on the streamlit command line, else $REPORTING_RUNS_DIR, else sample_runs/."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--runs")
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    folder = known.runs or os.environ.get("REPORTING_RUNS_DIR")
    if folder:
        return Path(folder)
    local = Path("sample_runs")
    return local if local.is_dir() and any(local.glob("*.json")) else sample_runs_dir()


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
def load_cached(digest: str, label: str, _read: Callable[[], bytes]) -> RunData:
    return make_run_data(load_run(_read(), name=label))


@st.cache_resource(max_entries=32, show_spinner=False)
def view_cached(digest: str, filters: Filters, _data: RunData) -> RunView:
    return make_view(_data, filters)


@st.cache_resource(max_entries=16, show_spinner="Embedding and clustering the cases...")
def observability_cached(digest: str, filters: Filters, _view: RunView) -> dict:
    return view_observability(_view)


@st.cache_resource(max_entries=16, show_spinner="Comparing the runs...")
def comparison_cached(base_digest: str, candidate_digest: str, _base: RunData, _candidate: RunData) -> dict:
    from ..compare import compare_runs

    return compare_runs(_base.run, _candidate.run)


@dataclass
class Source:
    label: str
    digest: str
    read: Callable[[], bytes]
    path: Optional[Path] = None


def folder_sources(folder: Path) -> list[Source]:
    sources = []
    if not folder.is_dir():
        return sources
    for path in sorted(p for p in folder.iterdir()
                       if p.suffix.lower() in RUN_SUFFIXES and p.is_file() and not is_companion(p.name)):
        try:
            stat = path.stat()
            digest = file_digest(str(path), stat.st_mtime_ns, stat.st_size)
        except OSError:
            digest = f"unreadable:{path}"
        sources.append(Source(path.name, digest, lambda p=path: p.read_bytes() if p.exists() else b"", path))
    return sources


def upload_sources(files) -> list[Source]:
    sources = []
    for upload in files or []:
        data = upload.getvalue()
        sources.append(Source(f"{upload.name} (uploaded)", hashlib.sha256(data).hexdigest(), lambda d=data: d))
    return sources


@dataclass
class Context:
    folder: Path
    runs: list[tuple[Source, RunData]]
    current: Optional[tuple[Source, RunData]]
    view: Optional[RunView]

    def observability(self) -> dict:
        source, _ = self.current
        return observability_cached(source.digest, self.view.filters, self.view)


def _filters_sidebar(data: RunData, digest: str) -> Filters:
    frame = data.frame
    st.sidebar.subheader("Filters")
    key = digest[:12]
    categories = st.sidebar.multiselect("Category", sorted(frame["category"].unique()), key=f"f_cat_{key}")
    severities = st.sidebar.multiselect("Severity", list(SEVERITIES), key=f"f_sev_{key}")
    outcome = st.sidebar.radio("Outcome", ["all", "pass", "fail"], horizontal=True, key=f"f_out_{key}")
    modes = st.sidebar.multiselect("Failure mode", data.failure_mode_names, key=f"f_mode_{key}")
    text = st.sidebar.text_input("Search task, input and response", key=f"f_text_{key}")
    return Filters(tuple(categories), tuple(severities), None if outcome == "all" else outcome, tuple(modes), text)


def build_context() -> Context:
    """Sidebar and loading, run once per rerun by the router before the page."""
    folder = runs_dir()
    st.sidebar.title("RunLens")
    uploads = st.sidebar.file_uploader("Add run reports", type=["json", "jsonl", "ndjson"], accept_multiple_files=True)
    sources = folder_sources(folder) + upload_sources(uploads)
    runs = [(s, load_cached(s.digest, s.label, s.read)) for s in sources]
    if not runs:
        return Context(folder, [], None, None)
    labels = [s.label for s, _ in runs]
    choice = st.sidebar.selectbox("Run", labels, key="run_choice")
    current = runs[labels.index(choice)]
    source, data = current
    view = None
    if data.result.run is not None:
        filters = _filters_sidebar(data, source.digest)
        view = view_cached(source.digest, filters, data)
        st.sidebar.text(f"Showing {view.shown:,} of {view.total:,} cases")
    return Context(folder, runs, current, view)
