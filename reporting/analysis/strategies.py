"""Attack success by strategy (issue 32, point 3): how often each attack technique broke the model, by itself and
by category (the heat map), with Wilson intervals, and for multi-turn attacks the turns it took.

A case's ``strategy`` is the producing tool's (promptfoo's ``strategyId``, garak's buffs or technique, an Inspect
metadata key); cases without one are not counted here (a run that names no strategy has no such figures). Attack
success is a failed case: the attack got what it asked for. Over evaluated cases, like every rate.

Turns to break: for a failed case that carries its conversation, the number of user turns up to and including
the judged turn (the whole conversation when no turn is marked).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import pandas as pd

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


def _named(frame: pd.DataFrame) -> tuple[Any, Optional[np.ndarray]]:
    """The strategy column and the mask of the cases that name one (None: no case does)."""
    if "strategy" not in frame or not len(frame):
        return None, None
    strategy = frame["strategy"].to_numpy(dtype=object)
    named = pd.notna(strategy)  # a name or None (the schema's strategy is text)
    return strategy, named if named.any() else None


def by_strategy(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per strategy (by name): attack success with its interval, and the turns multi-turn attacks took to break
    the model (distribution as {turns: cases}, median)."""
    strategy, named = _named(frame)
    if named is None:
        return {}
    failed = ~frame["passed"].to_numpy(dtype=bool)
    turns = frame["user_turns"].to_numpy(dtype=np.int64) if "user_turns" in frame else np.zeros(len(frame), np.int64)
    result: dict[str, dict[str, Any]] = {}
    codes, names = pd.factorize(pd.Series(strategy[named], dtype=object), sort=True)
    failed_named, turns_named = failed[named], turns[named]
    for code, name in enumerate(names):
        mask = codes == code
        n, n_failed = int(mask.sum()), int((failed_named & mask).sum())
        broke = turns_named[mask & failed_named & (turns_named > 0)]
        distribution = Counter(int(t) for t in broke)
        result[str(name)] = {
            **_rate(n_failed, n),
            "turns_to_break": {str(k): distribution[k] for k in sorted(distribution)},
            "turns_to_break_median": float(np.median(broke)) if len(broke) else None,
        }
    return result


def by_strategy_category(frame: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    """Attack success for each strategy x category pair that has cases: {strategy: {category: figures}}."""
    strategy, named = _named(frame)
    if named is None:
        return {}
    pairs = pd.DataFrame(
        {
            "strategy": pd.Series(strategy[named], dtype=object),
            "category": pd.Series(frame["category"].to_numpy(dtype=object)[named], dtype=object),
            "failed": ~frame["passed"].to_numpy(dtype=bool)[named],
        }
    )
    counted = pairs.groupby(["strategy", "category"], sort=True)["failed"].agg(["size", "sum"])
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for (name, category), row in counted.iterrows():
        result.setdefault(str(name), {})[str(category)] = _rate(int(row["sum"]), int(row["size"]))
    return result
