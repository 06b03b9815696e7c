"""Linear and Renyi entropies and the quantum Jensen-Shannon divergence: QuTiP / scipy references and properties."""

import math

import numpy as np
import pytest
import qutip
import scipy.linalg
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, linear_entropy, masked_softmax,
                           quantum_jensen_shannon_divergence, random_density_matrix, random_pure_state, random_unitary,
                           relative_entropy, renyi_entropy, von_neumann_entropy)
from qpnlp.testing import assert_allclose, density_matrices, ensembles

DTYPES = st.sampled_from([torch.complex64, torch.complex128])


def _states(cdtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = [random_density_matrix(5, rank=r, measure=m, dtype=torch.complex128, generator=gen)
           for r, m in ((5, "hilbert-schmidt"), (5, "bures"), (2, "hilbert-schmidt"))]
    return [(rho.to(cdtype), rho.data.numpy()) for rho in out]


def _np_renyi(rho: np.ndarray, alpha: float) -> float:
    lam = np.clip(scipy.linalg.eigvalsh(rho), 0, None)
    lam = lam[lam > 1e-12]
    if alpha == 1:
        return float(-(lam * np.log(lam)).sum())
    if math.isinf(alpha):
        return float(-np.log(lam.max()))
    if alpha == 0:
        return float(np.log(len(lam)))
    return float(np.log((lam ** alpha).sum()) / (1 - alpha))


def test_linear_entropy_agrees_with_qutip(cdtype, tol):
    for rho, ref in _states(cdtype):
        assert abs(float(linear_entropy(rho)) - qutip.entropy_linear(qutip.Qobj(ref))) <= tol(5)


@pytest.mark.parametrize("alpha", [0, 0.5, 1, 2, 3.5, math.inf])
def test_renyi_entropy_agrees_with_scipy(cdtype, tol, alpha):
    for rho, ref in _states(cdtype, seed=1):
        # alpha < 1 weighs small eigenvalues up: their complex64 error is relative, not absolute
        atol = tol(5) if alpha >= 1 or cdtype == torch.complex128 else 20 * tol(5)
        assert abs(float(renyi_entropy(rho, alpha)) - _np_renyi(ref, alpha)) <= atol


def test_renyi_limits_and_bases(cdtype, tol):
    rho, ref = _states(cdtype, seed=2)[0]
    vn = float(von_neumann_entropy(rho))
    assert abs(float(renyi_entropy(rho, 1)) - qutip.entropy_vn(qutip.Qobj(ref))) <= tol(5)
    eps = 1e-3 if cdtype == torch.complex64 else 1e-6
    assert abs(float(renyi_entropy(rho, 1 + eps)) - vn) < 10 * eps
    assert abs(float(renyi_entropy(rho, 1 - eps)) - vn) < 10 * eps
    assert abs(float(renyi_entropy(rho, 2)) + math.log(float(rho.purity()))) <= tol(5)
    mixed = DensityMatrix.maximally_mixed(8, dtype=cdtype)
    for alpha in (0, 0.3, 1, 2, math.inf):
        assert abs(float(renyi_entropy(mixed, alpha, base=2)) - 3.0) <= tol(8)
    assert abs(float(renyi_entropy(PureState.basis_state(1, 4, dtype=cdtype), 0.5))) <= tol(4)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        renyi_entropy(mixed, -1)


@given(st.data())
def test_renyi_is_non_increasing_in_alpha_and_bounded(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 6))
    rho = data.draw(density_matrices(dim=d, batch_shape=(2,), dtype=dtype))
    slack = 1e-3 if dtype == torch.complex64 else 1e-8
    values = [renyi_entropy(rho, a) for a in (0, 0.5, 1, 2, 5, math.inf)]
    for high, low in zip(values, values[1:]):
        assert bool((low <= high + slack).all())
    assert bool((values[0] <= math.log(d) + slack).all()) and bool((values[-1] >= -slack).all())


@given(ensembles(dim=6, batch_shape=(2,), max_states=4, masked=False))
def test_lazy_entropies_equal_dense(mix):
    atol = 1e-4 if mix.dtype == torch.complex64 else 1e-9
    for fn in (linear_entropy, lambda r: renyi_entropy(r, 2), lambda r: renyi_entropy(r, 0.5)):
        assert_allclose(fn(mix), fn(mix.dense()), atol=atol)


def test_qjsd_agrees_with_qutip_entropies(cdtype, tol):
    states = _states(cdtype, seed=3)
    for (rho, r), (sigma, s) in zip(states, states[1:]):
        expected = (qutip.entropy_vn(qutip.Qobj((r + s) / 2))
                    - 0.5 * qutip.entropy_vn(qutip.Qobj(r)) - 0.5 * qutip.entropy_vn(qutip.Qobj(s)))
        assert abs(float(quantum_jensen_shannon_divergence(rho, sigma)) - expected) <= tol(5)


def test_qjsd_known_values(cdtype, tol):
    a, b = PureState.basis_state(0, 3, dtype=cdtype), PureState.basis_state(2, 3, dtype=cdtype)
    assert abs(float(quantum_jensen_shannon_divergence(a, b, base=2)) - 1.0) <= tol(3)     # orthogonal: 1 bit
    assert abs(float(quantum_jensen_shannon_divergence(a, a))) <= tol(3)
    plus = PureState.normalized(torch.tensor([1, 0, 1], dtype=cdtype))
    # two pure states: the average has eigenvalues (1 +- |<a|b>|) / 2
    lam = np.array([1 + 0.5 ** 0.5, 1 - 0.5 ** 0.5]) / 2
    assert abs(float(quantum_jensen_shannon_divergence(a, plus)) + (lam * np.log(lam)).sum()) <= tol(3)


@given(st.data())
def test_qjsd_is_symmetric_bounded_and_lazy_equals_dense(data):
    dtype = data.draw(DTYPES)
    a = data.draw(ensembles(dim=5, batch_shape=(2,), dtype=dtype, masked=False))
    b = data.draw(ensembles(dim=5, batch_shape=(2,), dtype=dtype, masked=False))
    slack = 1e-4 if dtype == torch.complex64 else 1e-9
    lazy = quantum_jensen_shannon_divergence(a, b)
    assert_allclose(lazy, quantum_jensen_shannon_divergence(b, a), atol=slack)
    assert_allclose(lazy, quantum_jensen_shannon_divergence(a.dense(), b.dense()), atol=slack)
    assert bool(((lazy >= 0) & (lazy <= math.log(2) + slack)).all())


def _full_rank(raw):
    d = raw.shape[-1]
    m = raw @ raw.mH + 0.2 * torch.diag(torch.arange(1, d + 1, dtype=torch.float64)).to(raw.dtype)
    return DensityMatrix(m / torch.diagonal(m).sum())


@pytest.mark.parametrize("fn", [linear_entropy, lambda r: renyi_entropy(r, 0.5), lambda r: renyi_entropy(r, 2.0),
                                lambda r: renyi_entropy(r, math.inf)])
def test_entropy_gradcheck(fn):
    raw = torch.randn(4, 4, dtype=torch.complex128, generator=torch.Generator().manual_seed(0), requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: fn(_full_rank(x)), (raw,))


def test_qjsd_gradcheck():
    gen = torch.Generator().manual_seed(1)
    raw = torch.randn(4, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    sigma = _full_rank(torch.randn(4, 4, dtype=torch.complex128, generator=gen))
    assert torch.autograd.gradcheck(lambda x: quantum_jensen_shannon_divergence(_full_rank(x), sigma), (raw,))
    states = torch.randn(2, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    other = Ensemble(torch.nn.functional.normalize(torch.randn(1, 4, dtype=torch.complex128, generator=gen), dim=-1))
    weights = torch.tensor([0.7, 0.3], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda s: quantum_jensen_shannon_divergence(
        Ensemble(torch.nn.functional.normalize(s, dim=-1), weights), other), (states,))


# --- relative entropy: gradient in sigma at repeated eigenvalues ------------------------------------------------------
# Tr rho log sigma was differentiated through eigh, whose backward divides by eigenvalue gaps: NaN at sigma = I/d. It is
# now the Daleckii-Krein gradient of the log, (log mu_i - log mu_j)/(mu_i - mu_j) and 1/mu_i where they are equal.

def _traceless_hermitian(d, gen):
    h = torch.randn(d, d, dtype=torch.complex128, generator=gen)
    h = h + h.mH
    return h - torch.eye(d, dtype=h.dtype) * torch.diagonal(h).sum() / d


def _sigma(spectrum, seed=2):
    d = len(spectrum)
    u = torch.linalg.qr(torch.randn(d, d, dtype=torch.complex128, generator=torch.Generator().manual_seed(seed)))[0]
    return u @ torch.diag(torch.tensor(spectrum, dtype=torch.complex128)) @ u.mH


def _rhos(d=5):
    gen = torch.Generator().manual_seed(4)
    return {"full-rank": random_density_matrix(d, dtype=torch.complex128, generator=gen).data,
            "rank-2": random_density_matrix(d, rank=2, dtype=torch.complex128, generator=gen).data,
            "pure": PureState(torch.nn.functional.normalize(torch.randn(d, dtype=torch.complex128, generator=gen),
                                                            dim=-1)).proj().data}


@pytest.mark.parametrize("rho", ["full-rank", "rank-2", "pure"])
@pytest.mark.parametrize("spectrum", [(0.2,) * 5, (0.4, 0.2, 0.2, 0.1, 0.1)], ids=["maximally-mixed", "repeated"])
def test_relative_entropy_gradient_in_sigma_is_finite_at_repeated_eigenvalues(spectrum, rho):
    r, s0 = _rhos()[rho], _sigma(spectrum)
    s = s0.clone().requires_grad_(True)
    relative_entropy(r, s).backward()
    assert torch.isfinite(torch.view_as_real(s.grad)).all()
    gen = torch.Generator().manual_seed(8)
    for _ in range(2):
        h, t = _traceless_hermitian(5, gen), 1e-6
        numeric = (relative_entropy(r, s0 + t * h) - relative_entropy(r, s0 - t * h)) / (2 * t)
        assert abs(float(numeric) - float((s.grad.conj() * h).sum().real)) < 1e-7


def test_relative_entropy_gradient_at_the_maximally_mixed_state_is_closed_form():
    # S(rho || sigma) = -S(rho) - Tr rho log sigma; at sigma = I/d every divided difference of log is d: grad = -d rho
    r = _rhos()["full-rank"]
    s = (torch.eye(5, dtype=torch.complex128) / 5).requires_grad_(True)
    relative_entropy(r, s).backward()
    torch.testing.assert_close(s.grad, -5 * r, rtol=0, atol=1e-12)


def test_relative_entropy_gradcheck_at_repeated_eigenvalues():
    def normalised(x):
        h = (x + x.mH) / 2
        return h / torch.diagonal(h, dim1=-2, dim2=-1).sum(-1).real.unsqueeze(-1).unsqueeze(-1)

    rhos = _rhos()
    eye = torch.eye(5, dtype=torch.complex128) / 5
    assert torch.autograd.gradcheck(lambda x: relative_entropy(rhos["full-rank"], normalised(x)),
                                    (eye.clone().requires_grad_(True),))
    batch = torch.stack([rhos["full-rank"], rhos["rank-2"]]).unsqueeze(1)                 # (2, 1) rho vs (2,) sigma
    sigmas = torch.stack([eye, _sigma((0.4, 0.2, 0.2, 0.1, 0.1))]).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: relative_entropy(batch, normalised(x)), (sigmas,))
    states = torch.randn(4, 5, dtype=torch.complex128, generator=torch.Generator().manual_seed(9))
    weights = torch.tensor([0.6, 0.4, 0.0, 0.0], dtype=torch.float64)
    mix = Ensemble(torch.nn.functional.normalize(states, dim=-1), weights,
                   mask=torch.tensor([True, True, False, False]))
    assert torch.autograd.gradcheck(lambda x: relative_entropy(mix, normalised(x)), (eye.clone().requires_grad_(True),))


def _reference_relative_entropy(r, s):
    """The former formula, through eigh's backward (right away from repeated eigenvalues)."""
    tol = 1e-12
    mu, vecs = torch.linalg.eigh(s)
    populations = torch.einsum("ak,ab,bk->k", vecs.conj(), r, vecs).real
    cross = torch.where(populations > tol, populations * torch.log(mu.clamp_min(tol)), torch.zeros_like(mu)).sum()
    return -von_neumann_entropy(r) - cross


def _assert_gradients_match_the_reference(r0, s0, *, atol):
    """The gradients of ``relative_entropy`` in rho and sigma at (r0, s0) equal autograd through the forward
    formula (``_reference_relative_entropy``)."""
    r, s = r0.clone().requires_grad_(True), s0.clone().requires_grad_(True)
    relative_entropy(r, s).backward()
    r_ref, s_ref = r0.clone().requires_grad_(True), s0.clone().requires_grad_(True)
    _reference_relative_entropy(r_ref, s_ref).backward()
    torch.testing.assert_close(s.grad, s_ref.grad, rtol=0, atol=atol)
    torch.testing.assert_close(r.grad, r_ref.grad, rtol=0, atol=atol)


@pytest.mark.parametrize("rho", ["full-rank", "rank-2"])
def test_relative_entropy_gradients_are_unchanged_at_generic_points(rho):
    gen = torch.Generator().manual_seed(10)
    r0, s0 = _rhos()[rho], random_density_matrix(5, dtype=torch.complex128, generator=gen).data
    _assert_gradients_match_the_reference(r0, s0, atol=1e-12)


@pytest.mark.parametrize("base", [1, 1.0, 0, -2.0, math.inf, math.nan])
def test_a_logarithm_base_that_is_not_one_is_required(base):
    # base=1 divided by log 1 = 0 and returned inf (or NaN) without a word; base=0 raised "math domain error"
    from qpnlp.hilbert import log_negativity, mutual_information, renyi_entropy
    rho, bell = DensityMatrix.maximally_mixed(4), PureState.normalized(torch.tensor([1, 0, 0, 1], dtype=torch.complex64))
    calls = [lambda: von_neumann_entropy(rho, base=base), lambda: renyi_entropy(rho, 2, base=base),
             lambda: relative_entropy(rho, rho, base=base), lambda: quantum_jensen_shannon_divergence(rho, rho, base=base),
             lambda: mutual_information(bell, (2, 2), base=base), lambda: log_negativity(bell, (2, 2), base=base)]
    for call in calls:
        with pytest.raises(ValueError, match="base must be"):
            call()


def test_log_divided_differences_are_the_difference_quotients_of_the_clamped_log():
    # K_ij = (f(mu_i) - f(mu_j)) / (mu_i - mu_j), f = log max(mu, tol); f'(mu) = 1/mu above tol, 0 below
    from qpnlp.hilbert._entropy import _log_divided_differences
    tol = 1e-12
    mu = torch.tensor([1e-20, 0.3, 0.3, 0.7], dtype=torch.float64)
    f = torch.log(mu.clamp_min(tol))
    expected = torch.empty(4, 4, dtype=torch.float64)
    for i in range(4):
        for j in range(4):
            if mu[i] == mu[j]:
                expected[i, j] = 1 / mu[i] if mu[i] > tol else 0.0
            else:
                expected[i, j] = (f[i] - f[j]) / (mu[i] - mu[j])
    torch.testing.assert_close(_log_divided_differences(mu, tol), expected, rtol=1e-12, atol=0)


def test_relative_entropy_gradient_in_rho_where_rho_leaves_an_eigenvector_of_sigma_empty():
    # rho has no population on sigma's third eigenvector: the terms log(mu_k) [p_k > tol] of the documented
    # gradient drop it, as autograd through the forward formula does (the generic test populates every k)
    gen = torch.Generator().manual_seed(3)
    u = random_unitary(3, dtype=torch.complex128, generator=gen)
    rotate = lambda *diag: u @ torch.diag(torch.tensor(diag, dtype=torch.complex128)) @ u.mH  # noqa: E731
    r0, s0 = rotate(0.6, 0.4, 0.0), rotate(0.5, 0.3, 0.2)
    _assert_gradients_match_the_reference(r0, s0, atol=1e-10)


# --- QJSD of one state against a batch: the (n + m) x (n + m) Gram matrix from blocks ------------------------------
# The average (rho + sigma)/2 was the Ensemble of both member lists, concatenated per pair of the broadcast batch:
# one state against N ensembles built (N, n + m, d) and then its factor (N, d, n + m), twice the batch.

def _concatenated_ensemble(rho, sigma) -> Ensemble:
    """The Ensemble of both member lists, concatenated per pair of the broadcast batch (``_average`` before it built
    the d x d matrix of each side)."""
    from qpnlp.hilbert._entropy import _as_ensemble
    from qpnlp.hilbert._linalg import promote
    a, b = _as_ensemble(rho), _as_ensemble(sigma)
    batch = torch.broadcast_shapes(a.batch_shape, b.batch_shape)
    states = torch.cat([s.expand(*batch, *s.shape[-2:]) for s in promote(a.states.data, b.states.data)], -2)
    weights = [w.to(states.real.dtype).expand(*batch, w.shape[-1]) for w in (a.weights, b.weights)]
    return Ensemble._trusted(states=states, weights=0.5 * torch.cat(weights, -1))


def _qjsd_through_the_concatenated_ensemble(rho, sigma):
    """The previous computation: the spectrum of the Ensemble of both member lists."""
    from qpnlp.hilbert._entropy import _xlogx
    from qpnlp.hilbert._operands import spectrum
    own = -(_xlogx(spectrum(rho)).sum(-1) + _xlogx(spectrum(sigma)).sum(-1))
    mixed = -_xlogx(spectrum(_concatenated_ensemble(rho, sigma), validate=False)).sum(-1)
    return (mixed - 0.5 * own).clamp_min(0)


def _one_and_batch(kind, layout, dtype, d=40, m=6, n=3, seed=3):
    gen = torch.Generator().manual_seed(seed)
    real = torch.float64 if dtype == torch.complex128 else torch.float32
    one_shape, batch_shape = ((), (12,)) if layout == "one" else ((5, 1), (7,))
    if kind == "pure":
        one = random_pure_state(d, batch_shape=one_shape, dtype=dtype, generator=gen)
    else:
        members = random_pure_state(d, batch_shape=one_shape + (n,), dtype=dtype, generator=gen)
        one = Ensemble(members, torch.softmax(torch.randn(one_shape + (n,), generator=gen, dtype=real), -1))
    members = random_pure_state(d, batch_shape=batch_shape + (m,), dtype=dtype, generator=gen)
    mask = torch.ones(batch_shape + (m,), dtype=torch.bool)
    mask[..., -2:] = False                                                      # padding: weight exactly 0
    batch = Ensemble(members, masked_softmax(torch.randn(batch_shape + (m,), generator=gen, dtype=real), mask))
    return one, batch


@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex64])
@pytest.mark.parametrize("layout", ["one", "broadcast"])
@pytest.mark.parametrize("kind", ["pure", "ensemble"])
def test_qjsd_against_a_batch_never_concatenates_the_factors(kind, layout, dtype, largest_tensor):
    """No (..., d, n + m) tensor: the Gram matrix of [A, B] from A^H A, A^H B and B^H B; same values as the
    concatenated ensemble and the dense matrices."""
    one, batch = _one_and_batch(kind, layout, dtype)
    width = 1 if kind == "pure" else one.num_states
    with largest_tensor() as seen:
        value = quantum_jensen_shannon_divergence(one, batch)
    pairs = math.prod(torch.broadcast_shapes(one.batch_shape, batch.batch_shape))
    assert seen.largest < pairs * batch.dim * (width + batch.num_states), seen.largest
    atol = 1e-12 if dtype == torch.complex128 else 2e-6
    assert_allclose(value, _qjsd_through_the_concatenated_ensemble(one, batch), atol=atol, rtol=0)
    assert_allclose(quantum_jensen_shannon_divergence(batch, one), value, atol=atol, rtol=0)
    dense = quantum_jensen_shannon_divergence(one.dense() if kind == "ensemble" else one.proj(), batch.dense())
    assert_allclose(value, dense, atol=1e-10 if dtype == torch.complex128 else 2e-5, rtol=0)


def test_qjsd_of_a_complex64_state_against_a_complex128_batch_agrees_with_the_concatenated_ensemble():
    one, batch = _one_and_batch("ensemble", "one", torch.complex128)
    low = Ensemble(one.states.data.to(torch.complex64), one.weights.float())
    value = quantum_jensen_shannon_divergence(low, batch)
    assert value.dtype == torch.float64
    assert_allclose(value, _qjsd_through_the_concatenated_ensemble(low, batch), atol=2e-7, rtol=0)


@pytest.mark.parametrize("case", ["equal", "orthogonal", "padded"])
def test_qjsd_gradient_through_the_block_gram_matrix_is_finite(case):
    """Equal ensembles (J = 0, the average has the eigenvalues of each, repeated), orthogonal members, and
    padding (weights exactly 0, where sqrt(p) has an infinite slope): finite gradients, 0 at equality."""
    gen = torch.Generator().manual_seed(5)
    eye = torch.eye(8, dtype=torch.complex128)
    states = torch.randn(3, 8, dtype=torch.complex128, generator=gen)
    other = eye[3:5] if case == "orthogonal" else torch.randn(2, 8, dtype=torch.complex128, generator=gen)
    logits = torch.randn(3, dtype=torch.float64, generator=gen, requires_grad=True)
    raw = states.clone().requires_grad_(True)
    mask = torch.tensor([True, True, case != "padded"])

    def divergence(raw, logits):
        rho = Ensemble(torch.nn.functional.normalize(raw if case != "orthogonal" else raw * 0 + eye[:3], dim=-1),
                       masked_softmax(logits, mask))
        sigma = rho if case == "equal" else Ensemble(torch.nn.functional.normalize(other, dim=-1))
        return quantum_jensen_shannon_divergence(rho, sigma)

    value = divergence(raw, logits)
    value.backward()
    assert torch.isfinite(raw.grad).all() and torch.isfinite(logits.grad).all()
    if case == "equal":
        assert abs(float(value.detach())) < 1e-12
        assert float(raw.grad.abs().max()) < 1e-6 and float(logits.grad.abs().max()) < 1e-6
    if case == "orthogonal":
        assert abs(float(value.detach()) - math.log(2)) < 1e-12
    if case == "padded":
        assert float(logits.grad[2]) == 0.0
