import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from qpnlp.data.skipgram import (
    NegativeSampler, centre_windows, iter_centre_batches, iter_centre_runs, keep_probabilities, skipgram_pairs,
    subsample_mask,
)


def reference_pairs(tokens, doc_ids, b):
    """Slow per-sentence loops: centre i pairs with j when same doc and 1 <= |i-j| <= b[i]."""
    out = []
    for i in range(len(tokens)):
        for j in range(max(0, i - b[i]), min(len(tokens), i + b[i] + 1)):
            if j != i and doc_ids[j] == doc_ids[i]:
                out.append((i, j))
    return sorted(out)


def test_pairs_equal_slow_reference():
    rng = np.random.default_rng(0)
    doc_ids = np.sort(rng.integers(0, 7, size=60))
    tokens = rng.integers(0, 20, size=60)
    for window in (1, 3, 5):
        b = np.random.default_rng(window).integers(1, window + 1, size=60)
        c, x = skipgram_pairs(tokens, doc_ids, window, np.random.default_rng(window))
        assert sorted(zip(c.tolist(), x.tolist())) == reference_pairs(tokens, doc_ids, b)
    c, x = skipgram_pairs(tokens, doc_ids, 4, rng, dynamic=False)
    assert sorted(zip(c.tolist(), x.tolist())) == reference_pairs(tokens, doc_ids, np.full(60, 4))


def test_dynamic_window_distance_distribution():
    # with b ~ U{1..W}, a pair at distance d survives with probability (W - d + 1) / W
    n, W = 200_000, 4
    c, x = skipgram_pairs(np.zeros(n, np.int64), np.zeros(n, np.int64), W, np.random.default_rng(1))
    counts = np.bincount(np.abs(c - x), minlength=W + 1)[1:]
    expected = np.array([(W - d + 1) / W for d in range(1, W + 1)]) * 2 * n
    assert np.allclose(counts, expected, rtol=0.02)


def test_keep_probabilities_formula_and_frequent_words_kept_less():
    counts = np.array([100_000, 1_000, 10])
    p = keep_probabilities(counts, sample=1e-3)
    f = counts / counts.sum()
    assert np.allclose(p, np.minimum(1, (np.sqrt(f / 1e-3) + 1) * 1e-3 / f))
    assert p[0] < p[1] <= p[2] == 1.0
    tokens = np.repeat(np.arange(3), counts)
    keep = subsample_mask(tokens, p, np.random.default_rng(0))
    kept = np.bincount(tokens[keep], minlength=3) / counts
    assert np.allclose(kept, p, atol=0.02)
    assert (keep_probabilities(counts, 0) == 1).all()


def test_negatives_follow_unigram_075():
    counts = np.array([1000, 300, 50, 10, 1, 0])
    s = NegativeSampler(counts, device="cpu")
    draws = s.sample((200_000,), generator=torch.Generator().manual_seed(0)).numpy()
    obs = np.bincount(draws, minlength=6)
    assert obs[-1] == 0
    p = counts[:5] ** 0.75 / (counts[:5] ** 0.75).sum()
    stat = chisquare(obs[:5], p * draws.size)
    assert stat.pvalue > 1e-3
    # and not the plain unigram distribution
    assert chisquare(obs[:5], counts[:5] / counts.sum() * draws.size).pvalue < 1e-10


def test_centre_windows_are_the_skipgram_pairs_grouped_by_centre():
    rng = np.random.default_rng(3)
    doc_ids = np.sort(rng.integers(0, 9, size=80))
    tokens = rng.integers(0, 20, size=80)
    order = np.random.default_rng(4).permutation(80)
    for window in (1, 2, 5):
        c, x = skipgram_pairs(tokens, doc_ids, window, np.random.default_rng(window))
        row, ctx = centre_windows(doc_ids, window, np.random.default_rng(window), order=order)
        assert (np.diff(row) >= 0).all()  # grouped by centre, rows in order
        assert sorted(zip(order[row].tolist(), ctx.tolist())) == sorted(zip(c.tolist(), x.tolist()))
    row, ctx = centre_windows(doc_ids, 3, np.random.default_rng(0), dynamic=False)
    assert sorted(zip(row.tolist(), ctx.tolist())) == reference_pairs(tokens, doc_ids, np.full(80, 3))


@settings(max_examples=60, deadline=None)
@given(doc_ids=st.lists(st.integers(0, 4), max_size=20), window=st.integers(1, 6), seed=st.integers(0, 9),
       dynamic=st.booleans(), shuffled=st.booleans())
def test_centre_windows_equal_skipgram_pairs_on_any_stream(doc_ids, window, seed, dynamic, shuffled):
    """Empty and one-token streams, one-token documents and windows longer than the documents too."""
    doc_ids = np.sort(np.asarray(doc_ids, dtype=np.int64))
    n = doc_ids.shape[0]
    c, x = skipgram_pairs(np.arange(n), doc_ids, window, np.random.default_rng(seed), dynamic)
    order = np.random.default_rng(seed + 1).permutation(n) if shuffled else None
    row, ctx = centre_windows(doc_ids, window, np.random.default_rng(seed), order=order, dynamic=dynamic)
    position = np.arange(n) if order is None else order
    assert (np.diff(row) >= 0).all()
    assert sorted(zip(position[row].tolist(), ctx.tolist())) == sorted(zip(c.tolist(), x.tolist()))


def test_centre_batches_cover_pairs_with_document_times():
    rng = np.random.default_rng(0)
    doc_len = rng.integers(1, 8, size=50)
    doc_ids = np.repeat(np.arange(50), doc_len)
    tokens = rng.integers(0, 30, size=doc_ids.size)
    times = np.arange(50, dtype=float) + 1900
    W, B = 2, 16
    batches = list(iter_centre_batches(tokens, doc_ids, times, keep_prob=np.ones(30), window=W, batch_size=B,
                                       rng=np.random.default_rng(1), chunk_tokens=40))
    assert all(b.context.shape[0] <= B + 2 * W - 1 for b in batches)
    progress = [b.progress for b in batches]
    assert progress == sorted(progress) and progress[-1] == 1.0
    n = sum(b.context.shape[0] for b in batches)
    n1 = 2 * int(sum(max(l - 1, 0) for l in doc_len))
    n2 = 2 * int(sum(max(l - 2, 0) for l in doc_len))
    assert n1 <= n <= n1 + n2
    assert sum(b.words.shape[0] for b in batches) <= doc_ids.size  # each token is a centre at most once
    docs = {1900 + d: set(tokens[doc_ids == d].tolist()) for d in range(50)}
    for b in batches:
        assert b.pair_centre.min() >= 0 and b.pair_centre.max() < b.words.shape[0]
        for c, x in zip(b.pair_centre.tolist(), b.context.tolist()):
            t = int(b.time[c])
            assert b.words[c].item() in docs[t] and x in docs[t]


def _traced(fn):
    """``(peak, held, out)``: the peak of numpy's (traced) allocations while ``fn()`` runs and what stays allocated
    with its result ``out`` alive, in bytes above what was allocated before."""
    import tracemalloc

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        held, peak = tracemalloc.get_traced_memory()
        return peak - base, held - base, out
    finally:
        tracemalloc.stop()


def test_a_chunks_pairs_are_drawn_without_temporaries_of_all_its_pairs():
    """The first run of a chunk of n = 200k tokens and P pairs: ``np.nonzero`` of the whole chunk's (n, 2W) window
    mask made a (P, 2) array, then P-sized sums and gathers, and the chunk's generator held five int64 arrays of its
    pairs while the chunk trained (a streamed training's peak grew with the corpus: 566 MiB for 10M tokens against
    526 for 1M). Now two are held (rows and context words) beside arrays of n, and the peak adds arrays of n."""
    n, rng = 200_000, np.random.default_rng(0)
    tokens, doc_ids = rng.integers(0, 300, n), np.repeat(np.arange(n // 100), 100)
    runs = iter_centre_runs(tokens, doc_ids, np.arange(n // 100, dtype=np.float64), keep_prob=np.ones(300), window=5,
                            batch_size=1024, rng=np.random.default_rng(1), chunk_tokens=n)
    peak, held, (first, runs) = _traced(lambda: (next(runs), runs))
    pairs = 8 * first.context.shape[0]                   # bytes of one int64 array of the chunk's pairs
    assert first.context.shape[0] > 5 * n                # ~6 pairs a token: the pairs dominate the n-sized arrays
    assert held < 2 * pairs + 8 * 8 * n                  # 2.7 pairs; was 6.6 (5 arrays of P and some of n)
    assert peak < 2 * pairs + 16 * 8 * n                 # 3.3 pairs; was 6.6
