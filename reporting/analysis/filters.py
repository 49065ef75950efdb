"""Case filters shared by the dashboard, the HTML export and the command line."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting.analysis.grouping import severity_mask
from reporting.format.schema import SEVERITIES

# The one set of fields a case search looks in: the dashboard, the command line and the HTML handout.
SEARCH_COLUMNS = ("probe_id", "category", "task", "probe_input", "response")


@dataclass(frozen=True)
class Filters:
    """Which cases to keep. Empty selections keep everything."""

    categories: tuple[str, ...] = ()
    severities: tuple[str, ...] = ()
    outcome: Optional[str] = None  # "pass", "fail" or None for both
    failure_modes: tuple[str, ...] = ()
    text: str = ""
    strategies: tuple[str, ...] = ()  # attack strategies (schema version 3)

    def __post_init__(self) -> None:
        if self.outcome not in (None, "pass", "fail"):
            raise ValueError(f"outcome must be 'pass' or 'fail', not {self.outcome!r}")
        unknown = [s for s in self.severities if s not in SEVERITIES]
        if unknown:
            raise ValueError(f"unknown severity {unknown[0]!r}; use one of {', '.join(SEVERITIES)}")

    @property
    def active(self) -> bool:
        return bool(
            self.categories
            or self.severities
            or self.outcome
            or self.failure_modes
            or self.text.strip()
            or self.strategies
        )

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame if not self.active else frame[self.mask(frame)]

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Which rows of ``frame`` these filters keep."""
        mask = np.ones(len(frame), dtype=bool)
        if self.categories:
            mask &= frame["category"].isin(self.categories).to_numpy()
        if self.severities:
            mask &= severity_mask(frame, self.severities)
        if self.outcome:
            mask &= frame["passed"].to_numpy(dtype=bool) == (self.outcome == "pass")
        if self.strategies:
            mask &= frame["strategy"].isin(self.strategies).to_numpy(dtype=bool) if "strategy" in frame else False
        if self.failure_modes:
            wanted = set(self.failure_modes)
            mask &= np.fromiter(
                (not wanted.isdisjoint(m) for m in frame["detected_failure_modes"]), dtype=bool, count=len(frame)
            )
        needle = self.text.strip().lower()
        if needle:
            found = np.zeros(len(frame), dtype=bool)
            for column in SEARCH_COLUMNS:
                found |= frame[column].fillna("").str.lower().str.contains(needle, regex=False).to_numpy(dtype=bool)
            if "messages" in frame:  # every turn of a conversation, and its tool calls
                found |= np.fromiter(
                    (bool(turns) and _turns_contain(turns, needle) for turns in frame["messages"]),
                    dtype=bool,
                    count=len(frame),
                )
            mask &= found
        return mask

    def apply_errors(self, errors: pd.DataFrame) -> pd.DataFrame:
        """The cases not evaluated that these filters keep: by category, severity and text; none when an outcome or
        a failure mode is asked for (a case not evaluated has neither)."""
        if not self.active:
            return errors
        if self.outcome or self.failure_modes:
            return errors.iloc[0:0]
        return replace(self, outcome=None, failure_modes=()).apply(errors)

    def describe(self) -> list[str]:
        """Human-readable lines, one per active filter (empty when none)."""
        lines = []
        if self.categories:
            lines.append("category: " + ", ".join(self.categories))
        if self.severities:
            lines.append("severity: " + ", ".join(self.severities))
        if self.outcome:
            lines.append("outcome: " + ("passed" if self.outcome == "pass" else "failed"))
        if self.failure_modes:
            lines.append("failure mode: " + ", ".join(self.failure_modes))
        if self.strategies:
            lines.append("strategy: " + ", ".join(self.strategies))
        if self.text.strip():
            lines.append(f'text contains: "{self.text.strip()}"')
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "categories": list(self.categories),
            "severities": list(self.severities),
            "outcome": self.outcome,
            "failure_modes": list(self.failure_modes),
            "text": self.text,
            **({"strategies": list(self.strategies)} if self.strategies else {}),
        }


def _turns_contain(turns: Any, needle: str) -> bool:
    for turn in turns:
        if needle in (turn.content or "").lower():
            return True
        for call in turn.tool_calls:
            if needle in call.function.lower() or needle in str(call.arguments or "").lower():
                return True
    return False


NO_FILTERS = Filters()
