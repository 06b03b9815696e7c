r"""The complex-order FastText pooling of :mod:`qpnlp.nn.position_mean` as compiled loops (numba), on CPU.

:func:`~qpnlp.nn.position_mean.complex_order_mean` pools the complex-order embeddings of ``ids`` (B, L) over
the words: with the positions :math:`p = (b, l)`, n = B L of them, :math:`j = \mathrm{ids}_p`, the word mask
:math:`m_p`, the dropout's keep mask :math:`k_p` (D,) (all ones without dropout), the positions
:math:`\mathrm{pos}_p` and the (V, D) tables :math:`r, \omega, \theta`,

.. math::

    a_{p,d} = k_{p,d}\, m_p\, r_{j,d}, \qquad \alpha_{p,d} = \omega_{j,d}\, \mathrm{pos}_p + \theta_{j,d}, \qquad
    \bar z_{b,d} = c_b \sum_l a_{p,d} (\cos\alpha_{p,d} + i \sin\alpha_{p,d}), \qquad
    c_b = \frac{1}{(1 - p_{\mathrm{drop}}) \max(1, \sum_l m_{b,l})},

and for the gradient :math:`G` (B, D) of :math:`\bar z`, :math:`\tilde G_b = c_b G_b`, per distinct id :math:`u`
(U of them, sorted; ``inverse`` (B, L) the index of each position's id among them),

.. math::

    \partial r_u = \sum_{j_p = u} k_p m_p (\Re\tilde G_b \cos\alpha_p + \Im\tilde G_b \sin\alpha_p), \quad
    \partial\theta_u = \sum_{j_p = u} a_p (\Im\tilde G_b \cos\alpha_p - \Re\tilde G_b \sin\alpha_p), \quad
    \partial\omega_u = \sum_{j_p = u} \mathrm{pos}_p\, a_p (\Im\tilde G_b \cos\alpha_p - \Re\tilde G_b \sin\alpha_p).

In torch ops (the fallback in :mod:`~qpnlp.nn.position_mean`) each product and sum is a pass over an (n, D)
temporary; at FastText's sizes (n about 1000, D = 50) that is mostly operator overhead. Here three loops:

* :func:`forward` (``_forward_loop``): one pass over the positions, each one's rows gathered once: the angles
  of a position into a (D,) scratch row, their cosines and sines (``qpnlp._elementary.sincos``, the polynomial
  of ``qpnlp._trig``, called per position from the loop; libm for float64 or with ``QPNLP_TRIG_COMPILED=0``),
  :math:`k\, m` (written into ``keep``, as the torch ops overwrite it), :math:`a`, the word counts, :math:`c_b`
  and :math:`\bar z`;
* :func:`distinct_ids` (``_distinct_loop``): the sorted distinct ids and ``inverse``, without sorting the n
  ids (a sparse set over a (V,) scratch that is never cleared: only the U ids are sorted), the padding row left
  out;
* :func:`row_gradients` (``_gradient_loop``): one pass over the positions adding each one's gradient rows
  straight into the (U, D) sums of the tables that need one (nothing (n, D) is allocated).

Every value is computed operation for operation as the torch ops do (no fast-math: no reassociation or
contraction), so the results equal theirs to float rounding (only the sums over words and ids may run in
another order); NaN and infinity propagate as there (masked positions are multiplied by 0, not skipped).
The loops check each index before they read with it and stop at the first one out of range; the callers then
raise ``IndexError`` (``qpnlp._numba.check_rows``'s message), and nothing they return is used.

numba is optional (``pip install "qpnlp[fast]"``): without it, for tensors the loops do not take
(:func:`accepts`), or with ``QPNLP_ORDER_MEAN_COMPILED=0`` (or ``QPNLP_COMPILED=0``), the pooling uses
torch ops.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from qpnlp import _numba
from qpnlp._elementary import sincos as _sincos  # rebound to its compiled version by _forward_kernel

__all__ = ["available", "accepts", "forward", "distinct_ids", "row_gradients"]


def available() -> bool:
    """Whether the compiled loops can run: numba is installed and ``QPNLP_ORDER_MEAN_COMPILED`` is not ``0``."""
    return _numba.enabled("QPNLP_ORDER_MEAN_COMPILED")


def accepts(ids: torch.Tensor, mask: torch.Tensor, keep: torch.Tensor | None, positions: torch.Tensor | None,
            *tables: torch.Tensor | None) -> bool:
    r"""Whether the loops take these: :func:`available`, (B, L) int64 ``ids`` and bool ``mask``, the float
    tensors (``keep`` (B, L, D), ``positions`` (B, L), the (V, D) tables) on the CPU, of one dtype, contiguous,
    with matching shapes. Otherwise the torch ops run (and raise their own errors).

    Parameters
    ----------
    ids : torch.Tensor
        Word ids (B, L), the rows of the tables.
    mask : torch.Tensor
        Bool (B, L): the words that count, :math:`m`.
    keep : torch.Tensor or None
        Real (B, L, D): the dropout's keep mask :math:`k`; None without dropout.
    positions : torch.Tensor or None
        Real (B, L) positions :math:`\mathrm{pos}_p`; None when there is no frequency table.
    *tables : torch.Tensor or None
        :math:`r, \omega, \theta` (V, D) as :func:`forward` takes them (None for an absent table).
    """
    floats = [t for t in (*tables, keep, positions) if t is not None]
    return (ids.dtype == torch.int64 and mask.dtype == torch.bool and ids.device.type == mask.device.type == "cpu"
            and ids.is_contiguous() and mask.is_contiguous() and _numba.takes(*floats)
            and _shapes_match(ids, mask, keep, positions, *tables) and available())


def _shapes_match(ids, mask, keep, positions, amplitude, frequency, phase) -> bool:
    if ids.dim() != 2 or amplitude is None:
        return False
    (batch, length), width = ids.shape, amplitude.shape[-1]
    return (all(t is None or (t.dim() == 2 and t.shape[1] == width) for t in (amplitude, frequency, phase))
            and mask.shape == ids.shape and (keep is None or keep.shape == (batch, length, width))
            and (positions.shape == ids.shape if positions is not None else frequency is None))


def _forward_loop(ids, mask, positions, keep, amplitude, frequency, phase, bound, survive, fast, with_keep,
                  with_frequency, with_phase, angle, a, cos, sin, scale, pooled):  # pragma: no cover - compiled
    """False where an id lies outside ``[0, bound)`` (nothing computed), else True after four passes over the
    positions: :math:`k m` and :math:`a`; the angles (into the scratch ``angle``); their cosines and sines, one
    call for all; the pooled sums. Each branch on the layout chooses a whole pass: branches inside the passes
    (per sentence or per position) kept LLVM from vectorising them (1.6x the time)."""
    (batch, length), width = ids.shape, a.shape[1]
    t = a.dtype.type
    for b in range(batch):
        for l in range(length):
            if ids[b, l] < 0 or ids[b, l] >= bound:
                return False
    for b in range(batch):                            # a = k m r, k m written back as the torch ops write it
        for l in range(length):
            p, r, m = b * length + l, amplitude[ids[b, l]], t(1) if mask[b, l] else t(0)
            ap = a[p]
            if with_keep:
                k = keep[p]
                for d in range(width):
                    k[d] = k[d] * m
                    ap[d] = r[d] * k[d]
            else:
                for d in range(width):
                    ap[d] = r[d] * m
    if with_frequency:
        for b in range(batch):
            for l in range(length):
                j, out, pos = ids[b, l], angle[b * length + l], positions[b, l]
                w = frequency[j]
                if with_phase:
                    theta = phase[j]
                    for d in range(width):
                        out[d] = w[d] * pos + theta[d]
                else:
                    for d in range(width):
                        out[d] = w[d] * pos
    elif with_phase:
        for b in range(batch):
            for l in range(length):
                angle[b * length + l, :] = phase[ids[b, l]]
    if with_frequency or with_phase:
        _sincos(angle.reshape(-1), sin.reshape(-1), cos.reshape(-1), fast)
    else:                                             # no angle: 0
        cos[:] = 1
        sin[:] = 0
    re, im = np.empty(width, a.dtype), np.empty(width, a.dtype)
    for b in range(batch):
        re[:] = 0                                     # one sentence's sums, contiguous
        im[:] = 0
        words = 0
        for l in range(length):
            p = b * length + l
            words += 1 if mask[b, l] else 0
            ap, cp, sp = a[p], cos[p], sin[p]
            for d in range(width):
                re[d] += ap[d] * cp[d]
                im[d] += ap[d] * sp[d]
        c = t(1) / (t(max(words, 1)) * survive)
        scale[b, 0] = c
        for d in range(width):
            pooled[b, d, 0] = re[d] * c
            pooled[b, d, 1] = im[d] * c
    return True


@functools.cache
def _forward_kernel():
    """``_forward_loop`` compiled (on first use; cached on disk), ``_sincos`` bound to its compiled version first
    (``qpnlp._numba.jit_calling``)."""
    from qpnlp import _elementary

    return _numba.jit_calling(_forward_loop, {"_sincos": _numba.jit(_elementary.sincos)})


def _distinct_loop(ids, padding, mark, rows, inverse):  # pragma: no cover - compiled
    """The U distinct ids but ``padding`` into ``rows[:U]``, sorted; each position's index among them into
    ``inverse`` (U for the padding id). ``mark`` (V,) need not be cleared: an entry counts only where ``rows``
    points back to its id (a sparse set). -1 at the first id outside ``[0, V)``, else U."""
    count = 0
    for p in range(ids.shape[0]):
        j = ids[p]
        if j < 0 or j >= mark.shape[0]:
            return -1
        u = mark[j]
        if j != padding and not (0 <= u < count and rows[u] == j):
            mark[j] = count
            rows[count] = j
            count += 1
    rows[:count].sort()
    for u in range(count):
        mark[rows[u]] = u
    for p in range(ids.shape[0]):
        inverse[p] = count if ids[p] == padding else mark[ids[p]]
    return count


def _gradient_loop(inverse, rows, g, scale, keep, mask, positions, a, cos, sin, with_keep, needs, g_r, g_omega,
                   g_theta):  # pragma: no cover - compiled
    """The tables that need no gradient get (1, D) scratch rows (written, not read): one loop body for all.
    False at the first index outside ``[0, rows)``, else True."""
    length, width = inverse.shape[1], a.shape[1]
    t = a.dtype.type
    g_re, g_im = np.empty(width, a.dtype), np.empty(width, a.dtype)
    pos = t(0)
    for b in range(inverse.shape[0]):
        c = scale[b, 0]
        for d in range(width):                        # the sentence's gradient times c_b, [Re, Im] deinterleaved
            g_re[d], g_im[d] = g[b, d, 0] * c, g[b, d, 1] * c
        for l in range(length):
            p, u = b * length + l, inverse[b, l]
            if u < 0 or u >= rows:
                return False
            m = t(1) if mask[b, l] else t(0)
            ap, cp, sp = a[p], cos[p], sin[p]
            o_r, o_omega, o_theta = g_r[u * needs[0]], g_omega[u * needs[1]], g_theta[u * needs[2]]
            if needs[1]:
                pos = positions[b, l]
            if with_keep:
                k = keep[p]
                for d in range(width):
                    o_r[d] += (cp[d] * g_re[d] + sp[d] * g_im[d]) * k[d]
            else:
                for d in range(width):
                    o_r[d] += (cp[d] * g_re[d] + sp[d] * g_im[d]) * m
            for d in range(width):
                ga = (cp[d] * g_im[d] - sp[d] * g_re[d]) * ap[d]
                o_omega[d] += ga * pos
                o_theta[d] += ga
    return True


def forward(ids: torch.Tensor, mask: torch.Tensor, keep: torch.Tensor | None, p: float,
            positions: torch.Tensor | None, amplitude: torch.Tensor, frequency: torch.Tensor | None,
            phase: torch.Tensor | None):
    r"""The pooled [Re, Im] :math:`\bar z` (B, D, 2), the scale :math:`c_b` (B, 1) and what the backward reads:
    :math:`a`, :math:`\cos\alpha`, :math:`\sin\alpha` (n, D); ``keep`` overwritten with :math:`k\, m`.

    Tensors as :func:`accepts` takes them (``frequency`` None: :math:`\alpha = \theta`, ``positions`` not read;
    ``phase`` None: :math:`\theta = 0`; both None: :math:`\alpha = 0`). The shapes are checked against each other
    (``ValueError``) before the loop runs, the ids against every table (``IndexError``) as it runs.

    Parameters
    ----------
    ids, mask, keep, positions
        As in :func:`accepts`: int64 (B, L), bool (B, L), real (B, L, D) or None, real (B, L) or None.
    p : float
        The drop probability ``keep`` was drawn with (the factor :math:`1 / (1 - p)` of :math:`c_b`).
    amplitude : torch.Tensor
        The amplitude table :math:`r` (V, D).
    frequency, phase : torch.Tensor or None
        The tables :math:`\omega` and :math:`\theta` (V, D); None as above.
    """
    tables = (amplitude, frequency, phase)
    if not _shapes_match(ids, mask, keep, positions, *tables):
        shapes = [None if t is None else tuple(t.shape) for t in (keep, positions, *tables)]
        raise ValueError(f"shapes do not match: ids {tuple(ids.shape)}, mask {tuple(mask.shape)}, keep, positions "
                         f"and tables {shapes}")
    (batch, length), width = ids.shape, amplitude.shape[1]
    bound = min(t.shape[0] for t in tables if t is not None)
    outputs = [amplitude.new_empty(batch * length, width) for _ in range(3)]        # a, cos, sin
    scale, pooled = amplitude.new_empty(batch, 1), amplitude.new_empty(batch, width, 2)
    a, cos, sin = (t.numpy() for t in outputs[:3])
    empty = np.empty((0, 0), a.dtype)
    fast = amplitude.dtype == torch.float32 and _numba.enabled("QPNLP_TRIG_COMPILED")   # else libm
    inside = _forward_kernel()(
        ids.numpy(), mask.numpy(), empty if frequency is None else positions.numpy(),
        empty if keep is None else keep.view(batch * length, width).numpy(),
        *(empty if t is None else t.detach().numpy() for t in tables), bound, _numba.scalar(amplitude, 1 - p),
        fast, keep is not None, frequency is not None, phase is not None, np.empty(a.shape, a.dtype), a, cos, sin,
        scale.numpy(), pooled.numpy())
    if not inside:
        _numba.check_rows(ids, bound, "word")
    return (pooled, scale, *outputs)


def distinct_ids(ids: torch.Tensor, rows: int, padding_idx: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(ids, sorted=True, return_inverse=True)`` without the padding id: the sorted distinct ids
    (U,) but ``padding_idx``, and the ``ids``-shaped index of each position's id among them (U for the padding
    id), for int64 CPU ``ids`` in ``[0, rows)`` (else ``IndexError``).

    One pass over the ids into a sparse set over a (V,) scratch, a sort of the U distinct ids only (torch sorts
    the n ids), a pass writing the index of each position.

    Parameters
    ----------
    ids : torch.Tensor
        int64 ids on the CPU, any shape (e.g. (B, L)), each in ``[0, rows)``.
    rows : int
        The number of table rows V (the size of the scratch).
    padding_idx : int or None
        The id left out of the distinct ids (its positions get the index U); None: none left out.
    """
    flat = ids.reshape(-1)
    found, inverse = torch.empty_like(flat), torch.empty_like(flat)
    count = _numba.jit(_distinct_loop)(flat.numpy(), -1 if padding_idx is None else padding_idx,
                                       np.empty(rows, np.int64), found.numpy(), inverse.numpy())
    if count < 0:
        _numba.check_rows(ids, rows, "word")
    return found[:count], inverse.view(ids.shape)


def row_gradients(inverse: torch.Tensor, rows: int, grad: torch.Tensor, scale: torch.Tensor,
                  keep: torch.Tensor | None, mask: torch.Tensor, positions: torch.Tensor | None, a: torch.Tensor,
                  cos: torch.Tensor, sin: torch.Tensor, needs: tuple[bool, bool, bool]) -> list[torch.Tensor | None]:
    r"""The (U, D) sums per distinct id of :math:`\partial r`, :math:`\partial\omega`, :math:`\partial\theta`
    (None where ``needs`` says no) from the [Re, Im] gradient ``grad`` (B, D, 2) of the pooled rows.

    Parameters
    ----------
    inverse : torch.Tensor
        int64 (B, L): each position's index among the distinct ids (checked to lie in ``[0, rows)``).
    rows : int
        U, the number of distinct ids: the rows of each sum.
    grad : torch.Tensor
        The gradient :math:`G` (B, D, 2) of the pooled :math:`\bar z`.
    scale : torch.Tensor
        :math:`c_b` (B, 1) from :func:`forward`.
    keep, mask, positions : torch.Tensor
        As :func:`forward` had them (``keep`` (B, L, D) after :func:`forward`, :math:`k\, m`, or None; bool (B, L);
        (B, L), only read for :math:`\partial\omega`).
    a, cos, sin : torch.Tensor
        :math:`a`, :math:`\cos\alpha`, :math:`\sin\alpha` (n, D) from :func:`forward`.
    needs : tuple of bool
        Whether :math:`r`, :math:`\omega`, :math:`\theta` need a gradient, in that order.
    """
    (batch, length), width = inverse.shape, a.shape[-1]
    n = batch * length
    shapes = (grad.shape == (batch, width, 2) and a.shape == cos.shape == sin.shape == (n, width)
              and scale.shape == (batch, 1) and mask.shape == inverse.shape
              and (keep is None or keep.shape == (batch, length, width))
              and (not needs[1] or (positions is not None and positions.shape == (batch, length))))
    if not shapes:
        raise ValueError(f"shapes do not match: inverse {tuple(inverse.shape)}, grad {tuple(grad.shape)}, "
                         f"a {tuple(a.shape)}, keep {None if keep is None else tuple(keep.shape)}")
    sums = a.new_zeros(3, rows, width)
    empty = a.new_empty(0, 0).numpy()
    scratch = [s if need else s[:1] for s, need in zip(sums, needs)]
    inside = _numba.jit(_gradient_loop)(
        inverse.numpy(), rows, grad.numpy(), scale.numpy(), empty if keep is None else keep.view(n, width).numpy(),
        mask.numpy(), positions.numpy() if needs[1] else empty, a.numpy(), cos.numpy(), sin.numpy(),
        keep is not None, np.array(needs, dtype=np.int64), *(s.numpy() for s in scratch))
    if not inside:
        _numba.check_rows(inverse, rows, "distinct")
    return [s if need else None for s, need in zip(sums, needs)]
