"""Baselines of the drift evaluation: gensim word2vec models turned into a :class:`~qpnlp.evaluation.drift.DriftGrid`.

* :func:`temporal_referencing_grid` -- *static skip-gram* (gensim Word2Vec)
  trained once on the whole corpus in which each probe word is tagged with its
  time bin (``word@k``; temporal referencing, Dubossarsky et al. 2019), the
  usual way a static model measures change;
* :func:`procrustes_grid` -- one gensim Word2Vec per time bin, rotated onto
  the last bin by orthogonal Procrustes (Hamilton et al. 2016) on the shared
  vocabulary.

Both need the ``bench`` extra (gensim); :func:`~qpnlp.evaluation.drift.evaluate_grid`
scores their grids as it scores Word2Fun's.
"""

from __future__ import annotations

import time as _time

import numpy as np
import torch

from qpnlp.data.timestamped import TimestampedCorpus
from qpnlp.evaluation.drift import DriftGrid

__all__ = ["temporal_referencing_grid", "procrustes_grid"]


def _bins(years: np.ndarray, y0: float, y1: float, n_bins: int) -> np.ndarray:
    return np.clip(((years - y0) / (y1 - y0 + 1e-9) * n_bins).astype(int), 0, n_bins - 1)


def _w2v(sentences, dim, window, negative, sample, epochs, min_count, workers, seed):
    try:
        from gensim.models import Word2Vec
    except ImportError as err:
        from qpnlp._optional import missing

        raise missing("gensim", "bench", "the word2vec drift baselines") from err

    m = Word2Vec(vector_size=dim, window=window, negative=negative, sample=sample, sg=1, min_count=min_count,
                 workers=workers, seed=seed)
    m.build_vocab(sentences)
    t0 = _time.perf_counter()
    m.train(sentences, total_examples=len(sentences), epochs=epochs)
    return m, _time.perf_counter() - t0


def temporal_referencing_grid(
    corpus: TimestampedCorpus, probes, grid_words, n_bins: int = 10, dim: int = 100, window: int = 5,
    negative: int = 5, sample: float = 1e-3, epochs: int = 5, min_count: int = 5, workers: int = 2, seed: int = 0,
) -> DriftGrid:
    """Static skip-gram (gensim) with temporal referencing of the ``probes``; grid over bin centres.

    Probe tokens are replaced by ``probe@k`` (``k`` = time bin of the
    document); other words keep one static vector.  The grid row of bin ``k``
    holds ``probe@k`` for probes and the static vector for other words.

    Parameters
    ----------
    corpus : TimestampedCorpus
        Tokenised documents with their times.
    probes : iterable of str
        Words tagged with their time bin (the words whose change is measured).
    grid_words : sequence of str
        The W words of the grid (probes and others); a key gensim dropped (``min_count``) gets a zero vector.
    n_bins : int
        Number T of equal time bins over ``corpus.span`` (default 10); the grid's years are their centres.
    dim, window, negative, sample, epochs, min_count, workers, seed
        gensim ``Word2Vec`` skip-gram settings (``vector_size=dim``; defaults 100, 5, 5, 1e-3, 5, 5, 2, 0).

    Returns
    -------
    DriftGrid
        ``E`` of shape (n_bins, len(grid_words), dim), with static context (output) vectors of the non-probe grid words.

    Raises
    ------
    ValueError
        For a corpus token that is the tag of a probe (``war@3`` in a corpus whose probe is ``war``), named: it would
        share the tagged probe's vector, silently.
    """
    y0, y1 = corpus.span
    bins = _bins(corpus.times, y0, y1, n_bins)
    ps = set(probes)
    _refuse_tag_clashes(corpus, ps, n_bins)
    sents = [[f"{w}@{b}" if w in ps else w for w in d] for d, b in zip(corpus.docs, bins.tolist())]
    m, secs = _w2v(sents, dim, window, negative, sample, epochs, min_count, workers, seed)
    kv = m.wv
    centres = y0 + (np.arange(n_bins) + 0.5) * (y1 - y0) / n_bins
    E = np.zeros((n_bins, len(grid_words), dim), np.float32)
    for j, w in enumerate(grid_words):
        for k in range(n_bins):
            key = f"{w}@{k}" if w in ps else w
            if key in kv:
                E[k, j] = kv[key]
    ctx_words = [w for w in grid_words if w not in ps and w in kv]
    ctx = np.stack([m.syn1neg[kv.key_to_index[w]] for w in ctx_words])[None]
    ntok = corpus.n_tokens
    return DriftGrid(torch.from_numpy(E), tuple(grid_words), centres, secs, ntok * epochs / secs,
                     torch.from_numpy(ctx.astype(np.float32)), tuple(ctx_words))


def _refuse_tag_clashes(corpus: TimestampedCorpus, probes: set, n_bins: int) -> None:
    """``ValueError`` naming a token of ``corpus`` that is already a tag ``probe@k`` (``k < n_bins``): temporal
    referencing would merge it with the probe's occurrences in bin ``k``. A token that is itself a probe
    (``war@1`` beside ``war``) is tagged in its turn (``war@1@k``), so it keeps a key of its own."""
    tags = {f"{p}@{k}" for p in probes for k in range(n_bins)} - probes
    clash = next((w for d in corpus.docs if not tags.isdisjoint(d) for w in d if w in tags), None)
    if clash is not None:
        raise ValueError(f"the corpus holds the token {clash!r}, which is also the temporal-referencing tag of a "
                         f"probe in one of the {n_bins} time bins (PROBE@BIN): the two would share one vector; "
                         f"rename that token before training")


def procrustes_grid(
    corpus: TimestampedCorpus, grid_words, n_bins: int = 10, dim: int = 100, window: int = 5, negative: int = 5,
    sample: float = 1e-3, epochs: int = 5, min_count: int = 5, workers: int = 2, seed: int = 0,
) -> DriftGrid:
    """Per-bin gensim skip-gram aligned to the last bin by orthogonal Procrustes; grid over bin centres.

    Each bin's matrix (rows = words shared with the reference bin, unit
    normalised) is rotated by :math:`Q = \\arg\\min_{Q^TQ=I} \\lVert X_k Q - X_{ref}\\rVert_F`
    (``scipy.linalg.orthogonal_procrustes``).  A word missing from a bin takes
    the vector of the nearest bin where it exists.

    Parameters
    ----------
    corpus : TimestampedCorpus
        Tokenised documents with their times.
    grid_words : sequence of str
        The W words of the grid; one in no bin gets a zero vector.
    n_bins : int
        Number T of equal time bins over ``corpus.span`` (default 10); the grid's years are their centres.
    dim, window, negative, sample, epochs, min_count, workers, seed
        gensim ``Word2Vec`` skip-gram settings (``vector_size=dim``; defaults 100, 5, 5, 1e-3, 5, 5, 2, 0).

    Returns
    -------
    DriftGrid
        ``E`` of shape (n_bins, len(grid_words), dim), with per-bin context (output) vectors of the grid words
        present in every bin.
    """
    from scipy.linalg import orthogonal_procrustes

    y0, y1 = corpus.span
    bins = _bins(corpus.times, y0, y1, n_bins)
    models, secs = [], 0.0
    for k in range(n_bins):
        sents = [d for d, b in zip(corpus.docs, bins.tolist()) if b == k]
        m, s = _w2v(sents, dim, window, negative, sample, epochs, min_count, workers, seed)
        models.append(m)
        secs += s
    ref = models[-1].wv
    E = np.full((n_bins, len(grid_words), dim), np.nan, np.float32)
    ctx_words = [w for w in grid_words if all(w in m.wv for m in models)]
    ctx = np.zeros((n_bins, len(ctx_words), dim), np.float32)
    for k, model in enumerate(models):
        kv = model.wv
        shared = [w for w in kv.index_to_key if w in ref.key_to_index]
        A = kv[shared] / np.linalg.norm(kv[shared], axis=1, keepdims=True)
        B = ref[shared] / np.linalg.norm(ref[shared], axis=1, keepdims=True)
        Q, _ = orthogonal_procrustes(A, B)
        for j, w in enumerate(grid_words):
            if w in kv:
                E[k, j] = kv[w] @ Q
        # output vectors rotated with the same Q: dot products within a bin are unchanged
        ctx[k] = model.syn1neg[[kv.key_to_index[w] for w in ctx_words]] @ Q
    for j in range(len(grid_words)):  # fill missing bins from the nearest present bin
        have = np.flatnonzero(~np.isnan(E[:, j, 0]))
        if have.size == 0:
            E[:, j] = 0.0
            continue
        for k in np.flatnonzero(np.isnan(E[:, j, 0])):
            E[k, j] = E[have[np.abs(have - k).argmin()], j]
    centres = y0 + (np.arange(n_bins) + 0.5) * (y1 - y0) / n_bins
    return DriftGrid(torch.from_numpy(E), tuple(grid_words), centres, secs, corpus.n_tokens * epochs / secs,
                     torch.from_numpy(ctx), tuple(ctx_words))
