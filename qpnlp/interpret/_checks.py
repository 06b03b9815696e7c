"""Input checks shared by the interpretation functions (clear errors, cheap)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

import torch


def vectors(name: str, x, *, allow_single: bool = False) -> torch.Tensor:
    """``x`` as a finite, non-empty ``(n, d)`` tensor (a ``(d,)`` vector becomes ``(1, d)`` if allowed)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}")
    if allow_single and x.dim() == 1:
        x = x.unsqueeze(0)
    if x.dim() != 2:
        shape = "(n, d) or (d,)" if allow_single else "(n, d)"
        raise ValueError(f"{name} must have shape {shape}; got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(x.shape)}")
    if not (x.is_floating_point() or x.is_complex()):
        raise TypeError(f"{name} must be a real or complex floating tensor; got {x.dtype}")
    finite(name, x)
    return x.detach()


def on_host(x: torch.Tensor) -> torch.Tensor:
    """A detached CPU copy of real ``x`` in float32 at least: float16 and bfloat16 widen (numpy has no bfloat16),
    float64 stays float64 (``.float()`` rounded a double model's scores and periods to float32)."""
    return x.detach().to("cpu", torch.promote_types(x.dtype, torch.float32))


def finite(name: str, x: torch.Tensor) -> None:
    """Raise ValueError naming the first NaN or inf entry of ``x``."""
    bad = ~torch.isfinite(x)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"{name} contains NaN or inf (shape {tuple(x.shape)}, first at index {where}: "
                         f"{x[where].item()})")


def words(name: str, words: Sequence[str], n: int, what: str = "rows") -> list[str]:
    """``words`` as a list of ``n`` names."""
    if isinstance(words, str):
        raise TypeError(f"{name} must be a sequence of words, not a string")
    words = list(words)
    if not words:
        raise ValueError(f"{name} is empty: need one name for each of the {n} {what}")
    if len(words) != n:
        raise ValueError(f"got {len(words)} {name} for {n} {what}")
    return words


def kept_ids(name: str, exclude_ids: Iterable[int], n: int) -> torch.Tensor:
    """A bool ``(n,)`` selection, False at ``exclude_ids``: word ids in ``[0, n)`` (ValueError naming the others)."""
    ids = [operator.index(i) for i in exclude_ids]
    bad = [i for i in ids if not 0 <= i < n]
    if bad:
        raise ValueError(f"{name} must be word ids in [0, {n}) (the vocabulary has {n} words); got {bad}")
    keep = torch.ones(n, dtype=torch.bool)
    keep[ids] = False
    return keep


def word_rows(names: Sequence[str], n: int, what: str, word_counts, min_count: int, exclude_ids: Iterable[int], *,
              purpose: str = "") -> tuple[torch.Tensor, list[str], torch.Tensor | None]:
    """The ids ``(m,)`` of the ``n`` rows (one per word) to keep, the word names, and the checked counts (or None).

    A row is kept unless its id is in ``exclude_ids`` or (with ``word_counts``)
    its count is below ``min_count``; ValueError if none is left ("no word
    left{purpose}"). The arguments are checked as ``words``, ``counts`` and
    ``exclude_ids``.
    """
    names = words("words", names, n, what)
    keep = kept_ids("exclude_ids", exclude_ids, n)
    if word_counts is not None:
        word_counts = counts("counts", word_counts, n)
        keep &= word_counts >= min_count
    ids = keep.nonzero().squeeze(-1)
    if ids.numel() == 0:
        raise ValueError(f"no word left{purpose} (check exclude_ids, counts and min_count)")
    return ids, names, word_counts


def counts(name: str, counts, n: int) -> torch.Tensor:
    """``counts`` as a ``(n,)`` tensor of finite numbers, one per word (a NaN would silently fail every filter)."""
    if isinstance(counts, str):
        raise TypeError(f"{name} must be a sequence of numbers, not a string")
    # a tensor (a CUDA one too) in one copy: list() of it gave a 0-dim tensor per word, each read with .item()
    values = counts.detach().cpu() if isinstance(counts, torch.Tensor) else torch.as_tensor(list(counts))
    if values.shape != (n,) or values.is_complex() or values.dtype == torch.bool:
        raise ValueError(f"{name} must have one number per word ({n}); got {values.dtype} {tuple(values.shape)}")
    finite(name, values)
    return values


def pair(name: str, value) -> tuple[float, float]:
    """``value`` as a ``(start, end)`` pair of floats; TypeError naming ``name`` for a string, a scalar or non-numbers."""
    wrong = TypeError(f"{name} must be a (start, end) pair of numbers; got {type(value).__name__} {value!r}")
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise wrong
    try:
        items = tuple(value)
        if any(isinstance(x, (str, bytes)) for x in items):     # float("1990") would read a string silently
            raise wrong
        values = tuple(float(x) for x in items)
    except (TypeError, ValueError):
        raise wrong from None
    if len(values) != 2:
        raise ValueError(f"{name} must be a (start, end) pair; got {len(values)} values {value!r}")
    return values


def positive(name: str, value: int) -> int:
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    return int(value)


def mask(name: str, mask, n: int) -> torch.Tensor:
    """A bool ``(n,)`` selection with at least one True entry."""
    mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool or mask.shape != (n,):
        raise ValueError(f"{name} must be a bool tensor of shape ({n},); got {mask.dtype} {tuple(mask.shape)}")
    if not bool(mask.any()):
        raise ValueError(f"{name} selects no row")
    return mask
