"""Command line: ``python -m reporting VERB ...`` (or ``runlens VERB``): argparse, printing and exit codes.

The verbs themselves are in ``reporting.commands``. Exit 0 on success, 2 on bad input, 1 on an internal error."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Optional

from reporting._memory import use_system_pool
from reporting._version import __version__
from reporting.commands import DEFAULT_MIN_CASES, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, GATES, BadInput, _err
from reporting.commands.dashboard_auth import add_dashboard_auth_options
from reporting.commands.frameworks import add_frameworks_options
from reporting.commands.import_verb import add_import_parser, cmd_import
from reporting.commands.judge_eval import add_judge_eval_parser
from reporting.commands.reports import (
    _flag,
    cmd_check,
    cmd_compare,
    cmd_export,
    cmd_recompute,
    cmd_schema,
    cmd_trend,
    cmd_validate,
)
from reporting.commands.review import add_review_options, add_review_parser
from reporting.commands.store import cmd_store
from reporting.commands.tools import add_judge_options, cmd_dashboard, cmd_rubric, cmd_score
from reporting.commands.watch import add_watch_parser
from reporting.format import problems as files
from reporting.format.problems import InputError
from reporting.format.severity import SEVERITIES
from reporting.format.writing import OutputError
from reporting.textsafe import one_line


def _add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-cases", type=int, default=DEFAULT_MIN_CASES, help="observability needs this many cases (default 5)"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed of the embedding and clustering (default 0)")
    p.add_argument(
        "--embedding",
        choices=("content", "with-labels"),
        default="content",
        help="text embedded for observability: 'content' (default) embeds only what the cases say; 'with-labels' "
        "puts category/severity/outcome tokens in front (the design's embedding: clusters then follow those "
        "labels partly by construction)",
    )
    p.add_argument("--rubric", metavar="RUBRIC.yaml", help="default: RUN.rubric.yaml next to the run, if present")
    p.add_argument("--verdicts", metavar="V.jsonl", help="default: RUN.verdicts.jsonl next to the run, if present")
    p.add_argument("--benchmarks", metavar="DEFS.yaml", help="default: RUN.benchmarks.yaml next to the run, if present")
    p.add_argument(
        "--dimensions", metavar="EVALS.json", help="default: RUN.dimensions.json next to the run, if present"
    )
    _add_filter_options(p)
    add_frameworks_options(p)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reporting",
        description="RunLens: validate LLM safety run reports and recompute every figure from the cases.",
    )
    parser.add_argument("--version", action="version", version=f"runlens {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="on an internal error, print the traceback (for a bug report)"
    )
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
    reading.add_argument(
        "--model",
        metavar="NAME",
        help="the run of this model, in a file that holds several (a promptfoo file with several providers)",
    )
    reading.add_argument(
        "--severity-map",
        metavar="MAP.yaml",
        help="your tiers for a source's categories or probes ({categories: {NAME: TIER}, probes: {ID: TIER}}), "
        "overriding any default mapping (docs/importers.md)",
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
    p.add_argument("run", metavar="RUN.json", help="the run report: JSON object, JSON array of cases, or JSON Lines")
    p.add_argument("-o", "--output", metavar="OUT", help="write here atomically instead of standard output")
    p.add_argument(
        "--format",
        choices=("json", "parquet"),
        default="json",
        help="parquet: the case table as OUT.parquet beside the figures in OUT (JSON, without the cases); every "
        "verb reads the Parquet file back as the run",
    )
    _add_report_options(p)
    add_review_options(p)
    p.set_defaults(func=cmd_recompute)

    p = verbs.add_parser("export", parents=[reading], help="write one self-contained, offline HTML report of a run")
    p.add_argument("run", metavar="RUN.json", help="the run report to export")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT.html",
        help="default: RUN.report.html next to the input (with --pdf alone, no HTML is written)",
    )
    p.add_argument(
        "--pdf",
        metavar="OUT.pdf",
        help="also print the handout to this PDF with headless Chromium (every case id, whole charts)",
    )
    p.add_argument(
        "--paper", choices=("a4", "letter"), default="a4", help="paper size of the PDF: a4 (default) or letter"
    )
    p.add_argument("--title", metavar="TEXT", help="title of the report")
    p.add_argument(
        "--timestamp",
        metavar="WHEN",
        help="the 'generated' time (ISO 8601 or epoch seconds); default $SOURCE_DATE_EPOCH or now",
    )
    _add_report_options(p)
    add_review_options(p)
    p.add_argument("--judge-cards", metavar="CARDS.json", help="judge cards to show beside the built-in ones")
    p.add_argument("--baseline", metavar="BASE.json", help="say on the first screen what changed against this run")
    p.set_defaults(func=cmd_export, first_screen_baseline=True)

    p = verbs.add_parser(
        "score",
        help="score model responses to probes (JSON Lines) into a run report, or add RunLens's verdict to a run",
    )
    p.add_argument(
        "--run",
        metavar="RUN",
        help="a run in any format RunLens reads (garak, promptfoo, Inspect...): add RunLens's rule-based verdict "
        "to each case as two more judges (runlens-rules, runlens-learned); the run's own verdict stays primary",
    )
    p.add_argument(
        "--probes",
        metavar="P.jsonl",
        help="the probes, one JSON object a line (id, category, severity, task, input)",
    )
    p.add_argument("--responses", metavar="R.jsonl", help="the responses, one a line (probe_id, response)")
    p.add_argument("-o", "--output", required=True, metavar="RUN.json", help="the scored run report to write")
    p.add_argument("--run-id", metavar="ID", help="the run id (default: the output file name)")
    p.add_argument("--model", metavar="NAME", help="the model under test (default: unknown)")
    p.add_argument("--suite", metavar="NAME", help="the probe suite (default: the probes file name)")
    p.add_argument("--patterns", metavar="FILE.yaml", help="add to or override the built-in pattern set")
    learned = "also record both built-in judges' verdicts per case (runlens-learned, primary; runlens-rules)"
    p.add_argument("--learned", action="store_true", help=learned)
    add_judge_options(p)  # --judge URL --judge-model --judge-format ... (docs/model-judges.md)
    p.set_defaults(func=cmd_score)

    add_import_parser(verbs)

    p = verbs.add_parser(
        "compare", parents=[reading], help="paired comparison of two runs: McNemar, intervals, newly failing probes"
    )
    p.add_argument("base", metavar="BASE.json", help="the run compared against")
    p.add_argument("candidate", metavar="CANDIDATE.json", help="the run compared, probe by probe")
    p.add_argument("-o", "--output", metavar="OUT.json", help="write the comparison here (default: standard output)")
    p.add_argument("--html", metavar="OUT.html", help="also write a self-contained HTML comparison")
    p.add_argument(
        "--pair-on",
        choices=("probe_id", "task", "input"),
        default="probe_id",
        help="pair probes by id (default) or by the text of their task or input, e.g. the same model tested by "
        "garak and by promptfoo; repetitions of a text become one probe, failed when any repetition failed",
    )
    p.add_argument(
        "--timestamp", metavar="WHEN", help="the 'generated' time of the HTML (default $SOURCE_DATE_EPOCH or now)"
    )
    p.set_defaults(func=cmd_compare)

    p = verbs.add_parser(
        "trend", parents=[reading], help="a suite's headline figures over the runs in a folder, with intervals"
    )
    p.add_argument("folder", metavar="DIR", help="a folder of run reports")
    p.add_argument("--suite", help="which suite (default: the one with most runs)")
    p.add_argument("-o", "--output", metavar="OUT.json", help="write the trend as JSON")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML trend report")
    p.add_argument(
        "--timestamp", metavar="WHEN", help="the 'generated' time of the HTML (default $SOURCE_DATE_EPOCH or now)"
    )
    p.set_defaults(func=cmd_trend)

    p = verbs.add_parser(
        "check", parents=[reading], help="CI gates: exit 0 when all hold, 1 when any fails, 2 on bad input"
    )
    p.add_argument("run", metavar="RUN.json", help="the run the gates judge")
    for gate in GATES:
        p.add_argument(
            _flag(gate.option),
            type=int if gate.fmt == "d" else float,
            metavar="N" if gate.fmt == "d" else "X",
            help=gate.help,
        )
    p.add_argument("--rubric", metavar="RUBRIC.yaml", help="with --verdicts: the rubric scorecard must pass")
    p.add_argument("--verdicts", metavar="V.jsonl", help="with --rubric: the judge verdicts it scores")
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
    add_review_options(p)
    p.set_defaults(func=cmd_check)
    add_frameworks_options(p, require=True)
    add_review_parser(verbs, reading)
    add_judge_eval_parser(verbs, reading)
    add_watch_parser(verbs)

    p = verbs.add_parser("rubric", help="rubric scorecards, dimension scores and the self-contradiction rubric")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    k = kinds.add_parser("scorecard", help="score a rubric from judge verdicts (hard and threshold gates)")
    k.add_argument("rubric", metavar="RUBRIC.yaml", help="the rubric definition")
    k.add_argument("verdicts", metavar="VERDICTS.jsonl", help="judge verdicts, one a line")
    k.add_argument("--benchmarks", metavar="DEFS.yaml", help="definitions of benchmarks the rubric names by code")
    k.set_defaults(func=cmd_rubric)
    k = kinds.add_parser("dimensions", help="multi-dimensional judge scores with the accuracy ceiling")
    k.add_argument("evaluations", metavar="EVALS.json", help="dimension scores of responses by reviewers")
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
    k.add_argument("path", metavar="PATH", help="an example file or a folder of them")
    k.set_defaults(func=cmd_rubric)

    p = verbs.add_parser(
        "store", help="a run store: every run of every model as Parquet, read by DuckDB or Spark (docs/scale.md)"
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    k = actions.add_parser("add", parents=[reading], help="add runs to a store (the same run twice: nothing written)")
    k.add_argument("runs", nargs="+", metavar="RUN", help="run reports, of any format RunLens reads")
    k.add_argument("--store", required=True, metavar="DIR", help="the store (created when missing or empty)")
    k.set_defaults(func=cmd_store)
    for action, helptext in (
        ("trend", "a suite's figures over time, one line per model, with intervals"),
        ("compare", "the newest run of every model on a suite: headline figures and pass rates per category"),
        ("standing", "where each run of a suite stands among the store's runs of it: rank with its range"),
    ):
        k = actions.add_parser(action, help=helptext)
        k.add_argument("--store", required=True, metavar="DIR", help="the store")
        k.add_argument("--suite", help="which suite (default: the one with most runs)")
        k.add_argument(
            "--engine",
            choices=("duckdb", "spark"),
            default="duckdb",
            help="duckdb (default: in-process) or spark (local mode, or the cluster of spark-submit)",
        )
        k.add_argument("-o", "--output", metavar="OUT.json", help="write the result as JSON")
        if action == "trend":
            k.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML trend report")
        k.set_defaults(func=cmd_store)

    p = verbs.add_parser("dashboard", help="start the dashboard (Streamlit) on the runs of a folder")
    p.add_argument("folder", nargs="?", metavar="DIR", help="folder of run reports (default: the sample runs)")
    p.add_argument("--port", type=int, help="port (default: $STREAMLIT_SERVER_PORT, Streamlit's config, else 8501)")
    p.add_argument("--address", help="address to bind (default: as --port, else 127.0.0.1: this machine only)")
    p.add_argument("--store", metavar="DIR", help="a run store (store add) for the Fleet page")
    p.add_argument("--judge-cards", metavar="CARDS.json", help="judge cards to show beside the built-in ones")
    p.add_argument(
        "--no-browser",
        action="store_true",
        help="do not open a browser (by default one opens where there is a desktop: macOS, Windows, or a display)",
    )
    p.set_defaults(func=cmd_dashboard)
    add_frameworks_options(p, dashboard=True)
    add_dashboard_auth_options(p)

    p = verbs.add_parser("schema", help="print the JSON Schema of the run-report format")
    p.set_defaults(func=cmd_schema)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    use_system_pool()
    func: Callable[[argparse.Namespace], int] = args.func
    if getattr(args, "max_file_mb", None) is not None:
        if args.max_file_mb <= 0:
            _err("--max-file-mb: must be more than 0")
            return EXIT_BAD_INPUT
        files.MAX_FILE_BYTES = int(args.max_file_mb * 1024 * 1024)
    import reporting.commands as commands

    commands.SEVERITY_MAP = None
    commands.MODEL = getattr(args, "model", None) if getattr(args, "func", None) is not cmd_import else None
    try:
        if getattr(args, "severity_map", None):
            from reporting.format.severity_map import load_severity_map

            commands.SEVERITY_MAP = load_severity_map(args.severity_map)
        return func(args)
    except (BadInput, InputError, OutputError) as exc:  # every problem, one line each (a data newline escaped)
        lines = exc.lines if isinstance(exc, InputError) else exc.args if isinstance(exc, BadInput) else [exc]
        for line in lines:
            _err(one_line(line))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_FAILED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # one line, never a traceback, unless the user asks for one
        _err(f"internal error: {type(exc).__name__}: {one_line(exc)}")
        if args.debug:
            import traceback

            sys.stderr.write(traceback.format_exc())
        else:
            _err("(run again with --debug for the traceback)")
        return EXIT_FAILED
