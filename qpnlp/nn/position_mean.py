r"""The complex-order embedding, its dropout and the masked mean over words as one autograd function (FastText).

The complex-order FastText classifier pools the embeddings straight after the embedding and its dropout:

.. math::

    \bar z_{b,d} = \frac{1}{(1 - p)\, n_b} \sum_{l:\, m_{b,l}} k_{b,l,d}\;
        r_{j,d}\, e^{i(\omega_{j,d}\, \mathrm{pos}_{b,l} + \theta_{j,d})}, \qquad j = \mathrm{ids}_{b,l},

with the word mask :math:`m` (B, L), :math:`n_b = \max(1, \sum_l m_{b,l})`, and the dropout's keep mask
:math:`k \in \{0, 1\}` (B, L, D) (all ones without dropout). The graph of the three steps
(:meth:`~qpnlp.nn.position.ComplexOrderEmbedding.forward`, :func:`~qpnlp.nn.functional.complex_dropout`,
:func:`~qpnlp.nn.functional.masked_mean`) writes the (B, L, D) complex embeddings, their dropped copy and their
masked copy, and each one's gradient, and two tables' lookups give uncoalesced sparse gradients, which the optimiser
sorts once per table. :func:`complex_order_mean` keeps everything per position real, (n, D) with n = B L, and
never builds a complex (B, L, D) tensor: with :math:`a = k\, m\, r` and :math:`\alpha = \omega\, \mathrm{pos} +
\theta`, the forward is :math:`\bar z = c_b \sum_l a (\cos\alpha + i \sin\alpha)` with :math:`c_b = 1 / ((1 - p)
n_b)`, and for the pooled gradient :math:`G` (B, D), :math:`\tilde G = c_b G`,

.. math::

    \partial_r = k\, m\, (\Re\tilde G \cos\alpha + \Im\tilde G \sin\alpha), \qquad
    \partial_\alpha = a\, (\Im\tilde G \cos\alpha - \Re\tilde G \sin\alpha), \qquad
    \partial_\omega = \mathrm{pos}\; \partial_\alpha, \qquad \partial_\theta = \partial_\alpha,

summed per distinct id (one set of distinct ids shared by the tables) into coalesced table gradients
(``qpnlp.nn.embedding._table_gradient``), which the row-sparse optimisers take without a sort. The values equal
the three steps' to float rounding (the factor :math:`c_b` is applied to the sums, not to each term; tested), the
keep mask is drawn by the same call as :func:`~qpnlp.nn.functional.complex_dropout` (the same random numbers), and
the tables' gradients hold the same rows (every id of the batch, masked positions included, the padding row left
out), so training follows the same path to float rounding. With numba (the extra ``fast``), on the CPU, with a bool
mask, the forward (:math:`k\, m` and :math:`c_b` included) runs as one compiled loop and the backward as two (the
distinct ids but the padding one, then the sums) of :mod:`qpnlp.nn.order_mean_loop` (the same values to float
rounding; ``QPNLP_ORDER_MEAN_COMPILED=0`` keeps the torch ops).
"""

from __future__ import annotations

import torch
from torch import Tensor
from qpnlp._trig import cos_sin
from qpnlp.hilbert._operands import first_order_backward

from . import order_mean_loop
from .embedding import FUSED_HINT, FUSED_ROUTES, _table_gradient

__all__ = ["complex_order_mean"]


class _OrderMean(torch.autograd.Function):
    r"""The pooled :math:`\bar z` (B, D) of the module docstring from the tables' rows; coalesced table gradients.

    ``mask`` is the (B, L) word mask :math:`m`, ``keep`` the real (B, L, D) keep mask :math:`k` (0 or 1;
    overwritten with :math:`k\, m`) or None, ``p`` the drop probability, ``positions`` (B, L) real or None
    (complex-vanilla), ``frequency`` and ``phase`` tables or None.
    """

    @staticmethod
    def forward(ctx, ids, mask, keep, p, positions, amplitude, frequency, phase, options):
        ctx.tables = (amplitude.shape, None if frequency is None else frequency.shape,
                      None if phase is None else phase.shape)
        ctx.options = options
        ids, positions = ids.contiguous(), None if positions is None else positions.contiguous()
        ctx.compiled = order_mean_loop.accepts(ids, mask, keep, positions, amplitude, frequency, phase)
        if ctx.compiled:                                # one loop of qpnlp.nn.order_mean_loop (numba)
            pooled, scale, a, cos, sin = order_mean_loop.forward(ids, mask, keep, p, positions, amplitude,
                                                                 frequency, phase)
            ctx.save_for_backward(ids, mask, keep, scale, positions, a, cos, sin, amplitude, frequency, phase)
            return torch.view_as_complex(pooled)
        batch, length = ids.shape
        m = mask.unsqueeze(-1).to(amplitude.dtype)
        keep = m if keep is None else keep.mul_(m)                                   # k m, (B, L, D) or (B, L, 1)
        scale = 1 / (m.sum(-2).clamp_min(1) * (1 - p))                              # c_b, (B, 1)
        flat = ids.reshape(-1)
        keep = keep.reshape(flat.numel(), keep.shape[-1])     # widths explicit: n = 0 leaves -1 undetermined
        # the rows of every position directly (one gather per table); the distinct ids only for the backward
        a = amplitude.index_select(0, flat).mul_(keep)                              # (n, D): k m r
        shape = (batch, length, a.shape[-1])
        angle = None
        if frequency is not None:
            angle = frequency.index_select(0, flat).mul_(positions.reshape(-1, 1))
        if phase is not None:
            theta = phase.index_select(0, flat)
            angle = theta if angle is None else angle.add_(theta)
        cos, sin = cos_sin(a.new_zeros(a.shape) if angle is None else angle)
        pooled = torch.stack(((a * cos).view(shape).sum(1), (a * sin).view(shape).sum(1)), -1)
        ctx.save_for_backward(ids, mask, keep, scale, positions, a, cos, sin, amplitude, frequency, phase)
        return torch.view_as_complex(pooled.mul_(scale.unsqueeze(-1)))

    @staticmethod
    @first_order_backward("the fused complex-order mean (ComplexOrderEmbedding.dropped_mean)", FUSED_HINT,
                          FUSED_ROUTES)
    def backward(ctx, grad):
        padding_idx, sparse = ctx.options
        if ctx.compiled:
            return None, None, None, None, None, *_OrderMean._compiled_backward(ctx, grad, padding_idx, sparse), None
        ids, mask, keep, scale, positions, a, cos, sin = ctx.saved_tensors[:8]
        need_r, need_omega, need_theta = ctx.needs_input_grad[5:8]
        amplitude_shape, frequency_shape, phase_shape = ctx.tables
        batch, length = ids.shape
        g = torch.view_as_real(grad.resolve_conj() * scale)                        # (B, D, 2): c_b G
        rows, inverse = torch.unique(ids.reshape(-1), sorted=True, return_inverse=True)
        # contiguous parts: a product broadcast from a strided (B, 1, D) operand took 3.5x as long
        g_re, g_im = (g[..., i].contiguous().unsqueeze(1) for i in (0, 1))         # (B, 1, D)
        shape = (batch, length, cos.shape[-1])
        cos, sin = cos.view(shape), sin.view(shape)

        def table(values, table_shape):                     # (n, D) per position -> coalesced (V, D) gradient
            summed = values.new_zeros(rows.numel(), values.shape[-1]).index_add_(0, inverse, values)
            return _table_gradient(summed, rows, table_shape, padding_idx, sparse)

        g_amplitude = g_frequency = g_phase = None
        if need_r:
            g_r = (cos * g_re).add_(sin * g_im).view(-1, shape[-1]).mul_(keep)
            g_amplitude = table(g_r, amplitude_shape)
        if need_omega or need_theta:
            g_angle = (cos * g_im).sub_(sin * g_re).view(-1, shape[-1]).mul_(a)
            if need_omega:
                g_frequency = table(g_angle * positions.reshape(-1, 1), frequency_shape)
            if need_theta:
                g_phase = table(g_angle, phase_shape)
        return None, None, None, None, None, g_amplitude, g_frequency, g_phase, None

    @staticmethod
    def _compiled_backward(ctx, grad, padding_idx, sparse):
        """The three tables' gradients (None where none is needed) by the loops of :mod:`~qpnlp.nn.order_mean_loop`:
        the distinct ids but the padding one (a sparse set, no sort of the ids), then one pass over the positions
        into their (U + 1, D) sums (row U: the padding id's, dropped)."""
        ids, mask, keep, scale, positions, a, cos, sin = ctx.saved_tensors[:8]
        rows, inverse = order_mean_loop.distinct_ids(ids, min(s[0] for s in ctx.tables if s is not None),
                                                     padding_idx)
        sums = order_mean_loop.row_gradients(inverse, rows.numel() + 1, torch.view_as_real(grad.resolve_conj())
                                             .contiguous(), scale, keep, mask, positions, a, cos, sin,
                                             ctx.needs_input_grad[5:8])
        # the padding row is left out of rows already: _table_gradient need not look for it
        return (None if s is None else _table_gradient(s[:-1], rows, table_shape, None, sparse)
                for s, table_shape in zip(sums, ctx.tables))


def complex_order_mean(ids: Tensor, mask: Tensor, positions: Tensor | None, amplitude: Tensor,
                       frequency: Tensor | None, phase: Tensor | None, *, keep: Tensor | None = None,
                       p: float = 0.0, padding_idx: int | None = None, sparse: bool = True) -> Tensor:
    r"""Masked mean over words of the dropped-out complex-order embeddings, :math:`\bar z` (module docstring).

    Parameters
    ----------
    ids : LongTensor, shape (B, L)
        Rows of the tables (valid ids; not checked here).
    mask : BoolTensor, shape (B, L)
        True at the words that count.
    positions : Tensor or None, real, shape (B, L)
        Required with ``frequency``.
    amplitude, frequency, phase : Tensor, real, shape (V, D)
        The tables :math:`r`, :math:`\omega` (None: no position term) and :math:`\theta` (None: zero).
    keep : Tensor, real, shape (B, L, D), optional
        The dropout's keep mask :math:`k`, 1 or 0 (:func:`~qpnlp.nn.functional.dropout_keep`; overwritten with
        :math:`k\, m`); None: no dropout.
    p : float
        The drop probability ``keep`` was drawn with: the mean is scaled by :math:`1 / (1 - p)` (default 0).
    padding_idx : int, optional
        Row left out of the tables' gradients (as ``nn.Embedding``'s).
    sparse : bool
        Sparse COO table gradients (coalesced), else dense.

    Returns
    -------
    Tensor, complex, shape (B, D)
        The same as ``masked_mean(complex_dropout(z, p), mask)`` for the embeddings ``z`` (B, L, D) and the
        dropout drawing ``keep``, to float rounding; zero for a row without a word.
    """
    if frequency is not None and positions is None:
        raise ValueError("positions are required when frequencies are given")
    return _OrderMean.apply(ids, mask, keep, p, None if positions is None else positions.to(amplitude.dtype),
                            amplitude, frequency, phase, (padding_idx, sparse))
