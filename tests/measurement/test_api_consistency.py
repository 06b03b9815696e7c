"""One measurement API: projectors and POVMs broadcast batch dims alike, and every post-measurement route returns
the kind of state it was given."""

import pytest
import torch

from qpnlp.hilbert import Ensemble, PureState, random_pure_state, random_unitary
from qpnlp.measurement import POVM, POVMMeasurement, Projector, ProjectiveMeasurement, lueders_update
from qpnlp.testing import assert_allclose

D = 3
SHAPES = [((3,), (3,)), ((3,), ()), ((), (4,)), ((2, 1), (3,)), ((1, 3), (2, 1)), ((2, 3), (3,))]


def _systems(batch_shape, generator):
    """A PureState, an Ensemble of two members and a DensityMatrix of the given batch shape, complex128."""
    words = random_pure_state(D, batch_shape=(*batch_shape, 2), dtype=torch.complex128, generator=generator)
    mix = Ensemble(words, torch.tensor([0.25, 0.75], dtype=torch.float64).expand(*batch_shape, 2))
    return {"pure": words[..., 0], "ensemble": mix, "dense": mix.dense()}


def _dense(system) -> torch.Tensor:
    """The density matrix of any of the three kinds, ``(..., d, d)``."""
    if isinstance(system, PureState):
        return system.proj().data
    return system.dense().data if isinstance(system, Ensemble) else system.data


@pytest.mark.parametrize("kind", ["pure", "ensemble", "dense"])
@pytest.mark.parametrize("system_shape, projector_shape", SHAPES)
def test_projector_probability_broadcasts_batch_dims_as_torch(kind, system_shape, projector_shape):
    """``Tr(rho_b P_b)`` over the broadcast batch, as ``POVM.probabilities`` pairs states with POVMs; it was the
    outer product ``(*S, *P)`` (every state with every projector), which ``[..., None]`` now asks for."""
    gen = torch.Generator().manual_seed(0)
    system = _systems(system_shape, gen)[kind]
    rows = random_unitary(D, batch_shape=projector_shape, dtype=torch.complex128, generator=gen)[..., :2, :]
    projector = Projector(rows)                                                      # rank 2
    expected = (_dense(system) * projector.matrix().mT).sum((-2, -1)).real         # Tr(rho P), torch broadcast
    p = projector.probability(system)
    assert p.shape == torch.broadcast_shapes(system_shape, projector_shape) == expected.shape
    assert_allclose(p, expected)


@pytest.mark.parametrize("kind", ["pure", "ensemble", "dense"])
def test_projector_batches_and_povms_agree_on_the_same_measurements(kind):
    """B projective measurements of k = d outcomes on B systems: ``POVM.probabilities`` of the POVMs and
    ``Projector.probability`` of the projectors ``(B, k)`` with the systems ``[..., None]`` give the same ``(B, k)``;
    every system with every projector of one outcome set is the same ``[..., None]``, as the module gives it."""
    gen = torch.Generator().manual_seed(1)
    systems = _systems((4,), gen)[kind]
    projectors = Projector(random_unitary(D, batch_shape=(4,), dtype=torch.complex128, generator=gen).unsqueeze(-2))
    per_povm = POVM.from_projectors(projectors).probabilities(systems)
    assert per_povm.shape == (4, D)
    assert_allclose(projectors.probability(systems[..., None]), per_povm)
    with pytest.raises(ValueError, match=r"system has batch shape \(4,\) and Projector has batch shape \(4, 3\)"):
        projectors.probability(systems)                                             # (4,) against (4, 3)
    module = ProjectiveMeasurement(D, complete=True, dtype=torch.complex128, generator=gen)
    expected = module(systems).detach()
    assert_allclose(module.as_projectors().probability(systems[..., None]), expected)
    assert_allclose(POVM.from_projectors(module.as_projectors()).probabilities(systems), expected)


def test_projector_probability_refuses_other_arguments():
    projector = Projector.from_state(PureState.basis_state(0, D, dtype=torch.complex128))
    with pytest.raises(TypeError, match="got Tensor"):
        projector.probability(torch.eye(D, dtype=torch.complex128))
    with pytest.raises(ValueError, match="dimension"):
        projector.probability(PureState.basis_state(0, D + 1, dtype=torch.complex128))


@pytest.mark.parametrize("kind", ["pure", "ensemble", "dense"])
def test_every_post_measurement_route_returns_the_kind_it_was_given(kind):
    """``lueders_update`` and ``ProjectiveMeasurement.post_measurement_state`` made an Ensemble dense, where
    ``POVM`` and ``POVMMeasurement`` kept it lazy: the same Lueders rule of the same projector gave two kinds."""
    gen = torch.Generator().manual_seed(2)
    system = _systems((2,), gen)[kind]
    module = ProjectiveMeasurement(D, complete=True, dtype=torch.complex128, generator=gen)
    povm = POVM.from_projectors(module.as_projectors())
    general = POVMMeasurement(D, D, dtype=torch.complex128, generator=gen)
    routes = {
        "lueders_update": lueders_update(system, module.as_projectors()[1]),
        "ProjectiveMeasurement": module.post_measurement_state(system, 1),
        "POVM": povm.post_measurement_state(system, 1),
        "POVM kraus": povm.post_measurement_state(system, 1, instrument="kraus"),
        "POVMMeasurement": general.post_measurement_state(system, 1),
    }
    for name, after in routes.items():
        assert type(after) is type(system), (name, type(after).__name__)
        assert after.batch_shape == system.batch_shape, name
    reference = _dense(routes["lueders_update"])
    for name in ("ProjectiveMeasurement", "POVM"):
        assert_allclose(_dense(routes[name]), reference, atol=1e-10)
    p = module.as_projectors()[1].matrix()
    rho = _dense(system)
    expected = p @ rho @ p
    assert_allclose(reference, expected / expected.diagonal(dim1=-2, dim2=-1).sum(-1).real[..., None, None],
                    atol=1e-10)                                                     # P rho P / Tr(P rho)
    if kind == "ensemble":
        assert_allclose(routes["lueders_update"].weights.sum(-1), torch.ones(2, dtype=torch.float64))


def test_reprs_show_the_sizes_that_are_not_the_dimension_without_building_matrices(monkeypatch):
    # an Ensemble, a Projector and a POVM printed batch_shape and dim only: the number of members, the rank and
    # the number of outcomes were not to be seen
    mix = Ensemble(random_pure_state(D, batch_shape=(2, 5)))
    monkeypatch.setattr(Ensemble, "dense", lambda self: pytest.fail("repr built the d x d matrix"))
    assert repr(mix) == "Ensemble(batch_shape=(2,), dim=3, num_states=5, dtype=torch.complex64, device=cpu)"
    proj = Projector(torch.eye(D, dtype=torch.complex64)[:2])
    assert repr(proj) == "Projector(batch_shape=(), dim=3, rank=2, dtype=torch.complex64, device=cpu)"
    povm = POVM(torch.eye(D, dtype=torch.complex64).unsqueeze(-2).expand(2, D, 1, D))
    assert repr(povm) == "POVM(batch_shape=(2,), dim=3, num_outcomes=3, rank=1, dtype=torch.complex64, device=cpu)"
    assert repr(Ensemble(random_pure_state(D, batch_shape=(0, 4)))).startswith("Ensemble(batch_shape=(0,), dim=3, "
                                                                               "num_states=4, ")
