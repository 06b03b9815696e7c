"""Batched measurements without copies: every state with every projector through the real kernel, POVM batches that
broadcast without copying the states or vectors, and the Lueders update of a batch of projectors."""

import pytest
import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, random_pure_state, random_unitary
from qpnlp.measurement import Projector, kraus_update, lueders_update, random_povm
from qpnlp.measurement import _projector
from qpnlp.testing import assert_allclose, default_atol

D = 4
# (system batch shape, projector batch shape) that broadcast; the first four only over the system's trailing ones
OUTER = [((5, 1), (3,)), ((), (3,)), ((2, 3, 1, 1), (2, 5)), ((4,), ()), ((2, 1), (1, 3))]
PAIRED = [((3,), (3,)), ((2, 1), (2, 3)), ((1, 3), (2, 1))]


def _systems(batch_shape, dtype, generator):
    """A PureState, an Ensemble of three members and a DensityMatrix of the given batch shape."""
    members = random_pure_state(D, batch_shape=(*batch_shape, 3), dtype=dtype, generator=generator)
    weights = torch.softmax(torch.randn(*batch_shape, 3, generator=generator, dtype=torch.float64), -1)
    mix = Ensemble(members, weights.to(members.data.real.dtype))
    return {"pure": members[..., 0], "ensemble": mix, "dense": mix.dense()}


def _dense(system) -> torch.Tensor:
    if isinstance(system, PureState):
        return system.proj().data
    return system.dense().data if isinstance(system, Ensemble) else system.data


def _projectors(batch_shape, rank, dtype, generator) -> Projector:
    return Projector(random_unitary(D, batch_shape=batch_shape, dtype=dtype, generator=generator)[..., :rank, :])


@pytest.mark.parametrize("system_shape, projector_shape, lead", [
    ((5, 1), (3,), (5,)), ((), (3,), ()), ((2, 3, 1, 1), (2, 5), (2, 3)), ((4,), (), (4,)), ((2, 1), (1, 3), (2,)),
    ((3,), (3,), None), ((2, 1), (2, 3), None), ((1, 3), (2, 1), None), ((1,), (2, 3), ())])
def test_outer_split_finds_the_systems_own_leading_dims(system_shape, projector_shape, lead):
    split = _projector._outer_split(torch.Size(system_shape), torch.Size(projector_shape))
    assert split == (None if lead is None else torch.Size(lead))


@pytest.mark.parametrize("kind", ["pure", "ensemble"])
@pytest.mark.parametrize("system_shape, projector_shape", OUTER + PAIRED)
def test_every_state_with_every_projector_goes_through_the_real_kernel(kind, system_shape, projector_shape,
                                                                      cdtype, monkeypatch):
    """5cbd9de computed ``P.probability(system[..., None])`` with einsum, slower than the real kernel
    ``born_probabilities`` (one real matrix product) that it used before: a projector batch that only spreads over
    the system's trailing ones dispatches to the kernel again, with the values of ``Tr(rho P)``; paired batches
    stay on einsum."""
    gen = torch.Generator().manual_seed(0)
    system = _systems(system_shape, cdtype, gen)[kind]
    projector = _projectors(projector_shape, 2, cdtype, gen)
    calls = []
    kernel = _projector.born_probabilities
    monkeypatch.setattr(_projector, "born_probabilities", lambda *a, **k: calls.append(1) or kernel(*a, **k))
    p = projector.probability(system)
    expected = (_dense(system) * projector.matrix().mT).sum((-2, -1)).real       # Tr(rho P), torch broadcast
    assert p.shape == torch.broadcast_shapes(system_shape, projector_shape) and p.dtype == expected.dtype
    assert_allclose(p, expected, atol=default_atol(cdtype, D))
    assert len(calls) == ((system_shape, projector_shape) in OUTER)


@pytest.mark.parametrize("kind", ["pure", "ensemble", "dense"])
@pytest.mark.parametrize("system_shape, projector_shape", OUTER + PAIRED)
def test_the_zero_projector_gives_probability_zero(kind, system_shape, projector_shape):
    """r = 0 rows is the zero projector (``Projector`` accepts it): a pure state or ensemble raised "cannot reshape
    tensor of 0 elements" through the real kernel, and einsum returned an empty ``(..., 0)`` for paired batches."""
    system = _systems(system_shape, torch.complex128, torch.Generator().manual_seed(2))[kind]
    p = Projector(torch.zeros(*projector_shape, 0, D, dtype=torch.complex128)).probability(system)
    assert_allclose(p, torch.zeros(torch.broadcast_shapes(system_shape, projector_shape), dtype=torch.float64))


def test_the_kernel_and_einsum_agree_in_value_and_gradient():
    """The outer product ``(5, 1)`` x ``(3,)`` through the kernel and the same pairs expanded to ``(5, 3)`` x
    ``(5, 3)`` through einsum: the same probabilities and gradients of the members, weights and vectors."""
    gen = torch.Generator().manual_seed(1)
    members = random_pure_state(D, batch_shape=(5, 1, 3), dtype=torch.complex128, generator=gen).data
    weights = torch.softmax(torch.randn(5, 1, 3, generator=gen, dtype=torch.float64), -1)
    vectors = random_unitary(D, batch_shape=(3,), dtype=torch.complex128, generator=gen)[..., :2, :]
    results = []
    for expand in (False, True):
        leaves = [t.clone().requires_grad_() for t in (members, weights, vectors)]
        m, w, v = leaves
        if expand:
            m, w, v = m.expand(5, 3, 3, D), w.expand(5, 3, 3), v.expand(5, 3, 2, D)
        p = Projector._trusted(vectors=v).probability(Ensemble._trusted(states=m, weights=w))
        (p * torch.arange(15.0, dtype=torch.float64).reshape(5, 3)).sum().backward()
        results.append([p.detach(), *(leaf.grad for leaf in leaves)])
    for kernel, einsum in zip(*results):
        assert_allclose(kernel, einsum, atol=1e-12)


@pytest.mark.parametrize("kind", ["pure", "ensemble", "dense"])
def test_povm_batches_broadcast_with_the_states(kind, cdtype):
    """``(N, 1)`` systems with ``(M,)`` POVMs: ``Tr(rho_n E_mk)``, ``(N, M, k)``, as one POVM at a time gives it."""
    gen = torch.Generator().manual_seed(2)
    systems = _systems((5, 1), cdtype, gen)[kind]
    povms = random_povm(D, 6, rank=2, batch_shape=(3,), dtype=cdtype, generator=gen)
    p = povms.probabilities(systems)
    expected = torch.stack([povms[m].probabilities(systems[:, 0]) for m in range(3)], 1)
    assert p.shape == (5, 3, 6)
    assert_allclose(p, expected, atol=default_atol(cdtype, D))
    reference = (_dense(systems)[..., None, :, :] * povms.effects().mT).sum((-2, -1)).real
    assert_allclose(p, reference, atol=default_atol(cdtype, D))


@pytest.mark.parametrize("kind", ["pure", "ensemble"])
def test_povm_batches_never_copy_the_vectors_once_per_state(kind, largest_tensor):
    """``POVM.probabilities`` of ``(N, 1)`` systems with ``(M,)`` POVMs went through ``matmul``, which expands
    both operands to the broadcast batch: the states copied once per POVM and the POVMs' (interleaved real)
    vectors, ``4 k r d`` entries a POVM, once per state. With einsum no tensor reaches ``N M k r d`` entries
    (the complex vectors copied once per state); the overlaps ``(N, M, n, k r)`` are all that is per pair."""
    gen = torch.Generator().manual_seed(3)
    n_states, n_povms, d, k = 8, 6, 16, 16
    members = random_pure_state(d, batch_shape=(n_states, 1, 2), dtype=torch.complex64, generator=gen)
    systems = {"pure": members[..., 0], "ensemble": Ensemble(members)}[kind]
    povms = random_povm(d, k, batch_shape=(n_povms,), generator=gen)
    expected = torch.stack([povms[m].probabilities(systems[:, 0]) for m in range(n_povms)], 1)
    with largest_tensor() as seen:
        p = povms.probabilities(systems)
    assert_allclose(p, expected, atol=1e-5)
    assert seen.largest < n_states * n_povms * k * d, seen.largest


@pytest.mark.parametrize("kind", ["pure", "ensemble", "dense"])
@pytest.mark.parametrize("system_shape, projector_shape", OUTER + PAIRED)
def test_lueders_update_broadcasts_a_batch_of_projectors(kind, system_shape, projector_shape, cdtype):
    """``P_b rho_b P_b / Tr(P_b rho_b)`` over ``torch.broadcast_shapes(S, K)``, the kind given (an Ensemble lazy),
    as ``kraus_update`` with the matrices; it refused a batched projector ("one projector")."""
    gen = torch.Generator().manual_seed(4)
    system = _systems(system_shape, cdtype, gen)[kind]
    projector = _projectors(projector_shape, 2, cdtype, gen)
    after = lueders_update(system, projector)
    shape = torch.broadcast_shapes(system_shape, projector_shape)
    assert type(after) is type(system) and after.batch_shape == shape
    p, rho = projector.matrix(), _dense(system)
    image = p @ rho @ p
    expected = image / image.diagonal(dim1=-2, dim2=-1).sum(-1).real[..., None, None]
    assert_allclose(_dense(after), expected, atol=default_atol(cdtype, D))
    assert_allclose(_dense(kraus_update(system, p)), expected, atol=default_atol(cdtype, D))
    if kind == "ensemble":
        assert_allclose(after.weights.sum(-1), torch.ones(shape, dtype=after.weights.dtype))


def test_lueders_update_by_every_outcome_of_a_basis():
    """``system[..., None]`` with the k = d outcome set: every state updated by every outcome, ``(N, d)``."""
    states = PureState(torch.tensor([[0.6, 0.8j], [0.8, 0.6]], dtype=torch.complex128))
    basis = Projector(torch.eye(2, dtype=torch.complex128).unsqueeze(-2))
    after = lueders_update(states[..., None], basis)
    assert after.batch_shape == (2, 2)
    assert_allclose(after.data.abs(), torch.eye(2, dtype=torch.float64).expand(2, 2, 2))


@pytest.mark.parametrize("kind", ["pure", "ensemble", "dense"])
def test_lueders_update_errors_of_a_batch(kind):
    gen = torch.Generator().manual_seed(5)
    system = _systems((3,), torch.complex128, gen)[kind]
    with pytest.raises(ValueError, match=r"batch shapes do not broadcast: system has batch shape \(3,\) and "
                                         r"Projector has batch shape \(2,\)"):
        lueders_update(system, _projectors((2,), 1, torch.complex128, gen))
    e0 = PureState.basis_state(0, D, dtype=torch.complex128)
    target = {"pure": e0, "ensemble": Ensemble(e0[None]), "dense": e0.proj()}[kind]
    basis = Projector(torch.eye(D, dtype=torch.complex128).unsqueeze(-2))
    with pytest.raises(ValueError, match=r"the outcome has probability 0 .* \(flat batch index 1\)"):
        lueders_update(target, basis)                                           # outcomes 1..3 are impossible
    assert isinstance(lueders_update(target, basis[0]), (PureState, Ensemble, DensityMatrix))
