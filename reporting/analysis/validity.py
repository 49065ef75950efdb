"""A judge's measured validity: how far its verdicts agree with people's labels (docs/judge-cards.md).

Harmful is the positive class. A label ``True`` means people judged the answer harmful; a verdict ``True`` means
the judge says harmful (the attack succeeded), ``False`` harmless, ``None`` that the judge gave no verdict (an
error: counted in ``errors``, left out of every rate). From the confusion matrix of the judged rows:

- sensitivity = tp / (tp + fn) (harmful answers the judge calls harmful) and specificity = tn / (tn + fp) (harmless
  answers it calls harmless), each with its 95% Wilson interval;
- balanced accuracy = (sensitivity + specificity) / 2 with a MOVER-Wilson interval (Newcombe's method of variance
  estimates recovery for a sum of two independent proportions, each side's Wilson limits combined, then halved):
  it stays inside [0, 1] without clipping and does not collapse to a point at 0% or 100% as a normal
  approximation does;
- Cohen's kappa between labels and verdicts with kappa +- 1.96 x its large-sample standard error (Fleiss, Cohen and
  Everitt 1969), clipped to [-1, 1];
- ``bootstrap_intervals``: percentile intervals of balanced accuracy and kappa over resampled rows, the same
  formulas (the review's agreement figures, docs/review.md).

A rate whose denominator is 0 is null, and so is its interval. The card built from these figures (one JSON object;
a card file is ``{"judge_cards": [card, ...]}``) is made here; it is read and checked by ``judge_cards.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from reporting.analysis.stats import Z95, wilson

CARD_VERSION = 1
BOOTSTRAP = 2_000  # resamples of bootstrap_intervals
LABEL_BASES = ("human", "review", "benchmark judge", "by construction")
RATE_KEYS = ("sensitivity", "specificity", "balanced_accuracy", "kappa")
MEASURED_KEYS = (
    "n",
    "errors",
    "confusion",
    *(key for rate in RATE_KEYS for key in (rate, f"{rate}_interval")),
)


def _ratio(numerator: int, denominator: int) -> Optional[float]:
    return None if denominator == 0 else numerator / denominator


def balanced_accuracy_interval(tp: int, fn: int, fp: int, tn: int, z: float = Z95) -> Optional[list[float]]:
    """MOVER-Wilson 95% interval of (sensitivity + specificity) / 2; None when either class is empty."""
    positives, negatives = tp + fn, tn + fp
    sens_ci, spec_ci = wilson(tp, positives, z), wilson(tn, negatives, z)
    if sens_ci is None or spec_ci is None:
        return None
    sens, spec = tp / positives, tn / negatives
    total = sens + spec
    lower = total - math.sqrt((sens - sens_ci[0]) ** 2 + (spec - spec_ci[0]) ** 2)
    upper = total + math.sqrt((sens_ci[1] - sens) ** 2 + (spec_ci[1] - spec) ** 2)
    return [max(0.0, lower / 2), min(1.0, upper / 2)]


def _agreement_terms(tp: Any, fn: Any, fp: Any, tn: Any) -> tuple[Any, Any, Any, Any, Any]:
    """The cells p[label][verdict] (1 = harmful) as shares of n, the row and column margins, the observed and the
    chance agreement. Plain arithmetic: numpy arrays of counts (one count a resample) serve as well as ints; n > 0."""
    n = tp + fn + fp + tn
    p = [[tn / n, fp / n], [fn / n, tp / n]]
    rows = [p[0][0] + p[0][1], p[1][0] + p[1][1]]
    cols = [p[0][0] + p[1][0], p[0][1] + p[1][1]]
    return p, rows, cols, p[0][0] + p[1][1], rows[0] * cols[0] + rows[1] * cols[1]


def kappa_with_interval(tp: int, fn: int, fp: int, tn: int, z: float = Z95) -> tuple[Optional[float], Any]:
    """Cohen's kappa of labels (rows) and verdicts (columns), and kappa +- z x its large-sample standard error
    (Fleiss, Cohen and Everitt 1969) clipped to [-1, 1]. (None, None) with no judged row, or when chance agreement
    is total (labels and verdicts both constant and equal), which leaves kappa undefined."""
    n = tp + fn + fp + tn
    if n == 0:
        return None, None
    p, rows, cols, observed, expected = _agreement_terms(tp, fn, fp, tn)
    if expected >= 1.0:
        return None, None
    kappa = (observed - expected) / (1 - expected)
    diagonal = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in (0, 1))
    off = (1 - kappa) ** 2 * sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in (0, 1) for j in (0, 1) if i != j)
    variance = max(0.0, diagonal + off - (kappa - expected * (1 - kappa)) ** 2) / (n * (1 - expected) ** 2)
    half = z * math.sqrt(variance)
    return kappa, [max(-1.0, kappa - half), min(1.0, kappa + half)]


def bootstrap_intervals(
    labels: Sequence[bool], verdicts: Sequence[bool], resamples: int = BOOTSTRAP, seed: int = 0
) -> dict[str, Optional[list[float]]]:
    """Percentile 95% intervals of balanced accuracy and kappa, resampling the rows (every row judged: no None),
    seeded (the same rows give the same intervals): {"balanced_accuracy": [low, high], "kappa": [low, high]}. An
    interval is None with fewer than 2 rows, or when the figure is undefined in half the resamples or more (a
    resample with one class only, or with total chance agreement). The same formulas as ``figures``, each resample's
    confusion matrix at once."""
    import numpy as np

    n = len(labels)
    if n < 2:
        return {"balanced_accuracy": None, "kappa": None}
    rng = np.random.default_rng(seed)
    t, s = np.array(labels, dtype=bool), np.array(verdicts, dtype=bool)
    picks = rng.integers(0, n, size=(resamples, n))
    tt, ss = t[picks], s[picks]
    tp, fn, fp, tn = (tt & ss).sum(1), (tt & ~ss).sum(1), (~tt & ss).sum(1), (~tt & ~ss).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        balanced = np.where((tp + fn > 0) & (tn + fp > 0), (tp / (tp + fn) + tn / (tn + fp)) / 2, np.nan)
        _, _, _, observed, expected = _agreement_terms(tp, fn, fp, tn)
        kappa = np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)

    def percentile(values: Any) -> Optional[list[float]]:
        values = values[~np.isnan(values)]
        if len(values) < resamples // 2:
            return None
        return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]

    return {"balanced_accuracy": percentile(balanced), "kappa": percentile(kappa)}


def figures(tp: int, fn: int, fp: int, tn: int, errors: int = 0) -> dict[str, Any]:
    """The "measured" dict of a card from a confusion matrix (harmful = positive) and the count of errors."""
    sensitivity, specificity = _ratio(tp, tp + fn), _ratio(tn, tn + fp)
    balanced = None if sensitivity is None or specificity is None else (sensitivity + specificity) / 2
    kappa, kappa_ci = kappa_with_interval(tp, fn, fp, tn)
    return {
        "n": tp + fn + fp + tn + errors,
        "errors": errors,
        "confusion": {"tp": tp, "fn": fn, "fp": fp, "tn": tn},
        "sensitivity": sensitivity,
        "sensitivity_interval": wilson(tp, tp + fn),
        "specificity": specificity,
        "specificity_interval": wilson(tn, tn + fp),
        "balanced_accuracy": balanced,
        "balanced_accuracy_interval": balanced_accuracy_interval(tp, fn, fp, tn),
        "kappa": kappa,
        "kappa_interval": kappa_ci,
    }


def _count(pairs: Sequence[tuple[bool, Optional[bool]]]) -> dict[str, Any]:
    tp = fn = fp = tn = errors = 0
    for label, verdict in pairs:
        if verdict is None:
            errors += 1
        elif label:
            tp, fn = (tp + 1, fn) if verdict else (tp, fn + 1)
        else:
            fp, tn = (fp + 1, tn) if verdict else (fp, tn + 1)
    return figures(tp, fn, fp, tn, errors)


def measure(
    labels: Sequence[bool],
    verdicts: Sequence[Optional[bool]],
    categories: Optional[Sequence[Optional[str]]] = None,
) -> dict[str, Any]:
    """The "measured" dict of a card (n, errors, confusion, each rate with its interval) plus "by_category": the same
    per category (rows whose category is None are counted overall only; {} without categories).

    ``labels[i]``: people judged row i harmful; ``verdicts[i]``: the judge says harmful (True), harmless (False), or
    gave no verdict (None)."""
    if len(labels) != len(verdicts):
        raise ValueError(f"{len(labels)} labels but {len(verdicts)} verdicts")
    if categories is not None and len(categories) != len(labels):
        raise ValueError(f"{len(labels)} labels but {len(categories)} categories")
    pairs = [(bool(label), None if verdict is None else bool(verdict)) for label, verdict in zip(labels, verdicts)]
    result = _count(pairs)
    by_category: dict[str, dict[str, Any]] = {}
    if categories is not None:
        groups: dict[str, list[tuple[bool, Optional[bool]]]] = {}
        for pair, category in zip(pairs, categories):
            if category is not None:
                groups.setdefault(str(category), []).append(pair)
        by_category = {name: _count(groups[name]) for name in sorted(groups)}
    result["by_category"] = by_category
    return result


def build_card(
    judge: str,
    labels: Sequence[bool],
    measured: Mapping[str, Any],
    *,
    name: str,
    description: str = "",
    label_basis: str = "human",
    trained_on: bool = False,
    how: str = "",
    versions: Optional[Mapping[str, str]] = None,
    generated: Optional[str] = None,
) -> dict[str, Any]:
    """One judge card (card_version 1) from ``measure``'s result on a label set (``labels``: the set's labels, for
    its counts). ``versions`` defaults to RunLens's version; ``generated`` to now (or SOURCE_DATE_EPOCH)."""
    if label_basis not in LABEL_BASES:
        raise ValueError(f"label_basis must be one of {', '.join(LABEL_BASES)}, not {label_basis!r}")
    from reporting._time import generated_at
    from reporting._version import __version__

    harmful = sum(1 for label in labels if label)
    return {
        "card_version": CARD_VERSION,
        "judge": judge,
        "label_set": {
            "name": name,
            "description": description,
            "n": len(labels),
            "harmful": harmful,
            "not_harmful": len(labels) - harmful,
            "label_basis": label_basis,
            "trained_on": bool(trained_on),
        },
        "how": how,
        "measured": {key: measured[key] for key in MEASURED_KEYS},
        "by_category": {category: dict(values) for category, values in measured.get("by_category", {}).items()},
        "versions": dict(versions) if versions is not None else {"runlens": __version__},
        "generated": generated if generated is not None else generated_at(),
    }


def card_document(cards: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A card file's content: ``{"judge_cards": [card, ...]}``."""
    return {"judge_cards": [dict(card) for card in cards]}
