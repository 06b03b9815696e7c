"""Tests of the cgRNN non-linearities and gates against the poster's definitions (eqs. 1, 2, 8, 9)."""

from __future__ import annotations

import cmath
import math
import re
import warnings

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qpnlp.nn import (
    Hirose,
    ModReLU,
    SumGate,
    gate_prod,
    gate_sum,
    hirose,
    make_activation,
    make_gate,
    modrelu,
)



finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
complex_lists = st.lists(st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False),
                         min_size=1, max_size=16)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ----------------------------------------------------------------------------- hand-computed values
@pytest.mark.parametrize(
    "z, b, expected",
    [
        (3 + 4j, -1.0, (3 + 4j) * 4 / 5),  # |z| = 5, shifted to 4
        (3 + 4j, 0.5, (3 + 4j) * 5.5 / 5),
        (0.3 + 0.4j, -1.0, 0j),  # |z| + b < 0: dead
        (-2j, 1.0, -3j),  # modulus 2 + 1, phase -pi/2
        (1 + 0j, -1.0, 0j),  # |z| + b == 0 exactly
        (0j, 2.0, 0j),  # f(0) := 0
    ],
)
def test_modrelu_hand_values(z, b, expected, cdtype, device, tol):
    out = modrelu(torch.tensor([z], dtype=cdtype, device=device), b)
    assert out.dtype == cdtype and out.device.type == device.type
    assert abs(out.item() - expected) <= tol(10)


@pytest.mark.parametrize(
    "z, m, expected",
    [
        (3 + 4j, 1.0, math.tanh(5.0) * (0.6 + 0.8j)),
        (3 + 4j, 2.0, math.tanh(5.0 / 4.0) * (0.6 + 0.8j)),
        (-1j, 0.5, math.tanh(4.0) * -1j),
        (1e-6 + 1e-6j, 1.0, 1e-6 + 1e-6j),  # tanh(x)/x -> 1 near 0 (Taylor branch)
        (1e-3j, 1.0, math.tanh(1e-3) * 1j),
        (0j, 1.0, 0j),
    ],
)
def test_hirose_hand_values(z, m, expected, cdtype, device, tol):
    out = hirose(torch.tensor([z], dtype=cdtype, device=device), m)
    assert out.dtype == cdtype
    assert abs(out.item() - expected) <= tol(10)


def _modrelu_reference(z: complex, b: float) -> complex:
    """ReLU(|z| + b) z/|z| in Python floats, the phase taken of z scaled by 2^60 (exactly): a subnormal z's modulus
    holds few bits (abs(5e-324 (1 + 1j)) is 5e-324), and ``(r + b) * z / r`` rounds ``(r + b) * z`` to the
    subnormal grid first (1.5 * 5e-324 is 1e-323: 2 where the value is 1.5)."""
    r = abs(z)
    return max(r + b, 0.0) * (z * 2.0 ** 60 / abs(z * 2.0 ** 60)) if r > 0 else 0j


@settings(max_examples=40, deadline=None)
@given(zs=complex_lists, b=finite)
@example(zs=[5e-324 + 0j], b=1.5)           # found by HYPOTHESIS_PROFILE=explore: the old reference gave 2
@example(zs=[5e-324 + 5e-324j, 1e-323 + 5e-324j, 1.5e-323 + 1e-323j], b=1.5)      # phases of modulus 1.41, 1.12, 0.90
def test_modrelu_matches_definition(zs, b):
    z = torch.tensor(zs, dtype=torch.complex128)
    out = modrelu(z, b)
    for zi, oi in zip(zs, out.tolist()):
        expected = _modrelu_reference(zi, b)
        assert abs(oi - expected) <= 1e-12 * max(1.0, abs(expected))


@settings(max_examples=40, deadline=None)
@given(zs=complex_lists, m=st.floats(min_value=0.1, max_value=10.0))
def test_hirose_matches_definition_and_is_bounded(zs, m):
    z = torch.tensor(zs, dtype=torch.complex128)
    out = hirose(z, m)
    for zi, oi in zip(zs, out.tolist()):
        r = abs(zi)
        expected = math.tanh(r / m**2) * zi / r if r > 0 else 0j
        assert abs(oi - expected) <= 1e-12
        assert abs(oi) <= 1.0 + 1e-12
        if abs(oi) > 1e-6:  # phase is preserved
            assert abs(cmath.phase(oi / zi)) < 1e-9


# ----------------------------------------------------------------------------- behaviour at z = 0
def test_gradients_finite_at_zero(cdtype, device):
    z = torch.zeros(4, dtype=cdtype, device=device, requires_grad=True)
    b = torch.tensor([1.0, -1.0, 0.0, 0.5], dtype=cdtype.to_real(), device=device, requires_grad=True)
    (modrelu(z, b).abs() ** 2).sum().backward()
    assert torch.isfinite(torch.view_as_real(z.grad)).all() and torch.isfinite(b.grad).all()

    z2 = torch.zeros(3, dtype=cdtype, device=device, requires_grad=True)
    m = 2.0
    hirose(z2, m).real.sum().backward()
    # Near 0 Hirose(z) = z / m^2, so d Re f / d(Re z, Im z) = (1/m^2, 0): torch grad = 1/m^2 + 0j.
    assert torch.allclose(z2.grad, torch.full_like(z2.grad, 1 / m**2))


def test_modrelu_dead_region_has_zero_output_and_gradient(cdtype, device):
    z = torch.tensor([0.3 + 0.4j, -0.6j, 1.0 + 0j], dtype=cdtype, device=device, requires_grad=True)
    b = torch.tensor(-1.0, dtype=cdtype.to_real(), device=device, requires_grad=True)
    out = modrelu(z, b)  # |z| + b = -0.5, -0.4, 0
    assert torch.count_nonzero(out) == 0
    (out.real + out.imag).sum().backward()
    assert torch.count_nonzero(z.grad) == 0 and b.grad.item() == 0.0


def test_modrelu_scale_first_is_the_same_function(cdtype, device, tol):
    """The uRNN rounding order (scale first) gives the same values up to rounding, and accepts real inputs."""
    z = torch.randn(64, dtype=cdtype, device=device)
    z[0] = 0
    b = torch.linspace(-1, 1, 64, dtype=cdtype.to_real(), device=device)
    torch.testing.assert_close(modrelu(z, b, scale_first=True), modrelu(z, b), atol=tol(1), rtol=tol(1))
    x = torch.tensor([-2.0, 0.0, 0.5, 3.0], dtype=cdtype.to_real(), device=device)
    assert modrelu(x, -1.0, scale_first=True).tolist() == [-1.0, 0.0, 0.0, 2.0]
    with pytest.raises(TypeError, match="complex"):
        modrelu(x, -1.0)
    act = ModReLU(4, -1.0, dtype=cdtype.to_real(), device=device, scale_first=True)
    assert torch.equal(act(x), modrelu(x, act.bias, scale_first=True))



def test_modrelu_scale_first_has_the_zero_gradient_at_zero(cdtype, device):
    """At z = 0 with b > 0 both rounding orders give f(0) = 0 and the gradient 0 (module docstring); the uRNN
    order once gave d f / d z = b there (z times the unmasked scale relu(b) / 1), real inputs too."""
    b = torch.tensor([0.5, 2.0, -1.0], dtype=cdtype.to_real(), device=device, requires_grad=True)
    for dtype in (cdtype, cdtype.to_real()):
        z = torch.zeros(3, dtype=dtype, device=device, requires_grad=True)
        out = modrelu(z, b, scale_first=True)
        assert torch.count_nonzero(out) == 0
        grad_z, grad_b = torch.autograd.grad((out.real + out.imag if dtype.is_complex else out).sum(), (z, b))
        assert torch.count_nonzero(grad_z) == 0 and torch.count_nonzero(grad_b) == 0
    z = torch.randn(64, dtype=cdtype, device=device)
    bias = torch.linspace(-1, 1, 64, dtype=cdtype.to_real(), device=device)
    r = z.abs()
    assert torch.equal(modrelu(z, bias, scale_first=True), z * (torch.relu(r + bias) / r))   # values: the same bits

@pytest.mark.parametrize("scale_first", [False, True])
def test_modrelu_reads_the_moduli_once_where_modulus_has_checked_them(scale_first, dispatched_ops):
    """With gradients on, :func:`~qpnlp.hilbert._linalg.modulus` takes one ``amin`` over the moduli (is one below
    ``finfo.tiny``?) to choose its graph, and modReLU took a second over the same moduli for the same question;
    it reads modulus's answer now (one ``amin``), zero moduli and a subnormal one included, without gradients
    (no check in modulus) too; values and gradients are unchanged (the subnormal tests in tests/hilbert)."""
    z = torch.randn(4, 8, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))
    zero, tiny = z.clone(), z.clone()
    zero[1, 2] = 0
    tiny[2, 3] = torch.finfo(torch.float32).tiny / 8 * (3 + 4j)
    b = torch.linspace(-1, 1, 8)
    for entries in (z, zero, tiny):
        for grad in (True, False):
            with torch.set_grad_enabled(grad), dispatched_ops() as ops:
                modrelu(entries.clone().requires_grad_(grad), b, scale_first=scale_first)
            assert ops.names.count("amin.default") == 1, (grad, ops.names)


def test_repr_of_learnable_activations_does_not_warn():
    # extra_repr called float() on a tensor that requires grad: "Converting a tensor with requires_grad=True to a
    # scalar may lead to unexpected behavior" at every print(model) (an error under -W error)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repr(Hirose(2.0, learnable=True)) == "Hirose(m=2, learnable=True)"
        assert repr(SumGate(0.25, learnable=True)) == "SumGate(alpha=0.25, learnable=True)"


# ----------------------------------------------------------------------------- gradcheck (complex128)
def test_gradcheck_hirose():
    torch.manual_seed(0)
    z = torch.randn(6, dtype=torch.complex128)
    z[0] = 0  # the Taylor branch is smooth through 0
    z[1] = 1e-5 + 2e-5j
    z.requires_grad_(True)
    m = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(hirose, (z, m))


def test_gradcheck_modrelu():
    torch.manual_seed(1)
    z = (torch.randn(6, dtype=torch.complex128) + 0.5).requires_grad_(True)
    # Keep |z| + b away from the kink at 0 so finite differences are valid.
    b = torch.tensor([-0.1, 0.2, 0.05, -3.0, 0.0, 0.3], dtype=torch.float64)
    b = torch.where((z.detach().abs() + b).abs() < 0.05, b + 0.2, b).requires_grad_(True)
    assert torch.autograd.gradcheck(modrelu, (z, b))


def test_gradcheck_gates():
    torch.manual_seed(2)
    z = torch.randn(5, dtype=torch.complex128, requires_grad=True)
    alpha = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(gate_sum, (z, alpha))
    assert torch.autograd.gradcheck(gate_prod, (z,))


# ----------------------------------------------------------------------------- gates
def test_gate_hand_values(cdtype, device, tol):
    z = torch.tensor([0j, 2 - 2j, 1 + 3j], dtype=cdtype, device=device)
    s = gate_sum(z, alpha=0.25)
    p = gate_prod(z)
    assert s.dtype == cdtype.to_real() and p.dtype == cdtype.to_real()
    expected_s = [0.5, _sigmoid(0.25 * 2 - 0.75 * 2), _sigmoid(0.25 + 0.75 * 3)]
    expected_p = [0.25, _sigmoid(2) * _sigmoid(-2), _sigmoid(1) * _sigmoid(3)]
    assert torch.allclose(s.cpu().double(), torch.tensor(expected_s, dtype=torch.float64), atol=tol())
    assert torch.allclose(p.cpu().double(), torch.tensor(expected_p, dtype=torch.float64), atol=tol())
    # alpha = 1 uses only the real part, alpha = 0 only the imaginary part
    assert torch.allclose(gate_sum(z, 1.0), torch.sigmoid(z.real))
    assert torch.allclose(gate_sum(z, 0.0), torch.sigmoid(z.imag))


@settings(max_examples=30, deadline=None)
@given(zs=complex_lists, alpha=st.floats(min_value=0.0, max_value=1.0))
def test_gates_are_real_and_in_unit_interval(zs, alpha):
    for dtype in (torch.complex64, torch.complex128):
        z = torch.tensor(zs, dtype=dtype)
        for g in (gate_sum(z, alpha), gate_prod(z), SumGate(alpha)(z)):
            assert not g.is_complex() and g.dtype == dtype.to_real()
            assert bool(((g >= 0) & (g <= 1)).all())


# ----------------------------------------------------------------------------- modules
def test_modules_and_factories(cdtype, device):
    z = torch.randn(3, 5, dtype=cdtype, device=device)
    act = make_activation("modrelu", 5, dtype=cdtype.to_real(), device=device)
    assert isinstance(act, ModReLU) and act.bias.shape == (5,)
    assert torch.allclose(act(z), modrelu(z, 0.0))
    hir = make_activation("hirose", 5, m=2.0, dtype=cdtype.to_real(), device=device)
    assert isinstance(hir, Hirose) and torch.allclose(hir(z), hirose(z, 2.0))
    learn = SumGate(0.3, learnable=True).to(device)
    assert abs(float(learn.alpha.detach()) - 0.3) < 1e-6
    assert torch.allclose(learn(z), gate_sum(z, 0.3), atol=1e-6)
    assert torch.allclose(make_gate("prod")(z), gate_prod(z))
    with pytest.raises(ValueError):
        make_activation("relu", 5)
    with pytest.raises(ValueError):
        make_gate("max")
    with pytest.raises(ValueError):
        SumGate(1.5)
    with pytest.raises(TypeError):
        modrelu(torch.randn(3), 0.0)


@pytest.mark.parametrize("scale_first", [False, True])
def test_modrelu_refuses_a_bias_that_would_change_the_output_shape(scale_first):
    # a (2, 1) bias against z (3,) broadcast silently to a (2, 3) output; a (4,) bias was torch's "size of tensor a"
    z = torch.randn(3, dtype=torch.complex64)
    for bad in (torch.zeros(2, 1), torch.zeros(4)):
        got = re.escape(str(tuple(bad.shape)))
        with pytest.raises(ValueError, match=rf"modReLU bias b must broadcast to the shape of z \(3,\) \(typically "
                                             rf"shape \(3,\), one per feature\); got shape {got}"):
            modrelu(z, bad, scale_first=scale_first)
    with pytest.raises(TypeError, match="modReLU bias b must be a real tensor; got torch.complex64"):
        modrelu(z, torch.zeros(3, dtype=torch.complex64), scale_first=scale_first)   # was cast, dropping Im
    for good in (torch.zeros(3), torch.zeros(1), torch.tensor(-0.5), torch.zeros(1, 3).expand(1, 3)[0]):
        assert modrelu(z, good, scale_first=scale_first).shape == z.shape


def test_modrelu_module_checks_its_bias_at_construction_and_call():
    with pytest.raises(ValueError, match="num_features must be >= 1; got -1"):     # was torch's "negative dimension"
        ModReLU(-1)
    with pytest.raises(TypeError, match="dtype must be a real floating dtype .*got torch.complex64"):
        ModReLU(3, dtype=torch.complex64)
    act = ModReLU(3)
    act.bias = torch.nn.Parameter(torch.zeros(3, 1))             # blamed z: "z must have last dimension 3"
    with pytest.raises(ValueError, match=r"ModReLU bias must have shape \(num_features,\); got shape \(3, 1\)"):
        act(torch.randn(2, 3, dtype=torch.complex64))
