"""The Review page (docs/review.md): a queue of cases (failures first, a random sample, or where judges disagree),
each shown with its evidence and confirmed, overturned (with a reason) or marked unsure by the reviewer named in
the sidebar; every decision is appended to ``RUN.reviews.jsonl`` beside the run, never into it. Below: what the
reviews changed, how far each judge agrees with the reviewers, the reviewers with each other, and the sign-off.

Texts of the run are shown through st.text and st.code only (never Markdown). The case card starts with the
verdict, made by the app alone on an element of its own before any text of the run, so that no probe id,
category or response can imitate it above the real one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import pandas as pd
import streamlit as st

from reporting.format.review_chain import reviewer_key
from reporting.format.severity import SEVERITIES
from reporting.textsafe import markdown_literal, printable
from reporting.ui.common import context, guarded, table

QUEUES = {"Failures first": "failures", "Random sample": "random", "Where judges disagree": "disagreements"}
NO_FILE = (
    "Review decisions are kept beside the run's file (RUN.reviews.jsonl). This run was uploaded, so it has no "
    "place for them: put it in the runs folder to review it."
)


def _verdict(passed: Optional[bool]) -> str:
    return "error" if passed is None else ("pass" if passed else "fail")


def queue(run, kind: str, done: set[str], digest: str = "") -> Any:
    """The cases of a queue not yet decided by this reviewer (``reporting.analysis.review_queue``): failures worst
    first then the riskiest passes; a random sample (seeded by the run, the same order for everyone); or the cases
    where judges disagree. Each case is made when shown; the order is kept per run (``digest``) and queue."""
    from reporting.analysis.review_queue import pending

    return pending(run, kind, done, _order(digest, kind, id(run), len(run.cases), run) if digest else None)


@st.cache_resource(max_entries=8, show_spinner=False)
def _order(digest: str, kind: str, run_id: int, cases: int, _run: Any) -> Any:
    from reporting.analysis.review_queue import queue_order

    return queue_order(_run, kind)


def _append(path: Path, record: dict[str, Any], run) -> Optional[str]:
    from reporting.analysis.compare import run_fingerprint
    from reporting.format.reviews import ReviewError, append_records, check_against_run, check_record, judged_verdicts

    judged = judged_verdicts(run, {str(record.get("probe_id"))})  # the case decided, read alone
    problems = check_record(record, "decision", "dashboard")
    problems += check_against_run([record], run_fingerprint(run), judged, "dashboard", judged)
    if problems:
        return "; ".join(dict.fromkeys(p.message for p in problems))
    try:
        append_records(path, [record])  # never through a link, never into a FIFO or folder: a problem instead
    except ReviewError as exc:
        return "; ".join(str(p) for p in exc.problems)
    return None


_SHOWN = {"pass": "PASSED", "fail": "FAILED", "error": "NOT EVALUATED"}


def verdict_line(case) -> str:
    """The judged verdict and its numbers, made by the app from typed fields only (no text of the run): the first
    line of the case card, on an element of its own."""
    judged = _verdict(case.passed)
    risk = "n/a" if case.risk_score is None else f"{case.risk_score:.3f}"
    severity = case.severity if case.severity in SEVERITIES else "?"
    return f"{_SHOWN[judged]}  |  judged {judged}  |  risk {risk}  |  severity {severity}"


def _case_card(case) -> None:
    st.text(verdict_line(case))  # first, before any text of the run
    st.text(f"probe {printable(case.probe_id)}  |  category {printable(case.category)}")  # one line, escaped
    for label, text in (("Task", case.task), ("Input", case.probe_input), ("Response", case.response)):
        st.caption(label)
        st.code(text or "(none)", language=None, wrap_lines=True)
    if case.messages:  # a multi-turn attack or an agent's tool calls: the reviewer judges the path, not the last turn
        from reporting.ui.conversation import show_conversation

        with st.expander(f"The whole conversation, {len(case.messages)} turns", expanded=True):
            show_conversation(case.messages, case.judged_turn)
    st.caption("Why the judge decided so")
    st.text(case.explanation or case.error or "(no explanation)")
    if case.verdicts:
        rows = [
            {"judge": name, "verdict": _verdict(v.passed), "explanation": v.explanation or ""}
            for name, v in sorted(case.verdicts.items())
        ]
        table(pd.DataFrame(rows), hide_index=True)


def record_decision(
    path: Path, run, case, verdict: str, reason: str, severity: Optional[str], kind: str, typed: str = ""
) -> Optional[str]:
    """The recording path of a decision: the session's role is checked first, on the server (``auth.require``),
    and the record names the signed-in identity, never a name from the page. A problem, or None when recorded."""
    from reporting._time import utc_stamp
    from reporting.analysis.compare import run_fingerprint
    from reporting.format.reviews import new_record
    from reporting.ui.auth import Refused, require

    try:
        who = require("review", typed)
    except Refused as exc:
        return str(exc)
    judged = _verdict(case.passed)
    fields = who.record_fields()
    record = new_record(
        "review",
        run_fingerprint(run),
        run.run.run_id,
        fields.pop("reviewer"),
        utc_stamp(),
        probe_id=case.probe_id,
        verdict=verdict,
        reason=reason or None,
        severity=severity,
        replaces={"judge": "primary", "verdict": judged},
        queue=kind,
        **fields,
    )
    return _append(path, {k: v for k, v in record.items() if v is not None}, run)


def record_signoff(path: Path, run, cases_reviewed: int, typed: str = "") -> Optional[str]:
    """The recording path of a sign-off: a lead's only (checked on the server); the record names the signer and
    (through the chain) the hash of the records it covers."""
    from reporting._time import utc_stamp
    from reporting.analysis.compare import run_fingerprint
    from reporting.format.reviews import new_record
    from reporting.ui.auth import Refused, require

    try:
        who = require("signoff", typed)
    except Refused as exc:
        return str(exc)
    fields = who.record_fields()
    reviewer = fields.pop("reviewer")
    record = new_record(
        "signoff",
        run_fingerprint(run),
        run.run.run_id,
        reviewer,
        utc_stamp(),
        cases_reviewed=cases_reviewed,
        basis="reviewed",
        **fields,
    )
    return _append(path, record, run)


def _decide(path: Path, run, case, typed: str, kind: str) -> None:
    judged = _verdict(case.passed)
    reason = st.text_area("Reason (required to overturn)", key=f"reason_{case.probe_id}", max_chars=2000)
    severity = st.selectbox("Severity", ["keep"] + list(SEVERITIES), key=f"sev_{case.probe_id}")
    opposite = {"pass": "fail", "fail": "pass"}.get(judged)
    columns = st.columns(4)
    actions = [
        ("Confirm", judged if judged != "error" else None),
        (f"Overturn to {opposite}" if opposite else "Judge it fail", opposite or "fail"),
        ("Judge it pass" if judged == "error" else "Unsure", "pass" if judged == "error" else "unsure"),
    ]
    for column, (label, verdict) in zip(columns, actions):
        if verdict is None or not column.button(label, key=f"do_{label}_{case.probe_id}"):
            continue
        tier = None if severity in (None, "keep") else severity
        problem = record_decision(path, run, case, verdict, reason, tier, kind, typed)
        if problem:
            st.error(problem if problem.startswith("Name the") else f"Not recorded: {markdown_literal(problem)}")
            return
        st.session_state["review_done"] = f"Recorded: {markdown_literal(case.probe_id)} {verdict}"
        st.rerun()


def _figures(review: Mapping[str, Any]) -> None:
    st.subheader("What the reviews change")
    st.text(
        f"{review['reviewed']} case(s) reviewed of {review['cases']}: {review['decided']} decided, "
        f"{review['overturned']} overturned, {review['contested']} contested, {review['unsure']} unsure. "
        f"Chosen by: {', '.join(f'{k} {v}' for k, v in review['queues'].items()) or 'none yet'}."
    )
    if review["sample_note"]:
        st.warning(f"Note: {review['sample_note']}.")
    st.caption(f"Adjudication rule: {review['rule']}.")
    rows = [
        {
            "figure": r["label"],
            "as judged": r["judged"],
            "as reviewed": r["reviewed"],
            "difference": r["difference"],
            "95% CI as reviewed": ""
            if not r["reviewed_ci"]
            else f"{r['reviewed_ci'][0]:.3f} to {r['reviewed_ci'][1]:.3f}",
        }
        for r in review["headline"]
    ]
    table(pd.DataFrame(rows), hide_index=True)
    change = review["pass_rate_change"]
    if change["difference_ci"]:
        low, high = change["difference_ci"]
        st.text(f"Pass rate change {change['difference']:+.3f} (paired 95% CI {low:+.3f} to {high:+.3f}).")
    st.subheader("Each judge against the reviewers")
    judges = [
        {
            "judge": name,
            "cases": j["n"],
            "fail/fail": j["confusion"]["fail_fail"],
            "said pass, harm": j["confusion"]["pass_fail"],
            "said fail, fine": j["confusion"]["fail_pass"],
            "pass/pass": j["confusion"]["pass_pass"],
            "balanced accuracy": j["balanced_accuracy"],
            "kappa": j["kappa"],
        }
        for name, j in review["judges"].items()
    ]
    table(pd.DataFrame(judges), hide_index=True) if judges else st.info("No case decided yet.")
    if review["reviewers"]:
        st.subheader("Reviewers against each other")
        table(
            pd.DataFrame([{**r, "reviewers": " / ".join(r["reviewers"])} for r in review["reviewers"]]), hide_index=True
        )
    for key, title in (("overturned_cases", "Overturned"), ("contested_cases", "Contested")):
        if review[key]:
            st.subheader(title)
            rows = [
                {
                    "probe": c["probe_id"],
                    "judged": c["judged"],
                    "reviewed": c["verdict"],
                    "reasons": " | ".join(c["reasons"]),
                }
                for c in review[key]
            ]
            table(pd.DataFrame(rows), hide_index=True)


@guarded
def review_page() -> None:
    ctx = context()
    st.title("Review")
    if ctx.current is None or ctx.current[1].run is None:
        st.info("No readable run is selected.")
        return
    source, data = ctx.current
    if source.path is None:
        st.info(NO_FILE)
        return
    from reporting.format.reviews import companion_path
    from reporting.report.build import build_report
    from reporting.report.reviewing import load_reviews

    judged = ctx.judged or data  # the decisions are on the verdicts as judged, whatever the sidebar shows
    run = judged.run
    assert run is not None
    path = companion_path(source.path)
    from reporting.ui import auth

    typed = st.sidebar.text_input("Reviewer", key="reviewer") if auth.mode() == "local" else ""
    who = auth.current(typed)
    can_review, can_sign = auth.may("review", typed), auth.may("signoff", typed)
    if auth.mode() == "signin" and who is not None:
        st.text(f"Recording as {who.name} ({who.subject}, {who.role}) at {who.issuer}.")
    if "review_done" in st.session_state:
        st.success(st.session_state.pop("review_done"))
    reviews = load_reviews(run, None, source.path)
    if reviews.chain is not None and reviews.chain.broken:
        st.error(
            f"The review records were changed after they were written: line {reviews.chain.line}. The figures as "
            "reviewed are not given (runlens review verify RUN names the line)."
        )
    if reviews.chain is not None:
        st.text(printable(f"Review records: {reviews.chain.summary()}"))
    if reviews.invalid:  # a bad record, or a link, FIFO, folder or oversized file of that name
        st.error("The review file has problems; nothing is recorded until they are fixed:")
        st.text("\n".join(printable(p) for p in reviews.invalid[:50]))
        return
    review = None
    if reviews.torn:
        # A line that cannot be read may be a reviewer's fail: the figures as reviewed are not given (fail closed);
        # new decisions are still appended, each on a line of its own.
        st.error(
            f"{len(reviews.torn)} line(s) of the review file cannot be read: the figures as reviewed are not shown "
            "until the file is mended. New decisions are still recorded."
        )
        st.text("\n".join(printable(p) for p in reviews.torn[:50]))
    elif reviews.path and not (reviews.chain is not None and reviews.chain.broken):
        review = build_report(judged, reviews=reviews, with_observability=False).review
    label = st.radio("Queue", list(QUEUES), horizontal=True, key="review_queue")
    kind = QUEUES[label or "Failures first"]
    me = who.key if who is not None else ""
    mine = {r["probe_id"] for r in reviews.records if r["kind"] == "review" and reviewer_key(r) == me}
    pending = queue(run, kind, mine, source.digest)
    st.text(f"{len(pending)} case(s) left in this queue for {(who.name if who else '') or 'the reviewer'}.")
    if len(pending):
        # The case on screen stays while it is undecided, even when a growing run puts a worse failure ahead of
        # it in the queue: the reviewer's reason and choices belong to the case they were typed for.
        held = st.session_state.get("review_case")
        at = pending.index_of(held[1]) if isinstance(held, tuple) and held[0] == kind else -1
        current = pending[max(at, 0)]
        st.session_state["review_case"] = (kind, current.probe_id)
        _case_card(current)
        if can_review:
            _decide(path, run, current, typed, kind)
        else:
            st.text("Your role reads the reviews; recording a decision needs the reviewer or lead role.")
    if review is not None:
        _figures(review)
        for signoff in review["signoffs"]:
            identity = signoff.get("identity")
            signed = f" (signed in: {identity['subject']} at {identity['issuer']})" if identity else ""
            st.text(
                f"Reviewed by {signoff['reviewer']}{signed} on {signoff['time'][:10]}, {signoff['cases_reviewed']} "
                f"cases reviewed, figures as {signoff['basis']}."
            )
    if can_sign and st.button("Sign off: figures as reviewed", key="signoff"):
        if reviews.blocking:
            st.error("Not signed off: the review file has problems (see above).")
            return
        count = 0 if review is None else review["reviewed"]
        problem = record_signoff(path, run, count, typed)
        if problem and problem.startswith("Name the"):
            st.error(problem)
            return
        signer = who.name if who else typed
        st.session_state["review_done"] = (
            f"Not signed off: {markdown_literal(problem)}" if problem else f"Signed off by {markdown_literal(signer)}"
        )
        st.rerun()
