r"""Born-rule probabilities :math:`p_k = \operatorname{Tr}(\rho P_k)` and :math:`\operatorname{Tr}(\rho E_k)`, functional core.

Measurement vectors are given as a complex tensor ``(k, d)`` (rank-1
projectors :math:`P_k = |v_k\rangle\langle v_k|`) or ``(k, r, d)`` (rank-r
projectors :math:`P_k = \sum_s |v_{ks}\rangle\langle v_{ks}|` with orthonormal
:math:`v_{k\cdot}`). The lazy paths never build a d x d matrix:

.. math:: \operatorname{Tr}\Big(\sum_i p_i |w_i\rangle\langle w_i| \, P_k\Big)
          = \sum_i p_i \sum_s |\langle v_{ks}|w_i\rangle|^2 .

General measurements (POVMs) use the same formula with vectors that need
not be orthonormal: an effect :math:`E_k = \sum_s |v_{ks}\rangle\langle v_{ks}|
= M_k^\dagger M_k` is given by its factor vectors ``(..., k, r, d)`` (the
rows of the Kraus operator :math:`M_k` are :math:`\langle v_{ks}|`), and
:func:`povm_probabilities` computes
:math:`\operatorname{Tr}(\rho E_k) = \sum_i p_i \|M_k w_i\|^2` in O(n d k r),
with the POVM's batch dims broadcasting against the states'.

Every function checks its arguments first (``qpnlp.measurement._checks``:
unit states, probability weights, unit or orthonormal projector rows, POVM
completeness, dense states), through the one validation switch or
``validate=``.
"""

from __future__ import annotations

import torch

from qpnlp.hilbert import contract, promote
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._linalg import without_autocast
from qpnlp.hilbert._mixture import weighted_sum

from . import _checks


def _rank_r(vectors: torch.Tensor) -> torch.Tensor:
    """View measurement vectors as ``(k, r, d)``."""
    V.check_tensor("projectors", vectors)
    V.check_complex("projectors", vectors)
    if vectors.dim() == 2:
        return vectors.unsqueeze(1)
    if vectors.dim() == 3:
        return vectors
    raise ValueError(f"projectors must have shape (k, d) or (k, r, d); got {tuple(vectors.shape)}")


def squared_overlaps(states: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    r""":math:`|\langle v_m|w\rangle|^2` of states ``(..., d)`` with vectors ``(..., m, d)``: real ``(..., m)``.

    The same values as ``|states @ vectors.mH|^2``, computed with one real matrix product on the
    interleaved real views :math:`\tilde w = (\Re w_1, \Im w_1, \dots)` ``(..., 2d)``: each vector gives
    two rows, :math:`\tilde v = (\Re v_j, \Im v_j)_j` and :math:`(-\Im v_j, \Re v_j)_j`, whose products
    with :math:`\tilde w` are

    .. math:: \Re\langle v|w\rangle = \sum_j \Re v_j \Re w_j + \Im v_j \Im w_j, \qquad
              \Im\langle v|w\rangle = \sum_j \Re v_j \Im w_j - \Im v_j \Re w_j .

    Forward and backward are then three real matrix products of the same flops as the complex ones,
    without the complex autograd of :math:`\Re^2 + \Im^2` (conjugate copies and zero-filled complex
    gradients): written by hand because torch has no fused complex :math:`|z|^2` of a product. Born rule
    forward+backward at d=300, k=50, 1600 states: 1.05x faster (``benchmarks/qpdn_train_step.py``, "born
    fwd+bwd"; benchmarks/results/SPEED.md).
    Both complex of one dtype (:func:`~qpnlp.hilbert.promote` them first). Batch dims that differ (states
    ``(*S, n, d)``, vectors ``(*P, m, d)``) broadcast through ``einsum``, which never copies the states once per
    vector batch nor the vectors once per state batch as ``matmul`` does (it expands both operands to
    ``broadcast_shapes(S, P)``).
    Inside ``torch.autocast`` the real products stay in the states' precision, as the complex product does
    (autocast lowers real float32 matrix products only): complex64 states give float32 probabilities there too.
    """
    v = torch.view_as_real(vectors.resolve_conj())                          # (..., m, d, 2)
    imaginary_rows = torch.stack((-v[..., 1], v[..., 0]), -1)
    rows = torch.cat((v.flatten(-2), imaginary_rows.flatten(-2)), -2)     # (..., 2m, 2d)
    real = torch.view_as_real(states.resolve_conj()).flatten(-2)          # (..., 2d)
    with without_autocast(states.device.type):
        if rows.dim() > 2 and real.dim() > 1 and real.shape[:-2] != rows.shape[:-2]:
            parts = torch.einsum("...nc,...mc->...nm", real, rows)        # broadcast without expanding
        else:
            parts = real @ rows.mT                                        # (..., 2m): Re, then Im
    return parts.unflatten(-1, (2, vectors.shape[-2])).square().sum(-2)


def word_probabilities(states: torch.Tensor, projectors: torch.Tensor, *, validate: V.Validate = None) -> torch.Tensor:
    r"""Per-state probabilities :math:`|\langle v_k|w\rangle|^2` (summed over a rank-r projector's vectors).

    Parameters
    ----------
    states : torch.Tensor
        Complex ``(..., d)`` unit vectors.
    projectors : torch.Tensor
        Complex ``(k, d)`` or ``(k, r, d)`` measurement vectors.
    validate : bool or "strict", optional
        Override the global validation mode for this call (:func:`~qpnlp.hilbert.set_validation`).

    Returns
    -------
    torch.Tensor
        Real ``(..., k)``.

    Examples
    --------
    >>> v = torch.eye(2, dtype=torch.complex64)
    >>> w = torch.tensor([0.6, 0.8j], dtype=torch.complex64)
    >>> word_probabilities(w, v)
    tensor([0.3600, 0.6400])
    """
    _checks.born_inputs(states, None, _rank_r(projectors), validate)   # zero rows (padding) allowed
    proj = _rank_r(projectors)
    k, r, d = proj.shape
    V.check_dims_match("states", states.shape[-1], "projectors", d)
    states, proj = promote(states, proj)
    probs = squared_overlaps(states, proj.reshape(k * r, d))  # (..., k r): |<v|w>|^2
    return probs if r == 1 else probs.unflatten(-1, (k, r)).sum(-1)


def born_probabilities(states: torch.Tensor, weights: torch.Tensor | None, projectors: torch.Tensor, *,
                       validate: V.Validate = None) -> torch.Tensor:
    r"""Probabilities of a lazy mixture under projective measurements.

    :math:`p_k = \sum_i p_i |\langle v_k|w_i\rangle|^2`, never materialising
    :math:`\rho`. Cost O(n d k) per mixture instead of O(n d^2 + k d^2).

    Parameters
    ----------
    states : torch.Tensor
        Complex ``(..., n, d)`` member states (``weights=None``: ``(..., d)``
        pure states, equivalent to n = 1).
    weights : torch.Tensor or None
        Real ``(..., n)`` mixture weights (zero at padded positions).
    projectors : torch.Tensor
        Complex ``(k, d)`` or ``(k, r, d)``.
    validate : bool or "strict", optional
        Override the global validation mode for this call (:func:`~qpnlp.hilbert.set_validation`).

    Returns
    -------
    torch.Tensor
        Real ``(..., k)``.

    Examples
    --------
    >>> w = torch.eye(2, dtype=torch.complex64)                      # |e0>, |e1>
    >>> born_probabilities(w, torch.tensor([0.25, 0.75]), torch.eye(2, dtype=torch.complex64))
    tensor([0.2500, 0.7500])
    """
    _checks.born_inputs(states, weights, _rank_r(projectors), validate)
    per_state = word_probabilities(states, projectors, validate=False)
    if weights is None:
        return per_state
    if weights.shape != states.shape[:-1]:
        raise ValueError(f"weights must have shape {tuple(states.shape[:-1])}; got {tuple(weights.shape)}")
    common = torch.promote_types(per_state.dtype, weights.dtype)  # widen, never narrow
    return weighted_sum(weights.to(common), per_state.to(common))      # pairwise over a long mixture


def born_probabilities_dense(rho: torch.Tensor, projectors: torch.Tensor, *,
                             validate: V.Validate = None) -> torch.Tensor:
    r"""Probabilities :math:`\operatorname{Tr}(\rho P_k) = \sum_s \langle v_{ks}|\rho|v_{ks}\rangle` of dense ``(..., d, d)``.

    Returns real ``(..., k)``. Uses the cached optimised contraction
    (three operands).

    Parameters
    ----------
    rho : torch.Tensor
        Complex ``(..., d, d)`` density matrices.
    projectors : torch.Tensor
        Complex ``(k, d)`` or ``(k, r, d)``: the orthonormal vectors of each projector.
    validate : bool or "strict", optional
        Override the global validation mode for this call (:func:`~qpnlp.hilbert.set_validation`).
    """
    _checks.dense_inputs(rho, _rank_r(projectors), validate)
    proj = _rank_r(projectors)
    V.check_dims_match("rho", rho.shape[-1], "projectors", proj.shape[-1])
    rho, proj = promote(rho, proj)
    return contract("krd,...de,kre->...k", proj.conj(), rho, proj).real


def _effect_vectors(vectors: torch.Tensor) -> torch.Tensor:
    V.check_tensor("vectors", vectors)
    V.check_complex("vectors", vectors)
    V.check_min_ndim("vectors", vectors, 3, "(..., k, r, d)")
    return vectors


def povm_probabilities(states: torch.Tensor, weights: torch.Tensor | None, vectors: torch.Tensor, *,
                       validate: V.Validate = None) -> torch.Tensor:
    r"""Probabilities :math:`\operatorname{Tr}(\rho E_k) = \sum_i p_i \sum_s |\langle v_{ks}|w_i\rangle|^2` of a lazy mixture.

    Parameters
    ----------
    states : torch.Tensor
        Complex ``(..., n, d)`` member states (``weights=None``: ``(..., d)`` pure states).
    weights : torch.Tensor or None
        Real ``(..., n)`` mixture weights.
    vectors : torch.Tensor
        Complex ``(..., k, r, d)`` effect factors, :math:`E_k = \sum_s |v_{ks}\rangle\langle v_{ks}|`
        (e.g. :attr:`POVM.vectors <qpnlp.measurement.POVM.vectors>`); leading dims broadcast
        against the states' batch dims, without copying either (``einsum``, see ``squared_overlaps``).
    validate : bool or "strict", optional
        Override the global validation mode for this call (:func:`~qpnlp.hilbert.set_validation`).

    Returns
    -------
    torch.Tensor
        Real ``(..., k)``; sums to one over k when :math:`\sum_k E_k = I`.

    Examples
    --------
    >>> trine = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -0.75 ** 0.5]], dtype=torch.complex64)
    >>> vectors = (trine * (2 / 3) ** 0.5).unsqueeze(1)                   # rank-1 effects (3, 1, 2)
    >>> povm_probabilities(torch.tensor([1, 0], dtype=torch.complex64), None, vectors)
    tensor([0.6667, 0.1667, 0.1667])
    """
    _checks.born_inputs(states, weights, _effect_vectors(vectors), validate, vectors_name="vectors", povm=True)
    vectors = _effect_vectors(vectors)
    k, r, d = vectors.shape[-3:]
    V.check_dims_match("states", states.shape[-1], "vectors", d)
    pure = weights is None
    states, vectors = promote(states.unsqueeze(-2) if pure else states, vectors)
    flat = vectors.reshape(*vectors.shape[:-3], k * r, d)
    per_state = squared_overlaps(states, flat)                            # (..., n, k r): |<v|w>|^2
    if r != 1:                                                           # r = 0: the zero effect
        per_state = per_state.unflatten(-1, (k, r)).sum(-1)
    if pure:
        return per_state.squeeze(-2)
    if weights.shape != states.shape[:-1]:
        raise ValueError(f"weights must have shape {tuple(states.shape[:-1])}; got {tuple(weights.shape)}")
    common = torch.promote_types(per_state.dtype, weights.dtype)       # widen, never narrow
    return weighted_sum(weights.to(common), per_state.to(common))      # weights not expanded


def povm_probabilities_dense(rho: torch.Tensor, vectors: torch.Tensor, *, validate: V.Validate = None) -> torch.Tensor:
    r"""Probabilities :math:`\operatorname{Tr}(\rho E_k) = \sum_s \langle v_{ks}|\rho|v_{ks}\rangle` of dense ``(..., d, d)``.

    ``vectors`` ``(..., k, r, d)`` as in :func:`povm_probabilities`; returns real ``(..., k)``.

    Parameters
    ----------
    rho : torch.Tensor
        Complex ``(..., d, d)`` density matrices.
    vectors : torch.Tensor
        Complex ``(..., k, r, d)`` effect vectors, :math:`E_k = \sum_s |v_{ks}\rangle\langle v_{ks}|`.
    validate : bool or "strict", optional
        Override the global validation mode for this call (:func:`~qpnlp.hilbert.set_validation`).
    """
    _checks.dense_inputs(rho, _effect_vectors(vectors), validate, vectors_name="vectors", povm=True)
    vectors = _effect_vectors(vectors)
    k, r, d = vectors.shape[-3:]
    V.check_dims_match("rho", rho.shape[-1], "vectors", d)
    rho, vectors = promote(rho, vectors)
    flat = vectors.reshape(*vectors.shape[:-3], k * r, d)
    left = torch.einsum("...md,...de->...me", flat.conj(), rho)         # <v|rho, no copy of rho per POVM
    values = (left * flat).sum(-1).real                                 # <v|rho|v>
    return values.unflatten(-1, (k, r)).sum(-1)
