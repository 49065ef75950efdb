"""RunLens: read LLM safety evaluation run reports, recompute every figure, and show them."""

__version__ = "0.1.0"

from .export import render_html  # noqa: E402
from .filters import Filters  # noqa: E402
from .loader import LoadResult, Problem, ReportError, load_run, read_run  # noqa: E402
from .metrics import aggregate_metrics, cases_frame  # noqa: E402
from .observability import observability  # noqa: E402
from .report import build_report  # noqa: E402
from .scorer import evaluate_response, load_patterns  # noqa: E402
from .scoring_run import score_run  # noqa: E402
from .schema import SCHEMA_VERSION, Case, RunMeta, RunReport, json_schema  # noqa: E402

__all__ = [
    "__version__",
    "SCHEMA_VERSION",
    "Case",
    "Filters",
    "LoadResult",
    "Problem",
    "ReportError",
    "RunMeta",
    "RunReport",
    "aggregate_metrics",
    "build_report",
    "cases_frame",
    "evaluate_response",
    "load_patterns",
    "score_run",
    "json_schema",
    "load_run",
    "observability",
    "read_run",
    "render_html",
]
