"""People's review of a run's verdicts (docs/review.md): the adjudicated verdict of each reviewed case, the run
"as reviewed", how far each automatic judge agrees with the reviewers, and how far the reviewers agree.

Adjudication rule, per case: each reviewer's latest record (by its time, an instant: 18:30+09:00 is before
10:00Z) counts (a later one supersedes an earlier one by the
same person); "unsure" decides nothing; when the reviewers' decisions agree, that is the verdict; when they
differ the case is **contested** and its adjudicated verdict is **fail** (a harm one reviewer saw is not
outvoted). A severity change takes the most severe tier any reviewer gave.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Optional

from reporting.analysis.judges import pair_agreement
from reporting.analysis.stats import newcombe_paired
from reporting.analysis.validity import bootstrap_intervals, measure
from reporting.format.review_chain import reviewer_key
from reporting.format.reviews import judged_verdicts, record_time
from reporting.format.schema import RunReport
from reporting.format.severity import SEVERITIES
from reporting.format.table_run import pass_fail_counts, rows_for, updated_cases

PRIMARY = "primary"  # the run's own verdict (``passed``): the judge a review replaces
RULE = "each reviewer's latest decision; contested (reviewers differ) -> fail; unsure decides nothing"


@dataclass
class Decision:
    probe_id: str
    judged: str  # pass, fail or error
    verdict: Optional[str]  # pass or fail; None: nobody decided (only unsure)
    severity: Optional[str]
    contested: bool
    reviewers: dict[str, dict[str, Any]]  # reviewer -> their latest record

    @property
    def overturned(self) -> bool:
        return self.verdict is not None and self.verdict != self.judged

    @property
    def reasons(self) -> list[str]:
        return [f"{name}: {r.get('reason')}" for name, r in sorted(self.reviewers.items()) if r.get("reason")]


@dataclass
class Adjudication:
    decisions: dict[str, Decision] = field(default_factory=dict)
    signoffs: list[dict[str, Any]] = field(default_factory=list)
    queues: dict[str, int] = field(default_factory=dict)  # how the reviewed cases were chosen: queue -> cases

    @property
    def decided(self) -> dict[str, Decision]:
        return {p: d for p, d in self.decisions.items() if d.verdict is not None}


def adjudicate(run: RunReport, records: Sequence[Mapping[str, Any]]) -> Adjudication:
    """The decisions of ``records`` (already checked against the run) on the run's cases: the run's own verdicts
    are read for the reviewed cases alone (``judged_verdicts``), never a case object per case of the run."""
    # By the instant each record names (times in any offset compared in UTC, never as text), then by file order.
    ordered = sorted(enumerate(records), key=lambda item: (record_time(item[1]), item[0]))
    latest: dict[str, dict[str, dict[str, Any]]] = {}
    result = Adjudication()
    for _, record in ordered:
        if record["kind"] == "signoff":
            result.signoffs.append(dict(record))
        else:
            latest.setdefault(record["probe_id"], {})[reviewer_key(record)] = dict(record)
    judged = judged_verdicts(run, latest)
    for probe, by_reviewer in latest.items():
        definite = {r["verdict"] for r in by_reviewer.values() if r["verdict"] != "unsure"}
        contested = len(definite) > 1
        verdict = "fail" if contested else (definite.pop() if definite else None)
        tiers = [r["severity"] for r in by_reviewer.values() if r.get("severity")]
        severity = max(tiers, key=SEVERITIES.index) if tiers else None
        result.decisions[probe] = Decision(probe, judged[probe], verdict, severity, contested, by_reviewer)
        for record in by_reviewer.values():
            queue = str(record.get("queue") or "case")
            result.queues[queue] = result.queues.get(queue, 0) + 1
    return result


def reviewed_run(run: RunReport, adjudication: Adjudication) -> RunReport:
    """The run with each decided case's verdict (and severity) replaced by the reviewers'; the producer's stored
    figures are left out (they describe the judged run: drift is checked on that one). A case that was not
    evaluated and is now decided keeps its risk score, or takes 1 (fail) or 0 (pass) when it had none. A run read
    by columns stays one: its case table with the decided cases' rows replaced (``table_run.updated_cases``)."""
    changing = {p: d for p, d in adjudication.decisions.items() if d.verdict is not None or d.severity is not None}
    updates: dict[str, dict[str, Any]] = {}
    for case in rows_for(run, changing, ("probe_id", "passed", "risk_score")):
        decision = changing[case["probe_id"]]
        update: dict[str, Any] = {}
        if decision.verdict is not None:
            update["passed"] = decision.verdict == "pass"
            if case["passed"] is None:
                update["error"] = None
                if case["risk_score"] is None:
                    update["risk_score"] = 1.0 if decision.verdict == "fail" else 0.0
        if decision.severity is not None:
            update["severity"] = decision.severity
            update["severity_weight"] = None  # the tier's default weight, as for any case without one
        updates[case["probe_id"]] = update
    cases = updated_cases(run, updates, stored_figures=False)
    extra = {k: v for k, v in (run.model_extra or {}).items() if k != "tool_figures"}
    return RunReport.model_construct(
        schema_version=run.schema_version,
        run=run.run,
        cases=cases,  # type: ignore[arg-type]  # (a case table's cases are a Sequence[Case], as run_of_table's)
        aggregate_metrics=None,
        observability=None,
        **extra,
    )


def _bootstrap(truth: list[bool], said: list[bool]) -> dict[str, Optional[list[float]]]:
    """Percentile intervals (95%) of balanced accuracy and kappa, resampling cases (seeded: same run, same
    interval): ``validity.bootstrap_intervals``."""
    intervals = bootstrap_intervals(truth, said)
    return {"balanced_accuracy_ci": intervals["balanced_accuracy"], "kappa_ci": intervals["kappa"]}


def agreement_with(truth: list[bool], said: list[bool]) -> dict[str, Any]:
    """A judge's verdicts against the reviewers': the positive class is a harm (a failed case). Confusion
    matrix, sensitivity (harms caught), specificity (passes kept), balanced accuracy, Cohen's kappa: the figures of
    a judge card (``validity.measure``, reviewers' verdicts as the labels) under the review's names."""
    m = measure(truth, said)
    c = m["confusion"]
    return {
        "n": len(truth),
        "confusion": {"fail_fail": c["tp"], "pass_fail": c["fn"], "fail_pass": c["fp"], "pass_pass": c["tn"]},
        "sensitivity": m["sensitivity"],
        "sensitivity_ci": m["sensitivity_interval"],
        "specificity": m["specificity"],
        "specificity_ci": m["specificity_interval"],
        "balanced_accuracy": m["balanced_accuracy"],
        "kappa": m["kappa"],
        **_bootstrap(list(truth), list(said)),
    }


def judge_agreement(run: RunReport, adjudication: Adjudication) -> dict[str, dict[str, Any]]:
    """Each judge (the primary verdict, and every judge in the cases' ``verdicts``) against the decided cases it
    judged. "fail_pass" in the confusion matrix: the judge said fail, the reviewers pass. The decided cases' verdicts
    alone are read."""
    decided = adjudication.decided
    pairs: dict[str, tuple[list[bool], list[bool]]] = {}
    for case in rows_for(run, decided, ("probe_id", "passed", "verdicts")):
        harm = decided[case["probe_id"]].verdict == "fail"
        said = {PRIMARY: case["passed"]} | {name: v["passed"] for name, v in case["verdicts"].items()}
        for judge, passed in said.items():
            if passed is not None:
                truth, verdicts = pairs.setdefault(judge, ([], []))
                truth.append(harm)
                verdicts.append(not passed)
    return {judge: agreement_with(t, s) for judge, (t, s) in sorted(pairs.items())}


def reviewer_agreement(adjudication: Adjudication) -> list[dict[str, Any]]:
    """Each pair of reviewers on the cases both decided (pass or fail): n, agreement, Cohen's kappa."""
    by_reviewer: dict[str, dict[str, bool]] = {}
    for probe, decision in adjudication.decisions.items():
        for reviewer, record in decision.reviewers.items():
            if record["verdict"] != "unsure":
                by_reviewer.setdefault(reviewer, {})[probe] = record["verdict"] == "fail"
    rows = []
    for first, second in combinations(sorted(by_reviewer), 2):
        common = sorted(set(by_reviewer[first]) & set(by_reviewer[second]))
        if not common:
            continue
        a = [by_reviewer[first][p] for p in common]
        b = [by_reviewer[second][p] for p in common]
        rows.append({"reviewers": [first, second], **pair_agreement(a, b), "kappa_ci": _bootstrap(a, b)["kappa_ci"]})
    return rows


def pass_rate_change(run: RunReport, adjudication: Adjudication) -> dict[str, Any]:
    """Judged and reviewed pass rates over the cases evaluated in both, and the paired (Newcombe) interval of the
    difference: the reviews' effect on the headline figure. Only a decided case can move: the rest are the run's
    own passes and fails, counted from its verdicts (``adjudication``: ``adjudicate`` of this run, each decision
    on one of its cases with that case's verdict as judged)."""
    passes, fails = pass_fail_counts(run)
    moved: dict[tuple[str, Optional[str]], int] = {("pass", "fail"): 0, ("fail", "pass"): 0}  # judged -> reviewed
    for decision in adjudication.decisions.values():
        key = (decision.judged, decision.verdict)
        if key in moved:
            moved[key] += 1
    b, c = moved["pass", "fail"], moved["fail", "pass"]
    counts = {"a": passes - b, "b": b, "c": c, "d": fails - c}
    n = sum(counts.values())
    return {
        "n": n,
        "judged": None if not n else (counts["a"] + counts["b"]) / n,
        "reviewed": None if not n else (counts["a"] + counts["c"]) / n,
        "difference": None if not n else (counts["c"] - counts["b"]) / n,
        "difference_ci": newcombe_paired(counts["a"], counts["b"], counts["c"], counts["d"]),
        "pass_to_fail": counts["b"],
        "fail_to_pass": counts["c"],
    }


def sample_note(run: RunReport, adjudication: Adjudication) -> Optional[str]:
    """What the reviewed cases cannot show: a review of the failures alone says nothing of harms the judge
    passed."""
    judged = [d.judged for d in adjudication.decided.values()]
    if not judged:
        return "no case decided yet"
    if "pass" not in judged:
        return (
            "only cases the judge failed were decided: its misses (harms it passed) cannot be measured; review a "
            "random sample too"
        )
    if "random" not in adjudication.queues:
        return "no case was drawn at random: agreement is over the cases chosen, not the run"
    return None
