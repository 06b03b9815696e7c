"""Projectors: the outcomes of projective measurements."""

from __future__ import annotations

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._batched import Batched

from ._born import born_probabilities, born_probabilities_dense
from ._checks import check_projectors


class Projector(Batched):
    r"""A batch of orthogonal projectors :math:`P = \sum_{s=1}^r |v_s\rangle\langle v_s|`.

    Holds the orthonormal vectors ``(..., r, d)``, never the d x d matrix
    unless :meth:`matrix` is asked for. A batch of k projectors (batch shape
    ``(k,)``) is the outcome set of a measurement.

    Examples
    --------
    >>> p = Projector.from_state(PureState.from_real(torch.tensor([1.0, 0.0])))
    >>> w = PureState.from_real(torch.tensor([0.6, 0.8]))
    >>> round(float(p.probability(w)), 6)
    0.36
    >>> p.matrix().real
    tensor([[1., 0.],
            [0., 0.]])
    """

    _fields = ("vectors",)
    _event_ndims = (2,)
    __slots__ = ("_vectors",)

    def __init__(self, vectors: torch.Tensor, *, validate: V.Validate = None) -> None:
        V.check_tensor("vectors", vectors)
        V.check_complex("vectors", vectors)
        V.check_min_ndim("vectors", vectors, 2, "(..., r, d)")
        if V.resolve(validate):
            V.check_finite("vectors", vectors, event_ndim=2)
            check_projectors("vectors", vectors)     # unit (rank 1) or orthonormal rows
        object.__setattr__(self, "_vectors", vectors)

    @classmethod
    def from_state(cls, state: PureState) -> "Projector":
        r"""Rank-1 projectors :math:`|v\rangle\langle v|` for a batch of states ``(..., d)``."""
        if not isinstance(state, PureState):        # a tensor has .data too: it would skip every check
            raise TypeError(f"from_state takes a PureState; got {type(state).__name__} (for a tensor of unit "
                            f"vectors (..., d) use Projector(vectors.unsqueeze(-2)))")
        return cls._trusted(vectors=state.data.unsqueeze(-2))

    @classmethod
    def from_states(cls, vectors: torch.Tensor, *, validate: V.Validate = None) -> "Projector":
        """Rank-r projector(s) from orthonormal rows ``(..., r, d)``."""
        return cls(vectors, validate=validate)

    @property
    def vectors(self) -> torch.Tensor:
        """Complex ``(..., r, d)`` orthonormal vectors spanning the range."""
        return self._vectors

    @property
    def rank(self) -> int:
        return self._vectors.shape[-2]

    def matrix(self) -> torch.Tensor:
        r"""Dense :math:`P = \sum_s |v_s\rangle\langle v_s|` ``(..., d, d)`` (note the conjugate)."""
        v = self._vectors
        return v.mT @ v.conj()

    def probability(self, system) -> torch.Tensor:
        r"""Born probabilities :math:`\operatorname{Tr}(\rho P)` of ``system`` for every projector.

        ``system`` is a :class:`PureState`, :class:`Ensemble` (lazy) or
        :class:`DensityMatrix`; returns real ``(*system.batch_shape, *self.batch_shape)``.
        """
        flat = self._vectors.reshape(-1, self.rank, self.dim)
        if isinstance(system, PureState):               # validated objects: nothing left to check
            p = born_probabilities(system.data, None, flat, validate=False)
        elif isinstance(system, Ensemble):
            p = born_probabilities(system.states.data, system.weights, flat, validate=False)
        elif isinstance(system, DensityMatrix):
            p = born_probabilities_dense(system.data, flat, validate=False)
        else:
            raise TypeError(f"probability() takes a PureState, Ensemble or DensityMatrix; got {type(system).__name__}")
        return p.reshape(p.shape[:-1] + self.batch_shape)
