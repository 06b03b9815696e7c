"""Post-measurement states (Lueders rule)."""

from __future__ import annotations

from typing import overload

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, promote
from qpnlp.hilbert import _validation as V

from ._kraus import _check_possible, kraus_update
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

    .. math:: \rho \mapsto \frac{P\rho P}{\operatorname{Tr}(P\rho)}, \qquad
              |w\rangle \mapsto \frac{P|w\rangle}{\|P|w\rangle\|}, \qquad
              \sum_i p_i |w_i\rangle\langle w_i| \mapsto
              \sum_i \frac{p_i \|P w_i\|^2}{\operatorname{Tr}(P\rho)}
              \frac{P|w_i\rangle\langle w_i|P}{\|P w_i\|^2}.

    ``projector`` must be unbatched (one outcome). The result is the same kind
    as ``system``, with its batch shape: a :class:`PureState` ``(..., d)``, an
    :class:`Ensemble` ``(..., n, d)`` updated member by member and kept lazy
    (:func:`~qpnlp.measurement.kraus_update` with the Kraus operator P; members
    that P annihilates get weight 0), or a :class:`DensityMatrix` ``(..., d, d)``,
    as :meth:`POVM.post_measurement_state
    <qpnlp.measurement.POVM.post_measurement_state>` gives them. Raises ValueError
    when the outcome has probability zero (the update is undefined) or the
    dimensions differ.

    Examples
    --------
    >>> from qpnlp.measurement import Projector
    >>> p = Projector.from_state(PureState.from_real(torch.tensor([1.0, 0.0])))
    >>> lueders_update(PureState.from_real(torch.tensor([0.6, 0.8])), p).data
    tensor([1.+0.j, 0.+0.j])
    """
    if not isinstance(projector, Projector):
        raise TypeError(f"lueders_update takes a Projector as projector; got {type(projector).__name__}")
    if projector.batch_shape:
        raise ValueError(f"lueders_update takes one projector; got batch shape {tuple(projector.batch_shape)}")
    if not isinstance(system, (PureState, Ensemble, DensityMatrix)):   # a raw tensor also has .data: refuse it
        raise TypeError(f"lueders_update takes a PureState, Ensemble or DensityMatrix; got {type(system).__name__}")
    V.check_dims_match("system", system.dim, "projector", projector.dim)
    if isinstance(system, PureState):
        state, vecs = promote(system.data, projector.vectors)
        projected = (state @ vecs.mH) @ vecs                        # sum_s <v_s|w> v_s
        norm = torch.linalg.vector_norm(projected, dim=-1, keepdim=True)
        _check_possible(norm.squeeze(-1).square(), state.dtype, state.shape[-1], squared_norm=True)
        return PureState._trusted(data=projected / norm)
    if isinstance(system, Ensemble):
        return kraus_update(system, projector.matrix())              # lazy: the members P w_i, reweighted
    rho, p = promote(system.data, projector.matrix())
    updated = p @ rho @ p
    prob = torch.diagonal(updated, dim1=-2, dim2=-1).sum(-1).real
    _check_possible(prob, rho.dtype, rho.shape[-1])
    return DensityMatrix._trusted(data=updated / prob[..., None, None])
