"""Complex word embedding, word weighting and QPDN."""

import math

import pytest
import torch

from qpnlp.hilbert import Ensemble
from qpnlp.models import QPDN, QPDNConfig, RealBagOfWords
from qpnlp.nn import ComplexWordEmbedding, WordWeighting
from qpnlp.testing import assert_allclose, assert_density_matrix, assert_probabilities, assert_pure_state


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


class TestComplexWordEmbedding:
    def test_states_are_unit_and_padding_is_zero(self):
        emb = ComplexWordEmbedding(12, 6, generator=_gen())
        states, norms = (t.detach() for t in emb(torch.tensor([[2, 5, 0, 0]])))
        assert_pure_state(states[0, :2])
        assert float(states[0, 2:].abs().max()) == 0.0 and float(norms[0, 2:].abs().max()) == 0.0
        assert states.dtype == torch.complex64

    def test_polar_form_matches_tables(self):
        pretrained = torch.randn(5, 4, generator=_gen(1))
        emb = ComplexWordEmbedding(5, 4, pretrained=pretrained, generator=_gen())
        states, norms = (t.detach() for t in emb(torch.tensor([3])))
        r, phi = pretrained[3], emb.phase.weight[3].detach()
        expected = (r / r.norm()) * torch.exp(1j * phi)
        assert_allclose(states[0], expected.to(torch.complex64))
        assert math.isclose(float(norms[0]), float(r.norm()), rel_tol=1e-6)
        assert float(emb.phase.weight.detach().abs().max()) <= math.pi

    def test_sign_phase_init_reproduces_the_real_vector(self):
        pretrained = torch.randn(5, 4, generator=_gen(2), dtype=torch.float64)
        emb = ComplexWordEmbedding(5, 4, pretrained=pretrained, phase_init="sign", dtype=torch.float64)
        states, _ = emb(torch.arange(2, 5))
        assert states.dtype == torch.complex128
        assert_allclose(states.detach(), (pretrained[2:] / pretrained[2:].norm(dim=-1, keepdim=True)).to(torch.complex128))

    def test_unit_amplitudes_keep_the_states_and_make_the_norms_one(self):
        pretrained = torch.randn(6, 4, generator=_gen(3), dtype=torch.float64) * 5
        pretrained[4] = 0.0                                      # a zero row (e.g. no pretrained vector) stays zero
        raw = ComplexWordEmbedding(6, 4, pretrained=pretrained, phase_init="sign", dtype=torch.float64)
        unit = ComplexWordEmbedding(6, 4, pretrained=pretrained, phase_init="sign", unit_amplitudes=True,
                                    dtype=torch.float64)
        ids = torch.tensor([1, 2, 3, 5])
        (s_raw, n_raw), (s_unit, n_unit) = (tuple(t.detach() for t in e(ids)) for e in (raw, unit))
        assert_allclose(s_unit, s_raw)
        assert_allclose(n_unit, torch.ones(4, dtype=torch.float64))
        assert not torch.allclose(n_raw, n_unit)
        assert float(unit.amplitude.weight.detach()[4].abs().max()) == 0.0
        model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=4, num_measurements=3, unit_amplitudes=True),
                     pretrained=pretrained.float())
        assert_allclose(model.embedding(ids)[1].detach(), torch.ones(4))

    def test_sparse_gradients_touch_only_batch_rows(self):
        emb = ComplexWordEmbedding(100, 4, generator=_gen())
        states, norms = emb(torch.tensor([[3, 7, 7, 0]]))
        (states.abs().sum() + norms.sum()).backward()
        grad = emb.amplitude.weight.grad
        assert grad.is_sparse
        assert set(grad.coalesce().indices()[0].tolist()) <= {0, 3, 7}
        assert not torch.isnan(grad.coalesce().values()).any()

    @pytest.mark.parametrize("kwargs, error, pattern", [
        (dict(num_words=1, dim=4), ValueError, "num_words >= 2"),
        (dict(num_words=5, dim=4, phase_init="random"), ValueError, "phase_init"),
        (dict(num_words=5, dim=4, pretrained=torch.zeros(5, 3)), ValueError, r"shape \(5, 4\)"),
        (dict(num_words=5, dim=4, pretrained=torch.full((5, 4), float("nan"))), ValueError, "NaN"),
        (dict(num_words=5, dim=4, dtype=torch.complex64), TypeError, "float32 or float64"),
    ])
    def test_bad_arguments(self, kwargs, error, pattern):
        with pytest.raises(error, match=pattern):
            ComplexWordEmbedding(**kwargs)


class TestWordWeighting:
    ids = torch.tensor([[2, 3, 4, 0], [5, 0, 0, 0]])
    mask = ids != 0
    norms = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0]])

    @pytest.mark.parametrize("scheme", ["amplitude_norm", "trainable", "idf", "uniform"])
    def test_weights_are_a_distribution_over_real_words(self, scheme):
        idf = torch.linspace(1, 2, 6)
        w = WordWeighting(6, scheme, idf=idf if scheme == "idf" else None)(self.ids, self.mask, self.norms).detach()
        assert float(w[~self.mask].abs().max()) == 0.0
        assert_allclose(w.sum(-1), torch.ones(2))
        assert float(w[1, 0]) == pytest.approx(1.0)

    def test_scheme_definitions(self):
        uniform = WordWeighting(6, "uniform")(self.ids, self.mask, self.norms)
        assert_allclose(uniform[0, :3], torch.full((3,), 1 / 3))
        trainable = WordWeighting(6, "trainable")(self.ids, self.mask, self.norms)
        assert_allclose(trainable, uniform)                     # zero-initialised table
        by_norm = WordWeighting(6, "amplitude_norm")(self.ids, self.mask, self.norms)
        assert_allclose(by_norm[0, :3], torch.softmax(torch.tensor([1.0, 2.0, 3.0]), -1))
        idf = torch.tensor([0.0, 1.0, 1.0, 2.0, 1.0, 1.0])
        by_idf = WordWeighting(6, "idf", idf=idf.clamp_min(1e-6))(self.ids, self.mask, self.norms)
        assert_allclose(by_idf[0, :3], torch.tensor([0.25, 0.5, 0.25]))

    def test_errors(self):
        with pytest.raises(ValueError, match="weighting must be one of"):
            WordWeighting(6, "softmax")
        with pytest.raises(ValueError, match="needs idf"):
            WordWeighting(6, "idf")


def _model(**overrides):
    config = QPDNConfig(**{"num_words": 30, "num_classes": 3, "dim": 8, "num_measurements": 5, **overrides})
    return QPDN(config, pretrained=torch.randn(30, 8, generator=_gen(3)), generator=_gen(4),
                idf=torch.linspace(1, 2, 30) if overrides.get("weighting") == "idf" else None)


@pytest.mark.parametrize("overrides", [
    {}, dict(weighting="trainable"), dict(weighting="idf"), dict(weighting="uniform"),
    dict(complete=True), dict(train_measurements=False, orthonormal=True), dict(head="dense"),
    dict(phase_init="zero"), dict(complex128=True), dict(dropout=0.3),
])
def test_padding_does_not_change_the_output(overrides):
    model = _model(**overrides).eval()
    short = torch.tensor([[4, 9, 2]])
    padded = torch.tensor([[4, 9, 2, 0, 0]])
    a = model(short, short != 0)
    b = model(padded, padded != 0)
    assert_allclose(a, b, atol=1e-5)


def test_features_are_born_probabilities_of_the_sentence_mixture():
    model = _model(complete=True).eval()
    ids = torch.tensor([[4, 9, 2, 0], [7, 7, 1, 3]])
    q = model.features(ids, ids != 0)
    assert_probabilities(q, complete=True)
    mix = model.ensemble(ids, ids != 0)
    assert_density_matrix(mix)
    dense = model.measurement.forward_dense(mix.dense().data)
    assert_allclose(q, dense)


@pytest.mark.parametrize("overrides", [
    {}, dict(weighting="trainable"), dict(complete=True), dict(measurement="povm"), dict(complex128=True),
])
def test_born_rule_on_the_distinct_words_equals_it_on_every_position(overrides):
    """``features`` measures each distinct word once and mixes the gathered rows: the same probabilities and
    parameter gradients as the measurement of the ``(B, L, d)`` states of ``mixture`` (repeats, padding)."""
    model = _model(**overrides)
    ids = torch.tensor([[4, 9, 9, 0], [7, 4, 1, 3]])
    mask = ids != 0
    grad = torch.randn(2, model.measurement.num_outcomes, generator=_gen(6), dtype=model.classifier.weight.dtype)

    def probabilities_and_grads(features):
        model.zero_grad(set_to_none=True)
        q = features()
        q.backward(grad)
        return [q.detach()] + [p.grad.to_dense() for p in model.parameters() if p.grad is not None]

    per_position = probabilities_and_grads(lambda: model.measurement(*model.mixture(ids, mask), validate=False))
    distinct = probabilities_and_grads(lambda: model.features(ids, mask))
    assert len(distinct) == len(per_position) > 3
    for a, b in zip(per_position, distinct):
        assert_allclose(b, a, atol=1e-5)


def test_training_step_has_finite_gradients_with_padding():
    model = _model(weighting="trainable")
    ids = torch.tensor([[4, 9, 0, 0], [1, 0, 0, 0]])
    loss = torch.nn.functional.cross_entropy(model(ids, ids != 0), torch.tensor([0, 2]))
    loss.backward()
    for name, p in model.named_parameters():
        if p.grad is not None:
            g = p.grad.coalesce().values() if p.grad.is_sparse else p.grad
            assert torch.isfinite(g).all(), name


def test_bad_batches_and_configs():
    model = _model()
    with pytest.raises(ValueError, match="empty sentence"):
        ids = torch.tensor([[4, 0], [0, 0]])
        model(ids, ids != 0)
    with pytest.raises(ValueError, match="LongTensor"):
        model(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask must be a bool"):
        model(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3))
    with pytest.raises(ValueError, match="weighting"):
        QPDNConfig(num_words=5, num_classes=2, weighting="max")
    with pytest.raises(ValueError, match="unknown QPDNConfig keys"):
        QPDNConfig.from_dict(dict(num_words=5, num_classes=2, colour="red"))
    with pytest.raises(ValueError, match="num_classes"):
        QPDNConfig(num_words=5, num_classes=1)


def test_real_bag_of_words_baseline_ignores_padding():
    config = RealBagOfWords.config_class(num_words=30, num_classes=2, dim=8)
    model = RealBagOfWords(config, pretrained=torch.randn(30, 8), generator=_gen()).eval()
    assert model.embedding.weight.shape == (30, 16)
    a = model(torch.tensor([[3, 5]]), torch.tensor([[True, True]]))
    b = model(torch.tensor([[3, 5, 0]]), torch.tensor([[True, True, False]]))
    assert_allclose(a, b, atol=1e-6)


def test_qpdn_runs_on_device(device):
    model = _model().to(device)
    ids = torch.tensor([[4, 9, 2, 0]], device=device)
    assert model(ids, ids != 0).device.type == device.type


@pytest.mark.parametrize("k, rank", [(12, 0), (5, 2), (8, 1)])
def test_povm_head_gives_complete_probabilities_for_any_number_of_outcomes(k, rank):
    model = _model(measurement="povm", num_measurements=k, povm_rank=rank).eval()
    assert model.measurement.num_outcomes == k and model.measurement.rank == (rank or -(-8 // k))
    ids = torch.tensor([[4, 9, 2, 0], [7, 7, 1, 3]])
    q = model.features(ids, ids != 0)
    assert q.shape == (2, k)
    assert_probabilities(q.detach(), complete=True)
    mix = model.ensemble(ids, ids != 0)
    assert_allclose(q, model.measurement.forward_dense(mix.dense().data))
    padded = torch.tensor([[4, 9, 2, 0, 0]])
    assert_allclose(model(padded, padded != 0), model(ids[:1, :3], ids[:1, :3] != 0), atol=1e-5)


@pytest.mark.parametrize("bad, match", [
    (dict(measurement="general"), "measurement must be one of"),
    (dict(measurement="povm", num_measurements=2, povm_rank=3), "num_measurements \\* povm_rank >= dim"),
    (dict(measurement="povm", complete=True), "apply to measurement='projective'"),
    (dict(measurement="povm", head="dense"), "needs head='measurement'"),
    (dict(povm_rank=2), "povm_rank applies to measurement='povm'"),
    (dict(povm_rank=-1, measurement="povm"), "povm_rank must be >= 0"),
])
def test_povm_config_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        QPDNConfig(num_words=30, num_classes=3, dim=8, **bad)


def test_a_mask_true_at_padding_is_refused_instead_of_probabilities_summing_to_two_thirds():
    """Issue 17: padding inside the mixture gave a complete measurement probabilities summing to 0.667."""
    model = _model(complete=True, weighting="uniform").eval()
    ids = torch.tensor([[4, 9, 0]])
    with pytest.raises(ValueError, match="padding id 0"):
        model(ids, torch.ones(1, 3, dtype=torch.bool))
    assert_probabilities(model.features(ids, ids != 0).detach(), complete=True)


def test_a_word_without_a_state_is_named():
    pretrained = torch.randn(30, 8, generator=_gen(3))
    pretrained[9] = 0.0                                          # e.g. an unknown word initialised with zeros
    model = QPDN(QPDNConfig(num_words=30, num_classes=3, dim=8, num_measurements=5), pretrained=pretrained)
    ids = torch.tensor([[4, 9, 2]])
    with pytest.raises(ValueError, match=r"word id 9 \(at ids\[0, 1\]\) has a zero"):
        model(ids, ids != 0)
    model.validate = False
    assert model(ids, ids != 0).shape == (1, 3)                  # unchecked: the sub-normalised mixture


def test_real_bow_checks_its_pretrained_vectors():
    config = RealBagOfWords.config_class(num_words=30, num_classes=2, dim=8)
    with pytest.raises(ValueError, match=r"pretrained must have shape \(30, 8\); got \(8,\)"):
        RealBagOfWords(config, pretrained=torch.randn(8))          # used to broadcast one row to every word
    bad = torch.randn(30, 8)
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN or inf"):
        RealBagOfWords(config, pretrained=bad)
