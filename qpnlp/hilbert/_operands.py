r"""How the metric functions read their arguments: dense matrices, spectra and factors.

Every metric accepts a :class:`~qpnlp.hilbert.PureState`, an
:class:`~qpnlp.hilbert.Ensemble`, a :class:`~qpnlp.hilbert.DensityMatrix` or
a plain complex ``(..., d, d)`` tensor. The helpers here turn any of them
into what a formula needs, as cheaply and as exactly as the kind allows:

* :func:`as_density_tensor` - the dense :math:`\rho` ``(..., d, d)``;
* :func:`spectrum` - the eigenvalues, through the n x n Gram matrix for small ensembles;
* :func:`sqrt_factor` - a factor :math:`A` with :math:`\rho = A A^\dagger`:
  exact for pure states (:math:`A = |\psi\rangle`, d x 1) and ensembles
  (:math:`A = [\sqrt{p_i}\,w_i]`, d x n), from ``eigh`` otherwise;
* :func:`eigen_factor` - :math:`\rho = U \operatorname{diag}(\lambda) U^\dagger`,
  from the thin SVD of :math:`A` for ensembles (no d x d matrix).

Dense matrices built in floating point carry spurious eigenvalues of a few
:math:`\epsilon\,\lambda_{\max}` where the true ones are zero, and a square
root turns them into errors of :math:`\sqrt{\epsilon}` (half the digits).
The factors of dense matrices therefore drop eigenvalues below
:func:`rank_tolerance`, :math:`2\sqrt{d}\,\epsilon\,\lambda_{\max}`: a rank
deficiency is kept exact, at the price of treating true eigenvalues that
small as zero (they are below what the dtype resolves in a d x d matrix).
"""

from __future__ import annotations

import torch

from . import _mixture as M
from . import _validation as V
from ._ensemble import Ensemble
from ._states import DensityMatrix, PureState

#: Eigenvalues of a dense state below ``RANK_FACTOR * sqrt(d) * eps * lambda_max`` are zero.
RANK_FACTOR = 2.0


def as_density_tensor(obj, name: str = "rho", validate: V.Validate = None) -> torch.Tensor:
    """Dense ``(..., d, d)`` tensor of a state, mixture, density matrix or raw tensor."""
    if isinstance(obj, DensityMatrix):
        return obj.data
    if isinstance(obj, PureState):
        return obj.proj().data
    if isinstance(obj, Ensemble):
        return obj.dense().data
    M.check_density_tensor(name, obj, validate)
    return obj


def _event(obj, name: str) -> tuple[int, tuple[int, ...], torch.device]:
    """Dimension, batch shape and device of a state argument (TypeError for anything else)."""
    if isinstance(obj, (PureState, Ensemble, DensityMatrix)):
        return obj.dim, tuple(obj.batch_shape), obj.device
    V.check_tensor(name, obj)
    V.check_square(name, obj)
    return obj.shape[-1], tuple(obj.shape[:-2]), obj.device


def check_pair(rho, sigma, names: tuple[str, str] = ("rho", "sigma")) -> None:
    """Two states of one dimension, broadcastable batch shapes and one device, or a clear error."""
    (d_a, batch_a, dev_a), (d_b, batch_b, dev_b) = _event(rho, names[0]), _event(sigma, names[1])
    V.check_dims_match(names[0], d_a, names[1], d_b)
    V.check_broadcast(names[0], batch_a, names[1], batch_b)
    if dev_a != dev_b:
        raise ValueError(f"arguments must be on one device; got {names[0]} on {dev_a}, {names[1]} on {dev_b}")


def spectrum(obj, name: str = "rho", validate: V.Validate = None) -> torch.Tensor:
    """Eigenvalues of rho clamped at zero, ascending; lazily through the Gram matrix for small ensembles.

    While validation is on (``validate``, default the global mode), a dense
    state with an eigenvalue below ``-tolerance`` raises ValueError (the
    eigenvalues are computed anyway, so the positivity check is free here,
    unlike at construction where it needs the strict mode).
    """
    if isinstance(obj, PureState):
        return torch.ones(obj.batch_shape + (1,), dtype=V.real_dtype_of(obj.dtype), device=obj.device)
    if isinstance(obj, Ensemble):
        return obj.eigvals().clamp_min(0)
    lam = obj.eigvals() if isinstance(obj, DensityMatrix) else torch.linalg.eigvalsh(
        as_density_tensor(obj, name, validate))
    if V.enabled(validate):
        V.check_spectrum(name, lam, lam.shape[-1])
    return lam.clamp_min(0)


def rank_tolerance(eigenvalues: torch.Tensor, dim: int) -> torch.Tensor:
    """Threshold ``(..., 1)`` below which eigenvalues of a dense ``dim``-dimensional state count as zero."""
    eps = torch.finfo(eigenvalues.dtype).eps
    largest = eigenvalues.detach().abs().amax(-1, keepdim=True)
    return RANK_FACTOR * dim ** 0.5 * eps * largest


def safe_sqrt(values: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    """``sqrt`` of values clamped at zero, with gradient 0 (not NaN) where a value is dropped or <= 0."""
    keep = values > 0 if keep is None else keep & (values > 0)
    return torch.where(keep, torch.where(keep, values, torch.ones_like(values)).sqrt(), torch.zeros_like(values))


def _dense_eigen(obj, name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rho = as_density_tensor(obj, name)
    lam, vecs = torch.linalg.eigh(rho)
    if V.enabled():
        V.check_spectrum(name, lam, rho.shape[-1])                    # free: the eigenvalues are here
    keep = lam > rank_tolerance(lam, rho.shape[-1])
    return lam, vecs, keep


class _PsdSqrt(torch.autograd.Function):
    r""":math:`\sqrt\rho = U\operatorname{diag}(\sqrt{\lambda})U^\dagger` with eigenvalues below :func:`rank_tolerance` set to zero.

    Returns the root and the eigenvalues (not differentiable). The backward is
    the Daleckii-Krein formula :math:`\bar\rho = U[(U^\dagger \bar A U) \circ K]U^\dagger`,
    :math:`K_{ij} = 1/(\sqrt{\lambda_i} + \sqrt{\lambda_j})` (0 where both are
    zero), finite at repeated eigenvalues, where ``eigh``'s backward divides
    by their zero gap and gives NaN (e.g. at the maximally mixed state).
    """

    @staticmethod
    def forward(ctx, rho):
        lam, vecs = torch.linalg.eigh(rho)
        keep = lam > rank_tolerance(lam, rho.shape[-1])
        roots = safe_sqrt(lam, keep)
        ctx.save_for_backward(vecs, roots)
        ctx.mark_non_differentiable(lam)
        return (vecs * roots.to(vecs.dtype).unsqueeze(-2)) @ vecs.mH, lam

    @staticmethod
    @torch.autograd.function.once_differentiable              # a double backward raises instead of going wrong
    def backward(ctx, grad_root, grad_lam):
        vecs, roots = ctx.saved_tensors
        total = roots.unsqueeze(-1) + roots.unsqueeze(-2)
        kernel = torch.where(total > 0, 1.0 / torch.where(total > 0, total, torch.ones_like(total)),
                             torch.zeros_like(total))
        return vecs @ ((vecs.mH @ grad_root @ vecs) * kernel.to(vecs.dtype)) @ vecs.mH


def sqrt_factor(obj, name: str = "rho") -> torch.Tensor:
    r"""A factor :math:`A` ``(..., d, r)`` with :math:`\rho = A A^\dagger` (see the module docstring).

    PureState: r = 1; Ensemble: r = n (the member states scaled by
    :math:`\sqrt{p_i}`, exact); dense: r = d, the Hermitian
    :math:`A = \sqrt\rho = U\operatorname{diag}(\sqrt{\lambda})U^\dagger` with
    eigenvalues below :func:`rank_tolerance` set to zero (gradients finite
    at repeated eigenvalues, see :class:`_PsdSqrt`).
    """
    if isinstance(obj, PureState):
        return obj.data.unsqueeze(-1)
    if isinstance(obj, Ensemble):
        return obj.factor()
    rho = as_density_tensor(obj, name)
    root, lam = _PsdSqrt.apply(rho)
    if V.enabled():
        V.check_spectrum(name, lam, rho.shape[-1])                    # free: the eigenvalues are here
    return root


def eigen_factor(obj, name: str = "rho") -> tuple[torch.Tensor, torch.Tensor]:
    r"""Eigenvalues ``(..., r)`` and orthonormal eigenvectors as columns ``(..., d, r)`` of the support.

    Ensembles go through the thin SVD :math:`A = U S W^\dagger` of their
    factor (:math:`\lambda = S^2`, no d x d matrix, no spurious eigenvalues);
    dense states through ``eigh`` with the eigenvalues below
    :func:`rank_tolerance` set to zero.
    """
    if isinstance(obj, PureState):
        ones = torch.ones(obj.batch_shape + (1,), dtype=V.real_dtype_of(obj.dtype), device=obj.device)
        return ones, obj.data.unsqueeze(-1)
    if isinstance(obj, Ensemble):
        u, s, _ = torch.linalg.svd(obj.factor(), full_matrices=False)
        return s.square(), u
    lam, vecs, keep = _dense_eigen(obj, name)
    return torch.where(keep, lam, torch.zeros_like(lam)), vecs
