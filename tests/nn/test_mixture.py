"""Lazy local mixtures (CNM windows) against explicitly built window density matrices."""

import re

import numpy as np
import pytest
import torch

from qpnlp.measurement import born_probabilities_dense, word_probabilities
from qpnlp.nn import (effective_word_weights, local_mixture, local_mixture_density, pool_positions, window_mask,
                      window_weights)
from qpnlp.testing import assert_allclose, assert_density_matrix, default_atol


def _real(cdtype):
    return torch.float64 if cdtype == torch.complex128 else torch.float32


def _inputs(cdtype, device, batch=3, length=6, dim=5, k=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(batch, length, dim, dtype=cdtype, generator=gen)
    states = torch.nn.functional.normalize(z, dim=-1).to(device)
    scores = torch.randn(batch, length, dtype=_real(cdtype), generator=gen).to(device)
    lengths = torch.tensor([length, 3, 1][:batch])
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).to(device)
    states = states * mask.unsqueeze(-1)                                     # padding: zero vectors
    v = torch.nn.functional.normalize(torch.randn(k, dim, dtype=cdtype, generator=gen), dim=-1).to(device)
    return states, scores, mask, v


def _explicit_rho(states, scores, mask, b, t, l):
    """rho of the window starting at t, built word by word (the definition, thesis eq. 3.7)."""
    n = int(mask[b].sum())
    members = list(range(t, min(t + l, n)))
    e = torch.exp(scores[b, members] - scores[b, members].max())
    p = e / e.sum()
    d = states.shape[-1]
    rho = torch.zeros(d, d, dtype=states.dtype, device=states.device)
    for w, i in zip(p, members):
        rho = rho + w * torch.outer(states[b, i], states[b, i].conj())
    return rho


def test_lazy_equals_explicit_window_density_matrices(cdtype, device):
    states, scores, mask, v = _inputs(cdtype, device)
    windows = (1, 2, 3, 4)
    lazy = local_mixture(word_probabilities(states, v), scores, mask, windows)
    assert lazy.shape == (3, 4, 6, 4) and lazy.dtype == _real(cdtype)
    dense = local_mixture_density(states, scores, mask, windows)
    atol = default_atol(cdtype, states.shape[-1])
    for b in range(3):
        for t in range(int(mask[b].sum())):
            for w, l in enumerate(windows):
                rho = _explicit_rho(states, scores, mask, b, t, l)
                assert_density_matrix(rho, atol=atol)
                assert_allclose(dense[b, w, t], rho, atol=atol)
                assert_allclose(lazy[b, w, t], born_probabilities_dense(rho, v), atol=atol)
    assert float(lazy.masked_select(~mask[:, None, :, None].expand_as(lazy)).abs().max()) == 0.0
    assert float(dense[~mask.unsqueeze(1).expand(dense.shape[:3])].abs().max()) == 0.0


def test_padded_and_unpadded_copies_agree(cdtype, device):
    states, scores, mask, v = _inputs(cdtype, device, batch=1, length=5)
    probs = word_probabilities(states, v)
    short = local_mixture(probs, scores, mask)
    pad = 4
    padded_probs = torch.cat([probs, torch.full((1, pad, probs.shape[-1]), 0.7, dtype=probs.dtype, device=device)], 1)
    padded_scores = torch.cat([scores, torch.full((1, pad), 50.0, dtype=scores.dtype, device=device)], 1)
    padded_mask = torch.cat([mask, torch.zeros(1, pad, dtype=torch.bool, device=device)], 1)
    long = local_mixture(padded_probs, padded_scores, padded_mask)   # garbage under the padding on purpose
    assert_allclose(long[..., :5, :], short, atol=0.0, rtol=0.0)
    assert float(long[..., 5:, :].abs().max()) == 0.0


def test_left_padding(cdtype, device):
    states, scores, mask, v = _inputs(cdtype, device, batch=1, length=4)
    probs = word_probabilities(states, v)
    ref = local_mixture(probs, scores, mask)
    lp = torch.cat([torch.full((1, 2, probs.shape[-1]), 0.3, dtype=probs.dtype, device=device), probs], 1)
    ls = torch.cat([torch.full((1, 2), -9.0, dtype=scores.dtype, device=device), scores], 1)
    lm = torch.cat([torch.zeros(1, 2, dtype=torch.bool, device=device), mask], 1)
    out = local_mixture(lp, ls, lm)
    assert_allclose(out[..., 2:, :], ref, atol=0.0, rtol=0.0)
    assert float(out[..., :2, :].abs().max()) == 0.0


def test_window_one_is_the_word_probabilities(cdtype, device):
    states, scores, mask, v = _inputs(cdtype, device)
    probs = word_probabilities(states, v)
    out = local_mixture(probs, scores, mask, (1,))
    assert_allclose(out[:, 0], probs * mask.unsqueeze(-1), atol=0.0, rtol=0.0)


def test_window_longer_than_sentence_is_its_global_mixture_at_the_start(cdtype, device):
    states, scores, mask, v = _inputs(cdtype, device)
    probs = word_probabilities(states, v)
    out = local_mixture(probs, scores, mask, (10,))
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    assert_allclose(out[:, 0, 0], (weights.unsqueeze(-2) @ probs).squeeze(-2), atol=default_atol(cdtype, 8))


def test_window_weights_are_a_distribution_and_stable(device):
    scores = torch.tensor([[1e4, -1e4, 3.0, 1e4, 0.0]], device=device)
    mask = torch.tensor([[True, True, True, True, False]], device=device)
    w = window_weights(scores, mask, 3)
    assert torch.isfinite(w).all()
    assert_allclose(w[0, :4].sum(-1), torch.ones(4, device=device))
    assert float(w[0, 4].abs().max()) == 0.0
    assert w[0, 0].tolist() == [1.0, 0.0, 0.0]
    assert w[0, 3].tolist() == [1.0, 0.0, 0.0]            # truncated at the sentence end
    local = local_mixture(torch.rand(1, 5, 2, device=device), scores, mask)
    assert torch.isfinite(local).all()


def test_effective_weights_give_the_average_local_mixture(cdtype, device):
    states, scores, mask, _ = _inputs(cdtype, device)
    dense = local_mixture_density(states, scores, mask, (3,))[:, 0]                   # (B, L, d, d)
    mean_rho = dense.sum(1) / mask.sum(-1).to(dense.real.dtype)[:, None, None]
    c = effective_word_weights(scores, mask, 3)
    assert_allclose(c.sum(-1), torch.ones(3, dtype=c.dtype, device=device), atol=default_atol(cdtype, 6))
    expected = torch.einsum("bl,bld,ble->bde", c.to(states.dtype), states, states.conj())
    assert_allclose(mean_rho, expected, atol=default_atol(cdtype, 25))


@pytest.mark.parametrize("length", [1, 2])
def test_effective_weights_of_texts_shorter_than_the_window(length):
    """A batch padded to L <= window - 2 crashed (the shifted copies grew longer than L): CNM's trace head with
    local mixtures failed on one- or two-word batches."""
    mask = torch.ones(2, length, dtype=torch.bool)
    scores = torch.rand(2, length)
    for padding in ("end", "both"):
        c = effective_word_weights(scores, mask, 4, padding=padding)
        assert c.shape == (2, length)
        torch.testing.assert_close(c.sum(-1), torch.ones(2))


def test_effective_weights_of_a_row_without_words_are_zero(device):
    """A fully padded row divided its zero weights by its zero window count: NaN weights (and NaN trace scores of
    CNM with validation off), where window_weights and pool_positions give 0 for such a row."""
    scores = torch.randn(2, 4, device=device, requires_grad=True)
    mask = torch.tensor([[True, True, False, False], [False] * 4], device=device)
    for padding in ("end", "both"):
        c = effective_word_weights(scores, mask, 3, padding=padding)
        assert c[1].tolist() == [0.0] * 4
        torch.testing.assert_close(c[0].sum(), torch.tensor(1.0, device=device))
        c.sum().backward()
        assert bool(torch.isfinite(scores.grad).all())
        scores.grad = None


def test_pooling_ignores_padding(device):
    x = torch.tensor([[[0.2, 0.9], [0.5, 0.1], [7.0, 7.0]]], device=device)
    mask = torch.tensor([[True, True, False]], device=device)
    assert pool_positions(x, mask, "max").tolist() == [[0.5, pytest.approx(0.9)]]
    assert_allclose(pool_positions(x, mask, "mean"), torch.tensor([[0.35, 0.5]], device=device))
    with pytest.raises(ValueError, match="pooling"):
        pool_positions(x, mask, "min")


def test_gradcheck_float64():
    states, scores, mask, v = _inputs(torch.complex128, "cpu", batch=2, length=4, dim=3, k=2)
    probs = word_probabilities(states, v).detach().requires_grad_()
    scores = scores.detach().requires_grad_()
    assert torch.autograd.gradcheck(lambda p, s: local_mixture(p, s, mask, (1, 2, 3)), (probs, scores))


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="window sizes must be >= 1"):
        window_weights(torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool), 0)
    with pytest.raises(TypeError, match="bool"):
        window_weights(torch.zeros(1, 3), torch.ones(1, 3), 2)
    with pytest.raises(ValueError, match="word_probs must have shape"):
        local_mixture(torch.zeros(1, 4, 2), torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool))


def test_window_sizes_that_are_not_integers_are_refused_not_truncated():
    # windows=(2.5,) ran as window 2 and True as window 1, silently; window=2.0 failed inside torch (new_full)
    probs, scores, mask = torch.rand(1, 4, 2), torch.zeros(1, 4), torch.ones(1, 4, dtype=torch.bool)
    for windows, name in (((2.5,), "windows[0]"), ((1, True), "windows[1]")):
        with pytest.raises(TypeError, match=rf"^{re.escape(name)} must be an integer"):
            local_mixture(probs, scores, mask, windows)
        with pytest.raises(TypeError, match=re.escape(name)):
            window_mask(mask, windows)
    for function in (window_weights, effective_word_weights):
        with pytest.raises(TypeError, match="^window must be an integer; got float 2.0"):
            function(scores, mask, 2.0)
    with pytest.raises(TypeError, match=r"^windows must be a sequence of window sizes \(e.g. \[3\]\)"):
        window_mask(mask, 3)
    assert torch.equal(local_mixture(probs, scores, mask, (np.int64(2),)), local_mixture(probs, scores, mask, (2,)))


def test_complex_word_probs_are_named():
    # they made the real scores complex, and the error named scores
    with pytest.raises(TypeError, match="^word_probs must have a real floating dtype; got torch.complex64"):
        local_mixture(torch.zeros(1, 3, 2, dtype=torch.complex64), torch.zeros(1, 3),
                      torch.ones(1, 3, dtype=torch.bool))


# ------------------------------------------------------------------ padding="both": the symmetric edge convention
def _explicit_rho_both(states, scores, mask, b, t, l):
    """rho of window t over the sentence padded by l - 1 on both sides: its real words among t - l + 1 .. t."""
    n = int(mask[b].sum())
    members = [i for i in range(t - l + 1, t + 1) if 0 <= i < n]
    if not members:
        return None
    e = torch.exp(scores[b, members] - scores[b, members].max())
    p = e / e.sum()
    rho = torch.zeros(states.shape[-1], states.shape[-1], dtype=states.dtype, device=states.device)
    for w, i in zip(p, members):
        rho = rho + w * torch.outer(states[b, i], states[b, i].conj())
    return rho


def test_both_sides_lazy_equals_explicit_windows(cdtype, device):
    states, scores, mask, v = _inputs(cdtype, device)
    windows = (1, 2, 3)
    lazy = local_mixture(word_probabilities(states, v), scores, mask, windows, padding="both")
    dense = local_mixture_density(states, scores, mask, windows, padding="both")
    exists = window_mask(mask, windows, padding="both")
    assert lazy.shape == (3, 3, 6 + 2, 4) and exists.shape == (3, 3, 8) and dense.shape[:3] == (3, 3, 8)
    atol = default_atol(cdtype, states.shape[-1])
    for b in range(3):
        for w, l in enumerate(windows):
            for t in range(8):
                rho = _explicit_rho_both(states, scores, mask, b, t, l) if t < int(mask[b].sum()) + l - 1 else None
                assert bool(exists[b, w, t]) == (rho is not None)
                if rho is None:
                    assert float(lazy[b, w, t].abs().max()) == 0.0 and float(dense[b, w, t].abs().max()) == 0.0
                    continue
                assert_allclose(dense[b, w, t], rho, atol=atol)
                assert_allclose(lazy[b, w, t], born_probabilities_dense(rho, v), atol=atol)


@pytest.mark.parametrize("pooling", ["max", "mean"])
def test_both_sides_makes_a_sentence_and_its_reverse_pool_alike(pooling, cdtype, device, tol):
    """Issue 17: windows cut at the sentence end only (padding="end") tell a sentence from its reverse."""
    states, scores, _, v = _inputs(cdtype, device, batch=1, length=5)
    mask = torch.ones(1, 5, dtype=torch.bool, device=device)
    probs = word_probabilities(states, v)
    pooled = {}
    for padding in ("end", "both"):
        for name, (p, s) in {"forward": (probs, scores), "reverse": (probs.flip(1), scores.flip(1))}.items():
            out = local_mixture(p, s, mask, (1, 2, 3), padding=padding)
            pooled[padding, name] = pool_positions(out, window_mask(mask, (1, 2, 3), padding), pooling)
    assert_allclose(pooled["both", "forward"], pooled["both", "reverse"], atol=tol(8))
    assert float((pooled["end", "forward"] - pooled["end", "reverse"]).abs().max()) > 1e-3


def test_both_sides_padding_anywhere_changes_nothing(cdtype, device, tol):
    states, scores, mask, v = _inputs(cdtype, device, batch=1, length=4)
    probs = word_probabilities(states, v)
    ref = pool_positions(local_mixture(probs, scores, mask, (1, 2, 3), padding="both"),
                         window_mask(mask, (1, 2, 3), "both"))
    for left, right in ((2, 0), (0, 3), (1, 2)):
        p = torch.cat([torch.full((1, left, 4), 0.3, dtype=probs.dtype, device=device), probs,
                       torch.full((1, right, 4), 0.6, dtype=probs.dtype, device=device)], 1)
        s = torch.cat([torch.full((1, left), 9.0, dtype=scores.dtype, device=device), scores,
                       torch.full((1, right), -9.0, dtype=scores.dtype, device=device)], 1)
        m = torch.cat([torch.zeros(1, left, dtype=torch.bool, device=device), mask,
                       torch.zeros(1, right, dtype=torch.bool, device=device)], 1)
        out = pool_positions(local_mixture(p, s, m, (1, 2, 3), padding="both"), window_mask(m, (1, 2, 3), "both"))
        assert_allclose(out, ref, atol=tol(4))


def test_both_sides_effective_weights_give_the_average_local_mixture(cdtype, device):
    states, scores, mask, _ = _inputs(cdtype, device)
    dense = local_mixture_density(states, scores, mask, (3,), padding="both")[:, 0]       # (B, T, d, d)
    count = window_mask(mask, (3,), "both")[:, 0].sum(-1).to(dense.real.dtype)
    mean_rho = dense.sum(1) / count[:, None, None]
    c = effective_word_weights(scores, mask, 3, padding="both")
    assert_allclose(c.sum(-1), torch.ones(3, dtype=c.dtype, device=device), atol=default_atol(cdtype, 6))
    expected = torch.einsum("bl,bld,ble->bde", c.to(states.dtype), states, states.conj())
    assert_allclose(mean_rho, expected, atol=default_atol(cdtype, 25))


def test_end_padding_is_unchanged_by_the_option(cdtype, device):
    states, scores, mask, v = _inputs(cdtype, device)
    probs = word_probabilities(states, v)
    assert torch.equal(local_mixture(probs, scores, mask), local_mixture(probs, scores, mask, padding="end"))
    assert torch.equal(window_mask(mask, (1, 2), "end"), mask.unsqueeze(1).expand(3, 2, 6))


def test_window_sizes_and_mask_of_window_mask_and_local_mixture_density_are_checked():
    states = torch.nn.functional.normalize(torch.randn(1, 3, 2, dtype=torch.complex64), dim=-1)
    mask = torch.ones(1, 3, dtype=torch.bool)
    for padding in ("end", "both"):
        with pytest.raises(ValueError, match="need at least one window size"):
            local_mixture_density(states, torch.zeros(1, 3), mask, windows=(), padding=padding)
        with pytest.raises(ValueError, match="need at least one window size"):
            window_mask(mask, (), padding)
        with pytest.raises(ValueError, match="window sizes must be >= 1; got 0"):
            window_mask(mask, (0, 2), padding)
        with pytest.raises(TypeError, match="mask must be a bool tensor"):
            window_mask(torch.ones(1, 3), (1, 2), padding)
