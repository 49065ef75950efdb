"""Download of the current run, with the current filters, as one self-contained HTML file."""

from __future__ import annotations

import streamlit as st

from reporting.textsafe import safe_filename
from reporting.ui.state import Context


def export_button(ctx: Context) -> None:
    from reporting.render.html import render_html
    from reporting.report.model import report_dict

    view = ctx.view
    if view is None or ctx.current is None or view.data.run is None:
        return
    st.subheader("Share")
    if st.button("Prepare the HTML report of this view", key="prepare_export"):
        from reporting.format.folders import companions
        from reporting.report.companions import rubric_results

        source = ctx.current[0]
        found = companions(source.path) if source.path is not None else {}
        rubrics = (
            rubric_results(found["rubric"], found["verdicts"], found["benchmarks"], found["dimensions"])
            if any(found.values())
            else None
        )
        html = render_html(report_dict(view, ctx.observability()), rubrics=rubrics)
        st.download_button(
            "Download HTML report",
            html,
            file_name=f"{safe_filename(view.data.run.run.run_id)}-report.html",
            mime="text/html",
            key="download_export",
        )
