"""Streamlit page code (placeholder until the dashboard lands): lists the runs and their pass rates."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import streamlit as st

from .loader import load_run
from .metrics import aggregate_metrics


def runs_dir(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--runs")
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    folder = known.runs or os.environ.get("REPORTING_RUNS_DIR") or "sample_runs"
    return Path(folder)


def main() -> None:
    st.set_page_config(page_title="RunLens", layout="wide")
    st.title("RunLens")
    folder = runs_dir()
    files = sorted(p for p in folder.glob("*") if p.suffix.lower() in (".json", ".jsonl"))
    if not files:
        st.info(f"No run reports found in {folder}.")
        return
    rows = []
    for path in files:
        result = load_run(path)
        if not result.ok:
            st.error("\n".join(str(p) for p in result.problems))
        if result.run is None:
            continue
        overall = aggregate_metrics(result.run)["overall"]
        rows.append({"file": path.name, "run_id": result.run.run.run_id, "cases": len(result.run.cases),
                     "pass_rate": overall["pass_rate"]})
    st.dataframe(rows)
