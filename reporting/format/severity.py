"""Severity tiers and their default weights: a module of its own so that the command line can name them
without importing the schema (and pydantic) at start."""

from __future__ import annotations

from typing import Optional

SEVERITIES: tuple[str, ...] = ("low", "medium", "high", "critical")
DEFAULT_SEVERITY_WEIGHTS: dict[str, float] = {"low": 0.5, "medium": 1.0, "high": 1.5, "critical": 2.0}
HIGH_STAKES: frozenset[str] = frozenset({"high", "critical"})


def normalize_severity(value: object) -> Optional[str]:
    """The severity tier a label names ('Critical ' -> 'critical'), or None when it names none.

    The one place severities are normalised: the schema, the scorer and the gates all use it."""
    if not isinstance(value, str):
        return None
    tier = value.strip().lower()
    return tier if tier in SEVERITIES else None


def weighted_risk(risk, weight):
    """min(1, risk x weight) (docs/metrics.md), for one case or a numpy array of them: the one definition."""
    product = risk * weight
    return product.clip(max=1.0) if hasattr(product, "clip") else min(1.0, product)
