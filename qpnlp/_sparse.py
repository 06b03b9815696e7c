"""Sparse COO tensors that are coalesced by construction (sorted, unique row indices), built without a check."""

from __future__ import annotations

import warnings

import torch

__all__ = ["coalesced_coo"]

_INVARIANT_WARNING = "Sparse invariant checks are implicitly disabled"


def _warns_despite_opt_out() -> bool:
    """Whether this torch warns :data:`_INVARIANT_WARNING` on a tensor built with ``check_invariants=False``
    (torch 2.11 does; 2.13 does not). Asked once, of a ``(1,)`` tensor with no entries, at import."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0), (1,), is_coalesced=True,
                                check_invariants=False)
    return any(_INVARIANT_WARNING in str(w.message) for w in caught)


# Decided once: catch_warnings per call costs time on a hot path (every backward of the tables) and is not
# thread-safe (it swaps the process-wide warning filters, which another thread may be changing meanwhile)
_SILENCE = _warns_despite_opt_out()


def coalesced_coo(indices: torch.Tensor, values: torch.Tensor, shape: torch.Size | tuple[int, ...]) -> torch.Tensor:
    """``torch.sparse_coo_tensor(indices, values, shape)`` marked coalesced, its invariants not checked.

    ``indices`` ``(sparse_dim, nnz)`` must already be sorted and unique (the caller's guarantee: a lookup's
    ``torch.unique`` rows, or rows checked increasing). torch 2.11 warns "Sparse invariant checks are
    implicitly disabled" even though ``check_invariants=False`` says so explicitly, and the CLI would print that
    warning beside its one error line: on such a torch (:data:`_SILENCE`, probed at import) it is silenced for
    this call only; on the others (2.13) the call runs bare.
    """
    if not _SILENCE:
        return torch.sparse_coo_tensor(indices, values, shape, is_coalesced=True, check_invariants=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_INVARIANT_WARNING)
        return torch.sparse_coo_tensor(indices, values, shape, is_coalesced=True, check_invariants=False)
