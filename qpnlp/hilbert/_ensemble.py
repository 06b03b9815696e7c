"""Lazy mixtures: the states and weights of a density matrix, never the d x d matrix."""

from __future__ import annotations

import torch

from . import _mixture as M
from . import _validation as V
from . import _widen
from ._batched import Batched
from ._linalg import decompose, promote, squared_frobenius_norm
from ._mixture import masked_softmax
from ._states import DensityMatrix, PureState

__all__ = ["Ensemble", "masked_softmax"]


class Ensemble(Batched):
    r"""A mixture :math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` kept as states and weights.

    Holds ``states`` ``(..., n, d)`` (unit norm) and ``weights`` ``(..., n)``
    (non-negative, summing to one). Measurement probabilities, purity and
    entropy are computed from these directly, in O(n d k) or O(n^2 d) instead
    of O(n d^2) (for n >= d purity and spectrum use the d x d matrix, never an
    n x n one); so are :meth:`tr`, :meth:`expectation` and :meth:`evolve`, as
    :class:`DensityMatrix` has them. :meth:`dense` builds the d x d matrix on request.

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
    >>> mix.expectation(torch.diag(torch.tensor([1.0, -1.0, 5.0])))      # (1 - 1) / 2
    tensor(0.)
    """

    _fields = ("states", "weights")
    _event_ndims = (2, 1)
    _repr_sizes = ("num_states",)
    __slots__ = ("_states", "_weights")

    def __init__(self, states, weights: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                 *, validate: V.Validate = None) -> None:
        trusted = isinstance(states, PureState)
        data, w = M.mixture(states.data if trusted else states, weights, mask, validate, trusted)
        object.__setattr__(self, "_states", data)
        object.__setattr__(self, "_weights", w)

    @classmethod
    def _widened(cls, fields):
        """States of unit norm and weights summing to one where float32's round-off left them off one."""
        return {"states": _widen.unit_rows(fields["states"]), "weights": _widen.unit_sums(fields["weights"])}

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

    def tr(self) -> torch.Tensor:
        r"""Traces :math:`\operatorname{Tr}\rho = \sum_i p_i \langle w_i|w_i\rangle`, complex ``(...)``, in O(n d).

        One (the weights' sum) for a valid ensemble; as :meth:`DensityMatrix.tr` of :meth:`dense`, with its dtype.
        """
        return M.trace(self._states, self._weights)

    def expectation(self, observable: torch.Tensor) -> torch.Tensor:
        r""":math:`\operatorname{Tr}(\rho A) = \sum_i p_i \langle w_i|A|w_i\rangle` for Hermitian ``A`` ``(..., d, d)``.

        Real ``(...)``, as :meth:`DensityMatrix.expectation` of :meth:`dense` (the same checks, broadcasting and
        dtype), from the n images :math:`A|w_i\rangle` in O(n d^2), never the d x d matrix. While validation is on, a
        non-Hermitian ``A`` (whose expectation is not real) raises ValueError.
        """
        states, a = M.checked_observable(observable, self._states, self.batch_shape)
        return M.expectation(states, self._weights, a)

    def evolve(self, unitary: torch.Tensor) -> "Ensemble":
        r"""The mixture of :math:`U|w_i\rangle` with the same weights, :math:`U \rho U^\dagger`, for unitaries U.

        U is ``(..., d, d)``; O(n d^2), never the d x d matrix; the batch is the broadcast of the ensemble's and
        U's. While validation is on, a matrix that does not keep the norm of every member with non-zero weight (not
        unitary) raises ValueError, as :meth:`PureState.evolve`, so the result is a valid ensemble
        (:meth:`DensityMatrix.evolve` checks the trace of :math:`U \rho U^\dagger`, which then is one).
        """
        M.check_operator("unitary", unitary, self.dim, self.batch_shape)
        u, states = promote(unitary, self._states)
        out, weights = M.evolve(states, self._weights, u)
        if V.enabled():            # at the precision of the coarser operand, as PureState.evolve
            V.check_unit_norm("evolve(unitary): U|w_i>", M.at_precision_of(out, unitary, self._states),
                              where=weights.detach() != 0)
        return self._trusted(states=out, weights=weights)

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
        return squared_frobenius_norm(g)

    def eigvals(self) -> torch.Tensor:
        """The non-zero spectrum of rho (padded with zeros): real ``(..., min(n, d))``, ascending."""
        if self.num_states < self.dim:
            return decompose(torch.linalg.eigvalsh, self.gram())
        return decompose(torch.linalg.eigvalsh, self.dense().data)
