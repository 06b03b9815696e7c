"""The hand-written SGD step is SGD on the thesis loss (plus the roughness penalty)."""

import math

import pytest
import torch

from qpnlp.word2fun import FAMILIES, TimeScale, centre_sgd_step, harmonic_frequencies, roughness, sgd_step, word2fun_loss
from qpnlp.word2fun.config import TrainConfig, check_penalty_family

TS = TimeScale(1900.0, 2000.0, 60.0)


@pytest.fixture(autouse=True, params=["compiled", "torch ops"])
def pair_loop_backend(request, monkeypatch):
    """Every test twice: the pairs in the compiled loop (where numba is installed) and in torch ops."""
    if request.param == "compiled":
        pytest.importorskip("numba", reason="the compiled pair loop needs numba (the extra 'fast', in 'test')")
    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "1" if request.param == "compiled" else "0")
    return request.param


def _assert_autograd_sgd_step(stepped, ref, loss, lr):
    """``stepped``'s parameters equal ``ref``'s after one autograd SGD step on ``loss`` (frequencies at lr / S)."""
    named = [(n, p) for n, p in ref.named_parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, [p for _, p in named])
    with torch.no_grad():
        for (n, p), gr in zip(named, grads):
            p -= lr * {"omega1.weight": 1 / 60, "omega2.weight": 1 / 60}.get(n, 1.0) * gr
    for (n, p), (_, q) in zip(stepped.named_parameters(), ref.named_parameters()):
        assert torch.allclose(p, q, atol=1e-5), n


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("frozen", [False, True])
def test_sgd_step_equals_autograd_sgd(family, frozen, make, randomise):
    V, D, B = 9, 6, 5
    m = randomise(make(V, D, family=family, n_slices=3, freeze_compass=frozen), seed=1)
    ref = randomise(make(V, D, family=family, n_slices=3, freeze_compass=frozen), seed=1)
    c, x = torch.tensor([0, 1, 1, 4, 8]), torch.tensor([2, 2, 3, 1, 0])
    neg = torch.tensor([[1, 5], [5, 5], [0, 2], [7, 8], [3, 3]])
    t = torch.tensor([1900.0, 1950.0, 1950.0, 1999.0, 1930.0])
    lr = 0.1
    sgd_step(m, c, x, neg, t, lr)
    loss = word2fun_loss(ref.vectors(c, t), ref.compass(x), ref.compass(neg), "sum")
    params = [p for p in ref.parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for (n, p), gr in zip([(n, p) for n, p in ref.named_parameters() if p.requires_grad], grads):
            factor = {"omega1.weight": 1 / 60, "omega2.weight": 1 / 60, "slope.weight": 1 / 3600}.get(n, 1.0)
            if not n.endswith(".weight"):
                factor = 1 / B
            p -= lr * factor * gr
    for (n, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        assert torch.allclose(p, q, atol=1e-5), n
    if frozen:
        assert torch.equal(m.compass.weight, randomise(make(V, D, family=family, n_slices=3), 1).compass.weight)


@pytest.mark.parametrize("family", ["II", "III", "IV"])
def test_roughness_penalty_step_equals_autograd_sgd(family, make, randomise):
    """The step with ``roughness_penalty`` is SGD on the summed loss plus lambda * rho(u) per centre token."""
    V, D, lam, lr = 9, 6, 0.01, 0.1
    m = randomise(make(V, D, family=family), seed=2)
    ref = randomise(make(V, D, family=family), seed=2)
    words, times = torch.tensor([2, 7, 2, 0]), torch.tensor([1910.0, 1950.0, 1990.0, 1910.0])
    pc, ctx, neg = torch.tensor([0, 0, 1, 2, 3]), torch.tensor([1, 4, 3, 8, 5]), torch.tensor([3, 6, 6])
    centre_sgd_step(m, words, times, pc, ctx, neg, lr, roughness_penalty=lam)
    tau = TS.normalise(times)
    rows = {k: w[i] for k, (w, i) in ref.tables(words, tau).items()}
    f = ref.function(rows, tau)
    loss = word2fun_loss(f[pc], ref.compass(ctx), ref.compass(neg), "sum") + lam * roughness(ref, rows).sum()
    _assert_autograd_sgd_step(m, ref, loss, lr)


def test_roughness_is_the_mean_squared_speed(make, randomise):
    """rho = mean over the span of |df/ds|^2 (s = fraction of the span) for whole half-periods, any time scale."""
    for scale in (30.0, 60.0):
        ts = TimeScale(1900.0, 2000.0, scale)
        m = randomise(make(3, 8, family="IV", time_scale=ts, frequency_init="harmonic"), seed=3)
        with torch.no_grad():  # 1/4, 1/2, 3/4, 1 periods over the span: whole half-periods for levels 2 and 4
            m.omega1.weight.copy_(harmonic_frequencies(8, scale).expand(3, 4))
            m.omega2.weight.copy_(harmonic_frequencies(8, scale).expand(3, 4))
            m.amplitude.weight[:, [0, 2, 4, 6]] = 0.0
        words = torch.tensor([0, 1, 2])
        years = torch.linspace(1900.0, 2000.0, 4001)
        dfds = torch.diff(m.grid(words, years), dim=0) / (1.0 / 4000)
        rows = {k: w[i] for k, (w, i) in m.tables(words, torch.zeros(3)).items()}
        assert torch.allclose(dfds.square().sum(-1).mean(0), roughness(m, rows).detach(), rtol=1e-3)
    with pytest.raises(ValueError, match="sinusoidal"):
        roughness(make(3, 4, family="linear"), {})


@pytest.mark.parametrize("family", ["static", "sliced", "linear", "time2fun", "IV"])
@pytest.mark.parametrize("shared", [False, True])
def test_centre_step_equals_the_step_on_the_expanded_pairs(family, shared, make, randomise):
    """Grouping pairs by centre token (f computed once per token) is the same SGD step on the same summed loss."""
    V, D = 9, 6
    a = randomise(make(V, D, family=family, n_slices=3), seed=5)
    b = randomise(make(V, D, family=family, n_slices=3), seed=5)
    words, times = torch.tensor([2, 7, 2, 0]), torch.tensor([1910.0, 1950.0, 1990.0, 1910.0])
    pc = torch.tensor([0, 0, 0, 1, 2, 2, 3])
    ctx = torch.tensor([1, 4, 1, 3, 8, 0, 5])
    neg = torch.tensor([3, 6, 6]) if shared else torch.randint(0, V, (7, 3), generator=torch.Generator().manual_seed(1))
    la = centre_sgd_step(a, words, times, pc, ctx, neg, 0.05)
    lb = sgd_step(b, words[pc], ctx, neg, times[pc], 0.05)
    assert la == pytest.approx(lb, rel=1e-5)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.allclose(p, q, atol=1e-5), n


@pytest.mark.parametrize("family", ["II", "IV"])
@pytest.mark.parametrize("per_token", [False, True])
def test_the_step_in_chunks_of_pairs_equals_one_pass(family, per_token, make, randomise, monkeypatch):
    """On CPU the positive pairs are processed in chunks (``PAIR_CHUNK``): the same step as one pass over them."""
    from qpnlp.word2fun import sgd

    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "0")  # the torch ops (the compiled loop has no chunks)

    V, D = 9, 6
    words, times = torch.tensor([2, 7, 2, 0, 5]), torch.tensor([1910.0, 1950.0, 1990.0, 1910.0, 1975.0])
    pc = torch.tensor([0, 0, 0, 1, 2, 2, 3, 4, 4, 4, 4])
    ctx = torch.tensor([1, 4, 1, 3, 8, 0, 5, 2, 2, 6, 7])
    lam = torch.tensor([0.01, 0.0, 0.02, 0.01, 0.03]) if per_token else 0.01
    row_lr = torch.tensor([1.0, 2.0, 1.0, 4.0, 1.5]) if per_token else None
    results = []
    for chunk in (3, 10**6):
        monkeypatch.setattr(sgd, "PAIR_CHUNK", chunk)
        assert sgd._pair_chunk(pc.shape[0], torch.device("cpu")) == chunk
        m = randomise(make(V, D, family=family, logistic=True), seed=7)
        loss = sgd.centre_sgd_step(m, words, times, pc, ctx, torch.tensor([3, 6, 6]), 0.05, lam, row_lr)
        results.append((loss, dict(m.named_parameters())))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
    for n, p in results[0][1].items():
        assert torch.allclose(p, results[1][1][n], atol=1e-6), n


@pytest.mark.parametrize("shared", [True, False])
def test_the_weighted_negative_term_is_sgd_on_the_weighted_loss(shared, make, randomise):
    """``negative_weight`` c: the step is SGD on -log sigma(f h+) - c mean_i log sigma(-f h_i) (word2fun_loss)."""
    V, D, c, lr = 9, 6, 1.5, 0.1
    m = randomise(make(V, D, family="IV"), seed=3)
    ref = randomise(make(V, D, family="IV"), seed=3)
    words, times = torch.tensor([2, 7, 2, 0]), torch.tensor([1910.0, 1950.0, 1990.0, 1910.0])
    pc, ctx = torch.tensor([0, 0, 1, 2, 3]), torch.tensor([1, 4, 3, 8, 5])
    neg = torch.tensor([3, 6, 6]) if shared else torch.randint(0, V, (5, 3), generator=torch.Generator().manual_seed(2))
    loss = centre_sgd_step(m, words, times, pc, ctx, neg, lr, negative_weight=c)
    tau = TS.normalise(times)
    rows = {k: w[i] for k, (w, i) in ref.tables(words, tau).items()}
    f = ref.function(rows, tau)[pc]
    expected = word2fun_loss(f, ref.compass(ctx), ref.compass(neg), "sum", negative_weight=c)
    assert loss == pytest.approx(expected.item(), rel=1e-5)
    assert expected.item() != pytest.approx(word2fun_loss(f, ref.compass(ctx), ref.compass(neg), "sum").item(), rel=1e-3)
    _assert_autograd_sgd_step(m, ref, expected, lr)


@pytest.mark.parametrize("family", ["static", "linear", "sliced", "time2fun"])
@pytest.mark.parametrize("shared", [True, False])
def test_per_token_penalties_on_a_family_without_roughness(family, shared, make):
    """Zero per-token penalties step a family without a roughness term (the host decides, no device read of them
    for the sinusoidal families); a positive one, per token or a float, is ``fit``'s error
    (``check_penalty_family``'s message), raised before the step writes anything (it stepped the compass first)."""
    words, times = torch.tensor([2, 5]), torch.tensor([1910.0, 1990.0])
    pc, ctx = torch.tensor([0, 1, 1]), torch.tensor([1, 3, 4])
    neg = torch.tensor([6, 7]) if shared else torch.tensor([[6, 7], [7, 8], [8, 6]])
    m = make(9, 4, family=family)
    loss = centre_sgd_step(m, words, times, pc, ctx, neg, 0.05, roughness_penalty=torch.zeros(2))
    assert math.isfinite(loss)
    with torch.no_grad():
        m.compass.weight.normal_(generator=torch.Generator().manual_seed(0))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(ValueError) as fit_error:
        check_penalty_family(TrainConfig(roughness_penalty=0.01), family)
    for penalty in (torch.tensor([0.0, 0.01]), 0.01):
        with pytest.raises(ValueError) as error:
            centre_sgd_step(m, words, times, pc, ctx, neg, 0.05, roughness_penalty=penalty)
        assert str(error.value) == str(fit_error.value)
        assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())


@pytest.mark.parametrize("family", ["IV", "static"])
@pytest.mark.parametrize("penalty", [-0.01, math.inf, math.nan])
def test_a_negative_or_non_finite_float_penalty_is_refused_before_the_step(family, penalty, make):
    """A float penalty outside [0, inf) is ``TrainConfig``'s error in the step too (a negative one was taken as 0:
    no roughness step, silently), on every family, before anything is written."""
    words, times = torch.tensor([2, 5]), torch.tensor([1910.0, 1990.0])
    pc, ctx, neg = torch.tensor([0, 1, 1]), torch.tensor([1, 3, 4]), torch.tensor([6, 7])
    m = make(9, 4, family=family)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(ValueError, match="finite and >= 0"):
        TrainConfig(roughness_penalty=penalty)
    with pytest.raises(ValueError, match="roughness_penalty must be finite and >= 0"):
        centre_sgd_step(m, words, times, pc, ctx, neg, 0.05, roughness_penalty=penalty)
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())
