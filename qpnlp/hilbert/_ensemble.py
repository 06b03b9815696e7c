"""Lazy mixtures: the states and weights of a density matrix, never the d x d matrix."""

from __future__ import annotations

import torch

from . import _validation as V
from ._batched import Batched


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None, dim: int = -1) -> torch.Tensor:
    r"""Softmax over ``dim`` restricted to ``mask`` (True = keep); masked entries get exactly 0.

    :math:`p_i = m_i e^{s_i} / \sum_j m_j e^{s_j}`. A slice with no unmasked
    entry raises ValueError (an empty sentence has no mixture).

    >>> masked_softmax(torch.zeros(3), torch.tensor([True, True, False]))
    tensor([0.5000, 0.5000, 0.0000])
    """
    if mask is None:
        return torch.softmax(scores, dim=dim)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor; got {mask.dtype}")
    empty = ~mask.any(dim)
    if bool(empty.any()):
        where = tuple(empty.nonzero()[0].tolist())
        raise ValueError(f"mask has no unmasked entry (an empty sentence) at batch index {where} "
                         f"(mask shape {tuple(mask.shape)})")
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=dim)


def _as_state_tensor(states, mask, validate: V.Validate) -> torch.Tensor:
    """Complex ``(..., n, d)`` states; masked (padded) rows are replaced by zeros and not validated."""
    from ._state import PureState

    data = states.data if isinstance(states, PureState) else states
    V.check_tensor("states", data)
    V.check_complex("states", data)
    V.check_min_ndim("states", data, 2, "(..., n, d)")
    if mask is not None:
        V.check_tensor("mask", mask)
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True = real word); got {mask.dtype}")
        if mask.shape != data.shape[:-1]:
            raise ValueError(f"mask must have shape {tuple(data.shape[:-1])} (states without d); "
                             f"got {tuple(mask.shape)}")
        data = data.masked_fill(~mask.unsqueeze(-1), 0)
    if V.resolve(validate) and not isinstance(states, PureState):
        V.check_finite("states", data, event_ndim=2)
        V.check_unit_norm("states", data, where=mask)
    return data


def _mixture_weights(states: torch.Tensor, weights, mask, validate: V.Validate) -> torch.Tensor:
    batch_n = states.shape[:-1]
    if mask is not None:
        empty = ~mask.any(-1)
        if bool(empty.any()):
            raise ValueError(f"mask leaves an empty mixture (no unmasked state) at batch index "
                             f"{tuple(empty.nonzero()[0].tolist())} (mask shape {tuple(mask.shape)})")
    real = V.real_dtype_of(states.dtype)
    if weights is None:
        ones = torch.ones(batch_n, dtype=real, device=states.device)
        ones = ones if mask is None else ones * mask
        return ones / ones.sum(-1, keepdim=True)
    V.check_tensor("weights", weights)
    V.check_real("weights", weights)
    if weights.shape != batch_n:
        raise ValueError(f"weights must have shape {tuple(batch_n)} to match states "
                         f"{tuple(states.shape)}; got {tuple(weights.shape)}")
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    if V.resolve(validate):
        V.check_finite("weights", weights, event_ndim=1)
        V.check_probability_weights("weights", weights)
    return weights


class Ensemble(Batched):
    r"""A mixture :math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` kept as states and weights.

    Holds ``states`` ``(..., n, d)`` (unit norm) and ``weights`` ``(..., n)``
    (non-negative, summing to one). Measurement probabilities, purity and
    entropy are computed from these directly, in O(n d k) or O(n^2 d) instead
    of O(n d^2); :meth:`dense` builds the d x d matrix on request.

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
        data = _as_state_tensor(states, mask, validate)
        w = _mixture_weights(data, weights, mask, validate)
        if w.dtype == torch.float64 and data.dtype == torch.complex64:
            data = data.to(torch.complex128)  # never downcast the weights: widen the states
        w = w.to(V.real_dtype_of(data.dtype))
        object.__setattr__(self, "_states", data)
        object.__setattr__(self, "_weights", w)

    @property
    def states(self):
        """The member states as a :class:`PureState` with batch shape ``(..., n)``."""
        from ._state import PureState

        return PureState._trusted(data=self._states)

    @property
    def weights(self) -> torch.Tensor:
        """Real ``(..., n)`` mixture weights (zero at masked positions)."""
        return self._weights

    @property
    def num_states(self) -> int:
        """Number n of member states (including masked ones, which have weight 0)."""
        return self._states.shape[-2]

    def dense(self):
        r"""The density matrix :math:`\sum_i p_i |w_i\rangle\langle w_i|` ``(..., d, d)``."""
        from ._density import DensityMatrix

        weighted = self._states * self._weights.to(self._states.dtype).unsqueeze(-1)
        return DensityMatrix._trusted(data=weighted.mT @ self._states.conj())

    def gram(self) -> torch.Tensor:
        r"""Weighted Gram matrix :math:`G_{ij} = \sqrt{p_i p_j}\langle w_i|w_j\rangle` ``(..., n, n)``.

        It has the same non-zero eigenvalues as :math:`\rho`, so purity and
        entropy of a mixture of n < d states cost O(n^2 d + n^3).
        """
        scaled = self._states * self._weights.clamp_min(0).sqrt().to(self._states.dtype).unsqueeze(-1)
        return scaled.conj() @ scaled.mT

    def purity(self) -> torch.Tensor:
        r""":math:`\operatorname{Tr}\rho^2 = \sum_{ij} p_i p_j |\langle w_i|w_j\rangle|^2`, real ``(...)``."""
        g = self.gram()
        return (g.real.square() + g.imag.square()).sum((-2, -1))

    def eigvals(self) -> torch.Tensor:
        """The non-zero spectrum of rho (padded with zeros): real ``(..., min(n, d))``, ascending."""
        if self.num_states < self.dim:
            return torch.linalg.eigvalsh(self.gram())
        return torch.linalg.eigvalsh(self.dense().data)
