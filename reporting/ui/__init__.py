"""Streamlit dashboard: thin pages over the tested ``reporting`` modules."""
