r"""Data-driven initial centres of the logistic step: one change point per word, from its contexts.

The logistic step :math:`A_u (\sigma(k_u (s - c_u)) - \tfrac12)` of
:class:`~qpnlp.word2fun.model.Word2Fun` starts at :math:`A_u = 0` with its
centre :math:`c_u` mid-span, and SGD moves the centre slowly (its gradient
lives only where the sigmoid slopes). A rare word whose usage switches early
or late in the span then keeps its centre near the middle, and the change is
under-measured (diagnosed on the low-frequency planted-drift benchmark:
switches in the first quarter stayed centred 9-17 years late, near the minimal
rate). Here every word's centre starts at the best change point of its
contexts instead:

1. Each vocabulary word :math:`v` gets a random sketch :math:`z_v \in
   \mathbb{R}^m` (Gaussian, seeded). An occurrence of :math:`u` at time
   :math:`t` is summarised by the sum of the sketches of the tokens around
   it (``window`` on each side, inside its document), each weighted by
   word2vec's keep probability (subsampling of frequent words):
   :math:`x = \sum_j p_{v_j} z_{v_j}`.
2. These summaries are summed per word and time bin:
   :math:`S_{u,b} \in \mathbb{R}^m` and counts :math:`n_{u,b}`, shape
   ``(V, bins, m)`` and ``(V, bins)``: memory bounded by the vocabulary, not
   the corpus; one pass over the source, chunk by chunk.
3. The centre is the least-squares two-segment split of each word's bins
   (the multivariate CUSUM statistic, unbiased under no change):

   .. math:: \hat c_u = \arg\max_{c} \frac{n_a n_b}{n}
             \lVert \bar x_a - \bar x_b \rVert^2,

   over the bin edges :math:`c` in ``[edge, 1 - edge]`` of the span. Words
   seen fewer than ``min_occurrences`` times keep the middle, and so do
   words whose contexts do not change: every split scores zero, or no more
   than the rounding of the float32 sums, :math:`n\,\epsilon^2 \sum_b n_b
   \lVert \bar x_b \rVert^2` (:math:`\epsilon` float32's machine epsilon,
   :math:`\bar x_b` the mean summary of bin :math:`b`, :math:`n` the word's
   occurrences; sampling noise in contexts that vary about as much as their
   mean scores of the order of :math:`1/n` of that sum, far above it).
   Among edges that tie exactly the earliest is taken: the edges across bins
   where the word is never seen tie, so its change is placed right after
   the last bin seen before such a gap.

A random sketch preserves distances between context distributions up to a
factor (Johnson-Lindenstrauss), so the split finds where a word's contexts
change without a trained model; SGD then refines :math:`c_u` as before.
Written here because no library computes per-word change points from a
token stream in bounded memory (``ruptures`` works on one dense signal at a
time).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from qpnlp.data.skipgram import keep_probabilities

__all__ = ["STEP_CENTRE_LR_AT_CHANGE_POINTS", "STEP_RATE_AT_CHANGE_POINTS", "context_sketch_sums", "best_splits", "initial_step_centres"]

#: Tokens per block of the sketch pass (bounds its memory at ``BLOCK_TOKENS x m`` floats). Small: with 2^20 a block
#: made about 350 MiB of transient tensors (float64 prefix sums and their two gathers, m = 16), and glibc kept part
#: of each chunk's in its heap, so the peak grew with the corpus (a streamed 1M-token pass 590 MiB, 10M tokens 920
#: MiB; 2^14: 280 and 287 MiB, and faster, the block in cache; the same sums bit for bit).
BLOCK_TOKENS = 1 << 14
#: Initial rate :math:`k_u` of the steps that start at the change points: a 10-90% rise over 0.15 of the span
#: (mid-span starts use :data:`~qpnlp.word2fun.model.STEP_RATE_INIT`, 10, a rise over 0.44: a slow step reaches
#: further from a centre that may be far from the switch). Selected on the drift benchmark's selection seeds
#: among 10, 20, 30 and 60 (``benchmarks/results/word2fun/changepoint/``).
STEP_RATE_AT_CHANGE_POINTS = 30.0
#: Step multiplier of the centres of steps that start at their change points (``TrainConfig.step_centre_lr``
#: when None; mid-span starts use :data:`~qpnlp.word2fun.step_sizes.STEP_CENTRE_LR`, 0.03, as they have to travel):
#: selected on the drift benchmark's selection seeds (``benchmarks/results/word2fun/changepoint/``).
STEP_CENTRE_LR_AT_CHANGE_POINTS = 0.01
#: Words per block of :func:`best_splits`: bounds its float64 temporaries at about ``SPLIT_BLOCK x bins x m``
#: numbers each (16 MiB for the pass's 32 bins and 16 dimensions), whatever the vocabulary.
SPLIT_BLOCK = 4096
#: float32's machine epsilon: the sketch sums are float32, so a word whose contexts never change scores splits of
#: about this squared (relative) rounding, not zero (:func:`best_splits` reports no change point for it).
_EPS32 = torch.finfo(torch.float32).eps


def _document_bounds(doc_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last index of the document of every token, (n,) each (documents are contiguous runs)."""
    n = doc_ids.shape[0]
    new = np.ones(n, dtype=bool)
    new[1:] = doc_ids[1:] != doc_ids[:-1]
    starts = np.maximum.accumulate(np.where(new, np.arange(n), 0))
    last = np.ones(n, dtype=bool)
    last[:-1] = new[1:]
    ends = np.minimum.accumulate(np.where(last, np.arange(n), n - 1)[::-1])[::-1]
    return starts, ends


def _context_sums(weighted: torch.Tensor, starts: np.ndarray, ends: np.ndarray, window: int) -> torch.Tensor:
    """``x_i = sum of weighted[j]`` over ``0 < |i - j| <= window`` inside ``[starts[i], ends[i]]``, (n, m)."""
    n = weighted.shape[0]
    cum = torch.zeros(n + 1, weighted.shape[1], dtype=torch.float64)
    torch.cumsum(weighted.to(torch.float64), 0, out=cum[1:])
    i = np.arange(n)
    hi = torch.from_numpy(np.minimum(i + window, ends) + 1)
    lo = torch.from_numpy(np.maximum(i - window, starts))
    return (cum[hi] - cum[lo]).to(weighted.dtype) - weighted


def context_sketch_sums(source, n_words: int, keep: np.ndarray, start: float, end: float, *, window: int = 5,
                        bins: int = 32, dim: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed context sketches per word and time bin, ``(V, bins, dim)``, and occurrence counts ``(V, bins)``.

    Parameters
    ----------
    source : ArraySource or StreamSource
        Yields ``(tokens, doc_ids, doc_times)`` chunks from ``source.chunks(None)``
        (:class:`~qpnlp.word2fun.sources.ArraySource`, :class:`~qpnlp.word2fun.sources.StreamSource`): word ids
        (n,), the chunk's document of each token (n,), indices into the documents' times (n_docs,).
    n_words : int
        V, the number of words (every token id is below it).
    keep : numpy.ndarray
        (V,): the weight of each word as a context token (word2vec's keep probabilities,
        :func:`~qpnlp.data.skipgram.keep_probabilities`).
    start, end : float
        The time span, cut into ``bins`` equal bins (times outside it count in the first or last bin).
    window : int, default 5
        Context tokens on each side of an occurrence, inside its document (>= 1).
    bins : int, default 32
        Time bins (>= 2).
    dim : int, default 16
        Dimension m of the random sketches (>= 1).
    seed : int, default 0
        Seeds the Gaussian sketches (:math:`N(0, 1/m)` per coordinate, m = ``dim``).

    Returns
    -------
    sums : torch.Tensor
        float32, (V, bins, dim): the summed context sketches of each word's occurrences in each bin.
    counts : torch.Tensor
        int64, (V, bins): the occurrences.

    Besides the two tables, a chunk costs its tokens: each block of ``BLOCK_TOKENS`` tokens is summarised
    and counted on its own (``index_add_``), so neither a corpus in memory (one chunk) nor the ``V x bins``
    tables are copied per chunk (a ``bincount`` of the table per chunk made a streamed pass cost
    chunks x V x bins).
    """
    if bins < 2 or dim < 1 or window < 1:
        raise ValueError(f"need bins >= 2, dim >= 1 and window >= 1; got {bins}, {dim}, {window}")
    sketch = torch.randn(n_words, dim, generator=torch.Generator().manual_seed(seed)) / dim ** 0.5
    sketch *= torch.as_tensor(keep, dtype=torch.float32).unsqueeze(-1)
    sums = torch.zeros(n_words * bins, dim)
    counts = torch.zeros(n_words * bins, dtype=torch.int64)
    for tokens, doc_ids, doc_times in source.chunks(None):
        doc_times = np.asarray(doc_times, dtype=np.float64)
        for a in range(0, tokens.shape[0], BLOCK_TOKENS):
            b = min(a + BLOCK_TOKENS, tokens.shape[0])
            lo, hi = max(a - window, 0), min(b + window, tokens.shape[0])   # the block and its neighbours
            starts, ends = _document_bounds(np.asarray(doc_ids[lo:hi]))     # documents cut at lo and hi
            x = _context_sums(sketch[torch.from_numpy(np.asarray(tokens[lo:hi], dtype=np.int64))], starts, ends,
                              window)
            cell = torch.from_numpy(_cells(tokens[a:b], doc_times[doc_ids[a:b]], start, end, bins))
            sums.index_add_(0, cell, x[a - lo:b - lo])
            counts.index_add_(0, cell, torch.ones_like(cell))
    return sums.view(n_words, bins, dim), counts.view(n_words, bins)


def _cells(tokens: np.ndarray, times: np.ndarray, start: float, end: float, bins: int) -> np.ndarray:
    """``word * bins + time bin`` of each token, int64 (n,): its row of the ``(V * bins)`` tables."""
    time_bin = np.clip(((times - start) / (end - start) * bins).astype(np.int64), 0, bins - 1)
    return np.asarray(tokens, dtype=np.int64) * bins + time_bin


def best_splits(sums: torch.Tensor, counts: torch.Tensor, *, edge: float = 0.05,
                min_occurrences: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    """Best two-segment split of each word's binned summaries: its position in ``[0, 1]`` and whether one was found.

    Parameters
    ----------
    sums : torch.Tensor
        (V, bins, m): the summed summaries of each word's occurrences per time bin (:func:`context_sketch_sums`).
    counts : torch.Tensor
        (V, bins): the occurrences, integer or float (summed over processes in a distributed run).
    edge : float, default 0.05
        Only bin edges in ``[edge, 1 - edge]`` of the span are candidates.
    min_occurrences : int, default 20
        Words seen fewer times in all get no change point.

    Returns
    -------
    (position (V,) float32, found (V,) bool): the bin edge of the largest
    :math:`\\frac{n_a n_b}{n}\\lVert\\bar x_a - \\bar x_b\\rVert^2` among edges in
    ``[edge, 1 - edge]`` with occurrences on both sides (the earliest of
    edges that tie); 0.5 and False for words seen fewer than
    ``min_occurrences`` times, without such an edge, or whose contexts do not
    change (the best score at most the rounding of the sums, module docstring).

    The words are taken :data:`SPLIT_BLOCK` at a time: the float64 temporaries of a block are a few times its
    part of ``sums``, not of the whole table (those of all words at once took about ten times the float32 table,
    1 GB for 50 000 words).
    """
    V = sums.shape[0]
    parts = [_best_splits_block(sums[a:a + SPLIT_BLOCK], counts[a:a + SPLIT_BLOCK], edge, min_occurrences)
             for a in range(0, max(V, 1), SPLIT_BLOCK)]
    return torch.cat([c for c, _ in parts]), torch.cat([f for _, f in parts])


def _best_splits_block(sums: torch.Tensor, counts: torch.Tensor, edge: float,
                       min_occurrences: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`best_splits` of the words of one block: ``sums`` (n, bins, m) and ``counts`` (n, bins)."""
    bins = sums.shape[1]
    s, n = sums.to(torch.float64), counts.to(torch.float64)
    cum_s, cum_n = s.cumsum(1)[:, :-1], n.cumsum(1)[:, :-1]                 # split after bin j, j < bins - 1
    total_s, total_n = s.sum(1, keepdim=True), n.sum(1, keepdim=True)
    rest_n = total_n - cum_n
    diff = cum_s / cum_n.clamp_min(1).unsqueeze(-1) - (total_s - cum_s) / rest_n.clamp_min(1).unsqueeze(-1)
    score = cum_n * rest_n / total_n.clamp_min(1) * diff.square().sum(-1)
    position = torch.arange(1, bins, dtype=torch.float64) / bins
    valid = (cum_n > 0) & (rest_n > 0) & (position >= edge) & (position <= 1 - edge)
    score = score.masked_fill(~valid, -1.0)
    best = score.argmax(1)                                                 # the first of tied maxima
    energy = (s.square().sum(-1) / n.clamp_min(1)).sum(1)                  # sum_b n_b |mean_b|^2
    rounding = total_n.squeeze(1) * _EPS32 ** 2 * energy                   # flat contexts score no more
    found = valid.any(1) & (total_n.squeeze(1) >= min_occurrences) & (score.amax(1) > rounding)
    centre = torch.where(found, position[best], torch.full_like(position[best], 0.5))
    return centre.to(torch.float32), found


def initial_step_centres(model, source, counts: np.ndarray, *, window: int, sample: float, seed: int,
                         reduce=None, rate: float | None = None) -> int:
    """Start every word's step at its change point (:func:`best_splits`) with rate ``rate``; the words moved.

    Sets ``model.step_centre`` (the middle where no change point was found)
    and ``model.step_rate`` (:math:`\\log k_u`, every word).

    Parameters
    ----------
    model : Word2Fun
        A model with the logistic step (:class:`~qpnlp.word2fun.model.Word2Fun`); the span of its ``time_scale``
        is cut into the bins.
    source : ArraySource or StreamSource
        The training tokens (this process's shard in a distributed run), read once (:func:`context_sketch_sums`).
    counts : numpy.ndarray
        (V,) training counts of the words, for the keep probabilities of the contexts.
    window : int
        Context tokens on each side (the training window).
    sample : float
        word2vec's subsampling threshold of the keep probabilities (the training ``sample``).
    seed : int
        Seeds the random sketches.
    reduce : callable, optional
        ``reduce(tensor)`` sums a tensor over the processes of a distributed run in place (the binned sketches and
        the counts; every process then sets the same centres; one that fails reading its shard fails them all,
        :func:`~qpnlp.word2fun.distributed.fail_together`); None: a single process.
    rate : float or None, default None
        The initial rate :math:`k_u > 0`; None: :data:`STEP_RATE_AT_CHANGE_POINTS`, read at the call.

    Returns
    -------
    int
        The number of words that got a change point (the others start mid-span).
    """
    from qpnlp.word2fun.distributed import fail_together

    scale = model.time_scale
    with fail_together("reading its shard for the change points", together=reduce is not None):
        sums, occ = context_sketch_sums(source, model.vocab_size, keep_probabilities(counts, sample), scale.start,
                                        scale.end, window=window, seed=seed)
    if reduce is not None:
        reduce(sums)
        occ = occ.to(torch.float64)
        reduce(occ)
    centre, found = best_splits(sums, occ)
    with torch.no_grad():
        weight = model.step_centre.weight
        weight.copy_(centre.to(weight.dtype).unsqueeze(-1).to(weight.device))
        model.step_rate.weight.fill_(math.log(STEP_RATE_AT_CHANGE_POINTS if rate is None else rate))
    return int(found.sum())
