"""Held-out pairs and their log-likelihood (qpnlp.word2fun.evaluate)."""

import math

import pytest
import torch

from qpnlp.data import TimestampedCorpus, Vocabulary
from qpnlp.word2fun import Word2Fun, Word2FunConfig
from qpnlp.word2fun.evaluate import heldout_pairs, word2fun_log_likelihood


@pytest.fixture
def corpus():
    return TimestampedCorpus.from_pairs([(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"])
                                         for i in range(40)])


def test_zero_model_scores_k_plus_one_log_half(corpus):
    vocab = Vocabulary.build(corpus.docs, specials=False)
    pairs = heldout_pairs(corpus, vocab, window=2, negatives=3, max_pairs=50)
    model = Word2Fun(Word2FunConfig(vocab_size=len(vocab), dim=4, span_start=1900, span_end=1909))
    assert len(pairs) == 50
    assert word2fun_log_likelihood(model, pairs) == pytest.approx(-4 * math.log(2), rel=1e-6)


@pytest.mark.parametrize("max_pairs", [0, -1])
def test_max_pairs_must_be_positive(corpus, max_pairs):
    vocab = Vocabulary.build(corpus.docs, specials=False)
    with pytest.raises(ValueError, match="max_pairs"):
        heldout_pairs(corpus, vocab, window=2, max_pairs=max_pairs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_model_on_the_gpu_scores_the_cpu_pairs(corpus):
    vocab = Vocabulary.build(corpus.docs, specials=False)
    pairs = heldout_pairs(corpus, vocab, window=2, negatives=3)
    model = Word2Fun(Word2FunConfig(vocab_size=len(vocab), dim=4, span_start=1900, span_end=1909))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(0)))
    expect = word2fun_log_likelihood(model, pairs)
    assert word2fun_log_likelihood(model.to("cuda"), pairs) == pytest.approx(expect, rel=1e-5)
