"""The (ids, mask) batch contract of the sentence models (QPDN, the real baseline, CNM)."""

from __future__ import annotations

import torch


def check_batch(ids: torch.Tensor, mask: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``ids`` is a ``(B, L)`` LongTensor, ``mask`` a bool tensor of the
    same shape, and every sentence has at least one unmasked word."""
    if ids.dim() != 2 or ids.dtype != torch.long:
        raise ValueError(f"ids must be a LongTensor of shape (B, L); got {ids.dtype} {tuple(ids.shape)}")
    if mask.shape != ids.shape or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor of shape {tuple(ids.shape)}; got {mask.dtype} {tuple(mask.shape)}")
    empty = ~mask.any(-1)
    if bool(empty.any()):
        raise ValueError(f"empty sentence (no unmasked word) at batch index {int(empty.nonzero()[0, 0])}")
