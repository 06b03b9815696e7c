"""Projectors: the outcomes of projective measurements."""

from __future__ import annotations

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert import _widen
from qpnlp.hilbert._batched import Batched

from ._born import born_probabilities, povm_probabilities, povm_probabilities_dense
from ._checks import check_projectors


def _outer_split(system_shape: torch.Size, projector_shape: torch.Size) -> torch.Size | None:
    r"""The system's own leading batch dims ``L`` when the projector batch only spreads over its trailing singletons.

    Both shapes are right-aligned (leading ones added, as torch broadcasts). When every dim where the projector
    batch is not 1 lies in the run of trailing ones of the system's, the broadcast shape is ``(*L, *K')``: each of
    the ``L`` systems with each of the ``prod K'`` projectors, the outer product that the real kernel
    :func:`~qpnlp.measurement.born_probabilities` computes in one matrix product (``system[..., None]`` against
    ``(k,)``, the measurement of a batch by an outcome set). Returns ``L``, or None for any other pairing.
    """
    n = max(len(system_shape), len(projector_shape))
    system = (1,) * (n - len(system_shape)) + tuple(system_shape)
    projector = (1,) * (n - len(projector_shape)) + tuple(projector_shape)
    lead = n
    while lead and system[lead - 1] == 1:
        lead -= 1
    if any(size != 1 for size in projector[:lead]):
        return None
    return torch.Size(system[:lead])


class Projector(Batched):
    r"""A batch of orthogonal projectors :math:`P = \sum_{s=1}^r |v_s\rangle\langle v_s|`.

    Holds the orthonormal vectors ``(..., r, d)``, never the d x d matrix
    unless :meth:`matrix` is asked for. A batch of k projectors (batch shape
    ``(k,)``) is the outcome set of a measurement. Batch dims broadcast with a
    state's as in torch (:meth:`probability`): ``P.probability(system[..., None])``
    measures every state with every projector.

    Parameters
    ----------
    vectors : torch.Tensor
        Complex ``(..., r, d)``: r orthonormal rows per projector (one unit row for rank 1; r = 0 is the zero
        projector). Real tensors are refused: use :meth:`from_state` of a ``PureState.from_real``.
    validate : bool or "strict", optional
        Check finiteness and orthonormal rows (O(r^2 d) per projector); None follows the global mode
        (:func:`~qpnlp.hilbert.get_validation`).

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
    _repr_sizes = ("rank",)
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
    def _widened(cls, fields):
        """Rows orthonormal (unit for rank 1) to float64's round-off where float32's round-off left them off
        (``qpnlp.hilbert._widen.orthonormal_rows``: a QR; rows further off, built with ``validate=False``, kept)."""
        return {"vectors": _widen.orthonormal_rows(fields["vectors"])}

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
        r"""Born probabilities :math:`\operatorname{Tr}(\rho P) = \sum_s \langle v_s|\rho|v_s\rangle`.

        .. math:: \operatorname{Tr}(\rho P) = \sum_s |\langle v_s|w\rangle|^2 \;\; (\rho = |w\rangle\langle w|),
                  \qquad \sum_i p_i \sum_s |\langle v_s|w_i\rangle|^2 \;\; (\rho = \sum_i p_i |w_i\rangle\langle w_i|).

        Parameters
        ----------
        system : PureState, Ensemble or DensityMatrix
            Batch shape ``S``, dimension d. An :class:`~qpnlp.hilbert.Ensemble` is measured from its members and weights
            (no d x d matrix).

        Returns
        -------
        torch.Tensor
            Real, of shape ``torch.broadcast_shapes(S, self.batch_shape)``: the batch dims broadcast by torch's
            rules, as :meth:`POVM.probabilities <qpnlp.measurement.POVM.probabilities>` pairs states with POVMs
            (a ValueError when they do not broadcast). Every state with every projector of an outcome set
            ``(k,)`` is ``P.probability(system[..., None])``, ``(*S, k)``, as
            :class:`~qpnlp.measurement.ProjectiveMeasurement` gives it.

        Notes
        -----
        A pure state or ensemble whose projector batch only spreads over trailing singleton batch dims of its own
        (the outer product above) goes through the real kernel :func:`~qpnlp.measurement.born_probabilities`, one
        matrix product of ``(*L n, 2d)`` by ``(2d, 2 K r)``; other pairings and density matrices are the POVM
        of one effect :math:`E = P` (:func:`~qpnlp.measurement.povm_probabilities`,
        :func:`~qpnlp.measurement.povm_probabilities_dense`), which broadcast without copying an operand.
        """
        if not isinstance(system, (PureState, Ensemble, DensityMatrix)):
            raise TypeError(f"probability() takes a PureState, Ensemble or DensityMatrix; got {type(system).__name__}")
        V.check_dims_match("system", system.dim, "projector", self.dim)
        V.check_broadcast("system", system.batch_shape, "Projector", self.batch_shape)
        effect = self._vectors.unsqueeze(-3)    # one projector is a POVM of one effect: (..., 1, r, d)
        if isinstance(system, DensityMatrix):
            return povm_probabilities_dense(system.data, effect, validate=False).squeeze(-1)
        lead = _outer_split(system.batch_shape, self.batch_shape)
        if lead is not None:                    # every state with every projector: the real kernel
            return self._outer_probability(system, lead)
        pure = isinstance(system, PureState)    # validated objects: nothing left to check
        states, weights = (system.data, None) if pure else (system.states.data, system.weights)
        return povm_probabilities(states, weights, effect, validate=False).squeeze(-1)   # einsum: no operand copied

    def _outer_probability(self, system: PureState | Ensemble, lead: torch.Size) -> torch.Tensor:
        r"""Every pure state or ensemble of the leading batch ``L`` with every projector, by the real kernel.

        The systems are viewed as ``(*L, d)`` or ``(*L, n, d)`` (their trailing ones dropped), the projectors as
        ``(K, r, d)``, ``K = prod(self.batch_shape)``; :func:`~qpnlp.measurement.born_probabilities` (one real
        matrix product of the interleaved real views, faster than einsum's complex one backward) gives
        ``(*L, K)``, reshaped to ``torch.broadcast_shapes(system.batch_shape, self.batch_shape)``: the values of
        the einsum path.
        """
        flat = self._vectors.reshape(self.batch_shape.numel(), self.rank, self.dim)     # -1 is ambiguous at r = 0
        shape = torch.broadcast_shapes(system.batch_shape, self.batch_shape)
        if isinstance(system, PureState):               # validated objects: nothing left to check
            p = born_probabilities(system.data.reshape(*lead, self.dim), None, flat, validate=False)
        else:
            n = system.states.data.shape[-2]
            members, weights = system.states.data.reshape(*lead, n, self.dim), system.weights.reshape(*lead, n)
            p = born_probabilities(members, weights, flat, validate=False)
        return p.reshape(shape)
