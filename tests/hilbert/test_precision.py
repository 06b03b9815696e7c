"""Precisions of the batched complex maths: complex32 refused by name, sememe bases widened to float64's precision."""

from __future__ import annotations

import pytest
import torch

from qpnlp.hilbert import (DensityMatrix, PureState, SememeBasis, contract, inner, kron, normalize, outer,
                           random_unitary, trace)

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")    # torch's note on complex32


def _vectors(dtype):
    """Unit rows that complex32 holds exactly (0.6 and 0.8 it rounds: their norm is then 1 - 1e-4)."""
    return torch.tensor([[0.5 + 0.5j, 0.5 - 0.5j], [1.0, 0.0]], dtype=torch.complex64).to(dtype)


CALLS = {
    "inner": (lambda v: inner(v, v), "bra"),
    "outer": (lambda v: outer(v), "ket"),
    "normalize": (lambda v: normalize(v), "vectors"),
    "normalize unchecked": (lambda v: normalize(v, validate=False), "vectors"),
    "trace": (lambda v: trace(outer(v.to(torch.complex64)).to(v.dtype)), "matrices"),
    "kron": (lambda v: kron(v[None], v[None]), "a"),
    "contract of two": (lambda v: contract("nd,nd->n", v, v), r"operands\[0\]"),
    "contract of three": (lambda v: contract("nd,nd,nd->n", v, v, v), r"operands\[0\]"),
    "PureState": (lambda v: PureState(v), "states"),
    "DensityMatrix": (lambda v: DensityMatrix(outer(v.to(torch.complex64))[:1].to(v.dtype)), "rho"),
}


@pytest.mark.parametrize("call, name", CALLS.values(), ids=list(CALLS))
def test_complex32_is_refused_by_name_with_the_conversion_that_works(call, name):
    """complex32 (torch.chalf) raised torch's NotImplementedError ('"sum_cpu" not implemented for 'ComplexHalf''':
    inner, normalize, trace, contract), gave complex32 results nothing downstream accepted (outer, kron), or the
    constructors' "must be complex64 or complex128 ... use PureState.from_real for real data"; now one TypeError
    (qpnlp.hilbert._validation.check_complex_width) names the argument, the dtype and the exact conversion."""
    with pytest.raises(TypeError, match=rf"^{name} is complex32 \(torch.chalf\).*{name}.to\(torch.complex64\)"):
        call(_vectors(torch.complex32))
    call(_vectors(torch.complex32).to(torch.complex64))                       # the conversion it names runs


def test_a_sememe_basis_moved_to_double_is_orthonormal_to_float64s_precision():
    """SememeBasis.random(d).to(torch.float64) kept float32's max |E E^dagger - I| ~ 3e-7, and SememeBasis(vectors)
    refused it (tolerance 2.8e-14 at d = 8); the move now re-orthonormalises (a QR), within float32's round-off
    of the original, and an exactly orthonormal basis is kept bit for bit."""
    for dim in (8, 64):
        basis = SememeBasis.random(dim, generator=torch.Generator().manual_seed(dim))
        wide = basis.to(torch.float64)
        SememeBasis(wide.vectors)                                               # its own check, at float64's tolerance
        eye = torch.eye(dim, dtype=torch.complex128)
        assert float((wide.vectors @ wide.vectors.mH - eye).abs().amax()) < 1e-14
        assert float((wide.vectors - basis.vectors.to(torch.complex128)).abs().amax()) < 1e-6
    canonical = SememeBasis.canonical(5)
    assert torch.equal(canonical.to(torch.float64).vectors, torch.eye(5, dtype=torch.complex128))
    assert canonical.to(torch.float64).to(torch.float32).dtype == torch.complex64


def test_only_float32_round_off_is_removed_and_the_move_stays_differentiable():
    """A matrix further from an isometry (built unchecked) is kept as it is; the QR's gradient is finite, also at
    an exactly orthonormal matrix (an SVD's polar factor divides by differences of its equal singular values)."""
    from qpnlp.hilbert._widen import orthonormal_columns

    near = random_unitary(4, generator=torch.Generator().manual_seed(0))[:, :3].to(torch.complex128)
    far = near * 1.001
    moved = orthonormal_columns(torch.stack([near, far]))
    assert torch.equal(moved[1], far)
    assert float((moved[0].mH @ moved[0] - torch.eye(3, dtype=torch.complex128)).abs().amax()) < 1e-15
    for start in (near, torch.eye(4, 3, dtype=torch.complex128)):
        x = start.clone().requires_grad_()
        (orthonormal_columns(x).abs().square() * torch.arange(3.0)).sum().backward()
        assert bool(torch.isfinite(torch.view_as_real(x.grad)).all())


def test_a_sememe_basis_has_the_states_double_and_float():
    """SememeBasis had ``to`` but no ``double()`` / ``float()`` (AttributeError) while the states, projectors and
    POVMs have them; they are now ``to(torch.float64)`` / ``to(torch.float32)``, re-orthonormalised as ``to`` is,
    and keep the vectors complex and the labels."""
    basis = SememeBasis.random(6, labels="abcdef", generator=torch.Generator().manual_seed(3))
    wide = basis.double()
    assert wide.dtype == torch.complex128 and wide.labels == basis.labels
    assert torch.equal(wide.vectors, basis.to(torch.float64).vectors)
    assert float((wide.vectors @ wide.vectors.mH - torch.eye(6, dtype=torch.complex128)).abs().amax()) < 1e-14
    narrow = wide.float()
    assert narrow.dtype == torch.complex64 and torch.equal(narrow.vectors, wide.to(torch.float32).vectors)
