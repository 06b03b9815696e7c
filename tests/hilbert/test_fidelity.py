"""Fidelity: exact for rank-deficient states (issue 17), QuTiP agreement, symmetry and gradients.

The reference for rank-deficient states is the definition
(Tr sqrt(sqrt(rho) sigma sqrt(rho)))^2 evaluated with mpmath at 50 digits on
the exact mixtures of the same member states, so the only error left is the
library's. The old matrix-square-root implementation missed these by about
sqrt(eps): 2e-4 in complex64 and 1e-8 in complex128.
"""

import mpmath
import numpy as np
import pytest
import qutip
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, fidelity, random_density_matrix, random_pure_state
from qpnlp.testing import assert_allclose, density_matrices, ensembles, unitaries

mpmath.mp.dps = 50


def _mp_mixture(states: torch.Tensor, weights: torch.Tensor) -> mpmath.matrix:
    s = states.detach().cpu().to(torch.complex128).numpy()
    w = weights.detach().cpu().to(torch.float64).numpy()
    d = s.shape[-1]
    rho = mpmath.matrix(d, d)
    for i in range(s.shape[0]):
        v = [mpmath.mpc(complex(x).real, complex(x).imag) for x in s[i]]
        for a in range(d):
            for b in range(d):
                rho[a, b] += mpmath.mpf(float(w[i])) * v[a] * mpmath.conj(v[b])
    return rho


def _mp_root_fidelity(rho: mpmath.matrix, sigma: mpmath.matrix) -> float:
    e, q = mpmath.eighe(rho)
    root = q * mpmath.diag([mpmath.sqrt(max(x, 0)) for x in e]) * q.transpose_conj()
    m = root * sigma * root
    e, _ = mpmath.eighe((m + m.transpose_conj()) / 2)
    return float(sum(mpmath.sqrt(max(x, 0)) for x in e))


def _ensemble(n, d, dtype, gen) -> Ensemble:
    states = torch.nn.functional.normalize(torch.randn(n, d, dtype=dtype, generator=gen), dim=-1)
    weights = torch.rand(n, dtype=torch.float64, generator=gen).to(states.real.dtype)
    return Ensemble(states, weights / weights.sum())


@pytest.mark.parametrize("seed", range(4))
def test_rank_deficient_fidelity_is_exact_to_the_tolerance_table(cdtype, tol, seed):
    """Two sentences of 2 and 3 words in d = 6, as ensembles, dense matrices and against a pure word."""
    gen = torch.Generator().manual_seed(seed)
    d = 6
    a, b = _ensemble(2, d, cdtype, gen), _ensemble(3, d, cdtype, gen)
    psi = PureState.normalized(torch.randn(d, dtype=cdtype, generator=gen))
    rho_a, rho_b = _mp_mixture(a.states.data, a.weights), _mp_mixture(b.states.data, b.weights)
    rho_psi = _mp_mixture(psi.data[None], torch.ones(1))
    root, root_psi = _mp_root_fidelity(rho_a, rho_b), _mp_root_fidelity(rho_psi, rho_b)
    expected = torch.tensor(root ** 2, dtype=torch.float64)
    expected_psi = torch.tensor(root_psi ** 2, dtype=torch.float64)
    atol = tol(d)
    for value in (fidelity(a, b), fidelity(b, a), fidelity(a.dense(), b.dense()), fidelity(a, b.dense())):
        assert_allclose(value.double(), expected, atol=atol)
    assert_allclose(fidelity(a, b, squared=False).double(), torch.tensor(root, dtype=torch.float64), atol=atol)
    for value in (fidelity(psi, b), fidelity(b.dense(), psi), fidelity(psi.proj(), b.dense())):
        assert_allclose(value.double(), expected_psi, atol=atol)


def test_fidelity_agrees_with_qutip(cdtype, tol):
    """Full-rank pairs and pure pairs. QuTiP's own square root loses digits on rank-deficient matrices
    (1e-8 in complex128 for a pure state against a mixture), so those are checked against mpmath above."""
    gen = torch.Generator().manual_seed(11)
    d = 5
    for measure in ("hilbert-schmidt", "bures"):
        rho = random_density_matrix(d, measure=measure, dtype=torch.complex128, generator=gen)
        sigma = random_density_matrix(d, measure="bures", dtype=torch.complex128, generator=gen)
        expected = qutip.fidelity(qutip.Qobj(rho.data.numpy()), qutip.Qobj(sigma.data.numpy()))   # root fidelity
        value = fidelity(rho.to(cdtype), sigma.to(cdtype), squared=False)
        assert value.dtype == torch.empty((), dtype=cdtype).real.dtype
        assert abs(float(value) - expected) <= tol(d)
    psi, phi = (random_pure_state(d, dtype=torch.complex128, generator=gen) for _ in range(2))
    expected = qutip.fidelity(qutip.Qobj(psi.data.numpy()[:, None]), qutip.Qobj(phi.data.numpy()[:, None]))
    assert abs(float(fidelity(psi.to(cdtype), phi.to(cdtype), squared=False)) - expected) <= tol(d)


@given(st.data())
def test_fidelity_is_one_on_the_diagonal_symmetric_and_unitarily_invariant(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    d = data.draw(st.integers(1, 6))
    rho = data.draw(density_matrices(dim=d, batch_shape=(2,), dtype=dtype))
    sigma = data.draw(density_matrices(dim=d, batch_shape=(2,), dtype=dtype))
    u = data.draw(unitaries(dim=d, batch_shape=(), dtype=dtype))
    eps = torch.finfo(rho.data.real.dtype).eps
    atol = 50 * d * eps ** 0.5 if d > 1 else 50 * eps     # d = 1: a phase's |u|^2 rounds to 1 +- a few ulp, 10 seen
    f = fidelity(rho, sigma)
    assert bool(((f >= 0) & (f <= 1)).all())
    assert_allclose(fidelity(sigma, rho), f, atol=atol)
    assert_allclose(fidelity(rho.evolve(u), sigma.evolve(u)), f, atol=atol)
    assert_allclose(fidelity(rho, rho), torch.ones(2, dtype=f.dtype), atol=atol)


@given(ensembles(dim=6, batch_shape=(3,), max_states=4))
def test_lazy_fidelity_of_ensembles_equals_dense(mix):
    """Both paths are exact for these low-rank mixtures, so they agree to the tolerance table."""
    other = mix[torch.tensor([2, 0, 1])]                                # another sentence of each batch row
    atol = 10 * 6 * torch.finfo(mix.weights.dtype).eps ** 0.75
    assert_allclose(fidelity(mix, other), fidelity(mix.dense(), other.dense()), atol=atol)
    assert_allclose(fidelity(mix, mix), torch.ones(3, dtype=mix.weights.dtype), atol=atol)


def test_fidelity_broadcasts_over_batch_dims(cdtype, tol):
    gen = torch.Generator().manual_seed(2)
    rho = random_density_matrix(3, rank=2, batch_shape=(4, 1), dtype=cdtype, generator=gen)
    sigma = random_density_matrix(3, batch_shape=(5,), dtype=cdtype, generator=gen)
    f = fidelity(rho, sigma)
    assert f.shape == (4, 5)
    assert_allclose(f[2, 3], fidelity(rho[2, 0], sigma[3]), atol=tol(3))


def test_fidelity_rejects_mismatched_dimensions():
    with pytest.raises(ValueError, match="dimension mismatch"):
        fidelity(DensityMatrix.maximally_mixed(2), PureState.basis_state(0, 3))


def _full_rank(raw: torch.Tensor) -> torch.Tensor:
    d = raw.shape[-1]
    m = raw @ raw.mH + 0.2 * torch.diag(torch.arange(1, d + 1, dtype=raw.real.dtype)).to(raw.dtype)
    return m / torch.diagonal(m).sum()


def test_fidelity_gradcheck_on_every_path():
    gen = torch.Generator().manual_seed(5)
    raw_a = torch.randn(4, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    raw_b = torch.randn(4, 4, dtype=torch.complex128, generator=gen)
    sigma = DensityMatrix(_full_rank(raw_b))
    states = torch.randn(3, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    weights = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    other = Ensemble(torch.nn.functional.normalize(torch.randn(2, 4, dtype=torch.complex128, generator=gen), dim=-1),
                     torch.tensor([0.6, 0.4], dtype=torch.float64))

    def ensemble_of(s):
        return Ensemble(torch.nn.functional.normalize(s, dim=-1), weights)

    assert torch.autograd.gradcheck(lambda r: fidelity(_full_rank(r), sigma), (raw_a,))                  # dense
    assert torch.autograd.gradcheck(lambda r: fidelity(_full_rank(r), sigma, squared=False), (raw_a,))
    assert torch.autograd.gradcheck(lambda s: fidelity(ensemble_of(s), other), (states,))              # ensembles
    assert torch.autograd.gradcheck(lambda s: fidelity(ensemble_of(s), sigma), (states,))              # mixed kinds
    psi = torch.randn(4, dtype=torch.complex128, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(                                                                    # pure side
        lambda p: fidelity(PureState(torch.nn.functional.normalize(p, dim=-1)), sigma), (psi,))


def test_old_square_root_formula_misses_the_tolerance(cdtype, tol):
    """The regression this file guards: sqrt(rho) of a rank-deficient rho loses half the digits."""
    gen = torch.Generator().manual_seed(0)
    a, b = _ensemble(2, 6, cdtype, gen), _ensemble(3, 6, cdtype, gen)
    r, s = a.dense().data, b.dense().data
    lam, vec = torch.linalg.eigh(r)
    root = (vec * lam.clamp_min(0).sqrt().to(vec.dtype)) @ vec.mH
    old = torch.linalg.eigvalsh(root @ s @ root).clamp_min(0).sqrt().sum().square()
    expected = _mp_root_fidelity(_mp_mixture(a.states.data, a.weights), _mp_mixture(b.states.data, b.weights)) ** 2
    assert abs(float(old) - expected) > tol(6)                     # the old formula
    assert abs(float(fidelity(a, b)) - expected) <= tol(6)         # the new one
    assert np.isfinite(expected)


@pytest.mark.parametrize("spectrum", [(1 / 3, 1 / 3, 1 / 3), (0.5, 0.25, 0.25)])
def test_dense_fidelity_gradient_is_finite_at_repeated_eigenvalues(spectrum):
    # the factor came from eigh, whose backward divides by eigenvalue gaps: NaN at the maximally mixed state
    gen = torch.Generator().manual_seed(5)
    sigma = random_density_matrix(3, dtype=torch.complex128, generator=gen)
    rho0 = torch.diag(torch.tensor(spectrum, dtype=torch.complex128))
    x = rho0.clone().requires_grad_(True)
    fidelity(DensityMatrix(x), sigma).backward()
    assert torch.isfinite(torch.view_as_real(x.grad)).all()
    h = torch.randn(3, 3, dtype=torch.complex128, generator=gen)
    h = h + h.mH
    h = h - torch.eye(3, dtype=h.dtype) * torch.diagonal(h).sum().real / 3                 # traceless Hermitian
    t = 1e-6
    numeric = (fidelity(DensityMatrix(rho0 + t * h), sigma) - fidelity(DensityMatrix(rho0 - t * h), sigma)) / (2 * t)
    assert abs(float(numeric) - float((x.grad.conj() * h).sum().real)) < 1e-7


@pytest.mark.parametrize("kind", ["ensemble", "dense"])
def test_pure_states_against_a_batch_never_copy_the_batch_once_per_state(kind, largest_tensor):
    """``(V, 1)`` pure states against ``(B,)`` mixtures (every word with every sentence): ``a.mH @ b`` and
    ``psi @ sigma @ psi`` went through matmul, which copies each mixture's d x n factor (d x d matrix) once per
    word, V B n d (V B d^2) entries; einsum contracts the broadcast batch without copying either side."""
    from qpnlp.hilbert import hellinger_affinity, sub_fidelity, super_fidelity
    V, B, n, d = 40, 16, 12, 64
    gen = torch.Generator().manual_seed(8)
    words = random_pure_state(d, batch_shape=(V, 1), dtype=torch.complex128, generator=gen)
    members = random_pure_state(d, batch_shape=(B, n), dtype=torch.complex128, generator=gen)
    mixtures = Ensemble(members, torch.softmax(torch.randn(B, n, dtype=torch.float64, generator=gen), -1))
    other = mixtures if kind == "ensemble" else mixtures.dense()
    with largest_tensor() as seen:
        values = [f(words, other) for f in (fidelity, sub_fidelity, super_fidelity, hellinger_affinity)]
    operand = B * d * d if kind == "dense" else B * n * d
    assert seen.largest <= 2 * operand + V * B * d, seen.largest        # never V B n d (V B d^2)
    psi, factor = words.data.unsqueeze(-1), mixtures.factor()             # the previous computation, expanded
    expected = (psi.mH @ factor).abs().square().sum((-2, -1))
    for value in values[:3]:
        assert_allclose(value, expected)
    u, s, _ = torch.linalg.svd(factor, full_matrices=False)             # Tr sqrt(|psi><psi|) sqrt(sigma)
    assert_allclose(values[3], ((psi.mH @ u).abs().square().squeeze(-2) * s).sum(-1), atol=1e-9)


def _storages_of_at_least(nbytes: int):
    """A dispatch mode collecting the distinct storages of at least ``nbytes`` that operations return (``.seen``)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Mode(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes() >= nbytes:
                    self.seen.add(t.untyped_storage().data_ptr())
            return out

    return Mode()


@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex64])
def test_pure_infidelity_against_a_batch_builds_one_residual_per_pair(dtype):
    """``(V, 1)`` pure states against ``(B,)`` ensembles: 1 - F needs the residual P_perp B per pair (V B d m
    entries), and builds nothing else that large but its square: ``psi.mH @ b`` (matmul) copied B once per word,
    ``b - psi @ c`` held the product beside the residual, and the squared modulus three real halves."""
    from qpnlp.hilbert import infidelity
    V, B, m, d = 6, 5, 7, 32
    gen = torch.Generator().manual_seed(11)
    words = random_pure_state(d, batch_shape=(V, 1), dtype=dtype, generator=gen)
    members = random_pure_state(d, batch_shape=(B, m), dtype=dtype, generator=gen)
    real = torch.float64 if dtype == torch.complex128 else torch.float32
    mixtures = Ensemble(members, torch.softmax(torch.randn(B, m, dtype=real, generator=gen), -1))
    mode = _storages_of_at_least(V * B * d * m * members.data.element_size())
    with mode:
        value = infidelity(words, mixtures)
    assert len(mode.seen) <= 2, len(mode.seen)                     # the residual and its square
    psi, b = words.data.unsqueeze(-1), mixtures.factor()            # the previous computation
    residual = b - psi @ ((psi.mH @ b) / (psi.mH @ psi).real)
    expected = residual.abs().square().sum((-2, -1)) / b.abs().square().sum((-2, -1))
    assert_allclose(value, expected.clamp(0, 1), rtol=1e-12 if dtype == torch.complex128 else 1e-5, atol=0)


def test_pure_infidelity_reads_lazy_conjugate_views():
    """A PureState may hold a lazy ``conj()`` view; the squared norms of ``view_as_real`` resolve it first."""
    from qpnlp.hilbert import infidelity
    gen = torch.Generator().manual_seed(12)
    a, b = (random_pure_state(6, batch_shape=(3,), dtype=torch.complex128, generator=gen) for _ in range(2))
    lazy, plain = PureState(b.data.conj()), PureState(b.data.conj().resolve_conj())
    assert lazy.data.is_conj()
    assert_allclose(infidelity(a, lazy), infidelity(a, plain), rtol=1e-14, atol=0)
    assert_allclose(infidelity(lazy, a), 1 - fidelity(plain, a), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_the_gradient_of_fidelity_at_a_zero_weight_is_its_derivative(dtype):
    r"""F of a pure state against an ensemble is linear in the weights, :math:`\sum_j q_j |\langle\psi|w_j\rangle|^2`,
    but went through the factor's :math:`\sqrt{q_j}`, whose gradient at a zero weight is taken as 0: dF/dq_3 was
    0 where it is :math:`|\langle\psi|w_3\rangle|^2` (complex128: 0.276), while :func:`infidelity`
    (``_pure_infidelity``, linear in the weights) had the true derivative, so along a direction of the simplex that
    raises the zero weight, :math:`q + t (e_3 - e_1)`, F's slope was -0.18 and 1 - F's -0.09, not its negative.
    Now the derivative, and the slopes of F and 1 - F are opposite; sub- and super-fidelity (F for a pure side)
    take the same route."""
    from qpnlp.hilbert import infidelity, sub_fidelity, super_fidelity

    gen = torch.Generator().manual_seed(0)
    states = torch.nn.functional.normalize(torch.randn(3, 5, dtype=dtype, generator=gen), dim=-1)
    psi = PureState(torch.nn.functional.normalize(torch.randn(5, dtype=dtype, generator=gen), dim=-1))
    real = dtype.to_real()
    tol = dict(atol=1e-6, rtol=0) if dtype == torch.complex64 else dict(atol=1e-14, rtol=0)
    direction = torch.tensor([-1.0, 0.0, 1.0], dtype=real)

    def gradient(function):
        weights = torch.tensor([0.4, 0.6, 0.0], dtype=real, requires_grad=True)
        function(psi, Ensemble(states, weights)).backward()
        return weights.grad

    expected = (states.conj() @ psi.data).abs().square()
    for function in (fidelity, sub_fidelity, super_fidelity):
        assert_allclose(gradient(function), expected, **tol)
    assert_allclose(gradient(fidelity) @ direction, -(gradient(infidelity) @ direction), **tol)
