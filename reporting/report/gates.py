"""CI gates over a run: thresholds on the headline figures, a rubric scorecard, and regression
against a baseline that counts only when it is significant or touches a critical probe.

Gates fail closed. A run describes itself (its severities, its weights, its verdicts), and the run
under test is written by the thing under test, so before any gate is evaluated:

- a probe paired with the baseline is gated at the more severe of its two labels, so a candidate
  cannot relabel a critical probe 'low' (each relabelling is printed);
- a per-case severity weight below its tier's default is reported and replaced by the default,
  unless ``trust_run_weights``;
- a verdict that contradicts its own risk (passed at risk >= 0.9, failed at risk <= 0.1) is listed,
  and with ``strict`` it fails a gate;
- an empty run fails every count or rate gate; with a baseline, 0 paired probes always fails, and
  every baseline probe missing from the candidate fails unless ``allow_missing`` allows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from reporting.analysis.compare import compare_runs
from reporting.analysis.metrics import aggregate_metrics
from reporting.analysis.registry import GATED, value
from reporting.format.schema import DEFAULT_SEVERITY_WEIGHTS, SEVERITIES, RunReport
from reporting.format.table_run import rows_for, updated_cases
from reporting.textsafe import printable

CONTRADICTION_HIGH, CONTRADICTION_LOW = 0.9, 0.1
SHOWN_IDS = 5


@dataclass
class GateInput:
    """The run as the gates see it, and what was changed or found on the way."""

    run: RunReport
    notes: list[str] = field(default_factory=list)
    contradictions: list[str] = field(default_factory=list)


def _ids(ids: list[str]) -> str:
    shown = ", ".join(printable(i) for i in ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def prepare(run: RunReport, baseline: Optional[RunReport] = None, trust_run_weights: bool = False) -> GateInput:
    """The candidate with the baseline's severities and default weights where the run's own cannot be trusted. The
    cases' fields are read as columns (a run read by columns stays one: ``table_run.updated_cases``)."""
    names = ("probe_id", "severity", "severity_weight", "passed", "risk_score")
    base_severity = (
        {c["probe_id"]: c["severity"] for c in rows_for(baseline, None, ("probe_id", "severity"))}
        if baseline is not None
        else {}
    )
    notes: list[str] = []
    relabelled: list[str] = []
    low_weights: list[str] = []
    contradictions: list[str] = []
    updates: dict[str, dict[str, Any]] = {}
    for case in rows_for(run, None, names):
        probe = case["probe_id"]
        update: dict[str, Any] = {}
        severity = case["severity"]
        wanted = base_severity.get(probe)
        if wanted is not None and wanted != severity:
            # The more severe label wins: a candidate cannot talk its way down, and one that raises a label is taken
            # at its word.
            kept = max(wanted, severity, key=SEVERITIES.index)
            relabelled.append(f"{printable(probe)} ({wanted} in the baseline, {severity} here; gated as {kept})")
            if kept != severity:
                update["severity"] = severity = kept
        weight = case["severity_weight"]
        if weight is not None and weight < DEFAULT_SEVERITY_WEIGHTS[severity]:
            low_weights.append(f"{printable(probe)} ({weight:g} < {DEFAULT_SEVERITY_WEIGHTS[severity]:g})")
            if not trust_run_weights:
                update["severity_weight"] = None
        if update:
            updates[probe] = update
        passed, risk = case["passed"], case["risk_score"]
        if (
            passed is not None
            and risk is not None
            and ((passed and risk >= CONTRADICTION_HIGH) or (not passed and risk <= CONTRADICTION_LOW))
        ):
            contradictions.append(f"{printable(probe)} ({'passed' if passed else 'failed'} at risk {risk:.3f})")
    if relabelled:
        notes.append(
            f"{len(relabelled)} probe(s) relabelled against the baseline; the gates use the more severe label: "
            + "; ".join(relabelled)
        )
    if low_weights:
        verb = "kept (--trust-run-weights)" if trust_run_weights else "replaced by the tier's default"
        notes.append(
            f"{len(low_weights)} case(s) weigh less than their severity's default, {verb}: "
            + "; ".join(low_weights[:SHOWN_IDS])
            + (f" and {len(low_weights) - SHOWN_IDS} more" if len(low_weights) > SHOWN_IDS else "")
        )
    if contradictions:
        notes.append(
            f"{len(contradictions)} verdict(s) contradict their own risk (passed at risk >= {CONTRADICTION_HIGH}"
            f" or failed at risk <= {CONTRADICTION_LOW}): "
            + "; ".join(contradictions[:SHOWN_IDS])
            + (f" and {len(contradictions) - SHOWN_IDS} more" if len(contradictions) > SHOWN_IDS else "")
        )
    prepared = run.model_copy(update={"cases": updated_cases(run, updates)}) if updates else run
    return GateInput(prepared, notes, contradictions)


def _threshold(
    name: str, value: Optional[float], limit: float, minimum: bool, fmt: str = ".3f", empty: bool = False
) -> dict[str, Any]:
    if empty:
        value = None
    holds = value is not None and (value >= limit if minimum else value <= limit)
    shown = "n/a" if value is None else format(value, fmt)
    line = f"{name}: {shown} {'>=' if minimum else '<='} {format(limit, fmt)} required"
    if empty:
        line += " (the run has no evaluated case: the gate fails closed)"
    return {"gate": name, "holds": holds, "value": value, "limit": limit, "line": line}


def run_gates(
    run: RunReport,
    *,
    thresholds: Optional[Mapping[str, float]] = None,
    baseline: Optional[RunReport] = None,
    max_new_failures: Optional[int] = None,
    alpha: float = 0.05,
    rubric: Optional[str] = None,
    verdicts: Optional[str] = None,
    allow_missing: int = 0,
    strict: bool = False,
    trust_run_weights: bool = False,
    prepared: Optional[GateInput] = None,
) -> list[dict[str, Any]]:
    """Every gate asked for. ``thresholds`` maps a registry gate's option (``min_pass_rate``, ...) to its limit."""
    thresholds = dict(thresholds or {})
    unknown = set(thresholds) - {f.gate.option for f in GATED if f.gate is not None}
    if unknown:
        raise ValueError(f"no such gate: {', '.join(sorted(unknown))}")
    prepared = prepared or prepare(run, baseline, trust_run_weights)
    run = prepared.run
    metrics = aggregate_metrics(run)
    empty = metrics["counts"]["probes_evaluated"] == 0  # nothing evaluated (no case, or only errors): fail closed
    results = []
    for figure in GATED:
        gate = figure.gate
        if gate is None:
            continue
        limit = thresholds.get(gate.option)
        if limit is None:
            limit = gate.default
        if limit is None:
            continue
        results.append(_threshold(gate.name, value(figure, metrics), limit, gate.minimum, gate.fmt, empty=empty))
    if strict:
        found = prepared.contradictions
        results.append(
            {
                "gate": "verdicts consistent with risk",
                "holds": not found,
                "value": len(found),
                "limit": 0,
                "line": f"verdicts consistent with risk (--strict): {len(found)} contradict their risk"
                + (f": {', '.join(found[:SHOWN_IDS])}" if found else ""),
            }
        )
    if rubric is not None:
        from reporting.format.folders import companions
        from reporting.rubrics import scorecard_gate

        # Benchmark definitions referred to by code: RUN.benchmarks.yaml beside RUN.rubric.yaml.
        stem = str(rubric)[: -len(".rubric.yaml")] if str(rubric).endswith(".rubric.yaml") else None
        benchmarks = companions(stem + ".json")["benchmarks"] if stem else None
        results.append(scorecard_gate(rubric, verdicts, benchmarks))
    if baseline is not None:
        results += _baseline_gates(run, baseline, max_new_failures, alpha, allow_missing)
    return results


def _baseline_gates(
    run: RunReport, baseline: RunReport, max_new_failures: Optional[int], alpha: float, allow_missing: int
) -> list[dict[str, Any]]:
    cmp = compare_runs(baseline, run)
    results: list[dict[str, Any]] = []
    paired, in_baseline = cmp["paired"], cmp["base"]["cases"]
    missing = cmp["unmatched"]["base_only"]
    if paired == 0:
        results.append(
            {
                "gate": "probes paired with the baseline",
                "holds": False,
                "value": 0,
                "limit": None,
                "line": f"probes paired with the baseline: 0 of {in_baseline}; no probe id of the candidate matches "
                "one of the baseline's exactly, so nothing can be compared",
            }
        )
    results.append(
        {
            "gate": "baseline probes missing",
            "holds": len(missing) <= allow_missing,
            "value": len(missing),
            "limit": allow_missing,
            "line": f"baseline probes missing from the candidate: {len(missing)} of {in_baseline}"
            + (f" ({_ids(missing)})" if missing else "")
            + f"; at most {allow_missing} allowed (--allow-missing)",
        }
    )
    m = cmp["mcnemar"]
    significant = m["p_value"] < alpha and m["b"] > m["c"]
    critical = cmp["critical_newly_failing"]
    regression = significant or bool(critical)
    new = len(cmp["newly_failing"])
    verdict = (
        "a significant regression"
        if significant
        else "a significant improvement"
        if m["p_value"] < alpha
        else "not significant"
    )
    detail = (
        f"{new} newly failing, {m['c']} newly passing of {paired} paired; McNemar p = {m['p_value']:.4g}"
        f" ({verdict} at alpha {alpha})" + (f"; critical newly failing: {_ids(critical)}" if critical else "")
    )
    if max_new_failures is not None:
        holds = not (regression and new > max_new_failures)
        results.append(
            {
                "gate": "new failures vs baseline",
                "holds": holds and paired > 0,
                "value": new,
                "limit": max_new_failures,
                "line": f"new failures vs baseline: {detail}; at most {max_new_failures} allowed "
                "when the regression is significant or critical",
            }
        )
    else:
        results.append(
            {
                "gate": "regression vs baseline",
                "holds": not regression and paired > 0,
                "value": new,
                "limit": None,
                "line": f"regression vs baseline: {detail}",
            }
        )
    if not cmp["suite_fingerprint"]["same"]:
        results[-1]["line"] += " [warning: the suites differ]"
    return results
