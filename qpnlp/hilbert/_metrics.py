"""Relations between states: fidelity, trace distance, entropies.

Every function takes :class:`PureState`, :class:`DensityMatrix`,
:class:`Ensemble` objects or plain complex ``(..., d, d)`` tensors, and
broadcasts over batch dims.
"""

from __future__ import annotations

import math

import torch

from . import _validation as V
from ._contract import contract
from ._density import DensityMatrix, validate_density_tensor
from ._ensemble import Ensemble
from ._linalg import promote, psd_sqrt
from ._state import PureState


def as_density_tensor(obj, name: str = "rho", validate: V.Validate = None) -> torch.Tensor:
    """Dense ``(..., d, d)`` tensor of a state, mixture, density matrix or raw tensor."""
    if isinstance(obj, DensityMatrix):
        return obj.data
    if isinstance(obj, (PureState, Ensemble)):
        return (obj.proj() if isinstance(obj, PureState) else obj.dense()).data
    validate_density_tensor(name, obj, validate)
    return obj


def _spectrum(obj) -> torch.Tensor:
    """Eigenvalues of rho, clamped at zero; lazily through the Gram matrix for small ensembles."""
    if isinstance(obj, PureState):
        ones = torch.ones(obj.batch_shape + (1,), dtype=V.real_dtype_of(obj.dtype), device=obj.device)
        return ones
    if isinstance(obj, (Ensemble, DensityMatrix)):
        return obj.eigvals().clamp_min(0)
    return torch.linalg.eigvalsh(as_density_tensor(obj)).clamp_min(0)


def von_neumann_entropy(rho, *, base: float = math.e) -> torch.Tensor:
    r"""Von Neumann entropy :math:`S(\rho) = -\operatorname{Tr}\rho\log\rho = -\sum_k \lambda_k \log\lambda_k`.

    In nats by default (``base=2`` for bits); :math:`0 \log 0 = 0`. Zero for
    pure states, :math:`\log d` for the maximally mixed state. Real ``(...)``.

    >>> round(float(von_neumann_entropy(DensityMatrix.maximally_mixed(4), base=2)), 6)
    2.0
    """
    lam = _spectrum(rho)
    terms = torch.where(lam > 0, lam * torch.log(lam.clamp_min(torch.finfo(lam.dtype).tiny)), torch.zeros_like(lam))
    return -terms.sum(-1) / math.log(base)


def purity(rho) -> torch.Tensor:
    r"""Purity :math:`\operatorname{Tr}\rho^2` in :math:`[1/d, 1]` (lazy for ensembles), real ``(...)``."""
    if isinstance(rho, (DensityMatrix, Ensemble)):
        return rho.purity()
    if isinstance(rho, PureState):
        return torch.ones(rho.batch_shape, dtype=V.real_dtype_of(rho.dtype), device=rho.device)
    return DensityMatrix(rho).purity()


def fidelity(rho, sigma, *, squared: bool = True) -> torch.Tensor:
    r"""Uhlmann fidelity between two states, real ``(...)`` in [0, 1].

    We use the *squared* convention (Jozsa 1994):

    .. math:: F(\rho, \sigma) = \left(\operatorname{Tr}\sqrt{\sqrt{\rho}\,\sigma\sqrt{\rho}}\right)^2,

    which for pure states is the transition probability
    :math:`|\langle\psi|\phi\rangle|^2`. ``squared=False`` gives Nielsen &
    Chuang's root fidelity :math:`\operatorname{Tr}\sqrt{\sqrt{\rho}\sigma\sqrt{\rho}}`.
    Symmetric, and 1 exactly when the states are equal.

    >>> a = PureState.from_real(torch.tensor([1.0, 0.0]))
    >>> b = PureState.from_real(torch.tensor([0.6, 0.8]))
    >>> round(float(fidelity(a, b)), 6)
    0.36
    """
    if isinstance(rho, PureState) and isinstance(sigma, PureState):
        f = rho.overlap(sigma)
        return f if squared else f.sqrt()
    r, s = promote(as_density_tensor(rho, "rho"), as_density_tensor(sigma, "sigma"))
    V.check_dims_match("rho", r.shape[-1], "sigma", s.shape[-1])
    root = psd_sqrt(r)
    lam = torch.linalg.eigvalsh(root @ s @ root).clamp_min(0)
    f = lam.sqrt().sum(-1)
    f = f.clamp(max=1.0)
    return f.square() if squared else f


def trace_distance(rho, sigma) -> torch.Tensor:
    r"""Trace distance :math:`T(\rho,\sigma) = \tfrac12 \|\rho - \sigma\|_1 = \tfrac12\sum_k |\lambda_k(\rho-\sigma)|`.

    A metric on states with values in [0, 1]. Real ``(...)``.
    """
    r, s = promote(as_density_tensor(rho, "rho"), as_density_tensor(sigma, "sigma"))
    V.check_dims_match("rho", r.shape[-1], "sigma", s.shape[-1])
    return 0.5 * torch.linalg.eigvalsh(r - s).abs().sum(-1)


def relative_entropy(rho, sigma, *, base: float = math.e) -> torch.Tensor:
    r"""Quantum relative entropy :math:`S(\rho\|\sigma) = \operatorname{Tr}\rho(\log\rho - \log\sigma)`.

    Non-negative, zero iff :math:`\rho = \sigma`, and :math:`+\infty` when the
    support of :math:`\rho` is not inside that of :math:`\sigma`. Computed in
    the eigenbasis of :math:`\sigma`: :math:`\operatorname{Tr}\rho\log\sigma =
    \sum_k \langle s_k|\rho|s_k\rangle \log\mu_k`. Real ``(...)``, nats by default.
    """
    r, s = promote(as_density_tensor(rho, "rho"), as_density_tensor(sigma, "sigma"))
    V.check_dims_match("rho", r.shape[-1], "sigma", s.shape[-1])
    tol = V.tolerance(r.dtype, r.shape[-1])
    mu, vecs = torch.linalg.eigh(s)
    populations = contract("...ak,...ab,...bk->...k", vecs.conj(), r, vecs).real
    outside = (mu <= tol) & (populations > tol)
    log_mu = torch.log(mu.clamp_min(tol))
    cross = torch.where(populations > tol, populations * log_mu, torch.zeros_like(mu)).sum(-1)
    neg_entropy = -von_neumann_entropy(DensityMatrix._trusted(data=r))
    value = (neg_entropy - cross) / math.log(base)
    return torch.where(outside.any(-1), torch.full_like(value, math.inf), value)
