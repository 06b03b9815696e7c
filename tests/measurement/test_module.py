"""ProjectiveMeasurement: unit norm by construction, completeness, freezing, Lueders rule."""

import pytest
import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState
from qpnlp.measurement import ProjectiveMeasurement, lueders_update
from qpnlp.testing import assert_allclose, assert_density_matrix, assert_probabilities, assert_pure_state


def _train(m: ProjectiveMeasurement, steps: int = 100, lr: float = 0.5):
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(0)
    states = torch.nn.functional.normalize(torch.randn(8, 5, m.dim, dtype=m.weight.dtype, generator=gen), dim=-1)
    target = torch.rand(8, m.num_outcomes, generator=gen).to(m.weight.real.dtype)
    for _ in range(steps):
        loss = (m(states, torch.full((8, 5), 0.2, dtype=target.dtype)) - target).square().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return states


@pytest.mark.parametrize("orthonormal", [False, True])
def test_vectors_stay_unit_norm_after_large_steps(cdtype, orthonormal):
    m = ProjectiveMeasurement(6, 4, orthonormal=orthonormal, dtype=cdtype)
    _train(m)
    v = m.vectors()
    assert_pure_state(v)
    if orthonormal:
        assert_allclose(v @ v.mH, torch.eye(4, dtype=cdtype))


def test_complete_measurement_stays_complete_while_training(cdtype):
    m = ProjectiveMeasurement(5, complete=True, dtype=cdtype)
    states = _train(m)
    assert_probabilities(m(states, torch.full((8, 5), 0.2, dtype=states.real.dtype)), complete=True)


def test_initialisations(cdtype):
    ident = ProjectiveMeasurement(4, 3, init="identity", dtype=cdtype)
    assert_allclose(ident.vectors().detach(), torch.eye(4, dtype=cdtype)[:3])
    ident_complete = ProjectiveMeasurement(4, init="identity", complete=True, dtype=cdtype)
    assert_allclose(ident_complete.vectors().detach(), torch.eye(4, dtype=cdtype))
    gen1, gen2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    a = ProjectiveMeasurement(4, 3, dtype=cdtype, generator=gen1).vectors()
    b = ProjectiveMeasurement(4, 3, dtype=cdtype, generator=gen2).vectors()
    assert torch.equal(a, b)
    assert_allclose(a.detach() @ a.detach().mH, torch.eye(3, dtype=cdtype))  # orthogonal init
    many = ProjectiveMeasurement(2, 5, init="random", dtype=cdtype)            # k > d allowed when not orthonormal
    assert_pure_state(many.vectors().detach())


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(dim=4, num_outcomes=3, complete=True), ValueError, "num_outcomes == dim"),
    (dict(dim=2, num_outcomes=3, orthonormal=True), ValueError, "at most dim=2"),
    (dict(dim=4, init="bogus"), ValueError, "init must be one of"),
    (dict(dim=4, dtype=torch.float32), TypeError, "complex64 or complex128"),
    (dict(dim=0), ValueError, ">= 1"),
    (dict(dim=2, num_outcomes=3, init="identity"), ValueError, "num_outcomes <= dim"),
    (dict(dim=4, num_outcomes=2.5), ValueError, "num_outcomes must be an integer >= 1; got float 2.5"),   # was 2
    (dict(dim=4, num_outcomes=True), ValueError, "num_outcomes must be an integer >= 1; got bool"),     # was 1
    (dict(dim="4"), ValueError, "dim must be an integer >= 1; got str '4'"),
])
def test_bad_configuration(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        ProjectiveMeasurement(**kwargs)


def test_freezing_stops_updates():
    m = ProjectiveMeasurement(4, 3, trainable=False)
    before = m.vectors().detach().clone()
    assert not any(p.requires_grad for p in m.parameters())
    m2 = ProjectiveMeasurement(4, 3).freeze()
    assert not any(p.requires_grad for p in m2.parameters())
    assert torch.equal(m.vectors().detach(), before)


def test_pure_dense_and_lazy_forward_agree(cdtype):
    m = ProjectiveMeasurement(5, 3, dtype=cdtype)
    states = torch.nn.functional.normalize(torch.randn(2, 4, 5, dtype=cdtype), dim=-1)
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    weights = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.25] * 4], dtype=states.real.dtype)
    lazy = m(states, weights, mask)
    dense = m.forward_dense(Ensemble(states, weights, mask).dense().data)
    assert_allclose(lazy, dense)
    assert_allclose(m(states[0, 0]), m(states[0, :1], torch.ones(1, dtype=weights.dtype)))


def test_as_projectors_is_detached_and_immutable(cdtype):
    m = ProjectiveMeasurement(4, 2, dtype=cdtype)
    proj = m.as_projectors()
    assert proj.batch_shape == (2,) and proj.rank == 1 and not proj.vectors.requires_grad
    w = PureState.normalized(torch.randn(4, dtype=cdtype))
    assert_allclose(proj.probability(w), m(w.data).detach())


def test_lueders_rule(cdtype):
    m = ProjectiveMeasurement(3, complete=True, init="identity", dtype=cdtype)
    w = PureState.normalized(torch.tensor([1.0, 1.0, 0.0], dtype=cdtype))
    after = m.post_measurement_state(w, 1)
    assert_pure_state(after)
    assert_allclose(after.data, torch.tensor([0, 1, 0], dtype=cdtype))
    rho = DensityMatrix.maximally_mixed(3, dtype=cdtype)
    collapsed = m.post_measurement_state(rho, 2)
    assert_density_matrix(collapsed)
    assert_allclose(collapsed.purity(), torch.tensor(1.0, dtype=collapsed.purity().dtype))
    # Repeating a projective measurement gives the same outcome with certainty.
    assert_allclose(m.as_projectors()[2].probability(collapsed), torch.ones((), dtype=collapsed.purity().dtype))
    with pytest.raises(ValueError, match="probability"):
        lueders_update(PureState.basis_state(0, 3, dtype=cdtype), m.as_projectors()[1])
    with pytest.raises(ValueError, match="outcome must be"):
        m.post_measurement_state(rho, 3)


def test_a_mask_without_weights_is_refused():
    """The mask masks mixture weights (its docstring): without weights it would be ignored silently."""
    m = ProjectiveMeasurement(4)
    states = torch.nn.functional.normalize(torch.randn(2, 3, 4, dtype=torch.complex64), dim=-1)
    with pytest.raises(ValueError, match="mask needs weights"):
        m(states, mask=torch.tensor([[True, True, False]] * 2))


def test_vectors_check_for_zero_rows_only_where_validation_asks():
    """The zero-row check of a non-orthonormal head is a device sync: ``validate=False`` (what the models pass
    in training) skips it, as it does for the rest of the forward."""
    m = ProjectiveMeasurement(3, 2, orthonormal=False)
    with torch.no_grad():
        m.weight[0] = 0
    with pytest.raises(ValueError, match="zero vector"):
        m.vectors(validate=True)
    assert torch.isnan(m.vectors(validate=False)[0]).all()


@pytest.mark.parametrize("scale", [1e-25, 1e20])
def test_vectors_whose_squares_underflow_or_overflow_still_measure(scale):
    """Weight decay shrinks a non-orthonormal measurement vector geometrically where its loss gradient is small
    (the Born probabilities do not depend on its length): in complex64 its squares underflow from about 1e-19,
    and ``validate=False`` (the models' forward) divided it by a norm of 0, giving NaN probabilities and
    gradients (1e20: squares that overflow, probabilities 0). Now unit vectors, probabilities in [0, 1],
    finite gradients."""
    m = ProjectiveMeasurement(3, 2, orthonormal=False)
    with torch.no_grad():
        m.weight.mul_(scale)
    states = torch.nn.functional.normalize(torch.randn(4, 3, dtype=torch.complex64), dim=-1)
    assert_pure_state(m.vectors(validate=False))
    p = m(states, validate=False)
    assert_probabilities(p)
    p.sum().backward()
    assert torch.isfinite(torch.view_as_real(m.weight.grad)).all()


@pytest.mark.parametrize("kind", ["projective", "povm"])
def test_a_module_measures_the_first_class_objects_as_their_tensors(kind):
    """``measurement(PureState | Ensemble | DensityMatrix)`` was a TypeError although ``post_measurement_state``
    takes them: the object alone gives the probabilities of its tensors (an Ensemble's padding has weight 0)."""
    from qpnlp.hilbert import random_pure_state
    from qpnlp.measurement import POVMMeasurement

    torch.manual_seed(0)
    module = ProjectiveMeasurement(4, 3) if kind == "projective" else POVMMeasurement(4, 3)
    states = random_pure_state(4, batch_shape=(2, 3))
    mixture = Ensemble(states, mask=torch.tensor([[True, True, False], [True, False, False]]))
    assert_allclose(module(states), module(states.data))
    assert_allclose(module(mixture), module(mixture.states.data, mixture.weights))
    assert_allclose(module(mixture.dense()), module.forward_dense(mixture.dense().data))
    assert_allclose(module(mixture.dense()), module(mixture), atol=1e-6)
    with pytest.raises(ValueError, match="weights and mask come with the Ensemble"):
        module(mixture, mixture.weights)
