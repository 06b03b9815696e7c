"""Per-word weights for rare words: the learning-rate multiplier and the roughness scaled by frequency."""

import numpy as np
import pytest
import torch

from qpnlp.word2fun import TrainConfig, centre_sgd_step
from qpnlp.word2fun.config import DEFAULT_ROUGHNESS_PENALTY, resolve_penalty, word_weights


def test_word_weights_follow_the_frequency_of_each_word():
    counts = np.array([10**7, 40_000, 4_000, 100])  # 1.0e7 tokens: 0.99e6, 4e3, 4e2 and 10 per million
    per_million = counts * 1e6 / counts.sum()
    cfg = TrainConfig(roughness_penalty=1e-4, roughness_power=1.0, rare_lr_power=0.5, rare_lr_max=4.0,
                      frequency_reference=4000.0)
    lam, lr = word_weights(counts, cfg, "cpu")
    np.testing.assert_allclose(lam.numpy(), 1e-4 * 4000.0 / per_million, rtol=1e-5)
    expected = np.clip((4000.0 / per_million) ** 0.5, 1.0, 4.0)
    np.testing.assert_allclose(lr.numpy(), expected, rtol=1e-5)
    assert lr[0] == 1.0 and 3.0 < lr[2] < 3.3 and lr[3] == 4.0  # frequent: 1; rare: larger; clipped at the max
    # relative frequencies: the same corpus ten times smaller gives the same weights
    np.testing.assert_allclose(word_weights(counts // 10, cfg, "cpu")[1].numpy(), lr.numpy(), rtol=1e-3)
    assert word_weights(counts, TrainConfig(rare_lr_power=0.0), "cpu") == (None, None)


def test_word_weights_come_in_the_dtype_asked_for():
    """The factors were float32 whatever the model: a float64 model's steps used penalties and multipliers rounded
    to float32 (about 1e-8 off). float32 stays the default, with the same values as before."""
    counts = np.array([10**7, 40_000, 4_000, 100, 7])
    cfg = TrainConfig(roughness_penalty=1e-4, roughness_power=0.5, frequency_reference=4000.0)
    per_million = counts * 1e6 / counts.sum()
    exact = (1e-4 * (4000.0 / per_million) ** 0.5, np.clip((4000.0 / per_million) ** 0.5, 1.0, 4.0))
    for got, want in zip(word_weights(counts, cfg, "cpu", torch.float64), exact):
        assert got.dtype == torch.float64 and torch.equal(got, torch.from_numpy(want))
    for got, want in zip(word_weights(counts, cfg, "cpu"), exact):
        assert got.dtype == torch.float32 and torch.equal(got, torch.from_numpy(want).float())


def test_the_default_roughness_penalty_depends_on_the_family():
    assert resolve_penalty(TrainConfig(), "IV").roughness_penalty == DEFAULT_ROUGHNESS_PENALTY
    assert resolve_penalty(TrainConfig(), "linear").roughness_penalty == 0.0
    assert resolve_penalty(TrainConfig(roughness_penalty=0.0), "IV").roughness_penalty == 0.0


@pytest.mark.parametrize("family", ["II", "IV", "linear"])
def test_a_row_learning_rate_scales_the_step_of_that_words_rows_only(family, make, randomise):
    words, times = torch.tensor([1, 2, 1]), torch.tensor([1900.0, 1950.0, 1990.0], dtype=torch.float64)
    pc, ctx, neg = torch.tensor([0, 0, 1, 2]), torch.tensor([3, 4, 0, 2]), torch.tensor([5, 6])
    lam = 1e-3 if family != "linear" else 0.0
    start = randomise(make(8, 6, family=family, frequency_init="harmonic"), seed=3).double()
    runs = {}
    for name, row_lr in (("plain", None), ("scaled", torch.tensor([3.0, 1.0, 3.0]))):
        m = randomise(make(8, 6, family=family, frequency_init="harmonic"), seed=3).double()
        centre_sgd_step(m, words, times, pc, ctx, neg, 0.05, lam, row_lr)
        runs[name] = m
    for (name, p0), p1, p3 in zip(start.named_parameters(), runs["plain"].parameters(), runs["scaled"].parameters()):
        step1, step3 = (p1 - p0).detach(), (p3 - p0).detach()
        if name.startswith("compass"):
            torch.testing.assert_close(step3, step1)  # the compass steps with the plain rate
        else:
            torch.testing.assert_close(step3[1], 3.0 * step1[1])  # word 1: three times
            torch.testing.assert_close(step3[2], step1[2])  # word 2: multiplier 1
