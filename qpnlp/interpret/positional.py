r"""Per-word positional sensitivity of a complex-order embedding (paper appendix D, Table 7).

.. math::

    \delta_j = \frac{1}{D} \sum_{d=1}^{D} |\omega_{j,d}|

A large :math:`\delta_j` means the word's embedding turns quickly with its
position (position-sensitive); a small one means it is nearly a constant word
vector. Absolute values are used because learned frequencies may be negative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor, nn

from qpnlp.nn import ComplexOrderEmbedding

from . import _checks

__all__ = ["PositionalSensitivity", "positional_sensitivity", "sensitivity_scores", "frequency_table"]


def frequency_table(source: ComplexOrderEmbedding | nn.Module | Tensor) -> Tensor:
    r"""The per-word frequencies :math:`\omega`, real (V, D) (or (V, 1) for dimension sharing), detached.

    Raises ValueError for complex-vanilla (no
    frequencies), word sharing (one frequency vector for all words), and
    frequencies that are not real or not finite.

    Parameters
    ----------
    source : ComplexOrderEmbedding, torch.nn.Module or Tensor
        The embedding, a model with one as ``.embedding`` (e.g.
        :class:`~qpnlp.models.order_classifier.OrderClassifier`), or the (V, D) tensor itself.

    Returns
    -------
    Tensor
        Real (V, D) (or (V, 1)), detached.
    """
    return _real_finite(_frequency_table(source))


def _real_finite(omega: Tensor) -> Tensor:
    """``omega`` checked to be a real, finite, non-empty (V, D) tensor (every frequency reader goes through here)."""
    if omega.is_complex() or not omega.is_floating_point() or omega.dim() != 2 or 0 in omega.shape:
        raise ValueError(f"frequencies must be a real, non-empty (V, D) tensor; got {omega.dtype} "
                         f"{tuple(omega.shape)}")
    _checks.finite("frequencies", omega)
    return omega


def _frequency_table(source) -> Tensor:
    if isinstance(source, Tensor):
        return source.detach()
    emb = source if isinstance(source, ComplexOrderEmbedding) else getattr(source, "embedding", None)
    if not isinstance(emb, ComplexOrderEmbedding):
        raise TypeError(f"need a ComplexOrderEmbedding (or a model with one as .embedding); got {type(source)}")
    if emb.frequency is None:
        raise ValueError("this embedding encodes no positions (complex-vanilla): no frequencies")
    if emb.frequency_sharing == "word":
        raise ValueError("word-sharing frequencies are the same for every word: delta_j does not depend on j")
    if emb.frequency_sharing == "dimension":
        return emb.frequency.weight.detach()
    return emb.frequency_table()


def sensitivity_scores(frequencies: Tensor) -> Tensor:
    r""":math:`\delta_j = \operatorname{mean}_d |\omega_{j,d}|`: real (V, D) (or (V, 1)) -> (V,).

    Parameters
    ----------
    frequencies : Tensor
        Real, finite (V, D) (or (V, 1)), e.g. from :func:`frequency_table`.

    Returns
    -------
    Tensor
        Real (V,), detached.
    """
    return _real_finite(frequencies.detach()).abs().mean(-1)


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared tensors and raised
class PositionalSensitivity:
    """Result of :func:`positional_sensitivity`.

    Attributes
    ----------
    delta : Tensor
        (V,) sensitivities of every id (reserved ids included).
    largest : list of (word, delta)
        Descending (equal deltas by increasing id).
    smallest : list of (word, delta)
        Ascending (equal deltas by increasing id).
    """

    delta: Tensor
    largest: list
    smallest: list

    def rows(self) -> list[dict]:
        """Table rows ``{"rank", "largest", "delta_largest", "smallest", "delta_smallest"}``."""
        n = max(len(self.largest), len(self.smallest))
        out = []
        for i in range(n):
            big = self.largest[i] if i < len(self.largest) else ("", float("nan"))
            small = self.smallest[i] if i < len(self.smallest) else ("", float("nan"))
            out.append(dict(rank=i + 1, largest=big[0], delta_largest=big[1], smallest=small[0],
                            delta_smallest=small[1]))
        return out

    def __repr__(self) -> str:
        """The vocabulary size, the list length and the first three words of each list, never the whole lists
        (``top=1000`` printed some 60,000 characters in a notebook); :meth:`rows` and :meth:`to_markdown` give all."""
        def head(pairs: list) -> str:
            shown = ", ".join(f"({w!r}, {d:.4g})" for w, d in pairs[:3])
            return f"[{shown}{', ...' if len(pairs) > 3 else ''}]"
        return (f"PositionalSensitivity(n_words={self.delta.shape[0]}, top={len(self.largest)}, "
                f"largest={head(self.largest)}, smallest={head(self.smallest)})")

    def to_markdown(self) -> str:
        """The table in Markdown, one row per rank; a word's ``|``, backslash and line ends are escaped
        (``\\|``, ``\\\\``, ``\\n``), so that a word such as the token ``|`` stays in its column."""
        lines = ["| rank | largest delta | value | smallest delta | value |", "|---:|---|---:|---|---:|"]
        for r in self.rows():
            lines.append(f"| {r['rank']} | {_cell(r['largest'])} | {r['delta_largest']:.4g} | "
                         f"{_cell(r['smallest'])} | {r['delta_smallest']:.4g} |")
        return "\n".join(lines)


_CELL_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "\n": "\\n", "\r": "\\r"})


def _cell(word: str) -> str:
    """``word`` as the text of a Markdown table cell: its pipes, backslashes and line ends escaped."""
    return word.translate(_CELL_ESCAPES)


def positional_sensitivity(source: ComplexOrderEmbedding | nn.Module | Tensor, words: Sequence[str], *,
                           top: int = 50, counts: Sequence[int] | None = None, min_count: int = 1,
                           exclude_ids: Sequence[int] = (0, 1)) -> PositionalSensitivity:
    r"""The words with the largest and smallest :math:`\delta_j` (paper Table 7).

    Parameters
    ----------
    source : ComplexOrderEmbedding, a model with one as ``.embedding``, or Tensor
        The frequencies :math:`\omega`, real (V, D) (or (V, 1) for dimension sharing).
    words : sequence of str
        ``words[j]`` is the word of id ``j`` (e.g. ``Vocabulary.words``).
    top : int
        Length of each list.
    counts, min_count : optional
        Training counts per id; keep only words seen at least ``min_count`` times.
    exclude_ids : sequence of int
        Ids left out (PAD and UNK by default).

    Returns
    -------
    PositionalSensitivity

    Raises
    ------
    ValueError
        When the embedding has no per-word frequencies (complex-vanilla, or
        word sharing, where :math:`\delta_j` is the same for all words), when
        an ``exclude_ids`` entry is outside ``[0, V)``, or when no word is left.

    Examples
    --------
    >>> omega = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, -3.0], [0.1, 0.1], [0.5, 0.5]])
    >>> table = positional_sensitivity(omega, ["<pad>", "<unk>", "worst", "the", "film"], top=2)
    >>> table.largest
    [('worst', 2.0), ('film', 0.5)]
    >>> [w for w, _ in table.smallest]
    ['the', 'film']
    """
    top = _checks.positive("top", top)
    delta = sensitivity_scores(frequency_table(source))
    words = _checks.words("words", words, delta.shape[0], "frequency rows")
    keep = _checks.kept_ids("exclude_ids", exclude_ids, delta.shape[0]).to(delta.device)
    if counts is not None:
        counts = _checks.counts("counts", counts, delta.shape[0])
        keep &= (counts >= min_count).to(keep.device)     # a CUDA embedding, CPU counts
    ids = keep.nonzero().squeeze(-1)
    if ids.numel() == 0:                                    # as period_table and importance_table
        raise ValueError("no word left (check exclude_ids, counts and min_count)")
    rank = lambda descending: ids[torch.argsort(delta[ids], descending=descending, stable=True)][:top]  # noqa: E731
    as_pairs = lambda idx: [(words[int(i)], float(delta[i])) for i in idx]  # noqa: E731
    return PositionalSensitivity(delta, as_pairs(rank(True)), as_pairs(rank(False)))     # ties: lower id first
