r"""Overlaps :math:`\langle a_i|b_j\rangle` of batches of states, and the products of mixtures' factors, without
copying the states.

A mixture :math:`\rho = \sum_i p_i |a_i\rangle\langle a_i| = AA^\dagger` enters the metrics through small products
of its factor :math:`A = [\sqrt{p_1} a_1, \dots, \sqrt{p_n} a_n]` ``(..., d, n)``:

.. math:: (A^\dagger B)_{ij} = \sqrt{p_i q_j}\,\langle a_i|b_j\rangle, \qquad G = A^\dagger A,

which are the overlaps of the member states with the square roots of the weights applied to the n x m result
(:func:`scaled_overlaps`): the factor, a scaled copy of every state, is never built. A complex product conjugates
one operand, and torch's CPU ``bmm`` copies a conjugate view whole before it multiplies; :func:`overlaps`
conjugates the smaller operand, and where that one is large too (the Gram matrix of N mixtures: both operands are
the batch) multiplies slice by slice of the batch (:func:`in_slices`), so that one slice is copied at a time.
"""

from __future__ import annotations

import itertools

import torch

from ._linalg import adjoint_product, hermitian_part, safe_sqrt

#: The least bytes that a slice of :func:`in_slices` copies (slices copy this to twice this): just above glibc's largest
#: mmap threshold (32 MiB), so that each slice's copy is mapped apart and unmapped when freed. Smaller slices come from
#: the heap, whose freed blocks stay resident and fragment: the Gram matrix of 2000 mixtures of 20 states (d = 300,
#: complex128, 183 MiB) in slices of 16 MiB added 43 to 147 MiB at the peak from one run to the next, in 37 MiB 49 MiB.
SLICE_BYTES = 33 * 2**20


def _leading(operands) -> tuple[int, int]:
    """Rank and leading size of the broadcast shape of ``operands`` (right-aligned, as torch broadcasts)."""
    ndim = max(t.dim() for t in operands)
    return ndim, max(t.shape[0] for t in operands if t.dim() == ndim)


def in_slices(function, *operands: torch.Tensor, copies: int) -> torch.Tensor:
    r"""``function(*operands)`` over slices of the leading batch dim, concatenated along it: the same values.

    The operands are ``(..., r, c)`` (two event dims; a 0-dim tensor is a scalar) with broadcasting batch dims;
    ``function`` returns a tensor whose first dim is the leading dim of their broadcast batch, and copies ``copies``
    bytes for the whole batch (a conjugate operand of ``bmm``, a workspace). Where that is at least twice
    ``SLICE_BYTES`` (33 MiB), the operands that hold the leading batch dim are split along it into equal slices that
    copy ``SLICE_BYTES`` to twice that each (one batch entry at least); the others (of size 1 there, or with fewer
    dims) go whole to every slice. Differentiable (``split`` and ``cat``).
    """
    ndim, size = _leading(operands)
    count = min(copies // SLICE_BYTES, size)                  # equal slices of SLICE_BYTES to twice that each
    if ndim <= 2 or count <= 1:
        return function(*operands)
    step = -(-size // count)
    parts = [t.split(step) if t.dim() == ndim and t.shape[0] == size else itertools.repeat(t) for t in operands]
    return torch.cat([function(*part) for part in zip(*parts)])


def _conjugate_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a.conj() @ b.mT`` for equal batch shapes (one ``bmm``), else ``adjoint_product``, which broadcasts without
    expanding: its ``einsum`` permutes and views the operands around the same ``bmm``, 12 torch ops that were most
    of the time of a small Gram matrix (``Ensemble.gram`` of 3 states in C^8: 41 us, 20 us with ``@``)."""
    if a.shape[:-2] == b.shape[:-2]:
        return a.conj() @ b.mT
    return adjoint_product(a.mT, b.mT)


def overlaps(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r""":math:`\langle a_i|b_j\rangle` ``(..., n, m)`` of states ``a`` ``(..., n, d)`` and ``b`` ``(..., m, d)``.

    One complex dtype; batch dims broadcast without expanding either operand (``adjoint_product``, an ``einsum``;
    equal batch shapes: ``@``).
    The conjugated operand is the smaller one (:math:`\langle a_i|b_j\rangle = \overline{\langle b_j|a_i\rangle}`),
    and the product runs over slices of the batch where it is large (:func:`in_slices`): torch's CPU ``bmm`` copies a
    conjugate view whole, so the Gram matrix of N mixtures held a copy of all their states. Memory: the
    ``(..., n, m)`` result and the copy of one slice (33 to 66 MiB). The overlaps of ``a`` with itself (a Gram
    matrix) are exactly Hermitian (``hermitian_part``).
    """
    if b.numel() < a.numel():
        return overlaps(b, a).mH
    ndim, size = _leading((a, b))
    sliced = a.dim() == ndim and a.shape[0] == size            # else every slice would copy the whole of a
    product = in_slices(_conjugate_product, a, b, copies=a.numel() * a.element_size() if sliced else 0)
    return hermitian_part(product) if a is b else product


def _root_products(p: torch.Tensor | None, q: torch.Tensor | None) -> torch.Tensor | None:
    r""":math:`\sqrt{p_i}\sqrt{q_j}` ``(..., n, m)`` (a missing side: ones), or None when both are missing."""
    if p is None and q is None:
        return None
    if p is None or q is None:
        return safe_sqrt(q).unsqueeze(-2) if p is None else safe_sqrt(p).unsqueeze(-1)
    root_p = safe_sqrt(p)
    root_q = root_p if q is p else safe_sqrt(q)                  # a Gram matrix: the roots once
    return root_p.unsqueeze(-1) * root_q.unsqueeze(-2)


def scaled_overlaps(a: torch.Tensor, p: torch.Tensor | None, b: torch.Tensor, q: torch.Tensor | None) -> torch.Tensor:
    r""":math:`A^\dagger B` ``(..., n, m)``, :math:`\sqrt{p_i q_j}\,\langle a_i|b_j\rangle`, from states and weights.

    ``a`` ``(..., n, d)`` and ``b`` ``(..., m, d)`` of one complex dtype, weights ``p`` ``(..., n)`` and ``q``
    ``(..., m)`` (None: all ones, a pure state or the columns of a dense factor). The overlaps of the states
    (:func:`overlaps`) scaled by :math:`\sqrt{p_i}\sqrt{q_j}` (``safe_sqrt``: gradient 0 at a zero weight, as
    :func:`~qpnlp.hilbert._mixture.factor` gives), one product per entry, so ``scaled_overlaps(a, p, a, p)`` is
    Hermitian as ``overlaps(a, a)`` is. The factors :math:`A`, :math:`B` are never built.
    """
    product = overlaps(a, b)
    scale = _root_products(p, q)
    return product if scale is None else product * scale.to(product.dtype)
