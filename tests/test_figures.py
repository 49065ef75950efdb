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
    by_position = {int(t.x[0]): sorted(t.y) for t in points}
    # Categories are drawn in name order: "small" at 0, "tools" at 1.
    assert by_position[1] == pytest.approx([0.95] * 4)  # only the cases beyond the whiskers
    assert by_position[0] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])  # a small category: every case
    assert "dashed line: mean" in fig.layout.title.text


def test_intervals_stay_inside_their_range_and_risk_is_not_on_the_percent_axis():
    metrics = {
        "by_category": {
            "a": {"n": 3, "pass_rate": 0.9, "pass_rate_ci": [0.6, 1.05], "risk_mean": 0.95, "risk_mean_ci": [0.7, 1.2]}
        }
    }
    fig = charts.category_chart(metrics)
    rate, risk = fig.data
    assert rate.error_y.array[0] == pytest.approx(0.1) and rate.error_y.arrayminus[0] == pytest.approx(0.3)
    assert risk.error_y.array[0] == pytest.approx(0.05)  # clipped at 1, not 1.2
    assert risk.yaxis == "y2" and fig.layout.yaxis2.tickformat == ".2f" and fig.layout.yaxis.tickformat == ".0%"
    assert max(fig.layout.yaxis.tickvals) == 1 and max(fig.layout.yaxis2.tickvals) == 1


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
