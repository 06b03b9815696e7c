"""A float64 Word2Fun end to end: trained, queried, saved and exported in float64, nothing narrowed to float32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qpnlp.data import Vocabulary
from qpnlp.word2fun import KeyedVectors, TrainConfig, loop
from qpnlp.word2fun.sources import ArraySource


def _corpus(n_docs: int = 120, V: int = 30):
    rs = np.random.default_rng(0)
    tokens = rs.integers(0, V, n_docs * 20)
    source = ArraySource(tokens, np.repeat(np.arange(n_docs), 20), 1900.0 + np.arange(n_docs) % 100)
    counts, words = np.bincount(tokens, minlength=V), [f"w{i}" for i in range(V)]
    vocab = Vocabulary(words, dict(zip(words, counts)), dict.fromkeys(words, 1), n_docs, specials=False)
    return source, counts, vocab


def test_training_a_float64_model_hands_its_steps_float64_word_weights(make, monkeypatch):
    """train_source built the per-word penalties and learning-rate multipliers in float32 for every model."""
    seen = []
    real = loop.word_weights

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.extend(w.dtype for w in out if w is not None)
        return out

    monkeypatch.setattr(loop, "word_weights", spy)
    source, counts, _ = _corpus()
    model = make(30, 8, family="IV", frequency_init="harmonic", logistic=True, precision="double")
    stats = loop.train_source(model, source, counts, TrainConfig(epochs=1, batch_size=64, sample=0.0))
    assert seen == [torch.float64, torch.float64] and np.isfinite(stats.epoch_loss[0])
    assert {p.dtype for p in model.parameters()} == {torch.float64}


@pytest.mark.parametrize("precision, dtype", [("double", torch.float64), ("single", torch.float32)])
def test_a_trained_model_is_queried_saved_and_exported_in_its_dtype(precision, dtype, make, tmp_path):
    """export_npz wrote E in float32 for every model, and the NaN indicators a family lacks were float32."""
    source, counts, vocab = _corpus()
    model = make(30, 8, family="time2fun", precision=precision)
    loop.train_source(model, source, counts, TrainConfig(epochs=1, batch_size=64, sample=0.0))
    vectors, words = KeyedVectors(model, vocab), ["w1", "w2"]
    grid = vectors.grid(words, [1900.0, 1950.5])
    for out in (grid, vectors.compass_vectors(words), vectors.similarity_over_time("w1", "w2", [1900.0, 1901.0]),
                *model.indicators(torch.tensor([1, 2])).values()):
        assert out.dtype == dtype
    assert vectors.at(1950.0).vectors.dtype == np.dtype(str(dtype).removeprefix("torch."))
    E = np.load(vectors.export_npz(tmp_path / "g.npz", words, [1900.0, 1950.5]))["E"]
    assert E.dtype == grid.numpy().dtype and np.array_equal(E, grid.numpy())
    loaded = KeyedVectors.from_pretrained(vectors.save_pretrained(tmp_path / "saved"))
    assert loaded.model.config.precision == precision
    assert torch.equal(loaded.grid(words, [1900.0, 1950.5]), grid)
