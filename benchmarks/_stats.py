"""Shared statistics of the accuracy benchmarks (``reproduce_complex_order.py``, ``paired_runs.py``)."""

from __future__ import annotations

from fractions import Fraction

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
