"""Fidelity, trace distance, entropies, tensor products and partial traces."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, fidelity, hellinger_affinity, partial_trace, purity,
                           quantum_jensen_shannon_divergence, random_density_matrix, relative_entropy, tensor_product,
                           trace_distance, validation, von_neumann_entropy)
from qpnlp.hilbert._contract import contract
from qpnlp.testing import assert_allclose, assert_density_matrix, density_matrices, ensembles, pure_states

LOOSE = 1e-3  # eigen-decompositions of rank-deficient states in complex64


def _same(dtype, d):
    return dict(dim=d, batch_shape=(), dtype=dtype)


@given(st.data())
def test_fidelity_of_a_state_with_itself_is_one_and_symmetric(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    d = data.draw(st.integers(1, 5))
    rho = data.draw(density_matrices(**_same(dtype, d)))
    sigma = data.draw(density_matrices(**_same(dtype, d)))
    assert abs(float(fidelity(rho, rho)) - 1) < LOOSE
    f_rs, f_sr = float(fidelity(rho, sigma)), float(fidelity(sigma, rho))
    assert -1e-6 <= f_rs <= 1 + 1e-6
    assert abs(f_rs - f_sr) < LOOSE


@given(st.data())
def test_fidelity_of_pure_states_is_transition_probability(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    a = data.draw(pure_states(**_same(dtype, 3)))
    b = data.draw(pure_states(**_same(dtype, 3)))
    expected = float(a.overlap(b))
    assert abs(float(fidelity(a, b)) - expected) < 1e-5
    assert abs(float(fidelity(a.proj(), b.proj())) - expected) < LOOSE


def test_fidelity_squared_convention_on_known_values(cdtype):
    rho = DensityMatrix.maximally_mixed(2, dtype=cdtype)
    zero = PureState.basis_state(0, 2, dtype=cdtype)
    assert math.isclose(float(fidelity(rho, zero)), 0.5, rel_tol=1e-5)
    assert math.isclose(float(fidelity(rho, zero, squared=False)), math.sqrt(0.5), rel_tol=1e-5)


@given(st.data())
def test_trace_distance_is_a_metric(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    d = data.draw(st.integers(1, 5))
    r, s, t = (data.draw(density_matrices(**_same(dtype, d))) for _ in range(3))
    atol = 1e-5 if dtype == torch.complex64 else 1e-12
    assert float(trace_distance(r, r)) <= atol
    assert abs(float(trace_distance(r, s)) - float(trace_distance(s, r))) <= atol
    assert float(trace_distance(r, t)) <= float(trace_distance(r, s)) + float(trace_distance(s, t)) + atol
    assert 0 <= float(trace_distance(r, s)) <= 1 + atol


def test_trace_distance_of_orthogonal_pure_states_is_one(cdtype):
    a, b = PureState.basis_state(0, 3, dtype=cdtype), PureState.basis_state(2, 3, dtype=cdtype)
    assert math.isclose(float(trace_distance(a, b)), 1.0, rel_tol=1e-6)


def test_entropy_known_values(cdtype):
    assert abs(float(von_neumann_entropy(PureState.basis_state(1, 4, dtype=cdtype).proj()))) < 1e-6
    assert math.isclose(float(von_neumann_entropy(DensityMatrix.maximally_mixed(8, dtype=cdtype), base=2)), 3.0,
                        rel_tol=1e-5)


@given(ensembles())
def test_entropy_lazy_equals_dense_and_is_bounded(mix):
    lazy, dense = von_neumann_entropy(mix), von_neumann_entropy(mix.dense())
    assert_allclose(lazy, dense, atol=LOOSE)
    assert bool((dense >= -LOOSE).all()) and bool((dense <= math.log(mix.dim) + LOOSE).all())
    assert_allclose(purity(mix), purity(mix.dense()))


@given(st.data())
def test_relative_entropy_is_nonnegative_and_zero_on_the_diagonal(data):
    d = data.draw(st.integers(1, 4))
    rho = data.draw(density_matrices(dim=d, batch_shape=(), dtype=torch.complex128, method="ginibre"))
    sigma = DensityMatrix.maximally_mixed(d, dtype=torch.complex128)
    value = float(relative_entropy(rho, sigma))
    assert value >= -1e-9
    # S(rho || I/d) = log d - S(rho)
    assert math.isclose(value, math.log(d) - float(von_neumann_entropy(rho)), abs_tol=1e-8)
    assert abs(float(relative_entropy(sigma, sigma))) < 1e-9


def test_relative_entropy_is_infinite_outside_support():
    mixed = DensityMatrix.maximally_mixed(2, dtype=torch.complex128)
    pure = PureState.basis_state(0, 2, dtype=torch.complex128).proj()
    assert math.isinf(float(relative_entropy(mixed, pure)))
    assert math.isclose(float(relative_entropy(pure, mixed)), math.log(2), rel_tol=1e-9)


@given(st.data())
def test_partial_trace_of_a_product_gives_the_factors_back(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    da, db = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    a = data.draw(density_matrices(dim=da, batch_shape=(2,), dtype=dtype))
    b = data.draw(density_matrices(dim=db, batch_shape=(2,), dtype=dtype))
    ab = tensor_product(a, b)
    assert_density_matrix(ab)
    assert_allclose(partial_trace(ab, (da, db), keep=0).data, a.data)
    assert_allclose(partial_trace(ab, (da, db), keep=[1]).data, b.data)


def test_tensor_product_of_pure_states_and_three_systems(cdtype):
    a, b, c = (PureState.basis_state(i, 2, dtype=cdtype) for i in (0, 1, 1))
    abc = tensor_product(a, b, c)
    assert abc.dim == 8 and float(abc.data[3].real) == 1.0   # |011> is index 3
    reduced = partial_trace(abc.proj(), (2, 2, 2), keep=[0, 2])
    assert_allclose(reduced.data, tensor_product(a, c).proj().data)


def test_partial_trace_of_a_bell_state_is_maximally_mixed(cdtype):
    bell = PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=cdtype))
    reduced = partial_trace(bell, (2, 2), keep=0)
    assert_allclose(reduced.data, DensityMatrix.maximally_mixed(2, dtype=cdtype).data)
    with pytest.raises(ValueError, match="multiply to 6"):
        partial_trace(bell, (2, 3), keep=0)


def test_contract_matches_plain_einsum(cdtype):
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(5, 2, 6, dtype=cdtype, generator=gen)
    rho = torch.randn(3, 6, 6, dtype=cdtype, generator=gen)
    equation = "krd,...de,kre->...k"
    assert_allclose(contract(equation, v.conj(), rho, v), torch.einsum(equation, v.conj(), rho, v), atol=1e-4)


def test_fidelity_and_trace_distance_gradcheck():
    gen = torch.Generator().manual_seed(3)
    raw = torch.randn(3, 3, dtype=torch.complex128, generator=gen, requires_grad=True)
    sigma = DensityMatrix.maximally_mixed(3, dtype=torch.complex128)

    def rho_of(raw):
        m = raw @ raw.mH + 0.1 * torch.eye(3, dtype=torch.complex128)   # full rank: smooth spectrum
        return m / torch.diagonal(m).sum()

    assert torch.autograd.gradcheck(lambda r: fidelity(rho_of(r), sigma), (raw,))
    assert torch.autograd.gradcheck(lambda r: von_neumann_entropy(rho_of(r)), (raw,))


@pytest.mark.parametrize("fn", [
    lambda rho, sigma, ens: fidelity(rho, sigma),                                   # sqrt(rho) (_PsdSqrt)
    lambda rho, sigma, ens: hellinger_affinity(rho, sigma),                         # Tr sqrt(rho) sqrt(sigma)
    lambda rho, sigma, ens: hellinger_affinity(ens, rho),                           # ... of a factor
    lambda rho, sigma, ens: relative_entropy(sigma, rho),                           # Tr sigma log rho
], ids=["fidelity", "hellinger", "hellinger-ensemble", "relative-entropy"])
def test_torch_func_grad_and_vmap_run_the_custom_gradients(fn):
    # the custom autograd Functions set ctx in forward: torch.func refused them ("it must override the
    # setup_context staticmethod"); with validation off (its checks read values) grad and vmap now run
    gen = torch.Generator().manual_seed(3)
    raws = torch.randn(4, 3, 3, dtype=torch.complex128, generator=gen)
    sigma = DensityMatrix(random_density_matrix(3, dtype=torch.complex128, generator=gen).data)

    def value(raw):
        m = raw @ raw.mH + 0.1 * torch.eye(3, dtype=torch.complex128)
        rho = m / torch.diagonal(m).sum()
        ens = Ensemble(torch.nn.functional.normalize(raw[:2], dim=-1), torch.tensor([0.4, 0.6], dtype=torch.float64))
        return fn(DensityMatrix(rho), sigma, ens)

    def autograd_grad(raw):
        raw = raw.clone().requires_grad_(True)
        return torch.autograd.grad(value(raw), raw)[0]

    with validation(False):
        assert_allclose(torch.func.grad(value)(raws[0]), autograd_grad(raws[0]), atol=1e-10)
        assert_allclose(torch.func.vmap(value)(raws), torch.stack([value(r) for r in raws]), atol=1e-12)
        assert_allclose(torch.func.vmap(torch.func.grad(value))(raws), torch.stack([autograd_grad(r) for r in raws]),
                        atol=1e-10)


@pytest.mark.parametrize("repeat_a_word", [False, True])
def test_trace_distance_of_sentences_uses_the_small_matrix_and_equals_the_dense_route(cdtype, repeat_a_word,
                                                                                     monkeypatch, largest_tensor):
    """Ensembles with n + m < d: the spectrum of rho - sigma from the (n+m) x (n+m) matrix R J R^dagger, never a
    d x d matrix (slices of one pair: F is 9 x 40, the dense route's difference 6 x 40 x 40)."""
    from qpnlp.hilbert import Ensemble, _overlaps, random_pure_state
    from qpnlp.hilbert._low_rank import low_rank_trace_distance

    gen = torch.Generator().manual_seed(7)
    d = 40
    words_a = random_pure_state(d, batch_shape=(6, 4), dtype=cdtype, generator=gen)
    words_b = random_pure_state(d, batch_shape=(6, 5), dtype=cdtype, generator=gen)
    words_b.data[:, 1] = words_a.data[:, 0]                                   # a shared word
    if repeat_a_word:
        words_a.data[:, 3] = words_a.data[:, 2]                               # rank-deficient factor
    a, b = Ensemble(words_a), Ensemble(words_b)
    monkeypatch.setattr(_overlaps, "SLICE_BYTES", 1)                          # one pair of the batch at a time
    with largest_tensor() as seen:
        trace_distance(a, b)
    assert seen.largest < d * d, seen.largest
    value = trace_distance(a, b)
    assert value.shape == (6,) and torch.equal(value, low_rank_trace_distance(a, b))
    tol = 1e-5 if cdtype == torch.complex64 else 1e-12
    assert_allclose(value, trace_distance(a.dense(), b.dense()), atol=tol)
    assert float(trace_distance(a, a).abs().max()) <= tol                    # exact zero, not sqrt(eps)
    pure = PureState(words_a.data[:, 0])
    assert_allclose(trace_distance(pure, b), trace_distance(pure.proj(), b.dense()), atol=tol)


def test_trace_distance_with_gradients_takes_the_small_matrix_without_qrs_backward():
    """Under autograd the value is the no-grad one bit for bit, its backward the analytic one (``_TraceDistance``,
    never QR's, undefined at a repeated word's rank-deficient F), with the dense route's gradient."""
    from qpnlp.hilbert import Ensemble
    from qpnlp.hilbert._low_rank import _TraceDistance

    raw = torch.randn(2, 3, 8, dtype=torch.complex128, generator=torch.Generator().manual_seed(1), requires_grad=True)

    def sides(raw):
        words = raw / torch.linalg.vector_norm(raw, dim=-1, keepdim=True)
        return Ensemble(PureState(words[:, :2])), Ensemble(PureState(words[:, 2:]))

    value = trace_distance(*sides(raw))
    assert type(value.grad_fn).__name__ == f"{_TraceDistance.__name__}Backward"    # the analytic backward
    with torch.no_grad():
        assert torch.equal(value, trace_distance(*sides(raw)))
    grad, = torch.autograd.grad(value.sum(), raw)
    dense, = torch.autograd.grad(trace_distance(*(x.dense() for x in sides(raw))).sum(), raw)
    assert torch.isfinite(grad).all()
    assert_allclose(grad, dense, atol=1e-10)


@pytest.mark.parametrize("fn", [relative_entropy, quantum_jensen_shannon_divergence])
def test_mixed_precision_pure_states_are_accepted_and_give_zero(fn):
    # a complex64 state met a complex128 one: promoted to complex128, its float32 round-off eigenvalues
    # (~1e-9) were held to the float64 tolerance (1e-14) and raised "must be positive semi-definite"
    v = torch.nn.functional.normalize(torch.randn(3, dtype=torch.complex128, generator=torch.Generator().manual_seed(3)),
                                      dim=-1)
    wide, narrow = PureState(v).proj(), PureState(v.to(torch.complex64)).proj()
    for rho, sigma in ((narrow, wide), (wide, narrow), (narrow, narrow)):
        value = float(fn(rho, sigma))
        assert 0.0 <= value < 1e-5                                        # zero to float32 precision, never < 0
    assert math.isclose(float(relative_entropy(narrow, DensityMatrix.maximally_mixed(3, dtype=torch.complex128))),
                        math.log(3), rel_tol=1e-5)
