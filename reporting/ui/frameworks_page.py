"""The Frameworks page: every item of every framework table with its figures (tested or not), the coverage, the
failing cases (open one to see the case as the Cases page shows it), and garak's standing against its reference
models where the run keeps garak's digest. Rows and sentences come from ``render/framework_figures.py`` over the
report's ``FrameworkResults``; report and file text is shown as text only."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import pandas as pd
import streamlit as st

from reporting.render.framework_figures import (
    ITEM_COLUMNS,
    NO_REFERENCE,
    STANDING_COLUMNS,
    framework_sections,
    standing_section,
)
from reporting.textsafe import markdown_literal, printable
from reporting.ui.common import _needs_run, guarded, shown_view, table

FAILING_OPTIONS_CAP = 2000  # failing cases offered per framework in the picker
INTRO = (
    "For every item of each framework: the evaluated cases that map to it (a case's tool tags decide, its category "
    "otherwise), the pass rate with its Wilson 95% interval, and cases with no verdict apart. An item no case maps "
    "to is listed as not tested: what was not tested is a finding. These figures are evidence about an item, never "
    "a finding of compliance (docs/frameworks.md)."
)


@guarded
def frameworks_page() -> None:
    if not _needs_run("Frameworks") and not _only_errors():
        return
    view = shown_view()
    results = _results(view)
    if results is None:
        st.info("This view carries no framework figures.")
        return
    if results.problems:
        st.error(
            f"The frameworks file has {len(results.problems)} problem(s), listed below; the built-in tables are "
            "used instead."
        )
        st.code("\n".join(printable(p) for p in results.problems), language=None, wrap_lines=True)
    st.caption(INTRO)
    for number, section in enumerate(framework_sections(results)):
        _framework(number, section)
    _standing(results)


def _only_errors() -> bool:
    """A view whose every kept case is an error: no figure to draw elsewhere, but here every item reads not tested
    with its errors counted (coverage is a finding)."""
    from reporting.ui.common import context

    view = context().view
    return view is not None and view.data.run is not None and view.shown == 0 and view.error_count > 0


@st.cache_resource(max_entries=4, show_spinner=False)
def catalog_cached(path: Optional[str], signature: str) -> tuple[Any, tuple[str, ...]]:
    from reporting.report.frameworks import catalog_or_problems

    return catalog_or_problems(path)


def dashboard_catalog() -> Optional[tuple[Any, tuple[str, ...]]]:
    """The catalog of ``--frameworks FILE`` (after ``--`` on the streamlit command line) or ``$REPORTING_FRAMEWORKS``
    with the file's problems (a bad file: the built-in catalog and its problems); None without a file."""
    from reporting.report.frameworks import frameworks_path_from

    path = frameworks_path_from(sys.argv[1:])
    if not path:
        return None
    try:
        stat = os.stat(path)
        signature = f"{stat.st_mtime_ns}:{stat.st_size}"
    except OSError:
        signature = "missing"
    return catalog_cached(path, signature)


def _results(view: Any) -> Any:
    """The view's framework figures, or, with a user's frameworks file, the same figures over its catalog."""
    chosen = dashboard_catalog()
    if chosen is None or view.data.run is None:
        return view.frameworks
    from reporting.report.frameworks import framework_results, kept_figures

    catalog, problems = chosen
    # the kept rows' positions (a frame of no column, indexed by them); every column only where a count needs it
    figures = kept_figures(view.data.cases, view.run, view.columns(()), view.errors, catalog, lambda: view.frame)
    return framework_results(view.run, figures, catalog, problems)


def first_screen_block(view: Any) -> None:
    """The Overview's first screen: "are we OK?" in templated sentences over the view's figures (render/first_screen),
    each naming the page whose table holds its numbers."""
    from dataclasses import replace

    from reporting.render.first_screen import first_screen

    results = _results(view)
    st.subheader("At a glance")
    for line in first_screen(replace(view, frameworks=results) if results is not view.frameworks else view):
        st.text(printable(f"{line['text']}  [{line['page']} page]"))


def _framework(number: int, section: dict) -> None:
    st.subheader(markdown_literal(section["title"]))
    described = f"{section['id']}"
    if section["version"]:
        described += f", version {section['version']}"
    if section["date"]:
        described += f" of {section['date']}"
    if section["document"]:
        described += f"; source: {section['document']}"
    if section["url"]:
        described += f", {section['url']}"
    st.text(printable(described))
    st.text(printable(section["coverage"]))
    rows = section["rows"]
    frame = pd.DataFrame([{label: r[key] for key, label in ITEM_COLUMNS} for r in rows])
    table(frame, hide_index=True, key=f"framework_table_{number}")
    total = sum(len(r["failing"]) for r in rows)
    if not total:
        st.caption("No failing case maps to an item of this framework.")
        return
    failing: list[tuple[str, str]] = []  # the first pairs offered, each item's ids read only as far as needed
    for r in rows:
        failing += [(r["item"], case_id) for case_id in r["failing"][: FAILING_OPTIONS_CAP - len(failing)]]
    options = [f"{item}  |  {case_id}" for item, case_id in failing]
    if total > FAILING_OPTIONS_CAP:
        st.caption(f"The first {FAILING_OPTIONS_CAP:,} of {total:,} failing (item, case) pairs are offered.")
    picked = st.selectbox(
        "Open a failing case (item | probe id)",
        range(len(options)),
        index=None,
        format_func=lambda i: printable(options[i]),
        key=f"framework_case_{number}",
        placeholder="Pick a failing case to see every field of it",
    )
    if picked is None:
        return
    _show_case(failing[picked][1])


def _show_case(case_id: str) -> None:
    from reporting.ui.run_pages import _case_detail

    view = shown_view()
    match = view.with_ids([case_id])
    if match.empty:
        st.warning("That case is not among the shown cases.")
        return
    _case_detail(match.iloc[0])


def _standing(results) -> None:
    st.subheader("Where the model stands")
    section = standing_section(results)
    if section is None:
        st.info(NO_REFERENCE)
        return
    st.text(printable(section["heading"]))
    st.caption(section["note"])
    numbers = {"absolute": "absolute_value", "z": "z_value"}  # numbers in the table: sortable, never quoted
    frame = pd.DataFrame(
        [{label: r[numbers.get(key, key)] for key, label in STANDING_COLUMNS} for r in section["rows"]]
    )
    table(frame, hide_index=True, key="garak_standing")
    if section["models"]:
        with st.expander(f"garak's reference models ({len(section['models'])})"):
            st.text("\n".join(printable(m) for m in section["models"]))
