"""Attack success by strategy (issue 32, point 3): how often each attack technique broke the model, by itself and
by category (the heat map), with Wilson intervals, and for multi-turn attacks the turns it took.

A case's ``strategy`` is the producing tool's (promptfoo's ``strategyId``, garak's buffs or technique, an Inspect
metadata key); cases without one are not counted here (a run that names no strategy has no such figures). Attack
success is a failed case: the attack got what it asked for. Over evaluated cases, like every rate.

Turns to break: for a failed case that carries its conversation, the number of user turns up to and including
the judged turn (the whole conversation when no turn is marked).

The counts are the engine's (``reporting.analysis.engine.STRATEGIES``, ``STRATEGY_CATEGORIES`` and
``TURNS_TO_BREAK``: one query each over the case table); the figures are derived from them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from reporting.analysis.stats import LOW_N, wilson


def user_turns(messages: Optional[Sequence[Any]], judged_turn: Optional[int]) -> int:
    """User turns up to and including the judged turn (all of them when none is marked); 0 without messages."""
    if not messages:
        return 0
    upto = messages if judged_turn is None else messages[: judged_turn + 1]
    return sum(1 for m in upto if getattr(m, "role", None) == "user")


def _rate(failed: int, n: int) -> dict[str, Any]:
    return {
        "n": n,
        "low_n": n < LOW_N,
        "attacks_succeeded": failed,
        "attack_success_rate": failed / n if n else None,
        "attack_success_rate_ci": wilson(failed, n),
    }


def _median(distribution: Mapping[int, int]) -> Optional[float]:
    """The median of the turns given as {turns: cases} (the mean of the two middle ones for an even count)."""
    total = sum(distribution.values())
    if not total:
        return None
    middle: list[int] = []  # the values at positions (total - 1) // 2 and total // 2 of the sorted turns
    seen = 0
    for turns in sorted(distribution):
        seen += distribution[turns]
        while len(middle) < 2 and seen > ((total - 1) // 2 if not middle else total // 2):
            middle.append(turns)
    return (middle[0] + middle[1]) / 2


def by_strategy(rows: Iterable[Mapping[str, Any]], turns: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per strategy (by name, from the engine's rows: ``strategy``, ``n``, ``failed``; and of the failed cases
    that carry a conversation ``strategy``, ``turns``, ``cases``): attack success with its interval, and the turns
    multi-turn attacks took to break the model (distribution as {turns: cases}, median)."""
    broke: dict[str, dict[int, int]] = {}
    for row in turns:
        broke.setdefault(str(row["strategy"]), {})[int(row["turns"])] = int(row["cases"])
    result: dict[str, dict[str, Any]] = {}
    for row in rows:
        name = str(row["strategy"])
        distribution = broke.get(name, {})
        result[name] = {
            **_rate(int(row["failed"]), int(row["n"])),
            "turns_to_break": {str(k): distribution[k] for k in sorted(distribution)},
            "turns_to_break_median": _median(distribution),
        }
    return result


def by_strategy_category(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Attack success for each strategy x category pair that has cases (the engine's rows: ``strategy``,
    ``category``, ``n``, ``failed``): {strategy: {category: figures}}."""
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        result.setdefault(str(row["strategy"]), {})[str(row["category"])] = _rate(int(row["failed"]), int(row["n"]))
    return result
