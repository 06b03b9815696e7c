import math

import pytest
import torch

from qpnlp.word2fun.functions import TimeScale, fixed_frequencies, harmonic_frequencies, word2fun_loss

TS = TimeScale(1900.0, 2000.0, 60.0)


def test_time_normalisation():
    tau = TS.normalise(torch.tensor([1900.0, 1925.0, 2000.0, 2050.0]))
    assert torch.allclose(tau, torch.tensor([0.0, 15.0, 60.0, 90.0]))
    assert torch.allclose(TS.denormalise(tau), torch.tensor([1900.0, 1925.0, 2000.0, 2050.0]))
    with pytest.raises(ValueError, match="end > start"):
        TimeScale(2000, 2000)


def test_fixed_and_harmonic_frequencies():
    w = fixed_frequencies(8)
    assert torch.allclose(w, torch.tensor([10000.0 ** (-j / 4) for j in range(4)]))
    h = harmonic_frequencies(8, 60.0)
    assert torch.allclose(h * 60 / math.pi, torch.tensor([0.5, 1.0, 1.5, 2.0]))
    # max_periods = 0.5: two quarter-period levels, repeated over the D/2 coordinates
    h = harmonic_frequencies(12, 60.0, max_periods=0.5)
    assert torch.allclose(h * 60 / math.pi, torch.tensor([0.5, 1.0, 0.5, 1.0, 0.5, 1.0]))
    periods = harmonic_frequencies(100, 30.0, max_periods=2.5) * 30.0 / (2 * math.pi)
    assert abs(periods.max().item() - 2.5) < 1e-5 and abs(periods.min().item() - 0.25) < 1e-6
    with pytest.raises(ValueError, match="even"):
        fixed_frequencies(5)


def test_loss_matches_thesis_formula():
    g = torch.Generator().manual_seed(0)
    f, hp, hn = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g), torch.randn(4, 5, 3, generator=g)
    ref = -(torch.log(torch.sigmoid((f * hp).sum(-1))) + torch.log(torch.sigmoid(-(hn @ f[:, :, None])[..., 0])).mean(-1))
    assert torch.allclose(word2fun_loss(f, hp, hn, "none"), ref, atol=1e-6)
    shared = torch.randn(5, 3, generator=g)
    per_pair = word2fun_loss(f, hp, shared.expand(4, 5, 3), "sum")
    assert torch.allclose(word2fun_loss(f, hp, shared, "sum"), per_pair, atol=1e-6)
