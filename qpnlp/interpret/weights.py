"""Word importance from learned mixture weights."""

from __future__ import annotations

from typing import Sequence

import torch

from qpnlp.models.weighting import WordWeighting


@torch.no_grad()
def word_importance(weighting: WordWeighting, ids: torch.Tensor, norms: torch.Tensor, words: Sequence[str], *,
                    top: int = 10) -> dict[str, list[tuple[str, float]]]:
    """Most and least important words by their weighting score.

    The mixture weight of a word in a sentence is the softmax of these scores
    (or the normalised IDF), so a larger score means a larger share of the
    sentence's density matrix whatever the other words are.

    Parameters
    ----------
    weighting : WordWeighting
        The model's weighting module.
    ids : torch.LongTensor
        ``(n,)`` candidate word ids (e.g. frequent training words).
    norms : torch.Tensor
        ``(n,)`` amplitude norms of these words (used by ``amplitude_norm``).
    words : sequence of str
        Names of the ``n`` candidates.

    Returns
    -------
    dict
        ``{"most": [(word, score), ...], "least": [...]}``.
    """
    scores = weighting.scores(ids, norms).float().cpu()
    order = scores.argsort(descending=True)
    pick = lambda idx: [(words[int(i)], round(float(scores[i]), 4)) for i in idx]  # noqa: E731
    return {"most": pick(order[:top]), "least": pick(order.flip(0)[:top])}
