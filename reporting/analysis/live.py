"""The figures of a run still being written (``reporting.format.growing``): progress, the pass rate with its
interval, the pass rate per 100 cases in the order the file holds them (a drift within the run shows), and the
newest failures. Counted from the cases so far with the same rules as ``metrics.aggregate_metrics`` (rates over
evaluated cases, errors apart, Wilson intervals); tests/test_live.py checks they are equal at every step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from reporting.analysis.figures import proportion
from reporting.format.schema import Case

PER = 100  # cases per point of the pass rate over time
NEWEST = 5  # newest failures shown


def live_figures(cases: Sequence[Case], per: int = PER, newest: int = NEWEST) -> dict[str, Any]:
    """Counts, the pass rate and its 95% interval, the pass rate per ``per`` cases, the newest failures."""
    return LiveTally(per, newest).figures(cases)


class LiveTally:
    """``live_figures`` kept up to date as a run grows: the cases counted once are not counted again. ``figures``
    is told how many leading cases kept their verdicts since its last call (``stable``; fewer than it counted:
    it counts afresh) and how many are settled (``settled``: counted for good; the rest, such as garak's attempts
    not judged yet, are counted at each call)."""

    def __init__(self, per: int = PER, newest: int = NEWEST):
        self.per, self.newest = per, newest
        self._reset()

    def _reset(self) -> None:
        self.counted = 0
        self.passed = self.failed = 0
        self.blocks: list[list[int]] = []  # per block of ``per`` cases: [passed, evaluated]
        self.failures: list[int] = []  # positions of the newest failures counted, oldest first
        self.done: list[dict[str, Any]] = []  # the points of the blocks counted whole: they do not change

    def _count(self, cases: Sequence[Case], start: int, stop: int, blocks: list[list[int]], failures: list[int]):
        passed = failed = 0
        per = self.per
        for i in range(start, stop):
            verdict = cases[i].passed
            if i // per >= len(blocks):
                blocks.append([0, 0])
            if verdict is None:
                continue
            block = blocks[i // per]
            block[1] += 1
            if verdict:
                passed += 1
                block[0] += 1
            else:
                failed += 1
                failures.append(i)
        del failures[: max(0, len(failures) - self.newest)]
        return passed, failed

    def figures(self, cases: Sequence[Case], stable: int = 0, settled: Optional[int] = None) -> dict[str, Any]:
        settled = len(cases) if settled is None else min(settled, len(cases))
        if stable < self.counted:
            self._reset()
        if settled > self.counted:
            passed, failed = self._count(cases, self.counted, settled, self.blocks, self.failures)
            self.passed, self.failed, self.counted = self.passed + passed, self.failed + failed, settled
        blocks = self.blocks if settled == len(cases) else [list(b) for b in self.blocks]
        failures = list(self.failures)
        more_passed, more_failed = self._count(cases, self.counted, len(cases), blocks, failures)
        passed, failed = self.passed + more_passed, self.failed + more_failed
        evaluated = passed + failed
        while len(self.done) < self.counted // self.per:
            self.done.append(self._point(len(self.done), self.blocks[len(self.done)], len(cases)))
        series = self.done + [self._point(k, blocks[k], len(cases)) for k in range(len(self.done), len(blocks))]
        return {
            "cases": len(cases),
            "evaluated": evaluated,
            "passed": passed,
            "failed": failed,
            "errors": len(cases) - evaluated,
            "pass_rate": proportion(passed, evaluated)[0],
            "pass_rate_ci": proportion(passed, evaluated)[1],
            "series": series,
            "newest_failures": [_failure(cases[i]) for i in reversed(failures)],
        }

    def _point(self, k: int, block: list[int], cases: int) -> dict[str, Any]:
        ok, judged = block
        return {
            "first": k * self.per + 1,
            "last": min(cases, (k + 1) * self.per),
            "evaluated": judged,
            "pass_rate": proportion(ok, judged)[0],
            "pass_rate_ci": proportion(ok, judged)[1],
        }


def _failure(case: Case) -> dict[str, Any]:
    return {
        "probe_id": case.probe_id,
        "category": case.category,
        "severity": case.severity,
        "risk_score": case.risk_score,
        "response": case.response,
    }


def ago(seconds: float) -> str:
    """How long ago, in words a reader takes in at a glance: 40 s, 3 min, 2 h."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def progress_line(kind: str, attempts: int, cases: int, last_growth: float, now: float, growing: bool) -> str:
    """'in progress: 1,234 attempts so far, the last 40 s ago' (garak counts attempts, a RunLens run its cases)."""
    what = "attempts" if kind == "garak" else "cases"
    count = attempts if kind == "garak" else cases
    if growing:
        return f"in progress: {count:,} {what} so far, the last {ago(now - last_growth)} ago"
    return f"stopped growing: {count:,} {what}, the last {ago(now - last_growth)} ago"


def rate_text(rate: Optional[float], interval: Optional[list[float]]) -> str:
    """'82.4% (95% CI 78.1% to 86.0%)', or 'no case evaluated yet'."""
    if rate is None:
        return "no case evaluated yet"
    text = f"{rate:.1%}"
    if interval:
        text += f" (95% CI {interval[0]:.1%} to {interval[1]:.1%})"
    return text
