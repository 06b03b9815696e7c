r"""Bipartite states (word pairs built with :func:`tensor_product`): correlations and entanglement.

A state of :math:`\mathbb{C}^{d_A} \otimes \mathbb{C}^{d_B}` is given with
``dims=(d_A, d_B)``; index :math:`i d_B + j` is :math:`|i\rangle|j\rangle`
(the order of :func:`tensor_product` and :func:`partial_trace`).

* :func:`schmidt_decomposition` of pure states,
  :math:`|\psi\rangle = \sum_k c_k |a_k\rangle|b_k\rangle`, from the SVD of the
  :math:`d_A \times d_B` coefficient matrix;
* :func:`mutual_information` and :func:`conditional_entropy` from the
  entropies of the reduced states;
* :func:`partial_transpose`, :func:`negativity` and :func:`log_negativity`,
  the Peres-Horodecki entanglement measures (Vidal & Werner 2002).

Pure states take the Schmidt route (exact, no d x d matrix): their reduced
states have the spectrum :math:`c_k^2` and :math:`\|\rho^{T_B}\|_1 = (\sum_k c_k)^2`.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import torch

from qpnlp._repr import record_repr

from . import _mixture as M
from . import _validation as V
from ._composite import partial_trace
from ._entropy import _xlogx, log_base, von_neumann_entropy
from ._linalg import decompose
from ._operands import as_density_tensor
from ._states import PureState

__all__ = ["SchmidtDecomposition", "schmidt_decomposition", "partial_transpose", "negativity", "log_negativity",
           "mutual_information", "conditional_entropy"]


class SchmidtDecomposition(NamedTuple):
    r""":math:`|\psi\rangle = \sum_k c_k |a_k\rangle \otimes |b_k\rangle`, :math:`r = \min(d_A, d_B)` terms: a named
    tuple of the fields below."""

    coefficients: torch.Tensor
    r"""Real ``(..., r)``, the :math:`c_k`, descending, with :math:`\sum_k c_k^2 = 1`."""
    left: PureState
    r"""The orthonormal :math:`|a_k\rangle`, batch shape ``(..., r)``, dimension :math:`d_A`."""
    right: PureState
    r"""The orthonormal :math:`|b_k\rangle`, batch shape ``(..., r)``, dimension :math:`d_B`."""

    def __repr__(self) -> str:
        """The fields' shapes and dtypes, never their values (``record_repr``)."""
        return record_repr(self)

    # ``==`` of a tuple compares the tensors, which raises ("Boolean value of Tensor with more than one value is
    # ambiguous"): identity instead, as for PureState (compare values field by field, e.g. with ``equal``).
    __eq__, __ne__, __hash__ = object.__eq__, object.__ne__, object.__hash__


def _dims(dims: Sequence[int], total: int) -> tuple[int, int]:
    return V.check_subsystem_dims(dims, total, count=2)


def _dim_of(rho) -> int:
    """Dimension of a state argument: a PureState, Ensemble, DensityMatrix or a square tensor."""
    if isinstance(rho, torch.Tensor):
        if rho.dim() < 2 or rho.shape[-1] != rho.shape[-2]:
            raise ValueError(f"rho must have shape (..., d, d); got shape {tuple(rho.shape)}")
        return rho.shape[-1]
    if not hasattr(rho, "dim") or not isinstance(getattr(rho, "dim"), int):
        raise TypeError(f"rho must be a PureState, Ensemble, DensityMatrix or complex tensor; got {type(rho).__name__}")
    return rho.dim


def schmidt_decomposition(state, dims: Sequence[int]) -> SchmidtDecomposition:
    r"""Schmidt decomposition :math:`|\psi\rangle = \sum_k c_k |a_k\rangle|b_k\rangle` of pure bipartite states.

    With :math:`\psi_{ij} = \langle i j|\psi\rangle` reshaped to a
    :math:`d_A \times d_B` matrix :math:`C = U \operatorname{diag}(c) W^\dagger`
    (SVD), :math:`|a_k\rangle` is column k of U and :math:`|b_k\rangle` is
    row k of :math:`W^\dagger` (Nielsen & Chuang, theorem 2.7). The
    :math:`c_k^2` are the eigenvalues of both reduced states.

    Parameters
    ----------
    state : PureState or torch.Tensor
        Complex ``(..., d_A d_B)``.
    dims : (int, int)
        :math:`(d_A, d_B)`.

    Returns
    -------
    SchmidtDecomposition
        ``coefficients`` ``(..., r)``, ``left`` and ``right`` states.

    Examples
    --------
    >>> bell = PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=torch.complex64))
    >>> schmidt_decomposition(bell, (2, 2)).coefficients
    tensor([0.7071, 0.7071])
    """
    if isinstance(state, PureState):
        data = state.data
    else:                                       # checked as PureState(state) is, with errors naming "state"
        M.check_state_tensor("state", state, None)
        data = state
    da, db = _dims(dims, data.shape[-1])
    u, c, wh = decompose(torch.linalg.svd, data.reshape(*data.shape[:-1], da, db), full_matrices=False)
    return SchmidtDecomposition(c, PureState._trusted(data=u.mT), PureState._trusted(data=wh))


def partial_transpose(rho, dims: Sequence[int], subsystem: int = 1) -> torch.Tensor:
    r"""Partial transpose :math:`\rho^{T_B}` (``subsystem=1``) or :math:`\rho^{T_A}` (``subsystem=0``), ``(..., d, d)``.

    :math:`\langle i j|\rho^{T_B}|k l\rangle = \langle i l|\rho|k j\rangle`.
    Hermitian with unit trace, but not positive for entangled states
    (Peres 1996), so it is returned as a plain tensor.

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension :math:`d = d_A d_B` (a complex ``(..., d, d)`` tensor is read as a density matrix).
    dims : (int, int)
        :math:`(d_A, d_B)`, with :math:`d_A d_B = d`.
    subsystem : int, optional
        The factor transposed: 1 (B, the default) or 0 (A).

    Returns
    -------
    torch.Tensor
        Complex ``(..., d, d)``, Hermitian, unit trace.

    Examples
    --------
    >>> bell = PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=torch.complex64))
    >>> torch.linalg.eigvalsh(partial_transpose(bell, (2, 2)))
    tensor([-0.5000,  0.5000,  0.5000,  0.5000])
    """
    data = as_density_tensor(rho)
    da, db = _dims(dims, data.shape[-1])
    if subsystem not in (0, 1):
        raise ValueError(f"subsystem must be 0 (A) or 1 (B); got {subsystem}")
    blocks = data.reshape(*data.shape[:-2], da, db, da, db)                 # (..., i, j, k, l)
    swapped = blocks.transpose(-3, -1) if subsystem == 1 else blocks.transpose(-4, -2)
    return swapped.reshape(data.shape)


def _trace_norm_of_partial_transpose(rho, dims: Sequence[int]) -> torch.Tensor:
    if isinstance(rho, PureState):
        return schmidt_decomposition(rho, dims).coefficients.sum(-1).square()
    return decompose(torch.linalg.eigvalsh, partial_transpose(rho, dims)).abs().sum(-1)


def negativity(rho, dims: Sequence[int]) -> torch.Tensor:
    r"""Negativity :math:`\mathcal{N}(\rho) = \tfrac12(\|\rho^{T_B}\|_1 - 1)`, the sum of the moduli of the negative eigenvalues of :math:`\rho^{T_B}`.

    Vidal & Werner, Phys. Rev. A 65, 032314 (2002), QuTiP's ``negativity``;
    zero for separable states, :math:`(d-1)/2` for a maximally entangled
    state of two d-level systems. For pure states
    :math:`\|\rho^{T_B}\|_1 = (\sum_k c_k)^2`. Real ``(...)``. Gradient: finite at
    repeated eigenvalues of :math:`\rho^{T_B}` and Schmidt coefficients; a zero
    eigenvalue of :math:`\rho^{T_B}` (the kink of :math:`|\cdot|`) contributes 0, a zero
    Schmidt coefficient of a pure state the SVD's subgradient.

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension :math:`d = d_A d_B` (a complex ``(..., d, d)`` tensor is read as a density matrix).
    dims : (int, int)
        :math:`(d_A, d_B)`, with :math:`d_A d_B = d`.

    Examples
    --------
    >>> bell = PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=torch.complex128))
    >>> round(float(negativity(bell, (2, 2))), 6)
    0.5
    """
    return 0.5 * (_trace_norm_of_partial_transpose(rho, dims) - 1.0).clamp_min(0)


def log_negativity(rho, dims: Sequence[int], *, base: float = 2.0) -> torch.Tensor:
    r"""Logarithmic negativity :math:`E_N(\rho) = \log_2 \|\rho^{T_B}\|_1`, real ``(...)``.

    Vidal & Werner (2002), in bits by default (their convention); an upper
    bound of the distillable entanglement, :math:`\log_2 d` for a maximally
    entangled state of two d-level systems.

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension :math:`d = d_A d_B` (a complex ``(..., d, d)`` tensor is read as a density matrix).
    dims : (int, int)
        :math:`(d_A, d_B)`, with :math:`d_A d_B = d`.
    base : float, optional
        Base of the logarithm: 2 (bits, the default), e for nats.

    Examples
    --------
    >>> bell = PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=torch.complex128))
    >>> round(float(log_negativity(bell, (2, 2))), 6)
    1.0
    """
    return torch.log(_trace_norm_of_partial_transpose(rho, dims).clamp_min(1.0)) / log_base(base)


def _reduced_entropy(rho, dims, keep: int, base: float) -> torch.Tensor:
    if isinstance(rho, PureState):
        probs = schmidt_decomposition(rho, dims).coefficients.square()
        return -_xlogx(probs).sum(-1) / log_base(base)
    return von_neumann_entropy(partial_trace(rho, dims, keep=keep), base=base)


def mutual_information(rho, dims: Sequence[int], *, base: float = math.e) -> torch.Tensor:
    r"""Quantum mutual information :math:`I(A:B) = S(\rho_A) + S(\rho_B) - S(\rho_{AB})`.

    Non-negative, zero iff :math:`\rho = \rho_A \otimes \rho_B`, at most
    :math:`2\log\min(d_A, d_B)` (Nielsen & Chuang section 11.3; QuTiP's
    ``entropy_mutual``). For pure states :math:`2 S(\rho_A)` from the
    Schmidt coefficients. Real ``(...)``, nats by default. Gradients as in
    :func:`von_neumann_entropy`: zero eigenvalues of the states contribute 0.

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension :math:`d = d_A d_B` (a complex ``(..., d, d)`` tensor is read as a density matrix).
    dims : (int, int)
        :math:`(d_A, d_B)`, with :math:`d_A d_B = d`.
    base : float, optional
        Base of the logarithm: e (nats, the default), 2 for bits.

    Examples
    --------
    >>> bell = PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=torch.complex128))
    >>> round(float(mutual_information(bell, (2, 2), base=2)), 6)
    2.0
    """
    if isinstance(rho, PureState):
        return 2.0 * _reduced_entropy(rho, dims, 0, base)
    _dims(dims, _dim_of(rho))
    return (_reduced_entropy(rho, dims, 0, base) + _reduced_entropy(rho, dims, 1, base)
            - von_neumann_entropy(rho, base=base))


def conditional_entropy(rho, dims: Sequence[int], *, given: int = 1, base: float = math.e) -> torch.Tensor:
    r"""Conditional entropy :math:`S(A|B) = S(\rho_{AB}) - S(\rho_B)` (``given=1``; ``given=0`` for :math:`S(B|A)`).

    Negative only for entangled states, down to :math:`-\log\min(d_A, d_B)`
    (Nielsen & Chuang eq. 11.51; QuTiP's ``entropy_conditional`` with
    ``selB=given``). Real ``(...)``, nats by default.

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension :math:`d = d_A d_B` (a complex ``(..., d, d)`` tensor is read as a density matrix).
    dims : (int, int)
        :math:`(d_A, d_B)`, with :math:`d_A d_B = d`.
    given : int, optional
        The conditioning factor: 1 (B, the default) for :math:`S(A|B)`, 0 (A) for :math:`S(B|A)`.
    base : float, optional
        Base of the logarithm: e (nats, the default), 2 for bits.

    Examples
    --------
    >>> bell = PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=torch.complex128))
    >>> round(float(conditional_entropy(bell, (2, 2), base=2)), 6)
    -1.0
    """
    if given not in (0, 1):
        raise ValueError(f"given must be 0 (A) or 1 (B); got {given}")
    _dims(dims, _dim_of(rho))
    return von_neumann_entropy(rho, base=base) - _reduced_entropy(rho, dims, given, base)
