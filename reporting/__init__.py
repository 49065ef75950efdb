"""RunLens: read LLM safety evaluation run reports, recompute every figure, and show them.

The public API is imported lazily: ``import reporting`` loads nothing heavy, and each name below loads
its module on first use (``python -m reporting --help`` stays fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reporting._version import __version__

_PUBLIC = {
    "SCHEMA_VERSION": "reporting.format.schema",
    "Case": "reporting.format.schema",
    "RunMeta": "reporting.format.schema",
    "RunReport": "reporting.format.schema",
    "json_schema": "reporting.format.schema",
    "LoadResult": "reporting.format.reading",
    "Problem": "reporting.format.problems",
    "ReportError": "reporting.format.problems",
    "load_run": "reporting.sources.reading",
    "read_run": "reporting.sources.reading",
    "Filters": "reporting.analysis.filters",
    "aggregate_metrics": "reporting.analysis.metrics",
    "cases_frame": "reporting.analysis.metrics",
    "observability": "reporting.analysis.observability",
    "build_report": "reporting.report.build",
    "Report": "reporting.report.model",
    "report_document": "reporting.report.serialise",
    "evaluate_response": "reporting.scoring.scorer",
    "load_patterns": "reporting.scoring.scorer",
    "score_run": "reporting.scoring.runs",
    "render_html": "reporting.render.html",
}

__all__ = [
    "SCHEMA_VERSION",
    "Case",
    "Filters",
    "LoadResult",
    "Problem",
    "ReportError",
    "RunMeta",
    "Report",
    "RunReport",
    "__version__",
    "aggregate_metrics",
    "build_report",
    "cases_frame",
    "evaluate_response",
    "json_schema",
    "load_patterns",
    "load_run",
    "observability",
    "read_run",
    "render_html",
    "report_document",
    "score_run",
]

if TYPE_CHECKING:  # for type checkers and editors; at run time the names load on first use
    from reporting.analysis.filters import Filters
    from reporting.analysis.metrics import aggregate_metrics, cases_frame
    from reporting.analysis.observability import observability
    from reporting.format.problems import Problem, ReportError
    from reporting.format.reading import LoadResult
    from reporting.format.schema import SCHEMA_VERSION, Case, RunMeta, RunReport, json_schema
    from reporting.render.html import render_html
    from reporting.report.build import build_report
    from reporting.report.model import Report
    from reporting.report.serialise import report_document
    from reporting.scoring.runs import score_run
    from reporting.scoring.scorer import evaluate_response, load_patterns
    from reporting.sources.reading import load_run, read_run


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'reporting' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
