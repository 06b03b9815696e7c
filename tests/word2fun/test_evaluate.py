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


def test_evaluate_reads_a_corpus_file_as_the_training_stream_read_it(tmp_path):
    """A model trained on a lowercased stream is scored on the file's words lowercased: read as written, its
    capitalised words were out of the vocabulary and half the pairs silently left out of the score."""
    from qpnlp.data import read_tsv
    from qpnlp.data.timestamped import TsvStream
    from qpnlp.training.evaluate import evaluate_checkpoint
    from qpnlp.word2fun import KeyedVectors
    from qpnlp.word2fun.config import TrainConfig
    from qpnlp.word2fun.train import fit

    path = tmp_path / "c.tsv"
    words = ["War", "peace", "Trade", "tax", "Energy", "oil"]
    path.write_text("".join(f"{1900 + i % 10}\t" + " ".join(words[(i + j) % 6] for j in range(8)) + "\n"
                            for i in range(40)))
    fit(TsvStream([path], lowercase=True), TrainConfig(epochs=1, batch_size=64), family="linear", dim=4,
        min_count=1, checkpoint=tmp_path / "ck")
    vectors = KeyedVectors.from_pretrained(tmp_path / "ck")
    pairs = heldout_pairs(read_tsv(path, lowercase=True), vectors.vocabulary, seed=0)
    result = evaluate_checkpoint(tmp_path / "ck", dataset=str(path))
    assert result["n"] == len(pairs)
    assert result["metrics"]["log_likelihood"] == word2fun_log_likelihood(vectors.model, pairs)
