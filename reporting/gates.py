"""CI gates over a run: thresholds on the headline figures, a rubric scorecard, and regression
against a baseline that counts only when it is significant or touches a critical probe."""

from __future__ import annotations

from typing import Any, Optional

from .compare import compare_runs
from .metrics import aggregate_metrics
from .schema import RunReport


def _threshold(name: str, value: Optional[float], limit: float, minimum: bool, fmt: str = ".3f") -> dict[str, Any]:
    holds = value is not None and (value >= limit if minimum else value <= limit)
    shown = "n/a" if value is None else format(value, fmt)
    return {"gate": name, "holds": holds, "value": value, "limit": limit,
            "line": f"{name}: {shown} {'>=' if minimum else '<='} {format(limit, fmt)} required"}


def run_gates(run: RunReport, *, min_pass_rate: Optional[float] = None, min_severity_weighted_pass_rate: Optional[float] = None,
              max_high_stakes_failures: Optional[int] = None, min_resilience: Optional[float] = None,
              baseline: Optional[RunReport] = None, max_new_failures: Optional[int] = None, alpha: float = 0.05,
              rubric: Optional[str] = None, verdicts: Optional[str] = None) -> list[dict[str, Any]]:
    metrics = aggregate_metrics(run)
    overall, indices = metrics["overall"], metrics["indices"]
    results = []
    if min_pass_rate is not None:
        results.append(_threshold("pass rate", overall["pass_rate"], min_pass_rate, True))
    if min_severity_weighted_pass_rate is not None:
        results.append(_threshold("severity-weighted pass rate", overall["severity_weighted_pass_rate"],
                                  min_severity_weighted_pass_rate, True))
    if max_high_stakes_failures is not None:
        results.append(_threshold("high-stakes failures", overall["high_stakes_failures"], max_high_stakes_failures, False, "d"))
    if min_resilience is not None:
        results.append(_threshold("resilience index", indices["resilience_index"], min_resilience, True))
    if rubric is not None:
        from .companions import companions
        from .rubrics import scorecard_gate

        # Benchmark definitions referred to by code: RUN.benchmarks.yaml beside RUN.rubric.yaml.
        stem = str(rubric)[: -len(".rubric.yaml")] if str(rubric).endswith(".rubric.yaml") else None
        benchmarks = companions(stem + ".json")["benchmarks"] if stem else None
        results.append(scorecard_gate(rubric, verdicts, benchmarks))
    if baseline is not None:
        cmp = compare_runs(baseline, run)
        m = cmp["mcnemar"]
        significant = m["p_value"] < alpha and m["b"] > m["c"]
        critical = cmp["critical_newly_failing"]
        regression = significant or bool(critical)
        new = len(cmp["newly_failing"])
        verdict = ("a significant regression" if significant else
                   "a significant improvement" if m["p_value"] < alpha else "not significant")
        detail = (f"{new} newly failing, {m['c']} newly passing of {cmp['paired']} paired; McNemar p = {m['p_value']:.4g}"
                  f" ({verdict} at alpha {alpha})"
                  + (f"; critical newly failing: {', '.join(critical[:5])}" if critical else ""))
        if max_new_failures is not None:
            holds = not (regression and new > max_new_failures)
            results.append({"gate": "new failures vs baseline", "holds": holds, "value": new, "limit": max_new_failures,
                            "line": f"new failures vs baseline: {detail}; at most {max_new_failures} allowed "
                                    "when the regression is significant or critical"})
        else:
            results.append({"gate": "regression vs baseline", "holds": not regression, "value": new, "limit": None,
                            "line": f"regression vs baseline: {detail}"})
        if not cmp["suite_fingerprint"]["same"]:
            results[-1]["line"] += " [warning: the suites differ]"
    return results
