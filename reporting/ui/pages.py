"""The dashboard's router: the sidebar and loading first, then the page chosen in the navigation.

Pages are functions (``run_pages.py``, ``more_pages.py``, ``frameworks_page.py``, ...) over ``common.py``; they
draw, and every number comes from the tested ``reporting`` modules."""

from __future__ import annotations

import streamlit as st

from reporting._memory import give_back_between, use_system_pool
from reporting.textsafe import printable
from reporting.ui.fleet_page import fleet_page
from reporting.ui.frameworks_page import frameworks_page
from reporting.ui.more_pages import compare, judges_page, rubrics_page, trend_page
from reporting.ui.review_page import review_page
from reporting.ui.run_pages import case_header, cases, categories, failure_modes, observability, overview, severity
from reporting.ui.state import build_context

__all__ = ["PAGES", "case_header", "run_app"]


PAGES = (
    ("overview", "Overview", overview),
    ("categories", "Categories", categories),
    ("severity", "Severity", severity),
    ("failure_modes", "Failure modes", failure_modes),
    ("observability", "Observability", observability),
    ("cases", "Cases", cases),
    ("frameworks", "Frameworks", frameworks_page),
    ("judges", "Judges", judges_page),
    ("review", "Review", review_page),
    ("compare", "Compare", compare),
    ("trend", "Trend", trend_page),
    ("rubrics", "Rubrics", rubrics_page),
    ("fleet", "Fleet", fleet_page),
)


def run_app() -> None:
    """The router: sidebar and loading first, then the page chosen in the navigation."""
    st.set_page_config(page_title="RunLens", layout="wide")
    use_system_pool()  # Arrow's freed memory reusable by the rest of the app (reporting/_memory.py)
    from reporting.ui.auth import gate

    if not gate():  # sign-in (dashboard --auth): nothing is loaded or drawn for someone not signed in with a role
        return
    try:
        st.session_state["_context"] = build_context()
    except Exception as exc:  # noqa: BLE001 - never a traceback
        from reporting.ui.state import Context, runs_dir

        st.session_state["_context"] = Context(runs_dir(), [], None, None)
        st.error("RunLens could not load the runs; the problem is below.")
        st.text(printable(f"error: {type(exc).__name__}: {str(exc)[:300]}"))
    # Pages are functions, so the app runs the same from a checkout and from an installed wheel.
    navigation = st.navigation(
        [st.Page(page, title=title, url_path=name, default=(name == "overview")) for name, title, page in PAGES]
    )
    try:
        navigation.run()
    except Exception as exc:  # noqa: BLE001 - the last net (Streamlit's rerun and stop are not Exceptions)
        st.error("RunLens could not draw this page. Other pages and runs still work.")
        st.text(printable(f"error: {type(exc).__name__}: {str(exc)[:300]}"))
    # What the page of a large run freed (its charts' columns, a sample's rows) given back before the next page adds
    # its own: kept, it counted in the process's peak (ten million cases: the Cases page after Observability, 3,970
    # MB). Not below STEP_ROWS cases, where it is kept for the next run to reuse (a million: 25 ms a filter change).
    current = getattr(st.session_state.get("_context"), "current", None)
    give_back_between(len(current[1].frame) if current is not None else 0)
