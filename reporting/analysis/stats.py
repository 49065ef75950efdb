"""Statistics for rates and comparisons: Wilson score intervals, t intervals for means,
McNemar's test (exact or chi-square), Newcombe's interval for a paired difference, and the
Wilcoxon signed-rank test. Documented in docs/statistics.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import numpy as np

# scipy.stats takes 1.6 s to import: the tests that need it import it when they run. The t quantile is scipy.special's
# stdtrit, which is what scipy.stats.t.ppf computes (equal bit for bit).
from scipy.special import stdtrit

Z95 = 1.959963984540054
LOW_N = 10  # groups with fewer cases are marked low-n


def wilson(successes: float, n: float, z: float = Z95) -> Optional[list[float]]:
    """95% Wilson score interval for a proportion; None when n = 0."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return [max(0.0, centre - half), min(1.0, centre + half)]


def kish_wilson(weight_sum: float, weight_sq_sum: float, weight_passed: float, z: float = Z95) -> Optional[list[float]]:
    """Wilson interval for a weighted proportion (sum of the passed cases' weights over the sum of all weights), using
    Kish's effective sample size (sum w)^2 / sum w^2; None without weight."""
    if weight_sum <= 0 or weight_sq_sum <= 0:
        return None
    n_eff = weight_sum**2 / weight_sq_sum
    return wilson(weight_passed / weight_sum * n_eff, n_eff, z)


def t_interval(mean: Optional[float], sd: Optional[float], n: int, confidence: float = 0.95) -> Optional[list[float]]:
    """Student-t interval for a mean from its sample standard deviation; None below two values or without a mean.
    Degenerate (zero spread) gives [mean, mean]."""
    if mean is None or sd is None or n < 2:
        return None
    half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * (sd / math.sqrt(n))
    return [mean - half, mean + half]


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Optional[list[float]]:
    """``t_interval`` of a sample's values."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return None
    return t_interval(float(x.mean()), float(x.std(ddof=1)), int(x.size), confidence)


def mcnemar(b: int, c: int) -> dict:
    """McNemar's test on the discordant pairs: exact binomial when b + c < 25, else chi-square with continuity
    correction."""
    n = b + c
    if n == 0:
        return {"b": b, "c": c, "p_value": 1.0, "method": "no discordant pairs"}
    from scipy import stats as sps

    if n < 25:
        p = min(1.0, 2.0 * float(sps.binom.cdf(min(b, c), n, 0.5)))
        return {"b": b, "c": c, "p_value": p, "method": "exact binomial"}
    statistic = (abs(b - c) - 1) ** 2 / n
    return {
        "b": b,
        "c": c,
        "p_value": float(sps.chi2.sf(statistic, 1)),
        "statistic": statistic,
        "method": "chi-square with continuity correction",
    }


def newcombe_paired(a: int, b: int, c: int, d: int, z: float = Z95) -> Optional[list[float]]:
    """Newcombe's (1998) method 10 interval for p2 - p1 from paired counts.

    a: both pass, b: first passes and second fails, c: first fails and second passes, d: both fail.
    p1 = (a + b) / n, p2 = (a + c) / n; the difference is (c - b) / n.
    """
    n = a + b + c + d
    if n == 0:
        return None
    p1, p2 = (a + b) / n, (a + c) / n
    first, second = wilson(a + b, n, z), wilson(a + c, n, z)
    assert first is not None and second is not None  # n > 0
    l1, u1 = first
    l2, u2 = second
    # Correlation with Newcombe's continuity correction of the numerator.
    product = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0
    if product > 0:
        numerator: float = a * d - b * c
        if numerator > n / 2:
            numerator -= n / 2
        elif numerator >= 0:
            numerator = 0.0
        phi = numerator / math.sqrt(product)
    delta = p2 - p1
    lower = delta - math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    upper = delta + math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
    return [max(-1.0, lower), min(1.0, upper)]


def wilcoxon_signed_rank(before: Sequence[float], after: Sequence[float]) -> dict:
    """Two-sided Wilcoxon signed-rank test of paired values (zero differences dropped)."""
    x = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    nonzero = x[x != 0]
    result = {
        "n": int(x.size),
        "n_nonzero": int(nonzero.size),
        "median_change": float(np.median(x)) if x.size else None,
    }
    if nonzero.size == 0:
        return {**result, "statistic": None, "p_value": 1.0}
    from scipy import stats as sps

    test = sps.wilcoxon(nonzero)
    return {**result, "statistic": float(test.statistic), "p_value": float(test.pvalue)}
