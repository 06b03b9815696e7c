"""The pairs of Word2Fun's SGD step as compiled loops (numba), on CPU.

The positive pairs of :func:`~qpnlp.word2fun.sgd.centre_sgd_step` (and its
negatives when they are drawn per pair) read, for every pair :math:`b`
(centre token :math:`n(b)`, context or negative word :math:`c(b)`),

.. math::
    p_b = f_{n(b)} \\cdot h_{c(b)}, \\qquad
    g_b = w\\,(\\sigma(p_b) - y_b), \\qquad
    \\frac{\\partial L}{\\partial f_{n(b)}} \\mathrel{+}= g_b\\, h_{c(b)}

(:math:`y_b = 1` for a positive pair, 0 for a negative one), and, once the
gradients are taken, move the compass rows
:math:`h_{c(b)} \\mathrel{+}= -\\eta\\, g_b\\, f_{n(b)}`.  In torch ops each
of these is a row gather, a product, a sum and a row scatter over (B, D)
temporaries (a (B, k, D) one for k negatives per pair), each streaming the
pairs' rows through memory.  torch has no fused gather-dot-scatter on CPU, so
this module writes the two loops out once and compiles them with numba:
every pair's rows are read once, nothing (B, D) is allocated, and the loops
release the GIL, so hogwild threads run them side by side.  Same values as
the torch ops to float rounding (the dot products are summed in another
order: ``fastmath`` reassociation, NaN and infinity semantics kept).

numba is optional (``pip install "qpnlp[fast]"``): without it, or for tensors
this loop does not take (not on CPU, not float32/float64, not contiguous), the
step uses torch ops (:func:`accepts` says which).  Set
``QPNLP_WORD2FUN_COMPILED=0`` to use the torch ops everywhere.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from qpnlp import _env, _numba
from qpnlp._numba import check_rows

#: The sums of the loops are reassociated (vectorised dot products); NaN and infinity semantics are kept.
_FASTMATH = frozenset({"reassoc", "contract"})

__all__ = ["available", "describe", "accepts", "logistic_pairs", "add_compass_steps"]


def available() -> bool:
    """Whether the compiled loop can run here: numba is installed and ``QPNLP_WORD2FUN_COMPILED`` is not ``0``."""
    return _numba.enabled("QPNLP_WORD2FUN_COMPILED")


def describe(device: torch.device | str) -> str:
    """One line for a training log: whether the SGD step runs compiled on ``device``, and how to get it.

    Compiled means the whole step (:mod:`~qpnlp.word2fun.fused_step`) where it applies (families II-IV,
    negatives shared by the batch: ``fit``'s defaults), otherwise the step's pairs (this module).

    Parameters
    ----------
    device : torch.device or str
        The training device; only the CPU runs the compiled step.
    """
    if torch.device(device).type != "cpu":
        return "SGD step: torch ops (the compiled step is for the CPU)"
    if available():
        return "SGD step: compiled (numba; the whole step for families II-IV with shared negatives, else the pairs)"
    if not _numba.HAVE_NUMBA:
        return "SGD step: torch ops (pip install 'qpnlp[fast]' compiles it, about 0.7x the time per step)"
    for name in ("QPNLP_COMPILED", "QPNLP_WORD2FUN_COMPILED"):
        if not _env.flag(name, True):
            return f"SGD step: torch ops ({name}={_env.text(name)})"
    return "SGD step: torch ops (numba is installed but does not import)"


def accepts(*tensors: torch.Tensor) -> bool:
    """Whether the compiled loop takes these float tables: :func:`available`, CPU, one float dtype, contiguous."""
    return available() and _numba.takes(*tensors)


def _logistic_loop(f, H, pair_centre, context, positive, weight, g_f, g):  # pragma: no cover - compiled
    loss = 0.0
    dim = f.shape[1]
    for b in range(context.shape[0]):
        n, c = pair_centre[b], context[b]
        p = f[n, 0] * H[c, 0]
        for j in range(1, dim):
            p += f[n, j] * H[c, j]
        x = -p if positive else p  # the loss is softplus(x) = -log sigma(-x), its gradient sigma(p) - [positive]
        if x >= 0:  # without overflow
            e = math.exp(-x)
            loss += x + math.log1p(e)
            s = 1.0 / (1.0 + e)
        else:
            e = math.exp(x)
            loss += math.log1p(e)
            s = e / (1.0 + e)
        g[b] = weight * (-s if positive else s)
        for j in range(dim):
            g_f[n, j] += g[b] * H[c, j]
    return weight * loss


def _compass_loop(H, f, pair_centre, context, step):  # pragma: no cover - compiled
    dim = f.shape[1]
    for b in range(context.shape[0]):
        n, c, s = pair_centre[b], context[b], step[b]
        for j in range(dim):
            H[c, j] += s * f[n, j]


def _array(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def _check_pairs(f: torch.Tensor, H: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor) -> None:
    if pair_centre.shape != context.shape or pair_centre.dim() != 1:
        raise ValueError(f"pair_centre and context must be (B,) alike; got {tuple(pair_centre.shape)} and "
                         f"{tuple(context.shape)}")
    if f.shape[1] != H.shape[1]:
        raise ValueError(f"f (N, D) and the compass (V, D) differ in D: {tuple(f.shape)} and {tuple(H.shape)}")
    check_rows(pair_centre, f.shape[0], "centre token")
    check_rows(context, H.shape[0], "context word")


def logistic_pairs(f: torch.Tensor, H: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor, *,
                   positive: bool = True, weight: float = 1.0,
                   g_f: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The logistic loss of pairs, its gradient per pair and per centre token, in one pass.

    With :math:`p_b = f_{n(b)} \\cdot h_{c(b)}` and weight :math:`w`, a positive pair costs
    :math:`-w \\log\\sigma(p_b)` (gradient :math:`g_b = w(\\sigma(p_b) - 1)`), a negative one
    :math:`-w \\log\\sigma(-p_b)` (:math:`g_b = w\\,\\sigma(p_b)`).

    Parameters
    ----------
    f : torch.Tensor, shape (N, D)
        :math:`f(u_n, t_n)` of the centre tokens.
    H : torch.Tensor, shape (V, D)
        The compass (read only).
    pair_centre, context : torch.Tensor, shape (B,), int64
        Centre token (row of ``f``) and context word (row of ``H``) of each pair.
    positive : bool
    weight : float
    g_f : torch.Tensor, shape (N, D), optional
        Accumulate :math:`\\sum_b g_b h_{c(b)}` into it (in place) instead of a new zero tensor.

    Returns
    -------
    (torch.Tensor (N, D), torch.Tensor (B, 1), torch.Tensor ())
        :math:`\\partial L/\\partial f` (``g_f``), :math:`g_b` and the loss (summed in float64).
    """
    _check_pairs(f, H, pair_centre, context)
    if g_f is None:
        g_f = torch.zeros_like(f)
    elif g_f.shape != f.shape or not accepts(g_f, f):
        raise ValueError(f"g_f must be a contiguous {tuple(f.shape)} tensor of f's dtype")
    g = torch.empty(context.shape[0], 1, dtype=f.dtype)
    loop = _numba.jit(_logistic_loop, _FASTMATH)
    loss = loop(_array(f), _array(H), _array(pair_centre), _array(context), positive, float(weight), g_f.numpy(),
                g.numpy()[:, 0])
    return g_f, g, torch.tensor(loss, dtype=f.dtype)


def add_compass_steps(H: torch.Tensor, f: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor,
                      step: torch.Tensor) -> None:
    """``H[context[b]] += step[b] * f[pair_centre[b]]`` in place, pair after pair (repeated rows accumulate).

    Parameters
    ----------
    H : torch.Tensor, shape (V, D)
        The compass, updated in place; ``H``, ``f`` and ``step`` are tensors :func:`accepts` takes.
    f : torch.Tensor, shape (N, D)
        :math:`f(u_n, t_n)` of the centre tokens, of ``H``'s dtype.
    pair_centre, context : torch.Tensor, shape (B,), int64
        Centre token (row of ``f``) and context word (row of ``H``) of each pair, as in :func:`logistic_pairs`.
    step : torch.Tensor, shape (B, 1)
        :math:`-\\eta\\, g_b` of each pair, of ``H``'s dtype.
    """
    _check_pairs(f, H, pair_centre, context)
    if step.shape != (context.shape[0], 1):
        raise ValueError(f"step must be (B, 1) = ({context.shape[0]}, 1); got {tuple(step.shape)}")
    loop = _numba.jit(_compass_loop, _FASTMATH)
    loop(_array(H), _array(f), _array(pair_centre), _array(context), _array(step)[:, 0])
