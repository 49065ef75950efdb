"""The framework figures as the reader sees them, for the dashboard's Frameworks page and the HTML alike: per
framework, every item with its counts, pass rate and interval, worst failing severity and failing cases; the
coverage sentence; and garak's standing against its reference models, named as garak's. Built from the report's
``FrameworkResults`` (report/frameworks.py); nothing is computed here but words and formats."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from reporting.render.presentation import fmt_interval, fmt_percent
from reporting.report.frameworks import FrameworkResults, Standing

ITEM_COLUMNS = (
    ("item", "Item"),
    ("title", "Title"),
    ("status", "Tested"),
    ("n", "n"),
    ("passed", "Passed"),
    ("failed", "Failed"),
    ("errors", "Errors"),
    ("pass_rate", "Pass rate"),
    ("interval", "95% CI"),
    ("worst", "Worst failing severity"),
    ("failing_count", "Failing cases"),
)
STANDING_COLUMNS = (
    ("probe", "garak probe"),
    ("detector", "Detector"),
    ("sentence", "Standing"),
    ("absolute", "Absolute score"),
    ("absolute_comment", "garak's absolute reading"),
    ("z", "z (relative score)"),
    ("relative_comment", "garak's relative reading"),
)
NO_REFERENCE = (
    "No reference: this run carries no garak digest with a calibration, so there is no standing against reference "
    "models. The figures above are this run's alone."
)
STANDING_NOTE = (
    "These are garak's own figures, from the digest garak wrote in its report (RunLens shows them, never recomputes "
    "them): the absolute score is the detector's pass rate; z is how many standard deviations it lies from the mean "
    "of garak's calibration models (negative: worse than them), with garak's words for each."
)
NOT_TESTED = "not tested"


def coverage_line(coverage: Mapping[str, Any]) -> str:
    """``7 of 10 items tested; not tested: LLM03, LLM04, LLM08``."""
    items, tested, untested = coverage["items"], coverage["tested"], coverage["not_tested"]
    if not untested:
        return f"{tested} of {items} items tested: every item of this framework."
    if not tested:
        return f"0 of {items} items tested: no case of this view maps to any item of this framework."
    return f"{tested} of {items} items tested; not tested: {', '.join(untested)}."


def item_rows(items: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per item, in table order, untested items marked so (n = 0, no rate)."""
    rows = []
    for item_id, row in items.items():
        tested = bool(row["n"])
        rows.append(
            {
                "item": item_id,
                "title": row["title"],
                "status": "tested" if tested else NOT_TESTED,
                "n": row["n"],
                "passed": row["passed"],
                "failed": row["failed"],
                "errors": row["errors"],
                "pass_rate": fmt_percent(row["pass_rate"]) if tested else NOT_TESTED,
                "interval": fmt_interval(row["interval"]) if tested else "",
                "worst": row.get("worst_failing_severity") or "",
                "failing_count": len(row.get("failing_case_ids") or ()),
                "failing": row.get("failing_case_ids") or [],  # ids made when read (the first few are shown)
            }
        )
    return rows


def framework_sections(results: FrameworkResults) -> list[dict[str, Any]]:
    """Per framework: its id, title, source, version and date, the coverage sentence and the item rows."""
    sections = []
    for described in results.frameworks:
        framework_id = described["id"]
        source = described.get("source") or {}
        sections.append(
            {
                "id": framework_id,
                "title": described["title"],
                "version": described.get("version") or "",
                "date": described.get("date") or "",
                "document": source.get("document") or "",
                "publisher": source.get("publisher") or "",
                "url": source.get("url") or "",
                "coverage": coverage_line(results.coverage[framework_id]),
                "rows": item_rows(results.figures[framework_id]),
            }
        )
    return sections


def _rounded(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 2)


def _score(value: Optional[float], digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def standing_sentence(row: Mapping[str, Any], standing: Standing) -> str:
    """``z = -1.35 against 23 reference models, garak calibration of 2026-02-02``, or why there is no z."""
    if row.get("relative_score") is None:
        return "no z-score: garak did not score this detector against its calibration"
    when = f", garak calibration of {standing.date}" if standing.date else ", garak calibration (undated)"
    models = "model" if standing.model_count == 1 else "models"
    return f"z = {row['relative_score']:.2f} against {standing.model_count} reference {models}{when}"


def standing_heading(standing: Standing) -> str:
    version = f" {standing.garak_version}" if standing.garak_version else ""
    when = f"of {standing.date}" if standing.date else "(undated)"
    return (
        f"garak's standing of this run (garak{version}'s digest): against its calibration {when}, "
        f"{standing.model_count} reference model{'s' if standing.model_count != 1 else ''}."
    )


def standing_rows(standing: Standing) -> list[dict[str, Any]]:
    """One row per probe and detector, z-scored ones first in garak's order; scores as text (``absolute``, ``z``)
    and as numbers rounded to 2 decimals (``absolute_value``, ``z_value``: a table's sortable cells)."""
    rows = []
    for row in standing.rows:
        rows.append(
            {
                "probe": row["probe"],
                "detector": row["detector"],
                "absolute": _score(row.get("absolute_score")),
                "absolute_value": _rounded(row.get("absolute_score")),
                "z_value": _rounded(row.get("relative_score")),
                "absolute_comment": row.get("absolute_comment") or "",
                "z": _score(row.get("relative_score")),
                "relative_comment": row.get("relative_comment") or "",
                "sentence": standing_sentence(row, standing),
            }
        )
    rows.sort(key=lambda r: r["z"] == "n/a")
    return rows


def standing_section(results: Optional[FrameworkResults]) -> Optional[dict[str, Any]]:
    """garak's standing for a page or the HTML, or None when the run keeps no digest (say ``NO_REFERENCE``)."""
    standing = results.standing if results is not None else None
    if standing is None:
        return None
    return {
        "heading": standing_heading(standing),
        "note": STANDING_NOTE,
        "rows": standing_rows(standing),
        "models": list(standing.models),
    }
