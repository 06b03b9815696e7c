"""Padding and batching of encoded texts.

Padding uses id :data:`~qpnlp.data.vocab.PAD_ID` (0) and comes with an explicit
boolean mask (True = real token); models must use the mask, never the id, to
ignore padding.

Truncation policy: a text longer than ``max_len`` keeps its FIRST ``max_len``
tokens (head truncation); the batch length is the longest (possibly truncated)
text of the batch, so no row is all padding. With ``multiple_of`` the batch
length is rounded up to a multiple of it (never beyond ``max_len``), so that
the batches of a data set come in a few lengths: CUDA graphs
(``torch.compile(mode="reduce-overhead")``) record one graph per input size.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from qpnlp._errors import preview
from qpnlp.data.vocab import PAD_ID

__all__ = ["EncodedTexts", "collate", "iterate_batches", "make_loader", "pad_batch", "padded_length"]


def pad_batch(
    sequences: Sequence[Sequence[int]], max_len: int | None = None, multiple_of: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad id sequences to a rectangle.

    Parameters
    ----------
    sequences : sequence of sequences of int
        B non-empty id lists (lists, tuples, arrays or 1-D tensors).
        Integer-valued floats (``2.0``) are accepted; an id that is not an
        integer (``1.7``, NaN, a string, a bool) is an error naming the
        sequence, as a cast would truncate it to another word.
    max_len : int, optional
        Truncate each to its first ``max_len`` ids.
    multiple_of : int, optional
        Round the padded length up to a multiple of this (at most ``max_len``).

    Returns
    -------
    ids : torch.LongTensor
        Shape (B, L), L = min(max length, max_len), rounded up by ``multiple_of``;
        PAD_ID (0) after each text.
    mask : torch.BoolTensor
        Shape (B, L), True on real tokens.

    Examples
    --------
    >>> ids, mask = pad_batch([[5, 6, 7], [8]])
    >>> ids.tolist(), mask.tolist()
    ([[5, 6, 7], [8, 0, 0]], [[True, True, True], [True, False, False]])
    >>> pad_batch([[5, 6, 7], [8]], max_len=2)[0].tolist()
    [[5, 6], [8, 0]]
    >>> pad_batch([[5, 6, 7], [8]], multiple_of=4)[1].tolist()
    [[True, True, True, False], [True, False, False, False]]
    """
    if len(sequences) == 0:
        raise ValueError("pad_batch needs at least one sequence")
    if max_len is not None and max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    lengths = [len(s) for s in sequences]
    if min(lengths) == 0:
        raise ValueError(f"sequence {lengths.index(0)} is empty; a row of only padding is not allowed")
    if max_len is not None:
        lengths = [min(n, max_len) for n in lengths]
    L = padded_length(max(lengths), max_len, multiple_of)
    ids = torch.full((len(sequences), L), PAD_ID, dtype=torch.long)
    mask = torch.arange(L).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    if all(type(seq) is list for seq in sequences):      # lists of ints (EncodedTexts): one tensor for the batch
        flat = list(itertools.chain.from_iterable(seq if n == len(seq) else seq[:n]
                                                  for seq, n in zip(sequences, lengths)))
        if _INT.issuperset(map(type, flat)):
            ids[mask] = torch.tensor(flat, dtype=torch.long)   # the mask's True entries, row by row
            return ids, mask
    for row, (seq, n) in enumerate(zip(sequences, lengths)):   # tensors, arrays, floats: checked row by row
        ids[row, :n] = _id_tensor(seq[:n], f"sequence {row}")
    return ids, mask


def padded_length(longest: int, max_len: int | None = None, multiple_of: int | None = None) -> int:
    """The length a batch whose longest (truncated) text has ``longest`` tokens is padded to.

    Parameters
    ----------
    longest : int
        Tokens in the batch's longest text, after truncation to ``max_len``.
    max_len : int or None, default None
        The cap of the rounded length (the truncation length); None: no cap.
    multiple_of : int or None, default None
        Round ``longest`` up to a multiple of it (>= 1; ValueError otherwise); None: no rounding, ``longest`` itself.

    Examples
    --------
    >>> padded_length(9), padded_length(9, multiple_of=8), padded_length(9, max_len=12, multiple_of=8)
    (9, 16, 12)
    """
    if multiple_of is None:
        return longest
    if multiple_of < 1:
        raise ValueError(f"multiple_of must be >= 1, got {multiple_of}")
    rounded = -(-longest // multiple_of) * multiple_of
    return rounded if max_len is None else min(rounded, max_len)


_INT = frozenset({int})
_INT_DTYPES = frozenset({torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8})


def _id_tensor(seq, what: str) -> torch.Tensor:
    """``seq`` as a 1-D int64 tensor of ids, or an error naming ``what``: ids are never truncated.

    A list of Python ints or an integer tensor costs one type check (the hot path of every batch); a float one is
    accepted when every value is an integer (``2.0``).
    """
    if isinstance(seq, list) and _INT.issuperset(map(type, seq)):
        return torch.as_tensor(seq, dtype=torch.long)
    if isinstance(seq, torch.Tensor) and seq.dtype in _INT_DTYPES and seq.dim() == 1:
        return seq
    if isinstance(seq, (str, bytes)):
        raise TypeError(f"{what} is a {type(seq).__name__} {seq[:20]!r}, not a sequence of ids; encode it first")
    try:
        t = torch.as_tensor(seq)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{what} must hold integer ids; got {preview(seq)} ({err})") from None
    if t.dim() != 1:
        raise ValueError(f"{what} must be a 1-D sequence of ids; got shape {tuple(t.shape)}")
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{what} must hold integer ids; got {t.dtype}")
    if t.is_floating_point():
        bad = torch.nonzero(~torch.isfinite(t) | (t != torch.floor(t))).flatten()
        if bad.numel():
            position = int(bad[0])
            value = seq[position]  # not t[position]: a list of floats became float32
            value = value.item() if hasattr(value, "item") else value
            raise ValueError(f"{what} must hold integer ids; position {position} is {value!r}, which a cast would "
                             "truncate")
    return t.to(torch.long)



def _id_lists(ids: Sequence[Sequence[int]]) -> list[list[int]]:
    """``ids`` as lists of Python ints, or a TypeError / ValueError naming the first bad text (and position).

    Lists of ints are checked in one pass at C speed (the set of the element types); tensor and array rows by
    their dtype. Integer-valued floats (``2.0``) are accepted, as :func:`class_ids` accepts them; ``2.9``, NaN,
    a string (``"23"`` would be read digit by digit), ``None`` or a bool are refused.
    """
    rows = []
    for i, s in enumerate(ids):
        if isinstance(s, (torch.Tensor, np.ndarray)):
            rows.append(_id_tensor(s, f"text {i}").tolist())
        elif isinstance(s, (str, bytes)):
            raise TypeError(f"text {i} is a {type(s).__name__} {preview(s)}, not a sequence of ids; encode it "
                            "first (Vocabulary.encode_many)")
        else:
            rows.append(list(s))
    if not _INT.issuperset(map(type, itertools.chain.from_iterable(rows))):
        rows = [[_id_of(x, i, j) for j, x in enumerate(row)] for i, row in enumerate(rows)]
    return rows


def _id_of(x, text: int, position: int) -> int:
    """One id as a Python int; integer-valued floats pass, anything else is an error naming where it is."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Integral, numbers.Real)):
        raise TypeError(f"text {text} must hold integer ids; position {position} is {type(x).__name__} {preview(x)}")
    if not isinstance(x, numbers.Integral) and not (math.isfinite(x) and x == math.floor(x)):
        raise ValueError(f"text {text} must hold integer ids; position {position} is {x!r}, which a cast would "
                         "truncate")
    return int(x)


def class_ids(labels, n: int) -> np.ndarray:
    """``labels`` as an int64 array of shape ``(n,)``, or a ValueError.

    Integer-valued floats (``1.0``) are accepted; a label that is not an
    integer (``0.5``, NaN) is an error naming it and its index, where a cast
    would truncate it to a class id without a word.
    """
    raw = np.asarray(labels)
    if raw.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {tuple(raw.shape)}")
    if raw.dtype.kind not in "biuf":
        raise ValueError(f"labels must be integers (class ids), got an array of {raw.dtype.name}")
    if raw.dtype.kind == "f" and raw.size:
        bad = np.flatnonzero(~np.isfinite(raw) | (raw != np.floor(raw)))
        if bad.size:
            raise ValueError(f"labels must be integers (class ids); labels[{bad[0]}] is {raw[bad[0]].item()!r}")
    return raw.astype(np.int64)


class EncodedTexts(Dataset):
    """A torch Dataset of (ids, label) pairs.

    Parameters
    ----------
    ids : sequence of sequences of int
        N encoded texts (see :meth:`qpnlp.data.vocab.Vocabulary.encode_many`).
        Integer-valued floats (``2.0``) are accepted; an id that is not an
        integer (``2.9``, NaN), a string row (``"23"``), ``None`` or a bool
        is an error naming the text and position (a cast would truncate it
        or read a string digit by digit).
    labels : array-like of int
        Shape (N,). Integer-valued floats (``1.0``) are accepted; a label
        that is not an integer (``0.5``, NaN) is a ``ValueError`` naming it
        and its index (it would be truncated to a class id).
    """

    def __init__(self, ids: Sequence[Sequence[int]], labels: Sequence[int] | np.ndarray | torch.Tensor) -> None:
        labels = torch.as_tensor(class_ids(labels, len(ids)))
        empty = next((i for i, s in enumerate(ids) if len(s) == 0), None)
        if empty is not None:
            raise ValueError(f"text {empty} is empty")
        self.ids = _id_lists(ids)
        self.labels = labels

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"EncodedTexts(n={len(self)}, classes={self.labels.unique().numel()})"   # distinct labels

    def __getitem__(self, i: int) -> tuple[list[int], int]:
        return self.ids[i], int(self.labels[i])


def collate(
    batch: Sequence[tuple[Sequence[int], int]], max_len: int | None = None, multiple_of: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Collate (ids, label) pairs into ``(ids (B, L), mask (B, L), labels (B,))`` (see :func:`pad_batch`).

    Use ``functools.partial(collate, max_len=...)`` as a DataLoader ``collate_fn``.

    Parameters
    ----------
    batch : sequence of (ids, label)
        B pairs of a non-empty id list and an int label.
    max_len : int, optional
        Truncate each text to its first ``max_len`` ids.
    multiple_of : int, optional
        Round the padded length up to a multiple of this (at most ``max_len``).
    """
    seqs, labels = zip(*batch)
    ids, mask = pad_batch(seqs, max_len, multiple_of)
    return ids, mask, torch.tensor(labels, dtype=torch.long)


def iterate_batches(
    dataset: EncodedTexts,
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    epoch: int = 0,
    max_len: int | None = None,
    drop_last: bool = False,
    multiple_of: int | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Yield ``(ids, mask, labels)`` batches, each padded as :func:`pad_batch` does.

    Shuffling uses ``numpy.random.default_rng((seed, epoch))``: the order is a
    function of (seed, epoch) only, different for each epoch and independent of
    any global random state.

    Parameters
    ----------
    dataset : EncodedTexts
        The (ids, label) pairs.
    batch_size : int
        Texts per batch, >= 1.
    shuffle : bool, optional
        Draw a new order each epoch (default: the dataset's order).
    seed, epoch : int, optional
        The order is ``numpy.random.default_rng((seed, epoch))``'s permutation.
    max_len : int, optional
        Truncate each text to its first ``max_len`` ids.
    drop_last : bool, optional
        Leave out a last batch smaller than ``batch_size``.
    multiple_of : int, optional
        Round the padded length up to a multiple of this (at most ``max_len``).

    Examples
    --------
    >>> ds = EncodedTexts([[2, 3], [4], [5, 6, 7]], [0, 1, 0])
    >>> [b[0].shape for b in iterate_batches(ds, batch_size=2)]
    [torch.Size([2, 2]), torch.Size([1, 3])]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = len(dataset)
    order = np.random.default_rng((seed, epoch)).permutation(n) if shuffle else np.arange(n)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        yield collate([dataset[int(i)] for i in order[start : start + batch_size]], max_len, multiple_of)


def make_loader(
    dataset: EncodedTexts,
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    max_len: int | None = None,
    multiple_of: int | None = None,
    **kwargs,
) -> DataLoader:
    """A DataLoader with the padding collate and a seeded shuffling generator.

    Each pass over the loader draws a new order from the seeded generator, so
    a fresh loader with the same seed replays the same sequence of epochs.

    Parameters
    ----------
    dataset : EncodedTexts
        The (ids, label) pairs.
    batch_size : int
        Texts per batch, >= 1.
    shuffle : bool, optional
        Draw a new order each epoch (default: the dataset's order).
    seed : int, optional
        Seed of the loader's shuffling generator.
    max_len : int, optional
        Truncate each text to its first ``max_len`` ids.
    multiple_of : int, optional
        Round the padded length up to a multiple of this (at most ``max_len``).
    **kwargs
        Passed on to ``torch.utils.data.DataLoader`` (e.g. ``num_workers``).
    """
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        generator=generator,
        collate_fn=functools.partial(collate, max_len=max_len, multiple_of=multiple_of),
        **kwargs,
    )
