"""Float32 accuracy of distances and divergences of nearly equal pure states (the small values a loss reads).

The reference is the closed form in float64 of the same complex64 vectors: with
:math:`s^2 = 1 - |\\langle a|b\\rangle|^2/(\\|a\\|^2\\|b\\|^2)`, the trace distance is s, the Hellinger
distance :math:`\\sqrt2 s`, the Bures distance :math:`\\sqrt{2(1 - \\sqrt{1 - s^2})}`, and the Jensen-Shannon
divergence the binary entropy of :math:`(1 - \\sqrt{1 - s^2})/2`. Computed as ``1 - fidelity``, these were
round-off in float32 for angles below ~3e-4 (0 or errors of 15% and more).
"""

import math

import pytest
import torch

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, bures_angle, bures_distance, fidelity,
                           hellinger_distance, infidelity, quantum_jensen_shannon_divergence, random_density_matrix,
                           trace_distance)


def _close_pairs(theta: float, batch: int = 8, d: int = 16, seed: int = 0) -> tuple[PureState, PureState]:
    """complex64 pure states at the angle theta (up to their float32 rounding), with a global phase between them."""
    gen = torch.Generator().manual_seed(seed)
    a, c = (torch.randn(batch, d, dtype=torch.complex128, generator=gen) for _ in range(2))
    a = a / a.norm(dim=-1, keepdim=True)
    c = c - a * (a.conj() * c).sum(-1, keepdim=True)
    c = c / c.norm(dim=-1, keepdim=True)
    b = (math.cos(theta) * a + 1j * math.sin(theta) * c) * complex(math.cos(0.7), math.sin(0.7))
    return tuple(PureState.normalized(x.to(torch.complex64)) for x in (a, b))


def _sine_squared(a: PureState, b: PureState) -> torch.Tensor:
    x, y = a.data.to(torch.complex128), b.data.to(torch.complex128)
    overlap = (x.conj() * y).sum(-1).abs().square()
    return 1 - overlap / (x.abs().square().sum(-1) * y.abs().square().sum(-1))


def _binary_entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * p.log() + (1 - p) * torch.log1p(-p))


REFERENCES = {
    "infidelity": (infidelity, lambda s2: s2),
    "infidelity_root": (lambda a, b: infidelity(a, b, squared=False), lambda s2: s2 / (1 + (1 - s2).sqrt())),
    "trace_distance": (trace_distance, lambda s2: s2.sqrt()),
    "hellinger_distance": (hellinger_distance, lambda s2: (2 * s2).sqrt()),
    "bures_distance": (bures_distance, lambda s2: (2 * s2 / (1 + (1 - s2).sqrt())).sqrt()),
    "bures_angle": (bures_angle, lambda s2: s2.sqrt().arcsin()),
    "quantum_jensen_shannon_divergence": (quantum_jensen_shannon_divergence,
                                          lambda s2: _binary_entropy(s2 / (2 * (1 + (1 - s2).sqrt())))),
}


@pytest.mark.parametrize("theta", [1e-2, 1e-3, 1e-4, 1e-5])
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_close_pure_states_keep_their_relative_accuracy_in_float32(name, theta):
    a, b = _close_pairs(theta)
    function, closed_form = REFERENCES[name]
    value = function(a, b)
    assert value.dtype == torch.float32
    expected = closed_form(_sine_squared(a, b))
    relative = ((value.double() - expected).abs() / expected).max()
    # an absolute error of 2e-8 (a sixth of float32's eps) and 2e-5 relative; twice that for the squares of distances
    # (infidelities, ~theta^2) and the divergence (~theta^2 log theta); 1 - fidelity was 0 at 1e-4 and 1e-5
    bound = (2 if name.startswith(("quantum", "infidelity")) else 1) * (2e-5 + 2e-8 / theta)
    assert relative <= bound, f"{name} at angle {theta}: relative error {float(relative):.1e} > {bound:.1e}"


def test_bures_distance_of_a_pure_state_and_a_close_ensemble_in_float32():
    a, b = _close_pairs(1e-4)
    other = _close_pairs(3e-4)[1]                     # along the same direction as b, further from a
    weights = torch.tensor([0.75, 0.25])
    ensemble = Ensemble(torch.stack((b.data, other.data), -2), weights.expand(8, 2))
    value = bures_distance(a, ensemble)
    x, members = a.data.to(torch.complex128), ensemble.states.data.to(torch.complex128)
    overlaps = (x.conj().unsqueeze(-2) * members).sum(-1).abs().square()
    norms = members.abs().square().sum(-1)                 # 1 - F = (Tr sigma - <a|sigma|a>/<a|a>) / Tr sigma
    trace = (weights.double() * norms).sum(-1)
    infidelity = 1 - (weights.double() * overlaps).sum(-1) / (x.abs().square().sum(-1) * trace)
    expected = (2 * infidelity / (1 + (1 - infidelity).sqrt())).sqrt()
    assert ((value.double() - expected).abs() / expected).max() <= 1e-3


def test_equal_pure_states_are_at_distance_zero_with_gradient_zero():
    a = PureState(_close_pairs(1e-3)[0].data.requires_grad_())
    for name, (function, _) in REFERENCES.items():
        value = function(a, a)
        assert torch.equal(value, torch.zeros_like(value)), name
        (grad,) = torch.autograd.grad(value.sum(), a.data)
        assert torch.equal(grad, torch.zeros_like(grad)), name


def _states_of_every_type(seed: int) -> dict[str, object]:
    """complex128 states of d = 4, batch (3,): a pure state, a 2-member ensemble, a DensityMatrix and a dense tensor."""
    gen = torch.Generator().manual_seed(seed)
    members = torch.nn.functional.normalize(torch.randn(3, 2, 4, dtype=torch.complex128, generator=gen), dim=-1)
    weights = torch.rand(3, 2, dtype=torch.float64, generator=gen)
    dense = random_density_matrix(4, batch_shape=(3,), dtype=torch.complex128, generator=gen)
    return {"pure": PureState.normalized(torch.randn(3, 4, dtype=torch.complex128, generator=gen)),
            "ensemble": Ensemble(members, weights / weights.sum(-1, keepdim=True)),
            "density": dense, "tensor": dense.data.flip(-1).flip(-2)}


KINDS = ("pure", "ensemble", "density", "tensor")


@pytest.mark.parametrize("squared", [True, False])
@pytest.mark.parametrize("second", KINDS)
@pytest.mark.parametrize("first", KINDS)
def test_infidelity_is_one_minus_fidelity_in_float64_for_every_type_pair(first, second, squared):
    rho, sigma = _states_of_every_type(0)[first], _states_of_every_type(1)[second]
    value = infidelity(rho, sigma, squared=squared)
    expected = 1 - fidelity(rho, sigma, squared=squared)
    assert value.shape == (3,) and value.dtype == torch.float64
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-14)
    assert expected.min() > 1e-3                                        # the pairs are far apart: a real comparison


@pytest.mark.parametrize("squared", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_infidelity_of_equal_states_is_zero_with_a_finite_gradient(kind, squared):
    state = _states_of_every_type(2)[kind]
    leaf = {"pure": lambda x: x.data, "ensemble": lambda x: x.weights,
            "density": lambda x: x.data, "tensor": lambda x: x}[kind](state).detach().requires_grad_()
    rebuilt = {"pure": lambda: PureState(leaf), "ensemble": lambda: Ensemble(state.states, leaf),
               "density": lambda: DensityMatrix(leaf), "tensor": lambda: leaf}[kind]()
    value = infidelity(rebuilt, rebuilt, squared=squared)
    assert value.abs().max() <= 1e-12
    (grad,) = torch.autograd.grad(value.sum(), leaf)
    assert torch.isfinite(grad).all()
