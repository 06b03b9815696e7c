"""Large tensors stored as the rows that differ from a base: how a training state stays small.

An embedding table trained by a sparse optimiser changes only in the rows
of the words seen in training; with a pretrained fallback vocabulary (all
400k GloVe words) that is a few percent of its rows. Stored whole each
epoch, the table, the best parameters and SparseAdam's two moment tables
came to about 480 MB per epoch for a TREC run. Here a tensor

    T  (n, ...)   with base  B  (n, ...)   (zeros, the initial parameters or the current ones)

is stored as ``rows = {i : T[i] != B[i] bitwise}`` (int64, ascending) and
``values = T[rows]`` when at most half of its rows differ, and rebuilt as
``B.clone(); B[rows] = values``: bit for bit (the comparison is of the bit
patterns, so -0.0, NaN payloads and complex parts are kept), whatever the
base.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

import torch

from qpnlp._errors import preview

__all__ = ["MIN_ELEMENTS", "encode_rows", "decode_rows", "fingerprint"]

#: Smaller tensors are always stored whole: the saving would not pay for the extra entries.
MIN_ELEMENTS = 1 << 16

_SAME_WIDTH_INTEGER = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns as integers of the same width (complex: of its real and imaginary parts)."""
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor.resolve_conj())
    if tensor.is_floating_point():
        tensor = tensor.view(_SAME_WIDTH_INTEGER[tensor.element_size()])
    return tensor


def encode_rows(tensor: torch.Tensor, base: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(rows, values)`` of ``tensor`` against ``base`` (None: zeros), on the CPU; None to store it whole.

    Whole: fewer than :data:`MIN_ELEMENTS` elements, fewer than 2 dimensions,
    a base of another shape or dtype, or more than half of the rows differ.
    """
    tensor = tensor.detach()
    if tensor.dim() < 2 or tensor.numel() < MIN_ELEMENTS:
        return None
    if base is not None and (base.shape != tensor.shape or base.dtype != tensor.dtype):
        return None
    bits = _bits(tensor).reshape(len(tensor), -1)
    differs = bits != 0 if base is None else bits != _bits(base.detach().to(tensor.device)).reshape(len(base), -1)
    rows = differs.any(dim=1).nonzero().squeeze(1)
    if 2 * len(rows) > len(tensor):
        return None
    return rows.cpu(), tensor[rows].cpu()


def decode_rows(rows: torch.Tensor, values: torch.Tensor, base: torch.Tensor | None,
                shape: tuple[int, ...], max_elements: int | None = None) -> torch.Tensor:
    """The tensor :func:`encode_rows` stored: ``base`` (None: zeros of ``shape``) with ``rows`` set to ``values``.

    ``max_elements``: the most elements the rebuilt tensor may have (the loader passes its model's largest
    tensor), checked before the zeros of ``shape`` are allocated: the shape comes from the state's JSON.

    Raises
    ------
    ValueError
        When the pieces do not fit together (a damaged or foreign file), or ``shape`` is not a list of integers
        >= 0 or has more than ``max_elements`` elements.
    """
    shape = tuple(shape)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError(f"stored shape {preview(shape)} is not a list of integers >= 0")
    if max_elements is not None and math.prod(shape) > max_elements:
        raise ValueError(f"stored shape {shape} has {math.prod(shape)} elements, more than any tensor of the model "
                         f"({max_elements})")
    if base is None:
        base = torch.zeros(shape, dtype=values.dtype)
    if tuple(base.shape) != shape or base.dtype != values.dtype or tuple(values.shape[1:]) != shape[1:]:
        raise ValueError(f"rows of shape {tuple(values.shape)} ({values.dtype}) do not fit a base of shape "
                         f"{tuple(base.shape)} ({base.dtype}); stored shape {shape}")
    if rows.dtype != torch.int64 or rows.dim() != 1 or len(rows) != len(values) or (
            len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= shape[0])):
        raise ValueError(f"row indices that do not index a tensor of {shape[0]} rows")
    rebuilt = base.detach().cpu().clone()
    rebuilt[rows] = values
    return rebuilt


def fingerprint(state: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 of a state dict's names, shapes, dtypes and bits: equal tensors, equal fingerprint."""
    digest = hashlib.sha256()
    for key in sorted(state):
        value = state[key].detach()
        digest.update(f"{key}|{tuple(value.shape)}|{value.dtype}|".encode())
        digest.update(_bits(value).cpu().contiguous().reshape(-1).numpy())
    return digest.hexdigest()
