"""Gradients of every differentiable state function at the points training reaches.

Functions built on ``eigh``, ``svd`` or square roots have NaN or infinite gradients through torch's own backwards
at repeated eigenvalues (the maximally mixed state), zero eigenvalues (pure and rank-deficient states) and equal
arguments (a distance at 0). Here each function meets each such point, as a loss would: through a trainable
factor :math:`\\rho = AA^\\dagger / \\operatorname{Tr} AA^\\dagger` (complex128), alone and in a batch with a generic
state, whose gradient must not change.
"""

import math

import pytest
import torch

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, bures_angle, bures_distance, conditional_entropy,
                           fidelity, hellinger_affinity, hellinger_distance, hilbert_schmidt_distance, linear_entropy,
                           log_negativity, mutual_information, negativity, purity, quantum_jensen_shannon_divergence,
                           random_unitary, relative_entropy, renyi_entropy, sub_fidelity,
                           super_fidelity, trace_distance, von_neumann_entropy)
from qpnlp.testing import assert_allclose

C = torch.complex128
D = 4
DIMS = (2, 2)

#: Distances (and divergences) that vanish at equal arguments, where the gradient taken is 0.
DISTANCES = {
    "trace_distance": trace_distance, "bures_distance": bures_distance, "bures_angle": bures_angle,
    "hellinger_distance": hellinger_distance, "hilbert_schmidt_distance": hilbert_schmidt_distance,
    "relative_entropy": relative_entropy, "quantum_jensen_shannon_divergence": quantum_jensen_shannon_divergence,
}
PAIRS = {
    **DISTANCES,
    "fidelity": fidelity, "root_fidelity": lambda a, b: fidelity(a, b, squared=False),
    "hellinger_affinity": hellinger_affinity, "sub_fidelity": sub_fidelity, "super_fidelity": super_fidelity,
    "relative_entropy_of_sigma": lambda a, b: relative_entropy(b, a),
}
SINGLES = {
    "von_neumann_entropy": von_neumann_entropy, "renyi_entropy_0.5": lambda r: renyi_entropy(r, 0.5),
    "renyi_entropy_2": lambda r: renyi_entropy(r, 2), "renyi_entropy_inf": lambda r: renyi_entropy(r, math.inf),
    "linear_entropy": linear_entropy, "purity": purity,
    "mutual_information": lambda r: mutual_information(r, DIMS), "conditional_entropy": lambda r: conditional_entropy(
        r, DIMS), "negativity": lambda r: negativity(r, DIMS), "log_negativity": lambda r: log_negativity(r, DIMS),
}


def _factor(spectrum, seed):
    """A factor ``(D, D)`` of the state with this spectrum in a random eigenbasis (zero columns for zero values)."""
    u = random_unitary(D, dtype=C, generator=torch.Generator().manual_seed(seed))
    return u * torch.tensor(spectrum, dtype=torch.float64).sqrt().to(C)


def _state(factor):
    m = factor @ factor.mH
    return DensityMatrix(m / torch.diagonal(m, dim1=-2, dim2=-1).sum(-1).real[..., None, None])


GENERIC = [0.4, 0.3, 0.2, 0.1]
POINTS = {                                                                  # (rho, sigma) spectra and bases
    "pure, generic": ([1, 0, 0, 0], 0, GENERIC, 1),
    "maximally mixed, generic": ([0.25] * 4, 0, GENERIC, 1),
    "rank 2 (two zero eigenvalues), generic": ([0.6, 0.4, 0, 0], 0, GENERIC, 1),
    "repeated eigenvalues, generic": ([0.3, 0.3, 0.2, 0.2], 0, GENERIC, 1),
    "generic, pure": (GENERIC, 1, [1, 0, 0, 0], 0),
    "generic, maximally mixed": (GENERIC, 1, [0.25] * 4, 0),
    "generic, rank 2": (GENERIC, 1, [0.6, 0.4, 0, 0], 0),
    "equal pure": ([1, 0, 0, 0], 0, [1, 0, 0, 0], 0),
    "equal maximally mixed": ([0.25] * 4, 0, [0.25] * 4, 0),
    "equal rank 2": ([0.6, 0.4, 0, 0], 0, [0.6, 0.4, 0, 0], 0),
    "equal generic": (GENERIC, 1, GENERIC, 1),
    "orthogonal pure": ([1, 0, 0, 0], 0, [0, 1, 0, 0], 0),
}


def _gradients(fn, point, batched=False):
    """Gradients ``(rho's factor, sigma's factor)`` of ``fn(rho, sigma).sum()``; batched: rows (generic, point)."""
    a, b = _factor(*point[:2]), _factor(*point[2:])
    if batched:
        a, b = torch.stack([_factor(GENERIC, 7), a]), torch.stack([_factor(GENERIC, 8), b])
    a, b = a.requires_grad_(True), b.requires_grad_(True)
    value = fn(_state(a), _state(b))
    return value, torch.autograd.grad(value.sum(), (a, b), allow_unused=True)


def _finite(grads):
    return all(g is None or bool(torch.isfinite(torch.view_as_real(g)).all()) for g in grads)


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("name", PAIRS)
def test_gradients_of_pair_functions_are_finite(name, point):
    value, grads = _gradients(PAIRS[name], POINTS[point])
    if not (name.startswith("relative_entropy") and math.isinf(float(value.detach()))):   # support mismatch: +inf
        assert _finite(grads), f"{name} at {point}: {grads}"
    if point.startswith("equal") and name in DISTANCES:
        for g in grads:                                                      # the minimum: gradient 0
            assert float(g.abs().max()) <= 1e-6, f"{name} at {point}: {float(g.abs().max())}"


@pytest.mark.parametrize("point", ["pure", "maximally mixed", "rank 2", "repeated eigenvalues"])
@pytest.mark.parametrize("name", SINGLES)
def test_gradients_of_one_state_functions_are_finite(name, point):
    spectrum = {"pure": [1, 0, 0, 0], "maximally mixed": [0.25] * 4, "rank 2": [0.6, 0.4, 0, 0],
                "repeated eigenvalues": [0.3, 0.3, 0.2, 0.2]}[point]
    _, grads = _gradients(lambda rho, _: SINGLES[name](rho), (spectrum, 0, GENERIC, 1))
    assert _finite(grads[:1]), f"{name} at {point}: {grads[0]}"


@pytest.mark.parametrize("point", ["maximally mixed, generic", "rank 2 (two zero eigenvalues), generic",
                                   "equal pure", "equal maximally mixed", "orthogonal pure"])
@pytest.mark.parametrize("name", sorted(set(PAIRS) - {"relative_entropy", "relative_entropy_of_sigma"}))
def test_a_degenerate_batch_element_leaves_the_others_gradients_alone(name, point):
    _, grads = _gradients(PAIRS[name], POINTS[point], batched=True)
    _, alone = _gradients(PAIRS[name], (GENERIC, 7, GENERIC, 8))
    assert _finite(grads)
    for g, reference in zip(grads, alone):
        assert_allclose(g[0], reference, atol=1e-10, msg=f"{name} at {point}")


def _pure(vector):
    return PureState(vector / torch.linalg.vector_norm(vector, dim=-1, keepdim=True))


@pytest.mark.parametrize("name", PAIRS)
def test_gradients_of_pure_states_and_ensembles_at_equal_and_orthogonal_arguments(name):
    # the exact routes: a PureState or an Ensemble is never squared into a matrix and square-rooted again
    gen = torch.Generator().manual_seed(2)
    psi, e0, e1 = torch.randn(D, dtype=C, generator=gen), torch.eye(D, dtype=C)[0], torch.eye(D, dtype=C)[1]
    words = torch.stack([e0, e1, e0])                                        # a repeated word, equal weights
    cases = {"equal": (psi, psi), "orthogonal": (e0, e1)}
    for case, (x, y) in cases.items():
        x, y, w = x.clone().requires_grad_(True), y.clone().requires_grad_(True), words.clone().requires_grad_(True)
        for make in (lambda: (_pure(x), _pure(y)), lambda: (Ensemble(_pure(w[:2]).data), _pure(y)),
                     lambda: (Ensemble(_pure(w).data), Ensemble(_pure(w).data))):
            value = PAIRS[name](*make())
            if name.startswith("relative_entropy") and math.isinf(float(value.detach())):
                continue
            grads = torch.autograd.grad(value, (x, y, w), allow_unused=True)
            assert _finite(grads), f"{name}, {case}: {grads}"


def test_a_reference_generic_state_is_generic():
    # the batch test compares with a generic element: its spectrum has no repeated or zero eigenvalue
    lam = torch.linalg.eigvalsh(_state(_factor(GENERIC, 7)).data)
    assert float(lam.min()) > 0.05 and float(lam.diff().min()) > 0.05
