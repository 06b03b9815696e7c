"""Sparse COO tensors that are coalesced by construction (sorted, unique row indices), built without a check."""

from __future__ import annotations

import warnings

import torch

__all__ = ["coalesced_coo"]


def coalesced_coo(indices: torch.Tensor, values: torch.Tensor, shape: torch.Size | tuple[int, ...]) -> torch.Tensor:
    """``torch.sparse_coo_tensor(indices, values, shape)`` marked coalesced, its invariants not checked.

    ``indices`` ``(sparse_dim, nnz)`` must already be sorted and unique (the caller's guarantee: a lookup's
    ``torch.unique`` rows, or rows checked increasing). torch 2.11 warns "Sparse invariant checks are
    implicitly disabled" even though ``check_invariants=False`` says so explicitly (2.13 does not), and the CLI
    would print that warning beside its one error line: it is silenced here, for this call only.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")
        return torch.sparse_coo_tensor(indices, values, shape, is_coalesced=True, check_invariants=False)
