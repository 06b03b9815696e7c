r"""Held-out predictive log-likelihood of skip-gram pairs (the score of Bamler & Mandt, 2017).

For every held-out (centre :math:`u`, context :math:`v`) pair within
``window`` positions of a document written at time :math:`t`, and :math:`k`
negatives :math:`\hat v_i` drawn from the unigram distribution raised to
0.75 (word2vec's noise distribution, fixed seed),

.. math::
    \ell(u, v, t) = \log\sigma\big(f(u, t)\cdot h(v)\big)
        + \sum_{i=1}^{k} \log\sigma\big(-f(u, t)\cdot h(\hat v_i)\big),

and the score is the mean of :math:`\ell` over the pairs (higher is better).
Any model enters through two functions, so static skip-gram, per-period
vectors and Word2Fun are scored the same way on the same pairs and negatives:
``context(words, times) -> (N, D)`` and ``target(words) -> (N, D)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from qpnlp._repr import record_repr
from qpnlp.data import NegativeSampler, TimestampedCorpus, Vocabulary
from qpnlp.data.skipgram import skipgram_pairs

from .model import Word2Fun

__all__ = ["HeldOutPairs", "heldout_pairs", "pair_log_likelihood", "word2fun_log_likelihood"]


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared tensors and raised
class HeldOutPairs:
    """Skip-gram pairs of a corpus with their times and fixed negatives (all int64 / float64 tensors).

    Attributes
    ----------
    centre : torch.Tensor
        int64 (P,): the centre word :math:`u` of each pair (ids of the vocabulary the pairs were built with).
    context : torch.Tensor
        int64 (P,): its context word :math:`v`.
    times : torch.Tensor
        float64 (P,): the time :math:`t` of the centre token's document, in the corpus's units (not normalised).
    negatives : torch.Tensor
        int64 (P, k): the k negatives :math:`\\hat v_i` of each pair.
    """

    centre: torch.Tensor      # (P,)
    context: torch.Tensor     # (P,)
    times: torch.Tensor       # (P,)
    negatives: torch.Tensor   # (P, k)

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut

    def __len__(self) -> int:
        return int(self.centre.shape[0])


def heldout_pairs(corpus: TimestampedCorpus, vocabulary: Vocabulary, *, window: int = 5, negatives: int = 5,
                  max_pairs: int | None = None, seed: int = 0) -> HeldOutPairs:
    """Every pair within ``window`` (fixed, not dynamic) of the in-vocabulary tokens, with seeded negatives.

    Out-of-vocabulary tokens are dropped before windows are formed (as in
    training). ``max_pairs`` keeps a seeded random subset.

    Parameters
    ----------
    corpus : qpnlp.data.TimestampedCorpus
        The held-out documents.
    vocabulary : qpnlp.data.Vocabulary
        The model's vocabulary (``vectors.vocabulary``): the ids of the pairs, and the counts of the noise
        distribution (unigram counts raised to 0.75).
    window : int, default 5
        Pairs of tokens at most this many positions apart, in the same document (>= 1).
    negatives : int, default 5
        Negatives k per pair (>= 1).
    max_pairs : int or None, default None
        Keep a seeded random subset of this many pairs (>= 1), in corpus order; None: every pair.
    seed : int, default 0
        Seeds the subset and the negatives.

    Returns
    -------
    HeldOutPairs
        P pairs, on the CPU.
    """
    if window < 1 or negatives < 1:
        raise ValueError(f"window and negatives must be >= 1; got {window}, {negatives}")
    if max_pairs is not None and max_pairs < 1:   # else no pair to score: a mean of nothing
        raise ValueError(f"max_pairs must be >= 1 or None; got {max_pairs}")
    encoded = corpus.encode(vocabulary)
    if encoded.n_tokens == 0:
        raise ValueError("the corpus has no in-vocabulary token to score")
    rng = np.random.default_rng(seed)
    centre_pos, context_pos = skipgram_pairs(encoded.tokens, encoded.doc_ids, window, rng, dynamic=False)
    if len(centre_pos) == 0:
        raise ValueError("the corpus has no pair of in-vocabulary tokens within the window")
    if max_pairs is not None and len(centre_pos) > max_pairs:
        keep = np.sort(rng.choice(len(centre_pos), size=max_pairs, replace=False))
        centre_pos, context_pos = centre_pos[keep], context_pos[keep]
    times = encoded.token_times()[centre_pos]
    sampler = NegativeSampler(np.maximum(vocabulary.counts, 0))
    noise = sampler.sample((len(centre_pos), negatives), generator=torch.Generator().manual_seed(seed))
    return HeldOutPairs(torch.from_numpy(encoded.tokens[centre_pos]), torch.from_numpy(encoded.tokens[context_pos]),
                        torch.from_numpy(np.asarray(times, dtype=np.float64)), noise)


@torch.no_grad()
def pair_log_likelihood(pairs: HeldOutPairs, context: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                        target: Callable[[torch.Tensor], torch.Tensor], *, batch_size: int = 65536) -> float:
    """Mean :math:`\\ell` of the pairs for any model given as ``context(words, times)`` and ``target(words)``.

    Parameters
    ----------
    pairs : HeldOutPairs
        The P pairs (:func:`heldout_pairs`).
    context : callable
        ``context(words (b,), times (b,)) -> (b, D)``: the context vector :math:`f(u, t)` of each centre word
        at its time (called without gradients).
    target : callable
        ``target(words) -> (*words.shape, D)``: the target vector :math:`h(v)`, called with ids (b,) and (b, k).
    batch_size : int, default 65536
        Pairs per call of the two functions.

    Returns
    -------
    float
        The mean of :math:`\\ell` over the pairs (each pair's terms summed in float64).
    """
    total = 0.0
    logsigmoid = torch.nn.functional.logsigmoid
    for start in range(0, len(pairs), batch_size):
        sl = slice(start, start + batch_size)
        f = context(pairs.centre[sl], pairs.times[sl])                       # (b, D)
        positive = (f * target(pairs.context[sl])).sum(-1)                   # (b,)
        negative = torch.einsum("bd,bkd->bk", f, target(pairs.negatives[sl]))
        total += float((logsigmoid(positive) + logsigmoid(-negative).sum(-1)).double().sum())
    return total / len(pairs)


def word2fun_log_likelihood(model: Word2Fun, pairs: HeldOutPairs) -> float:
    """Held-out log-likelihood of a Word2Fun model (context :math:`f(u, t)`, target the compass :math:`h(v)`).

    The pairs (on the CPU) are moved batch by batch to the model's device.
    ``ValueError`` when they hold a word id the model does not have (pairs
    built with another vocabulary than the model's).

    Parameters
    ----------
    model : Word2Fun
        The trained model; :meth:`~qpnlp.word2fun.model.Word2Fun.vectors` at the pairs' times (in the model's
        dtype) is the context, the compass the target.
    pairs : HeldOutPairs
        Built with the model's vocabulary (:func:`heldout_pairs`).

    Returns
    -------
    float
        :func:`pair_log_likelihood` of the model.
    """
    if len(pairs):
        top = max(int(pairs.centre.max()), int(pairs.context.max()), int(pairs.negatives.max()))
        if top >= model.vocab_size:
            raise ValueError(f"the pairs hold word id {top} but the model has {model.vocab_size} words: build them "
                             f"with the model's vocabulary (heldout_pairs(corpus, vectors.vocabulary))")
    dtype, dev = model.compass.weight.dtype, model.compass.weight.device
    return pair_log_likelihood(pairs, lambda w, t: model.vectors(w.to(dev), t.to(dev, dtype)),
                               lambda w: model.compass(w.to(dev)))
