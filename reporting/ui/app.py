"""The dashboard's script, inside the package: `streamlit run` runs this file (``runlens dashboard`` does so)."""

from reporting.ui.pages import run_app

run_app()
