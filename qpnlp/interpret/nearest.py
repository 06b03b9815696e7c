"""Nearest words to states and measurement vectors, by the Born probability |<v|w>|^2."""

from __future__ import annotations

from typing import Sequence

import torch

from qpnlp.measurement import word_probabilities


def nearest_words(queries: torch.Tensor, vocab_states: torch.Tensor, words: Sequence[str], *, top: int = 10,
                  candidates: torch.Tensor | None = None) -> list[list[tuple[str, float]]]:
    r"""The ``top`` words most likely to be measured by each query state.

    Ranks vocabulary states :math:`|w\rangle` by :math:`|\langle v|w\rangle|^2`
    (exact, batched; works on CPU or CUDA tensors).

    Parameters
    ----------
    queries : torch.Tensor
        Complex ``(m, d)`` unit vectors (measurement states or word states).
    vocab_states : torch.Tensor
        Complex ``(V, d)`` unit word states (rows that are zero never rank high).
    words : sequence of str
        ``V`` names, ``words[i]`` for row i.
    top : int
        Number of words per query.
    candidates : torch.Tensor, optional
        Bool ``(V,)``; only these rows are ranked (e.g. frequent words, no padding).

    Returns
    -------
    list of list of (word, probability)
        One ranked list per query.

    Examples
    --------
    >>> vocab = torch.eye(3, dtype=torch.complex64)
    >>> nearest_words(vocab[2:], vocab, ["a", "b", "c"], top=2)
    [[('c', 1.0), ('a', 0.0)]]
    """
    if vocab_states.shape[0] != len(words):
        raise ValueError(f"got {len(words)} words for {vocab_states.shape[0]} vocabulary states")
    probs = word_probabilities(vocab_states, queries).mT                     # (m, V)
    if candidates is not None:
        probs = probs.masked_fill(~candidates.to(probs.device), -1.0)
    top = min(top, probs.shape[-1] if candidates is None else int(candidates.sum()))
    values, index = probs.topk(top, dim=-1)
    return [[(words[i], round(float(v), 4)) for v, i in zip(vs, ix)] for vs, ix in zip(values.cpu(), index.cpu())]
