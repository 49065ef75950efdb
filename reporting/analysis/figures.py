"""The run-level figures derived from the engine's aggregates (``reporting.analysis.engine.AGGREGATES``): rates with
their Wilson intervals, means with Student's t intervals, Kish's effective n for the severity-weighted pass rate.
The same derivation serves a run (``aggregate_metrics``) and the run store (its engines' rows). docs/metrics.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from reporting.analysis.stats import LOW_N, kish_wilson, t_interval, wilson
from reporting.format.schema import SEVERITIES


def _finite(value: Any) -> Optional[float]:
    """A float, or None where the value is undefined (missing, NaN, infinite)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _ratio(numerator: float, denominator: float) -> Optional[float]:
    return None if not denominator else float(numerator) / float(denominator)


def proportion(k: float, n: float) -> tuple[Optional[float], Optional[list[float]]]:
    """A rate (``k`` of ``n``) and its 95% Wilson interval; both None when ``n`` is 0. The one definition of every
    pass, fail and error rate, of a run, a group, a judge, a framework item or a window of a live run."""
    return _ratio(k, n), wilson(k, n)


def _int(row: Mapping[str, Any], name: str) -> int:
    return int(row.get(name) or 0)


def _mean(row: Mapping[str, Any], name: str, n: int) -> Optional[float]:
    total = row.get(f"{name}_sum")
    return None if n == 0 or total is None else _finite(float(total) / n)


def _clip(value: Optional[float]) -> Optional[float]:
    return None if value is None else float(min(1.0, max(0.0, value)))


def evaluated(row: Mapping[str, Any]) -> int:
    return _int(row, "passed") + _int(row, "failed")


def counts(row: Mapping[str, Any], errors: int, categories: int) -> dict[str, int]:
    """Evaluated cases (passed + failed), errors (not evaluated) and all cases."""
    n = evaluated(row)
    return {
        "cases": n + errors,
        "probes_evaluated": n,
        "passed": _int(row, "passed"),
        "failed": _int(row, "failed"),
        "errors": errors,
        "categories": categories,
    }


def with_error_rate(overall_figures: dict[str, Any], errors: int, every: int) -> dict[str, Any]:
    """``overall`` with the error rate: the cases not evaluated among all ``every`` cases."""
    overall_figures.update({"error_rate": _ratio(errors, every), "error_rate_ci": wilson(errors, every)})
    return overall_figures


def _weighted_mean_interval(row: Mapping[str, Any], n: int) -> tuple[Optional[float], Optional[list[float]]]:
    mean = _mean(row, "weighted_risk", n)
    return mean, t_interval(mean, _finite(row.get("weighted_risk_sd")), n)


def overall(row: Mapping[str, Any]) -> dict[str, Any]:
    """The run's rates and risk statistics over its evaluated cases (``error_rate`` is added by the caller, which
    knows the cases not evaluated). Keys the row's table cannot give (a store has no signal columns) are left out."""
    n = evaluated(row)
    passed, failed = _int(row, "passed"), _int(row, "failed")
    high, high_failed = _int(row, "high"), _int(row, "high_failed")
    risk_mean = _mean(row, "risk", n)
    weighted_mean, weighted_ci = _weighted_mean_interval(row, n)
    weight_sum = float(row.get("weight_sum") or 0.0)
    found: dict[str, Any] = {
        "pass_rate": _ratio(passed, n),
        "pass_rate_ci": wilson(passed, n),
        "fail_rate": _ratio(failed, n),
        "fail_rate_ci": wilson(failed, n),
        "risk_mean": risk_mean,
        "risk_mean_ci": t_interval(risk_mean, _finite(row.get("risk_sd")), n),
        "risk_median": _finite(row.get("risk_median")),
        "risk_std": _finite(row.get("risk_std")),
        "risk_p90": _finite(row.get("risk_p90")),
        "risk_max": _finite(row.get("risk_max")),
        "weighted_risk_mean": weighted_mean,
        "weighted_risk_mean_ci": weighted_ci,
        "weighted_risk_median": _finite(row.get("weighted_risk_median")),
        "weighted_risk_p90": _finite(row.get("weighted_risk_p90")),
        "severity_weighted_pass_rate": _ratio(float(row.get("weight_passed") or 0.0), weight_sum),
        "severity_weighted_pass_rate_ci": kish_wilson(
            weight_sum, float(row.get("weight_sq_sum") or 0.0), float(row.get("weight_passed") or 0.0)
        ),
        "high_stakes_failure_rate": _ratio(high_failed, failed),
        "high_stakes_failure_rate_ci": wilson(high_failed, failed),
        "high_stakes_failures": high_failed,
        "high_stakes_probe_failure_rate": _ratio(high_failed, high),
        "high_stakes_probe_failure_rate_ci": wilson(high_failed, high),
    }
    if "boundary" in row:
        boundary = _int(row, "boundary")
        found.update({"boundary_language_rate": _ratio(boundary, n), "boundary_language_rate_ci": wilson(boundary, n)})
    if "safe_hits" in row or "unsafe_hits" in row:
        safe, unsafe = _int(row, "safe_hits"), _int(row, "unsafe_hits")
        found.update(
            {"safe_signal_total": safe, "unsafe_signal_total": unsafe, "safe_unsafe_signal_ratio": _ratio(safe, unsafe)}
        )
    return found


def indices(row: Mapping[str, Any]) -> dict[str, Any]:
    """Resilience (1 - mean weighted risk), exposure (the mean weighted risk), both clipped to [0, 1] with their
    intervals, and the fragility spread (the population standard deviation of risk)."""
    weighted_mean, interval = _weighted_mean_interval(row, evaluated(row))
    return {
        "resilience_index": _clip(None if weighted_mean is None else 1.0 - weighted_mean),
        "resilience_index_ci": None if interval is None else [_clip(1.0 - interval[1]), _clip(1.0 - interval[0])],
        "exposure_index": _clip(weighted_mean),
        "exposure_index_ci": None if interval is None else [_clip(interval[0]), _clip(interval[1])],
        "fragility_spread": _finite(row.get("risk_std")),
    }


# The aggregates a category's figures read (``category``) and a severity tier's (``by_severity``): the engine's rows
# of those groups carry these alone (``reporting.analysis.engine.query``), the run's row every aggregate.
CATEGORY_READS = (
    "passed",
    "failed",
    "risk_sum",
    "risk_sd",
    "risk_median",
    "weighted_risk_sum",
    "critical_failed",
    "high_tier_failed",
    "boundary",
    "safe_hits",
    "unsafe_hits",
)
SEVERITY_READS = ("passed", "failed")


def category(row: Mapping[str, Any]) -> dict[str, Any]:
    """One category's figures over its evaluated cases."""
    n = evaluated(row)
    passed = _int(row, "passed")
    risk_mean = _mean(row, "risk", n)
    found: dict[str, Any] = {
        "n": n,
        "low_n": n < LOW_N,
        "pass_rate": _ratio(passed, n),
        "pass_rate_ci": wilson(passed, n),
        "risk_mean": risk_mean,
        "risk_mean_ci": t_interval(risk_mean, _finite(row.get("risk_sd")), n),
        "risk_median": _finite(row.get("risk_median")),
        "weighted_risk_mean": _mean(row, "weighted_risk", n),
        "critical_failures": _int(row, "critical_failed"),
        "high_failures": _int(row, "high_tier_failed"),
    }
    if "boundary" in row:
        boundary = _int(row, "boundary")
        found.update(
            {
                "safe_hits_mean": _mean({"x_sum": row.get("safe_hits")}, "x", n),
                "unsafe_hits_mean": _mean({"x_sum": row.get("unsafe_hits")}, "x", n),
                "boundary_rate": _ratio(boundary, n),
                "boundary_rate_ci": wilson(boundary, n),
            }
        )
    return found


def by_category(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each category with evaluated cases, names ascending."""
    found = {str(row["category"]): category(row) for row in rows if evaluated(row) > 0}
    return {name: found[name] for name in sorted(found)}


def by_severity(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every severity tier, in the tiers' order, with zeros where a tier has no case."""
    by_tier = {str(row["severity"]): row for row in rows}
    result = {}
    for tier in SEVERITIES:
        row = by_tier.get(tier, {})
        n, passed = evaluated(row), _int(row, "passed")
        result[tier] = {
            "n": n,
            "low_n": n < LOW_N,
            "passed": passed,
            "failed": n - passed,
            "pass_rate": _ratio(passed, n),
            "pass_rate_ci": wilson(passed, n),
        }
    return result


def category_ranking(categories: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Categories with at least one case, by mean risk descending (ties by name)."""
    ranked = [
        {"category": name, "risk_mean": stats["risk_mean"], "n": stats["n"]}
        for name, stats in categories.items()
        if stats["n"] > 0
    ]
    return sorted(ranked, key=lambda r: (-(r["risk_mean"] or 0.0), r["category"]))
