"""Corpus-scale boundaries of Word2Fun's data path, checked on a few elements holding large values.

A corpus such as COHA (472M tokens) times epochs and windows counts past 2**31 (int32) and 2**24 (exact in
float32): the ids, positions and counts the loop reads must stay int64, the sampling tables float64.
"""

from __future__ import annotations

import numpy as np
import torch

from qpnlp.data import TimestampedCorpus, Vocabulary
from qpnlp.data.skipgram import NegativeSampler, keep_probabilities
from qpnlp.data.timestamped import TsvStream, write_tsv
from qpnlp.word2fun.sources import ArraySource, StreamSource


def test_sampling_tables_of_counts_past_int32_and_float32_are_exact():
    counts = np.array([2**40, 3 * 2**31 + 1, 2**24 + 1, 1], dtype=np.int64)
    total = float(counts.sum())
    f = counts.astype(np.float64) / total
    expected = np.minimum((np.sqrt(f / 1e-3) + 1.0) * 1e-3 / f, 1.0)
    assert np.array_equal(keep_probabilities(counts, 1e-3), expected)       # float64 throughout
    probs = NegativeSampler(counts).probs
    assert probs.dtype == torch.float64
    w = counts.astype(np.float64) ** 0.75
    assert float(probs[3]) == w[3] / w.sum() and float(probs[2]) != float(probs[3])   # 2**24 + 1 is not 2**24


def test_sources_read_ids_as_int64_and_times_as_float64(tmp_path):
    source = ArraySource(np.array([0, 1, 1], np.int32), np.array([0, 0, 1], np.uint16), [1900.0, 1901.0])
    assert source.tokens.dtype == source.doc_ids.dtype == np.int64
    corpus = TimestampedCorpus.from_pairs([(1900, ["a", "b"]), (1901.5, ["b", "c"])])
    vocab = Vocabulary.build(corpus.docs, specials=False)
    enc = corpus.encode(vocab)
    assert enc.tokens.dtype == enc.doc_ids.dtype == np.int64 and enc.times.dtype == np.float64
    write_tsv(corpus, tmp_path / "c.tsv")
    (tokens, doc_ids, times), = StreamSource(TsvStream([tmp_path / "c.tsv"]), vocab, chunk_tokens=100).chunks(None)
    assert tokens.dtype == doc_ids.dtype == np.int64 and times.dtype == np.float64
    assert tokens.tolist() == enc.tokens.tolist() and times.tolist() == [1900.0, 1901.5]
