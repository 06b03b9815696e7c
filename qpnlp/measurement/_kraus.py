r"""Post-measurement states of general measurements (Kraus operators).

Observing the outcome of a Kraus operator :math:`M` (m x d) maps

.. math:: \rho \mapsto \frac{M\rho M^\dagger}{\operatorname{Tr}(M^\dagger M\rho)}, \qquad
          |w\rangle \mapsto \frac{M|w\rangle}{\|M|w\rangle\|}, \qquad
          \sum_i p_i |w_i\rangle\langle w_i| \mapsto \sum_i \frac{p_i \|M w_i\|^2}{p}
          \frac{M|w_i\rangle\langle w_i|M^\dagger}{\|M w_i\|^2}

(Nielsen & Chuang eq. 2.92). The last form keeps a lazy
:class:`~qpnlp.hilbert.Ensemble` lazy: its members are updated one by one.
"""

from __future__ import annotations

from typing import overload

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, promote
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._linalg import decompose
from qpnlp.hilbert._operands import (factor_root_pushforward, first_order_backward, first_order_only,
                                     hermitian_root_pullback, rank_tolerance)

__all__ = ["kraus_update", "lueders_operator"]


class _FactorRoot(torch.autograd.Function):
    r""":math:`\sqrt{W W^\dagger} = U S U^\dagger` from the thin SVD :math:`W = U S X^\dagger` of W ``(..., d, r)``.

    A custom Function because the SVD's backward divides by :math:`s_i^2 - s_j^2`: at repeated singular
    values (every projector of rank >= 2, whose rows are orthonormal) it gave a finite but wrong gradient,
    and at a zero singular value (rank-deficient W) NaN. :math:`\sqrt{WW^\dagger}` depends on U only through
    the spectral projectors, and the Daleckii-Krein backward of the square root
    (``qpnlp.hilbert._operands.root_pullback``, divided differences :math:`1/(s_i + s_j)`) needs no gap.
    Where W is rank-deficient the root has a kink (a zero singular value of W moves as :math:`|\epsilon|`);
    the directions that raise its rank get gradient 0, the central difference. Singular values below
    ``qpnlp.hilbert._operands.rank_tolerance`` (round-off of a zero one) count as zero in the backward.
    Returns the root and, not differentiable, U, those singular values and X for the backward: the forward
    sets nothing on ``ctx`` (``setup_context`` does), so ``torch.func.grad`` and ``vmap`` run it too. The
    ``jvp`` is the adjoint of that backward (``qpnlp.hilbert._operands.factor_root_pushforward``).
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(factor):
        u, s, xh = decompose(torch.linalg.svd, factor, full_matrices=False)
        resolved = torch.where(s > rank_tolerance(s, factor.shape[-2]), s, torch.zeros_like(s))   # round-off: 0
        return (u * s.to(u.dtype).unsqueeze(-2)) @ u.mH, u, resolved, xh

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(*output[1:])
        ctx.save_for_backward(*output[1:], inputs[0])                 # the factor: a second derivative raises
        ctx.save_for_forward(*output[1:])

    @staticmethod
    @first_order_backward("the square root of an effect")
    def backward(ctx, grad, *_grad_decomposition):
        u, s, xh, _ = ctx.saved_tensors
        return hermitian_root_pullback("factor", s, u, xh.mH, grad)

    @staticmethod
    def jvp(ctx, tangent):
        first_order_only("jvp", "the square root of an effect", ctx)
        u, s, xh = ctx.saved_tensors
        return factor_root_pushforward(s, u, xh.mH, tangent), None, None, None


def lueders_operator(vectors: torch.Tensor) -> torch.Tensor:
    r""":math:`\sqrt{E}` ``(..., d, d)`` of an effect given by factor vectors ``(..., r, d)``, :math:`E = \sum_s |v_s\rangle\langle v_s|`.

    From the thin SVD :math:`W = U S X^\dagger` of :math:`W = [v_1, \dots, v_r]`:
    :math:`E = U S^2 U^\dagger`, :math:`\sqrt E = U S U^\dagger`. Singular values
    are exact to round-off where eigenvalues of E would leave :math:`\sqrt\epsilon`
    in the null space (a projector stays a projector). The gradient is the Daleckii-Krein one of the
    square root (``_FactorRoot``): right at repeated singular values (projectors); at a rank-deficient W,
    where :math:`\sqrt E` has a kink, the directions that raise the rank get 0 (a subgradient, not NaN).
    """
    return _FactorRoot.apply(vectors.mT)[0]


def _check_possible(prob: torch.Tensor, dtype, dim: int, *, squared_norm: bool = False) -> None:
    r"""Raise unless every outcome probability ``prob`` is above round-off.

    A dense :math:`\operatorname{Tr}(M\rho M^\dagger)` carries round-off of order d eps. A lazy one is a
    (weighted) squared norm :math:`\|M w\|^2` (``squared_norm=True``): the norm carries the d eps, the
    probability only its square (d eps on the probability refuses real outcomes: about one in seven
    rank-1 outcomes of a random complex64 state at d = 300).
    """
    tol = V.tolerance(dtype, dim)
    if squared_norm:
        tol = tol * tol
    if V.has_values(prob) and bool((prob <= tol).any()):   # meta tensors: shapes only
        worst = int(prob.reshape(-1).argmin())
        raise ValueError(f"the outcome has probability {float(prob.reshape(-1)[worst]):.3g} <= {tol:.2g} "
                         f"(flat batch index {worst}); the post-measurement state is undefined")


def _reweighted(images: torch.Tensor, weights: torch.Tensor, dim: int) -> Ensemble:
    r"""The ensemble of the normalised images :math:`M w_i / \|M w_i\|` with weights :math:`p_i \|M w_i\|^2 / p`.

    ``images`` ``(..., n, m)`` are the :math:`M|w_i\rangle`, ``weights`` ``(..., n)`` the :math:`p_i`; their batch
    dims broadcast. :math:`p = \sum_i p_i \|M w_i\|^2` is checked as a squared norm of a d-dimensional state
    (``dim``); members that M annihilates keep a zero vector and get weight 0.
    """
    norms = torch.linalg.vector_norm(images, dim=-1)
    weights = weights.to(norms.dtype) * norms.square()
    prob = weights.sum(-1)
    _check_possible(prob, images.dtype, dim, squared_norm=True)
    alive = norms > 0
    images = images / torch.where(alive, norms, torch.ones_like(norms)).unsqueeze(-1).to(images.dtype)
    return Ensemble._trusted(states=images, weights=weights / prob.unsqueeze(-1))


@overload
def kraus_update(system: PureState, operator: torch.Tensor) -> PureState: ...
@overload
def kraus_update(system: Ensemble, operator: torch.Tensor) -> Ensemble: ...
@overload
def kraus_update(system: DensityMatrix, operator: torch.Tensor) -> DensityMatrix: ...


def kraus_update(system: PureState | Ensemble | DensityMatrix,
                 operator: torch.Tensor) -> PureState | Ensemble | DensityMatrix:
    r"""State after the outcome of the Kraus operator ``operator`` :math:`M` ``(..., m, d)``.

    Parameters
    ----------
    system : PureState, Ensemble or DensityMatrix
        The state before the measurement, dimension d.
    operator : torch.Tensor
        Complex ``(..., m, d)``; its batch dims broadcast with the system's.

    Returns
    -------
    PureState, Ensemble or DensityMatrix
        The same kind as ``system``, of dimension m. Ensemble members that
        the outcome annihilates get weight 0 (and a zero vector).

    Raises
    ------
    ValueError
        When the outcome has probability zero (the update is undefined).

    Examples
    --------
    >>> m = torch.tensor([[1.0, 0.0], [0.0, 0.5]], dtype=torch.complex64)   # a weak measurement
    >>> kraus_update(PureState.from_real(torch.tensor([0.6, 0.8])), m).data
    tensor([0.8321+0.j, 0.5547+0.j])
    """
    if not isinstance(system, (PureState, Ensemble, DensityMatrix)):   # a raw tensor also has .dim: refuse it
        raise TypeError(f"kraus_update takes a PureState, Ensemble or DensityMatrix; got {type(system).__name__}")
    V.check_tensor("operator", operator)
    V.check_complex("operator", operator)
    V.check_min_ndim("operator", operator, 2, "(..., m, d)")
    V.check_dims_match("system", system.dim, "operator", operator.shape[-1])
    V.check_broadcast("system", system.batch_shape, "operator", operator.shape[:-2])
    if V.enabled():
        V.check_finite("operator", operator, event_ndim=2)
    if isinstance(system, PureState):
        m, state = promote(operator, system.data)
        image = (m @ state.unsqueeze(-1)).squeeze(-1)
        norm = torch.linalg.vector_norm(image, dim=-1, keepdim=True)
        _check_possible(norm.squeeze(-1).square(), image.dtype, state.shape[-1], squared_norm=True)
        return PureState._trusted(data=image / norm)
    if isinstance(system, Ensemble):
        m, states = promote(operator, system.states.data)
        return _reweighted(states @ m.mT, system.weights, states.shape[-1])   # row i of the images is M w_i
    m, rho = promote(operator, system.data)                            # a DensityMatrix
    updated = m @ rho @ m.mH
    prob = torch.diagonal(updated, dim1=-2, dim2=-1).sum(-1).real
    _check_possible(prob, rho.dtype, rho.shape[-1])
    return DensityMatrix._trusted(data=updated / prob[..., None, None])
