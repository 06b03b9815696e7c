"""The Word2Fun module: Table 4.1 values, initialisation, the VJP, indicators, and the model contract."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from qpnlp.models.base import Model, get_model_class, read_model_header
from qpnlp.word2fun import FAMILIES, TimeScale, Word2Fun, Word2FunConfig, fixed_frequencies, harmonic_frequencies

TS = TimeScale(1900.0, 2000.0, 60.0)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_values_match_table_4_1(family, make, randomise):
    V, D = 7, 6
    m = randomise(make(V, D, family=family, n_slices=4))
    words = torch.tensor([0, 3, 6, 3])
    years = torch.tensor([1900.0, 1937.5, 1999.0, 2000.0])
    f = m.vectors(words, years)
    assert f.shape == (4, D)
    tau = TS.normalise(years)[:, None]
    B = m.base.weight
    if family == "static":
        ref = B[words]
    elif family == "sliced":
        s = torch.tensor([0, 1, 3, 3])  # slices of width 25 years; the end belongs to the last one
        ref = B[words + V * s]
    elif family == "linear":
        ref = B[words] + m.slope.weight[words] * tau
    elif family == "time2fun":
        ref = B[words] + torch.sin(m.omega * tau)
    else:
        R = m.amplitude.weight[words]
        if family == "II":
            o1 = o2 = fixed_frequencies(D)
            t1 = t2 = 0.0
        else:
            o1, o2 = m.omega1.weight[words], m.omega2.weight[words]
            t1 = m.theta1.weight[words] if family == "IV" else 0.0
            t2 = m.theta2.weight[words] if family == "IV" else 0.0
        ref = B[words] + R * torch.cat([torch.sin(o1 * tau + t1), torch.cos(o2 * tau + t2)], -1)
    assert torch.allclose(f, ref, atol=1e-5)
    G = m.grid(torch.tensor([1, 2, 5]), torch.tensor([1910.0, 1990.0]))
    assert G.shape == (2, 3, D)
    assert torch.allclose(G[1, 2], m.vectors(torch.tensor(5), torch.tensor(1990.0)), atol=1e-6)


def test_the_sliced_family_holds_its_end_slices_outside_the_span(make, randomise):
    # documented: the other families extrapolate outside the span, a slice is a constant held there
    m = randomise(make(5, 4, family="sliced", n_slices=4))
    words = torch.tensor([1, 1])
    outside, ends = torch.tensor([1850.0, 2100.0]), torch.tensor([1900.0, 2000.0])
    assert torch.equal(m.vectors(words, outside), m.vectors(words, ends))
    assert not torch.equal(m.vectors(words[:1], torch.tensor([1900.0])), m.vectors(words[:1], torch.tensor([2000.0])))


def test_the_sliced_family_holds_its_end_slices_where_tau_exceeds_int64():
    # a span of 1e-6 units and times of 1e12 (both accepted): tau = 6e19, whose cast to int64 gave slice 0
    m = Word2Fun(Word2FunConfig(vocab_size=3, dim=2, family="sliced", span_start=0.0, span_end=1e-6, n_slices=4))
    tau = m.normalised_times(torch.tensor([-1e11, 0.0, 1e-6, 1e11, 1e12, -1e12]))
    assert tau.abs().max() > 2.0 ** 63
    assert m.slice_of(tau).tolist() == [0, 0, 3, 3, 3, 0]
    assert m.slice_of(torch.tensor([-math.inf, math.inf])).tolist() == [0, 3]


def test_initialisation_starts_static_and_compass_zero(make):
    m = make(50, 10, family="IV", frequency_init="harmonic")
    a = m.vectors(torch.arange(50), torch.full((50,), 1900.0))
    b = m.vectors(torch.arange(50), torch.full((50,), 1990.0))
    assert torch.equal(a, b) and a.abs().max() <= 0.5 / 10
    assert (m.compass.weight == 0).all()
    assert torch.allclose(m.omega1.weight[3], harmonic_frequencies(10, 60.0))
    assert torch.allclose(make(5, 10, family="III").omega2.weight[0], fixed_frequencies(10))


@pytest.mark.parametrize("family", FAMILIES)
def test_function_vjp_matches_autograd(family, make, randomise):
    m = randomise(make(7, 6, family=family, n_slices=3), seed=4)
    words, years = torch.tensor([0, 3, 6, 3]), torch.tensor([1900.0, 1937.5, 1999.0, 2000.0])
    tau = TS.normalise(years)
    rows = {k: w[i].detach().clone().requires_grad_(True) for k, (w, i) in m.tables(words, tau).items()}
    f, vjp = m.function_vjp({k: r.detach() for k, r in rows.items()}, tau)
    assert torch.allclose(f, m.function(rows, tau), atol=1e-6)
    g = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    row_grads, shared = vjp(g)
    params = list(rows.values()) + ([m.omega] if family == "time2fun" else [])
    ref = torch.autograd.grad((m.function(rows, tau) * g).sum(), params)
    for (name, _), r in zip(rows.items(), ref):
        assert torch.allclose(row_grads[name], r, atol=1e-5), name
    if family == "time2fun":
        assert torch.allclose(shared["omega"], ref[-1], atol=1e-5)


def test_indicators_on_hand_set_parameters(make):
    m = make(2, 4, family="III", time_scale=TimeScale(0.0, 60.0, 60.0))
    with torch.no_grad():
        m.base.weight.copy_(torch.tensor([[1.0, -1.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0]]))
        m.amplitude.weight.copy_(torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
        m.omega1.weight.copy_(torch.tensor([[0.1, 0.3], [0.2, 0.2]]))
        m.omega2.weight.copy_(torch.tensor([[0.1, 0.3], [0.2, 0.2]]))
    ind = m.indicators(torch.tensor([0, 1]), span=(0.0, 60.0), steps=2001)
    assert torch.allclose(ind["amplitude_bias_ratio"], torch.tensor([0.25 / 1.5, 0.0]))
    assert torch.allclose(ind["mean_frequency"], torch.tensor([0.2, 0.2]))
    # f'_1 = 0.5 * 0.1 cos(0.1 t), f'_2 = 0.5 * 0.3 cos(0.3 t); D = 4 coordinates
    t = np.linspace(0, 60, 2001)
    expect = (np.abs(0.05 * np.cos(0.1 * t)).mean() + np.abs(0.15 * np.cos(0.3 * t)).mean()) / 4
    assert abs(ind["mean_abs_derivative"][0].item() - expect) < 1e-3
    assert ind["mean_abs_derivative"][1].item() < 1e-6


def test_indicators_derivative_as_table_5_28(make):
    """Thesis Table 5.28: the mean over the decades of ||f'(u, t)||_p, p = 1 or 2; only p = 1 over an even grid of
    the span was available. Here: the power mean over the D coordinates, i.e. D^(-1/p) times the thesis' value."""
    m = make(2, 4, family="III", time_scale=TimeScale(0.0, 60.0, 60.0))
    with torch.no_grad():
        m.amplitude.weight.copy_(torch.tensor([[0.5, 0.5, 1.0, 0.0], [0.0, 0.0, 0.0, 2.0]]))
        m.omega1.weight.copy_(torch.tensor([[0.1, 0.3], [0.2, 0.2]]))
        m.omega2.weight.copy_(torch.tensor([[0.1, 0.3], [0.2, 0.2]]))
    times = [10.0, 20.0, 30.0, 40.0, 50.0]
    t = np.array(times)[:, None]
    r = np.array([[0.5, 0.5, 1.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    w = np.array([[0.1, 0.3, 0.1, 0.3], [0.2, 0.2, 0.2, 0.2]])
    for p in (1, 2):
        got = m.indicators(torch.tensor([0, 1]), times=times, p=p, steps=2001)["mean_abs_derivative"]
        for u in range(2):      # sin dims: R w cos(w t); cos dims: -R w sin(w t)
            deriv = np.concatenate([r[u, :2] * w[u, :2] * np.cos(w[u, :2] * t), -r[u, 2:] * w[u, 2:] *
                                    np.sin(w[u, 2:] * t)], -1)
            thesis = np.linalg.norm(deriv, ord=p, axis=-1).mean()
            assert abs(got[u].item() * 4 ** (1 / p) - thesis) < 1e-3 * thesis, (p, u)
    default = m.indicators(torch.tensor([0, 1]))["mean_abs_derivative"]
    assert torch.equal(m.indicators(torch.tensor([0, 1]), p=1.0)["mean_abs_derivative"], default)
    for bad in (0, -1, float("nan"), True):
        with pytest.raises(ValueError, match="p must be"):
            m.indicators(torch.tensor([0]), p=bad)
    with pytest.raises(ValueError, match="times is empty: give one or more times"):
        m.indicators(torch.tensor([0]), times=[])


def test_indicators_of_a_whole_vocabulary_build_grids_of_bounded_size(make, randomise, monkeypatch):
    # 6000 words x 101 times x D = 8 would be one grid of 4.8M entries per side; the words go in chunks
    V, D = 6000, 8
    m = randomise(make(V, D, family="IV"))
    sizes, grid = [], Word2Fun.grid

    def recording(self, words, times):
        out = grid(self, words, times)
        sizes.append(out.numel())
        return out

    monkeypatch.setattr(Word2Fun, "grid", recording)
    words = torch.arange(V)
    whole = m.indicators(words)["mean_abs_derivative"]
    assert len(sizes) > 2 and max(sizes) <= 1 << 22
    parts = torch.cat([m.indicators(words[i:i + 7])["mean_abs_derivative"] for i in (0, 2000, 5993)])
    assert torch.allclose(parts, whole[torch.cat([torch.arange(7), torch.arange(2000, 2007), torch.arange(5993, V)])],
                          rtol=1e-6, atol=0)


def test_indicators_derivative_at_a_single_time(make):
    # f = B + K tau, tau = 60 (t - 1900) / 100: df/dt = 0.6 K per year, also for the span of one year
    m = make(2, 4, family="linear")
    with torch.no_grad():
        m.slope.weight.fill_(1.0)
    for span in [(1950.0, 1950.0), (1900.0, 2000.0)]:
        deriv = m.indicators(torch.tensor([0, 1]), span=span)["mean_abs_derivative"]
        assert torch.allclose(deriv, torch.full((2,), 0.6)), span


def test_indicators_keep_float64_times_in_a_double_model(make):
    # Unix seconds over ten days: float32 times (128 s steps) would miss the derivative by about 1%
    start, end = 1.7e9, 1.7e9 + 864_000.0
    m = make(2, 4, family="linear", time_scale=TimeScale(start, end, 60.0), precision="double")
    with torch.no_grad():
        m.slope.weight.fill_(1.0)
    deriv = m.indicators(torch.tensor([0, 1]))["mean_abs_derivative"]
    assert torch.allclose(deriv, torch.full((2,), 60.0 / 864_000.0, dtype=torch.float64), rtol=1e-9)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_indicators_on_the_gpu(make, randomise):
    m = randomise(make(3, 4, family="IV"), seed=1)
    ref = m.indicators(torch.tensor([0, 2]))
    out = m.to("cuda").indicators(torch.tensor([0, 2], device="cuda"))
    for name, value in ref.items():
        assert torch.allclose(out[name].cpu().to(value.dtype), value, atol=1e-5, equal_nan=True), name


# ------------------------------------------------------------------ the model contract
@pytest.mark.parametrize("bad, match", [
    (dict(family="V"), "family must be one of"), (dict(family="II", dim=5), "even dim"),
    (dict(frequency_init="random"), "frequency_init"), (dict(span_end=1900.0), "end > start"),
    (dict(vocab_size=0), "vocab_size"), (dict(n_slices=0), "n_slices"), (dict(max_periods=0.0), "max_periods"),
])
def test_config_is_validated(bad, match):
    values = dict(vocab_size=5, dim=4, span_start=1900.0, span_end=2000.0) | bad
    with pytest.raises(ValueError, match=match):
        Word2FunConfig(**values)
    with pytest.raises(ValueError, match="unknown Word2FunConfig keys"):
        Word2FunConfig.from_dict({"vocab_size": 5, "dim": 4, "seed": 0})
    with pytest.raises(ValueError, match="Word2FunConfig.dim must be int"):
        Word2FunConfig.from_dict({"vocab_size": 5, "dim": "4"})


def test_registered_and_built_on_the_meta_device():
    assert get_model_class("word2fun") is Word2Fun and Word2Fun.task == "temporal"
    config = Word2FunConfig(vocab_size=9, dim=6, family="IV", span_start=1900, span_end=2000, frequency_init="harmonic")
    with torch.device("meta"):
        skeleton = Word2Fun.empty(config)
    real = Word2Fun(config)
    assert {k: (v.shape, v.dtype) for k, v in skeleton.state_dict().items()} == \
        {k: (v.shape, v.dtype) for k, v in real.state_dict().items()}
    assert all(v.is_meta for v in skeleton.state_dict().values())


@pytest.mark.parametrize("family", FAMILIES)
def test_save_and_load_through_the_model_contract(family, make, randomise, tmp_path):
    m = randomise(make(7, 6, family=family, n_slices=3, frequency_init="harmonic", max_periods=1.5), seed=6)
    m.save_pretrained(tmp_path / "m", metadata={"note": "test"})
    assert read_model_header(tmp_path / "m")["model"] == "word2fun"
    back = Model.from_pretrained(tmp_path / "m")
    assert isinstance(back, Word2Fun) and back.config == m.config and back.time_scale == m.time_scale
    ids, years = torch.tensor([0, 6, 3]), torch.tensor([1901.0, 1950.5, 2010.0])
    assert torch.equal(back.grid(ids, years), m.grid(ids, years))
    for (k, v), (k2, v2) in zip(m.state_dict().items(), back.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k


def test_set_compass_freezes_and_records_it(make):
    m = make(4, 2, family="static")
    h = torch.arange(8.0).view(4, 2)
    m.set_compass(h)
    assert torch.equal(m.compass.weight, h) and not m.compass.weight.requires_grad
    assert m.freeze_compass and m.config.freeze_compass
    assert dataclasses.replace(m.config, freeze_compass=False) != m.config
    with pytest.raises(ValueError, match="compass must have shape"):
        m.set_compass(torch.zeros(3, 2))


def test_repr_shows_the_family_the_sizes_and_the_span():
    # the repr listed the embedding tables only: which family a trained model was could not be seen
    model = Word2Fun(Word2FunConfig(vocab_size=30, dim=4, family="IV", span_start=1900.5, span_end=2000))
    assert repr(model).splitlines()[:2] == ["Word2Fun(", "  30, 4, family='IV', span=(1900.5, 2000)"]


@pytest.mark.parametrize("family", ["II", "III", "IV", "time2fun"])
def test_a_double_model_computes_its_constants_in_float64(family, make):
    """precision="double" built the tables in float32 and cast them: the fixed and harmonic frequencies and the
    step's initial log-rate were float32 values, about 1e-8 off the float64 formula."""
    from qpnlp.word2fun.model import STEP_RATE_INIT

    kw = dict(family=family, frequency_init="harmonic" if family == "IV" else "fixed", logistic=family == "IV")
    single, double = make(5, 8, **kw), make(5, 8, precision="double", **kw)
    assert {t.dtype for t in [*double.parameters(), *double.buffers()]} == {torch.float64}
    fixed = 10000.0 ** (-torch.arange(4, dtype=torch.float64) / 4)
    if family != "time2fun":
        torch.testing.assert_close(double.omega_fixed, fixed, rtol=1e-15, atol=0)
        torch.testing.assert_close(single.omega_fixed, fixed_frequencies(8), rtol=0, atol=0)    # float32 unchanged
    if family == "III":
        torch.testing.assert_close(double.omega1.weight[2], fixed, rtol=1e-15, atol=0)
    if family == "IV":
        harmonic = math.pi * (1 + torch.arange(4, dtype=torch.float64)) / (2 * 60.0)
        torch.testing.assert_close(double.omega2.weight[0], harmonic, rtol=1e-15, atol=0)
        torch.testing.assert_close(harmonic_frequencies(8, 60.0, dtype=torch.float64), harmonic, rtol=1e-15, atol=0)
        assert double.step_rate.weight[0, 0].item() == math.log(STEP_RATE_INIT)
    if family == "time2fun":
        torch.testing.assert_close(double.omega, torch.cat([fixed, fixed]), rtol=1e-15, atol=0)


@pytest.mark.parametrize("family", ["II", "sliced"])
def test_a_double_model_draws_its_start_in_float64(family, make):
    """precision="double" drew the static parts in float32 and cast them: every initial value was a float32 one.
    They are drawn in float64 now, as torch.nn.init draws a float64 parameter; a float32 model's draw is unchanged
    (the same numbers from the same seed, and the generator left where it was)."""
    V, D, n = 5, 8, (3 if family == "sliced" else 1)
    double = make(V, D, family=family, n_slices=3, precision="double", seed=7)
    base = double.base.weight.detach()
    assert base.dtype == torch.float64 and bool((base.float().double() != base).any())
    assert bool((base.abs() <= 0.5 / D).all())
    drawn = (torch.rand(V * n, D, generator=torch.Generator().manual_seed(7), dtype=torch.float64) - 0.5) / D
    torch.testing.assert_close(base, drawn[:V].repeat(n, 1), rtol=0, atol=0)
    g, ref = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    single = Word2Fun(dataclasses.replace(double.config, precision="single"), generator=g)
    old = (torch.rand(V * n, D, generator=ref) - 0.5) / D                    # the float32 draw as it always was
    assert torch.equal(single.base.weight.detach(), old[:V].repeat(n, 1))
    assert torch.equal(g.get_state(), ref.get_state())
