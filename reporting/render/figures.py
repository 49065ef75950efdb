"""The one set of Plotly figure builders: the dashboard and the HTML export draw the same charts.

Text from a report (category names, failure modes, probe ids, task text) is hostile and may be
any string. Two rules keep every chart honest whatever the names:

- Names never key an axis: Plotly's category axes look names up in plain JavaScript objects, so a
  category called ``constructor`` or ``__proto__`` would vanish. Data-derived axes are numeric
  positions 0..n-1, with the names as tick text (``_name_axis``).
- Names pass through ``plotly_text``: &, < and > are escaped (Plotly renders a subset of HTML and
  turns exactly those entities back into characters), quotes are left as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from reporting.format.schema import SEVERITIES
from reporting.textsafe import plotly_text

PASS_COLOUR, FAIL_COLOUR, RISK_COLOUR = "#2e7d32", "#c62828", "#ef6c00"
SEVERITY_COLOURS = {"low": "#90caf9", "medium": "#42a5f5", "high": "#ef6c00", "critical": "#b71c1c"}
SCATTER_CAP = 20000  # points drawn in the scatter; a deterministic sample beyond this
HOVER_TASK_CHARS = 80
COLOR_CHOICES = ("cluster", "category", "severity", "outcome")
GROUP_COLOURS = tuple(qualitative.Dark24)
GROUP_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross")


def esc(text: Any) -> str:
    """Any report text as Plotly shows it literally."""
    return plotly_text(text)


def _name_axis(names: list[Any]) -> tuple[list[int], dict[str, Any]]:
    """Positions for a data-derived axis and the axis settings that label them with the names."""
    positions = list(range(len(names)))
    return positions, {
        "tickmode": "array",
        "tickvals": positions,
        "ticktext": [esc(n) for n in names],
        "range": [-0.5, len(names) - 0.5] if names else None,
        "type": "linear",
    }


def _white(fig: go.Figure) -> None:
    """The ``plotly_white`` template as setting it by name gives it, validated once a process (``_validated_white``)
    and then set without validating it again, as plotly sets its default template (8 ms a chart otherwise)."""
    layout = fig.layout
    was = layout._validate
    layout._validate = False
    try:
        layout.template = _validated_white()
    finally:
        layout._validate = was


@lru_cache(maxsize=1)
def _validated_white() -> Any:
    return go.Figure(layout={"template": "plotly_white"}).layout.template


def _layout(fig: go.Figure, title: str, subtitle: str = "", subplot_titles: bool = False, **kwargs: Any) -> go.Figure:
    """The common layout: the title above the plot area with room of its own (lifted above subplot titles, so it
    never overlaps one), an optional subtitle saying how to read the chart, the legend in a row under the x axis
    (anchored by its top, so it never covers the axis title), margins that grow to fit long tick labels."""
    title_spec: dict[str, Any] = {"text": title, "x": 0, "xanchor": "left", "xref": "paper", "y": 1}
    title_spec.update(yanchor="bottom", yref="paper", pad=dict(b=30 if subplot_titles else 10), automargin=True)
    if subtitle:
        title_spec["subtitle"] = dict(text=subtitle, font=dict(size=11))
    _white(fig)
    fig.update_layout(
        title=title_spec,
        margin=dict(l=60, r=20, t=40, b=50, autoexpand=True),
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.12, yanchor="top"),
        **kwargs,
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def empty_figure(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=esc(message), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, title)


def category_chart(metrics: Mapping[str, Any]) -> go.Figure:
    """Pass rate and mean risk per category, side by side as horizontal bars (long category names stay whole at
    any width), each on its own axis: pass rate in percent, risk as a 0-1 score. Counts beside the bars."""
    from plotly.subplots import make_subplots

    by_category = metrics["by_category"]
    if not by_category:
        return empty_figure("Pass rate and mean risk by category", "No cases")
    names = list(by_category)[::-1]  # horizontal bars draw bottom-up: the first category on top
    positions, axis = _name_axis(names)
    labels = [[esc(n)] for n in names]
    rates = [by_category[c]["pass_rate"] for c in names]
    risks = [by_category[c]["risk_mean"] for c in names]
    counts = [f"n={by_category[c]['n']}" + (" (low n)" if by_category[c].get("low_n") else "") for c in names]
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=("pass rate", "mean risk (0-1)"),
    )
    fig.add_trace(
        go.Bar(
            name="pass rate (95% CI)",
            x=rates,
            y=positions,
            orientation="h",
            marker_color=PASS_COLOUR,
            customdata=labels,
            error_x=_error_bars(rates, [by_category[c].get("pass_rate_ci") for c in names]),
            hovertemplate="%{customdata[0]}<br>pass rate %{x:.1%}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    # The counts in a column of their own, right of the 100% line: never on a bar or an interval.
    fig.add_trace(
        go.Scatter(
            x=[1.04] * len(names),
            y=positions,
            mode="text",
            text=counts,
            textposition="middle right",
            hoverinfo="skip",
            showlegend=False,
            cliponaxis=False,
        ),
        row=1,
        col=1,
    )
    # Risk is a 0-1 score, not a share: it gets an axis of its own, in plain numbers, beside the pass-rate axis.
    fig.add_trace(
        go.Bar(
            name="mean risk, 0-1 score (95% CI)",
            x=risks,
            y=positions,
            orientation="h",
            marker_color=RISK_COLOUR,
            customdata=labels,
            error_x=_error_bars(risks, [by_category[c].get("risk_mean_ci") for c in names]),
            hovertemplate="%{customdata[0]}<br>mean risk %{x:.3f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(**axis, automargin=True)
    fig.update_layout(
        xaxis=dict(range=[0, 1.35], tickvals=[0, 0.25, 0.5, 0.75, 1], tickformat=".0%"),
        xaxis2=dict(range=[0, 1.05], tickvals=[0, 0.25, 0.5, 0.75, 1], tickformat=".2f"),
    )
    return _layout(
        fig, "Pass rate and mean risk by category (95% CI)", subplot_titles=True, height=_bar_height(len(names))
    )


def _bar_height(rows: int) -> int:
    """Height of a chart of horizontal bars: room for each row's label, never squashed."""
    return max(260, 34 * rows + 150)


def _error_bars(values: list, intervals: list, bounds: tuple[float, float] = (0.0, 1.0)) -> dict:
    """Plotly asymmetric error bars from [low, high] intervals (none where undefined), clipped to the range the
    quantity can take: a rate or a 0-1 score never shows an interval past 0 or 1."""
    low, high = bounds
    clipped = [None if ci is None else (max(low, ci[0]), min(high, ci[1])) for ci in intervals]
    plus = [None if v is None or ci is None else max(0.0, ci[1] - v) for v, ci in zip(values, clipped)]
    minus = [None if v is None or ci is None else max(0.0, v - ci[0]) for v, ci in zip(values, clipped)]
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1.2, "width": 4}


def severity_pass_rate_chart(metrics: Mapping[str, Any]) -> go.Figure:
    """Pass rate per severity tier with its 95% Wilson interval; low-n tiers are labelled."""
    by_severity = metrics["by_severity"]
    rates = [by_severity[s]["pass_rate"] for s in SEVERITIES]
    fig = go.Figure(
        go.Scatter(
            x=list(SEVERITIES),
            y=rates,
            mode="markers+text",
            marker=dict(size=11, color=[SEVERITY_COLOURS[s] for s in SEVERITIES]),
            error_y=_error_bars(rates, [by_severity[s].get("pass_rate_ci") for s in SEVERITIES]),
            text=[f"n={by_severity[s]['n']}" + (" (low n)" if by_severity[s].get("low_n") else "") for s in SEVERITIES],
            textposition="middle right",
            hovertemplate="%{x}: pass rate %{y:.1%} (%{text})<extra></extra>",
            showlegend=False,
        )
    )
    fig.update_xaxes(categoryorder="array", categoryarray=list(SEVERITIES))
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%", title="pass rate")
    return _layout(fig, "Pass rate by severity (95% Wilson interval)")


ALL_POINTS_UP_TO = 30  # a category with at most this many cases shows every case as a point
MAX_OUTLIER_POINTS = 200  # per category; beyond, the highest-risk outliers


SCATTER_COLUMNS = ("probe_id", "category", "severity", "passed", "risk_score", "task")  # what the points show
RISK_BOX_COLUMNS = ("category", "risk_score", "passed", "probe_id")


def category_risk_box(frame: pd.DataFrame) -> go.Figure:
    """Distribution of risk per category, as precomputed box statistics (small at any run size), with the cases
    outside the whiskers drawn as points, and every case when a category is small: a box at 0 cannot hide a
    handful of failures at 0.95."""
    if frame.empty:
        return empty_figure("Risk distribution by category", "No cases")
    fig = go.Figure()
    drawn = frame[list(RISK_BOX_COLUMNS)].groupby("category", observed=True)  # no texts
    groups = sorted(drawn, key=lambda kv: kv[0], reverse=True)
    positions, axis = _name_axis([name for name, _ in groups])  # bottom-up: the first category on top
    for position, (name, group) in zip(positions, groups):
        risk = group["risk_score"].to_numpy(dtype=float)
        q1, median, q3 = np.percentile(risk, [25, 50, 75])
        iqr = q3 - q1
        low = risk[risk >= q1 - 1.5 * iqr].min()
        high = risk[risk <= q3 + 1.5 * iqr].max()
        fig.add_trace(
            go.Box(
                name=esc(name),
                y=[position],
                q1=[q1],
                median=[median],
                q3=[q3],
                lowerfence=[low],
                upperfence=[high],
                mean=[risk.mean()],
                orientation="h",
                boxpoints=False,
                marker_color=RISK_COLOUR,
                showlegend=False,
                hoverinfo="x",
            )
        )
        shown = group if len(group) <= ALL_POINTS_UP_TO else group[(risk < low) | (risk > high)]
        if len(shown):
            shown = shown.nlargest(MAX_OUTLIER_POINTS, "risk_score")
            fig.add_trace(
                go.Scatter(
                    y=[position] * len(shown),
                    x=shown["risk_score"].to_numpy(dtype=float),
                    mode="markers",
                    marker=dict(color=np.where(shown["passed"].to_numpy(dtype=bool), PASS_COLOUR, FAIL_COLOUR), size=6),
                    customdata=[[esc(p)] for p in shown["probe_id"]],
                    hovertemplate="%{customdata[0]}: risk %{x:.3f}<extra></extra>",
                    showlegend=False,
                )
            )
    fig.update_yaxes(**axis, automargin=True)
    fig.update_xaxes(range=[-0.02, 1.02], title="risk score (0-1)")
    return _layout(
        fig,
        "Risk distribution by category",
        subtitle="box: quartiles, dashed line: mean, dots: cases past the whiskers "
        f"(all when n \u2264 {ALL_POINTS_UP_TO}), red = failed",
        height=_bar_height(len(groups)),
    )


def severity_chart(metrics: Mapping[str, Any]) -> go.Figure:
    """Passed and failed cases per severity tier, stacked, tiers low to critical."""
    by_severity = metrics["by_severity"]
    fig = go.Figure()
    for outcome, colour in (("passed", PASS_COLOUR), ("failed", FAIL_COLOUR)):
        fig.add_bar(
            name=outcome,
            x=list(SEVERITIES),
            y=[by_severity[s][outcome] for s in SEVERITIES],
            marker_color=colour,
            hovertemplate="%{x}: %{y} " + outcome + "<extra></extra>",
        )
    fig.update_xaxes(categoryorder="array", categoryarray=list(SEVERITIES))
    fig.update_yaxes(title="cases", **count_axis(max((by_severity[s]["n"] for s in SEVERITIES), default=0)))
    return _layout(fig, "Pass / fail by severity", barmode="stack")


def count_axis(largest: int, ticks: int = 6) -> dict[str, Any]:
    """An axis of case counts: whole-number ticks only (never 0.5 cases)."""
    step = max(1, -(-int(largest) // ticks))
    return {"tick0": 0, "dtick": step, "tickformat": "d", "rangemode": "tozero"}


def failure_modes_chart(metrics: Mapping[str, Any]) -> go.Figure:
    """Detected failure modes, most frequent first."""
    modes = metrics["failure_modes"]
    if not modes:
        return empty_figure("Detected failure modes", "No failure mode detected")
    names = list(modes)[::-1]  # horizontal bars draw bottom-up: most frequent on top
    positions, axis = _name_axis(names)
    fig = go.Figure(
        go.Bar(
            x=[modes[m] for m in names],
            y=positions,
            orientation="h",
            customdata=[[esc(m)] for m in names],
            marker_color=FAIL_COLOUR,
            hovertemplate="%{customdata[0]}: %{x} case(s)<extra></extra>",
        )
    )
    fig.update_yaxes(**axis)
    fig.update_xaxes(title="cases", **count_axis(max(modes.values())))
    return _layout(fig, "Detected failure modes", height=max(300, 28 * len(names) + 120))


def scatter_sample(n: int, cap: int = SCATTER_CAP) -> np.ndarray:
    """Positions drawn in the scatter: all up to ``cap``, else an evenly spaced, deterministic sample."""
    if n <= cap:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, cap).round().astype(int))


def cluster_scatter(
    frame: pd.DataFrame,
    obs: Mapping[str, Any],
    color_by: str = "cluster",
    cap: int = SCATTER_CAP,
    by_id: bool = False,
) -> go.Figure:
    """The 2-D projection, one trace per group of the chosen colouring; customdata[0] is the probe id. ``by_id``:
    the points are paired with the rows by probe id even when they are as many (``Report.points_rows``)."""
    title = "Case geometry (2-D SVD projection)"
    if obs.get("skipped"):
        return empty_figure(title, f"Observability skipped: {obs.get('reason', '')}")
    if color_by not in COLOR_CHOICES:
        raise ValueError(f"color_by must be one of {COLOR_CHOICES}")
    points = pd.DataFrame(obs["cases"], columns=["probe_id", "cluster_id", "scatter_x", "scatter_y"])
    data = frame[list(SCATTER_COLUMNS)].reset_index(drop=True)
    # a point for every case in the case table's order, else (a large run) the sample's cases' points, by probe id
    aligned = len(points) == len(data) and not by_id
    data = pd.concat([data, points.iloc[:, 1:]], axis=1) if aligned else data.merge(points)
    data = data.iloc[scatter_sample(len(data), cap)]
    groups = {
        "cluster": data["cluster_id"].map(lambda c: f"cluster {c}"),
        "category": data["category"].map(esc),
        "severity": data["severity"].astype(str),
        "outcome": np.where(data["passed"], "passed", "failed"),
    }[color_by]
    custom = np.column_stack(
        [
            data["probe_id"].to_numpy(dtype=object),
            data["category"].map(esc).to_numpy(dtype=object),
            data["severity"].astype(str).to_numpy(dtype=object),
            data["risk_score"].to_numpy(dtype=float).round(3).astype(object),
            data["task"]
            .fillna("")
            .map(lambda t: esc(t[:HOVER_TASK_CHARS] + ("..." if len(t) > HOVER_TASK_CHARS else "")))
            .to_numpy(dtype=object),
            data["probe_id"].map(esc).to_numpy(dtype=object),
        ]
    )
    order = sorted(pd.unique(groups), key=lambda g: (SEVERITIES.index(g) if g in SEVERITIES else -1, len(g), g))
    fig = go.Figure()
    palette = {"passed": PASS_COLOUR, "failed": FAIL_COLOUR, **SEVERITY_COLOURS}
    others = 0
    for group in order:
        mask = np.asarray(groups == group)
        marker: dict[str, Any] = {"size": 7, "opacity": 0.75}
        if group in palette:
            marker["color"] = palette[group]
        else:
            # Plotly's default colour cycle repeats after 10 (cluster 0 and cluster 10 would look alike): 24
            # distinct colours, then a new marker shape for each further round.
            marker["color"] = GROUP_COLOURS[others % len(GROUP_COLOURS)]
            marker["symbol"] = GROUP_SYMBOLS[(others // len(GROUP_COLOURS)) % len(GROUP_SYMBOLS)]
            others += 1
        fig.add_trace(
            go.Scattergl(
                x=data["scatter_x"].to_numpy()[mask],
                y=data["scatter_y"].to_numpy()[mask],
                mode="markers",
                name=str(group),
                customdata=custom[mask],
                marker=marker,
                hovertemplate="%{customdata[5]}<br>%{customdata[1]} / %{customdata[2]}<br>risk %{customdata[3]}"
                "<br>%{customdata[4]}<extra></extra>",
            )
        )
    note = f" (showing {len(data):,} of {len(points):,} cases)" if len(data) < len(points) else ""
    fig.update_xaxes(title="component 1")
    fig.update_yaxes(title="component 2")
    return _layout(fig, title + note, dragmode="lasso", height=520)
