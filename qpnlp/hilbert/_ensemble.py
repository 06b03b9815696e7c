"""Lazy mixtures: the states and weights of a density matrix, never the d x d matrix."""

from __future__ import annotations

import torch

from . import _mixture as M
from . import _validation as V
from ._batched import Batched
from ._mixture import masked_softmax
from ._states import DensityMatrix, PureState

__all__ = ["Ensemble", "masked_softmax"]


class Ensemble(Batched):
    r"""A mixture :math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` kept as states and weights.

    Holds ``states`` ``(..., n, d)`` (unit norm) and ``weights`` ``(..., n)``
    (non-negative, summing to one). Measurement probabilities, purity and
    entropy are computed from these directly, in O(n d k) or O(n^2 d) instead
    of O(n d^2) (for n >= d purity and spectrum use the d x d matrix, never an
    n x n one); :meth:`dense` builds the d x d matrix on request.

    Parameters
    ----------
    states : PureState or torch.Tensor
        Complex ``(..., n, d)`` word states.
    weights : torch.Tensor, optional
        Real ``(..., n)`` probabilities; default uniform over unmasked states.
    mask : torch.Tensor, optional
        Bool ``(..., n)``, True for real words, False for padding. Masked
        states get weight exactly 0 and are replaced by zero vectors (they
        are not validated, so padding may hold anything); the remaining
        weights must sum to one.
    validate : bool or "strict", optional
        Override the global validation mode.

    Examples
    --------
    >>> states = PureState.from_real(torch.eye(3)[:2])           # |e0>, |e1>
    >>> mix = Ensemble(states.data, mask=torch.tensor([True, True]))
    >>> round(float(mix.purity()), 6)
    0.5
    >>> torch.allclose(mix.dense().data, DensityMatrix.from_ensemble(states.data).data)
    True
    """

    _fields = ("states", "weights")
    _event_ndims = (2, 1)
    __slots__ = ("_states", "_weights")

    def __init__(self, states, weights: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                 *, validate: V.Validate = None) -> None:
        trusted = isinstance(states, PureState)
        data, w = M.mixture(states.data if trusted else states, weights, mask, validate, trusted)
        object.__setattr__(self, "_states", data)
        object.__setattr__(self, "_weights", w)

    @property
    def states(self) -> PureState:
        """The member states as a :class:`PureState` with batch shape ``(..., n)``."""
        return PureState._trusted(data=self._states)

    @property
    def weights(self) -> torch.Tensor:
        """Real ``(..., n)`` mixture weights (zero at masked positions)."""
        return self._weights

    @property
    def num_states(self) -> int:
        """Number n of member states (including masked ones, which have weight 0)."""
        return self._states.shape[-2]

    def dense(self) -> DensityMatrix:
        r"""The density matrix :math:`\sum_i p_i |w_i\rangle\langle w_i|` ``(..., d, d)``."""
        return DensityMatrix._trusted(data=M.dense(self._states, self._weights))

    def factor(self) -> torch.Tensor:
        r"""The factor :math:`A` ``(..., d, n)`` with :math:`\rho = A A^\dagger`; column i is :math:`\sqrt{p_i}\,w_i`.

        Fidelities and Born probabilities of a mixture of n < d states need
        only this d x n matrix (see :func:`~qpnlp.hilbert.fidelity`).
        """
        return M.factor(self._states, self._weights)

    def gram(self) -> torch.Tensor:
        r"""Weighted Gram matrix :math:`G_{ij} = \sqrt{p_i p_j}\langle w_i|w_j\rangle` ``(..., n, n)``.

        It has the same non-zero eigenvalues as :math:`\rho`, so purity and
        entropy of a mixture of n < d states cost O(n^2 d + n^3).
        """
        return M.gram(self._states, self._weights)

    def purity(self) -> torch.Tensor:
        r""":math:`\operatorname{Tr}\rho^2 = \sum_{ij} p_i p_j |\langle w_i|w_j\rangle|^2`, real ``(...)``.

        :math:`\|G\|_F^2 = \|\rho\|_F^2`, from the smaller of the two: the n x n Gram matrix
        (:meth:`gram`) when n < d, else the d x d matrix (:meth:`dense`), so memory is
        O(min(n, d)^2) besides the states.
        """
        g = self.gram() if self.num_states < self.dim else self.dense().data
        return (g.real.square() + g.imag.square()).sum((-2, -1))

    def eigvals(self) -> torch.Tensor:
        """The non-zero spectrum of rho (padded with zeros): real ``(..., min(n, d))``, ascending."""
        if self.num_states < self.dim:
            return torch.linalg.eigvalsh(self.gram())
        return torch.linalg.eigvalsh(self.dense().data)
