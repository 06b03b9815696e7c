"""Density matrices: sentences as mixtures of word states."""

from __future__ import annotations

import torch

from . import _validation as V
from ._batched import Batched
from ._linalg import promote, trace


def validate_density_tensor(name: str, data: torch.Tensor, validate: V.Validate) -> None:
    """Type, shape and (per mode) Hermitian, unit-trace and PSD checks for ``(..., d, d)``."""
    V.check_tensor(name, data)
    V.check_complex(name, data)
    V.check_square(name, data)
    mode = V.resolve(validate)
    if mode:
        V.check_finite(name, data, event_ndim=2)
        V.check_hermitian(name, data)
        V.check_unit_trace(name, data)
    if mode == "strict":
        V.check_psd(name, data)


class DensityMatrix(Batched):
    r"""A batch of density matrices :math:`\rho` of shape ``(..., d, d)``.

    :math:`\rho = \rho^\dagger`, :math:`\rho \succeq 0`, :math:`\operatorname{Tr}\rho = 1`.
    A sentence is the mixture :math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|`
    of its word states (thesis section 3.2.3); see :meth:`from_ensemble`. When
    only measurement probabilities are needed, prefer the lazy
    :class:`~qpnlp.hilbert.Ensemble`, which never builds the d x d matrix.

    Examples
    --------
    >>> rho = DensityMatrix.maximally_mixed(4)
    >>> float(rho.purity())
    0.25
    >>> float(rho.tr().real)
    1.0
    """

    _fields = ("data",)
    _event_ndims = (2,)
    __slots__ = ("_data",)

    def __init__(self, data: torch.Tensor, *, validate: V.Validate = None) -> None:
        validate_density_tensor("rho", data, validate)
        object.__setattr__(self, "_data", data)

    # -- constructors -------------------------------------------------------
    @classmethod
    def from_ensemble(cls, states, weights: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                      *, validate: V.Validate = None) -> "DensityMatrix":
        r""":math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` from states ``(..., n, d)`` and weights ``(..., n)``.

        ``mask`` (bool ``(..., n)``, True = real word) excludes padded
        positions; ``weights=None`` means uniform over the unmasked states.
        See :class:`~qpnlp.hilbert.Ensemble` for the checks.
        """
        from ._ensemble import Ensemble

        return Ensemble(states, weights, mask, validate=validate).dense()

    @classmethod
    def from_pure(cls, state) -> "DensityMatrix":
        r""":math:`|w\rangle\langle w|` of a :class:`PureState`."""
        return state.proj()

    @classmethod
    def maximally_mixed(cls, dim: int, *, batch_shape=(), dtype=torch.complex64, device=None) -> "DensityMatrix":
        """The state ``I / d`` with the given batch shape."""
        if dim < 1:
            raise ValueError(f"dim must be >= 1; got {dim}")
        eye = torch.eye(dim, dtype=V.complex_dtype_of(dtype), device=device) / dim
        return cls._trusted(data=eye.expand(*batch_shape, dim, dim).clone())

    # -- accessors -----------------------------------------------------------
    @property
    def data(self) -> torch.Tensor:
        """The complex tensor ``(..., d, d)``."""
        return self._data

    def tr(self) -> torch.Tensor:
        r"""Traces :math:`\operatorname{Tr}\rho`, complex ``(...)``."""
        return trace(self._data)

    def dag(self) -> "DensityMatrix":
        r"""Conjugate transpose :math:`\rho^\dagger` (equal to :math:`\rho` for valid states)."""
        return self._trusted(data=self._data.mH)

    def purity(self) -> torch.Tensor:
        r"""Purity :math:`\operatorname{Tr}\rho^2 = \sum_{ij} |\rho_{ij}|^2` in :math:`[1/d, 1]`, real ``(...)``."""
        return (self._data.real.square() + self._data.imag.square()).sum((-2, -1))

    def eigh(self):
        r"""Eigen-decomposition ``rho = sum_k lambda_k |v_k><v_k|``.

        Returns
        -------
        eigenvalues : torch.Tensor
            Real ``(..., d)``, ascending.
        eigenstates : PureState
            Batch shape ``(..., d)``: ``eigenstates[..., k]`` is :math:`|v_k\rangle`.
        """
        from ._state import PureState

        values, vectors = torch.linalg.eigh(self._data)
        return values, PureState._trusted(data=vectors.mT)

    def eigvals(self) -> torch.Tensor:
        """Eigenvalues, real ``(..., d)`` ascending."""
        return torch.linalg.eigvalsh(self._data)

    def expectation(self, observable: torch.Tensor) -> torch.Tensor:
        r""":math:`\operatorname{Tr}(\rho A)` for Hermitian ``A`` ``(..., d, d)``; real ``(...)``."""
        rho, a = promote(self._data, observable)
        return (rho * a.mT).sum((-2, -1)).real

    def evolve(self, unitary: torch.Tensor) -> "DensityMatrix":
        r""":math:`U \rho U^\dagger` for unitaries ``(..., d, d)``."""
        u, rho = promote(unitary, self._data)
        return self._trusted(data=u @ rho @ u.mH)
