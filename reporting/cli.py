"""Command line: ``python -m reporting VERB ...``. Exit 0 on success, 2 on bad input, 1 on an internal error."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Optional

from reporting._version import __version__
from reporting.analysis.registry import GATED
from reporting.format import problems as files
from reporting.format.problems import InputError
from reporting.format.reading import load_run
from reporting.format.schema import SEVERITIES, json_schema
from reporting.format.writing import OutputError, check_output_path, dumps, write_atomic
from reporting.textsafe import cli_line

if TYPE_CHECKING:
    from reporting.analysis.filters import Filters

# Verbs import the analysis, rendering and scoring layers when they run, so that `--help` starts fast.
DEFAULT_MIN_CASES = 5  # the same default as reporting.analysis.observability (a test keeps them equal)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
COMPANION_OPTIONS = ("rubric", "verdicts", "benchmarks", "dimensions")
GATES = tuple(f.gate for f in GATED if f.gate is not None)


class BadInput(Exception):
    """Raised by a verb for input problems; each argument is one message line."""


def _safe(text: str) -> str:
    """Every line printed is one line: control characters escaped, a leading '::' (a CI workflow command) broken."""
    return "".join(cli_line(line) + "\n" for line in str(text).split("\n")) if text else "\n"


def _out(text: str) -> None:
    sys.stdout.write(_safe(text[:-1] if text.endswith("\n") else text))


def _err(text: str) -> None:
    sys.stderr.write(_safe(text[:-1] if text.endswith("\n") else text))


def cmd_validate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for path in args.files:
        result = load_run(path)
        if result.ok and result.run is not None:
            _out(f"{path}: ok, {len(result.run.cases)} case(s), schema version {result.run.schema_version}")
            continue
        status = EXIT_BAD_INPUT
        for problem in result.problems:
            _err(str(problem))
        kept = len(result.run.cases) if result.run is not None else 0
        _err(f"{path}: invalid: {len(result.problems)} problem(s); {kept} of {result.cases_in_file} case(s) are valid")
    return status


def _filters(args: argparse.Namespace) -> Filters:
    from reporting.analysis.filters import Filters

    try:
        return Filters(
            tuple(args.category or ()),
            tuple(s.lower() for s in args.severity or ()),
            args.outcome,
            tuple(args.failure_mode or ()),
            args.search or "",
        )
    except ValueError as exc:
        raise BadInput(f"filters: {exc}") from None


def _load_valid(path: str):
    result = load_run(path)
    if not result.ok:
        raise BadInput(*[str(p) for p in result.problems])
    return result.run


def _companions(args: argparse.Namespace):
    """Rubric files beside the run (RUN.rubric.yaml, ...), or the ones named by --rubric and the like."""
    from reporting.report.companions import Companions

    return Companions.beside(args.run, **{key: getattr(args, key) for key in COMPANION_OPTIONS})


def _report(args: argparse.Namespace, run):
    from reporting.report.build import build_report

    return build_report(
        run, filters=_filters(args), companions=_companions(args), min_cases=args.min_cases, seed=args.seed
    )


def _rubric_problems(report) -> int:
    """A broken companion never stops the report of the run it sits next to: the report is written and carries
    the problem, which is also printed here, and the exit code says something was wrong."""
    problems = report.rubrics.problems if report.rubrics is not None else ()
    for problem in problems:
        _err(problem)
    if problems:
        _err(f"{len(problems)} problem(s) in the rubric files; the report carries them under 'rubrics'")
        return EXIT_BAD_INPUT
    return EXIT_OK


def cmd_recompute(args: argparse.Namespace) -> int:
    if args.output:
        _refuse_overwriting_input(args.output, args.run)
        check_output_path(args.output)
    run = _load_valid(args.run)
    from reporting.report.serialise import report_document

    report = _report(args, run)
    text = dumps(report_document(report))
    if args.output:
        _refuse_overwriting_input(args.output, args.run)
        write_atomic(args.output, text + "\n")
        _err(f"wrote {args.output}: {report.shown} case(s), {len(report.drift)} drift finding(s)")
    else:
        _out(text)
    return _rubric_problems(report)


def _refuse_overwriting_input(output: str, source: str) -> None:
    """The one overwrite guard: no verb writes over a file it reads."""
    same = os.path.abspath(output) == os.path.abspath(source)
    if not same and os.path.exists(output) and os.path.exists(source):
        same = os.path.samefile(output, source)
    if same:
        raise BadInput(f"{output}: refusing to overwrite the input report; choose another output path")


def default_html_path(source: str) -> str:
    root, ext = os.path.splitext(source)
    return (root if ext.lower() in (".json", ".jsonl", ".ndjson") else source) + ".report.html"


def cmd_export(args: argparse.Namespace) -> int:
    from reporting.render.html import generated_at, render_html

    run = _load_valid(args.run)
    try:
        stamp = generated_at(args.timestamp)
    except (ValueError, OverflowError, OSError) as exc:
        raise BadInput(f"--timestamp / SOURCE_DATE_EPOCH: not a time stamp ({exc})") from None
    output = args.output or default_html_path(args.run)
    _refuse_overwriting_input(output, args.run)
    check_output_path(output)
    report = _report(args, run)
    html = render_html(report, title=args.title, timestamp=stamp)
    write_atomic(output, html)
    _err(f"wrote {output}: {report.shown} of {report.total} case(s), {len(html) / 1e6:.1f} MB")
    return _rubric_problems(report)


def _add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-cases", type=int, default=DEFAULT_MIN_CASES, help="observability needs this many cases (default 5)"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed of the embedding and clustering (default 0)")
    p.add_argument("--rubric", metavar="RUBRIC.yaml", help="default: RUN.rubric.yaml next to the run, if present")
    p.add_argument("--verdicts", metavar="V.jsonl", help="default: RUN.verdicts.jsonl next to the run, if present")
    p.add_argument("--benchmarks", metavar="DEFS.yaml", help="default: RUN.benchmarks.yaml next to the run, if present")
    p.add_argument(
        "--dimensions", metavar="EVALS.json", help="default: RUN.dimensions.json next to the run, if present"
    )
    _add_filter_options(p)


def _add_filter_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--category", action="append", metavar="C", help="keep this category (repeatable)")
    p.add_argument(
        "--severity", action="append", metavar="S", help=f"keep this severity: {', '.join(SEVERITIES)} (repeatable)"
    )
    p.add_argument("--outcome", choices=("pass", "fail"), help="keep passed or failed cases only")
    p.add_argument(
        "--failure-mode", action="append", metavar="M", help="keep cases with this detected failure mode (repeatable)"
    )
    p.add_argument(
        "--search", metavar="TEXT", help="keep cases whose probe id, category, task, input or response contains TEXT"
    )


def _patterns(args: argparse.Namespace):
    from reporting.scoring.scorer import load_patterns

    return load_patterns(args.patterns)  # a PatternError is an InputError: main prints each problem, exit 2


def cmd_score(args: argparse.Namespace) -> int:
    from reporting.scoring.runs import pair_inputs, report_from_cases, score_cases, scoring_meta

    patterns = _patterns(args)
    _refuse_overwriting_input(args.output, args.probes)
    _refuse_overwriting_input(args.output, args.responses)
    check_output_path(args.output)
    pairs, problems = pair_inputs(args.probes, args.responses)
    if problems:
        for problem in problems:
            _err(str(problem))
        _err(f"scored nothing: {len(problems)} problem(s) in the inputs; {len(pairs)} probe(s) had a usable response")
        return EXIT_BAD_INPUT
    meta = scoring_meta(
        args.run_id or os.path.splitext(os.path.basename(args.output))[0],
        args.model or "unknown",
        args.suite or os.path.basename(args.probes),
        patterns=args.patterns,
    )
    report = report_from_cases(score_cases(pairs, patterns), meta)
    write_atomic(args.output, dumps(report) + "\n")
    counts = report["aggregate_metrics"]["counts"]
    _err(
        f"wrote {args.output}: {counts['probes_evaluated']} case(s) scored, {counts['passed']} passed, "
        f"{counts['failed']} failed"
    )
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from reporting.scoring.runs import import_jailbreakbench

    patterns = _patterns(args)
    _refuse_overwriting_input(args.output, args.file)
    check_output_path(args.output)
    report, skipped, problems = import_jailbreakbench(args.file, patterns)
    if problems:
        raise BadInput(*[str(p) for p in problems])
    write_atomic(args.output, dumps(report) + "\n")
    counts = report["aggregate_metrics"]["counts"]
    _err(
        f"wrote {args.output}: {counts['probes_evaluated']} case(s) scored, {skipped} record(s) without prompt or "
        "response skipped"
    )
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from reporting.analysis.compare import changed_cases, compare_runs
    from reporting.render.presentation import comparison_reading

    base, candidate = _load_valid(args.base), _load_valid(args.candidate)
    for output in (args.output, args.html):
        if output:
            _refuse_overwriting_input(output, args.base)
            _refuse_overwriting_input(output, args.candidate)
            check_output_path(output)
    comparison = compare_runs(base, candidate)
    text = dumps(comparison)
    if args.output:
        write_atomic(args.output, text + "\n")
    else:
        _out(text)
    if args.html:
        from reporting.render.html import render_compare_html

        failing = changed_cases(base, candidate, comparison["newly_failing"]).to_dict("records")
        passing = changed_cases(base, candidate, comparison["newly_passing"]).to_dict("records")
        write_atomic(args.html, render_compare_html(comparison, failing, passing, timestamp=args.timestamp))
    for line in comparison["warnings"] + comparison_reading(comparison):
        _err(line)
    return EXIT_OK


def _runs_in(folder: str) -> tuple[list, list]:
    """The valid runs of a folder and the paths read; skipped files (companions, FIFOs, too large) are listed."""
    if not os.path.isdir(folder):
        raise BadInput(f"{folder}: not a folder of run reports")
    from reporting.format.folders import run_files

    paths, skipped = run_files(folder)
    for entry in skipped:
        _err(f"{os.path.join(folder, entry.name)}: skipped: {entry.reason}")
    runs, problems = [], []
    for path in paths:
        result = load_run(path)
        if result.ok:
            runs.append(result.run)
        else:
            problems += [str(p) for p in result.problems]
    if problems:
        raise BadInput(*problems)
    if not runs:
        raise BadInput(f"{folder}: no run reports found")
    return runs, paths


def cmd_trend(args: argparse.Namespace) -> int:
    from reporting.analysis.compare import trend

    for output in (args.output, args.html):
        if output:
            check_output_path(output)
    runs, paths = _runs_in(args.folder)
    for output in (args.output, args.html):
        for path in paths if output else ():
            _refuse_overwriting_input(output, str(path))
    data = trend(runs, suite=args.suite)
    if args.output:
        write_atomic(args.output, dumps(data) + "\n")
    if args.html:
        from reporting.render.html import render_trend_html

        write_atomic(args.html, render_trend_html(data, timestamp=args.timestamp))
    for line in data["warnings"]:
        _err(line)
    _out(f"suite {data['suite']}: {len(data['points'])} run(s)")
    for p in data["points"]:
        ci = p["pass_rate_ci"] or [None, None]
        _out(
            f"  {p['created_at'] or 'undated':22} {p['run_id']:40} pass rate "
            f"{p['pass_rate'] if p['pass_rate'] is None else round(p['pass_rate'], 3)}"
            f" [{ci[0] if ci[0] is None else round(ci[0], 3)}, {ci[1] if ci[1] is None else round(ci[1], 3)}]"
            "  resilience "
            f"{p['resilience_index'] if p['resilience_index'] is None else round(p['resilience_index'], 3)}"
        )
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    run = _load_valid(args.run)
    baseline = _load_valid(args.baseline) if args.baseline else None
    if args.allow_missing < 0:
        raise BadInput("--allow-missing: must be 0 or more")
    if (args.rubric is None) != (args.verdicts is None):
        raise BadInput("--rubric and --verdicts go together")
    if args.max_new_failures is not None and baseline is None:
        raise BadInput("--max-new-failures needs --baseline BASE.json")
    from reporting.report.gates import prepare

    prepared = prepare(run, baseline, trust_run_weights=args.trust_run_weights)
    results = _gates(run, args, baseline, prepared)
    if not results:
        raise BadInput(
            "no gate given: use " + ", ".join(_flag(g.option) for g in GATES) + ", --rubric/--verdicts or --baseline"
        )
    for note in prepared.notes:
        _out("note   " + note)
    for gate in results:
        _out(("holds  " if gate["holds"] else "FAILS  ") + gate["line"])
    failed = [g for g in results if not g["holds"]]
    _out(f"{len(results) - len(failed)} of {len(results)} gate(s) hold")
    return EXIT_FAILED if failed else EXIT_OK


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


def cmd_rubric(args: argparse.Namespace) -> int:
    # A RubricError is an InputError: main prints each problem and exits 2.
    if args.kind == "scorecard":
        from reporting.rubrics import scorecard

        _out(dumps(scorecard(args.rubric, args.verdicts, args.benchmarks)))
        return EXIT_OK
    if args.kind == "dimensions":
        from reporting.rubrics import load_evaluations, parse_weights, score_dimensions

        result = score_dimensions(
            load_evaluations(args.evaluations),
            weights=parse_weights(args.weights),
            safety_gate=args.safety_gate,
            score_cap=args.score_cap,
            z_normalize=args.z_normalize,
            label=args.evaluations,
        )
        for note in result["notes"]:
            _err(note)
        _out(dumps(result))
        return EXIT_OK
    from reporting.analysis.contradiction import check_examples

    results, problems = check_examples(args.path)
    if problems:
        raise BadInput(*problems)
    wrong = [r for r in results if r["correct"] is False]
    for r in results:
        mark = "" if r["correct"] is None else ("  ok" if r["correct"] else "  MISCLASSIFIED")
        _out(
            f"{r['id']}: {'contradiction' if r['result'] else 'no contradiction'} "
            f"(turn 1 {r['turn1_position']}, turn 2 {r['turn2_position']}"
            f"{', acknowledged' if r['acknowledged'] else ''}){mark}"
        )
    checked = [r for r in results if r["correct"] is not None]
    _out(f"{len(checked) - len(wrong)} of {len(checked)} example(s) with an expectedResult classified correctly")
    for r in wrong:
        _err(f"misclassified: {r['file']}: expected {r['expected']}, got {r['result']} ({r['rationale']})")
    return EXIT_FAILED if wrong else EXIT_OK


def dashboard_command(folder: Optional[str], port: int, address: str) -> list[str]:
    """The streamlit command that serves the dashboard script shipped inside the package."""
    from reporting.resources import dashboard_script

    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(dashboard_script()),
        "--server.address",
        address,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]
    return command + (["--", "--runs", os.path.abspath(folder)] if folder else [])


def cmd_dashboard(args: argparse.Namespace) -> int:
    if args.folder is not None and not os.path.isdir(args.folder):
        raise BadInput(f"{args.folder}: not a folder of run reports")
    command = dashboard_command(args.folder, args.port, args.address)
    _err(f"RunLens dashboard on http://{args.address}:{args.port} (Ctrl+C stops it)")
    sys.stderr.flush()
    # The process becomes Streamlit's server: Ctrl+C and a service manager's SIGTERM reach it directly.
    os.execv(command[0], command)
    return EXIT_FAILED  # not reached: execv returns only by raising


def cmd_schema(args: argparse.Namespace) -> int:
    _out(dumps(json_schema()))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reporting",
        description="RunLens: validate LLM safety run reports and recompute every figure from the cases.",
    )
    parser.add_argument("--version", action="version", version=f"runlens {__version__}")
    parser.add_argument(
        "--max-file-mb",
        type=float,
        metavar="MB",
        help="largest input file read, in MB (default 2048, or $RUNLENS_MAX_FILE_MB)",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument(
        "--max-file-mb",
        type=float,
        metavar="MB",
        default=argparse.SUPPRESS,
        help="largest input file read, in MB (default 2048, or $RUNLENS_MAX_FILE_MB)",
    )

    p = verbs.add_parser("validate", parents=[reading], help="check run reports; list every problem (exit 2 if any)")
    p.add_argument(
        "files", nargs="+", metavar="FILE", help="run report(s): JSON object, JSON array of cases, or JSON Lines"
    )
    p.set_defaults(func=cmd_validate)

    p = verbs.add_parser(
        "recompute",
        parents=[reading],
        help="recompute aggregates, observability and drift; write the full report as JSON",
    )
    p.add_argument("run", metavar="RUN.json")
    p.add_argument("-o", "--output", metavar="OUT", help="write here atomically instead of standard output")
    _add_report_options(p)
    p.set_defaults(func=cmd_recompute)

    p = verbs.add_parser("export", parents=[reading], help="write one self-contained, offline HTML report of a run")
    p.add_argument("run", metavar="RUN.json")
    p.add_argument("-o", "--output", metavar="OUT.html", help="default: RUN.report.html next to the input")
    p.add_argument("--title", metavar="TEXT", help="title of the report")
    p.add_argument(
        "--timestamp",
        metavar="WHEN",
        help="the 'generated' time (ISO 8601 or epoch seconds); default $SOURCE_DATE_EPOCH or now",
    )
    _add_report_options(p)
    p.set_defaults(func=cmd_export)

    p = verbs.add_parser("score", help="score model responses to probes (JSON Lines) into a run report")
    p.add_argument("--probes", required=True, metavar="P.jsonl")
    p.add_argument("--responses", required=True, metavar="R.jsonl")
    p.add_argument("-o", "--output", required=True, metavar="RUN.json")
    p.add_argument("--run-id", metavar="ID")
    p.add_argument("--model", metavar="NAME")
    p.add_argument("--suite", metavar="NAME")
    p.add_argument("--patterns", metavar="FILE.yaml", help="add to or override the built-in pattern set")
    p.set_defaults(func=cmd_score)

    p = verbs.add_parser("import", help="import an external benchmark's results as a scored run")
    p.add_argument("source", choices=["jailbreakbench"])
    p.add_argument("file", metavar="FILE.json")
    p.add_argument("-o", "--output", required=True, metavar="RUN.json")
    p.add_argument("--patterns", metavar="FILE.yaml", help="add to or override the built-in pattern set")
    p.set_defaults(func=cmd_import)

    p = verbs.add_parser(
        "compare", parents=[reading], help="paired comparison of two runs: McNemar, intervals, newly failing probes"
    )
    p.add_argument("base", metavar="BASE.json")
    p.add_argument("candidate", metavar="CANDIDATE.json")
    p.add_argument("-o", "--output", metavar="OUT.json", help="write the comparison here (default: standard output)")
    p.add_argument("--html", metavar="OUT.html", help="also write a self-contained HTML comparison")
    p.add_argument(
        "--timestamp", metavar="WHEN", help="the 'generated' time of the HTML (default $SOURCE_DATE_EPOCH or now)"
    )
    p.set_defaults(func=cmd_compare)

    p = verbs.add_parser(
        "trend", parents=[reading], help="a suite's headline figures over the runs in a folder, with intervals"
    )
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--suite", help="which suite (default: the one with most runs)")
    p.add_argument("-o", "--output", metavar="OUT.json")
    p.add_argument("--html", metavar="OUT.html")
    p.add_argument("--timestamp", metavar="WHEN")
    p.set_defaults(func=cmd_trend)

    p = verbs.add_parser(
        "check", parents=[reading], help="CI gates: exit 0 when all hold, 1 when any fails, 2 on bad input"
    )
    p.add_argument("run", metavar="RUN.json")
    for gate in GATES:
        p.add_argument(
            _flag(gate.option),
            type=int if gate.fmt == "d" else float,
            metavar="N" if gate.fmt == "d" else "X",
            help=gate.help,
        )
    p.add_argument("--rubric", metavar="RUBRIC.yaml", help="with --verdicts: the rubric scorecard must pass")
    p.add_argument("--verdicts", metavar="V.jsonl")
    p.add_argument("--baseline", metavar="BASE.json", help="fail on a significant regression against this run")
    p.add_argument("--max-new-failures", type=int, metavar="N", help="with --baseline: newly failing probes allowed")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of McNemar's test (default 0.05)")
    p.add_argument(
        "--allow-missing",
        type=int,
        default=0,
        metavar="N",
        help="with --baseline: baseline probes the candidate may lack (default 0: every one missing fails)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail when a verdict contradicts its own risk (passed at risk >= 0.9, failed at risk <= 0.1)",
    )
    p.add_argument(
        "--trust-run-weights",
        action="store_true",
        help="use per-case severity weights below the tier's default as the run gives them",
    )
    p.set_defaults(func=cmd_check)

    p = verbs.add_parser("rubric", help="rubric scorecards, dimension scores and the self-contradiction rubric")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    k = kinds.add_parser("scorecard", help="score a rubric from judge verdicts (hard and threshold gates)")
    k.add_argument("rubric", metavar="RUBRIC.yaml")
    k.add_argument("verdicts", metavar="VERDICTS.jsonl")
    k.add_argument("--benchmarks", metavar="DEFS.yaml", help="definitions of benchmarks the rubric names by code")
    k.set_defaults(func=cmd_rubric)
    k = kinds.add_parser("dimensions", help="multi-dimensional judge scores with the accuracy ceiling")
    k.add_argument("evaluations", metavar="EVALS.json")
    k.add_argument("--safety-gate", action="store_true", help="cap responses that match a safety-gate pattern")
    k.add_argument(
        "--score-cap", type=float, default=0.0, help="score of a response that fails the safety gate (default 0)"
    )
    k.add_argument("--weights", metavar="W", help="accuracy=0.35,relevance=0.1,... or a YAML/JSON file; must sum to 1")
    k.add_argument(
        "--z-normalize", action="store_true", help="standardise each reviewer's overall scores before averaging"
    )
    k.set_defaults(func=cmd_rubric)
    k = kinds.add_parser("contradiction", help="run the self-contradiction rubric on an example file or folder")
    k.add_argument("path", metavar="PATH")
    k.set_defaults(func=cmd_rubric)

    p = verbs.add_parser("dashboard", help="start the dashboard (Streamlit) on the runs of a folder")
    p.add_argument("folder", nargs="?", metavar="DIR", help="folder of run reports (default: the sample runs)")
    p.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    p.add_argument("--address", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.set_defaults(func=cmd_dashboard)

    p = verbs.add_parser("schema", help="print the JSON Schema of the run-report format")
    p.set_defaults(func=cmd_schema)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    if getattr(args, "max_file_mb", None) is not None:
        if args.max_file_mb <= 0:
            _err("--max-file-mb: must be more than 0")
            return EXIT_BAD_INPUT
        files.MAX_FILE_BYTES = int(args.max_file_mb * 1024 * 1024)
    try:
        return func(args)
    except BadInput as exc:
        for line in exc.args:
            _err(str(line))
        return EXIT_BAD_INPUT
    except InputError as exc:  # a rubric, pattern or YAML file: every problem, one line each
        for line in exc.lines:
            _err(line)
        return EXIT_BAD_INPUT
    except OutputError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_FAILED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # one line, never a traceback
        _err(f"internal error: {type(exc).__name__}: {exc}")
        return EXIT_FAILED
