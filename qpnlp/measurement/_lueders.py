"""Post-measurement states (Lueders rule)."""

from __future__ import annotations

from typing import overload

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, promote
from qpnlp.hilbert import _validation as V

from ._kraus import _check_possible, _reweighted
from ._projector import Projector


@overload
def lueders_update(system: PureState, projector: Projector) -> PureState: ...
@overload
def lueders_update(system: Ensemble, projector: Projector) -> Ensemble: ...
@overload
def lueders_update(system: DensityMatrix, projector: Projector) -> DensityMatrix: ...


def lueders_update(system: PureState | Ensemble | DensityMatrix,
                   projector: Projector) -> PureState | Ensemble | DensityMatrix:
    r"""State after observing the outcome of ``projector`` (Lueders rule).

    With :math:`P = \sum_{s=1}^r |v_s\rangle\langle v_s|` (the projector's orthonormal rows ``(..., r, d)``):

    .. math:: \rho \mapsto \frac{P\rho P}{\operatorname{Tr}(P\rho)}, \qquad
              |w\rangle \mapsto \frac{P|w\rangle}{\|P|w\rangle\|}, \qquad
              \sum_i p_i |w_i\rangle\langle w_i| \mapsto
              \sum_i \frac{p_i \|P w_i\|^2}{\operatorname{Tr}(P\rho)}
              \frac{P|w_i\rangle\langle w_i|P}{\|P w_i\|^2},

    computed from the rows, never the d x d matrix P: :math:`P|w\rangle = \sum_s \langle v_s|w\rangle |v_s\rangle`
    (O(r d) a state) and :math:`P\rho P = \sum_{s,t} |v_s\rangle \langle v_s|\rho|v_t\rangle \langle v_t|`
    (O(r d^2) a density matrix).

    Parameters
    ----------
    system : PureState, Ensemble or DensityMatrix
        Batch shape ``S``, dimension d.
    projector : Projector
        Batch shape ``K``: one projector (``K = ()``) for every state, or a batch that broadcasts with ``S`` by
        torch's rules, as :meth:`Projector.probability` and :func:`~qpnlp.measurement.kraus_update` pair them
        (state b with projector b; ``system[..., None]`` with an outcome set ``(k,)`` updates every state by
        every outcome).

    Returns
    -------
    PureState, Ensemble or DensityMatrix
        The kind of ``system``, batch shape ``B = torch.broadcast_shapes(S, K)``: a
        :class:`~qpnlp.hilbert.PureState` ``(*B, d)``, an :class:`~qpnlp.hilbert.Ensemble` ``(*B, n, d)`` kept lazy
        (members that P annihilates get weight 0 and a zero vector), a :class:`~qpnlp.hilbert.DensityMatrix`
        ``(*B, d, d)``, as :meth:`POVM.post_measurement_state <qpnlp.measurement.POVM.post_measurement_state>` gives
        them.

    Raises
    ------
    ValueError
        When an outcome has probability zero (the update is undefined; the flat index of the first one is
        named), the dimensions differ or the batch shapes do not broadcast.

    Examples
    --------
    >>> from qpnlp.measurement import Projector
    >>> p = Projector.from_state(PureState.from_real(torch.tensor([1.0, 0.0])))
    >>> lueders_update(PureState.from_real(torch.tensor([0.6, 0.8])), p).data
    tensor([1.+0.j, 0.+0.j])
    >>> basis = Projector(torch.eye(2, dtype=torch.complex64).unsqueeze(-2))     # both outcomes, batch (2,)
    >>> lueders_update(PureState.from_real(torch.tensor([0.6, 0.8])), basis).data
    tensor([[1.+0.j, 0.+0.j],
            [0.+0.j, 1.+0.j]])
    """
    _check_arguments(system, projector)
    if isinstance(system, PureState):
        return _pure(system, projector)
    if isinstance(system, Ensemble):
        return _ensemble(system, projector)
    return _dense(system, projector)


def _check_arguments(system, projector) -> None:
    if not isinstance(projector, Projector):
        raise TypeError(f"lueders_update takes a Projector as projector; got {type(projector).__name__}")
    if not isinstance(system, (PureState, Ensemble, DensityMatrix)):   # a raw tensor also has .data: refuse it
        raise TypeError(f"lueders_update takes a PureState, Ensemble or DensityMatrix; got {type(system).__name__}")
    V.check_dims_match("system", system.dim, "projector", projector.dim)
    V.check_broadcast("system", system.batch_shape, "Projector", projector.batch_shape)


def _project(states: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    r""":math:`P|w\rangle = \sum_s \langle v_s|w\rangle |v_s\rangle` of states ``(..., n, d)``, rows ``(..., r, d)``.

    Batch dims broadcast through ``einsum`` (no copy of either operand per the other's batch): ``(*B, n, d)``.
    """
    amplitudes = torch.einsum("...nd,...rd->...nr", states, vectors.conj())     # <v_s|w_i>
    return torch.einsum("...nr,...rd->...nd", amplitudes, vectors)


def _pure(system: PureState, projector: Projector) -> PureState:
    state, vectors = promote(system.data, projector.vectors)
    projected = _project(state.unsqueeze(-2), vectors).squeeze(-2)              # (*B, d)
    norm = torch.linalg.vector_norm(projected, dim=-1, keepdim=True)
    _check_possible(norm.squeeze(-1).square(), state.dtype, state.shape[-1], squared_norm=True)
    return PureState._trusted(data=projected / norm)


def _ensemble(system: Ensemble, projector: Projector) -> Ensemble:
    states, vectors = promote(system.states.data, projector.vectors)
    return _reweighted(_project(states, vectors), system.weights, states.shape[-1])   # lazy: the P w_i


def _dense(system: DensityMatrix, projector: Projector) -> DensityMatrix:
    rho, vectors = promote(system.data, projector.vectors)
    block = torch.einsum("...sd,...de->...se", vectors.conj(), rho)              # <v_s|rho, (*B, r, d)
    block = torch.einsum("...se,...te->...st", block, vectors)                   # <v_s|rho|v_t>, (*B, r, r)
    prob = torch.diagonal(block, dim1=-2, dim2=-1).sum(-1).real                  # Tr(P rho)
    _check_possible(prob, rho.dtype, rho.shape[-1])
    left = torch.einsum("...sd,...st->...dt", vectors, block)                    # sum_s |v_s><v_s|rho|v_t>
    updated = torch.einsum("...dt,...te->...de", left, vectors.conj())           # P rho P, (*B, d, d)
    return DensityMatrix._trusted(data=updated / prob[..., None, None])
