"""The ``review`` verb (docs/review.md): record people's decisions on a run's verdicts beside the run, sign a run
off, merge reviewers' files, and show how far the judges agree with the reviewers; and the ``--reviews`` /
``--as`` options of ``recompute``, ``export`` and ``check``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reporting.commands import EXIT_FAILED, EXIT_OK, BadInput, _err, _load_valid, _out
from reporting.textsafe import one_line, shown


def add_review_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reviews", metavar="R.jsonl", help="review records (default: RUN.reviews.jsonl beside the run)")
    p.add_argument(
        "--as",
        dest="basis",
        choices=("judged", "reviewed"),
        default="judged",
        help="figures as the judges gave them (default) or with the reviewers' verdicts where they decided",
    )


def add_review_parser(verbs: Any, reading: argparse.ArgumentParser) -> None:
    p = verbs.add_parser(
        "review",
        parents=[reading],
        help="record review decisions on a run's verdicts, sign off, merge reviewers' files (docs/review.md)",
    )
    p.add_argument(
        "items",
        nargs="+",
        metavar="RUN | merge FILE... | verify RUN",
        help="the run reviewed, or: merge A.jsonl B.jsonl, or: verify RUN (check the review file's hash chain)",
    )
    p.add_argument("--set", action="append", metavar="PROBE=VERDICT", help="a decision: pass, fail or unsure")
    p.add_argument("--reason", help="why (required when a decision overturns the judge's verdict)")
    p.add_argument("--reviewer", help="who decides (required to record anything)")
    p.add_argument("--severity", help="with --set: the tier the reviewer gives the case")
    p.add_argument("--from", dest="batch", metavar="D.jsonl", help="decisions, one JSON object a line")
    p.add_argument("--signoff", action="store_true", help="sign the run off: the figures as reviewed")
    p.add_argument("--reviews", metavar="R.jsonl", help="the review file (default: RUN.reviews.jsonl beside the run)")
    p.add_argument("-o", "--output", metavar="OUT.jsonl", help="with merge: the merged file (never overwritten)")
    p.add_argument(
        "--head", metavar="sha256:HEX", help="with verify: a chain head seen before (the export shows it) still there"
    )
    p.set_defaults(func=cmd_review)


def reviews_for(args: argparse.Namespace, run) -> Any:
    """The run's review records (``--reviews`` or the companion), or None when there are none. A file with a
    problem stops the verb (exit 2): records are never applied to the wrong run. A line that cannot be read (a
    write cut short) is a warning for the figures as judged, and stops the figures as reviewed (``--as
    reviewed``, the gates of ``check``): it may have been a reviewer's fail, so they fail closed."""
    from reporting.report.reviewing import load_reviews

    reviews = load_reviews(run, getattr(args, "reviews", None), args.run)
    _refuse_writing_over(args, reviews.path)
    reviewed = getattr(args, "basis", "judged") == "reviewed"
    if reviewed and reviews.torn:
        raise BadInput(
            *[str(p) for p in reviews.blocking],
            f"--as reviewed: {len(reviews.torn)} line(s) of {reviews.path} cannot be read; the figures as reviewed "
            "are not given until the file is mended (a line that cannot be read may be a reviewer's fail)",
        )
    chain = reviews.chain_problem
    if reviewed and chain is not None:
        raise BadInput(
            str(chain), "--as reviewed: the figures as reviewed are not given from records that were changed"
        )
    invalid = reviews.invalid
    for problem in [p for p in reviews.blocking if p not in invalid]:  # lines cut short, a broken chain: once each
        _err(f"warning: {one_line(problem)}")
    if invalid:
        raise BadInput(*[str(p) for p in invalid])
    if reviews.path is None:
        if reviewed:
            raise BadInput(f"--as reviewed: no review file for {args.run} (RUN.reviews.jsonl or --reviews FILE)")
        return None
    return reviews


def _refuse_writing_over(args: argparse.Namespace, reviews_path: Any) -> None:
    """No output of a verb replaces the review trail it reads (``-o``, ``--html``, ``--pdf`` naming it)."""
    if reviews_path is None:
        return
    from reporting.format.writing import same_file

    for option in ("output", "html", "pdf"):
        output = getattr(args, option, None)
        if not isinstance(output, str) or not output:
            continue
        if same_file(output, reviews_path):
            raise BadInput(
                f"{output}: refusing to write over the review file {reviews_path} (append-only: the record of who "
                "decided what); choose another output path"
            )


def reviewed_for_gates(args: argparse.Namespace, run):
    """``check --as reviewed``: the run with the reviewers' verdicts (fails closed without a review file)."""
    if getattr(args, "basis", "judged") != "reviewed":
        return run
    from reporting.report.reviewing import apply_reviews

    reviews = reviews_for(args, run)
    _, reviewed = apply_reviews(run, reviews.records)
    return reviewed


def cmd_review(args: argparse.Namespace) -> int:
    if args.items[0] == "merge":
        return _merge(args)
    if args.items[0] == "verify" and len(args.items) == 2:
        return _verify(args)
    if len(args.items) != 1:
        raise BadInput("review: one run (review RUN.json --set PROBE=VERDICT ...), or: review merge A.jsonl B.jsonl")
    args.run = args.items[0]
    run = _load_valid(args.run)
    from reporting.analysis.compare import run_fingerprint
    from reporting.format.reviews import append_records, companion_path

    records = _new_records(args, run, run_fingerprint(run))
    target = Path(args.reviews) if args.reviews else companion_path(args.run)
    if records:
        args.basis = "judged"
        reviews_for(args, run)  # the file as it is: a link, FIFO or folder of that name, or a bad record, stops here
        append_records(target, records)  # opened without following a link, a regular file only
        _err(f"appended {len(records)} record(s) to {shown(target)}")
    return _show(args, run)


def _new_records(args: argparse.Namespace, run, fingerprint: str) -> list[dict[str, Any]]:
    from reporting._time import utc_stamp
    from reporting.format.problems import Problem
    from reporting.format.reviews import (
        check_against_run,
        check_record,
        judged_verdicts,
        new_record,
        replaced_verdict,
    )

    wanted = args.set or args.batch or args.signoff
    if not wanted:
        return []
    now = utc_stamp()
    raw: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(args.set or [], 1):
        probe, sep, verdict = item.rpartition("=")
        if not sep:
            raise BadInput(f"--set {item!r}: give PROBE=VERDICT, e.g. --set PI-0001=fail")
        decision = {"probe_id": probe, "verdict": verdict, "reason": args.reason, "severity": args.severity}
        raw.append((f"--set #{i}", decision))
    if args.batch:
        raw.extend(_batch(args.batch))
    problems: list[Problem] = []
    records = []
    judged = judged_verdicts(run, {str(given.get("probe_id")) for _, given in raw})  # the cases named, read alone
    for where, given in raw:
        reviewer = given.get("reviewer") or args.reviewer
        fields = {k: given.get(k) for k in ("probe_id", "verdict", "severity", "reason")}
        verdict = judged.get(str(given.get("probe_id")), replaced_verdict(None))  # (a probe the run lacks: refused)
        fields["replaces"] = {"judge": "primary", "verdict": verdict}
        fields["queue"] = "command line"
        record = new_record("review", fingerprint, run.run.run_id, reviewer, now, **fields)
        record = {k: v for k, v in record.items() if v is not None}
        problems.extend(check_record(record, where, args.batch if where.startswith("line") else "command line"))
        record["_where"] = where
        records.append(record)
    problems.extend(check_against_run(records, fingerprint, judged, "command line", judged))
    if args.signoff:
        reviewed = len({r["probe_id"] for r in records}) + _already_reviewed(args, run)
        signoff = new_record(
            "signoff", fingerprint, run.run.run_id, args.reviewer, now, cases_reviewed=reviewed, basis="reviewed"
        )
        problems.extend(check_record(signoff, "--signoff", "command line"))
        records.append(signoff)
    if problems:
        raise BadInput(*dict.fromkeys(str(p) for p in problems))  # each once (a rule may be checked twice)
    return records


def _batch(path: str) -> list[tuple[str, dict[str, Any]]]:
    from reporting.format.problems import FileTooLarge, read_file_bytes
    from reporting.format.strict_json import parse_json_text

    try:
        data = read_file_bytes(path, regular_only=True)
        text = data.decode("utf-8-sig")
    except (OSError, FileTooLarge) as exc:
        raise BadInput(f"{path}: cannot read the file: {getattr(exc, 'strerror', None) or exc}") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 text (byte offset {exc.start})") from None
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        value, problems = parse_json_text(path, line, f"line {number}")
        if problems:
            raise BadInput(*[str(p) for p in problems])
        if not isinstance(value, dict):
            raise BadInput(f"{path}: line {number}: a decision is a JSON object {{probe_id, verdict, reason}}")
        found.append((f"line {number}", value))
    return found


def _already_reviewed(args: argparse.Namespace, run) -> int:
    """Cases reviewed so far, for a sign-off: a file with a line that cannot be read is not signed off (the
    count, and what the reviewers decided, would be a guess)."""
    basis = getattr(args, "basis", "judged")
    args.basis = "reviewed"
    try:
        reviews = reviews_for(args, run) if _has_reviews(args) else None
    finally:
        args.basis = basis
    return 0 if reviews is None else len({r["probe_id"] for r in reviews.records if r["kind"] == "review"})


def _has_reviews(args: argparse.Namespace) -> bool:
    import os

    from reporting.format.reviews import companion_path

    return os.path.lexists(args.reviews or companion_path(args.run))


def _show(args: argparse.Namespace, run) -> int:
    """What the review file says now: counts, each judge's agreement with the reviewers, sign-offs."""
    from reporting.report.build import build_report

    args.basis = "judged"
    reviews = reviews_for(args, run)
    if reviews is None:
        _out("no review records yet")
        return EXIT_OK
    review = build_report(run, reviews=reviews, with_observability=False).review
    assert review is not None
    _out(
        f"{review['reviewed']} case(s) reviewed of {review['cases']}: {review['decided']} decided, "
        f"{review['overturned']} overturned, {review['contested']} contested, {review['unsure']} unsure"
    )
    if review["sample_note"]:
        _out(f"note: {one_line(review['sample_note'])}")
    change = review["pass_rate_change"]
    if change["n"] and change["difference_ci"]:
        low, high = change["difference_ci"]
        _out(
            f"pass rate as judged {change['judged']:.3f}, as reviewed {change['reviewed']:.3f} "
            f"(difference {change['difference']:+.3f}, 95% CI {low:+.3f} to {high:+.3f})"
        )
    for judge, figures in review["judges"].items():
        ba = "n/a" if figures["balanced_accuracy"] is None else f"{figures['balanced_accuracy']:.3f}"
        kappa = "undefined" if figures["kappa"] is None else f"{figures['kappa']:.3f}"
        _out(f"judge {shown(judge)}: {figures['n']} case(s), balanced accuracy {ba}, kappa {kappa}")
    for signoff in review["signoffs"]:
        _out(
            f"signed off by {shown(signoff['reviewer'])}{_signed_in(signoff)} on {shown(signoff['time'])}: "
            f"{signoff['cases_reviewed']} case(s) reviewed{_covers(signoff)}"
        )
    if review["chain"]:
        _out(f"review chain: {one_line(review['chain']['text'])}")
    return EXIT_OK


def _signed_in(record: dict[str, Any]) -> str:
    identity = record.get("identity")
    if not isinstance(identity, dict):
        return " (typed name, not signed in)"
    return f" (signed in: {shown(identity.get('subject'))} at {shown(identity.get('issuer'))})"


def _covers(record: dict[str, Any]) -> str:
    covers = record.get("covers")
    return f", covering {covers['records']} record(s) up to {covers['hash']}" if isinstance(covers, dict) else ""


def _verify(args: argparse.Namespace) -> int:
    """``review verify RUN``: the review file's hash chain, checked from its first line; the first break named by
    its line (exit 1), or the chain's state and head (exit 0)."""
    import os

    from reporting.analysis.compare import run_fingerprint
    from reporting.format.problems import FileTooLarge
    from reporting.format.review_chain import HASH, verify_file
    from reporting.format.reviews import companion_path, file_problem

    args.run = args.items[1]
    run = _load_valid(args.run)
    path = Path(args.reviews) if args.reviews else companion_path(args.run)
    if not os.path.lexists(path):
        raise BadInput(f"{path}: no review file for {args.run} (RUN.reviews.jsonl or --reviews FILE)")
    if args.head is not None and not HASH.match(args.head):
        raise BadInput(f"--head {args.head!r}: give the head as printed, sha256: and 64 hexadecimal digits")
    try:
        chain = verify_file(path, run_fingerprint(run), args.head)
    except (OSError, FileTooLarge) as exc:
        raise BadInput(str(file_problem(str(path), exc))) from None
    if chain.broken:
        _err(f"{shown(path)}: line {chain.line}: {one_line(chain.problem or '')}")
        return EXIT_FAILED
    _out(f"{shown(path)}: {one_line(chain.summary())}")
    for signoff in chain.signoffs:
        who = f"{shown(signoff['reviewer'])}{_signed_in(signoff)}"
        _out(f"line {signoff['line']}: signed off by {who}{_covers(signoff)}")
    return EXIT_OK


def _merge(args: argparse.Namespace) -> int:
    from reporting.format.problems import FileTooLarge, read_file_bytes
    from reporting.format.review_chain import link, verify
    from reporting.format.reviews import merge
    from reporting.format.writing import check_output_path, write_atomic

    files = args.items[1:]
    if len(files) < 2 or not args.output:
        raise BadInput("review merge A.jsonl B.jsonl [...] -o OUT.jsonl")
    check_output_path(args.output)
    if Path(args.output).exists():
        raise BadInput(f"{args.output}: exists; merge writes a new file, never over one")
    loaded = []
    for path in files:
        try:
            loaded.append((path, read_file_bytes(path, regular_only=True)))
        except (OSError, FileTooLarge) as exc:
            raise BadInput(f"{path}: cannot read the file: {getattr(exc, 'strerror', None) or exc}") from None
    records, problems, conflicts = merge(loaded)
    if problems:
        raise BadInput(*[str(p) for p in problems])
    for path, data in loaded:  # a file whose chain is broken was changed after it was written: never merged
        chain = verify(data)
        if chain.broken:
            raise BadInput(f"{path}: line {chain.line}: {chain.problem} (review verify names it; nothing merged)")
    # The merged file is a chain of its own, in time order; each reviewer's record keeps its identity and time.
    lines = link(records, 0, "", str(records[0]["run"])) if records else []
    write_atomic(args.output, "".join(line.decode("ascii") for line in lines))
    _err(f"wrote {shown(args.output)}: {len(records)} record(s) from {len(files)} file(s)")
    for conflict in conflicts:
        said = ", ".join(f"{shown(name)} {shown(verdict)}" for name, verdict in conflict["verdicts"].items())
        _out(f"conflict {shown(conflict['probe_id'])}: {said}")
    _out(f"{len(conflicts)} conflict(s)")
    return EXIT_OK
