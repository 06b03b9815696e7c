"""Measurements moved between precisions: orthonormal (complete) to float64's precision, complex kept complex."""

from __future__ import annotations

import pytest
import torch

from qpnlp.hilbert import PureState, random_pure_state, random_unitary, tolerance
from qpnlp.measurement import POVM, POVMMeasurement, Projector, ProjectiveMeasurement, random_povm


def _single_precision_measurements():
    g = torch.Generator().manual_seed(0)
    u = random_unitary(12, batch_shape=(2,), generator=g)
    return {
        "rank-1 projectors": Projector(u.unsqueeze(-2)),
        "rank-4 projectors": Projector(u.unflatten(-2, (3, 4))),
        "projective POVM": POVM.from_projectors(Projector(u[0].unsqueeze(-2))),
        "rank-1 POVM of a frame": POVM.from_frame(torch.randn(30, 12, dtype=torch.complex64, generator=g)),
        "rank-2 POVM": random_povm(12, 7, rank=2, generator=g),
    }


@pytest.mark.parametrize("name", list(_single_precision_measurements()))
def test_a_single_precision_measurement_moved_to_double_passes_its_own_checks(name):
    """Projector / POVM .to(torch.float64) kept float32's round-off, max |V V^dagger - I| ~ 4e-7 (|sum_k E_k - I|
    up to 9e-7), and Projector(p.vectors) / POVM(p.vectors) refused the moved object (tolerance ~4e-14); the move
    now re-orthonormalises (a QR), to float64's round-off and within float32's of the original."""
    measurement = _single_precision_measurements()[name]
    wide = measurement.to(torch.float64)
    assert wide.dtype == torch.complex128
    type(measurement)(wide.vectors)                                     # its own check, at float64's tolerance
    moved = (wide.vectors - measurement.vectors.to(torch.complex128)).abs().amax()
    assert float(moved) <= tolerance(torch.float32, 12)
    if isinstance(wide, POVM):
        p = wide.probabilities(random_pure_state(12, batch_shape=(5,), dtype=torch.complex128,
                                                 generator=torch.Generator().manual_seed(1)))
        assert float((p.sum(-1) - 1).abs().amax()) < 1e-13


def test_a_projector_off_by_more_than_round_off_is_kept_and_the_move_is_differentiable():
    vectors = random_unitary(4, generator=torch.Generator().manual_seed(2))[:2]
    off = Projector(vectors * 1.01, validate=False).to(torch.float64)
    assert torch.equal(off.vectors, (vectors * 1.01).to(torch.complex128))
    x = vectors.clone().requires_grad_()
    Projector(x).to(torch.float64).probability(PureState.basis_state(0, 4, dtype=torch.complex128)).sum().backward()
    assert bool(torch.isfinite(torch.view_as_real(x.grad)).all())


@pytest.mark.parametrize("build", [lambda dtype: ProjectiveMeasurement(4, complete=True, dtype=dtype),
                                   lambda dtype: ProjectiveMeasurement(4, 3, init="random", dtype=dtype),
                                   lambda dtype: POVMMeasurement(4, 6, dtype=dtype)],
                         ids=["orthonormal", "unit rows", "povm"])
def test_measurement_modules_read_a_dtype_as_a_precision_and_stay_complex(build):
    """nn.Module.to(torch.float64) cast a complex128 measurement's vectors to float64, dropping their imaginary
    parts (torch's warning only), and double() left a complex64 one complex64; now float64 means complex128 and
    float32 complex64, as for the models and the states, and half precisions are refused."""
    states = random_pure_state(4, batch_shape=(3,), dtype=torch.complex128, generator=torch.Generator().manual_seed(3))
    wide = build(torch.complex128)
    expected = wide(states)
    assert wide.to(torch.float64) is wide and next(wide.parameters()).dtype == torch.complex128
    torch.testing.assert_close(wide(states), expected, rtol=0, atol=0)
    single = build(torch.complex64)
    assert next(single.double().parameters()).dtype == torch.complex128
    assert single(states).dtype == torch.float64
    assert next(single.float().parameters()).dtype == torch.complex64
    assert next(single.type(torch.float64).parameters()).dtype == torch.complex128
    for refused in (lambda: single.half(), lambda: single.to(torch.float16), lambda: single.bfloat16()):
        with pytest.raises(TypeError, match="half precision has no complex counterpart|float64/complex128 only"):
            refused()


def _orthonormality_error(vectors: torch.Tensor) -> float:
    """max |V V^dagger - I| of the rows ``(k, d)``."""
    vectors = vectors.detach()
    return float((vectors @ vectors.mH - torch.eye(vectors.shape[0], dtype=vectors.dtype)).abs().amax())


@pytest.mark.parametrize("k", [3, 5], ids=["k < d", "complete"])
def test_an_orthonormal_measurement_moved_to_double_is_orthonormal_to_float64s_precision(k):
    """An orthonormal ProjectiveMeasurement is W = W_0 exp(A), torch's orthogonal parametrisation, with the base
    W_0 a buffer; double() (the module's or a model's) cast W_0 with float32's round-off, max |V V^dagger - I|
    1e-7 to 4e-7 at d = 5, a million times float64's. The base is now re-orthonormalised (a QR) as the move widens
    it: ~4e-16, the vectors and the probabilities within float32's round-off of the single-precision ones."""
    from qpnlp.models import QPDN, QPDNConfig

    states = random_pure_state(5, batch_shape=(4,), dtype=torch.complex128, generator=torch.Generator().manual_seed(4))
    single = ProjectiveMeasurement(5, k, orthonormal=True, generator=torch.Generator().manual_seed(k))
    before, expected = single.vectors().detach(), single(states.to(torch.complex64)).detach()
    assert single.double() is single
    assert _orthonormality_error(single.vectors()) < 1e-14
    assert float((single.vectors().detach() - before.to(torch.complex128)).abs().amax()) <= tolerance(torch.float32, 5)
    torch.testing.assert_close(single(states).float(), expected, rtol=0, atol=1e-6)
    assert _orthonormality_error(single.float().vectors()) < 1e-5          # narrowing: a cast, as before
    model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=5, num_measurements=k, orthonormal=True))
    assert _orthonormality_error(model.double().measurement.vectors()) < 1e-14


@pytest.mark.parametrize("k, rank", [(6, 1), (2, 2), (3, 2)], ids=["rank 1, k > d", "square", "completed"])
def test_a_povm_measurement_moved_to_double_is_an_isometry_to_float64s_precision(k, rank):
    """A POVMMeasurement's isometry V is W_0 exp(A), the same torch parametrisation as an orthonormal
    ProjectiveMeasurement's; double() kept float32's round-off in its base, max |V^dagger V - I| ~2e-7 to 4e-7 at
    d = 4. The base is now re-orthonormalised as the move widens it: < 1e-14, V and the probabilities within
    float32's round-off of the single-precision ones."""
    states = random_pure_state(4, batch_shape=(5,), dtype=torch.complex128, generator=torch.Generator().manual_seed(2))
    single = POVMMeasurement(4, k, rank=rank, generator=torch.Generator().manual_seed(k))
    before, expected = single.isometry().detach(), single(states.to(torch.complex64)).detach()
    assert single.double() is single
    v = single.isometry().detach()
    assert float((v.mH @ v - torch.eye(4, dtype=v.dtype)).abs().amax()) < 1e-14
    assert float((v - before.to(torch.complex128)).abs().amax()) <= tolerance(torch.float32, k * rank)
    torch.testing.assert_close(single(states).float(), expected, rtol=0, atol=1e-6)
