"""Bures, Hellinger and Hilbert-Schmidt distances, sub- and super-fidelity: QuTiP / numpy references and axioms."""

import math

import numpy as np
import pytest
import qutip
import scipy.linalg
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, bures_angle, bures_distance, fidelity,
                           hellinger_affinity, hellinger_distance, hilbert_schmidt_distance, random_density_matrix,
                           random_pure_state, sub_fidelity, super_fidelity)
from qpnlp.testing import assert_allclose, density_matrices, ensembles

DTYPES = st.sampled_from([torch.complex64, torch.complex128])


def _pairs(cdtype, d=5, seed=0):
    """Full-rank pairs, as (ours, QuTiP's) objects. QuTiP takes matrix square roots even of projectors (its
    bures_dist of two kets is off by 1e-9 in float64), so pure states are checked on closed forms below."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for measure in ("hilbert-schmidt", "bures"):
        rho = random_density_matrix(d, measure=measure, dtype=torch.complex128, generator=gen)
        sigma = random_density_matrix(d, measure="hilbert-schmidt", dtype=torch.complex128, generator=gen)
        out.append(((rho.to(cdtype), sigma.to(cdtype)), (qutip.Qobj(rho.data.numpy()), qutip.Qobj(sigma.data.numpy()))))
    return out


@pytest.mark.parametrize("ours, theirs", [(bures_distance, qutip.bures_dist), (bures_angle, qutip.bures_angle),
                                          (hellinger_distance, qutip.hellinger_dist),
                                          (hilbert_schmidt_distance, lambda a, b: math.sqrt(qutip.hilbert_dist(a, b)))])
def test_distances_agree_with_qutip(cdtype, tol, ours, theirs):
    for (a, b), (qa, qb) in _pairs(cdtype):
        value = ours(a, b)
        assert value.dtype == torch.empty((), dtype=cdtype).real.dtype
        assert abs(float(value) - float(theirs(qa, qb))) <= 10 * tol(5), ours.__name__


def test_pure_pairs_closed_forms(cdtype, tol):
    gen = torch.Generator().manual_seed(4)
    a, b = (random_pure_state(6, batch_shape=(3,), dtype=cdtype, generator=gen) for _ in range(2))
    overlap = a.overlap(b).double()                                      # |<a|b>|^2
    assert_allclose(bures_distance(a, b).double(), (2 - 2 * overlap.sqrt()).sqrt(), atol=tol(6))
    assert_allclose(bures_angle(a, b).double(), overlap.sqrt().arccos(), atol=tol(6))
    assert_allclose(hellinger_distance(a, b).double(), (2 - 2 * overlap).sqrt(), atol=tol(6))
    assert_allclose(hilbert_schmidt_distance(a, b).double(), (2 - 2 * overlap).sqrt(), atol=tol(6))
    for fn in (sub_fidelity, super_fidelity, hellinger_affinity):
        assert_allclose(fn(a, b).double(), overlap, atol=tol(6), msg=fn.__name__)


def _np_traces(r, s):
    return np.trace(r @ s).real, np.trace(r @ s @ r @ s).real, np.trace(r @ r).real, np.trace(s @ s).real


def test_sub_and_super_fidelity_match_numpy_and_bracket_the_fidelity(cdtype, tol):
    for (a, b), _ in _pairs(cdtype, seed=3):
        r, s = a.data.to(torch.complex128).numpy(), b.data.to(torch.complex128).numpy()
        t1, t2, pa, pb = _np_traces(r, s)
        sqrt_r = scipy.linalg.sqrtm(r)
        root_f = np.trace(scipy.linalg.sqrtm(sqrt_r @ s @ sqrt_r)).real
        sub = t1 + math.sqrt(max(2 * (t1 ** 2 - t2), 0))
        sup = t1 + math.sqrt(max((1 - pa) * (1 - pb), 0))
        assert abs(float(sub_fidelity(a, b)) - sub) <= tol(5)
        assert abs(float(super_fidelity(a, b)) - sup) <= tol(5)
        assert sub - 1e-9 <= root_f ** 2 <= sup + 1e-9


@given(st.data())
def test_bounds_hold_for_random_states(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 6))
    rho = data.draw(density_matrices(dim=d, batch_shape=(3,), dtype=dtype))
    sigma = data.draw(density_matrices(dim=d, batch_shape=(3,), dtype=dtype))
    slack = 1e-3 if dtype == torch.complex64 else 1e-7
    f = fidelity(rho, sigma)
    assert bool((sub_fidelity(rho, sigma) <= f + slack).all())
    assert bool((f <= super_fidelity(rho, sigma) + slack).all())
    assert bool((hellinger_affinity(rho, sigma) <= f.sqrt() + slack).all())         # A <= sqrt(F)
    assert bool((bures_distance(rho, sigma) <= hellinger_distance(rho, sigma) + slack).all())
    assert bool((bures_angle(rho, sigma) <= math.pi / 2 + slack).all())


@given(st.data())
def test_distances_are_metrics(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 5))
    r, s, t = (data.draw(density_matrices(dim=d, batch_shape=(), dtype=dtype)) for _ in range(3))
    slack = 3e-3 if dtype == torch.complex64 else 1e-6
    for distance in (bures_distance, bures_angle, hilbert_schmidt_distance, hellinger_distance):
        rs, st_, rt = float(distance(r, s)), float(distance(s, t)), float(distance(r, t))
        assert abs(rs - float(distance(s, r))) <= slack, distance.__name__
        assert rt <= rs + st_ + slack, distance.__name__
        assert float(distance(r, r)) <= 30 * slack, distance.__name__


@given(ensembles(dim=6, batch_shape=(2,), max_states=4, masked=False))
def test_lazy_paths_equal_dense(mix):
    other = mix[torch.tensor([1, 0])]
    dense, other_dense = mix.dense(), other.dense()
    # the dense matrices carry round-off of eps, which the square roots in these functions amplify to
    # sqrt(eps) near rank-deficient states (a property of the functions, not of either path)
    atol = 20 * 6 * torch.finfo(mix.weights.dtype).eps ** 0.5
    for fn in (hellinger_affinity, sub_fidelity, super_fidelity, bures_distance):
        assert_allclose(fn(mix, other), fn(dense, other_dense), atol=atol, msg=fn.__name__)


def test_known_values(cdtype, tol):
    zero, plus = PureState.basis_state(0, 2, dtype=cdtype), PureState.normalized(torch.ones(2, dtype=cdtype))
    mixed = DensityMatrix.maximally_mixed(2, dtype=cdtype)
    cases = [
        (hellinger_affinity(zero, plus), 0.5),                  # sqrt of a projector is itself: |<a|b>|^2
        (hellinger_affinity(zero, mixed), 0.5 ** 0.5),
        (bures_angle(zero, plus), math.pi / 4),
        (hilbert_schmidt_distance(zero, mixed), 0.5 ** 0.5),     # || diag(1/2, -1/2) ||_2
        (sub_fidelity(mixed, mixed), 1.0),
        (super_fidelity(zero, plus), 0.5),                      # one side pure: = F
    ]
    for value, expected in cases:
        assert abs(float(value) - expected) <= tol(2), (value, expected)


def _full_rank(raw):
    d = raw.shape[-1]
    m = raw @ raw.mH + 0.2 * torch.diag(torch.arange(1, d + 1, dtype=torch.float64)).to(raw.dtype)
    return DensityMatrix(m / torch.diagonal(m).sum())


@pytest.mark.parametrize("fn", [bures_distance, bures_angle, hellinger_distance, hellinger_affinity,
                                hilbert_schmidt_distance, sub_fidelity, super_fidelity])
def test_gradcheck(fn):
    gen = torch.Generator().manual_seed(1)
    raw = torch.randn(4, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    sigma = _full_rank(torch.randn(4, 4, dtype=torch.complex128, generator=gen))
    assert torch.autograd.gradcheck(lambda x: fn(_full_rank(x), sigma), (raw,))
    states = torch.randn(3, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    weights = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    other = Ensemble(torch.nn.functional.normalize(torch.randn(2, 4, dtype=torch.complex128, generator=gen), dim=-1),
                     torch.tensor([0.7, 0.3], dtype=torch.float64))
    assert torch.autograd.gradcheck(
        lambda s: fn(Ensemble(torch.nn.functional.normalize(s, dim=-1), weights), other), (states,))
