"""Table specs, declared once: which columns each table shows, under which label, in which format.

The dashboard builds its DataFrames from these specs and the HTML template and script draw the same
columns from them, so a table cannot say one thing on screen and another in the handout. The case
search runs over ``SEARCH_COLUMNS`` (analysis/filters.py) in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from reporting.render.presentation import fmt_interval, fmt_number, fmt_percent

Format = Literal["text", "count", "number", "number2", "percent", "interval", "outcome", "yes_no", "clip"]


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    format: Format = "text"
    sortable: bool = True


CASE_TABLE: tuple[Column, ...] = (
    Column("probe_id", "Probe"),
    Column("category", "Category"),
    Column("severity", "Severity"),
    Column("passed", "Outcome", "outcome"),
    Column("risk_score", "Risk", "number"),
    Column("weighted_risk", "Weighted risk", "number"),
    Column("boundary_or_refusal_signal", "Refusal language", "yes_no"),
    Column("safe_signal_hits", "Safe hits", "count"),
    Column("unsafe_signal_hits", "Unsafe hits", "count"),
    Column("task", "Task", "clip", sortable=False),
)
CLIP = 90  # characters of a long text shown in a table cell; the case detail shows it whole

# The printed handout lists cases in a static table (the screen's table pages through them with a script).
PRINT_CASE_TABLE: tuple[Column, ...] = (
    Column("probe_id", "Probe"),
    Column("category", "Category"),
    Column("severity", "Severity"),
    Column("passed", "Outcome", "outcome"),
    Column("risk_score", "Risk", "number"),
    Column("weighted_risk", "Weighted risk", "number"),
    Column("task", "Task", "clip"),
)
PRINT_CASE_CAP = 5000  # cases listed in the printed handout; above it, the worst ones, and the handout says so

CATEGORY_TABLE: tuple[Column, ...] = (
    Column("n", "n", "count"),
    Column("pass_rate", "Pass rate", "percent"),
    Column("pass_rate_ci", "95% CI", "interval"),
    Column("risk_mean", "Mean risk", "number"),
    Column("risk_median", "Median risk", "number"),
    Column("weighted_risk_mean", "Mean weighted risk", "number"),
    Column("critical_failures", "Critical failures", "count"),
    Column("high_failures", "High failures", "count"),
    Column("safe_hits_mean", "Safe hits (mean)", "number2"),
    Column("unsafe_hits_mean", "Unsafe hits (mean)", "number2"),
    Column("boundary_rate", "Boundary rate", "percent"),
)

SEVERITY_TABLE: tuple[Column, ...] = (
    Column("n", "n", "count"),
    Column("passed", "Passed", "count"),
    Column("failed", "Failed", "count"),
    Column("pass_rate", "Pass rate", "percent"),
    Column("pass_rate_ci", "95% CI", "interval"),
)


STRATEGY_TABLE: tuple[Column, ...] = (
    Column("n", "Cases", "count"),
    Column("attacks_succeeded", "Attacks succeeded", "count"),
    Column("attack_success_rate", "Attack success", "percent"),
    Column("attack_success_rate_ci", "95% CI", "interval"),
    Column("turns_to_break_median", "Median user turns to break", "number2"),
)


def cell_text(value: Any, fmt: Format) -> str:
    """A value as the handout prints it."""
    if fmt == "percent":
        return fmt_percent(value)
    if fmt == "number":
        return fmt_number(value)
    if fmt == "number2":
        return fmt_number(value, 2)
    if fmt == "interval":
        return fmt_interval(value)
    if fmt == "outcome":
        return "passed" if value else "failed"
    if fmt == "yes_no":
        return "yes" if value else "no"
    if fmt == "clip":
        text = "" if value is None else str(value)
        return text if len(text) <= CLIP else text[:CLIP] + "\u2026"
    return "n/a" if value is None else str(value)


def cell_value(value: Any, fmt: Format) -> Any:
    """A value as the dashboard's table holds it: numbers stay numbers (sortable), the rest as text."""
    if fmt in ("count", "number", "number2", "percent"):
        return value
    if fmt == "text":
        return value
    return cell_text(value, fmt)


def grouped_rows(groups: Mapping[str, Mapping[str, Any]], spec: tuple[Column, ...], key_label: str) -> list[dict]:
    """Rows of a per-group table (by category, by severity) for the dashboard, labelled as in the handout."""
    return [
        {key_label: name, **{c.label: cell_value(stats.get(c.key), c.format) for c in spec}}
        for name, stats in groups.items()
    ]


def print_rows(frame: Any, order: Any, cap: int = PRINT_CASE_CAP) -> list[list[str]]:
    """The printed handout's case rows: ``cap`` cases in ``order`` (positions), each cell as text."""
    chosen = frame.iloc[order[:cap]]
    columns = [chosen[c.key].tolist() for c in PRINT_CASE_TABLE]
    return [[cell_text(v, c.format) for v, c in zip(values, PRINT_CASE_TABLE)] for values in zip(*columns)]
