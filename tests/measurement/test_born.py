"""Born-rule probabilities: lazy, dense and pure paths agree and obey the axioms."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import Ensemble, PureState
from qpnlp.measurement import (Projector, ProjectiveMeasurement, born_probabilities, born_probabilities_dense,
                               word_probabilities)
from qpnlp.testing import (assert_allclose, assert_probabilities, ensembles, projectors, pure_states,
                           unitaries)

DTYPES = st.sampled_from([torch.complex64, torch.complex128])


@given(st.data())
def test_lazy_equals_dense_for_any_projectors(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 6))
    mix = data.draw(ensembles(dim=d, dtype=dtype))
    proj = data.draw(projectors(dim=d, batch_shape=(data.draw(st.integers(1, 4)),), dtype=dtype))
    lazy = born_probabilities(mix.states.data, mix.weights, proj.vectors)
    dense = born_probabilities_dense(mix.dense().data, proj.vectors)
    assert lazy.shape == mix.batch_shape + proj.batch_shape
    assert_allclose(lazy, dense)
    assert_probabilities(lazy)


@given(st.data())
def test_complete_measurement_probabilities_sum_to_one(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 6))
    mix = data.draw(ensembles(dim=d, dtype=dtype))
    basis = data.draw(unitaries(dim=d, batch_shape=(), dtype=dtype))
    assert_probabilities(born_probabilities(mix.states.data, mix.weights, basis), complete=True)


@given(st.data())
def test_gleason_linearity(data):
    """Probability of a mixture = mixture of the members' probabilities."""
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 5))
    mix = data.draw(ensembles(dim=d, batch_shape=(), dtype=dtype, masked=False))
    proj = data.draw(projectors(dim=d, batch_shape=(3,), dtype=dtype))
    members = word_probabilities(mix.states.data, proj.vectors)       # (n, k)
    assert_allclose(born_probabilities(mix.states.data, mix.weights, proj.vectors), mix.weights @ members)


@given(st.data())
def test_invariance_under_global_phase_and_joint_unitary(data):
    dtype, d = data.draw(DTYPES), data.draw(st.integers(1, 5))
    w = data.draw(pure_states(dim=d, batch_shape=(2,), dtype=dtype))
    proj = data.draw(projectors(dim=d, batch_shape=(3,), dtype=dtype))
    u = data.draw(unitaries(dim=d, batch_shape=(), dtype=dtype))
    angle = data.draw(st.floats(-7, 7))
    p = word_probabilities(w.data, proj.vectors)
    assert_allclose(word_probabilities(w.global_phase(angle).data, proj.vectors), p)
    rotated_w = w.evolve(u).data
    rotated_v = proj.vectors @ u.mT                                   # rows v -> U v
    assert_allclose(word_probabilities(rotated_w, rotated_v), p)


@given(pure_states(dim=4, batch_shape=(3,)), st.integers(0, 2**32 - 1))
def test_rank_r_projector_probability_equals_sum_of_rank_one(w, seed):
    v = torch.linalg.qr(torch.randn(4, 4, dtype=w.dtype, generator=torch.Generator().manual_seed(seed)))[0].mT[:3]
    rank3 = born_probabilities(w.data, None, v.unsqueeze(0))
    assert_allclose(rank3[..., 0], word_probabilities(w.data, v).sum(-1))


def test_projector_matrix_is_conjugated_and_idempotent(cdtype):
    v = torch.tensor([[0.6, 0.8j]], dtype=cdtype)
    p = Projector(v).matrix()
    assert_allclose(p, torch.tensor([[0.36, -0.48j], [0.48j, 0.64]], dtype=cdtype))
    assert_allclose(p @ p, p)
    assert_allclose(p, p.mH)


def test_projector_probability_dispatch(cdtype):
    gen = torch.Generator().manual_seed(0)
    states = torch.nn.functional.normalize(torch.randn(2, 3, 4, dtype=cdtype, generator=gen), dim=-1)
    mix = Ensemble(states)
    proj = Projector(torch.linalg.qr(torch.randn(4, 4, dtype=cdtype, generator=gen))[0].mT[:2].unsqueeze(1))
    assert_allclose(proj.probability(mix[:, None]), proj.probability(mix.dense()[:, None]))
    assert proj.probability(PureState(states)[..., None]).shape == (2, 3, 2)


def test_non_orthonormal_projector_is_rejected():
    with pytest.raises(ValueError, match="orthonormal rows"):
        Projector(torch.ones(1, 2, 2, dtype=torch.complex64))


def test_shape_and_dtype_errors():
    with pytest.raises(ValueError, match="dimension mismatch"):
        word_probabilities(torch.ones(3, dtype=torch.complex64), torch.ones(2, 4, dtype=torch.complex64))
    with pytest.raises(TypeError, match="complex"):
        word_probabilities(torch.ones(4, dtype=torch.complex64), torch.ones(2, 4))
    with pytest.raises(ValueError, match=r"weights must have shape \(2, 3\)"):
        born_probabilities(torch.ones(2, 3, 4, dtype=torch.complex64), torch.ones(2, 4),
                           torch.ones(2, 4, dtype=torch.complex64))


def test_shape_errors_show_the_layout_asked_for():
    # pure states (no weights) were told to have shape (..., n, d)
    eye = torch.eye(2, dtype=torch.complex64)
    with pytest.raises(ValueError, match=r"states must have shape \(\.\.\., d\); got shape \(\)"):
        word_probabilities(torch.tensor(1 + 0j), eye)
    with pytest.raises(ValueError, match=r"states must have shape \(\.\.\., d\); got shape \(\)"):
        born_probabilities(torch.tensor(1 + 0j), None, eye)
    with pytest.raises(ValueError, match=r"states must have shape \(\.\.\., n, d\); got shape \(2,\)"):
        born_probabilities(eye[0], torch.ones(()), eye)


def test_no_downcast_when_mixing_precisions():
    states = torch.eye(2, dtype=torch.complex64)
    p = born_probabilities(states, torch.tensor([0.5, 0.5], dtype=torch.float64), torch.eye(2, dtype=torch.complex64))
    assert p.dtype == torch.float64
    assert word_probabilities(states, torch.eye(2, dtype=torch.complex128)).dtype == torch.float64


def test_born_gradcheck_float64():
    gen = torch.Generator().manual_seed(0)
    states = torch.randn(2, 3, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    logits = torch.randn(2, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    vectors = torch.randn(5, 4, dtype=torch.complex128, generator=gen, requires_grad=True)

    def f(s, l, v):
        s = s / torch.linalg.vector_norm(s, dim=-1, keepdim=True)
        v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)
        return born_probabilities(s, torch.softmax(l, -1), v)

    assert torch.autograd.gradcheck(f, (states, logits, vectors))
    rho = torch.randn(4, 4, dtype=torch.complex128, generator=gen, requires_grad=True)
    # the maths is linear in rho: its gradient is checked on any Hermitian matrix, so the checks are off
    assert torch.autograd.gradcheck(lambda r, v: born_probabilities_dense(r + r.mH, v, validate=False),
                                    (rho, vectors))


def test_born_probabilities_on_device(device, cdtype):
    m = ProjectiveMeasurement(6, 4, dtype=cdtype, device=device)
    states = torch.nn.functional.normalize(torch.randn(2, 5, 6, dtype=cdtype, device=device), dim=-1)
    p = m(states, torch.full((2, 5), 0.2, device=device))
    assert p.device.type == device.type and p.shape == (2, 4)
    assert_probabilities(p)


@pytest.mark.parametrize("conj", [False, True])
def test_squared_overlaps_on_the_real_view_equal_the_complex_product(cdtype, tol, conj):
    """The real-block product of ``squared_overlaps`` against ``|states @ vectors.mH|^2``: values and
    gradients, lazily conjugated inputs, broadcast batch dims and a single state."""
    from qpnlp.measurement._born import squared_overlaps
    gen = torch.Generator().manual_seed(3)
    states = torch.randn(2, 4, 6, dtype=cdtype, generator=gen).requires_grad_()
    vectors = torch.randn(3, 1, 5, 6, dtype=cdtype, generator=gen).requires_grad_()
    grad = torch.randn(3, 2, 4, 5, dtype=cdtype.to_real(), generator=gen)

    def run(fn):
        states.grad = vectors.grad = None
        s, v = (states.conj(), vectors.conj()) if conj else (states, vectors)
        out = fn(s, v)
        out.backward(grad)
        return out.detach(), states.grad, vectors.grad

    reference = run(lambda s, v: (s @ v.mH).abs().square())
    for a, b in zip(reference, run(squared_overlaps)):
        assert_allclose(b, a, atol=tol(6))
    single, rows = states[0, 0].detach(), vectors[0, 0].detach()
    assert_allclose(squared_overlaps(single, rows), (rows.conj() @ single).abs().square(), atol=tol(6))


def test_projector_error_names_the_batch_index():
    vectors = torch.eye(3, dtype=torch.complex64)[:2].repeat(2, 3, 1, 1)            # batch (2, 3) of rank-2 projectors
    vectors[1, 2] *= 2
    with pytest.raises(ValueError, match=r"orthonormal rows.*at batch index \(1, 2\)"):
        Projector(vectors)


def test_a_rank_zero_projector_is_the_zero_projector():
    # rows (r = 0): the orthonormality check failed with torch's "amax(): Expected reduction dim -2 to have non-zero
    # size" in Projector and every Born function; no row is vacuously orthonormal, and Tr(rho 0) = 0
    empty = torch.zeros(2, 0, 3, dtype=torch.complex64)
    states = torch.eye(3, dtype=torch.complex64)
    assert Projector(empty).vectors.shape == (2, 0, 3)
    assert torch.equal(word_probabilities(states, empty), torch.zeros(3, 2))
    assert torch.equal(born_probabilities_dense(torch.eye(3, dtype=torch.complex64) / 3, empty), torch.zeros(2))


def test_a_mask_on_another_device_than_the_weights_is_named():
    # was torch's "Tensor on device cpu is not on the expected device meta!" from inside masked_fill
    states = torch.eye(3, dtype=torch.complex64).expand(2, 3, 3)
    mask = torch.ones(2, 3, dtype=torch.bool, device="meta")
    with pytest.raises(ValueError, match="arguments must be on one device; got weights on cpu, mask on meta"):
        ProjectiveMeasurement(3, 2)(states, torch.full((2, 3), 1 / 3), mask)


@pytest.mark.parametrize("members", [3, 5000])                       # a matrix product, then torch's sum
def test_born_rule_keeps_the_states_precision_under_autocast(members):
    """Under CPU bfloat16 autocast the real-view product of squared_overlaps and the product of weighted_sum were
    lowered to bfloat16 (word/born/povm probabilities of complex64 states off by 4e-3, born_probabilities bfloat16
    up to 4096 members and float32 beyond); a complex product is never lowered: now float32 and the same values."""
    from qpnlp.measurement import povm_probabilities
    g = torch.Generator().manual_seed(0)
    states = torch.randn(2, members, 6, dtype=torch.complex64, generator=g)
    states = states / states.norm(dim=-1, keepdim=True)
    weights = torch.softmax(torch.randn(2, members, generator=g, dtype=torch.float64), -1).float()
    basis = torch.linalg.qr(torch.randn(6, 6, dtype=torch.complex64, generator=g))[0]
    calls = [lambda: word_probabilities(states, basis), lambda: born_probabilities(states, weights, basis),
             lambda: povm_probabilities(states, weights, basis.unsqueeze(1))]
    for call in calls:
        plain = call()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lowered = call()
        assert lowered.dtype == torch.float32
        torch.testing.assert_close(lowered, plain, rtol=0, atol=0)
