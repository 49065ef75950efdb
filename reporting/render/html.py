"""Static HTML export: one self-contained, offline file rendered from Jinja templates.

One environment, autoescaping on, StrictUndefined. Report data reaches the page as JSON
inside ``<script type="application/json">`` elements through ``|tojson`` (which escapes
``<``, ``>``, ``&`` and ``'``, and this environment's encoder U+2028 and U+2029 too), and the page's own script
inserts text with ``textContent``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from functools import lru_cache
from itertools import chain
from typing import Any, Optional

import plotly.io as pio
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape
from plotly.offline import get_plotlyjs

from reporting._gc import gc_paused
from reporting._time import generated_at
from reporting._version import __version__
from reporting.analysis.filters import SEARCH_COLUMNS
from reporting.analysis.judges import disagreements, judge_provenance
from reporting.analysis.registry import TRENDED
from reporting.format.schema import SEVERITIES
from reporting.render import compare_figures
from reporting.render import figures as charts
from reporting.render.conversation import print_conversations
from reporting.render.first_screen import first_screen
from reporting.render.framework_figures import (
    ITEM_COLUMNS,
    NO_REFERENCE,
    STANDING_COLUMNS,
    framework_sections,
    standing_section,
)
from reporting.render.judge_card import judge_validity
from reporting.render.page_json import DUMPS_KWARGS, dumps_without_line_separators, pieces
from reporting.render.presentation import (
    compare_methodology,
    comparison_reading,
    fmt_interval,
    fmt_number,
    fmt_p,
    fmt_percent,
    fmt_signed,
    fmt_signed_interval,
    key_figures,
    methodology,
    mutual_information_reading,
    repetitions_reading,
    sampled_note,
)
from reporting.render.strategy_figures import strategy_figures
from reporting.render.tables import (
    CASE_TABLE,
    CATEGORY_TABLE,
    CLIP,
    PRINT_CASE_CAP,
    PRINT_CASE_TABLE,
    SEVERITY_TABLE,
    STRATEGY_TABLE,
    cell_text,
    print_rows,
)
from reporting.report.model import Report
from reporting.report.serialise import report_document, text_cap
from reporting.resources import templates_dir

HTML_SCATTER_CAP = 5000  # points drawn in the exported scatter
HTML_CASE_CAP = 100_000  # cases in the HTML file's case table (failures first); every figure covers all of them
HTML_FAILING_CAP = 200  # failing case ids listed per framework item (the case table holds them all)
HTML_DISPUTED_CAP = 200  # cases where judges disagree, listed in the file (highest risk first)
SEARCH_LABELS = {"probe_id": "probe id", "probe_input": "input"}
FLOAT_DIGITS = 6  # per-case floats in the file (risk, weighted risk, weight)


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
    env.filters["cell"] = cell_text
    env.filters["tokens"] = unbroken_tokens
    env.policies["json.dumps_function"] = dumps_without_line_separators
    env.policies["json.dumps_kwargs"] = dict(DUMPS_KWARGS)
    return env


NOBREAK_TOKEN = 60  # words up to this long never break across lines in print (ids, dates, numbers)


def unbroken_tokens(value: Any) -> Markup:
    """Report text, escaped, with each word in a span that print keeps on one line: a probe id, run id or date
    is never split at a hyphen across lines (``EA-/001``). Longer words stay breakable so that nothing runs off
    the page."""
    text = "" if value is None else str(value)
    parts = []
    for word in text.split(" "):
        escaped = str(escape(word))
        parts.append(f'<span class="t">{escaped}</span>' if 0 < len(word) <= NOBREAK_TOKEN else escaped)
    return Markup(" ".join(parts))  # noqa: S704 - each word escaped above


def _trusted_plotly_js() -> Markup:
    # The plotly.js library bundled with the plotly package: trusted code, inlined once, unescaped.
    return Markup(get_plotlyjs())  # noqa: S704 - library code, not report data


def figure_json(fig: Any) -> dict[str, Any]:
    """A Plotly figure as plain JSON-ready data (numpy arrays turned into lists)."""
    return json.loads(pio.to_json(fig, validate=False))


def figures_json(report: Report) -> dict[str, Any]:
    """The shared chart builders' figures of a report (the export draws every chart of a run view), as plain
    JSON-ready dicts."""
    metrics, obs = report.metrics, report.observability_or_reason
    figures = {
        "categories": charts.category_chart(metrics),
        "risk_distribution": charts.category_risk_box(report.columns(charts.RISK_BOX_COLUMNS)),
        "severity": charts.severity_chart(metrics),
        "severity_pass_rate": charts.severity_pass_rate_chart(metrics),
        "failure_modes": charts.failure_modes_chart(metrics),
    }
    if obs is not None:
        points, by_id = report.points_rows(charts.SCATTER_COLUMNS)
        figures["scatter"] = charts.cluster_scatter(points, obs, "cluster", cap=HTML_SCATTER_CAP, by_id=by_id)
    if report.rubrics is not None and report.rubrics.dimensions:
        figures["dimensions"] = compare_figures.dimension_heatmap(report.rubrics.dimensions)
    figures.update(strategy_figures(report.metrics))
    return {name: figure_json(fig) for name, fig in figures.items()}


def page_data(report: Report) -> dict[str, Any]:
    """What goes into #report-data: the report's document in column form, texts capped for size."""
    held = min(report.shown, HTML_CASE_CAP)
    return report_document(
        report, layout="columns", text_cap=text_cap(held), float_digits=FLOAT_DIGITS, case_limit=HTML_CASE_CAP
    )


def render_html(report: Report, *, title: Optional[str] = None, timestamp: Optional[str] = None) -> str:
    """The self-contained HTML file of a report (``build_report``); it draws what the report holds."""
    return "".join(render_html_pieces(report, title=title, timestamp=timestamp))


def render_html_pieces(
    report: Report, *, title: Optional[str] = None, timestamp: Optional[str] = None
) -> Iterator[str]:
    """``render_html``'s text in pieces, for a file written as it is made: the page around the report data, then
    the data's JSON a thousand cases at a time (page_json), never the whole of it one string. The page is made
    here, before the first piece is asked for: only the data's encoding is left to the writer's loop."""
    with gc_paused():
        data = page_data(report)
        marker = f"<!--runlens-report-data-{secrets.token_hex(16)}-->"
        page = _render_html(report, data, title, timestamp, Markup(marker))  # noqa: S704 - our own comment
    head, found, tail = page.partition(marker)
    if not found or marker in tail:  # a report's text is escaped and the marker is new: never, but never guessed
        raise RuntimeError("the report data's place in the page was not found once")
    del page
    return chain((head,), pieces(data), (tail,))


def _render_html(
    report: Report, data: dict[str, Any], title: Optional[str], timestamp: Optional[str], data_json: Markup
) -> str:
    obs = data["observability"]
    context = {
        "title": title or f"RunLens report: {report.meta.run_id}",
        "run": data["run"],
        "generator": data["generator"],
        "generated_at": generated_at(timestamp),
        "filters": data["filters"],
        "filter_lines": report.filters.describe(),
        "key_figures": key_figures(report.metrics),
        "metrics": report.metrics,
        "severities": SEVERITIES,
        "obs": obs,
        "mi_reading": mutual_information_reading(obs),
        "drift": data["drift"],
        "methodology": methodology(data["run"].get("config")),
        "figures": figures_json(report),
        "data": data,
        "data_json": data_json,
        "rubrics": data["rubrics"],
        "plotly_js": _trusted_plotly_js(),
        "scatter_cap": HTML_SCATTER_CAP,
        "tables": {
            "cases": CASE_TABLE,
            "category": CATEGORY_TABLE,
            "severity": SEVERITY_TABLE,
            "strategy": STRATEGY_TABLE,
            "search_hint": ", ".join(SEARCH_LABELS.get(c, c) for c in SEARCH_COLUMNS),
            "search": SEARCH_COLUMNS,
            "clip": CLIP,
        },
        "disputed": disagreements(report.frame, limit=HTML_DISPUTED_CAP),
        "judge_provenance": judge_provenance(report.meta.config),
        "judge_validity": judge_validity(report),
        "disputed_cap": HTML_DISPUTED_CAP,
        "repetitions": repetitions_reading(report.metrics.get("repetitions") or {}),
        "sampled_note": sampled_note(obs),
        "review": report.review,
        "first_screen": first_screen(report),
        "frameworks": framework_sections(report.frameworks) if report.frameworks is not None else [],
        "standing": standing_section(report.frameworks),
        "no_reference": NO_REFERENCE,
        "item_columns": ITEM_COLUMNS,
        "standing_columns": STANDING_COLUMNS,
        "failing_cap": HTML_FAILING_CAP,
        "print_conversations": print_conversations(report.frame, report.worst_order),
        "print_cases": {
            "columns": PRINT_CASE_TABLE,
            "rows": print_rows(report.frame, report.worst_order, PRINT_CASE_CAP),
            "total": report.shown,
            "cap": PRINT_CASE_CAP,
        },
    }
    return environment().get_template("report.html.j2").render(**context)


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
        {"category_delta": compare_figures.category_delta_chart(comparison)},
        timestamp,
        title=title or f"RunLens comparison: {comparison['base']['run_id']} vs {comparison['candidate']['run_id']}",
        cmp=comparison,
        failing=failing,
        passing=passing,
        reading=comparison_reading(comparison),
        methodology=compare_methodology(comparison),
    )


def render_trend_html(trend: dict[str, Any], *, title: Optional[str] = None, timestamp: Optional[str] = None) -> str:
    """One self-contained file with the trend of a suite over runs (``compare.trend``)."""
    return _page(
        "trend.html.j2",
        {"trend": compare_figures.trend_chart(trend), "trend_categories": compare_figures.trend_category_chart(trend)},
        timestamp,
        title=title or f"RunLens trend: {trend['suite']}",
        trend=trend,
        trended=TRENDED,
    )
