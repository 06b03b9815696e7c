r"""Bridges to QuTiP: states and density matrices to and from :class:`qutip.Qobj`.

QuTiP is optional (``pip install 'qpnlp[qutip]'``) and imported on first use.
The two libraries agree on the states; mind one convention when comparing
their metrics: :func:`~qpnlp.hilbert.fidelity` is the *squared* Uhlmann
fidelity :math:`F = (\operatorname{Tr}\sqrt{\sqrt\rho\,\sigma\sqrt\rho})^2`
while ``qutip.fidelity`` returns its square root, so
``fidelity(a, b) == qutip.fidelity(to_qutip(a), to_qutip(b)) ** 2``. Trace
distance (``qutip.tracedist``), von Neumann entropy in nats
(``qutip.entropy_vn``) and purity (``Qobj.purity``) are the same definitions.

* :func:`to_qutip`: :class:`PureState` -> ket, :class:`DensityMatrix` or
  :class:`Ensemble` -> density operator; a batch gives a (nested) list.
* :func:`from_qutip`: ket (or bra) -> :class:`PureState`, operator ->
  :class:`DensityMatrix`; a sequence of Qobj of one kind -> a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from . import _mixture as M
from . import _validation as V
from ._ensemble import Ensemble
from ._states import DensityMatrix, PureState

__all__ = ["to_qutip", "from_qutip"]


def _qutip():
    try:
        import qutip
    except ImportError as error:
        from qpnlp._optional import missing

        raise missing("qutip", "qutip", "to_qutip / from_qutip") from error
    return qutip


def _subsystems(dims: Sequence[int] | None, d: int) -> list[int]:
    if dims is None:
        return [d]
    return list(V.check_subsystem_dims(dims, d))


def to_qutip(state, *, dims: Sequence[int] | None = None) -> Any:
    r"""A :class:`qutip.Qobj` of a state: a ket for a :class:`PureState`, an operator for a mixture.

    Parameters
    ----------
    state : PureState, DensityMatrix or Ensemble
        Without batch dims for one Qobj; with batch dims the result is a list
        (nested like ``Tensor.tolist()``) of Qobj. An :class:`Ensemble` is made
        dense first (``d x d``).
    dims : sequence of int, optional
        Subsystem sizes of a composite space, e.g. ``[2, 3]`` for
        :math:`\mathbb{C}^2 \otimes \mathbb{C}^3` (QuTiP's ``dims`` then are
        ``[[2, 3], [1]]`` for a ket, ``[[2, 3], [2, 3]]`` for an operator);
        their product must be the dimension d. Default: one space of size d.

    Returns
    -------
    qutip.Qobj or list
        complex128 data (QuTiP's precision; complex64 is widened, never narrowed).

    Examples
    --------
    >>> ket = to_qutip(PureState.from_real(torch.tensor([0.6, 0.8])))
    >>> ket.type, ket.shape
    ('ket', (2, 1))
    >>> to_qutip(DensityMatrix.maximally_mixed(4), dims=[2, 2]).dims
    [[2, 2], [2, 2]]
    """
    qutip = _qutip()
    if isinstance(state, Ensemble):
        state = state.dense()
    if isinstance(state, PureState):
        kind = "ket"
    elif isinstance(state, DensityMatrix):
        kind = "oper"
    else:
        raise TypeError(f"state must be a PureState, DensityMatrix or Ensemble; got {type(state).__name__} "
                        f"(wrap a tensor first, e.g. PureState(t) or DensityMatrix(t))")
    sizes = _subsystems(dims, state.dim)
    data = state.data.detach().to("cpu", torch.complex128).resolve_conj().numpy()

    def one(x: np.ndarray):
        if kind == "ket":
            return qutip.Qobj(x.reshape(-1, 1), dims=[sizes, [1] * len(sizes)])
        return qutip.Qobj(x, dims=[sizes, sizes], isherm=True)

    event = 1 if kind == "ket" else 2
    batch = data.shape[: data.ndim - event]
    if not batch:
        return one(data)

    def nest(x: np.ndarray):
        return [one(row) for row in x] if x.ndim == event + 1 else [nest(row) for row in x]

    return nest(data)


def from_qutip(qobj, *, dtype: torch.dtype = torch.complex128, device: torch.device | str | None = None,
               validate: V.Validate = None) -> PureState | DensityMatrix:
    r"""A :class:`PureState` (from a ket or bra) or :class:`DensityMatrix` (from an operator) of QuTiP objects.

    Parameters
    ----------
    qobj : qutip.Qobj or sequence of Qobj
        A ket, a bra (read as the state :math:`|\psi\rangle` of :math:`\langle\psi|`)
        or a density operator; a sequence of Qobj of one kind and shape gives a
        batch ``(n, d)`` or ``(n, d, d)``. Composite ``dims`` are flattened to
        one space of dimension :math:`d = \prod_k d_k` (the usual Kronecker order).
    dtype : torch.dtype
        complex128 (default, QuTiP's precision) or complex64.
    device : torch.device or str, optional
    validate : bool or "strict", optional
        Checked like the constructors: unit norm for kets; Hermitian and trace
        one for operators (PSD too under ``"strict"``).

    Returns
    -------
    PureState or DensityMatrix

    Examples
    --------
    >>> import qutip
    >>> w = from_qutip(qutip.basis(3, 1))
    >>> w.data
    tensor([0.+0.j, 1.+0.j, 0.+0.j], dtype=torch.complex128)
    >>> float(from_qutip(qutip.maximally_mixed_dm(4)).purity())
    0.25
    """
    qutip = _qutip()
    items = [qobj] if isinstance(qobj, qutip.Qobj) else list(qobj) if isinstance(qobj, Sequence) else None
    if not items or not all(isinstance(q, qutip.Qobj) for q in items):
        raise TypeError(f"qobj must be a qutip.Qobj or a non-empty sequence of them; got {type(qobj).__name__}")
    if dtype not in (torch.complex64, torch.complex128):
        raise TypeError(f"dtype must be torch.complex64 or torch.complex128; got {dtype}")
    kinds = {"bra": "ket"}.get(items[0].type, items[0].type)
    arrays = []
    for i, q in enumerate(items):
        kind = {"bra": "ket"}.get(q.type, q.type)
        if kind not in ("ket", "oper"):
            raise ValueError(f"qobj[{i}] is a QuTiP {q.type!r}; states are kets, bras or density operators")
        if kind != kinds:
            raise ValueError(f"qobj[{i}] is a {q.type} but qobj[0] a {items[0].type}: a batch holds one kind")
        if kind == "oper" and q.shape[0] != q.shape[1]:
            raise ValueError(f"qobj[{i}] is a non-square operator {q.shape}")
        x = q.full()
        arrays.append(x.conj().reshape(-1) if q.type == "bra" else x.reshape(-1) if kind == "ket" else x)
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"the Qobj of a batch must have one shape; got {sorted(shapes)}")
    data = torch.from_numpy(np.stack(arrays) if not isinstance(qobj, qutip.Qobj) else arrays[0])
    data = data.to(device=device, dtype=dtype)
    if kinds == "ket":                      # the constructors' checks, with errors naming "qobj", not "states"/"rho"
        M.check_state_tensor("qobj", data, validate)
        return PureState._trusted(data=data)
    M.check_density_tensor("qobj", data, validate)
    return DensityMatrix._trusted(data=data)
