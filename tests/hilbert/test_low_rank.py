"""The difference of two low-rank states through R J R^dagger (qpnlp.hilbert._low_rank): the Hilbert-Schmidt and
trace distances' analytic gradients, equal to the dense route's and never through a d x d matrix."""

import pytest
import torch
from torch.testing import assert_close

from qpnlp.hilbert import Ensemble, PureState, hilbert_schmidt_distance, random_pure_state, trace_distance
from qpnlp.hilbert import _low_rank, _overlaps


def _ensemble(states: torch.Tensor, logits: torch.Tensor) -> Ensemble:
    return Ensemble(torch.nn.functional.normalize(states, dim=-1), torch.softmax(logits, -1))


def _dense(x) -> torch.Tensor:
    return x.proj().data if isinstance(x, PureState) else x.dense().data


def _dense_distance(rho, sigma, distance=hilbert_schmidt_distance) -> torch.Tensor:
    return distance(_dense(rho), _dense(sigma))



DISTANCES = [hilbert_schmidt_distance, trace_distance]
FUNCTIONS = {hilbert_schmidt_distance: _low_rank._SquaredHilbertSchmidt, trace_distance: _low_rank._TraceDistance}


def _inputs(d: int, seed: int, repeat_a_word: bool):
    """States (5, 3, d) with logits (5, 3), and (2, d) with logits (2,); all require grad."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(5, 3, d, dtype=torch.complex128, generator=gen)
    if repeat_a_word:
        a[:, 2] = a[:, 1]                                                   # F is rank-deficient
    p = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    b = torch.randn(2, d, dtype=torch.complex128, generator=gen)
    q = torch.randn(2, dtype=torch.float64, generator=gen)
    return [t.requires_grad_() for t in (a, p, b, q)]


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("repeat_a_word", [False, True])
def test_the_functions_pass_gradcheck_with_a_repeated_word_and_broadcast_batches(distance, repeat_a_word):
    """Unnormalised states, weights as given, batch (3,) against (4, 1): the analytic backward in torch's convention
    for complex inputs, summed over broadcast dims; QR's backward is undefined at the repeated word."""
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(3, 3, 8, dtype=torch.complex128, generator=gen)
    if repeat_a_word:
        a[:, 2] = a[:, 0]
    p = torch.rand(3, 3, dtype=torch.float64, generator=gen)
    b = torch.randn(4, 1, 2, 8, dtype=torch.complex128, generator=gen)
    q = torch.rand(4, 1, 2, dtype=torch.float64, generator=gen)
    inputs = [t.requires_grad_() for t in (a, p, b, q)]
    function = FUNCTIONS[distance].apply
    assert torch.autograd.gradcheck(function, inputs)
    assert torch.autograd.gradcheck(function, (inputs[0], None, inputs[2][..., :1, :], None))     # two pure states
    if distance is hilbert_schmidt_distance:
        assert torch.autograd.gradgradcheck(function, inputs)


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("repeat_a_word", [False, True])
def test_the_distance_with_autograd_equals_the_dense_route_in_value_and_gradient(distance, repeat_a_word):
    """d = 64: with inputs that require grad the distances took the dense d x d difference; now R J R^dagger, with
    the dense route's values and gradients (complex128)."""
    a, p, b, q = _inputs(64, 2, repeat_a_word)
    pairs = {"ensembles": (lambda: _ensemble(a, p), lambda: _ensemble(b, q)),
             "pure": (lambda: PureState(torch.nn.functional.normalize(a[:, 0], dim=-1)), lambda: _ensemble(b, q))}
    for name, (rho, sigma) in pairs.items():
        value = distance(rho(), sigma())
        grads = torch.autograd.grad(value.sum(), (a, p, b, q), allow_unused=True)
        dense = _dense_distance(rho(), sigma(), distance)
        dense_grads = torch.autograd.grad(dense.sum(), (a, p, b, q), allow_unused=True)
        assert_close(value, dense, rtol=0, atol=1e-13, msg=name)
        for got, expected in zip(grads, dense_grads):
            if expected is None:
                assert got is None or not got.any(), name
            else:
                assert_close(got, expected, rtol=0, atol=1e-10, msg=name)


@pytest.mark.parametrize("distance", DISTANCES)
def test_equal_states_have_distance_of_round_off_and_gradient_zero(distance):
    a, p, _, _ = _inputs(64, 3, repeat_a_word=True)
    value = distance(_ensemble(a, p), _ensemble(a, p))
    grads = torch.autograd.grad(value.sum(), (a, p))
    assert float(value.detach().max()) < 1e-14                               # QR: round-off, not exactly 0
    assert all(not g.any() for g in grads)


@pytest.mark.parametrize("distance", DISTANCES)
def test_mixed_precision_gradients_arrive_in_each_inputs_dtype(distance):
    a, p, b, q = _inputs(64, 4, repeat_a_word=False)
    narrow_a, narrow_p = a.detach().to(torch.complex64).requires_grad_(), p.detach().float().requires_grad_()
    value = distance(_ensemble(narrow_a, narrow_p), _ensemble(b, q))
    grads = torch.autograd.grad(value.sum(), (narrow_a, narrow_p, b, q))
    assert value.dtype == torch.float64
    assert [g.dtype for g in grads] == [torch.complex64, torch.float32, torch.complex128, torch.float64]


@pytest.mark.parametrize("distance", DISTANCES)
def test_torch_func_grad_and_vmap_run_the_analytic_backward(distance):
    a, p, b, q = (t.detach() for t in _inputs(64, 5, repeat_a_word=True))

    def value(states):
        return distance(_ensemble(states, p[0]), _ensemble(b, q))

    leaf = a[0].clone().requires_grad_()
    expected, = torch.autograd.grad(value(leaf), leaf)
    assert_close(torch.func.grad(value)(a[0]), expected, rtol=0, atol=1e-14)
    assert_close(torch.func.vmap(value)(a), torch.stack([value(x) for x in a]), rtol=0, atol=1e-14)


@pytest.fixture
def one_entry_slices(monkeypatch):
    monkeypatch.setattr(_overlaps, "SLICE_BYTES", 1)


@pytest.mark.parametrize("distance", DISTANCES)
def test_the_distance_with_autograd_never_builds_a_d_by_d_matrix(distance, one_entry_slices, largest_tensor):
    """Forward and backward under autograd, d = 64: an ensemble of 3 words against 9 ensembles of 4 took the dense
    route, (9, 64, 64) matrices (largest tensor 73728 entries); now F (and Q) of one slice, small matrices and
    the gradients over the broadcast batch before they are summed (2304 entries; the trace distance 4032, the
    sign of the difference applied to both sides' members, (9, 7, 64))."""
    gen = torch.Generator().manual_seed(6)
    d = 64
    states = random_pure_state(d, batch_shape=(9, 4), dtype=torch.complex128, generator=gen).data.requires_grad_()
    logits = torch.randn(9, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    own = random_pure_state(d, batch_shape=(3,), dtype=torch.complex128, generator=gen).data.requires_grad_()
    with largest_tensor() as seen:
        value = distance(Ensemble(own), Ensemble(states, torch.softmax(logits, -1)))
        grads = torch.autograd.grad(value.sum(), (own, states, logits))
    assert seen.largest <= 9 * (3 + 4) * d < d * d, seen.largest       # both sides' members over the batch at most
    dense = _dense_distance(Ensemble(own), Ensemble(states, torch.softmax(logits, -1)), distance)
    assert_close(value, dense, rtol=0, atol=1e-13)
    for got, expected in zip(grads, torch.autograd.grad(dense.sum(), (own, states, logits))):
        assert_close(got, expected, rtol=0, atol=1e-10)
