"""Known answers for the statistics: Wilson, McNemar (exact and chi-square), Newcombe, Wilcoxon."""

import pytest
from scipy import stats as sps

from reporting.analysis.stats import (
    kish_wilson,
    mcnemar,
    mean_interval,
    newcombe_paired,
    t_interval,
    wilcoxon_signed_rank,
    wilson,
)


@pytest.mark.parametrize(
    "k, n, low, high",
    [
        (0, 10, 0.0, 0.2775),  # published Wilson 95% limits (e.g. Newcombe 1998a, Brown, Cai & DasGupta 2001)
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (1, 29, 0.0061, 0.1718),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_against_published_values(k, n, low, high):
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)
    assert wilson(0, 0) is None


def test_exact_mcnemar_for_small_counts():
    # b + c < 25: two-sided exact binomial, p = 2 * P(X <= min(b, c)), X ~ Bin(b + c, 1/2)
    assert mcnemar(5, 0) == {"b": 5, "c": 0, "p_value": pytest.approx(2 / 32), "method": "exact binomial"}
    assert mcnemar(1, 8)["p_value"] == pytest.approx(2 * (1 + 9) / 512)  # 0.0390625
    assert mcnemar(3, 3)["p_value"] == 1.0
    assert mcnemar(0, 0)["p_value"] == 1.0


def test_chi_square_mcnemar_for_large_counts():
    result = mcnemar(30, 10)  # (|30 - 10| - 1)^2 / 40 = 9.025
    assert result["method"] == "chi-square with continuity correction"
    assert result["statistic"] == pytest.approx(9.025)
    assert result["p_value"] == pytest.approx(sps.chi2.sf(9.025, 1)) and result["p_value"] == pytest.approx(
        0.002663, abs=1e-6
    )
    assert mcnemar(13, 12)["method"].startswith("chi-square")  # b + c = 25 switches branch


def test_newcombe_worked_example():
    # Altman, Machin, Bryant & Gardner (2000), "Statistics with confidence", Table 6.2: paired table
    # [[14, 5], [0, 22]]; difference in proportions 19/41 - 14/41 = 0.122, Newcombe 95% CI 0.011 to 0.226.
    lo, hi = newcombe_paired(14, 0, 5, 22)  # our order: a both, b first-only, c second-only, d neither
    assert (5 / 41) == pytest.approx(0.122, abs=1e-3)
    assert lo == pytest.approx(0.0115, abs=5e-4) and hi == pytest.approx(0.2265, abs=5e-4)
    lo2, hi2 = newcombe_paired(14, 5, 0, 22)  # the same table read the other way round
    assert lo2 == pytest.approx(-hi, abs=1e-12) and hi2 == pytest.approx(-lo, abs=1e-12)
    lo0, hi0 = newcombe_paired(10, 0, 0, 0)  # no discordant pairs: difference 0, interval around it
    assert lo0 < 0 < hi0 and hi0 == pytest.approx(0.2775, abs=1e-4)
    assert newcombe_paired(0, 0, 0, 0) is None


def test_mean_interval_and_kish_wilson():
    lo, hi = mean_interval([1.0, 2.0, 3.0])  # mean 2, sd 1, t(0.975, 2) = 4.302653
    assert lo == pytest.approx(2 - 4.302653 / 3**0.5, abs=1e-5) and hi == pytest.approx(2 + 4.302653 / 3**0.5, abs=1e-5)
    assert mean_interval([0.5]) is None
    assert t_interval(2.0, 1.0, 3) == pytest.approx([lo, hi])  # the same interval from mean, sd and n
    assert t_interval(None, 1.0, 3) is None and t_interval(2.0, 1.0, 1) is None
    assert kish_wilson(2.0, 2.0, 1.0) == pytest.approx(wilson(1, 2))  # equal weights: the plain interval
    # weights 2 (passed) and 1 (failed): p = 2/3, Kish's n = 3^2 / (4 + 1) = 1.8, so Wilson of 1.2 in 1.8
    assert kish_wilson(3.0, 5.0, 2.0) == pytest.approx(wilson(1.2, 1.8))
    assert kish_wilson(0.0, 0.0, 0.0) is None


def test_wilcoxon_signed_rank():
    """Exact two-sided p-values counted by hand: with n = 8 distinct |changes| there are 2^8 = 256 equally likely
    sign patterns; p = 2 x (patterns whose negative rank sum is at most the observed one) / 256."""
    base = [0.5] * 8
    up = [0.5 + 0.01 * k for k in range(1, 9)]  # every change positive: W- = 0, one pattern ({})
    result = wilcoxon_signed_rank(base, up)
    assert result["statistic"] == 0 and result["p_value"] == pytest.approx(2 * 1 / 256) and result["n"] == 8
    # Negative at ranks 1 and 2: W- = 3; subsets of {1..8} with sum <= 3: {}, {1}, {2}, {3}, {1,2} -> 5.
    two_down = [0.49, 0.48] + [0.5 + 0.01 * k for k in range(3, 9)]
    assert wilcoxon_signed_rank(base, two_down)["p_value"] == pytest.approx(2 * 5 / 256)
    # Negative at ranks 1 and 3: W- = 4; add {4} and {1,3} -> 7.
    other = [0.49, 0.52, 0.47] + [0.5 + 0.01 * k for k in range(4, 9)]
    assert wilcoxon_signed_rank(base, other)["p_value"] == pytest.approx(2 * 7 / 256)
    none = wilcoxon_signed_rank(base, base)
    assert none["p_value"] == 1.0 and none["n_nonzero"] == 0 and none["statistic"] is None
