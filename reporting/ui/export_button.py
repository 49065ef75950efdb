"""Download of the current run, with the current filters, as one self-contained HTML file."""

from __future__ import annotations

import streamlit as st

from ..textsafe import safe_filename
from .state import Context


def export_button(ctx: Context) -> None:
    from ..export import render_html
    from ..report import report_dict

    view = ctx.view
    st.subheader("Share")
    if st.button("Prepare the HTML report of this view", key="prepare_export"):
        from ..companions import companions, rubric_results

        source = ctx.current[0]
        found = companions(source.path) if source.path is not None else {}
        rubrics = rubric_results(**found) if any(found.values()) else None
        html = render_html(report_dict(view, ctx.observability()), rubrics=rubrics)
        st.download_button("Download HTML report", html, file_name=f"{safe_filename(view.data.run.run.run_id)}-report.html",
                           mime="text/html", key="download_export")
