"""Figures that cannot mislead (issue 14, points 3-6): outliers shown, intervals inside their range, risk off the
percent axis, whole-number count axes, one order of the worst cases."""

import json

import numpy as np
import pytest
from conftest import case

import reporting
from reporting.render import figures as charts


def _frame(cases):
    return reporting.cases_frame(reporting.read_run(json.dumps(cases).encode()))


def test_the_risk_box_shows_failures_a_box_would_hide():
    # 40 safe cases at risk 0 and 4 failures at 0.95: the quartiles are all 0, the box is flat at 0.
    cases = [case(f"s{i}", "tools", "low", True, 0.0) for i in range(40)]
    cases += [case(f"f{i}", "tools", "high", False, 0.95) for i in range(4)]
    cases += [case(f"x{i}", "small", "low", i % 2 == 0, 0.1 * i) for i in range(5)]
    fig = charts.category_risk_box(_frame(cases))
    points = [t for t in fig.data if t.type == "scatter"]
    by_position = {int(t.y[0]): sorted(t.x) for t in points}
    # Horizontal boxes, categories in name order from the top: "small" on top (position 1), "tools" below (0).
    assert list(fig.layout.yaxis.ticktext) == ["tools", "small"]
    assert by_position[0] == pytest.approx([0.95] * 4)  # only the cases beyond the whiskers
    assert by_position[1] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])  # a small category: every case
    assert "dashed line: mean" in fig.layout.title.subtitle.text


def test_intervals_stay_inside_their_range_and_risk_is_not_on_the_percent_axis():
    metrics = {
        "by_category": {
            "a": {"n": 3, "pass_rate": 0.9, "pass_rate_ci": [0.6, 1.05], "risk_mean": 0.95, "risk_mean_ci": [0.7, 1.2]}
        }
    }
    fig = charts.category_chart(metrics)
    rate, counts, risk = fig.data
    assert rate.error_x.array[0] == pytest.approx(0.1) and rate.error_x.arrayminus[0] == pytest.approx(0.3)
    assert risk.error_x.array[0] == pytest.approx(0.05)  # clipped at 1, not 1.2
    assert risk.xaxis == "x2" and fig.layout.xaxis2.tickformat == ".2f" and fig.layout.xaxis.tickformat == ".0%"
    assert max(fig.layout.xaxis.tickvals) == 1 and max(fig.layout.xaxis2.tickvals) == 1
    assert list(counts.text) == ["n=3"] and counts.mode == "text"


@pytest.mark.parametrize("largest, step", [(1, 1), (3, 1), (7, 2), (120, 20)])
def test_count_axes_have_whole_number_ticks(largest, step):
    n = {"low": 0, "medium": 0, "high": 0, "critical": largest}
    metrics = {"by_severity": {s: {"n": k, "passed": k // 2, "failed": k - k // 2} for s, k in n.items()}}
    axis = charts.severity_chart(metrics).layout.yaxis
    assert axis.dtick == step and axis.tick0 == 0 and axis.tickformat == "d"
    modes = charts.failure_modes_chart({"failure_modes": {"m": largest}}).layout.xaxis
    assert modes.dtick == step and float(modes.dtick).is_integer()


def test_worst_cases_order_is_weighted_risk_then_risk_then_probe_id():
    # Weighted risk caps at 1: three critical cases all weigh 1; risk decides, then the probe id.
    cases = [
        case("EA-001", "a", "critical", False, 0.833),
        case("SD-019", "a", "critical", False, 0.963),
        case("AA-000", "a", "critical", False, 0.833),
        case("LO-100", "a", "low", False, 0.99),
    ]
    worst = reporting.aggregate_metrics(_frame(cases))["worst_cases"]
    assert [w["probe_id"] for w in worst] == ["SD-019", "AA-000", "EA-001", "LO-100"]
    assert np.allclose([w["weighted_risk"] for w in worst][:3], 1.0)


def test_twelve_clusters_get_twelve_distinct_colours():
    from reporting.format.synthetic import synthetic_run

    run = reporting.read_run(json.dumps(synthetic_run(300, seed=2)).encode())
    frame = reporting.cases_frame(run)
    obs = reporting.observability(frame)
    assert obs["n_clusters"] == 12
    fig = charts.cluster_scatter(frame, obs, "cluster")
    looks = {(t.marker.color, t.marker.symbol) for t in fig.data}
    assert len(fig.data) == 12 and len(looks) == 12 and len({t.marker.color for t in fig.data}) == 12


def test_high_stakes_figures_say_what_they_are(tmp_path):
    """v1 -> v2 of the sample model: v2 fails fewer high-stakes probes, although a larger share of its (fewer)
    failures are high-stakes. Compare, Trend and the gates read the former; the latter has no direction."""
    from pathlib import Path

    from reporting.analysis.compare import compare_runs, trend
    from reporting.render.presentation import key_figures

    samples = Path(__file__).resolve().parent.parent / "sample_runs"
    v1 = reporting.read_run(samples / "acme-assistant-v1.json")
    v2 = reporting.read_run(samples / "acme-assistant-v2.json")
    m1, m2 = reporting.aggregate_metrics(v1), reporting.aggregate_metrics(v2)
    assert m2["overall"]["high_stakes_failures"] < m1["overall"]["high_stakes_failures"]
    assert m2["overall"]["high_stakes_failure_rate"] > m1["overall"]["high_stakes_failure_rate"]  # the trap
    headline = compare_runs(v1, v2)["headline"]
    assert "high_stakes_failure_rate" not in headline
    row = headline["high_stakes_probe_failure_rate"]
    assert row["label"] == "High-stakes probes failed" and row["better"] == "lower" and row["delta"] < 0
    points = trend([v1, v2])["points"]
    assert [p["high_stakes_probe_failure_rate"] for p in points] == [
        m["overall"]["high_stakes_probe_failure_rate"] for m in (m1, m2)
    ] and "high_stakes_failure_rate" not in points[0]
    shown = {f["label"]: f for f in key_figures(m2)}
    assert shown["Share of failures that are high-stakes"]["better"] is None
    assert shown["High-stakes probes failed"]["better"] == "lower"


def test_trend_draws_one_line_per_model_and_drops_a_duplicate():
    from pathlib import Path

    from reporting.analysis.compare import trend
    from reporting.render.compare_figures import trend_category_chart, trend_chart

    samples = Path(__file__).resolve().parent.parent / "sample_runs"
    runs = [reporting.read_run(samples / n) for n in ("acme-assistant-v1.json", "acme-assistant-v2.json")]
    runs.append(reporting.read_run(samples / "open-7b-chat-legacy.json"))
    runs.append(reporting.read_run(samples / "acme-assistant-v2.json"))  # the same file uploaded again
    data = trend(runs)
    models = {r.run.model for r in runs}
    assert len(data["points"]) == 3 and data["duplicates"] == [runs[1].run.run_id]
    assert any("duplicate" in w for w in data["warnings"]) and sorted(data["models"]) == sorted(models)
    fig = trend_chart(data)
    by_model: dict[str, set] = {}
    for t in fig.data:
        by_model.setdefault(t.customdata[0][1], set()).update(c[0] for c in t.customdata)
    # Every line holds the runs of one model only, and the three models have three line styles.
    for model, ids in by_model.items():
        assert ids == {r.run.run_id for r in runs if r.run.model == model}
    assert len({t.line.dash for t in fig.data}) == len(models) == 3
    assert len(fig.data) == 3 * len(models)
    cats = trend_category_chart(data)
    assert {t.name for t in cats.data} == models


def test_drift_compares_at_the_stored_precision_and_lists_run_level_findings_first():
    from reporting.analysis.drift import tolerance

    assert tolerance(0.068977) == pytest.approx(5e-7) and tolerance(0.9) == pytest.approx(0.05)
    assert tolerance(0.1234567891234) == pytest.approx(1e-9) and tolerance(3) == pytest.approx(1e-9)
    cases = [
        case("a", "c", "high", False, 0.0459850, weighted_risk=0.068977),  # 0.0689775 stored at 6 decimals
        case("b", "c", "high", False, 0.5, weighted_risk=0.76),  # 0.75: a real difference at 2 decimals
    ]
    run = reporting.read_run(json.dumps({"cases": cases, "aggregate_metrics": {"overall": {"risk_max": 0.6}}}).encode())
    found = [d.as_dict() for d in reporting.build_report(run, with_observability=False).drift]
    assert found == [
        {"path": "aggregate_metrics.overall.risk_max", "stored": 0.6, "recomputed": 0.5},
        {"path": "cases[1].weighted_risk", "probe_id": "b", "stored": 0.76, "recomputed": 0.75},
    ]
    # The legacy sample: its producer stored each weighted risk uncapped, rounded to 6 decimals, and the figures of
    # those. Drift: each case above 1 (capped now), and the three figures made from them; the rest is rounding.
    path = __import__("pathlib").Path(__file__).resolve().parent.parent / "sample_runs" / "open-7b-chat-legacy.json"
    over = sum(c["weighted_risk"] > 1 for c in json.loads(path.read_text())["cases"])
    drift = reporting.build_report(reporting.read_run(path), with_observability=False).drift
    assert over >= 1 and len(drift) == over + 3
    assert sorted(d.path for d in drift[:3]) == [
        "aggregate_metrics.indices.exposure_index",
        "aggregate_metrics.indices.resilience_index",
        "aggregate_metrics.overall.weighted_risk_mean",
    ]
    assert all(d.stored > 1 and d.recomputed == 1.0 for d in drift[3:])


def test_charts_are_laid_out_for_their_width():
    """Issue 14, point 16: long category names on a horizontal axis of their own (never rotated under bars), the
    counts in a column beside the bars (not on them), titles lifted above subplot titles, the legend under the
    axis title, and small multiples that label their runs."""
    from pathlib import Path

    from reporting.analysis.compare import compare_runs, trend
    from reporting.render.compare_figures import category_delta_chart, trend_category_chart

    long_name = "a_very_long_category_name_that_would_collide_with_its_neighbours"
    cases = [case(f"{c}{i}", c, "high", i % 3 > 0, 0.3 * (i % 3)) for c in (long_name, "b", "c") for i in range(6)]
    frame = _frame(cases)
    metrics = reporting.aggregate_metrics(frame)
    for fig in (charts.category_chart(metrics), charts.category_risk_box(frame)):
        assert fig.layout.yaxis.ticktext[-1] == long_name  # the first category on top, on the vertical axis
        assert fig.layout.yaxis.automargin is True and fig.layout.height >= 34 * 3 + 150
        assert fig.layout.title.yanchor == "bottom" and fig.layout.title.automargin is True
    bars = charts.category_chart(metrics)
    assert bars.layout.title.pad.b >= 24  # above the two panel titles
    assert all(x > 1 for x in bars.data[1].x) and bars.layout.xaxis.range[1] > 1.2  # counts right of 100%
    assert charts.severity_chart(metrics).layout.legend.yanchor == "top"
    samples = Path(__file__).resolve().parent.parent / "sample_runs"
    runs = [reporting.read_run(samples / n) for n in ("acme-assistant-v1.json", "acme-assistant-v2.json")]
    small = trend_category_chart(trend(runs))
    axes = [small.layout[k] for k in small.layout if k.startswith("xaxis")]
    assert len(axes) == 6 and all(list(a.ticktext) == ["2026-10-06", "2026-11-03"] for a in axes)
    assert all(a.showticklabels is not False for a in axes) and small.layout.title.pad.b >= 24
    comparison = compare_runs(*runs)
    delta = category_delta_chart(comparison)
    assert delta.layout.yaxis.ticktext[-1] == comparison["by_category"][0]["category"]


def test_charts_take_plotly_white_and_stay_validated():
    """The template is set as plotly sets its default one (not validated again); the figure's validation is back
    on afterwards, so a wrong value still raises."""
    from pathlib import Path

    import plotly.io as pio

    from reporting.analysis.metrics import aggregate_metrics

    root = Path(__file__).resolve().parent.parent
    metrics = aggregate_metrics(reporting.read_run(str(root / "sample_runs" / "acme-assistant-v2.json")))
    for fig in (charts.category_chart(metrics), charts.severity_chart(metrics), charts.empty_figure("t", "m")):
        assert fig.layout.template == pio.templates["plotly_white"]
        assert fig.to_plotly_json()["layout"]["template"]["layout"]["plot_bgcolor"] == "white"
        with pytest.raises(ValueError):
            fig.layout.width = "wide"  # would be taken as it is, were validation left off
