"""The step sizes shared by Word2Fun's torch-ops step and its compiled step."""

from __future__ import annotations

import math

import pytest
import torch

from qpnlp.word2fun import fused_step, sgd
from qpnlp.word2fun.model import STEP_RATE_MAX, STEP_RATE_MIN
from qpnlp.word2fun.step_sizes import (STEP_CENTRE_LR, STEP_RATE_LR, row_step_scales, step_bounds,
                                       table_lr_factor)


@pytest.mark.parametrize("name, expected", [("omega1", 1 / 30), ("omega2", 1 / 30), ("slope", 1 / 900),
                                            ("step_centre", STEP_CENTRE_LR), ("step_rate", STEP_RATE_LR),
                                            ("base", 1.0), ("amplitude", 1.0), ("theta1", 1.0)])
def test_each_table_steps_by_its_own_factor(name, expected):
    assert table_lr_factor(name, 30.0) == pytest.approx(expected)


def test_the_centre_factor_is_the_callers():
    assert table_lr_factor("step_centre", 30.0, centre_lr=0.01) == 0.01
    assert table_lr_factor("step_rate", 30.0, centre_lr=0.01) == STEP_RATE_LR


def test_no_penalty_and_no_row_lr_give_floats_and_no_roughness_step():
    assert row_step_scales(0.0, None, 0.1, torch.float32) == (-0.1, None)
    row, rough = row_step_scales(1e-3, None, 0.1, torch.float32)
    assert row == -0.1 and rough == pytest.approx(1e-4)


def test_row_lr_scales_both_factors_per_token():
    r = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    row, rough = row_step_scales(1e-3, r, 0.1, torch.float32)
    assert row.dtype == rough.dtype == torch.float32
    torch.testing.assert_close(row, torch.tensor([-0.1, -0.2, -0.4]))
    torch.testing.assert_close(rough, torch.tensor([1e-4, 2e-4, 4e-4]))
    assert row_step_scales(0.0, r, 0.1, torch.float32)[1] is None


def test_a_penalty_tensor_always_gives_a_roughness_tensor_even_when_zero():
    lam = torch.zeros(3)
    row, rough = row_step_scales(lam, None, 0.1, torch.float64)
    assert row == -0.1 and rough.dtype == torch.float64 and torch.equal(rough, torch.zeros(3, dtype=torch.float64))
    _, rough = row_step_scales(torch.tensor([1.0, 0.0, 2.0]), torch.tensor([2.0, 5.0, 0.5]), 0.5, torch.float32)
    torch.testing.assert_close(rough, torch.tensor([1.0, 0.0, 0.5]))


def test_bounds_exist_only_with_the_logistic_step(make):
    assert step_bounds(make(3, 4, family="IV")) == {}
    bounds = step_bounds(make(3, 4, family="IV", logistic=True))
    assert bounds == {"step_centre.weight": (0.0, 1.0),
                      "step_rate.weight": (math.log(STEP_RATE_MIN), math.log(STEP_RATE_MAX))}


def test_both_steps_read_the_same_factors(monkeypatch, make, randomise):
    """A factor changed in its one home moves the torch-ops step and the compiled step alike."""
    pytest.importorskip("numba")
    from qpnlp.word2fun import step_sizes

    monkeypatch.setattr(step_sizes, "STEP_RATE_LR", 2.5)
    words, times = torch.tensor([0, 1, 2]), torch.tensor([1910.0, 1950.0, 1990.0])
    pc, ctx, neg = torch.tensor([0, 1, 2, 2]), torch.tensor([3, 4, 5, 1]), torch.tensor([5, 6])
    moves = []
    for compiled in (True, False):
        monkeypatch.setattr(fused_step, "ENABLED", compiled)
        m = randomise(make(8, 6, family="IV", logistic=True), seed=1)
        with torch.no_grad():
            m.step_centre.weight.copy_(torch.linspace(0.2, 0.8, 8)[:, None])
            m.step_rate.weight.fill_(math.log(20.0))
        assert fused_step.accepts(m, neg, words, times, pc, ctx, 1e-3, None) == compiled
        before = torch.cat([m.step_centre.weight, m.step_rate.weight], 1).clone()
        sgd.centre_sgd_step_tensor(m, words, times, pc, ctx, neg, 0.05, 1e-3, None, 1.0, 0.5)
        moves.append(torch.cat([m.step_centre.weight, m.step_rate.weight], 1) - before)
    assert (moves[0][:3].abs() > 0).all()
    torch.testing.assert_close(moves[0], moves[1], rtol=1e-4, atol=1e-6)
