r"""The complex-order FastText pooling of :mod:`qpnlp.nn.position_mean` as compiled loops (numba), on CPU.

:func:`~qpnlp.nn.position_mean.complex_order_mean` pools the complex-order embeddings of ``ids`` (B, L) over
the words: with the positions :math:`p = (b, l)`, n = B L of them, :math:`j = \mathrm{ids}_p`, the real factor
:math:`k_p` (keep mask times word mask, (n, D) or (n, 1)), the positions :math:`\mathrm{pos}_p` and the
(V, D) tables :math:`r, \omega, \theta`,

.. math::

    a_{p,d} = k_{p,d}\, r_{j,d}, \qquad \alpha_{p,d} = \omega_{j,d}\, \mathrm{pos}_p + \theta_{j,d}, \qquad
    \bar z_{b,d} = c_b \sum_l a_{p,d} (\cos\alpha_{p,d} + i \sin\alpha_{p,d}),

and for the [Re, Im] gradient :math:`\tilde G_{b,d} = c_b G_{b,d}` (B, D, 2) of the pooled :math:`\bar z`, per
distinct id :math:`u` (U of them, sorted; ``inverse`` (n,) the index of each position's id among them),

.. math::

    \partial r_u = \sum_{j_p = u} k_p (\Re\tilde G_b \cos\alpha_p + \Im\tilde G_b \sin\alpha_p), \quad
    \partial\theta_u = \sum_{j_p = u} a_p (\Im\tilde G_b \cos\alpha_p - \Re\tilde G_b \sin\alpha_p), \quad
    \partial\omega_u = \sum_{j_p = u} \mathrm{pos}_p\, a_p (\Im\tilde G_b \cos\alpha_p - \Re\tilde G_b \sin\alpha_p).

In torch ops (the fallback in :mod:`~qpnlp.nn.position_mean`) each product and sum is a pass over an (n, D)
temporary, and the gradients go through one more per table before ``index_add_``; at FastText's sizes
(n about 1000, D = 50) that is mostly operator overhead. Here :func:`forward` and :func:`row_gradients` run
three loops:

* ``_angles_loop``: the angles :math:`\alpha` (n, D), each position's rows gathered once (none without
  frequency and phase tables: the angle is 0);
* ``_pool_loop``: after the cosines and sines of the angles (``qpnlp._trig``, one compiled loop for both;
  numba's ``math.cos`` inside this loop would call scalar libm per element, about 5x slower), :math:`a` (n, D)
  and :math:`\bar z` (B, D, 2), the factor :math:`c_b` applied to the sums;
* ``_gradient_loop``: one pass over the positions adding each one's gradient rows straight into the (U, D)
  sums of the tables that need one (nothing (n, D) is allocated).

Every value is computed operation for operation as the torch ops do (no fast-math: no reassociation or
contraction), so the results equal theirs to float rounding (only the sums over words and ids may run in
another order); NaN and infinity propagate as there (masked positions are multiplied by 0, not skipped).
The loops do not check their indices: :func:`forward` checks the ids against every table and
:func:`row_gradients` the distinct ids (``qpnlp._numba.check_rows``), and both the shapes, before a loop
runs.

numba is optional (``pip install "qpnlp[fast]"``): without it, for tensors the loops do not take
(:func:`accepts`), or with ``QPNLP_ORDER_MEAN_COMPILED=0`` (or ``QPNLP_COMPILED=0``), the pooling uses
torch ops.
"""

from __future__ import annotations

import numpy as np
import torch

from qpnlp import _numba
from qpnlp._trig import cos_sin

__all__ = ["available", "accepts", "forward", "row_gradients"]


def available() -> bool:
    """Whether the compiled loops can run: numba is installed and ``QPNLP_ORDER_MEAN_COMPILED`` is not ``0``."""
    return _numba.enabled("QPNLP_ORDER_MEAN_COMPILED")


def accepts(ids: torch.Tensor, keep: torch.Tensor, scale: torch.Tensor, positions: torch.Tensor | None,
            *tables: torch.Tensor | None) -> bool:
    r"""Whether the loops take these: :func:`available`, (B, L) int64 ``ids``, the float tensors (``keep``
    (B, L, D) or (B, L, 1), ``scale`` (B, 1), ``positions`` (B, L), the (V, D) tables) on the CPU, of one
    dtype, contiguous, with matching shapes. Otherwise the torch ops run (and raise their own errors).

    Parameters
    ----------
    ids : torch.Tensor
        Word ids (B, L), the rows of the tables.
    keep : torch.Tensor
        Real factor :math:`k` (B, L, D), or (B, L, 1) without dropout: keep mask times word mask.
    scale : torch.Tensor
        Real (B, 1): :math:`c_b`, one over (words of the sentence times (1 - p)).
    positions : torch.Tensor or None
        Real (B, L) positions :math:`\mathrm{pos}_p`; None when there is no frequency table.
    *tables : torch.Tensor or None
        :math:`r, \omega, \theta` (V, D) as :func:`forward` takes them (None for an absent table).
    """
    present = [t for t in tables if t is not None]
    if not (available() and ids.dim() == 2 and ids.dtype == torch.int64 and ids.device.type == "cpu" and present
            and ids.is_contiguous()):
        return False
    return _numba.takes(keep, scale, *present, *([] if positions is None else [positions])) and _shapes_match(
        ids, keep, scale, positions, *tables)


def _shapes_match(ids, keep, scale, positions, amplitude, frequency, phase) -> bool:
    (batch, length), width = ids.shape, amplitude.shape[-1]
    return (all(t is None or (t.dim() == 2 and t.shape[1] == width) for t in (amplitude, frequency, phase))
            and keep.dim() == 3 and keep.shape[:2] == (batch, length) and keep.shape[2] in (1, width)
            and scale.shape == (batch, 1) and (positions.shape == (batch, length) if positions is not None
                                               else frequency is None))


def _angles_loop(ids, positions, frequency, phase, with_frequency, with_phase, angle):  # pragma: no cover
    length = ids.shape[1]
    for b in range(ids.shape[0]):
        for l in range(length):
            j, out = ids[b, l], angle[b * length + l]
            if not with_frequency:
                theta = phase[j]
                for d in range(out.shape[0]):
                    out[d] = theta[d]
                continue
            pos, w = positions[b, l], frequency[j]
            if with_phase:
                theta = phase[j]
                for d in range(out.shape[0]):
                    out[d] = w[d] * pos + theta[d]
            else:
                for d in range(out.shape[0]):
                    out[d] = w[d] * pos


def _pool_loop(ids, keep, scale, amplitude, cos, sin, a, pooled):  # pragma: no cover - compiled
    length, width = ids.shape[1], a.shape[1]
    step = 1 if keep.shape[1] == width else 0         # keep (n, D), or (n, 1) without dropout (the word mask)
    re, im = np.empty(width, a.dtype), np.empty(width, a.dtype)
    for b in range(ids.shape[0]):
        re[:] = 0                                     # one sentence's sums, contiguous
        im[:] = 0
        for l in range(length):
            p = b * length + l
            r, k, ap, cp, sp = amplitude[ids[b, l]], keep[p], a[p], cos[p], sin[p]
            for d in range(width):
                x = r[d] * k[d * step]
                ap[d] = x
                re[d] += x * cp[d]
                im[d] += x * sp[d]
        c = scale[b, 0]
        for d in range(width):
            pooled[b, d, 0] = re[d] * c
            pooled[b, d, 1] = im[d] * c


def _gradient_loop(inverse, g, keep, positions, a, cos, sin, needs, g_r, g_omega, g_theta):  # pragma: no cover
    """The tables that need no gradient get (1, D) scratch rows (written, not read): one loop body for all."""
    length, width = inverse.shape[1], a.shape[1]
    step = 1 if keep.shape[1] == width else 0         # keep (n, D), or (n, 1) without dropout
    g_re, g_im = np.empty(width, a.dtype), np.empty(width, a.dtype)
    pos = a.dtype.type(0)
    for b in range(inverse.shape[0]):
        for d in range(width):                        # the sentence's gradient, [Re, Im] deinterleaved
            g_re[d], g_im[d] = g[b, d, 0], g[b, d, 1]
        for l in range(length):
            p, u = b * length + l, inverse[b, l]
            k, ap, cp, sp = keep[p], a[p], cos[p], sin[p]
            o_r, o_omega, o_theta = g_r[u * needs[0]], g_omega[u * needs[1]], g_theta[u * needs[2]]
            if needs[1]:
                pos = positions[b, l]
            for d in range(width):
                o_r[d] += (cp[d] * g_re[d] + sp[d] * g_im[d]) * k[d * step]
                ga = (cp[d] * g_im[d] - sp[d] * g_re[d]) * ap[d]
                o_omega[d] += ga * pos
                o_theta[d] += ga


def forward(ids: torch.Tensor, keep: torch.Tensor, scale: torch.Tensor, positions: torch.Tensor | None,
            amplitude: torch.Tensor, frequency: torch.Tensor | None, phase: torch.Tensor | None):
    r"""The pooled [Re, Im] :math:`\bar z` (B, D, 2) and what the backward reads: :math:`a`, :math:`\cos\alpha`,
    :math:`\sin\alpha` (n, D).

    Tensors as :func:`accepts` takes them (``frequency`` None: :math:`\alpha = \theta`, ``positions`` not read;
    ``phase`` None: :math:`\theta = 0`; both None: :math:`\alpha = 0`). The ids are checked against every table
    (``IndexError``), the shapes against each other (``ValueError``) before a loop runs.

    Parameters
    ----------
    ids, keep, scale, positions
        As in :func:`accepts`: int64 (B, L), real (B, L, D) or (B, L, 1), real (B, 1), real (B, L) or None.
    amplitude : torch.Tensor
        The amplitude table :math:`r` (V, D).
    frequency, phase : torch.Tensor or None
        The tables :math:`\omega` and :math:`\theta` (V, D); None as above.
    """
    if not _shapes_match(ids, keep, scale, positions, amplitude, frequency, phase):
        shapes = [None if t is None else tuple(t.shape) for t in (positions, amplitude, frequency, phase)]
        raise ValueError(f"shapes do not match: ids {tuple(ids.shape)}, keep {tuple(keep.shape)}, scale "
                         f"{tuple(scale.shape)}, positions and tables {shapes}")
    tables = [t.detach().numpy() for t in (amplitude, frequency, phase) if t is not None]
    _numba.check_rows(ids, min(t.shape[0] for t in tables), "word")
    (batch, length), width = ids.shape, amplitude.shape[1]
    n = batch * length
    if frequency is None and phase is None:
        cos, sin = amplitude.new_ones(n, width), amplitude.new_zeros(n, width)     # no angle: 0
    else:
        angle, empty = amplitude.new_empty(n, width), amplitude.new_empty(0, 0).numpy()
        _numba.jit(_angles_loop)(ids.numpy(), empty if frequency is None else positions.numpy(),
                                 empty if frequency is None else tables[1], empty if phase is None else tables[-1],
                                 frequency is not None, phase is not None, angle.numpy())
        cos, sin = cos_sin(angle)
    a, pooled = amplitude.new_empty(n, width), amplitude.new_empty(batch, width, 2)
    _numba.jit(_pool_loop)(ids.numpy(), keep.reshape(n, keep.shape[-1]).numpy(), scale.numpy(), tables[0],
                           cos.numpy(), sin.numpy(), a.numpy(), pooled.numpy())
    return pooled, a, cos, sin


def row_gradients(inverse: torch.Tensor, rows: int, g: torch.Tensor, keep: torch.Tensor,
                  positions: torch.Tensor | None, a: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                  needs: tuple[bool, bool, bool]) -> list[torch.Tensor | None]:
    r"""The (U, D) sums per distinct id of :math:`\partial r`, :math:`\partial\omega`, :math:`\partial\theta`
    (None where ``needs`` says no) from the scaled [Re, Im] gradient ``g`` (B, D, 2) of the pooled rows.

    Parameters
    ----------
    inverse : torch.Tensor
        int64 (B, L): each position's index among the distinct ids (checked to lie in ``[0, rows)``).
    rows : int
        U, the number of distinct ids: the rows of each sum.
    g : torch.Tensor
        The scaled gradient :math:`\tilde G` (B, D, 2) of the pooled :math:`\bar z`.
    keep, positions : torch.Tensor
        As :func:`forward` had them ((B, L, D) or (B, L, 1); (B, L), only read for :math:`\partial\omega`).
    a, cos, sin : torch.Tensor
        :math:`a`, :math:`\cos\alpha`, :math:`\sin\alpha` (n, D) from :func:`forward`.
    needs : tuple of bool
        Whether :math:`r`, :math:`\omega`, :math:`\theta` need a gradient, in that order.
    """
    batch, length = inverse.shape
    n, width = inverse.numel(), a.shape[-1]
    shapes = (g.shape == (batch, width, 2) and a.shape == cos.shape == sin.shape == (n, width)
              and keep.shape[-1] in (1, width) and keep.numel() == n * keep.shape[-1]
              and (not needs[1] or (positions is not None and positions.shape == (batch, length))))
    if not shapes:
        raise ValueError(f"shapes do not match: inverse {tuple(inverse.shape)}, g {tuple(g.shape)}, "
                         f"a {tuple(a.shape)}, keep {tuple(keep.shape)}")
    _numba.check_rows(inverse, rows, "distinct")
    sums = [a.new_zeros(rows if need else 1, width) for need in needs]
    _numba.jit(_gradient_loop)(inverse.numpy(), g.numpy(), keep.reshape(n, keep.shape[-1]).numpy(),
                               (positions if needs[1] else a.new_empty(0, 0)).numpy(), a.numpy(), cos.numpy(),
                               sin.numpy(), np.array(needs, dtype=np.int64), *(s.numpy() for s in sums))
    return [s if need else None for s, need in zip(sums, needs)]
