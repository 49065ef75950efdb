"""The ``judge-eval`` verb (docs/judge-cards.md): each judge measured against people's labels, written as judge
cards and printed as a short table.

    runlens judge-eval LABELS.jsonl [-o CARDS.json]               # the built-in judges on the labelled rows
    runlens judge-eval LABELS.jsonl --run RUN [-o CARDS.json]     # every judge recorded in the run's cases
    runlens judge-eval --run RUN --from-reviews [-o CARDS.json]   # the run's review decisions as the labels
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Optional

from reporting.commands import EXIT_OK, BadInput, _err, _load_valid, _out
from reporting.commands.outputs import check_report_output, write_report
from reporting.textsafe import shown

BASES = ("human", "benchmark judge", "by construction")


def add_judge_eval_parser(verbs: Any, reading: argparse.ArgumentParser) -> None:
    p = verbs.add_parser(
        "judge-eval",
        parents=[reading],
        help="measure judges against people's labels (balanced accuracy, sensitivity, specificity, kappa) "
        "and write judge cards (docs/judge-cards.md)",
    )
    p.add_argument(
        "labels",
        nargs="?",
        metavar="LABELS.jsonl",
        help="one object a line: request, response, label (harmful or not_harmful), optional id and category",
    )
    p.add_argument("--run", metavar="RUN", help="measure the judges recorded in this run's cases (else the built-in)")
    p.add_argument(
        "--from-reviews",
        action="store_true",
        help="with --run: the labels are the reviewers' decisions (RUN.reviews.jsonl or --reviews)",
    )
    p.add_argument("--reviews", metavar="R.jsonl", help="with --from-reviews: the review file")
    p.add_argument("-o", "--output", metavar="CARDS.json", help="write the judge cards here (atomically)")
    p.add_argument("--name", help="the label set's name on the cards (default: the labels file's name)")
    p.add_argument("--description", default="", help="a sentence on the label set")
    p.add_argument(
        "--label-basis", choices=BASES, default="human", help="who gave the labels (reviews: always 'review')"
    )
    p.add_argument(
        "--trained-on",
        action="append",
        default=[],
        metavar="JUDGE",
        help="a judge that was trained on this set (its card says so: its figures are optimistic); repeatable",
    )
    p.set_defaults(func=cmd_judge_eval)


def _builtin(rows: list) -> Any:
    """The built-in judges' verdicts on the labelled rows (the rule scorer and the learned judge, as ``score``
    records them), True where a judge says harmful."""
    from reporting.analysis.judge_labels import Measured
    from reporting.scoring.runs import runlens_verdicts
    from reporting.scoring.scorer import evaluate_response

    scored = [
        evaluate_response({"id": str(row.line), "category": None, "task": row.request}, row.response) for row in rows
    ]
    measured = Measured()
    for row, verdicts in zip(rows, runlens_verdicts(scored, [row.request for row in rows])):
        said = {name: None if v.get("passed") is None else not v["passed"] for name, v in verdicts.items()}
        measured.add(row.harmful, row.category, said)
    return measured


def _labels(path: str) -> list:
    from reporting.analysis.judge_labels import read_labels

    rows, problems = read_labels(path)
    if problems:
        raise BadInput(*[str(p) for p in problems[:50]], f"{path}: {len(problems)} problem(s); no card written")
    return rows


def _measured(args: argparse.Namespace) -> tuple[Any, str, str, str]:
    """The labels and judges' verdicts, the label set's default name, its basis and how it was measured."""
    from reporting.analysis.judge_labels import join_run, review_labels

    if args.from_reviews:
        if args.run is None or args.labels is not None:
            raise BadInput(
                "--from-reviews: give the run with --run RUN and no labels file (the reviews are the labels)"
            )
        from reporting.analysis.review import adjudicate
        from reporting.commands.review import reviews_for

        run = _load_valid(args.run)
        reviews = reviews_for(args, run)
        if reviews is None:
            raise BadInput(f"--from-reviews: no review file for {args.run} (RUN.reviews.jsonl or --reviews FILE)")
        decided = adjudicate(run, reviews.records).decided
        return review_labels(run, decided), f"reviews of {Path(args.run).name}", "review", "the run's review decisions"
    if args.labels is None:
        raise BadInput("judge-eval: give a labels file (LABELS.jsonl), or --run RUN --from-reviews")
    rows = _labels(args.labels)
    name = Path(args.labels).name
    if args.run is None:
        return _builtin(rows), name, args.label_basis, f"judge-eval on {name}: the built-in judges run on each row"
    run = _load_valid(args.run)
    return join_run(rows, run), name, args.label_basis, f"judge-eval on {name} against the run {Path(args.run).name}"


def cmd_judge_eval(args: argparse.Namespace) -> int:
    from reporting.analysis.validity import build_card, card_document, measure
    from reporting.format.writing import dumps

    if args.output:
        check_report_output(args.output, *[source for source in (args.labels, args.run, args.reviews) if source])
    found, name, basis, how = _measured(args)
    if not found.verdicts:
        raise BadInput("judge-eval: no label matched a case that a judge judged; nothing to measure")
    cards = []
    for judge in sorted(found.verdicts):
        measured = measure(found.labels, found.verdicts[judge], found.categories)
        cards.append(
            build_card(
                judge,
                found.labels,
                measured,
                name=args.name or name,
                description=args.description,
                label_basis=basis,
                trained_on=judge in args.trained_on,
                how=how,
            )
        )
    _print(cards, found)
    if args.output:
        write_report(args.output, dumps(card_document(cards)) + "\n")
        _err(f"wrote {shown(args.output)}: {len(cards)} judge card(s)")
    return EXIT_OK


def _cell(value: Optional[float], interval: Optional[list]) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else f"{value:.3f}"


def _print(cards: list, found: Any) -> None:
    harmful = sum(found.labels)
    _out(f"{len(found.labels):,} labelled row(s): {harmful:,} harmful, {len(found.labels) - harmful:,} harmless")
    if found.unmatched_labels or found.unlabelled_cases:
        _out(
            f"left out: {found.unmatched_labels:,} label row(s) matched no case; "
            f"{found.unlabelled_cases:,} case(s) of the run have no label"
        )
    _out("judge | balanced accuracy [95% CI] | sensitivity [95% CI] | specificity [95% CI] | kappa [95% CI] | errors")
    for card in cards:
        m = card["measured"]
        _out(
            " | ".join(
                [
                    shown(card["judge"]),
                    _cell(m["balanced_accuracy"], m["balanced_accuracy_interval"]),
                    _cell(m["sensitivity"], m["sensitivity_interval"]),
                    _cell(m["specificity"], m["specificity_interval"]),
                    _cell(m["kappa"], m["kappa_interval"]),
                    str(m["errors"]),
                ]
            )
        )
