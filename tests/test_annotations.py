"""The annotations users' type checkers read (the package ships ``py.typed``) say what the code returns.

Each overload's declared return type is checked against what the implementation
returns for an argument of the overload's type, and the functions whose
annotation was once wrong or missing (a ``tuple`` field that takes any path, a
classmethod declared to return the base class) are checked at run time.
"""

from __future__ import annotations

import inspect
import os
import sys
import typing
from pathlib import Path

import pytest
import torch

from qpnlp.data import TsvStream
from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, SememeBasis, random_pure_state, tensor_product
from qpnlp.measurement import (POVM, POVMMeasurement, Projector, ProjectiveMeasurement, kraus_update,
                               lueders_update)
from qpnlp.models import Model, ModelConfig, QPDN, QPDNConfig

needs_get_overloads = pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.get_overloads is Python 3.11+")


def _systems() -> dict[type, object]:
    """One unbatched system on C^2 of each kind."""
    words = random_pure_state(2, batch_shape=(3,), dtype=torch.complex128, generator=torch.Generator().manual_seed(0))
    return {PureState: words[0], DensityMatrix: Ensemble(words).dense(), Ensemble: Ensemble(words)}


def _kinds(hint) -> tuple[type, ...]:
    """The classes of a hint: ``A`` or ``A | B``."""
    args = typing.get_args(hint)
    return args if args else (hint,)


def _overload_hints(function) -> list[dict]:
    overloads = typing.get_overloads(function)
    assert overloads, f"{function.__qualname__} declares no overloads"
    module = sys.modules[function.__module__]
    return [typing.get_type_hints(o, vars(module)) for o in overloads]


UPDATES = {
    "lueders_update": (lueders_update, lambda system: lueders_update(system, Projector.from_state(
        PureState.from_real(torch.tensor([1.0, 1.0], dtype=torch.float64), normalize_vectors=True)))),
    "kraus_update": (kraus_update, lambda system: kraus_update(
        system, torch.tensor([[1.0, 0.0], [0.0, 0.5]], dtype=torch.complex128))),
    "ProjectiveMeasurement.post_measurement_state": (
        ProjectiveMeasurement.post_measurement_state,
        lambda system: ProjectiveMeasurement(2, complete=True, dtype=torch.complex128).post_measurement_state(
            system, 0)),
    "POVM.post_measurement_state": (
        POVM.post_measurement_state,
        lambda system: POVM.from_frame(torch.eye(2, dtype=torch.complex128)).post_measurement_state(system, 0)),
    "POVMMeasurement.post_measurement_state": (
        POVMMeasurement.post_measurement_state,
        lambda system: POVMMeasurement(2, 2, dtype=torch.complex128).post_measurement_state(system, 0)),
}


@needs_get_overloads
@pytest.mark.parametrize("name", sorted(UPDATES))
def test_post_measurement_overloads_return_what_they_declare(name):
    """A pure state stays pure, an Ensemble lazy, a density matrix dense (Lueders' Ensemble was made dense): the
    overloads say so, where the union these functions had left users to narrow."""
    function, call = UPDATES[name]
    systems = _systems()
    covered = set()
    for hints in _overload_hints(function):
        for kind in _kinds(hints["system"]):
            result = call(systems[kind])
            assert type(result) is hints["return"], (name, kind.__name__, type(result).__name__)
            covered.add(kind)
    assert covered == set(systems), f"{name}: overloads for {sorted(k.__name__ for k in covered)} only"


@needs_get_overloads
def test_basis_coordinates_and_tensor_product_overloads():
    basis = SememeBasis.random(2, generator=torch.Generator().manual_seed(1))
    systems = _systems()
    for hints in _overload_hints(SememeBasis.coordinates):
        (kind,) = _kinds(hints["obj"])
        assert type(basis.coordinates(systems[kind])) is hints["return"]
    pure, mixed = _overload_hints(tensor_product)
    assert type(tensor_product(systems[PureState], systems[PureState])) is pure["return"] is PureState
    for other in (DensityMatrix, Ensemble):
        assert type(tensor_product(systems[PureState], systems[other])) is mixed["return"] is DensityMatrix


@pytest.mark.parametrize("method, expected", [
    (PureState.proj, DensityMatrix), (SememeBasis.state, PureState), (SememeBasis.from_coordinates, PureState)])
def test_methods_that_had_no_return_annotation(method, expected):
    assert typing.get_type_hints(method)["return"] is expected
    state = _systems()[PureState]
    basis = SememeBasis.canonical(2, dtype=torch.complex128)
    result = {"proj": lambda: state.proj(), "state": lambda: basis.state(1),
              "from_coordinates": lambda: basis.from_coordinates(state)}[method.__name__]()
    assert type(result) is expected


def test_eigh_returns_values_and_eigenstates():
    hint = typing.get_type_hints(DensityMatrix.eigh)["return"]
    values, states = _systems()[DensityMatrix].eigh()
    assert typing.get_args(hint) == (torch.Tensor, PureState)
    assert isinstance(values, torch.Tensor) and isinstance(states, PureState)


def test_tsv_stream_takes_any_path_and_stores_paths(tmp_path):
    """``paths`` was annotated ``tuple``: the docs' ``TsvStream(sorted(dir.glob(...)))`` (a list of Paths) and
    ``TsvStream([path])`` failed a type check though they run; the field is a tuple of Paths once built."""
    files = [tmp_path / "a.tsv", tmp_path / "b.tsv"]
    for f in files:
        f.write_text("1900\ta b\n")
    init = typing.get_type_hints(TsvStream.__init__, vars(sys.modules[TsvStream.__module__]))
    accepted = typing.get_args(init["paths"])
    assert str in accepted and os.PathLike[str] in accepted
    assert typing.get_type_hints(TsvStream, vars(sys.modules[TsvStream.__module__]))["paths"] == tuple[Path, ...]
    for paths in (files[0], str(files[0]), files, [str(files[0]), files[1]], (f for f in files)):
        stream = TsvStream(paths)
        assert isinstance(stream.paths, tuple) and all(type(p) is type(files[0]) for p in stream.paths)
    assert [list(s.paths) for s in (TsvStream(files).shard(1, 2),)] == [[files[1]]]
    assert list(inspect.signature(TsvStream).parameters) == ["paths", "lowercase", "rank", "world"]


def test_from_pretrained_and_from_dict_return_the_class_they_are_called_on(tmp_path):
    """Declared ``-> Model`` (and nothing for ``from_dict``), so ``QPDN.from_pretrained(d).ensemble(...)`` was a
    type error; both return an instance of ``cls`` (a different registered class is refused)."""
    hints = typing.get_type_hints(Model.from_pretrained)
    model_t = hints["return"]
    assert isinstance(model_t, typing.TypeVar) and hints["cls"] == type[model_t]     # bound to Model
    config_t = typing.get_type_hints(ModelConfig.from_dict)["return"]
    assert isinstance(config_t, typing.TypeVar)

    config = QPDNConfig(num_words=6, num_classes=2, dim=4, num_measurements=3)
    assert type(QPDNConfig.from_dict(config.to_dict())) is QPDNConfig
    QPDN(config, generator=torch.Generator().manual_seed(0)).save_pretrained(tmp_path / "m")
    assert type(QPDN.from_pretrained(tmp_path / "m")) is QPDN
    assert type(Model.from_pretrained(tmp_path / "m")) is QPDN


def test_training_runs_declare_the_model_they_return():
    from qpnlp.training.classification import run_split, run_split_selected, train_prepared
    from qpnlp.training.matching_results import MatchingRun

    for function, position in ((run_split, 1), (run_split_selected, 1), (train_prepared, 1)):
        assert typing.get_args(typing.get_type_hints(function)["return"])[position] is Model
    assert typing.get_type_hints(MatchingRun)["model"] is Model
