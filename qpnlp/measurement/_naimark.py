r"""Naimark dilation: every POVM is a projective measurement on a larger space.

Stack the Kraus operators :math:`M_k` (r x d) of a POVM into
:math:`V = \sum_k |k\rangle \otimes M_k \in \mathbb{C}^{kr \times d}`; then
:math:`V^\dagger V = \sum_k E_k = I`, so V is an isometry, and with the
orthogonal projectors :math:`Q_k = |k\rangle\langle k| \otimes I_r` on
:math:`\mathbb{C}^{kr}`

.. math:: \operatorname{Tr}(V\rho V^\dagger Q_k) = \operatorname{Tr}(\rho V^\dagger Q_k V)
          = \operatorname{Tr}(\rho M_k^\dagger M_k) = \operatorname{Tr}(\rho E_k)

(Naimark 1940; Peres, *Quantum Theory: Concepts and Methods*, section 9-6).
Completing V to a unitary U of :math:`\mathbb{C}^{kr}` (first d columns = V)
realises it as a unitary acting on :math:`|w\rangle \oplus 0` followed by a
measurement in the computational basis, blockwise.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from qpnlp._checks import check_flag
from qpnlp._repr import record_repr

from ._povm import POVM
from ._projector import Projector

__all__ = ["NaimarkDilation", "naimark_dilation"]


class NaimarkDilation(NamedTuple):
    r"""Isometry, projectors and (optionally) unitary of :func:`naimark_dilation`: a named tuple of the fields
    below."""

    isometry: torch.Tensor
    r"""Complex ``(..., k r, d)`` with :math:`V^\dagger V = I`, embedding a state as :math:`V|w\rangle`."""
    projectors: Projector
    """Batch ``(k,)`` of rank-r projectors on ``C^{k r}`` (blocks of canonical basis vectors), summing to I."""
    unitary: torch.Tensor | None
    """Complex ``(..., k r, k r)`` whose first d columns are the isometry (``unitary=True``), else None."""

    def __repr__(self) -> str:
        """The fields' shapes and dtypes, never their values (``record_repr``)."""
        return record_repr(self)

    # ``==`` of a tuple compares the tensors, which raises ("Boolean value of Tensor with more than one value is
    # ambiguous"): identity instead, as for PureState (compare values field by field, e.g. with ``equal``).
    __eq__, __ne__, __hash__ = object.__eq__, object.__ne__, object.__hash__


def naimark_dilation(povm: POVM, *, unitary: bool = False) -> NaimarkDilation:
    r"""A projective measurement on :math:`\mathbb{C}^{kr}` with the statistics of ``povm`` (see the module docstring).

    Parameters
    ----------
    povm : POVM
        k outcomes, rank r, dimension d (k r >= d).
    unitary : bool
        Also complete the isometry to a unitary (its last k r - d columns
        span the orthogonal complement of the range of V, from a complete QR).
        True or False only (TypeError for ``"no"``, which is truthy).

    Returns
    -------
    NaimarkDilation
        ``isometry``, ``projectors`` and ``unitary`` (or None).

    Examples
    --------
    >>> from qpnlp.measurement import POVM
    >>> trine = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -0.75 ** 0.5]], dtype=torch.complex64)
    >>> povm = POVM.from_frame(trine)
    >>> dilation = naimark_dilation(povm)
    >>> psi = PureState.basis_state(1, 2)
    >>> embedded = PureState(dilation.isometry @ psi.data)                   # a state of C^3
    >>> torch.allclose(dilation.projectors.probability(embedded), povm.probabilities(psi))
    True
    """
    if not isinstance(povm, POVM):
        raise TypeError(f"naimark_dilation takes a POVM; got {type(povm).__name__}")
    unitary = check_flag("unitary", unitary)
    v = povm.isometry()
    k, r, big = povm.num_outcomes, povm.rank, povm.num_outcomes * povm.rank
    blocks = torch.eye(big, dtype=v.dtype, device=v.device).reshape(k, r, big)
    u = None
    if unitary:
        q, _ = torch.linalg.qr(v, mode="complete")                                # (..., K, K)
        u = torch.cat([v, q[..., :, povm.dim:]], dim=-1)
    return NaimarkDilation(v, Projector._trusted(vectors=blocks), u)
