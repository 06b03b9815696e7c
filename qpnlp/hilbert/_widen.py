r"""Single to double precision without float32's round-off: what ``to(torch.float64)`` does after the cast.

A complex64 state is unit to float32's round-off, :math:`|\,\|w\| - 1| \approx 10^{-7}`; cast to complex128 it
keeps that error, a million times float64's tolerance, so the constructors and the functions that check their
arguments refused ``state.to(torch.float64).data`` ("float32 round-off ... normalise after the cast"). Each
function here removes an error of that size only: an entry (a row, a mixture, a matrix) whose error is within
the float32 tolerance is projected back (rescaled, or its Hermitian part taken), any other entry (a zero row at
padding, an object built with ``validate=False``) is kept as it is.

Measurements hold orthonormal rows (a projector's, a sememe basis') or an isometry (a POVM's stacked factor
vectors, :math:`\sum_k E_k = V^\dagger V = I`): float32's round-off leaves :math:`\max|V^\dagger V - I|
\approx 10^{-7}` there too, and :func:`orthonormal_columns` re-orthonormalises them.
"""

from __future__ import annotations

import torch

from . import _validation as V
from ._linalg import adjoint_product, haar_orthonormalize, hermitian_part, squared_norms


def _single_round_off(error: torch.Tensor, dim: int, source: torch.dtype = torch.float32) -> torch.Tensor:
    """Bool mask of the entries whose ``error`` (real, detached) is within ``source``'s tolerance at ``dim``."""
    return error.detach() <= V.tolerance(source, dim)


def unit_rows(states: torch.Tensor) -> torch.Tensor:
    r"""Rows :math:`w / \|w\|` of ``states`` ``(..., d)`` whose norm is one to float32's round-off; others kept."""
    norms = squared_norms(states).sqrt()                                        # (..., 1)
    near = _single_round_off((norms - 1).abs(), states.shape[-1])
    return states / torch.where(near, norms, torch.ones_like(norms)).to(states.dtype)


def unit_sums(weights: torch.Tensor, source: torch.dtype = torch.float32) -> torch.Tensor:
    r"""Weights ``(..., n)`` divided by their sum :math:`\sum_i p_i` where it is one to the round-off of
    ``source``, the dtype they were cast from (float32; bfloat16 or float16 for weights that join float32 states)."""
    sums = weights.sum(-1, keepdim=True)
    near = _single_round_off((sums - 1).abs(), weights.shape[-1], source)
    return weights / torch.where(near, sums, torch.ones_like(sums))


def unit_trace_hermitian(matrices: torch.Tensor) -> torch.Tensor:
    r""":math:`H / \operatorname{Tr} H`, :math:`H = (A + A^\dagger) / 2`, of ``(..., d, d)`` matrices that are
    Hermitian and of trace one to float32's round-off; other matrices kept."""
    d = matrices.shape[-1]
    hermitian = hermitian_part(matrices)
    skew = (matrices - hermitian).abs().amax((-2, -1))
    traces = torch.diagonal(hermitian, dim1=-2, dim2=-1).sum(-1).real
    near = _single_round_off(torch.maximum(skew, (traces - 1).abs()), d)[..., None, None]
    scale = torch.where(near, traces[..., None, None], torch.ones_like(traces[..., None, None]))
    return torch.where(near, hermitian, matrices) / scale.to(matrices.dtype)


def orthonormal_columns(matrices: torch.Tensor) -> torch.Tensor:
    r"""Q of :math:`A = QR` (R of positive diagonal) for the ``(..., m, n)`` matrices A, m >= n, whose columns are
    orthonormal to float32's round-off, :math:`\max|A^\dagger A - I|` within twice its tolerance at max(m, n)
    (that of a POVM's completeness check); other matrices, and all of them when m < n or n = 0, are kept.

    Why a QR (``torch.linalg.qr``, Householder) rather than a polar factor or Newton-Schulz steps: it is one
    backward-stable library call, orthonormal to float64's round-off whatever the error it starts from, with
    no step count to choose; for such an A, R is I to float32's round-off, so :math:`Q = A R^{-1}` moves A by
    that much only (the phases of R's diagonal are moved into Q by
    :func:`~qpnlp.hilbert._linalg.haar_orthonormalize`: LAPACK's R may have -1 there). The polar factor, the nearest
    isometry, comes from an SVD whose backward divides by differences of singular values, all about one here
    (NaN for an exactly orthonormal A); the QR's backward needs only R invertible, so the move stays
    differentiable. Matrices that are not re-orthonormalised enter the QR as the identity, so a rank-deficient
    or NaN one puts no NaN into the gradient.
    """
    m, n = matrices.shape[-2:]
    if n == 0 or m < n:
        return matrices
    eye = torch.eye(m, n, dtype=matrices.dtype, device=matrices.device)
    error = (adjoint_product(matrices, matrices) - eye[:n]).abs().amax((-2, -1))
    near = _single_round_off(error / 2, max(m, n))[..., None, None]
    return torch.where(near, haar_orthonormalize(torch.where(near, matrices, eye)), matrices)


def orthonormal_rows(matrices: torch.Tensor) -> torch.Tensor:
    r""":func:`orthonormal_columns` for rows: ``(..., r, d)`` matrices with :math:`V V^\dagger = I` to float32's
    round-off (a projector's vectors, a sememe basis) re-orthonormalised; others kept."""
    return orthonormal_columns(matrices.mT).mT


def widening(old: torch.dtype, new: torch.dtype) -> bool:
    """Whether a move from ``old`` to ``new`` goes from single (complex64/float32) to double precision."""
    return V.real_dtype_of(old) == torch.float32 and V.real_dtype_of(new) == torch.float64
