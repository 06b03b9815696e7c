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
def lueders_update(system: DensityMatrix | Ensemble, projector: Projector) -> DensityMatrix: ...


def lueders_update(system: PureState | DensityMatrix | Ensemble, projector: Projector) -> PureState | DensityMatrix:
    r"""State after observing the outcome of ``projector`` (Lueders rule).

    .. math:: \rho \mapsto \frac{P\rho P}{\operatorname{Tr}(P\rho)}, \qquad
              |w\rangle \mapsto \frac{P|w\rangle}{\|P|w\rangle\|}.

    ``projector`` must be unbatched (one outcome). A lazy :class:`Ensemble` is
    updated member by member (:func:`~qpnlp.measurement.kraus_update` with the
    Kraus operator P, so its probability is checked as a squared norm, as a
    pure state's) and returned as a :class:`DensityMatrix`. Raises ValueError
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
        return kraus_update(system, projector.matrix()).dense()      # P rho P / Tr(P rho)
    rho, p = promote(system.data, projector.matrix())
    updated = p @ rho @ p
    prob = torch.diagonal(updated, dim1=-2, dim2=-1).sum(-1).real
    _check_possible(prob, rho.dtype, rho.shape[-1])
    return DensityMatrix._trusted(data=updated / prob[..., None, None])
