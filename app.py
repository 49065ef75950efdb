"""RunLens dashboard entry point: `streamlit run app.py [-- --runs DIR]`."""

from reporting.app_main import main

main()
