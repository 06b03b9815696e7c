"""CNM: matching scores, padding invariance, ablation switches, checkpoints."""

import pytest
import torch

from qpnlp.hilbert import outer
from qpnlp.measurement import born_probabilities
from qpnlp.models import CNM, CNMConfig, CNMReal, CNMRealConfig, Model
from qpnlp.nn import local_mixture_density
from qpnlp.testing import assert_allclose, assert_probabilities, default_atol
from qpnlp.training import load_checkpoint, save_checkpoint


def _model(cdtype=torch.complex64, device="cpu", real=False, **kw):
    klass, config_class = (CNMReal, CNMRealConfig) if real else (CNM, CNMConfig)
    config = config_class(**{"num_words": 30, "dim": 6, "num_measurements": 5,
                             "complex128": cdtype == torch.complex128, **kw})
    return klass(config, generator=torch.Generator().manual_seed(0)).to(device).eval()


def _batch(device, rows):
    ids = torch.zeros(len(rows), max(map(len, rows)), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
    return ids.to(device), (ids != 0).to(device)


def test_identical_sentences_have_cosine_one(cdtype, device):
    model = _model(cdtype, device)
    q = _batch(device, [[2, 3, 4, 5], [7, 8], [9]])
    scores = model(*q, *q)
    assert_allclose(scores, torch.ones(3, dtype=scores.dtype, device=device), atol=default_atol(cdtype, 20))
    other = model(*q, *_batch(device, [[10, 11, 12], [13, 14, 15], [16, 17]]))
    assert bool((other < 1 - 1e-3).all())


def test_representation_is_the_pooled_local_mixture(cdtype, device):
    model = _model(cdtype, device, windows=[1, 3])
    ids, mask = _batch(device, [[2, 3, 4, 5, 6], [7, 8]])
    x = model.encode(ids, mask)
    assert x.shape == (2, 2 * 5)
    states, norms = model.embedding(ids)
    rho = local_mixture_density(states, norms, mask, (1, 3))                  # (B, W, L, d, d)
    v = model.measurement.vectors()
    dense = torch.einsum("kd,bwlde,ke->bwlk", v.conj(), rho, v).real        # Tr(rho |v><v|)
    expected = dense.masked_fill(~mask[:, None, :, None], -1.0).amax(2).flatten(1)
    assert_allclose(x, expected, atol=default_atol(cdtype, 36))
    assert_probabilities(x)


def test_padding_does_not_change_scores(cdtype, device):
    model = _model(cdtype, device)
    short = model(*_batch(device, [[2, 3, 4]]), *_batch(device, [[5, 6]]))
    q_ids, q_mask = _batch(device, [[2, 3, 4], [9, 9, 9, 9, 9, 9, 9]])
    a_ids, a_mask = _batch(device, [[5, 6], [9, 9, 9, 9, 9, 9, 9, 9, 9]])
    long = model(q_ids, q_mask, a_ids, a_mask)
    assert_allclose(long[:1], short, atol=default_atol(cdtype, 20))


def test_mean_pooling_switch(device):
    ids, mask = _batch(device, [[2, 3, 4, 5]])
    xmax = _model(device=device).encode(ids, mask)
    xmean = _model(device=device, pooling="mean").encode(ids, mask)
    assert bool((xmean <= xmax + 1e-6).all()) and not torch.allclose(xmean, xmax)


def test_real_ablation_has_real_vectors_of_double_size(device):
    model = _model(device=device, real=True, measurement_init="identity")
    params = dict(model.named_parameters())
    assert params["real_embedding.weight"].shape == (30, 12) and params["real_measurement"].shape == (5, 12)
    assert not any(p.is_complex() for p in model.parameters())
    assert not hasattr(model, "embedding") and not hasattr(model, "measurement")
    ids, mask = _batch(device, [[2, 3, 4]])
    x = model.encode(ids, mask)
    assert x.shape == (1, 20) and x.dtype == torch.float32
    # identity init: window-1 probabilities are squared coordinates of the unit real word vectors
    vec = torch.nn.functional.normalize(model.real_embedding.weight[2:5], dim=-1)
    assert_allclose(model.probabilities(ids, mask)[0, 0], vec[:, :5].square())


@pytest.mark.parametrize("k", [5, 12])
def test_real_ablation_orthogonal_init_gives_orthonormal_measurements(k):
    # measurement_init="orthogonal" was silently the "random" init (correlated Gaussian rows) for CNM-Real
    model = _model(real=True, measurement_init="orthogonal", num_measurements=k)
    v = torch.nn.functional.normalize(model.real_measurement.detach(), dim=-1)
    assert_allclose(v @ v.T, torch.eye(k), atol=1e-5)
    random = _model(real=True, measurement_init="random", num_measurements=k).real_measurement.detach()
    assert not torch.allclose(v, torch.nn.functional.normalize(random, dim=-1), atol=1e-3)


def test_complex_default_has_complex_vectors(device):
    model = _model(device=device, measurement_init="identity")
    assert model.measurement.vectors().is_complex() and model.embedding.phase.weight.shape == (30, 6)
    # the thesis' setting: measurements start as orthogonal real one-hot vectors
    assert_allclose(model.measurement.vectors(), torch.eye(6, dtype=torch.complex64, device=device)[:5])


def test_global_mixture_ablation_is_one_mixture_per_sentence(cdtype, device):
    model = _model(cdtype, device, mixture="global")
    ids, mask = _batch(device, [[2, 3, 4, 5], [6, 7]])
    x = model.encode(ids, mask)
    assert x.shape == (2, 5)
    states, norms = model.embedding(ids)
    weights = torch.softmax(norms.masked_fill(~mask, float("-inf")), -1)
    assert_allclose(x, born_probabilities(states, weights, model.measurement.vectors()),
                    atol=default_atol(cdtype, 10))


def test_trace_ablation_is_the_trace_inner_product(cdtype, device):
    model = _model(cdtype, device, head="trace", mixture="global")
    assert not hasattr(model, "measurement")
    q, a = _batch(device, [[2, 3, 4]]), _batch(device, [[5, 6, 7, 8]])
    (qs, qn), (as_, an) = model.embedding(q[0]), model.embedding(a[0])
    rq = (torch.softmax(qn.masked_fill(~q[1], float("-inf")), -1)[..., None, None].to(qs.dtype) * outer(qs)).sum(1)
    ra = (torch.softmax(an.masked_fill(~a[1], float("-inf")), -1)[..., None, None].to(as_.dtype) * outer(as_)).sum(1)
    expected = torch.einsum("bij,bji->b", rq, ra).real
    assert_allclose(model(*q, *a), expected, atol=default_atol(cdtype, 36))


@pytest.mark.parametrize("mixture", ["global", "local"])
def test_trace_ablation_trains(cdtype, device, mixture):
    """Its backward hands the word-state lookup a conjugated gradient (a view_as_real error until mended)."""
    model = _model(cdtype, device, head="trace", mixture=mixture).train()
    q, a = _batch(device, [[2, 3, 4, 0]]), _batch(device, [[5, 6, 7, 8]])
    model(*q, *a).sum().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g.to_dense()).all() for g in grads)
    assert any(float(g.to_dense().abs().sum()) > 0 for g in grads)


def test_local_trace_ablation_averages_the_local_mixtures(cdtype, device):
    model = _model(cdtype, device, head="trace", windows=[2])
    q, a = _batch(device, [[2, 3, 4, 0]]), _batch(device, [[5, 6, 7, 8]])
    rhos = []
    for ids, mask in (q, a):
        states, norms = model.embedding(ids)
        rho = local_mixture_density(states, norms, mask, (2,))[:, 0]
        rhos.append(rho.sum(1) / mask.sum(-1)[:, None, None])
    expected = torch.einsum("bij,bji->b", *rhos).real
    assert_allclose(model(*q, *a), expected, atol=default_atol(cdtype, 36))
    one_word = _batch(device, [[9]])
    assert_allclose(model(*one_word, *one_word), torch.ones(1, dtype=expected.dtype, device=device),
                    atol=default_atol(cdtype, 6))                                   # a pure state: Tr(rho^2) = 1


def test_dropout_keeps_unit_states_and_is_off_in_eval():
    model = _model(dropout=0.5).train()
    ids, mask = _batch("cpu", [[2, 3, 4, 5]])
    torch.manual_seed(0)
    states, _ = model.states(ids, mask)
    assert_allclose(torch.linalg.vector_norm(states, dim=-1), torch.ones(1, 4))
    assert not torch.allclose(states, model.embedding(ids)[0])
    model.eval()
    assert torch.equal(model.states(ids, mask)[0], model.embedding(ids)[0])


def test_gradients_reach_embeddings_and_measurements():
    model = _model().train()
    q, a = _batch("cpu", [[2, 3, 4]]), _batch("cpu", [[5, 6, 2]])
    model(*q, *a).sum().backward()
    assert model.embedding.phase.weight.grad is not None
    assert model.measurement.weight.grad is not None and float(model.measurement.weight.grad.abs().sum()) > 0


@pytest.mark.parametrize("bad, match", [
    (dict(windows=[0, 2]), "windows"), (dict(windows=[2, 2]), "windows"), (dict(pooling="min"), "pooling"),
    (dict(mixture="x"), "mixture"), (dict(head="x"), "head"), (dict(num_measurements=7, measurement_init="identity"), "identity"),
    (dict(dropout=1.0), "dropout"), (dict(weighting="idf"), "weighting"),
])
def test_bad_config_is_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        CNMConfig(num_words=30, dim=6, **{"num_measurements": 5, **bad})


def test_empty_sentence_is_rejected():
    model = _model()
    ids = torch.tensor([[2, 3], [0, 0]])
    with pytest.raises(ValueError, match="empty sentence"):
        model(ids, ids != 0, ids, ids != 0)


@pytest.mark.parametrize("options", [{}, dict(real=True), dict(mixture="global", head="trace")])
def test_checkpoint_round_trip(tmp_path, options):
    model = _model(**options)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    path = save_checkpoint(tmp_path / "cnm", model, vocabulary=None, metadata=dict(dataset="wikiqa"))
    checkpoint = load_checkpoint(path)
    loaded = checkpoint.model
    assert checkpoint.name == ("cnm_real" if options.get("real") else "cnm") and type(loaded) is type(model)
    assert checkpoint.metadata == dict(dataset="wikiqa") and isinstance(Model.from_pretrained(path), CNM)
    q, a = _batch("cpu", [[2, 3, 4], [7, 8, 9]]), _batch("cpu", [[5, 6], [2, 3, 10]])
    assert torch.equal(loaded(*q, *a), model(*q, *a))


@pytest.mark.parametrize("pooling", ["max", "mean"])
def test_symmetric_windows_score_a_pair_as_its_reverse(pooling, cdtype, device):
    """window_padding="both": a sentence and its reverse have one representation; the default tells them apart."""
    q, a = [2, 3, 4, 5, 6], [7, 8, 9]
    reps = {}
    for padding in ("end", "both"):
        model = _model(cdtype, device, window_padding=padding, pooling=pooling, windows=[1, 2, 3])
        forward, backward = _batch(device, [q, a]), _batch(device, [q[::-1], a[::-1]])
        reps[padding] = model.encode(*forward), model.encode(*backward)
        if padding == "both":
            assert_allclose(model(*_batch(device, [q]), *_batch(device, [a])),
                            model(*_batch(device, [q[::-1]]), *_batch(device, [a[::-1]])), atol=default_atol(cdtype, 20))
    assert_allclose(*reps["both"], atol=default_atol(cdtype, 20))
    assert float((reps["end"][0] - reps["end"][1]).detach().abs().max()) > 1e-4


@pytest.mark.parametrize("head", ["measurement", "trace"])
def test_symmetric_windows_ignore_padding(head, cdtype, device):
    model = _model(cdtype, device, window_padding="both", head=head)
    q, a = _batch(device, [[2, 3, 4, 5], [7, 8]]), _batch(device, [[10, 11, 12], [13, 14, 15]])
    left = tuple(torch.cat([torch.zeros_like(t[:, :2]), t], 1) for t in q)
    assert_allclose(model(*left, *a), model(*q, *a), atol=default_atol(cdtype, 20))


def test_povm_head_probabilities_sum_to_one_with_more_outcomes_than_dim(cdtype, device):
    model = _model(cdtype, device, measurement="povm", num_measurements=9, windows=[1, 2])
    ids, mask = _batch(device, [[2, 3, 4, 5], [7, 8]])
    probs = model.probabilities(ids, mask)                                     # (B, W, L, k)
    assert probs.shape == (2, 2, 4, 9)
    assert_probabilities(probs[mask.unsqueeze(1).expand(2, 2, 4)].detach(), complete=True,
                         atol=default_atol(cdtype, 20))
    assert model(ids, mask, ids, mask).shape == (2,)
    with pytest.raises(ValueError, match="measurement must be 'projective'"):
        CNMRealConfig(num_words=30, measurement="povm")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_cnm_real_checks_its_pretrained_vectors(bad):
    """CNM-Real copied NaN/inf pretrained vectors into its table unchecked; the complex tables refused them."""
    pretrained = torch.randn(30, 4)
    pretrained[3, 1] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        CNMReal(CNMRealConfig(num_words=30, dim=4), pretrained=pretrained)
