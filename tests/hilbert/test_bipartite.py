"""Bipartite states: Schmidt decomposition, partial transpose, negativity, mutual information, conditional entropy."""

import math

import pytest
import qutip
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import (DensityMatrix, PureState, conditional_entropy, log_negativity, mutual_information,
                           negativity, partial_trace, partial_transpose, random_density_matrix, random_pure_state,
                           schmidt_decomposition, tensor_product)
from qpnlp.testing import assert_allclose, assert_pure_state, density_matrices, pure_states

DIMS = (2, 3)


def _qobj(rho: DensityMatrix) -> qutip.Qobj:
    return qutip.Qobj(rho.data.to(torch.complex128).numpy(), dims=[list(DIMS), list(DIMS)])


def _states(cdtype):
    gen = torch.Generator().manual_seed(0)
    d = DIMS[0] * DIMS[1]
    mixed = [random_density_matrix(d, rank=r, measure="bures", dtype=torch.complex128, generator=gen) for r in (6, 2)]
    pure = random_pure_state(d, dtype=torch.complex128, generator=gen).proj()
    product = tensor_product(random_density_matrix(2, dtype=torch.complex128, generator=gen),
                             random_density_matrix(3, dtype=torch.complex128, generator=gen))
    return [(rho.to(cdtype), _qobj(rho)) for rho in (*mixed, pure, product)]


def test_entropic_quantities_agree_with_qutip(cdtype, tol):
    atol = 10 * tol(6)                       # eigenvalues of 6 x 6 matrices, then logarithms
    for rho, q in _states(cdtype):
        assert abs(float(mutual_information(rho, DIMS)) - qutip.entropy_mutual(q, 0, 1)) <= atol
        assert abs(float(conditional_entropy(rho, DIMS)) - qutip.entropy_conditional(q, 1)) <= atol
        assert abs(float(conditional_entropy(rho, DIMS, given=0)) - qutip.entropy_conditional(q, 0)) <= atol


def test_negativity_and_partial_transpose_agree_with_qutip(cdtype, tol):
    for rho, q in _states(cdtype):
        expected_pt = qutip.partial_transpose(q, [0, 1]).full()
        assert_allclose(partial_transpose(rho, DIMS), torch.from_numpy(expected_pt).to(cdtype), atol=tol(6))
        assert_allclose(partial_transpose(rho, DIMS, subsystem=0),
                        torch.from_numpy(qutip.partial_transpose(q, [1, 0]).full()).to(cdtype), atol=tol(6))
        assert abs(float(negativity(rho, DIMS)) - qutip.negativity(q, 1, method="eigenvalues")) <= 10 * tol(6)
        expected_log = qutip.negativity(q, 1, method="eigenvalues", logarithmic=True)
        assert abs(float(log_negativity(rho, DIMS)) - expected_log) <= 10 * tol(6)


@given(pure_states(dim=6, batch_shape=(3,)))
def test_schmidt_decomposition_rebuilds_the_state(psi):
    c, left, right = schmidt_decomposition(psi, DIMS)
    assert c.shape == (3, 2) and left.batch_shape == (3, 2) and right.batch_shape == (3, 2)
    assert bool((c[..., :-1] >= c[..., 1:]).all())
    assert_allclose((c.square().sum(-1)), torch.ones(3, dtype=c.dtype))
    assert_pure_state(left) and assert_pure_state(right)
    rebuilt = torch.einsum("bk,bki,bkj->bij", c.to(psi.dtype), left.data, right.data).reshape(3, 6)
    assert_allclose(rebuilt, psi.data)
    eye = torch.eye(2, dtype=psi.dtype).expand(3, 2, 2)
    assert_allclose(left.data.conj() @ left.data.mT, eye)
    assert_allclose(right.data.conj() @ right.data.mT, eye)
    # the squared coefficients are the spectrum of both reduced states
    reduced = partial_trace(psi, DIMS, keep=0).eigvals()
    assert_allclose(reduced.flip(-1), c.square(), atol=1e-5 if psi.dtype == torch.complex64 else 1e-12)


@given(pure_states(dim=6, batch_shape=(2,)))
def test_pure_state_shortcuts_equal_the_dense_route(psi):
    dense = psi.proj()
    atol = 1e-4 if psi.dtype == torch.complex64 else 1e-9
    for fn in (mutual_information, conditional_entropy, negativity, log_negativity):
        assert_allclose(fn(psi, DIMS), fn(dense, DIMS), atol=atol, msg=fn.__name__)


def test_maximally_entangled_and_product_values(cdtype, tol):
    d = 3
    phi = PureState.normalized(torch.eye(d, dtype=cdtype).reshape(-1))           # sum_i |ii> / sqrt(d)
    assert abs(float(negativity(phi, (d, d))) - (d - 1) / 2) <= tol(9)
    assert abs(float(log_negativity(phi, (d, d))) - math.log2(d)) <= tol(9)
    assert abs(float(mutual_information(phi, (d, d))) - 2 * math.log(d)) <= tol(9)
    assert abs(float(conditional_entropy(phi, (d, d), base=2)) + math.log2(d)) <= tol(9)
    product = tensor_product(PureState.basis_state(0, 2, dtype=cdtype), PureState.basis_state(1, 3, dtype=cdtype))
    for fn in (negativity, log_negativity, mutual_information):
        assert abs(float(fn(product, DIMS))) <= tol(6)


@given(st.data())
def test_bounds(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    rho = data.draw(density_matrices(dim=6, batch_shape=(2,), dtype=dtype))
    slack = 1e-4 if dtype == torch.complex64 else 1e-9
    info = mutual_information(rho, DIMS)
    assert bool(((info >= -slack) & (info <= 2 * math.log(2) + slack)).all())
    assert bool((conditional_entropy(rho, DIMS) >= -math.log(2) - slack).all())
    assert bool((negativity(rho, DIMS) >= 0).all()) and bool((log_negativity(rho, DIMS) >= 0).all())


def test_a_bad_state_tensor_is_named_as_the_argument():
    """A tensor ``state`` was checked through ``PureState(state)``, whose errors name ``states`` (its own
    argument); they name ``state`` now, the rest of the message as before."""
    bell = torch.tensor([1, 0, 0, 1], dtype=torch.complex128) / math.sqrt(2)
    with pytest.raises(ValueError, match=r"^state must have unit norm along the last dim; got norm 2"):
        schmidt_decomposition(bell * 2, (2, 2))
    with pytest.raises(ValueError, match=r"^state must be finite; got \(nan\+0j\)"):
        schmidt_decomposition(torch.full((4,), math.nan, dtype=torch.complex128), (2, 2))
    with pytest.raises(TypeError, match="^state must be a torch.Tensor"):
        schmidt_decomposition([1, 0, 0, 1], (2, 2))


def test_argument_errors():
    rho = DensityMatrix.maximally_mixed(6)
    with pytest.raises(ValueError, match="multiply to 4"):
        negativity(rho, (2, 2))
    with pytest.raises(ValueError, match="two positive"):
        mutual_information(rho, (6,))
    with pytest.raises(ValueError, match="given must be"):
        conditional_entropy(rho, DIMS, given=2)
    with pytest.raises(ValueError, match="subsystem must be"):
        partial_transpose(rho, DIMS, subsystem=3)


def _full_rank(raw):
    m = raw @ raw.mH + 0.2 * torch.diag(torch.arange(1, 7, dtype=torch.float64)).to(raw.dtype)
    return DensityMatrix(m / torch.diagonal(m).sum())


@pytest.mark.parametrize("fn", [mutual_information, conditional_entropy, negativity, log_negativity])
def test_gradcheck(fn):
    gen = torch.Generator().manual_seed(3)
    raw = torch.randn(6, 6, dtype=torch.complex128, generator=gen, requires_grad=True)
    bell_like = torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.complex128) / 2 ** 0.5   # entangled: negativity > 0

    def state(r):
        return DensityMatrix(0.5 * _full_rank(r).data + 0.5 * torch.outer(bell_like, bell_like.conj()))

    assert torch.autograd.gradcheck(lambda r: fn(state(r), DIMS), (raw,))
    psi = torch.randn(6, dtype=torch.complex128, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p: fn(PureState(torch.nn.functional.normalize(p, dim=-1)), DIMS), (psi,))
    assert float(negativity(state(raw.detach()), DIMS)) > 0.01          # the negative part is exercised


def test_schmidt_and_partial_transpose_gradcheck():
    """The coefficients (distinct for a generic state) are smooth; the vectors carry a phase gauge, so not them."""
    psi = torch.randn(6, dtype=torch.complex128, generator=torch.Generator().manual_seed(4), requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda p: schmidt_decomposition(PureState(torch.nn.functional.normalize(p, dim=-1)), DIMS).coefficients, (psi,))
    raw = torch.randn(6, 6, dtype=torch.complex128, generator=torch.Generator().manual_seed(5), requires_grad=True)
    assert torch.autograd.gradcheck(lambda r: partial_transpose(_full_rank(r), DIMS), (raw,))


def test_partial_trace_takes_numpy_integers_as_subsystems():
    import numpy as np
    rho = DensityMatrix.maximally_mixed(4, dtype=torch.complex128)
    for keep in (np.int64(1), [np.int64(1)], np.array([1]), {1}):     # np.int64 was "not iterable"
        assert partial_trace(rho, (2, 2), keep=keep).data.shape == (2, 2)
    with pytest.raises(TypeError):
        partial_trace(rho, (2, 2), keep=1.0)


@pytest.mark.parametrize("dims", [(2.5, 1.6), (2.0, 2), (-2, -2), (4, 0), ("2", 2)])
def test_subsystem_dims_must_be_positive_integers(dims):
    rho = DensityMatrix.maximally_mixed(4)
    with pytest.raises(ValueError, match="positive integers"):
        partial_trace(rho, dims, keep=0)
    with pytest.raises(ValueError, match="positive integers"):
        negativity(rho, dims)
