"""POVMs: validity, Born probabilities (lazy = dense = numpy), constructors, Kraus updates, Naimark dilation."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, random_pure_state, validation
from qpnlp.measurement import (POVM, Projector, born_probabilities, kraus_update, lueders_update, naimark_dilation,
                               povm_probabilities, povm_probabilities_dense, random_povm)
from qpnlp.measurement._kraus import lueders_operator
from qpnlp.testing import (assert_allclose, assert_density_matrix, assert_povm, assert_probabilities,
                           assert_pure_state, assert_unitary, ensembles, povms, projectors, unitaries)

DTYPES = st.sampled_from([torch.complex64, torch.complex128])
TRINE = [[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -(0.75 ** 0.5)]]


@given(st.data())
def test_probabilities_lazy_equal_dense_equal_numpy(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 5))
    povm = data.draw(povms(dim=d, batch_shape=(), dtype=dtype))
    mix = data.draw(ensembles(dim=d, batch_shape=(2,), dtype=dtype))
    assert_povm(povm)
    lazy = povm.probabilities(mix)
    dense = povm.probabilities(mix.dense())
    effects = povm.effects().to(torch.complex128).numpy()
    reference = np.einsum("kde,bed->bk", effects, mix.dense().data.to(torch.complex128).numpy()).real
    atol = 4 * povm.num_outcomes * povm.rank * d * (2e-6 if dtype == torch.complex64 else 1e-13)
    assert lazy.shape == (2, povm.num_outcomes)
    assert_allclose(lazy, dense, atol=atol)
    assert_allclose(lazy.double(), torch.from_numpy(reference), atol=atol)
    assert_probabilities(lazy, complete=True, atol=atol)


@given(st.data())
def test_pure_states_and_global_phase(data):
    dtype = data.draw(DTYPES)
    povm = data.draw(povms(dim=3, batch_shape=(), dtype=dtype))
    psi = random_pure_state(3, batch_shape=(4,), dtype=dtype, generator=torch.Generator().manual_seed(0))
    p = povm.probabilities(psi)
    assert_allclose(p, povm.probabilities(psi.proj()), atol=1e-5 if dtype == torch.complex64 else 1e-12)
    assert_allclose(povm.probabilities(psi.global_phase(1.3)), p, atol=1e-5 if dtype == torch.complex64 else 1e-12)


def test_trine_probabilities(cdtype, tol):
    povm = POVM.from_frame(torch.tensor(TRINE, dtype=cdtype))
    assert_povm(povm)
    assert_allclose(povm.effects()[0], torch.tensor([[2 / 3, 0], [0, 0]], dtype=cdtype), atol=tol(2))
    p = povm.probabilities(PureState.basis_state(1, 2, dtype=cdtype))
    assert_allclose(p, torch.tensor([0.0, 0.5, 0.5]), atol=tol(2))


@given(st.data())
def test_constructors_agree(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 4))
    povm = data.draw(povms(dim=d, batch_shape=(), dtype=dtype))
    rho = data.draw(ensembles(dim=d, batch_shape=(), dtype=dtype)).dense()
    p = povm.probabilities(rho)
    atol = 20 * d * povm.num_outcomes * (2e-6 if dtype == torch.complex64 else 1e-13)
    for other in (POVM.from_effects(povm.effects()), POVM.from_kraus(povm.kraus()),
                  POVM.from_isometry(povm.isometry(), povm.num_outcomes), POVM.from_frame(povm.vectors[:, 0])
                  if povm.rank == 1 else povm):
        assert_allclose(other.probabilities(rho), p, atol=atol)


def test_frames_become_tight(cdtype, tol):
    gen = torch.Generator().manual_seed(3)
    frame = torch.randn(7, 3, dtype=cdtype, generator=gen)
    povm = POVM.from_frame(frame)
    assert povm.num_outcomes == 7 and povm.rank == 1
    assert_povm(povm)
    tight = POVM.from_frame(povm.vectors[:, 0])                       # a Parseval frame is kept
    assert_allclose(tight.vectors, povm.vectors, atol=tol(7))


def test_projective_measurements_are_povms(cdtype):
    gen = torch.Generator().manual_seed(0)
    basis = Projector(torch.linalg.qr(torch.randn(4, 4, dtype=cdtype, generator=gen))[0].mT.unsqueeze(-2))
    povm = POVM.from_projectors(basis)
    states = random_pure_state(4, batch_shape=(3, 2), dtype=cdtype, generator=gen).data
    weights = torch.tensor([0.25, 0.75]).expand(3, 2).to(states.real.dtype)
    assert_allclose(povm_probabilities(states, weights, povm.vectors),
                    born_probabilities(states, weights, basis.vectors))


def test_batched_povms_broadcast_against_states(cdtype, tol):
    gen = torch.Generator().manual_seed(1)
    povm = random_povm(3, 5, batch_shape=(4,), dtype=cdtype, generator=gen)
    mix = Ensemble(random_pure_state(3, batch_shape=(4, 2), dtype=cdtype, generator=gen))
    p = povm.probabilities(mix)
    assert p.shape == (4, 5)
    assert_allclose(p[2], povm[2].probabilities(mix[2]), atol=tol(3))
    assert_allclose(povm_probabilities_dense(mix.dense().data, povm.vectors), p, atol=tol(15))


def test_random_povm(cdtype, tol):
    a = random_povm(4, 6, rank=2, dtype=cdtype, generator=torch.Generator().manual_seed(5))
    b = random_povm(4, 6, rank=2, dtype=cdtype, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a.vectors, b.vectors) and a.vectors.shape == (6, 2, 4)
    assert_povm(a)
    projective = random_povm(4, 2, rank=2, dtype=cdtype, generator=torch.Generator().manual_seed(5)).effects()
    assert_allclose(projective @ projective, projective, atol=tol(4))          # k r = d: projectors
    with pytest.raises(ValueError, match="num_outcomes \\* rank >= dim"):
        random_povm(4, 3)


def test_validation_errors_name_the_problem(cdtype):
    bad = torch.stack([torch.eye(3, dtype=cdtype)[:, None], 0.5 * torch.eye(3, dtype=cdtype)[:, None]])
    with pytest.raises(ValueError, match=r"sum to the identity; got max \|sum_k E_k - I\| = 0\.75 at batch index \(1,\)"):
        POVM(bad)
    POVM(bad, validate=False)
    with pytest.raises(ValueError, match="Hermitian"):
        POVM.from_effects(torch.tensor([[[1, 1], [0, 0]], [[0, -1], [0, 1]]], dtype=cdtype))
    not_psd = torch.tensor([[[1.5, 0], [0, 0.5]], [[-0.5, 0], [0, 0.5]]], dtype=cdtype)
    POVM.from_effects(not_psd, validate=False)
    with validation("strict"), pytest.raises(ValueError, match="positive semi-definite"):
        POVM.from_effects(not_psd)
    with pytest.raises(ValueError, match="must span C\\^3"):
        POVM.from_frame(torch.eye(3, dtype=cdtype)[:2].repeat(2, 1))
    with pytest.raises(ValueError, match="equal blocks"):
        POVM.from_isometry(torch.eye(3, dtype=cdtype), 2)
    with pytest.raises(TypeError, match="complex64 or complex128"):
        POVM(torch.ones(2, 1, 2))
    with pytest.raises(ValueError, match="outcome must be in"):
        random_povm(2, 3, dtype=cdtype).post_measurement_state(PureState.basis_state(0, 2, dtype=cdtype), 3)


@given(st.data())
def test_kraus_update_lazy_equals_dense(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(2, 4))
    povm = data.draw(povms(dim=d, batch_shape=(), dtype=dtype))
    mix = data.draw(ensembles(dim=d, batch_shape=(), dtype=dtype, masked=False))
    outcome = data.draw(st.integers(0, povm.num_outcomes - 1))
    if float(povm.probabilities(mix)[outcome]) < 1e-3:
        return                                                              # (near) impossible outcome
    atol = 1e-4 if dtype == torch.complex64 else 1e-10
    for instrument in ("lueders", "kraus"):
        lazy = povm.post_measurement_state(mix, outcome, instrument=instrument)
        dense = povm.post_measurement_state(mix.dense(), outcome, instrument=instrument)
        assert isinstance(lazy, Ensemble) and isinstance(dense, DensityMatrix)
        assert_density_matrix(dense, atol=atol)
        assert_allclose(lazy.dense().data, dense.data, atol=atol)


def test_lueders_instrument_of_a_projective_measurement_is_the_lueders_rule(cdtype, tol):
    gen = torch.Generator().manual_seed(2)
    basis = Projector(torch.linalg.qr(torch.randn(3, 3, dtype=cdtype, generator=gen))[0].mT.unsqueeze(-2))
    povm = POVM.from_projectors(basis)
    psi = random_pure_state(3, dtype=cdtype, generator=gen)
    rho = Ensemble(random_pure_state(3, batch_shape=(2,), dtype=cdtype, generator=gen)).dense()
    updated = povm.post_measurement_state(psi, 1)
    assert_pure_state(updated)
    assert_allclose(updated.proj().data, lueders_update(psi, basis[1]).proj().data, atol=tol(3))
    assert_allclose(povm.post_measurement_state(rho, 2).data, lueders_update(rho, basis[2]).data, atol=tol(3))


def test_kraus_update_of_a_weak_measurement_and_impossible_outcomes(cdtype, tol):
    m = torch.tensor([[1.0, 0.0], [0.0, 0.5]], dtype=cdtype)
    psi = PureState.from_real(torch.tensor([0.6, 0.8], dtype=torch.float64)).to(cdtype)
    expected = torch.tensor([0.6, 0.4], dtype=cdtype) / (0.36 + 0.16) ** 0.5
    assert_allclose(kraus_update(psi, m).data, expected, atol=tol(2))
    with pytest.raises(ValueError, match="probability"):
        kraus_update(PureState.basis_state(1, 2, dtype=cdtype), torch.tensor([[1.0, 0.0]], dtype=cdtype))


@given(st.data())
def test_naimark_dilation_reproduces_the_statistics(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 4))
    povm = data.draw(povms(dim=d, batch_shape=(), dtype=dtype))
    mix = data.draw(ensembles(dim=d, batch_shape=(2,), dtype=dtype, masked=False))
    dilation = naimark_dilation(povm, unitary=True)
    big = povm.num_outcomes * povm.rank
    v, u = dilation.isometry, dilation.unitary
    atol = 10 * big * (2e-6 if dtype == torch.complex64 else 1e-13)
    assert v.shape == (big, d) and u.shape == (big, big)
    assert_allclose(v.mH @ v, torch.eye(d, dtype=dtype), atol=atol)
    assert_unitary(u, atol=atol)
    assert_allclose(u[:, :d], v)
    p = povm.probabilities(mix)
    embedded = Ensemble(mix.states.data @ v.mT, mix.weights, validate=False)            # V w_i
    assert_allclose(dilation.projectors.probability(embedded[:, None]), p, atol=atol)   # every outcome of each
    padded = torch.nn.functional.pad(mix.states.data, (0, big - d)) @ u.mT              # U (w_i + 0)
    assert_allclose(dilation.projectors.probability(Ensemble(padded, mix.weights, validate=False)[:, None]), p,
                    atol=atol)


def test_povm_probabilities_gradcheck():
    gen = torch.Generator().manual_seed(0)
    states = torch.randn(2, 3, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    weights = torch.rand(2, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    vectors = torch.randn(5, 2, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    # the maths is checked on free tensors (unnormalised states, weights and effects), so the checks are off
    unchecked = lambda *args: povm_probabilities(*args, validate=False)              # noqa: E731
    assert torch.autograd.gradcheck(unchecked, (states, weights, vectors))
    rho = torch.randn(2, 4, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(lambda r, v: povm_probabilities_dense(r, v, validate=False), (rho, vectors))


@given(st.data())
def test_unitary_covariance(data):
    """Rotating the states and the effects together changes nothing."""
    dtype = data.draw(DTYPES)
    u = data.draw(unitaries(dim=3, batch_shape=(), dtype=dtype))
    states = data.draw(projectors(dim=3, rank=1, batch_shape=(4,), dtype=dtype)).vectors[:, 0]
    povm = data.draw(povms(dim=3, batch_shape=(), dtype=dtype))
    rotated = POVM(povm.vectors @ u.mT, validate=False)                   # v -> U v
    atol = 1e-5 if dtype == torch.complex64 else 1e-12
    assert_allclose(rotated.probabilities(PureState(states @ u.mT)), povm.probabilities(PureState(states)), atol=atol)


def test_post_measurement_update_of_a_small_but_possible_outcome():
    # P(outcome) = 1e-6 is far above round-off (the image [0, 1e-3] is exact): the update is defined.
    psi = PureState(torch.tensor([(1 - 1e-6) ** 0.5, 1e-3], dtype=torch.complex64))
    basis = Projector(torch.eye(2, dtype=torch.complex64).unsqueeze(-2))
    povm = POVM.from_projectors(basis)
    e1 = torch.tensor([0, 1], dtype=torch.complex64)
    assert_allclose(lueders_update(psi, basis[1]).data, e1)
    assert_allclose(povm.post_measurement_state(psi, 1).data, e1)
    assert_allclose(povm.post_measurement_state(Ensemble(psi.data[None]), 1).dense().data, torch.outer(e1, e1))
    one = torch.ones(1, dtype=torch.complex64)                              # the Kraus instrument's C^r, r = 1
    assert_allclose(povm.post_measurement_state(psi, 1, instrument="kraus").data, one)
    assert_allclose(povm.post_measurement_state(Ensemble(psi.data[None]), 1, instrument="kraus").weights,
                    torch.ones(1))
    # an impossible outcome (orthogonal up to round-off) still raises, at d = 300 in complex64
    gen = torch.Generator().manual_seed(0)
    v = torch.nn.functional.normalize(torch.randn(300, dtype=torch.complex64, generator=gen), dim=0)
    w = torch.randn(300, dtype=torch.complex64, generator=gen)
    w = torch.nn.functional.normalize(w - (v.conj() @ w) * v, dim=0)
    with pytest.raises(ValueError, match="probability"):
        lueders_update(PureState(w), Projector(v[None]))
    with pytest.raises(ValueError, match="probability"):
        kraus_update(Ensemble(w[None]), v.conj()[None])


def test_lueders_update_refuses_a_raw_tensor():
    # a raw tensor has .data too: a batch of two pure states must not pass as a density matrix
    states = torch.tensor([[0.6, 0.8], [0.8, 0.6]], dtype=torch.complex64)
    with pytest.raises(TypeError, match="PureState, Ensemble or DensityMatrix"):
        lueders_update(states, Projector(torch.eye(2, dtype=torch.complex64)[:1]))
    with pytest.raises(TypeError, match="Projector"):
        lueders_update(PureState(states[0]), torch.eye(2, dtype=torch.complex64)[:1])


@pytest.mark.parametrize("frame", [torch.eye(3, dtype=torch.complex128), torch.tensor(TRINE, dtype=torch.complex128)])
def test_from_frame_gradient_at_a_tight_frame(frame):
    # tight frames have repeated singular values (NaN, or wrong, through the SVD); the polar factor is smooth there
    frame = frame.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda f: POVM.from_frame(f).vectors, (frame,))


def test_from_frame_gradient_through_torch_func():
    # the polar factor's Function set ctx in forward: torch.func.grad refused it ("must override setup_context")
    gen = torch.Generator().manual_seed(0)
    frame = torch.randn(5, 3, dtype=torch.complex128, generator=gen)
    probe = torch.randn(5, 3, dtype=torch.complex128, generator=gen)

    def loss(f):
        return (POVM.from_frame(f).vectors * probe).real.sum()

    leaf = frame.clone().requires_grad_(True)
    expected = torch.autograd.grad(loss(leaf), leaf)[0]
    assert_allclose(torch.func.grad(loss)(frame), expected, atol=1e-12)


def test_lueders_update_of_an_ensemble_keeps_a_small_but_possible_outcome():
    # P(outcome) = 1e-4 at d = 300 in complex64: below the dense tolerance (d eps, 5.7e-4), far above round-off of
    # the members' squared norms; the pure state and the Kraus update of the same ensemble accept it
    gen = torch.Generator().manual_seed(0)
    v = torch.nn.functional.normalize(torch.randn(300, dtype=torch.complex64, generator=gen), dim=0)
    u = torch.randn(300, dtype=torch.complex64, generator=gen)
    u = torch.nn.functional.normalize(u - (v.conj() @ u) * v, dim=0)
    w = 1e-2 * v + (1 - 1e-4) ** 0.5 * u
    mix = Ensemble(torch.stack([w, w]))
    updated = lueders_update(mix, Projector(v[None]))
    assert isinstance(updated, Ensemble)                                 # kept lazy, as kraus_update keeps it
    assert_allclose(updated.dense().data, torch.outer(v, v.conj()), atol=1e-4)
    with pytest.raises(ValueError, match="probability"):
        lueders_update(Ensemble(u[None]), Projector(v[None]))            # orthogonal up to round-off


def test_lueders_update_checks_the_dimension():
    projector = Projector(torch.eye(4, dtype=torch.complex64)[:1])
    e0 = torch.eye(3, dtype=torch.complex64)[0]
    for system in (PureState(e0), Ensemble(e0[None]), Ensemble(e0[None]).dense()):
        with pytest.raises(ValueError, match="dimension mismatch"):
            lueders_update(system, projector)


def test_kraus_update_refuses_a_raw_tensor_as_lueders_update_does():
    eye = torch.eye(2, dtype=torch.complex64)
    with pytest.raises(TypeError, match="kraus_update takes a PureState, Ensemble or DensityMatrix; got Tensor"):
        kraus_update(eye / 2, eye)


def test_a_povm_of_dimension_zero_is_a_clear_error():
    # the completeness check failed with torch's "amax(): Expected reduction dim -2 to have non-zero size"
    with pytest.raises(ValueError, match=r"POVM is empty: it has no dimensions \(d = 0\)"):
        POVM(torch.zeros(4, 1, 0, dtype=torch.complex64))


def test_from_projectors_refuses_a_raw_tensor():
    # was AttributeError: 'Tensor' object has no attribute 'batch_shape'
    with pytest.raises(TypeError, match="from_projectors takes a Projector .*; got Tensor"):
        POVM.from_projectors(torch.eye(2, dtype=torch.complex64))


def test_naimark_dilation_refuses_a_unitary_flag_that_is_no_bool():
    # "no" is truthy: it was read as unitary=True
    povm = random_povm(2, 3, generator=torch.Generator().manual_seed(0))
    for bad in ("no", 1, None):
        with pytest.raises(TypeError, match=f"unitary must be True or False; got {type(bad).__name__}"):
            naimark_dilation(povm, unitary=bad)


def test_from_frame_and_from_effects_of_dimension_zero_are_clear_errors():
    # were torch's IndexError ("index -1 is out of bounds", "amax(): Expected reduction dim -2 ..."), with and
    # without validation
    for validate in (True, False):
        with pytest.raises(ValueError, match=r"frame is empty: it has no dimensions \(d = 0\) \(shape \(3, 0\)\)"):
            POVM.from_frame(torch.zeros(3, 0, dtype=torch.complex64), validate=validate)
        with pytest.raises(ValueError, match=r"frame is empty: it has no vectors \(k = 0\) \(shape \(0, 2\)\)"):
            POVM.from_frame(torch.zeros(0, 2, dtype=torch.complex64), validate=validate)
        with pytest.raises(ValueError, match=r"effects is empty: it has no dimensions \(d = 0\) \(shape \(3, 0, 0\)\)"):
            POVM.from_effects(torch.zeros(3, 0, 0, dtype=torch.complex64), validate=validate)


def test_random_povm_takes_an_int_batch_shape():
    # was "Value after * must be an iterable, not int"
    assert random_povm(3, 4, batch_shape=2).batch_shape == (2,)
    assert random_povm(3, 4, batch_shape=np.int64(2)).vectors.shape == (2, 4, 1, 3)
    with pytest.raises(TypeError, match="batch_shape must be an integer or a tuple of integers; got float 2.5"):
        random_povm(3, 4, batch_shape=2.5)


def test_povm_probabilities_of_batches_that_do_not_broadcast_name_both():
    # was einsum's RuntimeError ("dimension 0 covered by ellipsis ..."); POVM.probabilities already named both
    povms = random_povm(3, 4, batch_shape=(3,), generator=torch.Generator().manual_seed(0))
    states = random_pure_state(3, batch_shape=(4, 2), generator=torch.Generator().manual_seed(1))
    pattern = r"batch shapes do not broadcast: {} has batch shape \(4,\) and vectors has batch shape \(3,\)"
    for validate in (True, False):
        with pytest.raises(ValueError, match=pattern.format("states")):
            povm_probabilities(states.data[:, 0], None, povms.vectors, validate=validate)
        with pytest.raises(ValueError, match=pattern.format("states")):
            povm_probabilities(states.data, torch.full((4, 2), 0.5), povms.vectors, validate=validate)
        with pytest.raises(ValueError, match=pattern.format("rho")):
            povm_probabilities_dense(Ensemble(states).dense().data, povms.vectors, validate=validate)
    assert povm_probabilities(states.data[:, None, 0], None, povms.vectors).shape == (4, 3, 4)   # (4, 1) with (3,)


def test_from_isometry_refuses_a_non_integer_number_of_outcomes():
    # 2.0 and True were torch's "reshape() takes 1 positional argument but 3 were given", a vector Python's
    # "not enough values to unpack"
    isometry = random_povm(2, 2, generator=torch.Generator().manual_seed(0)).isometry()
    for bad in (2.0, True, "2"):
        with pytest.raises(ValueError, match=f"num_outcomes must be an integer >= 1; got {type(bad).__name__}"):
            POVM.from_isometry(isometry, bad)
    with pytest.raises(ValueError, match=r"isometry must have shape \(\.\.\., k r, d\); got shape \(2,\)"):
        POVM.from_isometry(isometry[0], 2)
    assert POVM.from_isometry(isometry, np.int64(2)).num_outcomes == 2


def test_post_measurement_state_refuses_a_non_integer_outcome_as_the_projective_measurement_does():
    # POVM's was torch's IndexError ("only integers, slices ..."), ProjectiveMeasurement's a TypeError
    from qpnlp.measurement import ProjectiveMeasurement

    state = PureState.basis_state(0, 3)
    povm = random_povm(3, 3, generator=torch.Generator().manual_seed(0))
    for measurement in (povm, ProjectiveMeasurement(3, 3)):
        for bad in (1.0, "1", None, True, torch.tensor(False)):        # a bool: no outcome, as it is no size
            with pytest.raises(TypeError, match=f"outcome must be an integer; got {type(bad).__name__}"):
                measurement.post_measurement_state(state, bad)
        with pytest.raises(ValueError, match=r"outcome must be in \[0, 3\); got 3"):
            measurement.post_measurement_state(state, 3)
    assert_allclose(povm.post_measurement_state(state, np.int64(1)).data,
                    povm.post_measurement_state(state, 1).data)


@given(st.data())
def test_lueders_instrument_applies_the_square_root_of_the_effect(data):
    # sqrt(E) sqrt(E) = E, Hermitian: E itself would pass every test that only compares routes or uses rank-1 effects
    dtype, d = data.draw(DTYPES), data.draw(st.integers(2, 4))
    povm = data.draw(povms(dim=d, rank=2, batch_shape=(), dtype=dtype, method="haar"))
    root = lueders_operator(povm.vectors)                                   # (k, d, d)
    atol = 1e-4 if dtype == torch.complex64 else 1e-10
    assert_allclose(root, root.mH, atol=atol)
    assert_allclose(root @ root, povm.effects(), atol=atol)


def test_lueders_instrument_of_a_weak_measurement(cdtype, tol):
    # E_0 = diag(0.8, 0.2): sqrt(E_0)|+> is proportional to (sqrt 0.8, sqrt 0.2), not to (0.8, 0.2)
    effects = torch.diag_embed(torch.tensor([[0.8, 0.2], [0.2, 0.8]], dtype=torch.float64)).to(cdtype)
    povm = POVM.from_effects(effects)
    plus = PureState.normalized(torch.ones(2, dtype=cdtype))
    expected = torch.tensor([0.8 ** 0.5, 0.2 ** 0.5], dtype=cdtype)
    assert_allclose(povm.post_measurement_state(plus, 0).data, expected, atol=tol(2))
    dense = povm.post_measurement_state(plus.proj(), 0).data
    assert_allclose(dense, torch.outer(expected, expected.conj()), atol=tol(2))


def _rows(singular_values, d=4, seed=0):
    """Factor rows ``(r, d)`` with the given singular values and random singular vectors (complex128)."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.linalg.qr(torch.randn(d, d, dtype=torch.complex128, generator=gen))[0]
    p = torch.linalg.qr(torch.randn(len(singular_values), len(singular_values), dtype=torch.complex128,
                                    generator=gen))[0]
    return p @ (torch.tensor(singular_values, dtype=torch.complex128)[:, None] * q[:len(singular_values)])


@pytest.mark.parametrize("singular_values", [[1.0, 1.0], [1.0, 1.0, 1.0], [0.6, 0.6], [0.9, 0.4, 0.4], [0.8, 0.3],
                                             [1.0, 0.0], [0.7, 0.0, 0.0]])
def test_lueders_operator_gradient_at_repeated_and_zero_singular_values(singular_values):
    # the SVD's backward gave a wrong gradient at repeated singular values (the rows of every projector of rank
    # >= 2) and NaN at a zero one; sqrt(W W^H) is smooth at the first and has a kink (|eps|) at the second,
    # where the central difference that gradcheck takes is the gradient chosen (0 along the rank-raising directions)
    rows = _rows(singular_values).requires_grad_(True)
    probe = torch.randn(4, 4, dtype=torch.complex128, generator=torch.Generator().manual_seed(1))
    assert torch.autograd.gradcheck(lambda v: (lueders_operator(v) * probe).real.sum(), (rows,))
    assert torch.autograd.gradcheck(lambda v: lueders_operator(v), (rows,))


def test_lueders_update_of_a_trainable_projective_povm_has_the_right_gradient():
    # a POVM of rank-2 projectors (an isometry with k r = d, as POVMMeasurement(4, 2, rank=2) trains): the Lueders
    # instrument's gradient was silently wrong
    gen = torch.Generator().manual_seed(3)
    unitary = torch.linalg.qr(torch.randn(4, 4, dtype=torch.complex128, generator=gen))[0].requires_grad_(True)
    psi = random_pure_state(4, dtype=torch.complex128, generator=gen)
    target = random_pure_state(4, dtype=torch.complex128, generator=gen)
    with validation(False):                                    # gradcheck's perturbations leave the isometries
        assert torch.autograd.gradcheck(
            lambda u: POVM.from_isometry(u, 2).post_measurement_state(psi, 0).overlap(target), (unitary,))


def _hermitian(effects):
    return 0.5 * (effects + effects.mH)


@pytest.mark.parametrize("spectra", [[[0.5] * 3, [0.5] * 3], [[0.3, 0.3, 0.6], [0.7, 0.7, 0.4]],
                                     [[0.2, 0.5, 0.9], [0.8, 0.5, 0.1]]])
def test_from_effects_gradient_at_repeated_eigenvalues(spectra):
    # eigh's backward divided by the zero gaps of repeated eigenvalues (I/2, any degenerate effect): NaN; the
    # probabilities are linear in the effects, so their gradient is the Born one, <psi|.|psi> (closed form)
    gen = torch.Generator().manual_seed(4)
    q = torch.linalg.qr(torch.randn(3, 3, dtype=torch.complex128, generator=gen))[0]
    effects = (q * torch.tensor(spectra, dtype=torch.complex128).unsqueeze(-2)) @ q.mH
    effects = effects.requires_grad_(True)
    psi = random_pure_state(3, dtype=torch.complex128, generator=gen)
    probability = POVM.from_effects(effects).probabilities(psi)[0]
    grad = torch.autograd.grad(probability, effects)[0]
    assert_allclose(grad[0], torch.outer(psi.data, psi.data.conj()), atol=1e-12)
    assert_allclose(grad[1], torch.zeros(3, 3, dtype=torch.complex128), atol=1e-12)
    with validation(False):                                    # perturbed effects need not sum to I
        assert torch.autograd.gradcheck(lambda e: POVM.from_effects(_hermitian(e)).probabilities(psi),
                                        (effects.detach().clone().requires_grad_(True),))


def test_from_effects_gradient_of_projective_effects_is_finite():
    # rank-deficient effects (a projective measurement, rank-1 effects of d = 3: a repeated zero eigenvalue) gave
    # NaN; the positive part that the factor takes has a kink there, and the directions that raise a zero
    # eigenvalue get 0, the rest the Born gradient: the gradient of <psi|E|psi> less its null-space block
    gen = torch.Generator().manual_seed(5)
    q = torch.linalg.qr(torch.randn(3, 3, dtype=torch.complex128, generator=gen))[0]
    masks = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.complex128)
    effects = ((q * masks.unsqueeze(-2)) @ q.mH).requires_grad_(True)
    states = random_pure_state(3, batch_shape=(2,), dtype=torch.complex128, generator=gen)
    grad = torch.autograd.grad(POVM.from_effects(effects).probabilities(states).sum(), effects)[0]
    born = (states.data.unsqueeze(-1) * states.data.conj().unsqueeze(-2)).sum(0)
    for k in range(2):
        null = (q * (1 - masks[k]).unsqueeze(-2)) @ q.mH
        # the forward keeps the rows' sqrt(round-off) ~ 1e-8 in the null space, as before: the gradient is that close
        assert_allclose(grad[k], born - null @ born @ null, atol=1e-7)


def test_degenerate_effects_in_a_batch_leave_the_others_gradients_alone():
    rows = torch.stack([_rows([0.8, 0.3], seed=2), _rows([1.0, 1.0]), _rows([1.0, 0.0])]).requires_grad_(True)
    probe = torch.randn(4, 4, dtype=torch.complex128, generator=torch.Generator().manual_seed(1))
    grad = torch.autograd.grad((lueders_operator(rows) * probe).real.sum(), rows)[0]
    alone = rows[0].detach().clone().requires_grad_(True)
    assert_allclose(grad[0], torch.autograd.grad((lueders_operator(alone) * probe).real.sum(), alone)[0], atol=1e-12)
    assert bool(torch.isfinite(torch.view_as_real(grad)).all())
    effects = torch.stack([torch.diag(torch.tensor([0.2, 0.5, 0.9])), torch.eye(3) / 2]).to(torch.complex128)
    effects = torch.stack([effects, torch.eye(3) - effects], 1).requires_grad_(True)           # (2 POVMs, 2 effects)
    psi = random_pure_state(3, dtype=torch.complex128, generator=torch.Generator().manual_seed(3))
    grad = torch.autograd.grad(POVM.from_effects(effects).probabilities(psi)[..., 0].sum(), effects)[0]
    assert bool(torch.isfinite(torch.view_as_real(grad)).all())
    assert_allclose(grad[:, 0], torch.outer(psi.data, psi.data.conj()).expand(2, 3, 3), atol=1e-12)
