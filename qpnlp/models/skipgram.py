"""Vectorised skip-gram data pipeline: subsampling, dynamic windows, negatives.

Everything here works on whole arrays of token ids (no Python loop over
sentences), following word2vec (Mikolov et al., 2013) choices:

* **frequency subsampling** -- a token of relative frequency :math:`f` is kept
  with probability :math:`p = \\min(1, (\\sqrt{f/s} + 1)\\, s/f)` (the formula
  of the word2vec C code, ``s`` = ``sample``); removed tokens are deleted
  *before* windows are formed, which widens the effective window;
* **dynamic windows** -- each centre token draws a reduced window
  :math:`b \\sim U\\{1..W\\}` and pairs with the tokens at distance
  :math:`\\le b` inside its document;
* **negatives** from the unigram distribution raised to 0.75, drawn on the
  training device by inverse-CDF sampling (:class:`NegativeSampler`).

Example
-------
>>> import numpy as np, torch
>>> tokens = np.array([0, 1, 2, 3, 4]); docs = np.array([0, 0, 0, 1, 1])
>>> c, x = skipgram_pairs(tokens, docs, window=1, rng=np.random.default_rng(0))
>>> sorted(zip(c.tolist(), x.tolist()))
[(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

__all__ = [
    "keep_probabilities",
    "subsample_mask",
    "skipgram_pairs",
    "NegativeSampler",
    "PairBatch",
    "iter_pair_batches",
]


def keep_probabilities(counts: np.ndarray, sample: float = 1e-3) -> np.ndarray:
    """word2vec keep probability of each word.

    .. math:: p_w = \\min\\Bigl(1, \\bigl(\\sqrt{f_w / s} + 1\\bigr) \\frac{s}{f_w}\\Bigr),
              \\quad f_w = \\frac{n_w}{\\sum_v n_v}

    Parameters
    ----------
    counts : array, shape (V,)
        Corpus counts.
    sample : float
        Threshold ``s``; ``0`` disables subsampling (all ones).

    Returns
    -------
    numpy.ndarray, shape (V,), float64

    >>> keep_probabilities(np.array([1000, 10]), sample=1e-2).round(3).tolist()
    [0.111, 1.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    if sample <= 0:
        return np.ones_like(counts)
    f = counts / counts.sum()
    with np.errstate(divide="ignore"):
        p = (np.sqrt(f / sample) + 1.0) * sample / f
    return np.minimum(p, 1.0)


def subsample_mask(tokens: np.ndarray, keep_prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask, shape (n_tokens,): keep token ``i`` with probability ``keep_prob[tokens[i]]``."""
    return rng.random(tokens.shape[0]) < keep_prob[tokens]


def skipgram_pairs(
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    window: int,
    rng: np.random.Generator,
    dynamic: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """All (centre, context) position pairs of a token stream, vectorised.

    Token ``i`` pairs with token ``j`` when they are in the same document and
    :math:`1 \\le |i - j| \\le b_i`, where :math:`b_i \\sim U\\{1..W\\}` if
    ``dynamic`` else :math:`b_i = W`.  The loop runs over the ``W`` offsets
    only.

    Parameters
    ----------
    tokens, doc_ids : numpy.ndarray, shape (n,)
    window : int
        Maximal window ``W``.
    rng : numpy.random.Generator
        Source of the reduced windows.
    dynamic : bool

    Returns
    -------
    centre_pos, context_pos : numpy.ndarray, shape (n_pairs,), int64
        *Positions* into ``tokens`` (index ``tokens`` to get ids), ordered by
        offset then position.
    """
    n = tokens.shape[0]
    if window < 1:
        raise ValueError(f"window must be >= 1; got {window}")
    b = rng.integers(1, window + 1, size=n) if dynamic else np.full(n, window)
    pos = np.arange(n, dtype=np.int64)
    cs, xs = [], []
    for d in range(1, min(window, max(n - 1, 0)) + 1):
        same = doc_ids[:-d] == doc_ids[d:]
        fwd = same & (b[:-d] >= d)  # centre i, context i + d
        bwd = same & (b[d:] >= d)  # centre i + d, context i
        cs.append(pos[:-d][fwd]); xs.append(pos[d:][fwd])
        cs.append(pos[d:][bwd]); xs.append(pos[:-d][bwd])
    if not cs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(cs), np.concatenate(xs)


class NegativeSampler:
    """Negatives from :math:`P(w) \\propto n_w^{0.75}`, drawn on a torch device.

    Inverse-CDF sampling: ``searchsorted(cdf, U)`` with ``U ~ U[0, 1)``.

    Parameters
    ----------
    counts : array, shape (V,)
    power : float
        Exponent of the unigram counts (0.75 in word2vec and here).
    device : torch.device or str

    >>> s = NegativeSampler(np.array([1, 0, 1]), device="cpu")
    >>> set(s.sample((100,), generator=torch.Generator().manual_seed(0)).tolist()) <= {0, 2}
    True
    """

    def __init__(self, counts, power: float = 0.75, device="cpu"):
        w = np.asarray(counts, dtype=np.float64) ** power
        if not (w.sum() > 0):
            raise ValueError("counts must have a positive entry")
        self.probs = torch.as_tensor(w / w.sum(), dtype=torch.float64, device=device)
        cdf = torch.cumsum(self.probs, 0)
        cdf[-1] = 1.0
        self._cdf = cdf
        self.device = torch.device(device)

    def sample(self, shape: tuple, generator: torch.Generator | None = None) -> torch.Tensor:
        """Word ids, ``shape``, int64, on ``self.device``."""
        u = torch.rand(shape, generator=generator, dtype=torch.float64, device=self.device)
        return torch.searchsorted(self._cdf, u, right=True).clamp_(max=self._cdf.numel() - 1)


@dataclass(frozen=True)
class PairBatch:
    """A minibatch of skip-gram pairs: ``centre`` (B,), ``context`` (B,), ``time`` (B,) raw times."""

    centre: torch.Tensor
    context: torch.Tensor
    time: torch.Tensor


def iter_pair_batches(
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    doc_times: np.ndarray,
    *,
    keep_prob: np.ndarray,
    window: int,
    batch_size: int,
    rng: np.random.Generator,
    chunk_tokens: int = 1_000_000,
    device="cpu",
) -> Iterator[PairBatch]:
    """One epoch of shuffled skip-gram minibatches.

    Documents are shuffled (the thesis' Algorithm 2 shuffles the timestamped
    corpus, so minibatches mix times), then processed in chunks of about
    ``chunk_tokens`` tokens: subsample, form dynamic-window pairs, shuffle the
    pairs, cut into batches.  Memory is O(chunk_tokens * window).
    """
    n_docs = doc_times.shape[0]
    starts = np.searchsorted(doc_ids, np.arange(n_docs + 1))
    lens = np.diff(starts)
    order = rng.permutation(n_docs)
    order = order[lens[order] > 0]
    cum = np.cumsum(lens[order])
    chunk_of = (cum - 1) // max(int(chunk_tokens), 1)
    for docs in np.split(order, np.flatnonzero(np.diff(chunk_of)) + 1):
        if docs.size == 0:
            continue
        dl = lens[docs]
        # gather token positions of the chosen documents, vectorised
        rep_start = np.repeat(starts[docs], dl)
        offs = np.arange(dl.sum()) - np.repeat(np.cumsum(dl) - dl, dl)
        idx = rep_start + offs
        tok = tokens[idx]
        did = doc_ids[idx]
        keep = subsample_mask(tok, keep_prob, rng)
        tok, did = tok[keep], did[keep]
        c, x = skipgram_pairs(tok, did, window, rng)
        if c.size == 0:
            continue
        perm = rng.permutation(c.size)
        c, x = c[perm], x[perm]
        centre = torch.from_numpy(tok[c]).to(device)
        context = torch.from_numpy(tok[x]).to(device)
        time = torch.from_numpy(doc_times[did[c]].astype(np.float32)).to(device)
        for i in range(0, c.size, batch_size):
            yield PairBatch(centre[i : i + batch_size], context[i : i + batch_size], time[i : i + batch_size])
