"""RunLens dashboard: `streamlit run app.py [-- --runs DIR]` (or REPORTING_RUNS_DIR=DIR, or `runlens dashboard DIR`)."""

from reporting.ui.pages import run_app

run_app()
