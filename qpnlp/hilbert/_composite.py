"""Composite systems: tensor products and partial traces (multi-word systems)."""

from __future__ import annotations

import operator
import string
from collections.abc import Iterable
from typing import Sequence, overload

import torch

from . import _validation as V
from ._linalg import kron, kron_vectors, promote
from ._operands import as_density_tensor
from ._ensemble import Ensemble
from ._states import DensityMatrix, PureState


@overload
def tensor_product(*systems: PureState) -> PureState: ...  # type: ignore[overload-overlap]
@overload
def tensor_product(*systems: PureState | DensityMatrix | Ensemble | torch.Tensor) -> DensityMatrix: ...


def tensor_product(*systems: PureState | DensityMatrix | Ensemble | torch.Tensor) -> PureState | DensityMatrix:
    r"""Tensor product :math:`a \otimes b \otimes \dots` of states or density matrices.

    All :class:`PureState` -> a :class:`PureState` of dimension :math:`\prod d_i`;
    otherwise every factor is made dense and the result is a
    :class:`DensityMatrix`. Batch dims broadcast.

    >>> a = PureState.basis_state(0, 2); b = PureState.basis_state(1, 3)
    >>> tensor_product(a, b).data.real
    tensor([0., 1., 0., 0., 0., 0.])
    """
    if len(systems) < 2:
        raise ValueError(f"tensor_product needs at least two systems; got {len(systems)}")
    # a tensor itself, not its ``.data`` (torch.func.vmap refuses that attribute of a batched tensor)
    V.check_same_device(*((f"systems[{i}]", s if isinstance(s, torch.Tensor) else getattr(s, "data", s))
                          for i, s in enumerate(systems)))
    if all(isinstance(s, PureState) for s in systems):
        tensors = promote(*(s.data for s in systems if isinstance(s, PureState)))   # all of them
        _check_batches(tensors, 1)
        out = tensors[0]
        for t in tensors[1:]:
            out = kron_vectors(out, t)
        return PureState._trusted(data=out)
    tensors = promote(*(as_density_tensor(s, f"systems[{i}]") for i, s in enumerate(systems)))
    _check_batches(tensors, 2)
    out = tensors[0]
    for t in tensors[1:]:
        out = kron(out, t)
    return DensityMatrix._trusted(data=out)


def _check_batches(tensors, event_ndim: int) -> None:
    """ValueError unless the batch dims of every factor broadcast together (a shape check, always on)."""
    batch = tensors[0].shape[:-event_ndim]
    for i, t in enumerate(tensors[1:], 1):
        batch = V.check_broadcast("systems[0..]" if i > 1 else "systems[0]", batch, f"systems[{i}]",
                                  t.shape[:-event_ndim])


def partial_trace(rho, dims: Sequence[int], keep: Sequence[int] | int) -> DensityMatrix:
    r"""Reduced state :math:`\operatorname{Tr}_{\bar K}\rho` of the subsystems ``keep``.

    Parameters
    ----------
    rho : DensityMatrix, PureState, Ensemble or tensor ``(..., D, D)``
        State of a composite system with :math:`D = \prod_i d_i`.
    dims : sequence of int
        Dimensions :math:`(d_1, \dots, d_m)` of the subsystems, in order.
    keep : int or sequence of int
        Indices of the subsystems to keep (in increasing order in the result).

    Returns
    -------
    DensityMatrix
        ``(..., prod(d_keep), prod(d_keep))``.

    Examples
    --------
    >>> a = DensityMatrix.maximally_mixed(2); b = PureState.basis_state(1, 3).proj()
    >>> torch.allclose(partial_trace(tensor_product(a, b), (2, 3), keep=1).data, b.data)
    True
    """
    data = as_density_tensor(rho)
    dims = V.check_subsystem_dims(dims, data.shape[-1], owner="rho")
    # operator.index: numpy integers are subsystem indices too, floats are not
    keep = sorted({operator.index(k) for k in keep} if isinstance(keep, Iterable) else {operator.index(keep)})
    if not keep or any(not 0 <= k < len(dims) for k in keep):
        raise ValueError(f"keep must name subsystems in [0, {len(dims)}); got {keep}")
    m = len(dims)
    if 2 * m > len(string.ascii_letters):
        raise ValueError(f"too many subsystems ({m})")
    rows, cols = string.ascii_letters[:m], string.ascii_letters[m:2 * m]
    cols = "".join(rows[i] if i not in keep else cols[i] for i in range(m))  # traced: same letter
    out = "".join(rows[i] for i in keep) + "".join(cols[i] for i in keep)
    batch = data.shape[:-2]
    reshaped = data.reshape(*batch, *dims, *dims)
    reduced = torch.einsum(f"...{rows}{cols}->...{out}", reshaped)
    kept = 1
    for i in keep:
        kept *= dims[i]
    return DensityMatrix._trusted(data=reduced.reshape(*batch, kept, kept))
