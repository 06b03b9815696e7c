"""Short one-line reprs of records (dataclasses and named tuples) whose fields hold tensors, arrays or histories.

A dataclass's or named tuple's own repr prints every value: the numbers of each tensor and array (a
``(P, k)`` table over lines), every epoch of a history, the layers of a model. :func:`record_repr` prints
each field with :func:`value_repr` instead: a tensor or array as its shape and dtype (never its values, so
it costs O(1) for any size), a module as its name and settings, a long list or dict cut with its length.

>>> import torch
>>> value_repr(torch.zeros(3, 2))
'tensor(shape=(3, 2), dtype=torch.float32, device=cpu)'
>>> value_repr(list(range(30)))
'[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11... (30 items)'
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from qpnlp._errors import preview

__all__ = ["VALUE_LIMIT", "RawText", "value_repr", "record_repr"]

#: Characters at most of one value that is not a tensor or array (a longer one is cut, ``...``).
VALUE_LIMIT = 40


def value_repr(value: Any, limit: int = VALUE_LIMIT) -> str:
    """``value`` in at most about ``limit`` characters: a tensor or array as its shape, dtype (and device), a
    module as ``Name(extra_repr)``, anything else as its repr; cut to ``limit`` (``...``), with the number of
    items of a list, tuple or dict that was cut."""
    if isinstance(value, torch.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype}, device={value.device})"
    if isinstance(value, np.ndarray):
        return f"array(shape={value.shape}, dtype={value.dtype})"
    shown = RawText(f"{type(value).__name__}({value.extra_repr()})") if isinstance(value, torch.nn.Module) else value
    text = preview(shown, limit)
    return f"{text} ({len(value)} items)" if text.endswith("...") and isinstance(value, (list, tuple, dict)) else text


def record_repr(record: Any, limit: int = 80) -> str:
    """``Type(name=value, ...)`` of the fields of a dataclass (those with ``repr=True``) or a named tuple, each
    value by :func:`value_repr` at most ``limit`` characters."""
    if dataclasses.is_dataclass(record):
        names = [f.name for f in dataclasses.fields(record) if f.repr]
    else:
        names = list(record._fields)
    fields = ", ".join(f"{name}={value_repr(getattr(record, name), limit)}" for name in names)
    return f"{type(record).__name__}({fields})"


class RawText(str):
    """A string whose ``repr`` is itself (:func:`preview` cuts it without quoting it)."""

    def __repr__(self) -> str:
        return str(self)
