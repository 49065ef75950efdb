"""Files the package needs at run time (templates, sample runs), found the same way in a
source checkout, an editable install and a normal install."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def sample_runs_dir() -> Path:
    """The folder of bundled sample run reports."""
    return Path(str(resources.files("reporting.sample_runs")))


def templates_dir() -> Path:
    """The folder of Jinja templates for the HTML export."""
    return Path(str(resources.files("reporting.templates")))


def sample_run_files() -> list[Path]:
    from reporting.format.folders import is_companion

    return sorted(
        p for p in sample_runs_dir().iterdir() if p.suffix in (".json", ".jsonl") and not is_companion(p.name)
    )


def examples_dir() -> Path:
    """Rubric examples shipped with the package: the A-REF scorecard, dimension scores, contradiction examples."""
    return Path(str(resources.files("reporting.rubrics.examples")))


def dashboard_script() -> Path:
    """The script `streamlit run` serves: inside the package, so an installed wheel can start the dashboard."""
    return Path(str(resources.files("reporting.ui"))) / "app.py"
