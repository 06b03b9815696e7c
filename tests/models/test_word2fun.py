import math

import numpy as np
import pytest
import torch

from qpnlp.data.synthetic_drift import DriftSpec, generate_drift_corpus
from qpnlp.data.timestamped import Vocabulary, write_tsv
from qpnlp.evaluation.drift import DriftGrid, evaluate_grid
from qpnlp.models.word2fun import (
    FAMILIES, TimeScale, TrainConfig, Word2Fun, Word2FunEmbeddings, centre_sgd_step, fixed_frequencies,
    harmonic_frequencies, roughness, sgd_step, train_word2fun, word2fun_loss,
)

torch.set_num_threads(1)
TS = TimeScale(1900.0, 2000.0, 60.0)


def randomise(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return m


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


@pytest.mark.parametrize("family", FAMILIES)
def test_family_values_match_table_4_1(family):
    V, D = 7, 6
    m = randomise(Word2Fun(V, D, family=family, time_scale=TS, n_slices=4))
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


def test_initialisation_starts_static_and_compass_zero():
    m = Word2Fun(50, 10, family="IV", time_scale=TS, frequency_init="harmonic")
    a = m.vectors(torch.arange(50), torch.full((50,), 1900.0))
    b = m.vectors(torch.arange(50), torch.full((50,), 1990.0))
    assert torch.equal(a, b) and a.abs().max() <= 0.5 / 10
    assert (m.compass.weight == 0).all()
    assert torch.allclose(m.omega1.weight[3], harmonic_frequencies(10, 60.0))
    assert torch.allclose(Word2Fun(5, 10, family="III", time_scale=TS).omega2.weight[0], fixed_frequencies(10))


def test_loss_matches_thesis_formula():
    g = torch.Generator().manual_seed(0)
    f, hp, hn = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g), torch.randn(4, 5, 3, generator=g)
    ref = -(torch.log(torch.sigmoid((f * hp).sum(-1))) + torch.log(torch.sigmoid(-(hn @ f[:, :, None])[..., 0])).mean(-1))
    assert torch.allclose(word2fun_loss(f, hp, hn, "none"), ref, atol=1e-6)
    shared = torch.randn(5, 3, generator=g)
    per_pair = word2fun_loss(f, hp, shared.expand(4, 5, 3), "sum")
    assert torch.allclose(word2fun_loss(f, hp, shared, "sum"), per_pair, atol=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("frozen", [False, True])
def test_sgd_step_equals_autograd_sgd(family, frozen):
    V, D, B = 9, 6, 5
    m = randomise(Word2Fun(V, D, family=family, time_scale=TS, n_slices=3, freeze_compass=frozen), seed=1)
    ref = randomise(Word2Fun(V, D, family=family, time_scale=TS, n_slices=3, freeze_compass=frozen), seed=1)
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
        assert torch.equal(m.compass.weight, randomise(Word2Fun(V, D, family=family, time_scale=TS, n_slices=3), 1).compass.weight)


@pytest.mark.parametrize("family", ["II", "III", "IV"])
def test_roughness_penalty_step_equals_autograd_sgd(family):
    """The step with ``roughness_penalty`` is SGD on the summed loss plus lambda * rho(u) per centre token."""
    V, D, lam, lr = 9, 6, 0.01, 0.1
    m = randomise(Word2Fun(V, D, family=family, time_scale=TS), seed=2)
    ref = randomise(Word2Fun(V, D, family=family, time_scale=TS), seed=2)
    words, times = torch.tensor([2, 7, 2, 0]), torch.tensor([1910.0, 1950.0, 1990.0, 1910.0])
    pc, ctx, neg = torch.tensor([0, 0, 1, 2, 3]), torch.tensor([1, 4, 3, 8, 5]), torch.tensor([3, 6, 6])
    centre_sgd_step(m, words, times, pc, ctx, neg, lr, roughness_penalty=lam)
    tau = TS.normalise(times)
    rows = {k: w[i] for k, (w, i) in ref.tables(words, tau).items()}
    f = ref.function(rows, tau)
    loss = word2fun_loss(f[pc], ref.compass(ctx), ref.compass(neg), "sum") + lam * roughness(ref, rows).sum()
    named = [(n, p) for n, p in ref.named_parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, [p for _, p in named])
    with torch.no_grad():
        for (n, p), gr in zip(named, grads):
            p -= lr * {"omega1.weight": 1 / 60, "omega2.weight": 1 / 60}.get(n, 1.0) * gr
    for (n, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        assert torch.allclose(p, q, atol=1e-5), n


def test_roughness_is_the_mean_squared_speed():
    """rho = mean over the span of |df/ds|^2 (s = fraction of the span) for whole half-periods, any time scale."""
    for scale in (30.0, 60.0):
        ts = TimeScale(1900.0, 2000.0, scale)
        m = randomise(Word2Fun(3, 8, family="IV", time_scale=ts, frequency_init="harmonic"), seed=3)
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
        roughness(Word2Fun(3, 4, family="linear", time_scale=TS), {})


@pytest.mark.parametrize("family", FAMILIES)
def test_function_vjp_matches_autograd(family):
    m = randomise(Word2Fun(7, 6, family=family, time_scale=TS, n_slices=3), seed=4)
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


@pytest.mark.parametrize("family", ["static", "sliced", "linear", "time2fun", "IV"])
@pytest.mark.parametrize("shared", [False, True])
def test_centre_step_equals_the_step_on_the_expanded_pairs(family, shared):
    """Grouping pairs by centre token (f computed once per token) is the same SGD step on the same summed loss."""
    V, D = 9, 6
    a = randomise(Word2Fun(V, D, family=family, time_scale=TS, n_slices=3), seed=5)
    b = randomise(Word2Fun(V, D, family=family, time_scale=TS, n_slices=3), seed=5)
    words, times = torch.tensor([2, 7, 2, 0]), torch.tensor([1910.0, 1950.0, 1990.0, 1910.0])
    pc = torch.tensor([0, 0, 0, 1, 2, 2, 3])
    ctx = torch.tensor([1, 4, 1, 3, 8, 0, 5])
    neg = torch.tensor([3, 6, 6]) if shared else torch.randint(0, V, (7, 3), generator=torch.Generator().manual_seed(1))
    la = centre_sgd_step(a, words, times, pc, ctx, neg, 0.05)
    lb = sgd_step(b, words[pc], ctx, neg, times[pc], 0.05)
    assert la == pytest.approx(lb, rel=1e-5)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.allclose(p, q, atol=1e-5), n


def test_hogwild_workers_train():
    corpus, truth = tiny_drift()
    vocab = Vocabulary.build(corpus, min_count=3)
    enc = corpus.encode(vocab)
    m = Word2Fun(len(vocab), 12, family="IV", time_scale=TimeScale(*corpus.span), frequency_init="harmonic", max_periods=2)
    before = torch.get_num_threads()
    st = train_word2fun(m, enc.tokens, enc.doc_ids, enc.times, vocab.counts,
                        TrainConfig(epochs=2, negatives=16, shared_negatives=True, batch_size=1024, workers=2))
    assert torch.get_num_threads() == before
    assert st.epoch_loss[-1] < st.epoch_loss[0] and st.pairs > 0 and np.isfinite(st.epoch_loss).all()
    assert Word2Fun.from_config(m.config()).max_periods == 2.0


def test_indicators_on_hand_set_parameters():
    m = Word2Fun(2, 4, family="III", time_scale=TimeScale(0.0, 60.0, 60.0))
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


def test_checkpoint_round_trip(tmp_path):
    m = randomise(Word2Fun(6, 4, family="IV", time_scale=TS), seed=2)
    e = Word2FunEmbeddings(m, list("abcdef"), np.arange(6))
    e.save(tmp_path / "ck")
    assert (tmp_path / "ck" / "weights.safetensors").exists()
    back = Word2FunEmbeddings.load(tmp_path / "ck")
    assert back.words == e.words and back.counts.tolist() == list(range(6))
    assert back.model.time_scale == TS and back.model.family == "IV"
    assert torch.equal(back.grid(["a", "f"], [1900, 1950.5]), e.grid(["a", "f"], [1900, 1950.5]))


def test_queries_and_npz_export(tmp_path):
    m = randomise(Word2Fun(5, 4, family="II", time_scale=TS), seed=3)
    e = Word2FunEmbeddings(m, ["a", "b", "c", "d", "e"])
    v = e.vector("c", 1950)
    assert torch.allclose(v, m.vectors(torch.tensor(2), torch.tensor(1950.0)))
    nn = e.nearest("c", 1950, k=2)
    sims = torch.nn.functional.cosine_similarity(e.grid(list("abde"), [1950])[0], v[None])
    assert [w for w, _ in nn] == [list("abde")[i] for i in sims.argsort(descending=True)[:2]]
    s = e.similarity_over_time("a", "b", [1900, 1950])
    assert s.shape == (2,) and abs(s[1].item() - torch.nn.functional.cosine_similarity(e.vector("a", 1950), e.vector("b", 1950), 0).item()) < 1e-5
    assert abs(e.change_degree("a", (1900, 1900), (1900, 1900))) < 1e-6
    e.export_npz(tmp_path / "g.npz", ["a", "e"], [1900, 1901, 1902])
    z = np.load(tmp_path / "g.npz")
    assert z["E"].shape == (3, 2, 4) and z["words"].tolist() == ["a", "e"] and z["years"].tolist() == [1900, 1901, 1902]
    with pytest.raises(KeyError, match="zz"):
        e.vector("zz", 1900)


def tiny_drift():
    spec = DriftSpec(n_years=30, n_tokens=120_000, n_topics=5, words_per_topic=15, n_background=30, n_drift=6,
                     n_stable=4, n_trap=2, rate=40.0, trap_rate_start=4.0, strength_range=(0.7, 1.0),
                     gradual_fraction=0.0, seed=5)
    return generate_drift_corpus(spec)


def test_end_to_end_drift_recovery_tiny():
    corpus, truth = tiny_drift()
    vocab = Vocabulary.build(corpus, min_count=3)
    enc = corpus.encode(vocab)
    m = Word2Fun(len(vocab), 20, family="IV", time_scale=TimeScale(*corpus.span), frequency_init="harmonic")
    st = train_word2fun(m, enc.tokens, enc.doc_ids, enc.times, vocab.counts,
                        TrainConfig(epochs=3, negatives=32, shared_negatives=True, batch_size=2048))
    assert st.epoch_loss[-1] < st.epoch_loss[0] and st.tokens_per_s > 0
    emb = Word2FunEmbeddings(m, vocab.words, vocab.counts)
    words = list(truth.words) + [w for tw in truth.topic_words for w in tw]
    r = evaluate_grid(DriftGrid(emb.grid(words, truth.years), words, truth.years), truth)
    assert r["auc"] >= 0.8  # drift words change more than stable and trap words
    assert r["acc_before"] >= 0.8 and r["acc_after"] >= 0.6
    assert r["change_year_mae"] < 8


def test_cli_writes_report_checkpoint_and_npz(tmp_path):
    from qpnlp.commands.word2fun import register, run
    import argparse
    import json

    corpus, truth = tiny_drift()
    write_tsv(corpus, tmp_path / "c.tsv")
    parser = argparse.ArgumentParser()
    root = parser.add_subparsers(dest="verb")
    train = root.add_parser("train").add_subparsers(dest="model")
    register({"root": root, "train": train})
    args = parser.parse_args(["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--dim", "8", "--epochs", "1",
                              "--words", "drift00,stable00,nope", "--eras", "3", "--out", str(tmp_path / "ck"),
                              "--report", str(tmp_path / "r.json"), "--export-npz", str(tmp_path / "g.npz"),
                              "--npz-words", "10", "--no-progress", "--compass", "frozen", "--compass-epochs", "1",
                              "--roughness-penalty", "1e-4"])
    assert args.func(args) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert len(rep["nearest"]["drift00"]) == 3 and len(rep["nearest"]["drift00"][0]["nearest"]) == 8
    assert rep["training"]["tokens_per_s"] > 0 and rep["model"]["freeze_compass"] is True
    z = np.load(tmp_path / "g.npz")
    assert z["E"].shape == (30, 12, 8) and "drift00" in z["words"].tolist()
    back = Word2FunEmbeddings.load(tmp_path / "ck")
    assert back.model.family == "IV"


def test_roughness_penalty_smooths_the_trained_functions():
    corpus, _ = tiny_drift()
    vocab = Vocabulary.build(corpus, min_count=3)
    enc = corpus.encode(vocab)
    ts = TimeScale(*corpus.span, 30.0)
    rho = []
    for lam in (0.0, 5e-3):
        m = Word2Fun(len(vocab), 12, family="IV", time_scale=ts, frequency_init="harmonic", max_periods=3, seed=1)
        train_word2fun(m, enc.tokens, enc.doc_ids, enc.times, vocab.counts,
                       TrainConfig(epochs=2, negatives=16, shared_negatives=True, batch_size=2048, seed=1,
                                   roughness_penalty=lam))
        ids = torch.arange(len(vocab))
        rho.append(roughness(m, {k: w[i] for k, (w, i) in m.tables(ids, torch.zeros(len(vocab))).items()}).mean().item())
    assert 0 < rho[1] < 0.5 * rho[0]
    with pytest.raises(ValueError, match="sinusoidal"):
        train_word2fun(Word2Fun(len(vocab), 4, family="linear", time_scale=ts), enc.tokens, enc.doc_ids, enc.times,
                       vocab.counts, TrainConfig(epochs=1, roughness_penalty=1e-3))


@pytest.mark.parametrize("bad", [dict(lr=0.0), dict(epochs=0), dict(negatives=0), dict(workers=0),
                                 dict(sample=-1e-3), dict(roughness_penalty=-1.0)])
def test_bad_train_config_is_rejected(bad):
    with pytest.raises(ValueError, match="must be"):
        TrainConfig(**bad)
