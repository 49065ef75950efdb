"""Reviews in a report: the records of a run's review file checked against the run, the figures "as judged" or
"as reviewed", and the summary both renderers show (counts, how cases were chosen, what changed with its
interval, each judge's agreement with the reviewers, the reviewers' with each other, overturned and contested
cases, sign-offs). docs/review.md."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from reporting.analysis.review import (
    RULE,
    Adjudication,
    adjudicate,
    judge_agreement,
    pass_rate_change,
    reviewed_run,
    reviewer_agreement,
    sample_note,
)
from reporting.format.problems import FileTooLarge, Problem
from reporting.format.review_chain import ChainState, verify_file
from reporting.format.reviews import UNREADABLE, check_against_run, companion_path, judged_verdicts, read_reviews
from reporting.format.schema import RunReport

BASES = ("judged", "reviewed")


@dataclass
class Reviews:
    """A run's review records (checked against that run) and the problems found reading them."""

    path: Optional[str]
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    chain: Optional[ChainState] = None  # the hash chain of the file (reporting.format.review_chain)

    @property
    def chain_problem(self) -> Optional[Problem]:
        """A broken chain (a line changed, removed, reordered or cut short): the figures as reviewed fail closed."""
        if self.chain is None or not self.chain.broken:
            return None
        return Problem(str(self.path), f"line {self.chain.line}", f"the review chain is broken: {self.chain.problem}")

    @property
    def torn(self) -> list[Problem]:
        """Lines that cannot be read (cut short by a crash, or never a record): reported and skipped. A new
        decision may still be appended after them, but the figures as reviewed are not given (``blocking``)."""
        return [p for p in self.problems if p.message.startswith(UNREADABLE)]

    @property
    def invalid(self) -> list[Problem]:
        """Every problem but unreadable lines: records for another run, bad fields, a file that is a link, FIFO or
        folder, or above the size cap. Nothing is recorded while there is one."""
        return [p for p in self.problems if not p.message.startswith(UNREADABLE)]

    @property
    def blocking(self) -> list[Problem]:
        """Every problem, unreadable lines included: the figures as reviewed (and a gate on them) fail closed,
        since a line that cannot be read may be a reviewer's fail."""
        chain = self.chain_problem
        seen = {p.path.split(".")[0] for p in self.problems}  # a line cut short is one problem, not two
        return list(self.problems) + ([chain] if chain and chain.path not in seen else [])


def load_reviews(run: RunReport, path: Union[str, Path, None], run_path: Union[str, Path, None] = None) -> Reviews:
    """The records of ``path`` (default: ``RUN.reviews.jsonl`` beside ``run_path``; none when it is absent)."""
    from reporting.analysis.compare import run_fingerprint

    if path is None:
        if run_path is None:
            return Reviews(None)
        candidate = companion_path(run_path)
        if not os.path.lexists(candidate):  # anything of that name (a link, FIFO, folder) is read, and refused
            return Reviews(None)
        path = candidate
    records, problems = read_reviews(path)
    judged = judged_verdicts(run, {r["probe_id"] for r in records if isinstance(r.get("probe_id"), str)})
    fingerprint = run_fingerprint(run)
    problems += check_against_run(records, fingerprint, judged, str(path), judged)
    bad_lines = {p.path.split(".")[0] for p in problems}
    kept = [r for r in records if f"line {r.get('_line')}" not in bad_lines]
    chain = None
    if not any(p.path == "$" for p in problems):  # a file that could not be read has no chain to check
        try:
            chain = verify_file(path, fingerprint)
        except (OSError, FileTooLarge):
            chain = None
    return Reviews(str(path), kept, problems, chain)


def case_states(adjudication: Adjudication) -> dict[str, dict[str, Any]]:
    """Per reviewed probe: its state (confirmed, overturned, contested, unsure), the adjudicated verdict, who
    decided, and the reasons, as the case tables show them."""
    states = {}
    for probe, decision in adjudication.decisions.items():
        if decision.contested:
            state = "contested"
        elif decision.verdict is None:
            state = "unsure"
        else:
            state = "overturned" if decision.overturned else "confirmed"
        states[probe] = {
            "state": state,
            "judged": decision.judged,
            "verdict": decision.verdict,
            "severity": decision.severity,
            "reviewers": sorted(decision.reviewers),
            "reasons": decision.reasons,
        }
    return states


def _headline(judged: Mapping[str, Any], reviewed: Mapping[str, Any]) -> list[dict[str, Any]]:
    from reporting.analysis.registry import FIGURES, interval, value

    rows = []
    for figure in FIGURES:
        if not figure.headline:
            continue
        before, after = value(figure, judged), value(figure, reviewed)
        both = isinstance(before, (int, float)) and isinstance(after, (int, float))
        rows.append(
            {
                "key": figure.key,
                "label": figure.label,
                "kind": figure.kind,
                "judged": before,
                "judged_ci": interval(figure, judged) if figure.interval else None,
                "reviewed": after,
                "reviewed_ci": interval(figure, reviewed) if figure.interval else None,
                "difference": (after - before) if both else None,
            }
        )
    return rows


def summary(
    run: RunReport,
    adjudication: Adjudication,
    judged_metrics: Mapping[str, Any],
    reviewed_metrics: Mapping[str, Any],
    basis: str,
    reviews: Reviews,
) -> dict[str, Any]:
    states = case_states(adjudication)
    decided = adjudication.decided

    def listed(state: str) -> list[dict[str, Any]]:
        return [{"probe_id": p, **s} for p, s in sorted(states.items()) if s["state"] == state]

    return {
        "basis": basis,
        "file": Path(reviews.path).name if reviews.path else None,
        "rule": RULE,
        "cases": len(run.cases),
        "reviewed": len(adjudication.decisions),
        "decided": len(decided),
        "overturned": sum(1 for d in decided.values() if d.overturned),
        "contested": sum(1 for d in adjudication.decisions.values() if d.contested),
        "unsure": sum(1 for d in adjudication.decisions.values() if d.verdict is None),
        "queues": dict(sorted(adjudication.queues.items())),
        "sample_note": sample_note(run, adjudication),
        "pass_rate_change": pass_rate_change(run, adjudication),
        "headline": _headline(judged_metrics, reviewed_metrics),
        "judges": judge_agreement(run, adjudication),
        "reviewers": reviewer_agreement(adjudication),
        "overturned_cases": listed("overturned"),
        "contested_cases": listed("contested"),
        "signoffs": [{k: v for k, v in s.items() if not k.startswith("_")} for s in adjudication.signoffs],
        "chain": None if reviews.chain is None else chain_summary(reviews.chain),
        "states": states,
        "problems": [str(p) for p in reviews.problems],
    }


def apply_reviews(run: RunReport, records: Sequence[Mapping[str, Any]]) -> tuple[Adjudication, RunReport]:
    """The adjudication of ``records`` and the run as reviewed."""
    adjudication = adjudicate(run, records)
    return adjudication, reviewed_run(run, adjudication)


def chain_summary(chain: ChainState) -> dict[str, Any]:
    """The chain's state as the page, the command and the export show it."""
    return {
        "state": chain.state,
        "text": chain.summary(),
        "head": chain.head,
        "line": chain.line,
        "signed": chain.signed,
        "unsigned": chain.unsigned,
    }
