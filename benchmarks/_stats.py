"""Shared statistics of the accuracy benchmarks (``reproduce_complex_order.py``, ``paired_runs.py``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy
from scipy.stats import rankdata, wilcoxon

#: Test parts hold at most this many texts (SST-2's 1,821 is the largest here).
MAX_TEST_SIZE = 2000


def exact_accuracy(accuracy: float) -> Fraction:
    """A test accuracy as the fraction correct/n it is.

    ``accuracy`` is a float32 mean (off by < 6e-8), and fractions with n <= 2000 lie >= 2.5e-7 apart, so the
    nearest one is exact. On the floats, paired differences that are equal (the same count on the same test part)
    differ in their last bits: a Wilcoxon signed-rank test would rank true ties as distinct (and use the untied
    exact distribution), and an exact tie of means would print as -0.0. A value no such fraction explains (a
    larger test part) is kept as it is.

    >>> exact_accuracy(float(__import__("numpy").float32(3 / 7)))
    Fraction(3, 7)
    """
    snapped = Fraction(accuracy).limit_denominator(MAX_TEST_SIZE)
    return snapped if abs(float(snapped) - accuracy) < 6e-8 else Fraction(accuracy)


def signed_rank_p(differences) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences (``scipy.stats.wilcoxon``, zero differences
    dropped: ``zero_method="wilcox"``); 1.0 when every difference is zero.

    Our folds and seeds give few pairs (5-10) with ties and zeros. scipy >= 1.15 takes the exact null
    distribution over all sign flips for them (``method="auto"``); scipy 1.14 took the normal approximation
    (five equal differences: p 0.0707 there, 0.0625 exact). The published p-values are the exact ones, so an
    older scipy is refused rather than giving other figures.

    Exact means: up to 13 differences (zeros counted) when some are tied or zero, up to 50 when none are; beyond,
    scipy takes the normal approximation with continuity correction (14 differences, seven 1s and seven 2s: p
    0.0007 for the exact 0.0001). Two-sided, ``n`` nonzero differences cannot give p below ``2 / 2**n``: 0.0625
    for five, 0.03125 for six (hence the tables' 5-pair minimum and "six for p < 0.05").
    """
    major, minor = (int(part) for part in scipy.__version__.split(".")[:2])
    if (major, minor) < (1, 15):
        raise RuntimeError(f"the benchmarks' Wilcoxon p-values need scipy >= 1.15 (exact with ties and zeros); "
                           f"this is scipy {scipy.__version__}")
    values = [float(d) for d in differences]
    if not any(values):
        return 1.0
    return float(wilcoxon(values, alternative="two-sided").pvalue)


def signed_rank_sums(differences) -> tuple[float, float]:
    """``(R+, R-)``: the sums of the mid-ranks of ``|d|`` over the positive and the negative differences, zeros
    dropped (the statistics :func:`signed_rank_p` tests; R+ + R- = n(n+1)/2 for n nonzero differences).

    A two-sided p says that the signed ranks lean one way, not which: that is the larger sum. It can be the other
    way than the mean difference: nineteen differences of -1 and one of +30 have mean +0.55 but R+ = 20, R- = 190
    (p 0.0004), so the test speaks against the side the mean favours.

    >>> signed_rank_sums([3, -1, 0, 2])
    (5.0, 1.0)
    """
    d = np.array([float(x) for x in differences if x != 0])
    ranks = rankdata(np.abs(d))
    return float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
