"""Paired comparison of two runs of the same suite: which probes changed outcome, whether the
change is significant (McNemar), interval for each category's change (Newcombe), headline deltas,
and a signed-rank test on risk. Also the suite fingerprint and the trend over many runs."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting.analysis.judge_cards import primary_judge
from reporting.analysis.metrics import aggregate_metrics, cases_frame
from reporting.analysis.registry import COMPARED, TRENDED, interval, value
from reporting.analysis.stats import LOW_N, mcnemar, mean_interval, newcombe_paired, wilcoxon_signed_rank
from reporting.format.columnar_checks import fingerprint_of_columns
from reporting.format.schema import SEVERITIES, RunReport
from reporting.format.table_run import TableCases, rows_for


def suite_fingerprint(run: RunReport) -> str:
    """A hash of the probe ids and their inputs: equal fingerprints mean the same probes were sent."""
    sha = hashlib.sha256()
    rows = rows_for(run, None, ("probe_id", "probe_input"))  # (a run read by columns: no case object)
    for probe_id, text in sorted((c["probe_id"], c["probe_input"] or "") for c in rows):
        sha.update(probe_id.encode("utf-8") + b"\x00" + text.encode("utf-8") + b"\x01")
    return sha.hexdigest()[:16]


def _severity_rank(severity: str) -> int:
    return -SEVERITIES.index(severity) if severity in SEVERITIES else 1


def compare_runs(
    base: RunReport, candidate: RunReport, frames: Optional[tuple[pd.DataFrame, pd.DataFrame]] = None
) -> dict[str, Any]:
    """Everything the compare command, the Compare page and the HTML show. ``frames``: the two runs' case frames
    when the caller holds them already (the dashboard does), so they are not built again."""
    fb, fc = frames if frames is not None else (cases_frame(base), cases_frame(candidate))
    merged = fb.merge(fc, on="probe_id", suffixes=("_base", "_cand"))
    base_ids, cand_ids = set(fb["probe_id"]), set(fc["probe_id"])
    pb = merged["passed_base"].to_numpy(dtype=bool)
    pc = merged["passed_cand"].to_numpy(dtype=bool)
    a, b, c, d = int((pb & pc).sum()), int((pb & ~pc).sum()), int((~pb & pc).sum()), int((~pb & ~pc).sum())

    def ids(mask: np.ndarray) -> list[str]:
        rows = merged[mask]
        order = sorted(
            zip(rows["severity_cand"].astype(str), rows["probe_id"]), key=lambda t: (_severity_rank(t[0]), t[1])
        )
        return [pid for _, pid in order]

    newly_failing, newly_passing = ids(pb & ~pc), ids(~pb & pc)
    by_category = []
    for category, group in sorted(merged.groupby("category_cand"), key=lambda kv: kv[0]):
        gb, gc = group["passed_base"].to_numpy(dtype=bool), group["passed_cand"].to_numpy(dtype=bool)
        ga, gbb, gcc, gd = int((gb & gc).sum()), int((gb & ~gc).sum()), int((~gb & gc).sum()), int((~gb & ~gc).sum())
        n = len(group)
        interval: list[Any] = newcombe_paired(ga, gbb, gcc, gd) or [None, None]  # None only for an empty group
        by_category.append(
            {
                "category": str(category),
                "n": n,
                "low_n": n < LOW_N,
                "base_pass_rate": float(gb.mean()),
                "candidate_pass_rate": float(gc.mean()),
                "delta": float(gc.mean() - gb.mean()),
                "ci_low": interval[0],
                "ci_high": interval[1],
                "newly_failing": gbb,
                "newly_passing": gcc,
            }
        )
    paired_base = fb[fb["probe_id"].isin(merged["probe_id"])]
    paired_cand = fc[fc["probe_id"].isin(merged["probe_id"])]
    mb, mc = aggregate_metrics(paired_base), aggregate_metrics(paired_cand)
    headline = {}
    for figure in COMPARED:
        name, better = figure.key, figure.better
        vb, vc = value(figure, mb), value(figure, mc)
        entry: dict[str, Any] = {
            "label": figure.label,
            "base": vb,
            "candidate": vc,
            "delta": None if vb is None or vc is None else vc - vb,
            "better": better,
        }
        if name == "pass_rate" and len(merged):
            entry["ci"] = newcombe_paired(a, b, c, d)
        elif name in ("resilience_index", "exposure_index") and len(merged) > 1:
            diff = merged["weighted_risk_cand"].to_numpy() - merged["weighted_risk_base"].to_numpy()
            mean_ci: Optional[list[float]] = mean_interval(diff)
            if mean_ci is not None and name == "resilience_index":
                mean_ci = [-mean_ci[1], -mean_ci[0]]
            entry["ci"] = mean_ci
        else:
            entry["ci"] = None
        headline[name] = entry
    critical_newly_failing = [
        pid
        for pid in newly_failing
        if str(merged.loc[merged["probe_id"] == pid, "severity_cand"].iloc[0]) == "critical"
    ]
    fingerprints = {"base": suite_fingerprint(base), "candidate": suite_fingerprint(candidate)}
    warnings = []
    if fingerprints["base"] != fingerprints["candidate"]:
        warnings.append(
            "The two runs did not send the same probes (suite fingerprints differ); "
            "only the probes both runs share are compared."
        )
    if len(merged) == 0:
        warnings.append("The runs share no probe id: nothing can be compared.")
    judges = primary_judge(base.run.config), primary_judge(candidate.run.config)
    if judges[0] != judges[1]:
        warnings.append(
            "The two runs' verdicts come from different judges (see the methodology): a verdict that changed may be "
            "the judge's change, not the model's; score both with one judge to compare the models."
        )
    return {
        "base": {
            "run_id": base.run.run_id,
            "model": base.run.model,
            "created_at": base.run.created_at,
            "cases": len(fb),
            "primary_judge": judges[0],
        },
        "candidate": {
            "run_id": candidate.run.run_id,
            "model": candidate.run.model,
            "created_at": candidate.run.created_at,
            "cases": len(fc),
            "primary_judge": judges[1],
        },
        "paired": int(len(merged)),
        "unmatched": {"base_only": sorted(base_ids - cand_ids), "candidate_only": sorted(cand_ids - base_ids)},
        "table": {"both_pass": a, "pass_to_fail": b, "fail_to_pass": c, "both_fail": d},
        "newly_failing": newly_failing,
        "newly_passing": newly_passing,
        "critical_newly_failing": critical_newly_failing,
        "mcnemar": mcnemar(b, c),
        "by_category": by_category,
        "headline": headline,
        "risk_change": {
            "test": "Wilcoxon signed-rank on paired risk_score (candidate - base)",
            **wilcoxon_signed_rank(merged["risk_score_base"].to_numpy(), merged["risk_score_cand"].to_numpy()),
        },
        "suite_fingerprint": {**fingerprints, "same": fingerprints["base"] == fingerprints["candidate"]},
        "warnings": warnings,
    }


def changed_cases(
    base: RunReport,
    candidate: RunReport,
    probe_ids: list[str],
    frames: Optional[tuple[pd.DataFrame, pd.DataFrame]] = None,
) -> pd.DataFrame:
    """Side-by-side rows (base and candidate response) for the given probes, in the given order."""
    fb, fc = frames if frames is not None else (cases_frame(base), cases_frame(candidate))
    fb, fc = fb.set_index("probe_id"), fc.set_index("probe_id")
    rows = []
    for pid in probe_ids:
        rb, rc = fb.loc[pid], fc.loc[pid]
        rows.append(
            {
                "probe_id": pid,
                "category": rc["category"],
                "severity": str(rc["severity"]),
                "base_risk": float(rb["risk_score"]),
                "candidate_risk": float(rc["risk_score"]),
                "task": rc["task"],
                "base_response": rb["response"],
                "candidate_response": rc["response"],
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "probe_id",
            "category",
            "severity",
            "base_risk",
            "candidate_risk",
            "task",
            "base_response",
            "candidate_response",
        ],
    )


def choose_suite(suites: list[str], suite: Optional[str] = None) -> Optional[str]:
    """The suite asked for, else the one with most runs (ties: the last name)."""
    counts: dict[str, int] = {}
    for name in suites:
        counts[name] = counts.get(name, 0) + 1
    return suite or (max(counts, key=lambda s: (counts[s], s)) if counts else None)


def trend_point(
    run_id: str,
    model: str,
    created_at: Optional[str],
    metrics: Mapping[str, Any],
    by_category: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """One run of a trend: its trended figures (the registry's) with their intervals, and pass rates per category.
    ``metrics`` is shaped like ``aggregate_metrics`` (a run's, or a store engine's)."""
    return {
        "run_id": run_id,
        "model": model,
        "created_at": created_at,
        "n": metrics["counts"]["probes_evaluated"],
        **{k: v for f in TRENDED for k, v in ((f.key, value(f, metrics)), (f"{f.key}_ci", interval(f, metrics)))},
        "by_category": {
            name: {"n": c["n"], "pass_rate": c["pass_rate"], "pass_rate_ci": c["pass_rate_ci"]}
            for name, c in by_category.items()
        },
    }


def trend_result(
    suite: Optional[str],
    points: list[dict[str, Any]],
    skipped: list[str],
    undated: Optional[list[str]] = None,
    duplicates: Optional[list[str]] = None,
) -> dict[str, Any]:
    """A trend's points with what was left out said: the one shape the trend chart, the HTML and the JSON read."""
    undated, duplicates = undated or [], duplicates or []
    models = list(dict.fromkeys(p["model"] for p in points))
    warnings = []
    if skipped:
        warnings.append(f"{len(skipped)} run(s) of other suites left out: " + ", ".join(skipped))
    if undated:
        warnings.append(f"{len(undated)} run(s) have no created_at and are placed last: " + ", ".join(undated))
    if duplicates:
        warnings.append(
            f"{len(duplicates)} duplicate run(s) left out (the same cases as a run already shown): "
            + ", ".join(duplicates)
        )
    if len(models) > 1:
        warnings.append(f"{len(models)} models: one line per model (" + ", ".join(models) + ")")
    return {
        "suite": suite,
        "models": models,
        "points": points,
        "skipped": skipped,
        "duplicates": duplicates,
        "warnings": warnings,
    }


def trend(
    runs: list[RunReport], suite: Optional[str] = None, metrics: Optional[list[Mapping[str, Any]]] = None
) -> dict[str, Any]:
    """Runs of one suite in time order, with the headline figures and their intervals. ``metrics``: each run's
    aggregate metrics when the caller holds them already (the dashboard does)."""
    known = {id(run): m for run, m in zip(runs, metrics)} if metrics is not None else {}
    chosen = choose_suite([run.run.suite for run in runs], suite)
    kept, duplicates, seen = [], [], set()
    for r in runs:
        if r.run.suite != chosen:
            continue
        mark = run_fingerprint(r)
        if mark in seen:  # the same run read twice (a copy in the folder, an upload of a file already there)
            duplicates.append(r.run.run_id)
            continue
        seen.add(mark)
        kept.append(r)
    skipped = [r.run.run_id for r in runs if r.run.suite != chosen]
    undated = [r.run.run_id for r in kept if not r.run.created_at]
    kept.sort(key=lambda r: (r.run.created_at is None, r.run.created_at or "", r.run.run_id))
    points = []
    for run in kept:
        m = known.get(id(run)) or aggregate_metrics(run)
        points.append(trend_point(run.run.run_id, run.run.model, run.run.created_at, m, m["by_category"]))
    return trend_result(chosen, points, skipped, undated, duplicates)


def run_fingerprint(run: RunReport) -> str:
    """A hash of a run's model and every case's verdict and response: equal only for the same run read twice. A run
    read by columns: the same hash of its columns (no case object)."""
    cases = run.cases
    read = cases.columnar if isinstance(cases, TableCases) else None
    identity = read.identity if read is not None else None
    if read is not None and identity is not None:
        if (read.meta.model, read.meta.created_at) == (run.run.model, run.run.created_at):
            return read.fingerprint  # (computed once per run read)
        return fingerprint_of_columns(run.run.model, run.run.created_at, identity)
    sha = hashlib.sha256(f"{run.run.model}\x00{run.run.created_at}\x00".encode())
    for c in sorted(run.cases, key=lambda c: c.probe_id):
        sha.update(f"{c.probe_id}\x00{c.passed}\x00{c.risk_score!r}\x00{c.response or ''}\x01".encode())
    return sha.hexdigest()[:16]
