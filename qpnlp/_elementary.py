"""Elementary functions as loops that LLVM vectorises (numba): sines and cosines of float32 angles, and
:math:`e^{-|y|}` in float64.

numba compiles ``math.sin`` and ``math.exp`` to one libm call per element, which does not vectorise; these
loops do (a polynomial after a range reduction), and agree with libm to float rounding.  Plain Python
functions, compiled by their users without fast-math (which would undo the range reductions): Word2Fun's
compiled step (``qpnlp.word2fun._fused_kernel._kernel``), the complex-order FastText pooling's loop
(``qpnlp.nn.order_mean_loop``) and the cosines and sines of ``qpnlp._trig`` (phase lookups, the complex-order
embedding).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["POLY_MAX", "sincos", "exp_minus_abs"]

#: Beyond this absolute angle the float32 polynomial's reduction loses digits: libm takes over.
POLY_MAX = 8192.0
#: The Taylor coefficients 1/11! .. 1/0! of exp after the leading 1/12! (:func:`exp_minus_abs`).
_EXP_TAYLOR = tuple(1.0 / math.factorial(i) for i in range(11, -1, -1))


def sincos(x, s, c, fast):  # pragma: no cover - compiled
    """``s, c = sin(x), cos(x)`` (1-D): float32 by a vectorised polynomial (``fast``), otherwise libm.

    Cody-Waite reduction by pi/2 in three parts (exact products for :math:`|x| < 8192`), Cephes' sinf and cosf
    polynomials on [-pi/4, pi/4]; compiled without fast-math (reassociation would undo the reduction).
    """
    big = False
    if fast:
        t = x.dtype.type
        for j in range(x.shape[0]):
            q = np.rint(x[j] * t(0.6366197723675814))
            r = ((x[j] - q * t(1.5703125)) - q * t(4.837512969970703125e-4)) - q * t(7.54978995489188216e-8)
            z = r * r
            sp = ((t(-1.9515295891e-4) * z + t(8.3321608736e-3)) * z - t(1.6666654611e-1)) * z * r + r
            cp = ((t(2.443315711809948e-5) * z - t(1.388731625493765e-3)) * z + t(4.166664568298827e-2)) * z * z
            cp = cp - t(0.5) * z + t(1.0)
            m = q - t(4.0) * np.floor(q * t(0.25))  # the quadrant, 0..3 (NaN for NaN)
            odd = (m == t(1.0)) | (m == t(3.0))
            sv, cv = (cp, sp) if odd else (sp, cp)
            sv = -sv if m >= t(2.0) else sv
            s[j] = x[j] if x[j] == t(0.0) else sv  # sin(-0) = -0: the reduction r = x - q pi/2 makes it +0
            c[j] = -cv if (m == t(1.0)) | (m == t(2.0)) else cv
            big |= abs(x[j]) > t(POLY_MAX)
    if big or not fast:
        for j in range(x.shape[0]):
            if not fast or abs(x[j]) > POLY_MAX:
                s[j], c[j] = math.sin(x[j]), math.cos(x[j])


def exp_minus_abs(y, e):  # pragma: no cover - compiled
    """:math:`e = \\exp(-|y|)` (float64, 1-D), vectorised: :math:`2^n` times a degree-12 Taylor polynomial on
    :math:`|r| \\le \\ln 2 / 2` (relative error about 2e-16); :math:`e^{-708}` for :math:`|y| > 708` (where
    :math:`\\sigma` and :math:`\\log(1 + e)` do not see the difference); NaN for NaN.  Compiled without fast-math
    (the two-part reduction by ln 2)."""
    for i in range(y.shape[0]):
        v = -abs(y[i])
        v = -708.0 if v < -708.0 else v  # NaN stays NaN
        n = np.rint((v if v == v else 0.0) * 1.4426950408889634)  # no integer from a NaN
        r = (v - n * 0.6931471803691238) - n * 1.9082149292705877e-10
        p = 1.0 / 479001600.0
        for c in _EXP_TAYLOR:
            p = p * r + c
        e[i] = p * np.int64((np.int64(n) + 1023) << 52).view(np.float64)
