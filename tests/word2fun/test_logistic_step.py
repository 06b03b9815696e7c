"""The logistic step A_u sigma(k_u (s - c_u)) of f(u, .): its function, gradients, roughness, projection and defaults."""

import math

import numpy as np
import pytest
import torch

from qpnlp.word2fun import TrainConfig, Word2FunConfig, centre_sgd_step, fit, roughness
from qpnlp.word2fun.config import DEFAULT_ROUGHNESS_PENALTY, DEFAULT_ROUGHNESS_PENALTY_NO_STEP, resolve_penalty
from qpnlp.word2fun.functions import logistic_step
from qpnlp.word2fun.loop import train_source
from qpnlp.word2fun.model import STEP_RATE_INIT, STEP_RATE_MAX, STEP_RATE_MIN, Word2Fun
from qpnlp.word2fun.sgd import _add_roughness_steps
from qpnlp.word2fun.sources import ArraySource


def _rows(model, words, tau):
    return {k: w.index_select(0, i).detach().clone() for k, (w, i) in model.tables(words, tau).items()}


def test_the_step_switches_every_coordinate_at_the_centre():
    A = torch.tensor([[2.0, -1.0, 0.5]])
    c, ell = torch.tensor([[0.3]]), torch.tensor([[math.log(STEP_RATE_MAX)]])
    s = torch.tensor([0.0, 0.25, 0.3, 0.35, 1.0])
    term, sig = logistic_step(A.expand(5, 3), c.expand(5, 1), ell.expand(5, 1), s)
    torch.testing.assert_close(sig[2], torch.tensor([0.5]))
    assert sig[1].item() < 1e-4 and sig[3].item() > 1 - 1e-4  # a sharp rate: a step at c
    torch.testing.assert_close(term, (sig - 0.5) * A)  # the same sigmoid for every coordinate: one direction of change
    torch.testing.assert_close(term[0] - term[-1], -A[0], atol=1e-6, rtol=0)  # from -A/2 to +A/2 around B_u


def test_a_new_step_model_starts_static_and_the_option_off_has_no_step(make):
    m = make(6, 4, family="IV", frequency_init="harmonic", logistic=True)
    assert torch.all(m.step_amplitude.weight == 0)
    assert torch.all(m.step_centre.weight == 0.5)
    torch.testing.assert_close(m.step_rate.weight.exp(), torch.full((6, 1), STEP_RATE_INIT))
    off = make(6, 4, family="IV", frequency_init="harmonic")
    assert not off.logistic and not hasattr(off, "step_amplitude") and "step_amplitude" not in off.tables(
        torch.tensor([1]), torch.tensor([1.0]))
    # same seed: the family's parameters are initialised identically, and f agrees while A = 0
    for name, p in off.named_parameters():
        torch.testing.assert_close(dict(m.named_parameters())[name], p)
    w, t = torch.tensor([1, 2, 5]), torch.tensor([1900.0, 1950.0, 1999.0])
    torch.testing.assert_close(m.vectors(w, t), off.vectors(w, t))
    # checkpoints written before the option (no "logistic" key) load as models without the step
    d = off.config.to_dict()
    d.pop("logistic")
    assert Word2FunConfig.from_dict(d).logistic is False
    with pytest.raises(ValueError, match="sliced"):
        Word2FunConfig(vocab_size=3, dim=2, family="sliced", logistic=True)


@pytest.mark.parametrize("family", ["IV", "II", "linear"])
def test_the_vjp_with_the_step_equals_autograd(family, make, randomise):
    m = randomise(make(7, 6, family=family, frequency_init="harmonic", logistic=True), seed=2).double()
    with torch.no_grad():
        m.step_centre.weight.uniform_(0.1, 0.9)
        m.step_rate.weight.uniform_(math.log(5.0), math.log(50.0))
    words = torch.tensor([1, 2, 3, 1, 6])
    tau = torch.tensor([1.0, 10.0, 30.0, 45.0, 59.0], dtype=torch.float64)
    rows = {k: v.requires_grad_(True) for k, v in _rows(m, words, tau).items()}
    f, vjp = m.function_vjp(rows, tau)
    torch.testing.assert_close(f, m.function(rows, tau))
    g = torch.randn(f.shape, dtype=f.dtype, generator=torch.Generator().manual_seed(0))
    (f * g).sum().backward()
    grads, _ = vjp(g)
    assert {"step_amplitude", "step_centre", "step_rate"} <= set(grads)
    for name, r in rows.items():
        torch.testing.assert_close(grads[name], r.grad, msg=name)


def test_the_step_roughness_is_its_mean_squared_speed_and_its_gradient_is_exact(make, randomise):
    m = randomise(make(4, 6, family="IV", frequency_init="harmonic", logistic=True), seed=1).double()
    with torch.no_grad():
        m.amplitude.weight.zero_()  # only the step moves
        m.step_centre.weight.copy_(torch.tensor([[0.5], [0.4], [0.6], [0.5]]))
        m.step_rate.weight.copy_(torch.log(torch.tensor([[20.0], [40.0], [60.0], [100.0]])))
    words, tau = torch.arange(4), torch.zeros(4, dtype=torch.float64)
    rows = _rows(m, words, tau)
    # 1/2 the mean over s in [0, 1] of |d f / d s|^2, by finite differences on a fine grid
    s = torch.linspace(0, 1, 20001, dtype=torch.float64)
    S = m.time_scale.scale
    f = torch.stack([m.function({k: v[i:i + 1].expand(len(s), -1) for k, v in rows.items()}, s * S)
                     for i in range(4)])
    speed = torch.diff(f, dim=1) / (s[1] - s[0])
    torch.testing.assert_close(roughness(m, rows), 0.5 * speed.square().sum(-1).mean(-1), rtol=2e-3, atol=0)
    # the hand-written gradient of lambda * rho equals autograd's
    req = {k: v.clone().requires_grad_(True) for k, v in rows.items()}
    roughness(m, req).sum().backward()
    steps = {k: torch.zeros_like(v) for k, v in rows.items()}
    _add_roughness_steps(m, rows, steps, 1.0)
    for name in ("amplitude", "omega1", "omega2", "step_amplitude", "step_rate"):
        torch.testing.assert_close(-steps[name], req[name].grad, msg=name)


def test_the_sgd_step_with_the_step_equals_autograd_sgd_and_projects(make, randomise):
    m = randomise(make(8, 6, family="IV", frequency_init="harmonic", logistic=True), seed=4).double()
    with torch.no_grad():
        m.step_centre.weight.uniform_(0.2, 0.8)
        m.step_rate.weight.uniform_(math.log(12.0), math.log(80.0))
    ref = randomise(make(8, 6, family="IV", frequency_init="harmonic", logistic=True), seed=4).double()
    ref.load_state_dict(m.state_dict())
    words, times = torch.tensor([1, 2, 5]), torch.tensor([1910.0, 1950.0, 1990.0], dtype=torch.float64)
    pc, ctx, neg = torch.tensor([0, 0, 1, 2]), torch.tensor([3, 4, 0, 2]), torch.tensor([5, 6, 7])
    lr, lam = 0.01, 1e-3
    centre_sgd_step(m, words, times, pc, ctx, neg, lr, lam)
    # autograd: the summed loss over the pairs plus lambda * rho per centre token
    from qpnlp.word2fun.functions import word2fun_loss
    from qpnlp.word2fun.step_sizes import table_lr_factor

    f = ref.vectors(words[pc], times[pc])
    loss = word2fun_loss(f, ref.compass(ctx), ref.compass(neg), reduction="sum")
    tau = ref.time_scale.normalise(times)
    rows = {k: w[i] for k, (w, i) in ref.tables(words, tau).items()}
    loss = loss + lam * roughness(ref, rows).sum()
    loss.backward()
    with torch.no_grad():
        for name, p in ref.named_parameters():
            table = name.split(".")[0]
            p.sub_(lr * table_lr_factor(table, ref.time_scale.scale) * p.grad)
    for (name, p), q in zip(ref.named_parameters(), m.parameters()):
        torch.testing.assert_close(q, p, msg=name)
    # projection: a huge step leaves c_u in [0, 1] and k_u in [STEP_RATE_MIN, STEP_RATE_MAX] for the rows updated
    centre_sgd_step(m, words, times, pc, ctx, neg, 1e4, 0.0)
    c, k = m.step_centre.weight[words], m.step_rate.weight[words].exp()
    assert bool(((c >= 0) & (c <= 1)).all())
    assert bool(((k >= STEP_RATE_MIN * (1 - 1e-9)) & (k <= STEP_RATE_MAX * (1 + 1e-9))).all())


def test_defaults_step_on_for_the_sinusoidal_families_and_the_penalty_follows(tiny_drift):
    assert resolve_penalty(TrainConfig(), "IV").roughness_penalty == DEFAULT_ROUGHNESS_PENALTY
    assert resolve_penalty(TrainConfig(), "IV", logistic=False).roughness_penalty == DEFAULT_ROUGHNESS_PENALTY_NO_STEP
    assert resolve_penalty(TrainConfig(), "linear", logistic=True).roughness_penalty == 0.0
    corpus, _ = tiny_drift
    cfg = TrainConfig(epochs=1, batch_size=1024)
    assert fit(corpus, cfg, dim=8).vectors.model.logistic  # family IV by default
    assert not fit(corpus, cfg, dim=8, family="static").vectors.model.logistic
    assert not fit(corpus, cfg, dim=8, logistic=False).vectors.model.logistic


def test_the_option_off_trains_exactly_the_model_without_the_step(tiny_drift):
    """``fit(logistic=False)`` = a Word2Fun built without the option (the previous model), with penalty 2e-5, bit for bit."""
    corpus, _ = tiny_drift
    cfg = TrainConfig(epochs=2, batch_size=1024, seed=3)
    off = fit(corpus, cfg, dim=8, logistic=False).vectors
    model, vocab = off.model, off.vocabulary
    fresh = Word2Fun(Word2FunConfig(vocab_size=len(vocab), dim=8, family="IV", span_start=model.time_scale.start,
                                    span_end=model.time_scale.end, time_scale=model.time_scale.scale,
                                    frequency_init="harmonic", max_periods=6.0), seed=3)
    assert not fresh.logistic
    enc = corpus.encode(vocab)
    train_source(fresh, ArraySource(enc.tokens, enc.doc_ids, enc.times), vocab.counts,
                 TrainConfig(epochs=2, batch_size=1024, seed=3, roughness_penalty=2e-5), rng=np.random.default_rng(3))
    for (name, p), q in zip(model.named_parameters(), fresh.parameters()):
        assert torch.equal(p, q), name
