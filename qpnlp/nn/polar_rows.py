r"""The fused polar lookup's arithmetic as compiled loops (numba), on CPU.

:class:`~qpnlp.nn.embedding.ComplexWordEmbedding` looks up each distinct id
:math:`u` of a batch once: amplitudes :math:`r_u` and phases :math:`\phi_u`
(rows of two ``(V, d)`` tables) give the unit state and the norm

.. math::
    |w_u\rangle_j = \frac{r_{uj}}{s_u} (\cos\phi_{uj} + i \sin\phi_{uj}), \qquad
    n_u = \|r_u\|, \quad s_u = \max(n_u, \text{tiny}),

copied to every position :math:`p` with id :math:`u(p)` (for
:meth:`~qpnlp.nn.ComplexWordEmbedding.distinct_states`, one position per
row: no copy, and nothing to sum in the backward). The backward sums
the gradients :math:`g_p` of the positions per distinct id,
:math:`G_u = \sum_{u(p) = u} g_p`, and applies the chain rule per row:
with :math:`a + ib = e^{-i\phi_{uj}} G_{uj}` and :math:`\hat r = r_u / s_u`,

.. math::
    \frac{\partial L}{\partial r_{uj}} = \frac{a_j - \hat r_j \sum_k a_k \hat r_k}{s_u}
        + r_{uj} \frac{\bar g_{n,u}}{n_u}, \qquad
    \frac{\partial L}{\partial \phi_{uj}} = \hat r_j\, b_j

(:math:`\bar g_{n,u}` the summed gradient of the norms; the radial term only
where :math:`n_u \geq` tiny, the norm term only where :math:`n_u > 0`, as
the torch ops of :mod:`qpnlp.nn.embedding` do). In torch ops every one of
these is a pass over ``(U, d)`` or ``(N, d)`` temporaries (the norm, the
division, the interleaving of [Re, Im], the copy to the positions; the sum
per id, the rotation, the radial sum, ...), half of the QPDN training step at
d=300; torch has no fused kernel for it, so this module writes the two loops
out once: each forward writes every state once, each backward reads every
gradient once. The cosines and sines come from ``qpnlp._trig`` (one
compiled loop; numba's ``math.cos`` here would call scalar libm). Same values as the torch
ops to float rounding (the norms and radial sums are summed in another
order; tested against them and against the autograd graph of ``torch.polar``).

numba is optional (``pip install "qpnlp[fast]"``): without it, for tensors the
loops do not take (:func:`accepts`), or with ``QPNLP_LOOKUP_COMPILED=0``, the
lookup uses torch ops.
"""

from __future__ import annotations

import math

import torch

from qpnlp import _numba

__all__ = ["available", "accepts", "unit_states", "unit_states_backward"]

#: The norms and radial sums are reassociated (vectorised); NaN and infinity semantics are kept.
_FASTMATH = frozenset({"reassoc", "contract"})


def available() -> bool:
    """Whether the compiled loops can run: numba is installed and ``QPNLP_LOOKUP_COMPILED`` is not ``0``."""
    return _numba.enabled("QPNLP_LOOKUP_COMPILED")


def accepts(*tensors: torch.Tensor) -> bool:
    """Whether the loops take these rows: :func:`available`, CPU, one float dtype, contiguous."""
    return available() and _numba.takes(*tensors)


def _forward_loop(r, cos, sin, inverse, tiny, low, unit, norms, scale, states, position_norms):  # pragma: no cover
    zero = tiny - tiny                                # 0 in the tables' dtype: no float64 promotion
    for u in range(r.shape[0]):
        total = zero
        for j in range(r.shape[1]):
            total += r[u, j] * r[u, j]
        n = math.sqrt(total)
        if total < low or total == math.inf:          # squares under- or overflowed: m ||r / m||, m = max |r_j|
            n = _row_norm(r[u], n, zero)
        s = tiny if n < tiny else n                   # clamp_min: NaN stays NaN
        norms[u], scale[u] = n, s
        for j in range(r.shape[1]):
            unit[u, j] = r[u, j] / s
    for p in range(inverse.shape[0]):
        u = inverse[p]
        position_norms[p] = norms[u]
        for j in range(r.shape[1]):
            states[p, j, 0] = cos[u, j] * unit[u, j]
            states[p, j, 1] = sin[u, j] * unit[u, j]


def _rescaled_norm(row, n, zero):  # pragma: no cover - compiled
    """``||row||`` without squaring its entries (``n``, the sum of squares' root, where an entry is infinite)."""
    m = zero
    for j in range(row.shape[0]):
        m = max(m, abs(row[j]))
    if not (zero < m < math.inf):                     # a zero row, or an infinite (NaN) entry: as summed
        return n
    total = zero
    for j in range(row.shape[0]):
        total += (row[j] / m) * (row[j] / m)
    return m * math.sqrt(total)


_row_norm = _rescaled_norm      # what _forward_loop calls: rebound to the compiled version by unit_states


def _sum_per_row_loop(g, g_norms, with_norms, inverse, summed, summed_norms):  # pragma: no cover - compiled
    for p in range(inverse.shape[0]):                 # the gradients of repeated ids, summed per id
        u = inverse[p]
        for j in range(g.shape[1]):
            summed[u, j, 0] += g[p, j, 0]
            summed[u, j, 1] += g[p, j, 1]
        if with_norms:
            summed_norms[u] += g_norms[p]


def _backward_loop(summed, summed_norms, with_norms, r, unit, cos, sin, norms, scale, tiny, polar_sign,
                   g_r, g_phi):  # pragma: no cover - compiled
    zero, one = tiny - tiny, tiny / tiny              # 0 and 1 in the tables' dtype: no float64 promotion
    dim = r.shape[1]
    for u in range(r.shape[0]):
        radial = zero
        for j in range(dim):                          # conj(e^{i phi}) G = a + ib
            a = summed[u, j, 0] * cos[u, j] + summed[u, j, 1] * sin[u, j]
            b = summed[u, j, 1] * cos[u, j] - summed[u, j, 0] * sin[u, j]
            if polar_sign:                            # torch.polar's modulus gradient: a sgn(r), sgn(NaN) = NaN
                a = a * (one if unit[u, j] > zero else (-one if unit[u, j] < zero else unit[u, j] * zero))
            g_r[u, j] = a
            g_phi[u, j] = unit[u, j] * b
            radial += a * unit[u, j]
        if not norms[u] >= tiny:                      # the clamp passes no gradient to the norm
            radial = radial * zero
        normal = norms[u] >= tiny                     # r / ||r||; below tiny as unit (scale / norm): no overflow
        through_norm = zero
        if with_norms and norms[u] != zero:
            through_norm = summed_norms[u] / norms[u] if normal else scale[u] / norms[u] * summed_norms[u]
        for j in range(dim):
            along = r[u, j] if normal else unit[u, j]
            g_r[u, j] = (g_r[u, j] - unit[u, j] * radial) / scale[u] + along * through_norm


def _tiny(r: torch.Tensor):
    """The clamp of the norms, ``torch.finfo(dtype).tiny``, as a numpy scalar of ``r``'s dtype."""
    return _numba.scalar(r, torch.finfo(r.dtype).tiny)


def _check_rows_and_positions(r: torch.Tensor, inverse: torch.Tensor | None, **per_row: torch.Tensor) -> None:
    """The loops index these without bounds checks: each ``per_row`` tensor must have ``r``'s shape (U, d), and
    ``inverse`` (N,) must hold rows of ``r`` (None: one position per row)."""
    bad = {name: tuple(t.shape) for name, t in per_row.items() if t.shape != r.shape}
    if bad or (inverse is not None and inverse.dim() != 1):
        raise ValueError(f"expected (U, d) = {tuple(r.shape)} rows and (N,) positions; got {bad or ''} "
                         f"inverse {None if inverse is None else tuple(inverse.shape)}")
    if inverse is not None:
        _numba.check_rows(inverse, r.shape[0], "position")


def unit_states(r: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, inverse: torch.Tensor):
    """The unit states of the distinct rows at every position, and what the backward needs.

    Parameters
    ----------
    r, cos, sin : torch.Tensor, shape (U, d)
        Amplitude rows of the distinct ids and the cosines and sines of their phase rows.
    inverse : torch.Tensor, shape (N,), int64
        The distinct row of each position.

    Returns
    -------
    states : torch.Tensor, shape (N, d, 2)
        [Re, Im] of :math:`|w_{u(p)}\\rangle`.
    position_norms : torch.Tensor, shape (N,)
        :math:`\\|r_{u(p)}\\|`.
    unit, norms, scale : torch.Tensor, shapes (U, d), (U,), (U,)
        :math:`r_u / s_u`, :math:`n_u`, :math:`s_u`.
    """
    _check_rows_and_positions(r, inverse, cos=cos, sin=sin)
    states = r.new_empty(inverse.shape[0], r.shape[1], 2)
    unit, norms, scale = torch.empty_like(r), r.new_empty(r.shape[0]), r.new_empty(r.shape[0])
    position_norms = r.new_empty(inverse.shape[0])
    loop = _numba.jit_calling(_forward_loop, {"_row_norm": _numba.jit(_rescaled_norm)}, _FASTMATH)
    info = torch.finfo(r.dtype)
    loop(r.numpy(), cos.numpy(), sin.numpy(), inverse.numpy(), _tiny(r), _numba.scalar(r, info.tiny / info.eps),
         unit.numpy(), norms.numpy(), scale.numpy(), states.numpy(), position_norms.numpy())
    return states, position_norms, unit, norms, scale


def unit_states_backward(g: torch.Tensor, g_norms: torch.Tensor | None, inverse: torch.Tensor | None,
                         r: torch.Tensor, unit: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, norms: torch.Tensor,
                         scale: torch.Tensor, polar_sign: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients ``(U, d)`` of the amplitude and phase rows (the module's formulas).

    Parameters
    ----------
    g : torch.Tensor, shape (N, d, 2)
        The [Re, Im] gradient of the states at the positions.
    g_norms : torch.Tensor or None, shape (N,)
        The gradient of the position norms; None when the norms were not used.
    inverse : torch.Tensor or None, shape (N,), int64
        The distinct row of each position, as :func:`unit_states` had it; None: one position per row (N = U,
        nothing to sum).
    r, cos, sin : torch.Tensor, shape (U, d)
        :func:`unit_states`' inputs.
    unit, norms, scale : torch.Tensor, shapes (U, d), (U,), (U,)
        :func:`unit_states`' outputs.
    polar_sign : bool
        Use torch.polar's modulus gradient (``qpnlp.nn.embedding.TORCH_POLAR_GRADIENT``) instead of the
        derivative.
    """
    _check_rows_and_positions(r, inverse, unit=unit, cos=cos, sin=sin)
    n, d = (r.shape[0] if inverse is None else inverse.shape[0]), r.shape[1]
    shapes_ok = (g.shape == (n, d, 2) and (g_norms is None or g_norms.shape == (n,))
                 and norms.shape == scale.shape == (r.shape[0],))
    if not shapes_ok:
        raise ValueError(f"expected g (N, d, 2) = ({n}, {d}, 2), g_norms ({n},), norms and scale ({r.shape[0]},); "
                         f"got {tuple(g.shape)}, {None if g_norms is None else tuple(g_norms.shape)}, "
                         f"{tuple(norms.shape)}, {tuple(scale.shape)}")
    g = g.contiguous()
    with_norms = g_norms is not None
    g_norms = g_norms.contiguous() if with_norms else r.new_zeros(0)
    if inverse is None:
        summed, summed_norms = g, g_norms
    else:
        summed, summed_norms = r.new_zeros(*r.shape, 2), r.new_zeros(r.shape[0])
        _numba.jit(_sum_per_row_loop, _FASTMATH)(g.numpy(), g_norms.numpy(), with_norms, inverse.numpy(),
                                                 summed.numpy(), summed_norms.numpy())
    g_r, g_phi = torch.empty_like(r), torch.empty_like(r)
    loop = _numba.jit(_backward_loop, _FASTMATH)
    loop(summed.numpy(), summed_norms.numpy(), with_norms, r.numpy(), unit.numpy(), cos.numpy(), sin.numpy(),
         norms.numpy(), scale.numpy(), _tiny(r), polar_sign, g_r.numpy(), g_phi.numpy())
    return g_r, g_phi
