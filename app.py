"""RunLens dashboard: `streamlit run app.py [-- --runs DIR]` (or REPORTING_RUNS_DIR=DIR)."""

from reporting.ui.pages import run_app

run_app()
