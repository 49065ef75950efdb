"""Figures of attack success by strategy (issue 32, point 3), for the dashboard and the HTML alike: the rate per
strategy with its Wilson interval, the strategy x category heat map, and the turns multi-turn attacks took.

Strategy and category names are report text: they never key an axis (numeric positions with the names as tick
text) and pass through ``esc``, as in ``reporting.render.figures``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from reporting.render.figures import FAIL_COLOUR, GROUP_COLOURS, _bar_height, _error_bars, _layout, _name_axis, esc


def has_strategies(metrics: Mapping[str, Any]) -> bool:
    return bool(metrics.get("by_strategy"))


def strategy_chart(metrics: Mapping[str, Any]) -> go.Figure:
    """Attack success rate per strategy (failed / cases of that strategy), with its 95% Wilson interval."""
    by_strategy = metrics.get("by_strategy") or {}
    names = list(by_strategy)
    rates = [by_strategy[s]["attack_success_rate"] for s in names]
    positions, axis = _name_axis(names)
    fig = go.Figure(
        go.Bar(
            y=positions,
            x=rates,
            orientation="h",
            marker_color=FAIL_COLOUR,
            error_x=_error_bars(rates, [by_strategy[s]["attack_success_rate_ci"] for s in names]),
            text=[
                f"{by_strategy[s]['attacks_succeeded']} of {by_strategy[s]['n']}"
                + (" (low n)" if by_strategy[s]["low_n"] else "")
                for s in names
            ],
            textposition="outside",
            customdata=[esc(s) for s in names],
            hovertemplate="%{customdata}: attack success %{x:.1%} (%{text})<extra></extra>",
            showlegend=False,
        )
    )
    fig.update_yaxes(**axis, autorange="reversed")
    fig.update_xaxes(range=[0, 1.15], tickformat=".0%", title="attack success rate (failed cases)")
    return _layout(fig, "Attack success by strategy (95% Wilson interval)", height=_bar_height(len(names)))


def strategy_heatmap(metrics: Mapping[str, Any]) -> go.Figure:
    """Attack success for each strategy x category pair with cases; empty cells are pairs with none."""
    cells = metrics.get("by_strategy_category") or {}
    strategies = list(cells)
    categories = sorted({c for row in cells.values() for c in row})
    z, text = [], []
    for s in strategies:
        z.append([cells[s][c]["attack_success_rate"] if c in cells[s] else None for c in categories])
        text.append(
            [
                f"{cells[s][c]['attack_success_rate']:.0%} (n={cells[s][c]['n']})" if c in cells[s] else ""
                for c in categories
            ]
        )
    xs, x_axis = _name_axis(categories)
    ys, y_axis = _name_axis(strategies)
    fig = go.Figure(
        go.Heatmap(
            x=xs,
            y=ys,
            z=z,
            text=text,
            texttemplate="%{text}",
            zmin=0,
            zmax=1,
            colorscale="Reds",
            colorbar=dict(title="attack success", tickformat=".0%"),
            hovertemplate="%{text}<extra></extra>",
        )
    )
    fig.update_xaxes(**x_axis, tickangle=-30)
    fig.update_yaxes(**y_axis, autorange="reversed")
    return _layout(fig, "Attack success by strategy and category", height=max(300, 40 * len(strategies) + 200))


def turns_to_break_chart(metrics: Mapping[str, Any]) -> go.Figure:
    """How many user turns each strategy's successful multi-turn attacks took: cases per number of turns."""
    by_strategy = metrics.get("by_strategy") or {}
    fig = go.Figure()
    for i, (name, figures) in enumerate(item for item in by_strategy.items() if item[1]["turns_to_break"]):
        turns = figures["turns_to_break"]
        fig.add_trace(
            go.Bar(
                x=[int(t) for t in turns],
                y=list(turns.values()),
                name=esc(name),
                marker_color=GROUP_COLOURS[i % len(GROUP_COLOURS)],
                hovertemplate=esc(name) + ": %{y} case(s) broke after %{x} user turn(s)<extra></extra>",
            )
        )
    fig.update_xaxes(title="user turns until the judged answer", dtick=1)
    fig.update_yaxes(title="successful attacks")
    return _layout(fig, "Turns a multi-turn attack took to break the model", barmode="group")


def strategy_figures(metrics: Mapping[str, Any]) -> dict[str, go.Figure]:
    """The strategy figures of a run that names strategies (none otherwise)."""
    if not has_strategies(metrics):
        return {}
    figures = {"strategies": strategy_chart(metrics), "strategy_heatmap": strategy_heatmap(metrics)}
    if any(f["turns_to_break"] for f in metrics["by_strategy"].values()):
        figures["turns_to_break"] = turns_to_break_chart(metrics)
    return figures
