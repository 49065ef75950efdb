"""Command line: ``python -m reporting VERB ...``. Exit 0 on success, 2 on bad input, 1 on an internal error."""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Optional, Sequence

from . import __version__
from .jsonio import dumps, write_atomic
from .loader import load_run
from .observability import DEFAULT_MIN_CASES
from .report import build_report
from .schema import json_schema

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """Raised by a verb for input problems; each argument is one message line."""


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")


def cmd_validate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for path in args.files:
        result = load_run(path)
        if result.ok:
            _out(f"{path}: ok, {len(result.run.cases)} case(s), schema version {result.run.schema_version}")
            continue
        status = EXIT_BAD_INPUT
        for problem in result.problems:
            _err(str(problem))
        kept = len(result.run.cases) if result.run is not None else 0
        _err(f"{path}: invalid: {len(result.problems)} problem(s); {kept} of {result.cases_in_file} case(s) are valid")
    return status


def cmd_recompute(args: argparse.Namespace) -> int:
    result = load_run(args.run)
    if not result.ok:
        raise BadInput(*[str(p) for p in result.problems])
    report = build_report(result.run, min_cases=args.min_cases, seed=args.seed)
    text = dumps(report)
    if args.output:
        if args.output == args.run:
            raise BadInput(f"{args.output}: refusing to overwrite the input report; choose another -o path")
        write_atomic(args.output, text + "\n")
        _err(f"wrote {args.output}: {len(report['cases'])} case(s), {len(report['drift'])} drift finding(s)")
    else:
        _out(text)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    _out(dumps(json_schema()))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reporting",
        description="RunLens: validate LLM safety run reports and recompute every figure from the cases.",
    )
    parser.add_argument("--version", action="version", version=f"runlens {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    p = verbs.add_parser("validate", help="check run reports; list every problem (exit 2 if any)")
    p.add_argument("files", nargs="+", metavar="FILE", help="run report(s): JSON object, JSON array of cases, or JSON Lines")
    p.set_defaults(func=cmd_validate)

    p = verbs.add_parser("recompute", help="recompute aggregates, observability and drift; write the full report as JSON")
    p.add_argument("run", metavar="RUN.json")
    p.add_argument("-o", "--output", metavar="OUT", help="write here atomically instead of standard output")
    p.add_argument("--min-cases", type=int, default=DEFAULT_MIN_CASES, help="observability needs this many cases (default 5)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the embedding and clustering (default 0)")
    p.set_defaults(func=cmd_recompute)

    p = verbs.add_parser("schema", help="print the JSON Schema of the run-report format")
    p.set_defaults(func=cmd_schema)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except BadInput as exc:
        for line in exc.args:
            _err(str(line))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_FAILED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # one line, never a traceback
        _err(f"internal error: {type(exc).__name__}: {exc}")
        return EXIT_FAILED
