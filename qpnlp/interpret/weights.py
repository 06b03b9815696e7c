r"""Word importance from learned mixture weights (QPDN and CNM word weighting).

A sentence is the mixture :math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|`;
the weights come from one score per word (:class:`~qpnlp.nn.embedding.WordWeighting`):

* ``"trainable"``: :math:`p_i = \operatorname{softmax}_i \pi(w_i)`, a learned score per word;
* ``"amplitude_norm"``: the same softmax of the amplitude norm :math:`\|r_{w}\|`;
* ``"idf"``: :math:`p_i = \mathrm{idf}(w_i) / \sum_j \mathrm{idf}(w_j)`.

Whatever the other words of a sentence are, two words a and b in it get
weights in the ratio :math:`p_a / p_b = e^{s_a - s_b}` (softmax schemes) or
:math:`\mathrm{idf}_a / \mathrm{idf}_b` (IDF). :func:`importance_table` reports this
as ``relative_weight``: the weight of a word next to a word of median score.
``"uniform"`` weighting has nothing to rank.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch
from torch import nn

from qpnlp.nn import WordWeighting
from qpnlp.nn._checks import check_ids

from . import _checks

__all__ = ["word_scores", "word_importance", "importance_table"]


def _check_weighting(weighting) -> WordWeighting:
    if not isinstance(weighting, WordWeighting):
        raise TypeError(f"need a WordWeighting (a model's .weighting); got {type(weighting).__name__}")
    if weighting.scheme == "uniform":
        raise ValueError("weighting='uniform' gives every word the same weight: there is no importance to rank")
    return weighting


def _check_norms(norms, ids: torch.Tensor) -> torch.Tensor:
    """``norms`` as a real ``(n,)`` tensor of finite values >= 0, the shape of ``ids`` (TypeError/ValueError)."""
    if not isinstance(norms, torch.Tensor):
        raise TypeError(f"norms must be a torch.Tensor of amplitude norms; got {type(norms).__name__}")
    if norms.is_complex() or norms.dtype == torch.bool:
        raise TypeError(f"norms must be a real tensor of amplitude norms; got {norms.dtype}")
    if norms.shape != ids.shape:
        raise ValueError(f"norms must have shape {tuple(ids.shape)}; got {tuple(norms.shape)}")
    _checks.finite("norms", norms)
    if bool((norms < 0).any()):
        i = int((norms < 0).nonzero()[0, 0])
        raise ValueError(f"norms must be >= 0 (amplitude norms ||r_w||); got {float(norms[i]):g} at index {i}")
    return norms


@torch.no_grad()
def word_scores(model: nn.Module) -> torch.Tensor:
    r"""The weighting score :math:`s_w` of every vocabulary id of a QPDN or CNM, real ``(V,)``.

    Trainable scores :math:`\pi(w)`, amplitude norms :math:`\|r_w\|` or IDF
    values, depending on the model's ``weighting`` scheme (padding included).

    Parameters
    ----------
    model : torch.nn.Module
        A QPDN or CNM (a model with a ``weighting`` and a word table: ``embedding.amplitude`` or
        ``real_embedding``); anything else raises ValueError.

    Returns
    -------
    torch.Tensor
        Real ``(V,)``, detached, finite.

    Examples
    --------
    >>> from qpnlp.models import QPDN, QPDNConfig
    >>> model = QPDN(QPDNConfig(num_words=5, num_classes=2, dim=4, weighting="trainable"))
    >>> word_scores(model)
    tensor([0., 0., 0., 0., 0.])
    """
    weighting = _check_weighting(getattr(model, "weighting", None))
    embedding = getattr(model, "embedding", None)
    if embedding is not None and hasattr(embedding, "amplitude"):
        ids = torch.arange(embedding.num_words, device=embedding.amplitude.weight.device)
        norms = torch.linalg.vector_norm(embedding.amplitude(ids), dim=-1)
    elif isinstance(getattr(model, "real_embedding", None), nn.Embedding):
        table = model.real_embedding.weight
        ids = torch.arange(table.shape[0], device=table.device)
        norms = torch.linalg.vector_norm(table, dim=-1)
    else:
        raise ValueError(f"cannot read the word table of {type(model).__name__}")
    scores = weighting.scores(ids.unsqueeze(0), norms.unsqueeze(0)).squeeze(0).detach()
    _checks.finite("word scores", scores)
    return scores


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
        The model's weighting module (not ``"uniform"``).
    ids : torch.LongTensor
        ``(n,)`` candidate word ids (e.g. frequent training words), each in
        ``[0, weighting.num_words)`` (ValueError naming the first outside, whatever the scheme).
    norms : torch.Tensor
        ``(n,)`` amplitude norms of these words (used by ``amplitude_norm``):
        real, finite and non-negative.
    words : sequence of str
        Names of the ``n`` candidates.
    top : int
        Length of each list.

    Returns
    -------
    dict
        ``{"most": [(word, score), ...], "least": [...]}`` (scores rounded to 4 decimals; equal scores in
        the order of ``ids`` in both lists).

    Examples
    --------
    >>> w = WordWeighting(4, "idf", idf=torch.tensor([1.0, 1.0, 3.0, 0.5]))
    >>> word_importance(w, torch.tensor([2, 3]), torch.ones(2), ["rare", "common"], top=1)
    {'most': [('rare', 3.0)], 'least': [('common', 0.5)]}
    """
    _check_weighting(weighting)
    top = _checks.positive("top", top)
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.dim() != 1:
        raise ValueError(f"ids must be a 1-D LongTensor; got {getattr(ids, 'dtype', type(ids))} "
                         f"{tuple(getattr(ids, 'shape', ()))}")
    if ids.numel() == 0:
        raise ValueError("ids is empty: no candidate word to rank")
    check_ids(ids, weighting.num_words, name="ids", validate=True)   # an IndexError deep in the lookup otherwise
    norms = _check_norms(norms, ids)
    words = _checks.words("words", words, ids.numel(), "ids")
    scores = _checks.on_host(weighting.scores(ids.unsqueeze(0), norms.unsqueeze(0)).squeeze(0))
    _checks.finite("word scores", scores)
    pick = lambda descending: [(words[int(i)], round(float(scores[i]), 4))  # noqa: E731
                               for i in scores.argsort(descending=descending, stable=True)[:top]]
    return {"most": pick(True), "least": pick(False)}       # equal scores in the order of ids


def importance_table(model: nn.Module, words: Sequence[str], *, counts: Sequence[int] | None = None,
                     min_count: int = 1, exclude_ids: Sequence[int] = (0, 1)) -> pd.DataFrame:
    r"""Every word of a QPDN or CNM vocabulary with its weighting score, most important first.

    Parameters
    ----------
    model : QPDN or CNM
        Any model with a ``weighting`` (not ``"uniform"``) and a word table.
    words : sequence of str
        Name of every id (``Vocabulary.words``).
    counts : sequence of int, optional
        Training count of every id; words seen fewer than ``min_count`` times are left out.
    min_count : int
    exclude_ids : sequence of int
        Ids left out (padding and unknown by default).

    Returns
    -------
    pandas.DataFrame
        Columns ``word, id, score, relative_weight`` (and ``count``), sorted by
        decreasing score. ``relative_weight`` is :math:`e^{s - \tilde s}`
        (softmax schemes) or :math:`\mathrm{idf}/\widetilde{\mathrm{idf}}`,
        with :math:`\tilde s` the median over the listed words (``torch.median``: the lower of the two
        middle scores for an even count): how many times more weight the word gets than a median word of
        the same sentence.

    Examples
    --------
    >>> from qpnlp.models import QPDN, QPDNConfig
    >>> model = QPDN(QPDNConfig(num_words=5, num_classes=2, dim=4, weighting="trainable"))
    >>> with torch.no_grad():
    ...     _ = model.weighting.table.weight[2:, 0].copy_(torch.tensor([1.0, 0.0, -1.0]))
    >>> importance_table(model, ["<pad>", "<unk>", "good", "the", "a"])
       word  id  score  relative_weight
    0  good   2    1.0         2.718282
    1   the   3    0.0         1.000000
    2     a   4   -1.0         0.367879
    """
    scores = _checks.on_host(word_scores(model))
    ids, words, counts = _checks.word_rows(words, scores.shape[0], "vocabulary ids", counts, min_count, exclude_ids,
                                           purpose=" to rank")
    s = scores[ids]
    median = s.median()
    relative = s / median if model.weighting.scheme == "idf" else torch.exp(s - median)
    table = pd.DataFrame({"word": [words[i] for i in ids.tolist()], "id": ids.tolist(), "score": s.tolist(),
                          "relative_weight": relative.tolist()})
    if counts is not None:
        table["count"] = counts[ids].tolist()
    return table.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)
