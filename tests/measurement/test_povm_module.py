"""POVMMeasurement: complete by construction while training, and a drop-in for ProjectiveMeasurement."""

import inspect

import pytest
import torch

from qpnlp.hilbert import Ensemble, PureState, random_pure_state
from qpnlp.measurement import POVM, POVMMeasurement, ProjectiveMeasurement, povm_probabilities, word_probabilities
from qpnlp.testing import assert_allclose, assert_povm, assert_probabilities, assert_pure_state


def _train(m, steps: int = 30, lr: float = 0.5):
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(0)
    dtype = m.isometry().dtype
    states = torch.nn.functional.normalize(torch.randn(8, 5, m.dim, dtype=dtype, generator=gen), dim=-1)
    weights = torch.full((8, 5), 0.2, dtype=states.real.dtype)
    target = torch.softmax(torch.randn(8, m.num_outcomes, dtype=states.real.dtype, generator=gen), -1)
    for _ in range(steps):
        loss = (m(states, weights) - target).square().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return states, weights, float(loss.detach())


@pytest.mark.parametrize("dim, k, rank", [(4, 6, None), (6, 2, None), (5, 5, None), (3, 7, 2)])
def test_effects_sum_to_identity_after_large_steps(cdtype, dim, k, rank):
    m = POVMMeasurement(dim, k, rank=rank, dtype=cdtype, generator=torch.Generator().manual_seed(1))
    assert m.rank == (rank or -(-dim // k))
    before = m.isometry().detach().clone()
    states, weights, _ = _train(m)
    assert not torch.allclose(before, m.isometry().detach())              # it did train
    v = m.isometry().detach()
    atol = 10 * k * m.rank * (2e-6 if cdtype == torch.complex64 else 1e-13)
    assert_allclose(v.mH @ v, torch.eye(dim, dtype=cdtype), atol=atol)
    assert_probabilities(m(states, weights).detach(), complete=True, atol=atol)
    assert_povm(m.as_povm(), atol=atol)


def test_training_fits_a_target_that_no_projective_measurement_can():
    """Three outcomes on a qubit (k > d): the trine statistics are reachable only by a POVM."""
    dtype = torch.complex128
    trine = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -(0.75 ** 0.5)]], dtype=dtype)
    target = POVM.from_frame(trine).probabilities(PureState(trine)).detach()      # (3, 3)
    m = POVMMeasurement(2, 3, dtype=dtype, generator=torch.Generator().manual_seed(0))
    opt = torch.optim.Adam(m.parameters(), lr=0.05)
    for _ in range(400):
        loss = (m(trine) - target).square().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 1e-6


def test_same_interface_as_projective_measurement(cdtype):
    """A model can swap ProjectiveMeasurement(d, k, ...) for POVMMeasurement(d, k, ...)."""
    d, k = 4, 6
    povm = POVMMeasurement(d, k, dtype=cdtype, generator=torch.Generator().manual_seed(0))
    projective = ProjectiveMeasurement(d, 3, dtype=cdtype)
    for name in ("forward", "forward_dense", "vectors", "freeze", "post_measurement_state"):
        assert callable(getattr(povm, name)) and callable(getattr(projective, name))
    assert list(inspect.signature(povm.forward).parameters) == list(inspect.signature(projective.forward).parameters)
    assert (povm.dim, povm.num_outcomes) == (d, k)
    gen = torch.Generator().manual_seed(1)
    states = random_pure_state(d, batch_shape=(2, 3), dtype=cdtype, generator=gen).data
    weights = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], dtype=states.real.dtype)
    mask = weights > 0
    p = povm(states, weights, mask)
    assert p.shape == (2, k)
    mix = Ensemble(states, weights, mask)
    assert_allclose(p, povm.forward_dense(mix.dense().data))
    assert_allclose(p, povm.as_povm().probabilities(mix))
    # CNM-style per-word probabilities through vectors(): Tr(|w><w| E_k); the projective function refuses them
    assert_allclose(povm_probabilities(states, None, povm.vectors().unsqueeze(-2)), povm(states))
    with pytest.raises(ValueError, match="unit norm"):
        word_probabilities(states, povm.vectors())
    assert_allclose(povm_probabilities(states, weights, povm.vectors().unsqueeze(-2)), p)
    povm.freeze()
    assert not any(param.requires_grad for param in povm.parameters())
    after = povm.post_measurement_state(PureState(states[0, 0]), 2)
    assert_pure_state(after)


def test_initialisations_and_reproducibility(cdtype):
    a = POVMMeasurement(3, 5, dtype=cdtype, generator=torch.Generator().manual_seed(4))
    b = POVMMeasurement(3, 5, dtype=cdtype, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a.isometry(), b.isometry())
    ident = POVMMeasurement(3, 5, init="identity", dtype=cdtype)
    probs = ident(torch.eye(3, dtype=cdtype))
    assert_allclose(probs, torch.eye(3, 5, dtype=probs.dtype))           # outcome j measures |e_j>
    assert "num_outcomes=5" in repr(ident)


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(dim=4, num_outcomes=2, rank=1), ValueError, "num_outcomes \\* rank must be >= dim"),
    (dict(dim=4, init="bogus"), ValueError, "init must be one of"),
    (dict(dim=4, dtype=torch.float32), TypeError, "complex64 or complex128"),
    (dict(dim=0), ValueError, ">= 1"),
    (dict(dim=4, num_outcomes=2.5), ValueError, "num_outcomes must be an integer >= 1; got float 2.5"),   # was 2
    (dict(dim=4, num_outcomes=4, rank=1.5), ValueError, "rank must be an integer >= 1; got float 1.5"),  # was 1
    (dict(dim=4.0), ValueError, "dim must be an integer >= 1; got float 4.0"),                          # was cols
])
def test_constructor_errors(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        POVMMeasurement(**kwargs)


def test_gradients_flow_to_the_parameter():
    m = POVMMeasurement(3, 4, dtype=torch.complex128, generator=torch.Generator().manual_seed(0))
    states = random_pure_state(3, batch_shape=(2, 2), dtype=torch.complex128,
                               generator=torch.Generator().manual_seed(1)).data
    m(states, torch.full((2, 2), 0.5, dtype=torch.float64))[:, 0].sum().backward()
    grads = [p.grad for p in m.parameters()]
    assert grads and all(g is not None and bool(torch.isfinite(g).all()) and float(g.abs().max()) > 0 for g in grads)


def test_a_mask_without_weights_is_refused():
    """The mask masks mixture weights (its docstring): without weights it would be ignored silently."""
    m = POVMMeasurement(4, 6)
    states = torch.nn.functional.normalize(torch.randn(2, 3, 4, dtype=torch.complex64), dim=-1)
    with pytest.raises(ValueError, match="mask needs weights"):
        m(states, mask=torch.tensor([[True, True, False]] * 2))
