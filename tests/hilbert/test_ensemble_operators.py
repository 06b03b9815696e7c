"""The lazy Ensemble's trace, expectation and evolution against those of its dense DensityMatrix."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, random_unitary, validation
from qpnlp.testing import assert_allclose, batch_shapes, default_atol, ensembles, unitaries


@st.composite
def _mixtures(draw, batch_shape=batch_shapes()):
    """Ensembles, some padded (masked members), some with zero weights at unmasked members (renormalised)."""
    mix = draw(ensembles(dim=st.integers(1, 5), batch_shape=batch_shape, max_states=4))
    if draw(st.booleans()):
        gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
        w = mix.weights
        drop = (torch.rand(w.shape, generator=gen) < 0.5) & (w < w.amax(-1, keepdim=True))  # the largest stays
        w = w.masked_fill(drop, 0.0)
        mix = Ensemble(mix.states, w / w.sum(-1, keepdim=True))          # members checked where weighted only
    return mix


def _operator_batch(draw, batch) -> tuple[int, ...]:
    """A batch shape that broadcasts with ``batch``: none, the same, ones, or a new leading dim."""
    return draw(st.sampled_from([(), tuple(batch), (1,) * len(batch), (2, *batch)]))


@st.composite
def _observables(draw, mix):
    """Hermitian observables (A + A^dagger) / 2 on the mixture's space, of either precision, broadcasting."""
    dtype = draw(st.sampled_from([torch.complex64, torch.complex128]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    shape = (*_operator_batch(draw, mix.batch_shape), mix.dim, mix.dim)
    a = torch.complex(torch.randn(shape, dtype=torch.float64, generator=gen),
                      torch.randn(shape, dtype=torch.float64, generator=gen))
    return (0.5 * (a + a.mH)).to(dtype)


def _atol(*tensors: torch.Tensor, dim: int) -> float:
    """The tolerance of the coarser operand, for results of size about 2 sqrt(d) (Gaussian observables)."""
    coarse = torch.complex64 if any(t.dtype in (torch.float32, torch.complex64) for t in tensors) else torch.complex128
    return 4 * default_atol(coarse, dim) * max(dim, 1) ** 0.5


@given(_mixtures())
def test_trace_is_the_dense_trace(mix):
    lazy, dense = mix.tr(), mix.dense().tr()
    assert (lazy.shape, lazy.dtype) == (dense.shape, dense.dtype)
    assert_allclose(lazy, dense, atol=_atol(mix.states.data, dim=mix.dim))
    assert_allclose(lazy.real, torch.ones(mix.batch_shape, dtype=mix.weights.dtype), atol=_atol(lazy, dim=mix.dim))


@given(st.data())
def test_expectation_is_the_dense_expectation(data):
    mix = data.draw(_mixtures())
    observable = data.draw(_observables(mix))
    lazy, dense = mix.expectation(observable), mix.dense().expectation(observable)
    assert (lazy.shape, lazy.dtype, lazy.device) == (dense.shape, dense.dtype, dense.device)
    assert_allclose(lazy, dense, atol=_atol(mix.states.data, observable, dim=mix.dim))


@given(st.data())
def test_evolve_is_the_dense_evolution(data):
    mix = data.draw(_mixtures())
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    u = data.draw(unitaries(dim=mix.dim, batch_shape=_operator_batch(data.draw, mix.batch_shape), dtype=dtype))
    moved, dense = mix.evolve(u), mix.dense().evolve(u)
    assert isinstance(moved, Ensemble) and moved.num_states == mix.num_states
    assert (moved.batch_shape, moved.dtype) == (dense.batch_shape, dense.dtype)
    assert moved.weights.dtype == {torch.complex64: torch.float32, torch.complex128: torch.float64}[moved.dtype]
    assert_allclose(moved.weights, mix.weights.expand(moved.weights.shape))      # the same weights
    assert_allclose(moved.dense().data, dense.data, atol=_atol(mix.states.data, u, dim=mix.dim))
    # a valid ensemble again: Ensemble's own checks accept it (at the precision of the coarser operand)
    coarse = moved.to(torch.complex64) if torch.complex64 in (mix.dtype, u.dtype) else moved
    Ensemble(coarse.states, coarse.weights, validate=True)


@given(_mixtures(batch_shape=()), st.data())
def test_unbatched_ensembles_give_results_of_the_operators_batch(mix, data):
    observable = data.draw(_observables(mix))
    assert mix.tr().shape == () and mix.expectation(observable).shape == observable.shape[:-2]
    assert_allclose(mix.expectation(observable), mix.dense().expectation(observable),
                    atol=_atol(mix.states.data, observable, dim=mix.dim))
    identity = torch.eye(mix.dim, dtype=torch.float64)
    assert_allclose(mix.expectation(identity), torch.tensor(1.0, dtype=torch.float64), atol=1e-5)
    assert mix.evolve(identity).batch_shape == () and mix.evolve(identity.expand(3, -1, -1)).batch_shape == (3,)


def test_padding_and_zero_weights_never_enter():
    # garbage at a masked member and a zero weight on an unmasked one: neither changes the values
    states = torch.tensor([[1, 0], [0, 1], [7, 7]], dtype=torch.complex128)
    mix = Ensemble(states, torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64),
                   mask=torch.tensor([True, True, False]))
    z = torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64))
    assert_allclose(mix.tr(), torch.tensor(1.0 + 0j, dtype=torch.complex128))
    assert_allclose(mix.expectation(z), torch.tensor(1.0, dtype=torch.float64))
    flip = torch.tensor([[0, 1], [1, 0]], dtype=torch.complex128)
    assert_allclose(mix.evolve(flip).expectation(z), torch.tensor(-1.0, dtype=torch.float64))


def test_expectation_refuses_what_the_density_matrix_refuses():
    mix = Ensemble(PureState.basis_state(0, 3).data.expand(2, 2, 3).clone())
    for bad, error, pattern in [
        (torch.ones(1, 1), ValueError, r"observable must have shape \(\.\.\., 3, 3\)"),
        (torch.eye(3).expand(4, 3, 3), ValueError, r"observable has batch shape \(4,\)"),
        (torch.triu(torch.ones(3, 3)), ValueError, "Hermitian"),
        (torch.eye(3).tolist(), TypeError, "observable"),
    ]:
        for system in (mix, mix.dense()):
            with pytest.raises(error, match=pattern):
                system.expectation(bad)
    with validation(False):                          # the Hermitian check runs only while validation is on
        assert mix.expectation(torch.triu(torch.ones(3, 3))).shape == (2,)
    with pytest.raises(ValueError, match="arguments must be on one device"):
        mix.expectation(torch.eye(3, device="meta"))


def test_evolve_refuses_a_matrix_that_is_not_a_unitary_of_the_state_dimension():
    mix = Ensemble(torch.eye(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match=r"unitary must have shape \(\.\.\., 2, 2\)"):
        mix.evolve(torch.ones(1, 2))
    with pytest.raises(ValueError, match=r"unitary has batch shape \(4,\)"):
        Ensemble(torch.eye(2, dtype=torch.complex64).expand(3, 2, 2)).evolve(torch.eye(2).expand(4, 2, 2))
    with pytest.raises(ValueError, match=r"evolve\(unitary\): U\|w_i> must have unit norm.*norm 2"):
        mix.evolve(2 * torch.eye(2))
    # keeps the trace of rho (DensityMatrix.evolve accepts it) but not the members' norms: not an ensemble
    squeeze = torch.diag(torch.tensor([2 ** 0.5, 0.0])).to(torch.complex64)
    with pytest.raises(ValueError, match="unit norm"):
        mix.evolve(squeeze)
    with validation(False):
        assert mix.evolve(2 * torch.eye(2)).num_states == 2


@pytest.mark.parametrize("state_dtype, operator_dtype", [(torch.complex64, torch.complex128),
                                                         (torch.complex128, torch.complex64)])
def test_mixed_precisions_widen_and_check_at_the_coarser_one(state_dtype, operator_dtype):
    gen = torch.Generator().manual_seed(1)
    u = random_unitary(6, dtype=operator_dtype, generator=gen)
    observable = u @ torch.diag(torch.linspace(-1, 1, 6, dtype=torch.float64).to(operator_dtype)) @ u.mH
    mix = Ensemble(PureState.normalized(torch.randn(4, 6, dtype=state_dtype, generator=gen)))
    value = mix.expectation(observable)
    assert value.dtype == torch.float64
    moved = mix.evolve(u)
    assert (moved.dtype, moved.weights.dtype) == (torch.complex128, torch.float64)
    assert_allclose(moved.expectation(observable), mix.expectation(u.mH @ observable @ u), atol=1e-5)
    with pytest.raises(ValueError, match="unit norm"):                  # still checked, at float32's tolerance
        mix.evolve(u * (1 + 1e-3))


def test_trace_expectation_and_evolve_never_build_the_density_matrices(largest_tensor):
    # 64 mixtures of 2 states in d = 40: the dense matrices hold 102 400 entries, the states 5 120, one operator 1 600
    gen = torch.Generator().manual_seed(0)
    batch, n, d = 64, 2, 40
    mix = Ensemble(PureState.normalized(torch.randn(batch, n, d, dtype=torch.complex128, generator=gen)))
    u = random_unitary(d, dtype=torch.complex128, generator=gen)
    observable = u @ torch.diag(torch.linspace(-1, 1, d, dtype=torch.complex128)) @ u.mH
    with largest_tensor() as seen:
        values = mix.tr(), mix.expectation(observable), mix.evolve(u)
    assert seen.largest <= 2 * max(batch * n * d, d * d)          # real views (..., 2) of the states count twice
    assert_allclose(values[1], mix.dense().expectation(observable))
    assert isinstance(values[2], Ensemble) and not isinstance(values[2], DensityMatrix)
