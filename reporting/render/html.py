"""Static HTML export: one self-contained, offline file rendered from Jinja templates.

One environment, autoescaping on, StrictUndefined. Report data reaches the page as JSON
inside ``<script type="application/json">`` elements through ``|tojson`` (which escapes
``<``, ``>``, ``&`` and ``'``), and the page's own script inserts text with ``textContent``.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Optional

import pandas as pd
import plotly.io as pio
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from reporting._gc import gc_paused
from reporting._version import __version__
from reporting.format.schema import SEVERITIES
from reporting.render import figures as charts
from reporting.render.presentation import (
    COMPARE_METHODOLOGY,
    METHODOLOGY,
    comparison_reading,
    fmt_interval,
    fmt_number,
    fmt_p,
    fmt_percent,
    fmt_signed,
    fmt_signed_interval,
    key_figures,
    mutual_information_reading,
)
from reporting.resources import templates_dir

HTML_SCATTER_CAP = 5000  # points drawn in the exported scatter
TEXT_BUDGET = 6_000_000  # characters shared by the text fields of all cases in the file
TEXT_CAP_MAX, TEXT_CAP_MIN = 2000, 40
TEXT_FIELDS = ("task", "probe_input", "response", "explanation")
CASE_COLUMNS = (
    "probe_id",
    "category",
    "severity",
    "passed",
    "risk_score",
    "weighted_risk",
    "severity_weight",
    "safe_signal_hits",
    "unsafe_signal_hits",
    "boundary_or_refusal_signal",
    "matched_safe_patterns",
    "matched_unsafe_patterns",
    "detected_failure_modes",
    "failure_modes",
    *TEXT_FIELDS,
    "extra",
)
_KNOWN = set(CASE_COLUMNS) - {"extra"}
_FLOAT_COLUMNS = {"risk_score", "weighted_risk", "severity_weight"}


def text_cap(n_cases: int) -> int:
    """Characters kept per text field in the file: 2,000, less in large runs (at least 40)."""
    if n_cases <= 0:
        return TEXT_CAP_MAX
    return int(max(TEXT_CAP_MIN, min(TEXT_CAP_MAX, TEXT_BUDGET // (n_cases * len(TEXT_FIELDS)))))


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "xml"), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["percent"] = fmt_percent
    env.filters["number"] = fmt_number
    env.filters["interval"] = fmt_interval
    env.filters["signed"] = fmt_signed
    env.filters["pvalue"] = fmt_p
    env.filters["signed_interval"] = fmt_signed_interval
    env.policies["json.dumps_kwargs"] = {
        "sort_keys": False,
        "ensure_ascii": False,
        "separators": (",", ":"),
        "allow_nan": False,
    }
    return env


def _trusted_plotly_js() -> Markup:
    # The plotly.js library bundled with the plotly package: trusted code, inlined once, unescaped.
    return Markup(get_plotlyjs())  # noqa: S704 - library code, not report data


def _round(value: Any) -> Any:
    return round(value, 6) if isinstance(value, float) and math.isfinite(value) else value


def _cap(text: Optional[str], cap: int) -> Optional[str]:
    if text is None or len(text) <= cap:
        return text
    return text[:cap] + "\u2026"


def case_table(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Cases in column form (no key repeated per case), long texts capped as documented."""
    cap = text_cap(len(cases))
    columns: list[list[Any]] = []
    truncated = 0
    for name in CASE_COLUMNS:
        if name == "extra":
            values: list[Any] = [{k: v for k, v in case.items() if k not in _KNOWN} for case in cases]
        elif name in TEXT_FIELDS:
            raw = [case.get(name) for case in cases]
            values = [_cap(v, cap) for v in raw]
            truncated += sum(1 for a, b in zip(raw, values) if a is not b)
        elif name in _FLOAT_COLUMNS:
            values = [_round(case.get(name)) for case in cases]
        else:
            values = [case.get(name) for case in cases]
        columns.append(values)
    rows = [list(row) for row in zip(*columns)] if cases else []
    return {"columns": list(CASE_COLUMNS), "rows": rows, "text_cap": cap, "texts_truncated": int(truncated)}


def page_data(report: dict[str, Any]) -> dict[str, Any]:
    """What goes into #report-data: the recomputed report, with cases and points in column form."""
    data = {key: value for key, value in report.items() if key not in ("cases", "observability")}
    data["cases"] = case_table(report["cases"])
    obs = report["observability"]
    if obs.get("skipped"):
        data["observability"] = obs
    else:
        # Rows line up with the case table's rows, so the probe id is not repeated here.
        points = obs["cases"]
        data["observability"] = {
            **{k: v for k, v in obs.items() if k != "cases"},
            "cases": {
                "columns": ["cluster_id", "scatter_x", "scatter_y"],
                "aligned_with": "cases.rows",
                "rows": [[p["cluster_id"], p["scatter_x"], p["scatter_y"]] for p in points],
            },
        }
    return data


def _figure_frame(cases: list[dict[str, Any]]) -> pd.DataFrame:
    columns = ("probe_id", "category", "severity", "passed", "risk_score", "weighted_risk", "task")
    frame = pd.DataFrame({c: [case.get(c) for case in cases] for c in columns})
    frame["severity"] = pd.Categorical(frame["severity"], categories=SEVERITIES, ordered=True)
    frame["risk_score"] = frame["risk_score"].astype(float)
    frame["passed"] = frame["passed"].astype(bool)
    return frame


def figure_json(fig: Any) -> dict[str, Any]:
    """A Plotly figure as plain JSON-ready data (numpy arrays turned into lists)."""
    return json.loads(pio.to_json(fig, validate=False))


def figures_json(report: dict[str, Any]) -> dict[str, Any]:
    """The shared chart builders' figures, as plain JSON-ready dicts."""
    frame = _figure_frame(report["cases"])
    figures = charts.all_figures(
        frame, report["aggregate_metrics"], report["observability"], scatter_cap=HTML_SCATTER_CAP
    )
    return {name: figure_json(fig) for name, fig in figures.items()}


def generated_at(timestamp: Optional[str] = None) -> str:
    """`timestamp` (ISO 8601 or epoch seconds), else $SOURCE_DATE_EPOCH, else now; UTC, to the second."""
    value = timestamp if timestamp is not None else os.environ.get("SOURCE_DATE_EPOCH")
    if value is None or value == "":
        moment = datetime.now(timezone.utc)
    elif str(value).strip().lstrip("-").isdigit():
        moment = datetime.fromtimestamp(int(value), timezone.utc)
    else:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        moment = moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def render_html(
    report: dict[str, Any],
    *,
    title: Optional[str] = None,
    timestamp: Optional[str] = None,
    rubrics: Optional[dict[str, Any]] = None,
) -> str:
    """The self-contained HTML report of a recomputed report (``build_report`` / ``report_dict``).

    ``rubrics`` (from ``companions.rubric_results``) adds the Rubrics section.
    """
    contradictions = _contradictions(report["cases"])
    if contradictions:
        rubrics = {
            "scorecard": None,
            "dimensions": None,
            "problems": [],
            **(rubrics or {}),
            "contradictions": contradictions,
        }
    with gc_paused():
        return _render_html(report, title, timestamp, rubrics)


def _contradictions(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The self-contradiction rubric on every case that carries a multi-turn conversation."""
    from reporting.analysis.contradiction import explain

    return [
        {"probe_id": c["probe_id"], **explain(c["conversation"])}
        for c in cases
        if isinstance(c.get("conversation"), list)
    ]


def _render_html(
    report: dict[str, Any], title: Optional[str], timestamp: Optional[str], rubrics: Optional[dict[str, Any]]
) -> str:
    metrics = report["aggregate_metrics"]
    obs = report["observability"]
    run = report["run"]
    context = {
        "title": title or f"RunLens report: {run.get('run_id', 'run')}",
        "run": run,
        "generator": report.get("generator", {"name": "runlens", "version": __version__}),
        "generated_at": generated_at(timestamp),
        "filters": report.get("filters", {}),
        "filter_lines": _filter_lines(report.get("filters", {})),
        "key_figures": key_figures(metrics),
        "metrics": metrics,
        "severities": SEVERITIES,
        "obs": obs,
        "mi_reading": mutual_information_reading(obs),
        "drift": report.get("drift", []),
        "methodology": METHODOLOGY,
        "figures": {**figures_json(report), **_rubric_figures(rubrics)},
        "data": {**page_data(report), **({"rubrics": rubrics} if rubrics else {})},
        "rubrics": rubrics,
        "plotly_js": _trusted_plotly_js(),
        "scatter_cap": HTML_SCATTER_CAP,
    }
    return environment().get_template("report.html.j2").render(**context)


def _rubric_figures(rubrics: Optional[dict[str, Any]]) -> dict[str, Any]:
    if not rubrics or not rubrics.get("dimensions"):
        return {}
    return {"dimensions": figure_json(charts.dimension_heatmap(rubrics["dimensions"]))}


def _filter_lines(filters: dict[str, Any]) -> list[str]:
    from reporting.analysis.filters import Filters

    if not filters:
        return []
    return Filters(
        tuple(filters.get("categories", ())),
        tuple(filters.get("severities", ())),
        filters.get("outcome"),
        tuple(filters.get("failure_modes", ())),
        filters.get("text", ""),
    ).describe()


def _page(template: str, figures: dict[str, Any], timestamp: Optional[str], **context: Any) -> str:
    with gc_paused():
        return (
            environment()
            .get_template(template)
            .render(
                generator={"name": "runlens", "version": __version__},
                generated_at=generated_at(timestamp),
                figures={name: figure_json(fig) for name, fig in figures.items()},
                plotly_js=_trusted_plotly_js(),
                **context,
            )
        )


def render_compare_html(
    comparison: dict[str, Any],
    failing: list[dict[str, Any]],
    passing: list[dict[str, Any]],
    *,
    title: Optional[str] = None,
    timestamp: Optional[str] = None,
) -> str:
    """One self-contained file comparing two runs (``compare.compare_runs`` + ``changed_cases`` rows)."""
    return _page(
        "compare.html.j2",
        {"category_delta": charts.category_delta_chart(comparison)},
        timestamp,
        title=title or f"RunLens comparison: {comparison['base']['run_id']} vs {comparison['candidate']['run_id']}",
        cmp=comparison,
        failing=failing,
        passing=passing,
        reading=comparison_reading(comparison),
        methodology=COMPARE_METHODOLOGY,
    )


def render_trend_html(trend: dict[str, Any], *, title: Optional[str] = None, timestamp: Optional[str] = None) -> str:
    """One self-contained file with the trend of a suite over runs (``compare.trend``)."""
    return _page(
        "trend.html.j2",
        {"trend": charts.trend_chart(trend), "trend_categories": charts.trend_category_chart(trend)},
        timestamp,
        title=title or f"RunLens trend: {trend['suite']}",
        trend=trend,
    )
