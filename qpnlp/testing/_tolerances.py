"""Tolerance table for numerical comparisons, per dtype."""

from __future__ import annotations

import torch

from qpnlp.hilbert._validation import real_dtype_of

# Absolute tolerance per unit of dimension: atol = ATOL_PER_DIM[dtype] * max(d, 1).
ATOL_PER_DIM = {
    torch.float32: 2e-6,
    torch.float64: 1e-13,
}


def default_atol(dtype: torch.dtype, dim: int = 1) -> float:
    """Tolerance for results of compound operations on ``dim``-dimensional objects.

    >>> default_atol(torch.complex64, 10) > default_atol(torch.complex128, 10)
    True
    """
    return ATOL_PER_DIM[real_dtype_of(dtype)] * max(int(dim), 1)
