"""The change-point start of the logistic steps (qpnlp.word2fun.changepoint)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus, Vocabulary
from qpnlp.word2fun import TrainConfig, fit
from qpnlp.word2fun import changepoint as cp
from qpnlp.word2fun.sources import ArraySource, StreamSource


def test_document_bounds_of_every_token():
    starts, ends = cp._document_bounds(np.array([0, 0, 0, 1, 2, 2]))
    assert starts.tolist() == [0, 0, 0, 3, 4, 4] and ends.tolist() == [2, 2, 2, 3, 5, 5]


def _brute_context_sums(weighted, doc_ids, window):
    n = weighted.shape[0]
    out = torch.zeros_like(weighted)
    for i in range(n):
        for j in range(max(0, i - window), min(n, i + window + 1)):
            if j != i and doc_ids[j] == doc_ids[i]:
                out[i] += weighted[j]
    return out


def test_context_sums_stay_inside_the_window_and_the_document():
    rng = np.random.default_rng(0)
    doc_ids = np.sort(rng.integers(0, 6, 40))
    weighted = torch.randn(40, 3, dtype=torch.float64)
    starts, ends = cp._document_bounds(doc_ids)
    got = cp._context_sums(weighted, starts, ends, window=3)
    torch.testing.assert_close(got, _brute_context_sums(weighted, doc_ids, 3))


def _source(n_docs=400, seed=0):
    """Word 0 sees words 1-4 before 30% of the span and words 5-8 after; word 9 always sees both groups."""
    rng = np.random.default_rng(seed)
    tokens, doc_ids, times = [], [], []
    for d in range(n_docs):
        t = 1900.0 + 100.0 * d / n_docs
        group = [1, 2, 3, 4] if t < 1930 else [5, 6, 7, 8]
        row = [0, *rng.choice(group, 3), 9, *rng.choice([1, 2, 3, 4, 5, 6, 7, 8], 3)]
        tokens += row
        doc_ids += [d] * len(row)
        times.append(t)
    return ArraySource(np.array(tokens), np.array(doc_ids), np.array(times))


def test_sketch_sums_do_not_depend_on_the_block_size(monkeypatch):
    source, keep = _source(), np.linspace(0.5, 1.0, 10)
    whole = cp.context_sketch_sums(source, 10, keep, 1900.0, 2000.0, window=2, bins=8, dim=4)
    monkeypatch.setattr(cp, "BLOCK_TOKENS", 7)
    blocks = cp.context_sketch_sums(source, 10, keep, 1900.0, 2000.0, window=2, bins=8, dim=4)
    torch.testing.assert_close(blocks[0], whole[0])
    assert torch.equal(blocks[1], whole[1]) and int(whole[1].sum()) == source.n_tokens


class _Chunks:
    """A source of ``n_chunks`` chunks of ``size`` tokens (one document each, word ``i % n_words``)."""

    def __init__(self, n_chunks, size, n_words):
        self.n_chunks, self.size, self.n_words = n_chunks, size, n_words

    def chunks(self, rng):
        for c in range(self.n_chunks):
            yield np.arange(c * self.size, (c + 1) * self.size) % self.n_words, np.zeros(self.size, np.int64), \
                np.array([1900.0 + c])


def _numpy_peak(fn) -> tuple[int, object]:
    """The peak of numpy's (traced) allocations while ``fn()`` runs, in bytes, and its result."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_the_sketch_pass_of_a_chunk_costs_its_tokens_not_the_vocabulary():
    """Each chunk's counts were a ``bincount`` of ``V x bins`` int64 added to the table: a streamed corpus of many
    chunks paid O(V bins) per chunk (2.5 s a chunk for V = 3M: 40 min per pass over COHA)."""
    V, bins, size = 200_000, 32, 1000
    source = _Chunks(4, size, V)
    peak, (sums, counts) = _numpy_peak(lambda: cp.context_sketch_sums(source, V, np.ones(V), 1900.0, 1904.0,
                                                                        window=2, bins=bins, dim=1))
    assert peak < V * bins * 8 / 4                       # the counts table (V x bins int64) is 51 MB
    assert counts.dtype == torch.int64 and int(counts.sum()) == 4 * size
    assert int(counts[1, 0]) == 1 and int(counts[1001, 8]) == 1 and int(counts[1001, 0]) == 0


def test_the_sketch_pass_of_a_corpus_in_memory_holds_a_block_not_the_corpus(monkeypatch):
    """A corpus in memory is one chunk: its cells, times and document bounds were arrays of all its tokens
    (several times the corpus); they are now made block by block."""
    n = 1_000_000
    rng = np.random.default_rng(0)
    source = ArraySource(rng.integers(0, 50, n), np.repeat(np.arange(n // 100), 100), np.linspace(1900, 2000, n // 100))
    monkeypatch.setattr(cp, "BLOCK_TOKENS", 4096)
    peak, (_, counts) = _numpy_peak(lambda: cp.context_sketch_sums(source, 50, np.ones(50), 1900.0, 2000.0, bins=4,
                                                                     dim=2))
    assert peak < n                                      # bytes: an int64 array of the corpus is 8 n
    assert int(counts.sum()) == n


def test_the_sketch_pass_makes_no_tensor_larger_than_a_block_of_the_default_size(largest_tensor):
    """With 2^20 tokens a block (the default until 2026-12-02) a chunk of 200k tokens was one block, and its float64
    prefix sums and their gathers (n, m) tensors of the whole chunk: about 350 MiB at 1M tokens, which glibc left
    in its heap chunk after chunk (a streamed pass's peak grew with the corpus)."""
    n, dim = 200_000, 16
    rng = np.random.default_rng(0)
    source = ArraySource(rng.integers(0, 50, n), np.repeat(np.arange(n // 100), 100), np.linspace(1900, 2000, n // 100))
    with largest_tensor() as seen:
        _, counts = cp.context_sketch_sums(source, 50, np.ones(50), 1900.0, 2000.0, bins=4, dim=dim)
    assert int(counts.sum()) == n
    assert seen.largest <= (cp.BLOCK_TOKENS + 16) * dim < n * dim      # (n, m): the chunk


def test_the_split_finds_the_switch_of_a_word_and_skips_rare_words():
    source = _source()
    sums, counts = cp.context_sketch_sums(source, 10, np.ones(10), 1900.0, 2000.0, window=4, bins=20, dim=16)
    centre, found = cp.best_splits(sums, counts, min_occurrences=20)
    assert found[0] and centre[0] == pytest.approx(0.30)
    assert 0.05 <= float(centre[9]) <= 0.95           # no change: some split, inside the edges
    counts[0] = 0
    counts[0, 0] = 5                                    # five occurrences: too few
    centre, found = cp.best_splits(sums, counts, min_occurrences=20)
    assert not found[0] and float(centre[0]) == 0.5


def test_the_split_stays_inside_the_edges():
    sums = torch.zeros(1, 10, 2)
    sums[0, 0] = 100.0                                   # all the change in the first bin
    centre, found = cp.best_splits(sums, torch.full((1, 10), 10), edge=0.15)
    assert found[0] and float(centre[0]) == pytest.approx(0.2)


def test_a_word_whose_contexts_never_change_has_no_change_point():
    """A flat trajectory reported a change point: a word seen only alone (its summaries all zero, so every split
    scored exactly 0) got the first edge, and words always seen in the same context (rounding-level scores) got a
    split placed by the rounding (0.91 here), both counted as found. They keep the middle now; a word that does
    change is still found (the planted-drift corpora's centres are unchanged)."""
    tokens, doc_ids, times = [], [], []
    for d in range(997):
        row = [0, 1, 2, 3] if d % 2 else [4]              # words 0-3: the same document throughout; 4: alone
        tokens += row
        doc_ids += [d] * len(row)
        times.append(1900.0 + 100.0 * d / 997)
    source = ArraySource(np.array(tokens), np.array(doc_ids), np.array(times))
    sums, counts = cp.context_sketch_sums(source, 5, np.ones(5), 1900.0, 2000.0)
    means = sums[0].double() / counts[0].unsqueeze(-1)                                # as best_splits takes them
    assert bool((sums[4] == 0).all()) and bool((means != means[0]).any())          # zero; equal up to rounding
    torch.testing.assert_close(means, means[:1].expand_as(means))
    centre, found = cp.best_splits(sums, counts)
    assert not found.any() and centre.tolist() == [0.5] * 5
    switching = cp.context_sketch_sums(_source(), 10, np.ones(10), 1900.0, 2000.0, window=4, bins=20, dim=16)
    assert bool(cp.best_splits(*switching)[1][0])


def test_tied_splits_take_the_earliest_edge():
    """The documented tie rule: the split after bin 2 and the one after bin 6 of a there-and-back word (A, B, A)
    score the same, and so do the edges across bins where a word is never seen; the earliest edge is taken."""
    a, b = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    there_and_back = torch.stack([a, a, b, b, b, b, a, a]) * 10
    gap = torch.stack([a, a, 0 * a, 0 * a, 0 * a, 0 * a, b, b]) * 10
    counts = torch.tensor([[10, 10, 10, 10, 10, 10, 10, 10], [10, 10, 0, 0, 0, 0, 10, 10]])
    centre, found = cp.best_splits(torch.stack([there_and_back, gap]), counts)
    assert found.all() and centre.tolist() == [0.25, 0.25]


def test_the_split_does_not_depend_on_the_block_of_words(monkeypatch):
    g = torch.Generator().manual_seed(0)
    sums, counts = torch.randn(1000, 8, 3, generator=g), torch.randint(0, 4, (1000, 8), generator=g)
    counts[7] = 0                                            # a word never seen keeps the middle
    whole = cp.best_splits(sums, counts, min_occurrences=5)
    monkeypatch.setattr(cp, "SPLIT_BLOCK", 7)
    blocks = cp.best_splits(sums, counts, min_occurrences=5)
    assert torch.equal(whole[0], blocks[0]) and torch.equal(whole[1], blocks[1]) and not blocks[1][7]


_PEAK = """
import resource, sys, torch
from qpnlp.word2fun.changepoint import best_splits
sums, counts = torch.randn(60_000, 32, 16), torch.randint(0, 5, (60_000, 32))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
best_splits(sums, counts)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024 / (sums.numel() * 4))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="resource.ru_maxrss in KiB is Linux's (macOS: bytes; "
                                                    "Windows: no resource module)")
def test_the_split_of_a_large_vocabulary_stays_near_the_size_of_its_table():
    """The splits of 60 000 words (a table of 117 MiB) once took ten times the table at their peak (float64
    temporaries of all words at once: 1.2 GB); now they are computed a block of words at a time."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _PEAK], capture_output=True, text=True, env=env, check=True)
    assert float(out.stdout) < 2.0


def test_bad_sketch_settings_are_refused():
    with pytest.raises(ValueError, match="bins >= 2"):
        cp.context_sketch_sums(_source(), 10, np.ones(10), 1900.0, 2000.0, bins=1)


def _switching_corpus():
    rng = np.random.default_rng(1)
    early, late, filler = ["army", "navy", "war"], ["bank", "tax", "trade"], ["the", "of", "and", "to"]
    docs = []
    for i in range(1500):
        year = 1900 + i % 100
        docs.append((year, ["union", *rng.choice(early if year < 1925 else late, 3), *rng.choice(filler, 4)]))
    return TimestampedCorpus.from_pairs(docs)


def test_fit_starts_the_steps_at_the_change_points():
    corpus, cfg = _switching_corpus(), TrainConfig(epochs=1, seed=0)
    seen = {}

    def centres(model, *args, **kwargs):
        moved = real(model, *args, **kwargs)
        seen["centres"] = model.step_centre.weight.detach().clone()
        seen["rates"] = model.step_rate.weight.detach().clone()
        return moved

    real = cp.initial_step_centres
    import qpnlp.word2fun.train as train_module
    train_module.initial_step_centres = centres
    try:
        result = fit(corpus, cfg, dim=8, min_count=1)
    finally:
        train_module.initial_step_centres = real
    union = result.vectors.key_to_index["union"]
    assert float(seen["centres"][union]) == pytest.approx(0.25, abs=0.04)
    assert torch.allclose(seen["rates"].exp(), torch.tensor(cp.STEP_RATE_AT_CHANGE_POINTS))
    middle = fit(corpus, cfg, dim=8, min_count=1, step_centres="middle")
    assert not torch.equal(middle.vectors.model.step_centre.weight, result.vectors.model.step_centre.weight)
    with pytest.raises(ValueError, match="step_centres must be one of"):
        fit(corpus, cfg, step_centres="start")


def test_a_streamed_corpus_gets_the_same_centres(tmp_path):
    from qpnlp.data import write_tsv
    from qpnlp.data.timestamped import TsvStream

    corpus = _switching_corpus()
    vocab = Vocabulary.build(corpus.docs, specials=False)
    enc = corpus.encode(vocab)
    write_tsv(corpus, tmp_path / "c.tsv")
    memory = cp.context_sketch_sums(ArraySource(enc.tokens, enc.doc_ids, enc.times), len(vocab), np.ones(len(vocab)),
                                    1900.0, 1999.0, window=3)
    streamed = cp.context_sketch_sums(StreamSource(TsvStream([tmp_path / "c.tsv"]), vocab, chunk_tokens=997),
                                      len(vocab), np.ones(len(vocab)), 1900.0, 1999.0, window=3)
    assert torch.equal(memory[1], streamed[1])
    # chunks cut documents apart nowhere (a chunk ends at a document's end), so the sums agree to rounding
    torch.testing.assert_close(memory[0], streamed[0])


def test_change_point_starts_step_their_centres_slower_unless_told(monkeypatch):
    import qpnlp.word2fun.train as train_module
    from qpnlp.word2fun import sgd, step_sizes

    used = []
    real = sgd.batch_step

    def spy(*args, **kwargs):
        used.append(args[3] if len(args) > 3 else kwargs.get("centre_lr", step_sizes.STEP_CENTRE_LR))
        return real(*args, **kwargs)

    monkeypatch.setattr("qpnlp.word2fun.loop.batch_step", spy)
    corpus = _switching_corpus()
    fit(corpus, TrainConfig(epochs=1), dim=8, min_count=1)
    assert set(used) == {cp.STEP_CENTRE_LR_AT_CHANGE_POINTS}
    used.clear()
    fit(corpus, TrainConfig(epochs=1), dim=8, min_count=1, step_centres="middle")
    assert set(used) == {step_sizes.STEP_CENTRE_LR}
    used.clear()
    fit(corpus, TrainConfig(epochs=1, step_centre_lr=0.5), dim=8, min_count=1)
    assert set(used) == {0.5}
    with pytest.raises(ValueError, match="step_centre_lr must be finite and >= 0"):
        TrainConfig(step_centre_lr=-1.0)
    assert train_module.STEP_CENTRES == ("changepoint", "middle")
