"""Verbs over run reports: validate, recompute, export, compare, trend, check, schema."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Iterator
from typing import Optional

from reporting.commands import (
    COMPANION_OPTIONS,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    GATES,
    BadInput,
    _err,
    _filters,
    _load_valid,
    _out,
    _refuse_overwriting_input,
    load_run,
    mapped,
)
from reporting.commands.outputs import check_report_output, distinct_outputs, write_report
from reporting.format.writing import check_output_path, document_chunks, dumps
from reporting.textsafe import json_text, one_line, shown


def cmd_validate(args: argparse.Namespace) -> int:
    from reporting.format.folders import companion_kind

    status = EXIT_OK
    for path in args.files:
        kind = companion_kind(path)
        if kind is not None:  # `validate DIR/*.json` picks up RUN.dimensions.json: not a run, and not an error
            _out(f"{shown(path)}: skipped: {kind}, not a run report")
            continue
        result = load_run(path)
        if result.ok and result.run is not None:
            _out(f"{shown(path)}: ok, {len(result.run.cases)} case(s), schema version {result.run.schema_version}")
            continue
        status = EXIT_BAD_INPUT
        for problem in result.problems:
            _err(one_line(problem))
        kept = len(result.run.cases) if result.run is not None else 0
        _err(
            f"{shown(path)}: invalid: {len(result.problems)} problem(s); {kept} of {result.cases_in_file} case(s) "
            "are valid"
        )
    return status


def _companions(args: argparse.Namespace):
    """Rubric files beside the run (RUN.rubric.yaml, ...), or the ones named by --rubric and the like."""
    from reporting.report.companions import Companions

    return Companions.beside(args.run, **{key: getattr(args, key) for key in COMPANION_OPTIONS})


def _report(args: argparse.Namespace, run):
    from reporting.commands.frameworks import catalog_of
    from reporting.commands.review import reviews_for
    from reporting.report.build import build_report

    return build_report(
        run,
        filters=_filters(args),
        companions=_companions(args),
        min_cases=args.min_cases,
        seed=args.seed,
        embedding=args.embedding,
        reviews=reviews_for(args, run),
        basis=args.basis,
        judge_cards=_judge_cards(args),
        catalog=catalog_of(args),
        baseline=_load_valid(args.baseline)
        if getattr(args, "first_screen_baseline", False) and args.baseline
        else None,
    )


def _judge_cards(args: argparse.Namespace):
    """The built-in judges' cards and those of ``--judge-cards FILE`` (export); a bad card file stops the verb."""
    from reporting.analysis.judge_cards import read_cards
    from reporting.report.cards import JudgeCards, shipped_cards

    path, shipped = getattr(args, "judge_cards", None), shipped_cards()
    if path is None:
        return shipped
    cards, problems = read_cards(path)
    if problems:
        raise BadInput(*[str(p) for p in problems])
    return JudgeCards(tuple(cards) + shipped.cards, shipped.problems)


def _rubric_problems(report) -> int:
    """A broken companion never stops the report of the run it sits next to: the report is written and carries
    the problem, which is also printed here, and the exit code says something was wrong."""
    problems = report.rubrics.problems if report.rubrics is not None else ()
    for problem in problems:
        _err(one_line(problem))
    if problems:
        _err(f"{len(problems)} problem(s) in the rubric files; the report carries them under 'rubrics'")
        return EXIT_BAD_INPUT
    return EXIT_OK


COMPACT_ABOVE = 10_000  # cases above which recompute writes compact JSON (one case a line)


def cmd_recompute(args: argparse.Namespace) -> int:
    from reporting.commands.beside import table_beside, write_beside

    if args.output and args.format == "parquet":
        _refuse_overwriting_input(args.output, args.run)  # (and both outputs new: table_beside)
        check_output_path(args.output)
    elif args.output:
        check_report_output(args.output, args.run)
    table_path = table_beside(args) if args.format == "parquet" else None
    run = _load_valid(args.run)
    from reporting.report.serialise import report_document

    report = _report(args, run)
    # A large run is written with each case on its line and the rest compact: the same JSON, minutes sooner; its
    # case records are made one at a time as they are written, never all held at once.
    large = report.shown > COMPACT_ABOVE
    # (as Parquet the cases go to the table, not the document: streamed, their records are never made)
    document = report_document(report, stream_cases=large or table_path is not None)
    if table_path is not None:
        write_beside(args.output, table_path, report, document, large)
    elif args.output:
        write_report(args.output, document_chunks(document, compact_head=True) if large else dumps(document) + "\n")
        _err(f"wrote {shown(args.output)}: {report.shown} case(s), {len(report.drift)} drift finding(s)")
    else:
        _out(json_text("".join(document_chunks(document, compact_head=True)) if large else dumps(document)))
    return _rubric_problems(report)


def default_html_path(source: str) -> str:
    root, ext = os.path.splitext(source)
    return (root if ext.lower() in (".json", ".jsonl", ".ndjson") else source) + ".report.html"


def cmd_export(args: argparse.Namespace) -> int:
    from reporting.render.html import generated_at, render_html_pieces

    try:
        stamp = generated_at(args.timestamp)
    except (ValueError, OverflowError, OSError) as exc:
        raise BadInput(f"--timestamp / SOURCE_DATE_EPOCH: not a time stamp ({exc})") from None
    output = args.output or (None if args.pdf else default_html_path(args.run))
    for path in (output, args.pdf):
        if path:
            check_report_output(path, args.run)
    distinct_outputs(output, args.pdf)
    run = _load_valid(args.run)
    report = _report(args, run)
    pieces = render_html_pieces(report, title=args.title, timestamp=stamp)
    # The file is written as it is made (its case data a thousand cases at a time); the printout needs it whole.
    html = "".join(pieces) if args.pdf else None
    if output:
        size = [0]

        def counted(text: Iterable[str]) -> Iterator[str]:
            for piece in text:
                size[0] += len(piece)
                yield piece

        write_report(output, counted(pieces if html is None else (html,)))
        errors = f", {report.error_count} not evaluated" if report.error_count else ""
        _err(f"wrote {shown(output)}: {report.shown} of {report.total} case(s){errors}, {size[0] / 1e6:.1f} MB")
    if html is not None:
        from reporting.render.pdf import PdfError, html_to_pdf

        try:
            pdf = html_to_pdf(html, args.paper)
        except PdfError as exc:
            _err(f"python -m reporting export: cannot write {shown(args.pdf)}: {one_line(exc)}")
            return 2
        write_report(args.pdf, pdf)
        _err(f"wrote {shown(args.pdf)}: the printed handout ({args.paper}), {len(pdf) / 1e6:.1f} MB")
    return _rubric_problems(report)


def cmd_compare(args: argparse.Namespace) -> int:
    from reporting.analysis.compare import changed_cases, compare_runs
    from reporting.render.presentation import comparison_reading

    for output in (args.output, args.html):
        if output:
            check_report_output(output, args.base, args.candidate)
    distinct_outputs(args.output, args.html)
    base, candidate = _load_valid(args.base), _load_valid(args.candidate)
    if args.pair_on != "probe_id":
        from reporting.analysis.pairing import paired_on

        base, candidate = paired_on(base, args.pair_on), paired_on(candidate, args.pair_on)
        _err(f"paired on the probes' {args.pair_on} text: {len(base.cases)} and {len(candidate.cases)} probe(s)")
    comparison = compare_runs(base, candidate)
    text = dumps(comparison)
    if args.output:
        write_report(args.output, text + "\n")
        _err(f"wrote {shown(args.output)}: the comparison as JSON ({comparison['paired']} paired probe(s))")
    elif not args.html:  # asked for a file only: the terminal gets the reading, not 300 lines of JSON
        _out(json_text(text))
    if args.html:
        from reporting.render.html import render_compare_html

        failing = changed_cases(base, candidate, comparison["newly_failing"]).to_dict("records")
        passing = changed_cases(base, candidate, comparison["newly_passing"]).to_dict("records")
        write_report(args.html, render_compare_html(comparison, failing, passing, timestamp=args.timestamp))
        _err(f"wrote {shown(args.html)}: the comparison as a self-contained HTML file")
    for line in comparison["warnings"] + comparison_reading(comparison):
        _err(one_line(line))
    return EXIT_OK


def _runs_in(folder: str) -> tuple[list, list]:
    """The valid runs of a folder and the paths read; skipped files (companions, FIFOs, too large) are listed."""
    if not os.path.isdir(folder):
        raise BadInput(f"{shown(folder)}: not a folder of run reports")
    from reporting.sources.folders import run_files

    paths, skipped = run_files(folder)
    for entry in skipped:
        _err(f"{shown(os.path.join(folder, entry.name))}: skipped: {one_line(entry.reason)}")
    from reporting.format.problems import FileTooLarge, read_file_bytes
    from reporting.importers import run_models
    from reporting.sources.reading import load_run as load

    runs, problems = [], []
    for path in paths:
        try:
            data = read_file_bytes(path, regular_only=True)
        except (OSError, FileTooLarge) as exc:
            problems.append(f"{path}: cannot read the file ({getattr(exc, 'strerror', None) or exc})")
            continue
        models: list[Optional[str]] = list(run_models(data)) or [None]
        for model in models:  # a file of several models (promptfoo): each run is one point
            result = load(data, name=str(path), model=model)
            if result.ok:
                runs.append(mapped(result.run))
            else:
                problems += [str(p) for p in result.problems]
    if problems:
        raise BadInput(*problems)
    if not runs:
        raise BadInput(f"{shown(folder)}: no run reports found")
    return runs, paths


def cmd_trend(args: argparse.Namespace) -> int:
    from reporting.analysis.compare import trend

    for output in (args.output, args.html):
        if output:
            check_report_output(output)
    distinct_outputs(args.output, args.html)
    runs, paths = _runs_in(args.folder)
    for output in (args.output, args.html):
        for path in paths if output else ():
            _refuse_overwriting_input(output, str(path))
    data = trend(runs, suite=args.suite)
    if args.output:
        write_report(args.output, dumps(data) + "\n")
        _err(f"wrote {shown(args.output)}: the trend as JSON")
    if args.html:
        from reporting.render.html import render_trend_html

        write_report(args.html, render_trend_html(data, timestamp=args.timestamp))
        _err(f"wrote {shown(args.html)}: the trend as a self-contained HTML file")
    for line in data["warnings"]:
        _err(one_line(line))
    print_trend(data)
    return EXIT_OK


def print_trend(data) -> None:
    _out(f"suite {shown(data['suite'])}: {len(data['points'])} run(s)")
    for p in data["points"]:
        ci = p["pass_rate_ci"] or [None, None]
        _out(
            f"  {shown(p['created_at'] or 'undated'):22} {shown(p['run_id']):40} pass rate "
            f"{p['pass_rate'] if p['pass_rate'] is None else round(p['pass_rate'], 3)}"
            f" [{ci[0] if ci[0] is None else round(ci[0], 3)}, {ci[1] if ci[1] is None else round(ci[1], 3)}]"
            "  resilience "
            f"{p['resilience_index'] if p['resilience_index'] is None else round(p['resilience_index'], 3)}"
        )


def cmd_check(args: argparse.Namespace) -> int:
    from reporting.commands.frameworks import catalog_of, requirement_gates, requirements_of

    catalog = catalog_of(args)
    requirements = requirements_of(args, catalog)
    run = _load_valid(args.run)
    baseline = _load_valid(args.baseline) if args.baseline else None
    if args.allow_missing < 0:
        raise BadInput("--allow-missing: must be 0 or more")
    for gate in GATES:
        limit = getattr(args, gate.option)
        low, high = gate.bounds
        if limit is not None and not low <= limit <= high:
            hint = f" (a fraction: {limit / 100:g} for {limit:g}%)" if high == 1.0 and 1 < limit <= 100 else ""
            allowed = f"between {low:g} and {high:g}" if high < float("inf") else f"{low:g} or more"
            raise BadInput(f"{_flag(gate.option)}: must be {allowed}{hint}, not {limit:g}")
    if (args.rubric is None) != (args.verdicts is None):
        raise BadInput("--rubric and --verdicts go together")
    if args.max_new_failures is not None and baseline is None:
        raise BadInput("--max-new-failures needs --baseline BASE.json")
    from reporting.report.gates import prepare

    # The error-rate gate (default 0.05) joins whatever is asked; alone it is not a gate anybody asked for.
    explicit = {k for k in _thresholds(args) if k != "max_error_rate"}
    asked = explicit or args.rubric or baseline is not None or args.strict or args.max_error_rate is not None
    if not (asked or requirements):
        raise BadInput(NO_GATE)
    from reporting.commands.review import reviewed_for_gates

    run = reviewed_for_gates(args, run)  # --as reviewed: the gates judge the reviewers' verdicts
    prepared = prepare(run, baseline, trust_run_weights=args.trust_run_weights)
    results = _gates(run, args, baseline, prepared)
    results += requirement_gates(run, requirements, catalog)
    if not results:
        raise BadInput(NO_GATE)
    for note in prepared.notes:
        _out("note   " + one_line(note))
    for gate in results:
        _out(("holds  " if gate["holds"] else "FAILS  ") + one_line(gate["line"]))
    failed = [g for g in results if not g["holds"]]
    _out(f"{len(results) - len(failed)} of {len(results)} gate(s) hold")
    return EXIT_FAILED if failed else EXIT_OK


NO_GATE = (
    "no gate given: use "
    + ", ".join("--" + g.option.replace("_", "-") for g in GATES)
    + ", --rubric/--verdicts, --baseline or --require"
)


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def _thresholds(args: argparse.Namespace) -> dict[str, float]:
    return {g.option: getattr(args, g.option) for g in GATES if getattr(args, g.option) is not None}


def _gates(run, args, baseline, prepared):
    from reporting.report.gates import run_gates

    return run_gates(
        run,
        thresholds=_thresholds(args),
        baseline=baseline,
        max_new_failures=args.max_new_failures,
        alpha=args.alpha,
        rubric=args.rubric,
        verdicts=args.verdicts,
        allow_missing=args.allow_missing,
        strict=args.strict,
        trust_run_weights=args.trust_run_weights,
        prepared=prepared,
    )


def cmd_schema(args: argparse.Namespace) -> int:
    from reporting.format.schema import json_schema

    _out(json_text(dumps(json_schema())))
    return EXIT_OK
