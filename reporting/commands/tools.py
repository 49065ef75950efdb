"""Verbs around the reports: score, import, rubric, dashboard."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Optional

from reporting.commands import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    BadInput,
    _err,
    _load_valid,
    _out,
)
from reporting.commands.outputs import check_report_output, write_report, written_by_runlens
from reporting.format.writing import dumps
from reporting.textsafe import json_text, one_line, shown


def _patterns(args: argparse.Namespace):
    from reporting.scoring.scorer import load_patterns

    return load_patterns(args.patterns)  # a PatternError is an InputError: main prints each problem, exit 2


JUDGE_KEY_ENV = "RUNLENS_JUDGE_API_KEY"


def add_judge_options(p: argparse.ArgumentParser) -> None:
    """The options of a model judge on an OpenAI-compatible endpoint (docs/model-judges.md)."""
    from reporting.scoring.judge_formats import FORMATS

    g = p.add_argument_group("model judge on your own server (docs/model-judges.md)")
    g.add_argument("--judge", metavar="URL", help="an OpenAI-compatible endpoint (http(s)://HOST:PORT/v1)")
    g.add_argument("--judge-model", metavar="NAME", help="the judge model's name on that endpoint")
    g.add_argument("--judge-format", choices=FORMATS, help="the judge's prompt and verdict format")
    g.add_argument("--judge-name", metavar="NAME", help="its name among the run's judges (default FORMAT:MODEL)")
    g.add_argument(
        "--judge-key-env",
        metavar="VAR",
        help=f"the environment variable holding the API key, sent as a bearer header (default {JUDGE_KEY_ENV}, "
        "if set); the key is never written anywhere",
    )
    g.add_argument("--judge-concurrency", type=int, default=4, metavar="N", help="calls at a time (default 4)")
    g.add_argument("--judge-timeout", type=float, default=60.0, metavar="S", help="per call, seconds (default 60)")
    g.add_argument("--judge-retries", type=int, default=4, metavar="N", help="on 429, 5xx, timeouts (default 4)")
    g.add_argument(
        "--judge-cache",
        metavar="PATH",
        help="the answers' cache (SQLite; default $XDG_CACHE_HOME/runlens/judge-cache.sqlite3 or ~/.cache/runlens/)",
    )


def _judge_setup(args: argparse.Namespace):
    """(endpoint, cache) from the --judge options, or None without --judge; BadInput for a bad option."""
    from reporting.scoring.endpoint import Endpoint, EndpointError, parse_endpoint
    from reporting.scoring.judge_cache import CacheError, JudgeCache, default_cache_path

    given = [f"--{k.replace('_', '-')}" for k in ("judge_model", "judge_format", "judge_name", "judge_key_env")]
    if args.judge is None:
        used = [name for name in given if getattr(args, name[2:].replace("-", "_")) is not None]
        if used or args.judge_cache is not None:
            raise BadInput(f"{', '.join(used) or '--judge-cache'}: only with --judge URL")
        return None
    if not args.judge_model or not args.judge_format:
        raise BadInput("--judge needs --judge-model NAME and --judge-format FORMAT")
    if not 1 <= args.judge_concurrency <= 64 or not 0 <= args.judge_retries <= 20 or not 0 < args.judge_timeout <= 3600:
        raise BadInput("--judge-concurrency must be 1 to 64, --judge-retries 0 to 20, --judge-timeout 0 to 3600 s")
    try:
        url, shown_host = parse_endpoint(args.judge)
    except EndpointError as exc:
        raise BadInput(str(exc)) from None
    key_env = args.judge_key_env or JUDGE_KEY_ENV
    key = os.environ.get(key_env) or None
    if args.judge_key_env is not None and key is None:
        raise BadInput(f"--judge-key-env: the environment variable {shown(key_env)} is not set or empty")
    endpoint = Endpoint(
        url, shown_host, args.judge_model, args.judge_format, key, args.judge_timeout, args.judge_retries
    )
    try:
        cache = JudgeCache(args.judge_cache or default_cache_path())
    except CacheError as exc:
        raise BadInput(str(exc)) from None
    return endpoint, cache


def _run_judge(args: argparse.Namespace, setup, cases: list, config: dict) -> tuple[dict, int]:
    """The model judge's verdicts added to ``cases`` (in place); the config with its record, and the exit code:
    1 when the endpoint failed for some case (the output is written all the same; a rerun asks only for those)."""
    from reporting.scoring.judge_cache import CacheError
    from reporting.scoring.model_judges import add_model_judge, default_name, judge_record, record_judge, summary

    endpoint, cache = setup
    name = args.judge_name or default_name(endpoint)
    try:
        stats = add_model_judge(cases, endpoint, cache, args.judge_concurrency, name)
    except CacheError as exc:
        raise BadInput(str(exc)) from None
    finally:
        cache.close()
    record = judge_record(endpoint, name, stats, args.judge_concurrency)
    _err(summary(record))
    if stats.failed:
        first = one_line(stats.first_failure or "no answer")
        _err(
            f"the endpoint failed for {stats.failed} case(s) (first: {first}); the output is written with them not "
            "judged; the same command again asks only for those (the answers received are cached)"
        )
    return record_judge(config, record), EXIT_FAILED if stats.failed else EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from reporting.scoring.runs import pair_inputs, report_from_cases, score_cases, scoring_meta

    patterns = _patterns(args)
    if args.run is not None:
        return _score_run_as_judge(args, patterns)
    if args.probes is None or args.responses is None:
        raise BadInput("score needs --probes P.jsonl and --responses R.jsonl, or --run RUN to add RunLens's judge")
    check_report_output(args.output, args.probes, args.responses)
    judge = _judge_setup(args)
    pairs, problems = pair_inputs(args.probes, args.responses)
    if problems:
        for problem in problems:
            _err(one_line(problem))
        _err(f"scored nothing: {len(problems)} problem(s) in the inputs; {len(pairs)} probe(s) had a usable response")
        return EXIT_BAD_INPUT
    meta = scoring_meta(
        args.run_id or os.path.splitext(os.path.basename(args.output))[0],
        args.model or "unknown",
        args.suite or os.path.basename(args.probes),
        patterns=args.patterns,
    )
    cases = score_cases(pairs, patterns)
    # both RunLens judges recorded beside the case's own verdict (unless the scoring already recorded them)
    if (args.learned or judge) and not all(case.get("verdicts") for case in cases):
        from reporting.scoring.learned import provenance
        from reporting.scoring.runs import runlens_verdicts

        requests = [str(probe.get("task") or probe.get("input") or "") for probe, _ in pairs]
        for case, verdicts in zip(cases, runlens_verdicts(cases, requests, patterns)):
            case["verdicts"] = verdicts
        meta["config"]["judge"] = provenance()
    code = EXIT_OK
    if judge:
        meta["config"], code = _run_judge(args, judge, cases, meta["config"])
    report = report_from_cases(cases, meta, schema_version=2 if args.learned or judge else 1)
    write_report(args.output, dumps(written_by_runlens(report)) + "\n")
    counts = report["aggregate_metrics"]["counts"]
    _err(
        f"wrote {shown(args.output)}: {counts['probes_evaluated']} case(s) scored, {counts['passed']} passed, "
        f"{counts['failed']} failed"
    )
    return code


def _score_run_as_judge(args: argparse.Namespace, patterns) -> int:
    """RunLens's two judges (rules and learned) added to a run (any format it reads), written to -o."""
    from reporting.scoring.learned import NAME as LEARNED
    from reporting.scoring.runs import RUNLENS_JUDGE, add_rules_judge

    check_report_output(args.output, args.run)
    judge = _judge_setup(args)
    run = _load_valid(args.run)
    document = add_rules_judge(run, patterns)
    code = EXIT_OK
    if judge:
        document["run"]["config"], code = _run_judge(args, judge, document["cases"], document["run"]["config"])
    write_report(args.output, dumps(written_by_runlens(document)) + "\n")
    judged = sum(1 for c in document["cases"] if RUNLENS_JUDGE in (c.get("verdicts") or {}))
    _err(
        f"wrote {shown(args.output)}: {RUNLENS_JUDGE} and {LEARNED} judged {judged} of {len(document['cases'])} case(s)"
    )
    return code


def cmd_rubric(args: argparse.Namespace) -> int:
    # A RubricError is an InputError: main prints each problem and exits 2.
    if args.kind == "scorecard":
        from reporting.rubrics import scorecard

        _out(json_text(dumps(scorecard(args.rubric, args.verdicts, args.benchmarks))))
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
            _err(one_line(note))
        _out(json_text(dumps(result)))
        return EXIT_OK
    from reporting.analysis.contradiction import check_examples

    results, problems = check_examples(args.path)
    if problems:
        raise BadInput(*problems)
    wrong = [r for r in results if r["correct"] is False]
    for r in results:
        mark = "" if r["correct"] is None else ("  ok" if r["correct"] else "  MISCLASSIFIED")
        _out(
            f"{shown(r['id'])}: {'contradiction' if r['result'] else 'no contradiction'} "
            f"(turn 1 {shown(r['turn1_position'])}, turn 2 {shown(r['turn2_position'])}"
            f"{', acknowledged' if r['acknowledged'] else ''}){mark}"
        )
    checked = [r for r in results if r["correct"] is not None]
    _out(f"{len(checked) - len(wrong)} of {len(checked)} example(s) with an expectedResult classified correctly")
    for r in wrong:
        _err(
            f"misclassified: {shown(r['file'])}: expected {shown(r['expected'])}, got {shown(r['result'])} "
            f"({shown(r['rationale'])})"
        )
    return EXIT_FAILED if wrong else EXIT_OK


def has_desktop(environ: Optional[Mapping[str, str]] = None, platform: Optional[str] = None) -> bool:
    """A browser can be opened here: macOS or Windows, or a Linux/BSD session with a display (X11 or Wayland).
    A server, a container or CI has none: there the dashboard only prints its address."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if platform == "darwin" or platform.startswith("win"):
        return True
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def dashboard_command(
    folder: Optional[str],
    port: int,
    address: str,
    open_browser: Optional[bool] = None,
    store: Optional[str] = None,
    options: Sequence[str] = (),
    app_args: Sequence[str] = (),
) -> list[str]:
    """The streamlit command that serves the dashboard script shipped inside the package; it opens a browser
    where there is a desktop (``open_browser`` None), always (True) or never (False). ``options``: more of
    Streamlit's (the sign-in's secrets file); ``app_args``: the app's own (``commands/dashboard_auth.py``)."""
    from reporting.resources import dashboard_script

    headless = not (has_desktop() if open_browser is None else open_browser)

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
        "true" if headless else "false",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",  # no "Deploy" button: RunLens is not deployed that way
        *options,
    ]
    extra = (
        (["--runs", os.path.abspath(folder)] if folder else [])
        + (["--store", os.path.abspath(store)] if store else [])
        + list(app_args)
    )
    return command + (["--", *extra] if extra else [])


def cmd_dashboard(args: argparse.Namespace) -> int:
    if args.folder is not None and not os.path.isdir(args.folder):
        raise BadInput(f"{args.folder}: not a folder of run reports")
    if args.store is not None and not os.path.isfile(os.path.join(args.store, "store.json")):
        raise BadInput(f"{args.store}: not a RunLens run store (no store.json; make one with `store add`)")
    from reporting.commands.dashboard_auth import prepare, run_and_clean
    from reporting.commands.dashboard_settings import resolve_server

    args.port, args.address = resolve_server(args.port, args.address)  # flags, environment, config, defaults
    if getattr(args, "judge_cards", None) is not None:  # checked here (exit 2 with its problems); the app reads it
        from reporting.commands.reports import _judge_cards
        from reporting.report.cards import ENVIRONMENT

        _judge_cards(args)
        os.environ[ENVIRONMENT] = os.path.abspath(args.judge_cards)
    launch = prepare(args)  # --auth checked and the provider reached, or a non-loopback address refused: exit 2
    browser = False if args.no_browser else None
    command = dashboard_command(
        args.folder, args.port, args.address, browser, args.store, launch.options, launch.app_args
    )
    signin = f", sign-in through {shown(launch.issuer)}" if launch.issuer else ""
    _err(f"RunLens dashboard on http://{shown(args.address)}:{args.port}{signin} (Ctrl+C stops it)")
    sys.stderr.flush()
    if launch.folder is not None:  # the private folder of the sign-in's secrets lives as long as the server
        return run_and_clean(command, launch.folder)
    # The process becomes Streamlit's server: Ctrl+C and a service manager's SIGTERM reach it directly.
    os.execv(command[0], command)
    return EXIT_FAILED  # not reached: execv returns only by raising
