"""Live runs in the dashboard (docs/live.md): files of the folder that appear or grow are noticed by their size and
modification time (a fragment looks every few seconds and reruns the app when the folder changed; a rerun keeps
every keyed widget, so the page, filters, selected case and review form stay), and a JSON Lines run or garak report
modified in the last ``LIVE_WINDOW`` seconds is read as it grows: only its new bytes at each rerun
(``reporting.format.growing``), never whole again. A run still being written says so at the top of every page,
and the Overview shows its pass rate per 100 cases."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any, Optional

import streamlit as st

from reporting.analysis.live import LiveTally, progress_line, rate_text
from reporting.format.folders import RUN_SUFFIXES
from reporting.format.growing import LIVE_SUFFIXES, LiveRun
from reporting.format.problems import FileTooLarge
from reporting.format.reading import LoadResult
from reporting.report.build import make_run_data
from reporting.report.model import RunData
from reporting.sources.growing import GrowingRun

LIVE_WINDOW = 120.0  # seconds: a JSON Lines file modified this recently is read as it grows
REFRESH_SECONDS = 2.0  # how often the folder is looked at (a change is on screen within this and a rerun)
LIVE_MARK = ":live:"
PAGES_EVERY = 5.0  # the pages' figures of a large growing run are made again at most once per 5 times their cost
SLOW_PAGES = 1.0  # seconds: pages' figures that took less are made again at every refresh


class Tracker:
    """One growing file, shared by every session (one reader, under a lock)."""

    def __init__(self, path: str, label: str):
        self.growing = GrowingRun(path, label=label)
        self.lock = threading.Lock()
        self.live: Optional[LiveRun] = None
        self.tally = LiveTally()  # each case counted once as the file grows
        self.figures: dict[str, Any] = {}

    def refresh(self) -> Optional[LiveRun]:
        with self.lock:
            try:
                self.growing.refresh()
            except (OSError, FileTooLarge):
                return None  # read whole instead: the reader names the problem
            self.live = self.growing.snapshot()
            if self.live is not None:
                self.figures = self.tally.figures(self.live.run.cases, self.live.stable, self.live.settled)
            return self.live


@st.cache_resource(max_entries=64, show_spinner=False)
def tracker(path: str, label: str) -> Tracker:
    return Tracker(path, label)


@st.cache_resource(show_spinner=False)
def _tracked() -> dict[str, Any]:
    """Per path: its first look in this server (size, time, unfinished?) and whether it is read as it grows (once
    live, a file stays so: its widgets keep their keys)."""
    return {}


def live_digest(path: Path, info: os.stat_result) -> Optional[str]:
    """The cache key of a file read as it grows (None for any other file): its first characters name the file
    alone, so the widgets keyed by them (filters, figures as judged or reviewed) stay as it grows.

    A JSON Lines file is read as it grows once it has grown since the dashboard first looked at it, or when it was
    modified in the last ``LIVE_WINDOW`` seconds and looks unfinished (a garak report without its ``completion``
    line, a RunLens run whose last line has no line end); a finished file is read whole, as before."""
    name = str(path)
    state = _tracked()
    first = state.get(name)
    if first is None or first[0] is not True:
        if not path.name.lower().endswith(LIVE_SUFFIXES):
            return None
        if first is None:
            recent = time.time() - info.st_mtime <= LIVE_WINDOW
            first = state[name] = (info.st_size, recent and _unfinished(path))
        if not (first[1] or info.st_size > first[0]):
            return None
        state[name] = (True, True)
    stable = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    key = f"{info.st_size}:{info.st_mtime_ns}"
    built = _builds().get(name)
    slow = built is not None and built[2] >= SLOW_PAGES
    if built is not None and slow and built[0] != key and time.time() - built[1] < PAGES_EVERY * built[2]:
        key = built[0]  # a large run: its pages keep the figures last made a little longer (the line on top is live)
    return f"{stable}{LIVE_MARK}{key}"


@st.cache_resource(show_spinner=False)
def _builds() -> dict[str, tuple[str, float, float]]:
    """Per path: the key of the pages' figures last made, when, and how long they took."""
    return {}


def _unfinished(path: Path) -> bool:
    """A garak report without its completion line, or a RunLens JSON Lines run whose last line has no line end."""
    from reporting.format.growing import SNIFF
    from reporting.sources.growing import kind_of

    try:
        with open(path, "rb") as handle:
            kind = kind_of(handle.read(SNIFF), path.name)
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - (1 << 18)))
            tail = handle.read()
    except OSError:
        return False
    if kind == "garak":
        return b'"entry_type": "completion"' not in tail
    return kind == "runlens" and not tail.endswith(b"\n")


@st.cache_resource(max_entries=8, show_spinner="Reading what the run added...")
def _run_data(digest: str, _path: str, _live: LiveRun) -> RunData:
    began = time.perf_counter()
    data = make_run_data(LoadResult(_live.label, _live.run, _live.problems, _live.cases_in_file))
    _builds()[_path] = (digest.split(LIVE_MARK, 1)[1], time.time(), time.perf_counter() - began)
    return data


def live_data(source: Any) -> Optional[RunData]:
    """The RunData of a source read as it grows (only its new bytes are read), or None to read it whole."""
    if source.path is None or LIVE_MARK not in source.digest:
        return None
    live = tracker(str(source.path), source.label).refresh()
    if live is None:
        return None  # not a kind read as it grows (another tool's JSON Lines): read whole
    return _run_data(source.digest, str(source.path), live)


def live_state(source: Any) -> Optional[tuple[LiveRun, dict[str, Any]]]:
    """The growing run of a source read as it grows, and its figures (None for any other source)."""
    if source is None or source.path is None or LIVE_MARK not in source.digest:
        return None
    found = tracker(str(source.path), source.label)
    return None if found.live is None else (found.live, found.figures)


def folder_signature(folder: Path) -> tuple:
    """Names, sizes and modification times of the folder's run files: what is compared to notice a change."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return ()
    found = []
    for entry in entries:
        if entry.name.lower().endswith(RUN_SUFFIXES):
            try:
                info = entry.stat()
            except OSError:
                continue
            found.append((entry.name, info.st_size, info.st_mtime_ns))
    return tuple(sorted(found))


@st.fragment(run_every=REFRESH_SECONDS)
def _watch(folder: str) -> None:
    if st.session_state.get("_live_drawn") != folder_signature(Path(folder)):
        st.rerun()  # the whole app, every keyed widget kept


def watch_folder(folder: Path) -> None:
    """Rerun the app when a run file of the folder appears, grows or changes (looked at every few seconds)."""
    st.session_state["_live_drawn"] = folder_signature(folder)
    with st.sidebar:
        _watch(str(folder))


def progress_notice(source: Any, data: RunData) -> None:
    """'in progress: 1,234 attempts so far, the last 40 s ago' at the top of the page, for a run being written (a
    sentence of digits and words of its own: the info box renders Markdown)."""
    state = live_state(source)
    if state is None or not state[0].growing:
        return
    live, figures = state
    line = progress_line(live.kind, live.attempts, figures["cases"], live.last_growth, time.time(), True)
    text = f"{line}; pass rate so far {rate_text(figures['pass_rate'], figures['pass_rate_ci'])}."
    shown = len(data.run.cases) if data.run is not None else 0
    if shown < figures["cases"]:
        built = _builds().get(str(source.path))
        every = f" (at this size about every {PAGES_EVERY * built[2]:.0f} s)" if built else ""
        text += f" The figures below are of its first {shown:,} cases; they are made again as it grows{every}."
    st.info(text, icon=":material/sync:")


def pass_rate_over_time_block(context: Any) -> None:
    """The Overview's chart of a run being written (or read as it grew): pass rate per 100 cases."""
    from reporting.render.live_figures import pass_rate_over_time
    from reporting.ui.common import _plot

    state = live_state(context.current[0]) if context.current is not None else None
    if state is None:
        return
    st.subheader("Pass rate over the run")
    _plot(pass_rate_over_time(state[1]), key="live_pass_rate_over_time")
