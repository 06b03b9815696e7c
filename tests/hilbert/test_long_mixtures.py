"""Mixtures of a long document's words (1e5-1e6 members) in float32: weights and Born probabilities.

torch's matrix-vector product and softmax add the n terms one after the other (per SIMD lane) on the CPU, so in
float32 their error grew as n eps (a relative 1e-4 at 1e5 members); the sums over members are now torch's
reduction beyond ``SEQUENTIAL_MAX_TERMS`` and the same operations as before below it.
"""

import pytest
import torch

from qpnlp.hilbert import masked_softmax
from qpnlp.hilbert._mixture import SEQUENTIAL_MAX_TERMS, weighted_sum
from qpnlp.measurement import born_probabilities, povm_probabilities
from qpnlp.measurement._born import squared_overlaps
from qpnlp.models import QPDN, QPDNConfig

N = 100_000


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _long_mixture(n=N, d=4):
    """Unit complex64 states (1, n, d) and softmax weights (1, n) of spread-out scores."""
    states = torch.randn(1, n, d, dtype=torch.complex64, generator=_gen(0))
    states = states / states.norm(dim=-1, keepdim=True)
    return states, masked_softmax(3 * torch.randn(1, n, generator=_gen(1)))


def _relative_error(value, reference):
    return float(((value.double() - reference) / reference).abs().max())


def test_born_probabilities_of_a_long_float32_mixture_agree_with_float64_of_the_same_inputs():
    states, weights = _long_mixture()
    vectors = torch.linalg.qr(torch.randn(4, 4, dtype=torch.complex128, generator=_gen(2)))[0][:2]
    p = born_probabilities(states, weights, vectors.to(torch.complex64), validate=False)
    per_state = squared_overlaps(states.to(torch.complex128), vectors)                  # (1, n, 2), exact inputs
    reference = (weights.double().unsqueeze(-1) * per_state).sum(-2)
    assert _relative_error(p, reference) < 1e-6         # a matrix product over the members: 1.2e-4


def test_povm_probabilities_of_a_long_float32_mixture_agree_with_float64_of_the_same_inputs():
    states, weights = _long_mixture()
    vectors = (torch.eye(4, dtype=torch.complex64) * 0.5 ** 0.5).reshape(2, 2, 4)   # two rank-2 effects
    p = povm_probabilities(states, weights, vectors, validate=False)
    per_state = squared_overlaps(states.to(torch.complex128), vectors.reshape(4, 4).to(torch.complex128))
    reference = (weights.double().unsqueeze(-1) * per_state.unflatten(-1, (2, 2)).sum(-1)).sum(-2)
    assert _relative_error(p, reference) < 1e-6


@pytest.mark.parametrize("n", [1, 7, 300, SEQUENTIAL_MAX_TERMS])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weighted_sum_is_the_matrix_product_up_to_the_threshold(n, dtype):
    weights = torch.rand(3, n, dtype=dtype, generator=_gen(3))
    values = torch.rand(3, n, 5, dtype=dtype, generator=_gen(4))
    assert torch.equal(weighted_sum(weights, values), (weights.unsqueeze(-2) @ values).squeeze(-2))


def test_weighted_sum_broadcasts_batch_dims_beyond_the_threshold():
    n = SEQUENTIAL_MAX_TERMS + 1
    weights, values = torch.rand(2, n, dtype=torch.float64), torch.rand(3, 2, n, 4, dtype=torch.float64)
    torch.testing.assert_close(weighted_sum(weights, values), (weights.unsqueeze(-2) @ values).squeeze(-2))


def test_softmax_weights_of_a_million_float32_scores_sum_to_one():
    scores = 3 * torch.randn(2, 1_000_000, generator=_gen(5))
    mask = torch.ones_like(scores, dtype=torch.bool)
    mask[1, ::3] = False
    for weights in (masked_softmax(scores), masked_softmax(scores, mask)):
        assert float((weights.double().sum(-1) - 1).abs().max()) < 1e-6      # torch.softmax: 7e-5
    assert torch.equal(masked_softmax(scores, mask)[~mask], torch.zeros(int((~mask).sum())))


def test_long_softmax_values_and_gradient_are_torch_softmax_s():
    scores = (3 * torch.randn(2, SEQUENTIAL_MAX_TERMS + 10, dtype=torch.float64, generator=_gen(6)))
    mask = torch.rand(scores.shape, generator=_gen(7)) < 0.8
    cotangent = torch.randn(scores.shape, dtype=torch.float64, generator=_gen(8))
    ours, theirs = scores.clone().requires_grad_(), scores.clone().requires_grad_()
    weights = masked_softmax(ours, mask)
    expected = torch.softmax(theirs.masked_fill(~mask, float("-inf")), -1)
    torch.testing.assert_close(weights, expected)
    (weights * cotangent).sum().backward()
    (expected * cotangent).sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad)


def test_qpdn_features_of_a_long_document_agree_with_float64_born_probabilities():
    model = QPDN(QPDNConfig(num_words=30, num_classes=2, dim=8, num_measurements=5, weighting="trainable"),
                 pretrained=torch.randn(30, 8, generator=_gen(9)), generator=_gen(10))
    with torch.no_grad():
        model.weighting.table.weight.normal_(0, 3, generator=_gen(11))              # spread-out word weights
    ids = torch.randint(1, 30, (1, N), generator=_gen(12))
    mask = torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        features = model.features(ids, mask)
        states, weights = model.mixture(ids, mask)
        vectors = model.measurement.vectors(validate=False)
        per_state = squared_overlaps(states.to(torch.complex128), vectors.to(torch.complex128))
    reference = (weights.double().unsqueeze(-1) * per_state).sum(-2)
    assert _relative_error(features, reference) < 1e-6
