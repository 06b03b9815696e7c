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
                           hellinger_affinity, hellinger_distance, hilbert_schmidt_distance, infidelity, masked_softmax,
                           random_density_matrix, random_pure_state, sub_fidelity, super_fidelity)
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


def test_super_fidelity_checks_each_raw_tensor_once(monkeypatch, cdtype, tol):
    """A raw tensor was checked as a density matrix in ``_trace_product`` and again, as ``rho``, in ``_purity``: the
    work twice, the second check unable to fail. Now once per argument, the messages and values as before."""
    from qpnlp.hilbert import _mixture

    gen = torch.Generator().manual_seed(4)
    rho, sigma = (random_density_matrix(3, batch_shape=(2,), dtype=cdtype, generator=gen) for _ in range(2))
    mix = Ensemble(random_pure_state(3, batch_shape=(2, 2), dtype=cdtype, generator=gen).data)
    expected = {"dense": super_fidelity(rho, sigma), "ensemble": super_fidelity(rho, mix)}
    bad = rho.data.clone()
    bad[1, 0, 0] = math.nan
    checked, check = [], _mixture.check_density_tensor
    monkeypatch.setattr(_mixture, "check_density_tensor",
                        lambda name, data, validate: checked.append(name) or check(name, data, validate))
    assert_allclose(super_fidelity(rho.data, sigma.data), expected["dense"], atol=tol(2))
    assert checked == ["rho", "sigma"]
    checked.clear()
    assert_allclose(super_fidelity(rho.data, mix), expected["ensemble"], atol=tol(2))
    assert checked == ["rho"]
    with pytest.raises(ValueError, match=r"^rho must be finite; got \(nan\+0j\) at batch index \(1,\)"):
        super_fidelity(bad, sigma.data)


@pytest.mark.parametrize("metric", [fidelity, infidelity, bures_distance, bures_angle, sub_fidelity, super_fidelity])
def test_bad_tensor_against_a_pure_state_is_named_as_passed(metric, cdtype):
    """With a :class:`PureState` ``sigma`` the pair was swapped for ``_pure_expectation``, which named its dense
    operand ``sigma``: a NaN tensor passed as ``rho`` was reported as ``sigma``. It keeps the user's name now."""
    bad = torch.full((2, 2), math.nan, dtype=cdtype)
    psi = PureState.basis_state(0, 2, dtype=cdtype)
    with pytest.raises(ValueError, match=r"^rho must be finite; got \(nan\+0j\)"):
        metric(bad, psi)
    with pytest.raises(ValueError, match=r"^sigma must be finite; got \(nan\+0j\)"):
        metric(psi, bad)


def _full_rank(raw):
    d = raw.shape[-1]
    m = raw @ raw.mH + 0.2 * torch.diag(torch.arange(1, d + 1, dtype=torch.float64)).to(raw.dtype)
    return DensityMatrix(m / torch.diagonal(m).sum())


@pytest.mark.parametrize("kind", ["pure", "dense", "ensemble"])
def test_bures_angle_gradient_is_zero_at_equal_states(cdtype, kind):
    """arccos has an infinite derivative at 1: the angle between equal states had an all-NaN gradient (the
    distance, safe_sqrt, had 0). Its minimum: gradient 0, and the value is still arccos of the root fidelity."""
    gen = torch.Generator().manual_seed(5)
    psi = random_pure_state(4, dtype=cdtype, generator=gen)
    data = {"pure": psi.data, "dense": DensityMatrix.maximally_mixed(4, dtype=cdtype).data,
            "ensemble": random_pure_state(4, batch_shape=(2,), dtype=cdtype, generator=gen).data}[kind]
    x = data.clone().requires_grad_(True)
    build = {"pure": PureState, "dense": DensityMatrix,
             "ensemble": lambda s: Ensemble(s, torch.tensor([0.5, 0.5], dtype=s.real.dtype))}[kind]
    angle = bures_angle(build(x), build(x))
    angle.backward()
    assert float(angle.detach()) <= 1e-3 and bool(torch.isfinite(torch.view_as_real(x.grad)).all())
    a, b = random_pure_state(4, batch_shape=(3,), dtype=cdtype, generator=gen), psi
    assert_allclose(bures_angle(a, b), fidelity(a, b, squared=False).clamp(0, 1).arccos(), atol=1e-5)


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


# --- gradients at repeated singular values / eigenvalues -------------------------------------------------------------
# torch's SVD and eigh backwards divide by the gaps between singular values / eigenvalues, so the affinity's gradient
# was all-NaN for padded ensembles (zero columns in the factor), equal weights on orthogonal words and dense states with
# a repeated eigenvalue. It is now the Daleckii-Krein one of the square root, checked against central differences.

_D = 5


def _gen_states(n, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, _D, dtype=torch.complex128, generator=gen), dim=-1)


def _others():
    gen = torch.Generator().manual_seed(11)
    return {"ensemble": Ensemble(_gen_states(3, 12), torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)),
            "dense": random_density_matrix(_D, dtype=torch.complex128, generator=gen),
            "pure": random_pure_state(_D, dtype=torch.complex128, generator=gen)}


def _traceless_hermitian(d, gen):
    h = torch.randn(d, d, dtype=torch.complex128, generator=gen)
    h = h + h.mH
    return h - torch.eye(d, dtype=h.dtype) * torch.diagonal(h).sum() / d


def _spectral_density(spectrum, seed=2):
    u = torch.linalg.qr(torch.randn(_D, _D, dtype=torch.complex128, generator=torch.Generator().manual_seed(seed)))[0]
    return u @ torch.diag(torch.tensor(spectrum, dtype=torch.complex128)) @ u.mH


_PAD_MASK = torch.tensor([True, True, False, False])
_PAD_WEIGHTS = torch.tensor([0.6, 0.4, 0.0, 0.0], dtype=torch.float64)
_THIRDS = torch.full((3,), 1 / 3, dtype=torch.float64)
_REPEAT = torch.tensor([0, 1, 0, 2])                                       # "a b a <pad>": a rank-deficient factor

# (point x0 (complex128), rho(x) as a state, kind of direction): the degenerate points of the bug report
_DEGENERATE = {
    "padded": (_gen_states(4, 1), lambda s: Ensemble(torch.nn.functional.normalize(s, dim=-1), _PAD_WEIGHTS,
                                                     mask=_PAD_MASK), "any"),
    "orthogonal-equal-weights": (torch.eye(_D, dtype=torch.complex128)[:3], lambda s: Ensemble(
        torch.nn.functional.normalize(s, dim=-1), _THIRDS), "any"),
    "repeated-word": (_gen_states(3, 3), lambda e: Ensemble(torch.nn.functional.normalize(e, dim=-1)[_REPEAT],
                                                            torch.tensor([0.4, 0.3, 0.3, 0.0], dtype=torch.float64),
                                                            mask=torch.tensor([True, True, True, False])), "any"),
    "dense-maximally-mixed": (torch.eye(_D, dtype=torch.complex128) / _D, DensityMatrix, "traceless"),
    "dense-repeated-eigenvalues": (_spectral_density([0.4, 0.2, 0.2, 0.1, 0.1]), DensityMatrix, "traceless"),
}


@pytest.mark.parametrize("other", ["ensemble", "dense", "pure"])
@pytest.mark.parametrize("point", sorted(_DEGENERATE))
@pytest.mark.parametrize("fn", [hellinger_affinity, hellinger_distance])
def test_hellinger_gradient_is_finite_and_matches_finite_differences_at_repeated_values(fn, point, other):
    x0, state, direction = _DEGENERATE[point]
    sigma = _others()[other]
    x = x0.clone().requires_grad_(True)
    fn(state(x), sigma).backward()
    assert torch.isfinite(torch.view_as_real(x.grad)).all()
    gen = torch.Generator().manual_seed(7)
    for _ in range(2):
        h = (_traceless_hermitian(_D, gen) if direction == "traceless"
             else torch.randn(x0.shape, dtype=torch.complex128, generator=gen))
        t = 1e-6
        numeric = (fn(state(x0 + t * h), sigma) - fn(state(x0 - t * h), sigma)) / (2 * t)
        assert abs(float(numeric) - float((x.grad.conj() * h).sum().real)) < 1e-7


def test_hellinger_gradient_is_finite_on_both_sides_and_for_softmax_weights():
    a_states, b_states = _gen_states(4, 4).requires_grad_(True), _gen_states(4, 5).requires_grad_(True)
    scores = torch.randn(4, dtype=torch.float64, generator=torch.Generator().manual_seed(6), requires_grad=True)
    mask_b = torch.tensor([True, False, True, False])
    a = Ensemble(a_states, masked_softmax(scores, _PAD_MASK), mask=_PAD_MASK)
    b = Ensemble(b_states, torch.tensor([0.5, 0.0, 0.5, 0.0], dtype=torch.float64), mask=mask_b)
    hellinger_distance(a, b).backward()
    for grad in (a_states.grad, b_states.grad, scores.grad):
        assert torch.isfinite(torch.view_as_real(grad) if grad.is_complex() else grad).all()
    assert (a_states.grad[2:] == 0).all() and (scores.grad[2:] == 0).all()          # padding gets exactly nothing
    root = DensityMatrix.maximally_mixed(_D, dtype=torch.complex128).data.requires_grad_(True)
    hellinger_affinity(DensityMatrix(root), DensityMatrix(root.detach().clone().requires_grad_(True))).backward()
    assert torch.isfinite(torch.view_as_real(root.grad)).all()


def _normalised_hermitian(x):
    h = (x + x.mH) / 2
    return h / torch.diagonal(h, dim1=-2, dim2=-1).sum(-1).real.unsqueeze(-1).unsqueeze(-1)


def test_hellinger_gradcheck_at_repeated_values():
    sigma = _others()["ensemble"]
    for point in ("padded", "orthogonal-equal-weights", "repeated-word"):
        x0, state, _ = _DEGENERATE[point]
        x = x0.clone().requires_grad_(True)
        assert torch.autograd.gradcheck(lambda s: hellinger_distance(state(s), sigma), (x,))
    eye = torch.eye(_D, dtype=torch.complex128) / _D
    assert torch.autograd.gradcheck(lambda x: hellinger_affinity(DensityMatrix(_normalised_hermitian(x)), sigma),
                                    (eye.clone().requires_grad_(True),))
    batch = torch.stack([_gen_states(4, 8), _gen_states(4, 9)]).requires_grad_(True)      # (2,) padded vs (2, 1) pure
    masks = torch.tensor([[True, True, False, False], [True, True, True, False]])
    weights = torch.tensor([[0.6, 0.4, 0.0, 0.0], [0.5, 0.25, 0.25, 0.0]], dtype=torch.float64)
    pure = PureState(torch.stack([_gen_states(1, 10), _gen_states(1, 11)]))
    assert torch.autograd.gradcheck(lambda s: hellinger_affinity(
        Ensemble(torch.nn.functional.normalize(s, dim=-1), weights, mask=masks), pure), (batch,))


def _reference_affinity(rho, sigma):
    """The former formula, through torch's SVD / eigh backwards (right away from repeated values)."""
    def spectral(obj):
        if isinstance(obj, PureState):
            return torch.ones(1, dtype=torch.float64), obj.data.unsqueeze(-1)
        if isinstance(obj, Ensemble):
            u, s, _ = torch.linalg.svd(obj.factor(), full_matrices=False)
            return s.square(), u
        lam, vecs = torch.linalg.eigh(obj.data)
        return lam.clamp_min(0), vecs
    (lam, u), (mu, v) = spectral(rho), spectral(sigma)
    overlaps = (u.mH @ v).abs().square()
    return lam.sqrt() @ overlaps @ mu.sqrt()


@pytest.mark.parametrize("other", ["ensemble", "dense", "pure"])
def test_hellinger_gradient_is_unchanged_at_generic_points(other):
    sigma = _others()[other]
    gen = torch.Generator().manual_seed(13)
    weights = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    cases = [(lambda s: Ensemble(torch.nn.functional.normalize(s, dim=-1), weights), _gen_states(3, 14)),
             (lambda p: PureState(torch.nn.functional.normalize(p, dim=-1)), _gen_states(1, 15)[0]),
             (lambda r: DensityMatrix((r + r.mH) / 2), random_density_matrix(_D, dtype=torch.complex128,
                                                                             generator=gen).data)]
    for state, x0 in cases:
        new, old = x0.clone().requires_grad_(True), x0.clone().requires_grad_(True)
        value = hellinger_affinity(state(new), sigma)
        value.backward()
        _reference_affinity(state(old), sigma).backward()
        assert abs(float(value.detach()) - float(_reference_affinity(state(x0), sigma))) < 1e-14
        torch.testing.assert_close(new.grad, old.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["dense", "ensemble"])
def test_sub_fidelity_with_a_pure_side_is_the_fidelity_to_the_dtype(kind):
    # E = Tr rho sigma exactly when one state is pure, but the radicand 2[(Tr rho sigma)^2 - Tr(rho sigma)^2]
    # was round-off of eps whose square root added sqrt(eps) (1e-5 in complex64) and a gradient of noise
    gen = torch.Generator().manual_seed(5)
    for _ in range(5):
        psi = random_pure_state(50, dtype=torch.complex64, generator=gen)
        other = (random_density_matrix(50, dtype=torch.complex64, generator=gen) if kind == "dense" else
                 Ensemble(random_pure_state(50, batch_shape=(5,), dtype=torch.complex64, generator=gen)))
        exact = fidelity(psi.to(torch.complex128), other.to(torch.complex128))
        for value in (sub_fidelity(psi, other), sub_fidelity(other, psi)):
            assert abs(float(value) - float(exact)) <= 1e-6
    sigma = random_density_matrix(4, dtype=torch.complex128, generator=gen)
    raw = torch.randn(2, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda p: sub_fidelity(PureState(torch.nn.functional.normalize(p, dim=-1)), sigma), (raw,))


def _nan_pairs():
    """Pairs with a NaN state or a NaN weight (validation off), on every route of the metrics below."""
    eye = torch.eye(4, dtype=torch.complex128)
    nan_state = PureState(torch.tensor([math.nan, 1, 0, 0], dtype=torch.complex128), validate=False)
    nan_weights = Ensemble(eye[:3], torch.tensor([math.nan, 0.5, 0.5], dtype=torch.float64), validate=False)
    ensemble = Ensemble(eye[1:], torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64))
    nan_dense = DensityMatrix(torch.full((4, 4), math.nan, dtype=torch.complex128), validate=False)
    pure = PureState(eye[0])
    return {"pure-pure": (nan_state, pure), "pure-ensemble": (nan_state, ensemble),
            "weights-pure": (nan_weights, pure), "dense-pure": (nan_dense, pure),
            "weights-ensemble": (nan_weights, ensemble)}


@pytest.mark.parametrize("pair", list(_nan_pairs()))
@pytest.mark.parametrize("metric", [hilbert_schmidt_distance, bures_distance, bures_angle, fidelity,
                                    sub_fidelity, super_fidelity, "trace_distance"])
def test_a_nan_state_or_weight_gives_nan_not_a_plausible_number(metric, pair):
    """With validation off ``safe_sqrt`` read NaN as 0: a NaN state had a Hilbert-Schmidt distance of 0 to every
    state (the dense difference's squared norm, NaN, rooted to 0), a Bures distance of 0 (1.41 for a NaN density
    matrix), a NaN weight of an ensemble read as 0 (fidelity 0 against a pure state, Hilbert-Schmidt distance 0 to
    another ensemble). NaN now, as for any other NaN input, also where an eigen-decomposition refused NaN with a
    ``LinAlgError`` (``eigvalsh`` of the trace distance's dense route, the SVD of two ensembles; ``decompose``)."""
    from qpnlp.hilbert import trace_distance

    metric = trace_distance if metric == "trace_distance" else metric
    rho, sigma = _nan_pairs()[pair]
    value = metric(rho, sigma)
    assert torch.isnan(value).all(), float(value)


def test_safe_sqrt_keeps_nan_and_a_zero_gradient_at_zero():
    """NaN stays NaN, kept or dropped; the gradient at 0 and at a dropped value is 0, as before."""
    from qpnlp.hilbert._linalg import safe_sqrt

    values = torch.tensor([math.nan, -1.0, 0.0, 4.0, 9.0], dtype=torch.float64, requires_grad=True)
    out = safe_sqrt(values)
    assert torch.isnan(out[0]) and torch.equal(out[1:], torch.tensor([0.0, 0.0, 2.0, 3.0], dtype=torch.float64))
    out[1:].sum().backward()
    assert torch.equal(values.grad[1:], torch.tensor([0.0, 0.0, 0.25, 1 / 6], dtype=torch.float64))
    dropped = safe_sqrt(values.detach(), torch.tensor([False, True, True, True, False]))
    assert torch.isnan(dropped[0]) and torch.equal(dropped[1:], torch.tensor([0.0, 0.0, 2.0, 0.0],
                                                                             dtype=torch.float64))
