r"""The difference :math:`\rho - \sigma` of two low-rank states through an (n+m) x (n+m) matrix, never d x d.

With factors :math:`\rho = AA^\dagger` (d x n) and :math:`\sigma = BB^\dagger` (d x m) of two pure states or
ensembles, :math:`\rho - \sigma = F J F^\dagger` for :math:`F = [A, B]`, :math:`J = I_n \oplus -I_m`; with the thin
QR :math:`F = QR` it is :math:`Q (R J R^\dagger) Q^\dagger`, so the small :math:`RJR^\dagger` (k = n + m) has the
nonzero eigenvalues and the Frobenius norm of :math:`\rho - \sigma` (Q has orthonormal columns), at O(d k^2)
instead of O(d^3) and backward stable (no squared singular values; ``_reduced_in_slices``). QR's backward is
undefined at the rank-deficient F of a sentence that repeats a word, so the Hilbert-Schmidt and trace distances
(:func:`low_rank_hilbert_schmidt`, :func:`low_rank_trace_distance`) take their gradients from the members instead
(:class:`_SquaredHilbertSchmidt`, :class:`_TraceDistance`).
"""

from __future__ import annotations

import functools
import math

import torch

from . import _mixture as M
from ._ensemble import Ensemble
from ._linalg import decompose, promote, safe_sqrt, squared_frobenius_norm, squared_modulus
from ._operands import check_pair, members
from ._overlaps import in_slices, overlaps
from ._states import PureState


def _stacked_rows(a: torch.Tensor, a_roots: torch.Tensor, b: torch.Tensor, b_roots: torch.Tensor) -> torch.Tensor:
    r"""The columns of :math:`F = [A, B]` as rows ``(..., n + m, d)``: :math:`\sqrt{p_i} a_i`, :math:`\sqrt{q_j} b_j`.

    States ``(..., n, d)``, ``(..., m, d)`` of one dtype and the roots of their weights ``(..., n, 1)``,
    ``(..., m, 1)`` (or 0-dim ones), written once into one tensor of the broadcast batch and scaled in place (no
    scaled copy of a side, no concatenation; not differentiable: for the forward and backward of the Functions below).
    """
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n = a.shape[-2]
    rows = a.new_empty(*batch, n + b.shape[-2], a.shape[-1])
    for part, states, roots in ((rows[..., :n, :], a, a_roots), (rows[..., n:, :], b, b_roots)):
        part.copy_(states).mul_(roots)                                             # broadcast into its place
    return rows


def _signed_gram_of_r(reduce, a: torch.Tensor, a_roots: torch.Tensor, b: torch.Tensor,
                      b_roots: torch.Tensor) -> torch.Tensor:
    r"""``reduce`` ``(..., k, k) -> (...)`` of :math:`R J R^\dagger` ``(..., k, k)``, R of the thin QR :math:`F = QR`
    of :math:`F = [A, B]` (``_stacked_rows``), :math:`J = I_n \oplus -I_m`."""
    r = torch.linalg.qr(_stacked_rows(a, a_roots, b, b_roots).mT, mode="r").R       # (..., k, k)
    signs = torch.cat((r.new_ones(a.shape[-2]), -r.new_ones(b.shape[-2])))
    return reduce((r * signs) @ r.mH)


def _column_roots(weights: torch.Tensor | None, states: torch.Tensor) -> torch.Tensor:
    r""":math:`\sqrt{p_i}` ``(..., n, 1)`` of the states' dtype (``safe_sqrt``), a 0-dim one for None (``members``)."""
    return states.new_ones(()) if weights is None else M.root_weights(weights, states.dtype)


def _low_rank_operands(rho, sigma, least_dim: int):
    r"""States ``(..., n, d)``, ``(..., m, d)`` of one complex dtype and weights ``(..., n)``, ``(..., m)`` (None for
    a pure state) of two pure states or ensembles, or None (the dense route) for a dense side, k = n + m >= d or
    d < ``least_dim``."""
    if not (isinstance(rho, (PureState, Ensemble)) and isinstance(sigma, (PureState, Ensemble))):
        return None
    check_pair(rho, sigma)
    (a, p), (b, q) = members(rho, "rho"), members(sigma, "sigma")
    a, b = promote(a, b)
    if a.shape[-2] + b.shape[-2] >= a.shape[-1] or a.shape[-1] < least_dim:
        return None
    return a, p, b, q


def _reduced_in_slices(reduce, a: torch.Tensor, p: torch.Tensor | None, b: torch.Tensor,
                       q: torch.Tensor | None) -> torch.Tensor:
    r"""``reduce`` ``(..., k, k) -> (...)`` of :math:`RJR^\dagger`, one slice of the broadcast batch at a time.

    F is built per pair of the broadcast batch on purpose: R from the Cholesky factor of the Gram matrix
    :math:`F^\dagger F` squares the singular values, so T of close states came out with absolute errors of
    ~:math:`\sqrt\epsilon` (float32, T = 1e-3: 31% off, QR 4e-5) and a repeated word's singular Gram has no Cholesky
    factor. F is written once (``_stacked_rows``), and QR (which copies its input) and ``reduce`` take it one slice
    of the batch at a time (``in_slices``): memory F and QR's copy of a slice, where the ensemble's factor, the
    concatenated F and QR's copy of it held the batch three times over (one ensemble of 5 words against 2000 of 20,
    d = 300, complex128: ``trace_distance`` adds 107 MiB at the peak, was 681 MiB; ``benchmarks/metric_memory.py``).
    """
    k = a.shape[-2] + b.shape[-2]
    pairs = math.prod(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    copies = pairs * k * a.shape[-1] * a.element_size()                           # F (and QR's copy of it)
    slice_result = functools.partial(_signed_gram_of_r, reduce)
    return in_slices(slice_result, a, _column_roots(p, a), b, _column_roots(q, b), copies=copies)


def low_rank_hilbert_schmidt(rho, sigma, least_dim: int = 0) -> torch.Tensor | None:
    r""":math:`\|\rho - \sigma\|_F` ``(...)`` of two pure states or ensembles from :math:`RJR^\dagger`, or None.

    The value is :math:`\|RJR^\dagger\|_F = \|\rho - \sigma\|_F` (``_reduced_in_slices``); with autograd the
    gradient comes from overlaps (:class:`_SquaredHilbertSchmidt`), so no d x d matrix is built with or without it.
    The root is ``safe_sqrt``: gradient 0 where the computed square is 0. None (the dense route) for a dense side,
    k = n + m >= d or d < ``least_dim``.
    """
    operands = _low_rank_operands(rho, sigma, least_dim)
    return None if operands is None else safe_sqrt(_SquaredHilbertSchmidt.apply(*operands))


def _weight_columns(weights: torch.Tensor | None, states: torch.Tensor) -> torch.Tensor:
    r""":math:`p_i` ``(..., n, 1)`` in the states' real dtype, a 0-dim one for None (a pure state's weight)."""
    real = states.real.dtype
    return states.new_ones((), dtype=real) if weights is None else weights.to(real).unsqueeze(-1)


def _difference_on(x: torch.Tensor, a: torch.Tensor, p: torch.Tensor, b: torch.Tensor,
                   q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`D|x_i\rangle` ``(..., r, d)`` and :math:`\langle x_i|D|x_i\rangle` ``(..., r)`` for states ``x``
    ``(..., r, d)``, :math:`D = \sum_j p_j |a_j\rangle\langle a_j| - \sum_k q_k |b_k\rangle\langle b_k|`.

    From the overlaps only, :math:`D|x_i\rangle = \sum_j p_j \langle a_j|x_i\rangle a_j - \sum_k q_k \langle
    b_k|x_i\rangle b_k`: O((n + m) r d) per pair, no d x d matrix. Weights ``p`` ``(..., n, 1)``, ``q`` ``(..., m, 1)``
    real (``_weight_columns``). Both overlaps are taken alike (``x`` through a view, so that ``overlaps`` does not
    symmetrise :math:`\langle a_i|a_j\rangle` as a Gram matrix): for equal sides of one batch shape the two terms
    are equal bit for bit, :math:`D|x_i\rangle = 0` exactly, and so is the gradient at :math:`\rho = \sigma`.
    """
    x = x.view_as(x)
    on_a, on_b = overlaps(a, x), overlaps(b, x)                                  # (..., n, r), (..., m, r)
    applied = (on_a * p).mT @ a - (on_b * q).mT @ b
    expectation = (squared_modulus(on_a) * p).sum(-2) - (squared_modulus(on_b) * q).sum(-2)
    return applied, expectation


class _OfMembers(torch.autograd.Function):
    """A function of the members ``a``, ``p``, ``b``, ``q`` of two states (:func:`_low_rank_operands`) whose backward
    needs them all: saved by ``setup_context`` (so that ``torch.func`` transforms and ``vmap`` run it)."""

    generate_vmap_rule = True

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)


class _SquaredHilbertSchmidt(_OfMembers):
    r""":math:`\|\rho - \sigma\|_F^2` ``(...)`` of states ``a`` ``(..., n, d)``, ``b`` ``(..., m, d)`` (one complex
    dtype) and real weights ``p`` ``(..., n)``, ``q`` ``(..., m)`` (None: a pure state, weight one).

    Forward: :math:`\|RJR^\dagger\|_F^2` (``_reduced_in_slices``), accurate for close states. Backward analytic,
    through overlaps (``_difference_on``), with :math:`D = \rho - \sigma` and an upstream gradient g:

    .. math:: \frac{\partial \|D\|_F^2}{\partial p_i} = 2\langle a_i|D|a_i\rangle, \qquad
              \frac{\partial \|D\|_F^2}{\partial q_k} = -2\langle b_k|D|b_k\rangle, \qquad
              \nabla_{a_i} = 4 p_i D|a_i\rangle, \qquad \nabla_{b_k} = -4 q_k D|b_k\rangle,

    the state gradients in torch's convention for complex inputs (twice the derivative in :math:`\bar a_i`).
    Finite where F is rank-deficient (a repeated word), where QR's backward is not; summed over broadcast batch dims.
    The backward is torch ops of the saved inputs, so it is itself differentiable.
    """

    @staticmethod
    def forward(a, p, b, q):
        return _reduced_in_slices(squared_frobenius_norm, a, p, b, q)

    @staticmethod
    def backward(ctx, grad):
        a, p, b, q = ctx.saved_tensors
        weights_a, weights_b = _weight_columns(p, a), _weight_columns(q, b)
        g = grad.unsqueeze(-1)                                                      # (..., 1)
        grads = [None] * 4
        for index, (x, weights, sign) in enumerate(((a, weights_a, 1.0), (b, weights_b, -1.0))):
            if not (ctx.needs_input_grad[2 * index] or ctx.needs_input_grad[2 * index + 1]):
                continue
            applied, expectation = _difference_on(x, a, weights_a, b, weights_b)
            scale = (4.0 * sign) * g * weights.squeeze(-1) if weights.dim() else (4.0 * sign) * g
            grads[2 * index] = (applied * scale.unsqueeze(-1)).sum_to_size(x.shape)
            weight = (p, q)[index]
            if weight is not None and ctx.needs_input_grad[2 * index + 1]:
                grads[2 * index + 1] = ((2.0 * sign) * g * expectation).sum_to_size(weight.shape).to(weight.dtype)
        return tuple(grads)


def half_trace_norm(x: torch.Tensor) -> torch.Tensor:
    r""":math:`\tfrac12\|X\|_1` ``(...)`` of Hermitian ``(..., k, k)`` matrices: half the sum of :math:`|\lambda_k|`."""
    return 0.5 * decompose(torch.linalg.eigvalsh, x).abs().sum(-1)


def low_rank_trace_distance(rho, sigma) -> torch.Tensor | None:
    r""":math:`\tfrac12\|\rho - \sigma\|_1` ``(...)`` of two pure states or ensembles from :math:`RJR^\dagger`, or None.

    The value is :math:`\tfrac12\sum_j|\lambda_j(RJR^\dagger)|`: the nonzero eigenvalues of :math:`\rho - \sigma =
    Q(RJR^\dagger)Q^\dagger` are those of :math:`RJR^\dagger` (``_reduced_in_slices``). With autograd the gradient is
    :math:`\tfrac12\operatorname{sign}(\rho - \sigma)` applied to the members (:class:`_TraceDistance`), so no d x d
    matrix is built with or without it. None (the dense route) for a dense side or k = n + m >= d.
    """
    operands = _low_rank_operands(rho, sigma, 0)
    return None if operands is None else _TraceDistance.apply(*operands)


def _sign_on_members(a: torch.Tensor, a_roots: torch.Tensor, b: torch.Tensor, b_roots: torch.Tensor) -> torch.Tensor:
    r""":math:`\operatorname{sign}(D)|x\rangle` ``(..., n + m, d)`` for the rows x of ``a`` then ``b``, never d x d.

    With the thin QR :math:`F = QR` (``_stacked_rows``) and :math:`RJR^\dagger = V\Lambda V^\dagger`,
    :math:`\operatorname{sign}(D) = Q\,V\operatorname{sign}(\Lambda)V^\dagger Q^\dagger` (D vanishes off the span
    of Q), applied as :math:`Q (V \operatorname{sign}(\Lambda) V^\dagger (Q^\dagger x))`: O(d k^2). Eigenvalues
    within :math:`k\,\epsilon\,\|F\|_F^2` of 0 (QR's round-off: the null directions of a rank-deficient F, all of
    them at :math:`\rho = \sigma`) get sign 0, as a zero eigenvalue in the dense route.
    """
    f = _stacked_rows(a, a_roots, b, b_roots)                                      # (..., k, d)
    k = f.shape[-2]
    tolerance = k * torch.finfo(f.dtype).eps * squared_modulus(f).sum((-2, -1), keepdim=True)   # (..., 1, 1)
    basis, r = torch.linalg.qr(f.mT)                                               # (..., d, k), (..., k, k)
    signs = torch.cat((r.new_ones(a.shape[-2]), -r.new_ones(b.shape[-2])))
    values, vectors = decompose(torch.linalg.eigh, (r * signs) @ r.mH)
    kept = torch.where(values.abs().unsqueeze(-2) > tolerance, values.sgn().unsqueeze(-2), 0)   # (..., 1, k)
    small = (vectors * kept.to(vectors.dtype)) @ vectors.mH                        # sign of R J R^dagger
    columns = [basis @ (small @ (basis.mH @ x.mT)) for x in (a, b)]                # (..., d, n), (..., d, m)
    return torch.cat(columns, -1).mT


class _TraceDistance(_OfMembers):
    r""":math:`T = \tfrac12\|\rho - \sigma\|_1` ``(...)`` of states ``a`` ``(..., n, d)``, ``b`` ``(..., m, d)`` and
    real weights ``p``, ``q`` (None: a pure state), as :class:`_SquaredHilbertSchmidt`.

    Forward: half the sum of :math:`|\lambda|` of :math:`RJR^\dagger` (``_reduced_in_slices``). Backward, with
    :math:`S = \operatorname{sign}(\rho - \sigma)` (``_sign_on_members``, slice by slice of the batch):

    .. math:: \frac{\partial T}{\partial p_i} = \tfrac12\langle a_i|S|a_i\rangle, \qquad
              \frac{\partial T}{\partial q_k} = -\tfrac12\langle b_k|S|b_k\rangle, \qquad
              \nabla_{a_i} = p_i S|a_i\rangle, \qquad \nabla_{b_k} = -q_k S|b_k\rangle

    (torch's convention for complex inputs), summed over broadcast dims. Not differentiable twice (the backward
    takes ``eigh`` without its own gradient in mind); finite where F is rank-deficient.
    """

    @staticmethod
    def forward(a, p, b, q):
        return _reduced_in_slices(half_trace_norm, a, p, b, q)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        a, p, b, q = ctx.saved_tensors
        n, k = a.shape[-2], a.shape[-2] + b.shape[-2]
        pairs = math.prod(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        copies = 2 * pairs * k * a.shape[-1] * a.element_size()                    # F, Q (and QR's copy of F)
        applied = in_slices(_sign_on_members, a, _column_roots(p, a), b, _column_roots(q, b), copies=copies)
        g = grad.unsqueeze(-1)                                                      # (..., 1)
        grads = [None] * 4
        for index, (x, weight, sign, part) in enumerate(((a, p, 1.0, applied[..., :n, :]),
                                                          (b, q, -1.0, applied[..., n:, :]))):
            weights = _weight_columns(weight, x)
            scale = sign * g * weights.squeeze(-1) if weights.dim() else sign * g
            grads[2 * index] = (part * scale.unsqueeze(-1)).sum_to_size(x.shape)
            if weight is not None and ctx.needs_input_grad[2 * index + 1]:
                expectation = (x.conj() * part).real.sum(-1)                       # <x_i|S|x_i>
                grads[2 * index + 1] = (0.5 * sign * g * expectation).sum_to_size(weight.shape).to(weight.dtype)
        return tuple(grads)
