"""Tolerance table for numerical comparisons, per dtype."""

from __future__ import annotations

import torch

from qpnlp.hilbert._validation import real_dtype_of

_FLOAT32_ATOL_PER_DIM = 2e-6


def _like_float32(dtype: torch.dtype) -> float:
    """float32's tolerance in units of machine epsilon (about 17 eps per dim), in ``dtype``'s epsilon."""
    return _FLOAT32_ATOL_PER_DIM / torch.finfo(torch.float32).eps * torch.finfo(dtype).eps


# Absolute tolerance per unit of dimension: atol = ATOL_PER_DIM[dtype] * max(d, 1).
ATOL_PER_DIM = {
    torch.float16: _like_float32(torch.float16),      # about 1.6e-2 (autocast outputs, complex32 parts)
    torch.bfloat16: _like_float32(torch.bfloat16),    # about 1.3e-1
    torch.float32: _FLOAT32_ATOL_PER_DIM,
    torch.float64: 1e-13,
}


def default_atol(dtype: torch.dtype, dim: int = 1) -> float:
    """Tolerance ``ATOL_PER_DIM[dtype] * max(dim, 1)`` for compound operations on ``dim``-dimensional objects.

    Parameters
    ----------
    dtype : torch.dtype
        A floating or complex dtype (complex dtypes use their real dtype's entry); others raise TypeError.
    dim : int, optional
        The dimension d the error grows with (default 1).

    Returns
    -------
    float
        The absolute tolerance, about ``2e-6 d`` for float32 and ``1e-13 d`` for float64.

    Examples
    --------
    >>> default_atol(torch.complex64, 10) > default_atol(torch.complex128, 10)
    True
    """
    real = real_dtype_of(dtype)
    if real not in ATOL_PER_DIM:
        raise TypeError(f"no default tolerance for {dtype}; pass atol= (the table covers "
                        f"{', '.join(str(d) for d in ATOL_PER_DIM)} and their complex dtypes)")
    return ATOL_PER_DIM[real] * max(int(dim), 1)
