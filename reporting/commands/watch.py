"""``runlens watch FILE``: a run still being written (a garak report.jsonl, a RunLens JSON Lines run), its figures
printed as they change: progress, the pass rate with its interval, the newest failures. The file is polled by size
and modification time and only its new bytes are read (``reporting.format.growing``). Ends on Ctrl-C, when garak's
``completion`` line is read, or when the file has not grown for ``--idle`` seconds; ``--once`` prints once."""

from __future__ import annotations

import argparse
import os
import stat
import time
from collections.abc import Mapping
from typing import Any

from reporting.commands import EXIT_OK, BadInput, _out
from reporting.textsafe import shown

RESPONSE_CHARS = 80


def add_watch_parser(verbs: Any) -> None:
    p = verbs.add_parser(
        "watch",
        help="a run still being written (garak report.jsonl, RunLens JSON Lines): its figures as they change "
        "(docs/live.md)",
    )
    p.add_argument("file", metavar="FILE", help="the growing file")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS", help="how often to look (default 1)")
    p.add_argument(
        "--idle",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="the file has stopped growing after this long unchanged: print the last figures and end (default 60)",
    )
    p.add_argument("--once", action="store_true", help="print the figures once and end")
    p.set_defaults(func=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    from reporting.analysis.live import LiveTally
    from reporting.sources.growing import GrowingRun

    if args.interval <= 0 or args.idle <= 0:
        raise BadInput("--interval and --idle: must be more than 0 seconds")
    name = shown(args.file)
    try:
        info = os.stat(args.file)
    except OSError as exc:
        raise BadInput(f"{name}: $: cannot be read: {exc.strerror or type(exc).__name__}") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{name}: $: not a regular file (a folder, FIFO, device or socket)")
    growing = GrowingRun(args.file, idle_seconds=args.idle)
    tally = LiveTally()  # each case counted once as the file grows
    try:
        while True:
            changed = _refresh(growing, name)
            live = growing.snapshot()
            if live is None:
                if growing.size > 0 and growing.lines > 0:
                    raise BadInput(
                        f"{name}: $: not a RunLens JSON Lines run or a garak report.jsonl: read it whole "
                        "(validate, recompute)"
                    )
                if args.once or growing.stopped():
                    raise BadInput(f"{name}: $: the file holds no complete line yet")
                time.sleep(args.interval)
                continue
            figures = tally.figures(live.run.cases, live.stable, live.settled)
            if changed or args.once or not live.growing:
                _out(figures_text(live, name, figures))
            if args.once or not live.growing:
                return EXIT_OK
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return EXIT_OK


def _refresh(growing: Any, name: str) -> bool:
    from reporting.format.problems import FileTooLarge

    try:
        return bool(growing.refresh())
    except OSError as exc:
        raise BadInput(f"{name}: $: cannot be read: {exc.strerror or type(exc).__name__}") from None
    except FileTooLarge as exc:
        raise BadInput(f"{name}: $: {exc}") from None


def figures_text(live: Any, name: str, figures: Mapping[str, Any]) -> str:
    """The figures of a growing run as printed: every value from the file through ``shown`` (one line, escaped)."""
    from reporting.analysis.live import progress_line, rate_text

    now = time.time()
    lines = [
        f"{name}: {progress_line(live.kind, live.attempts, figures['cases'], live.last_growth, now, live.growing)}",
        f"  cases {figures['cases']:,}: {figures['evaluated']:,} evaluated ({figures['passed']:,} passed, "
        f"{figures['failed']:,} failed), {figures['errors']:,} not evaluated",
        f"  pass rate {rate_text(figures['pass_rate'], figures['pass_rate_ci'])}",
    ]
    recent = [s for s in figures["series"] if s["pass_rate"] is not None][-3:]
    if len(recent) > 1:
        lines.append(
            "  per 100 cases, newest last: "
            + ", ".join(f"{s['first']:,}-{s['last']:,}: {s['pass_rate']:.0%}" for s in recent)
        )
    if figures["newest_failures"]:
        lines.append("  newest failures:")
        for failure in figures["newest_failures"]:
            response = failure["response"] or ""
            head = response[:RESPONSE_CHARS] + ("..." if len(response) > RESPONSE_CHARS else "")
            lines.append(
                f"    {shown(failure['probe_id'])} | {shown(failure['category'])} | {shown(failure['severity'])} "
                f"| {shown(head)}"
            )
    if live.problems:
        lines.append(f"  problems: {len(live.problems):,}; first: {shown(live.problems[0])}")
    if live.held_back and live.growing:
        lines.append(f"  ({live.held_back:,} byte(s) of a line not ended yet: waited for)")
    return "\n".join(lines) + "\n"
