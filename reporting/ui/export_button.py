"""Download of the current run, with the current filters, as one self-contained HTML file."""

from __future__ import annotations

import streamlit as st

from reporting.textsafe import safe_filename
from reporting.ui.state import Context


def export_button(ctx: Context) -> None:
    view = ctx.view
    if view is None or ctx.current is None or view.data.run is None:
        return
    st.subheader("Share")
    if st.button("Prepare the HTML report of this view", key="prepare_export"):
        from reporting.render.html import render_html
        from reporting.report.build import build_report
        from reporting.report.companions import Companions

        source = ctx.current[0]
        companions = Companions.beside(source.path) if source.path is not None else None
        report = build_report(
            view.data, filters=view.filters, companions=companions, observability_result=ctx.observability()
        )
        st.download_button(
            "Download HTML report",
            render_html(report),
            file_name=f"{safe_filename(report.meta.run_id)}-report.html",
            mime="text/html",
            key="download_export",
        )
