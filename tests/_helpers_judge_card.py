"""Helpers of the judge card tests (test_app_judge_card.py in AppTest, test_browser_judge_card.py in Chromium): a run
judged by two judges (judge-a and judge-b, who always disagree) and a card for judge-a measured on 20 hand-counted
rows (10 harmful: 8 called harmful, 2 missed; 10 harmless: 9 called harmless, 1 flagged)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from reporting.analysis.validity import build_card, card_document, measure

LABELS = [True] * 10 + [False] * 10
VERDICTS = [True] * 8 + [False] * 2 + [True] + [False] * 9


def two_judge_run(passes: Sequence[bool]) -> dict[str, Any]:
    """A v2 run of one case a verdict in ``passes``: judge-a says what the run says, judge-b the opposite."""
    cases = [
        {
            "probe_id": f"p{i}",
            "category": "c",
            "severity": "high",
            "passed": passed,
            "risk_score": 0.0 if passed else 1.0,
            "response": "r",
            "verdicts": {"judge-a": {"passed": passed}, "judge-b": {"passed": not passed}},
        }
        for i, passed in enumerate(passes)
    ]
    return {"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}


def judge_a_cards(name: str, description: str, categories: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """A card file's content: judge-a's one card on LABELS and VERDICTS (by category when ``categories`` is given)."""
    measured = measure(LABELS, VERDICTS, categories)
    return card_document([build_card("judge-a", LABELS, measured, name=name, description=description, how="test")])
