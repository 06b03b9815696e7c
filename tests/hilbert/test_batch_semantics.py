"""Batch semantics of the first-class objects: indexing, iteration, re-weighting and broadcasting."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, SememeBasis, random_density_matrix, random_pure_state
from qpnlp.measurement import random_povm
from qpnlp.testing import assert_allclose, density_matrices, ensembles, povms, projectors, pure_states

SHAPES = st.lists(st.integers(1, 3), max_size=3).map(tuple)


def _objects(batch_shape):
    """Any first-class batched object of the given batch shape (small dimensions)."""
    small = st.integers(1, 3)
    return st.one_of(pure_states(dim=small, batch_shape=batch_shape),
                     ensembles(dim=small, batch_shape=batch_shape, max_states=3),
                     density_matrices(dim=small, batch_shape=batch_shape),
                     projectors(dim=small, batch_shape=batch_shape),
                     povms(dim=small, batch_shape=batch_shape, method="haar"))


@st.composite
def _item(draw, side: int):
    """One index item for a batch dim of size ``side``: an int (negative too), a slice, an int list or a bool mask."""
    kind = draw(st.sampled_from(("int", "slice", "list", "mask", "all")))
    if kind == "int":
        return draw(st.integers(-side, side - 1))
    if kind == "slice":
        bound = st.none() | st.integers(-side - 1, side + 1)
        return slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 2)))
    if kind == "list":
        return torch.tensor(draw(st.lists(st.integers(-side, side - 1), min_size=1, max_size=3)))
    if kind == "mask":
        return torch.tensor(draw(st.lists(st.booleans(), min_size=side, max_size=side)))
    return slice(None)


@st.composite
def _indices(draw, batch_shape):
    """An index over the batch dims: items per dim, ``None`` here and there, an ``...`` for a run, or one bool mask
    spanning several dims; sometimes fewer items than dims."""
    if batch_shape and draw(st.booleans()):
        span = draw(st.integers(1, len(batch_shape)))
        mask = torch.tensor(draw(st.lists(st.booleans(), min_size=math.prod(batch_shape[:span]),
                                          max_size=math.prod(batch_shape[:span])))).reshape(batch_shape[:span])
        return (mask, Ellipsis) if draw(st.booleans()) else mask
    items = []
    for side in batch_shape[:draw(st.integers(0, len(batch_shape)))]:
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
        items.append(draw(_item(side)))
    if draw(st.booleans()):
        start = draw(st.integers(0, len(items)))
        stop = draw(st.integers(start, len(items)))
        items[start:stop] = [Ellipsis]
    return tuple(items) if len(items) != 1 or draw(st.booleans()) else items[0]


@given(st.data())
def test_indexing_selects_batch_elements_as_a_tensor_of_the_batch_shape_would(data):
    """``obj[index]`` holds the batch elements that ``ids[index]`` names, ``ids`` an id tensor of the batch shape.

    The id tensor has no event dims, so torch's rules there are the batch semantics: every field keeps its event
    dims whole (an Ensemble's weights stay aligned with its states), ``...`` spans batch dims only, and an index
    torch refuses on the ids is refused on the object.
    """
    shape = data.draw(SHAPES)
    obj = data.draw(_objects(shape))
    index = data.draw(_indices(shape))
    if data.draw(st.integers(0, 5)) == 0:           # a mask one dim deeper than the batch: into the event dims
        deeper = obj._first().shape[:len(shape) + 1]
        index = torch.rand(deeper, generator=torch.Generator().manual_seed(0)) < 0.5
    ids = torch.arange(math.prod(shape)).reshape(shape)
    try:
        chosen = ids[index]
    except IndexError:
        with pytest.raises(IndexError):
            obj[index]
        return
    out = obj[index]
    assert type(out) is type(obj) and out.batch_shape == chosen.shape
    for name in obj._fields:
        field = getattr(obj, "_" + name)
        event = field.shape[len(shape):]
        expected = field.reshape(-1, *event)[chosen.reshape(-1)].reshape(*chosen.shape, *event)
        assert torch.equal(getattr(out, "_" + name), expected)
    if isinstance(out, Ensemble) and out.weights.numel():
        assert_allclose(out.weights.sum(-1), torch.ones_like(out.weights.sum(-1)))


@given(st.data())
def test_iteration_runs_over_the_first_batch_dim_and_refuses_an_unbatched_object(data):
    shape = data.draw(SHAPES)
    obj = data.draw(_objects(shape))
    if not shape:
        with pytest.raises(TypeError, match="unbatched"):   # was an empty iteration (Python's __getitem__ fallback)
            list(obj)
        return
    items = list(obj)
    assert len(items) == len(obj) == shape[0]
    for i, item in enumerate(items):
        assert type(item) is type(obj) and torch.equal(item._first(), obj[i]._first())


def test_a_bool_mask_never_reaches_the_event_dims():
    gen = torch.Generator().manual_seed(0)
    words = random_pure_state(3, batch_shape=(4,), generator=gen)
    with pytest.raises(IndexError, match="too many indices"):     # was a "state" of dimension 12 and norm 2
        words[torch.ones(4, 3, dtype=torch.bool)]
    sentences = Ensemble(random_pure_state(3, batch_shape=(4, 2), generator=gen),
                         mask=torch.tensor([[True, False]] * 4))
    with pytest.raises(IndexError, match="too many indices"):     # was one mixture of 8 members, weights summing to 4
        sentences[torch.ones(4, 2, dtype=torch.bool)]
    with pytest.raises(IndexError, match="one ellipsis"):
        words[..., ...]


def test_an_ellipsis_indexes_the_last_batch_dims_as_documented():
    rho = random_density_matrix(3, batch_shape=(2,), dtype=torch.complex128, generator=torch.Generator().manual_seed(1))
    values, states = rho.eigh()
    first = states[..., 0]                                        # eigh's docstring: eigenstates[..., k] is |v_k>
    assert first.batch_shape == (2,)
    assert_allclose(first.data, states.data[:, 0])
    assert_allclose(rho.expectation(first.proj().data), values[:, 0])
    assert states[None, ..., 1].batch_shape == (1, 2) and states[:, None].batch_shape == (2, 1, 3)


@given(ensembles(dim=st.integers(2, 4), batch_shape=(2,), max_states=4, masked=True))
def test_member_states_of_a_masked_ensemble_are_mixed_again_only_with_their_weights(mix):
    padded = bool((mix.weights == 0).any())
    rebuilt = Ensemble(mix.states, mix.weights)
    assert_allclose(rebuilt.dense().data, mix.dense().data)
    if padded:                                 # uniform weights over the zero rows gave a trace below one
        with pytest.raises(ValueError, match="unit norm"):
            Ensemble(mix.states)
        with pytest.raises(ValueError, match="unit norm"):
            DensityMatrix.from_ensemble(mix.states)
    else:
        assert_allclose(Ensemble(mix.states).dense().tr().real, torch.ones(2, dtype=mix.weights.dtype))


def test_povm_probabilities_refuse_batch_shapes_that_do_not_broadcast():
    gen = torch.Generator().manual_seed(2)
    povm = random_povm(3, 4, batch_shape=(4,), generator=gen)
    words = random_pure_state(3, batch_shape=(3,), generator=gen)
    for system in (words, Ensemble(PureState(words.data.unsqueeze(-2))), words.proj()):
        with pytest.raises(ValueError, match=r"system has batch shape \(3,\) and POVM has batch shape \(4,\)"):
            povm.probabilities(system)
    assert povm.probabilities(PureState(words.data[:1])).shape == (4, 4)     # (1,) with (4,): broadcast


def test_basis_labels_are_indexed_as_the_basis_states():
    for labels in (None, ["animal", "colour", "size"]):
        basis = SememeBasis.canonical(3, labels)
        assert basis.label(-1) == basis.label(2) == ("e2" if labels is None else "size")   # was "e-1" unlabelled
        assert torch.equal(basis.state(-1).data, basis.state(2).data)
        for j in (3, -4):
            with pytest.raises(IndexError, match="out of range"):          # was "e3" unlabelled
                basis.label(j)
            with pytest.raises(IndexError, match="out of range"):
                basis.state(j)
        with pytest.raises(TypeError, match="integer"):
            basis.label(1.0)


def test_basis_coordinates_name_the_kinds_they_take():
    basis = SememeBasis.canonical(3)
    words = random_pure_state(3, batch_shape=(2,), generator=torch.Generator().manual_seed(3))
    with pytest.raises(TypeError, match="takes a PureState or DensityMatrix; got Tensor"):   # was "d=<built-in method"
        basis.coordinates(words.data)
    with pytest.raises(TypeError, match="got DensityMatrix"):                       # was "unsupported operand"
        basis.from_coordinates(basis.coordinates(words.proj()))
    assert_allclose(basis.from_coordinates(basis.coordinates(words)).data, words.data)


@given(st.data())
def test_clone_holds_its_own_memory_and_cpu_keeps_the_values(data):
    """``clone()`` copies every field (an element indexed out of a batch no longer keeps the batch's storage) and
    ``cpu()`` gives the same values on the CPU, as the tensor methods of those names do."""
    obj = data.draw(_objects(data.draw(SHAPES)))
    copy, moved = obj.clone(), obj.cpu()
    assert type(copy) is type(obj) is type(moved) and copy.batch_shape == obj.batch_shape
    for name in obj._fields:
        ours, theirs = getattr(obj, "_" + name), getattr(copy, "_" + name)
        assert torch.equal(theirs, ours) and torch.equal(getattr(moved, "_" + name), ours)
        assert theirs.numel() == 0 or theirs.untyped_storage().data_ptr() != ours.untyped_storage().data_ptr()
        assert getattr(moved, "_" + name).device.type == "cpu"


@given(st.data())
def test_double_and_float_are_to_read_as_a_precision(data):
    """``double()`` / ``float()`` are ``to(torch.float64)`` / ``to(torch.float32)``: complex128 (complex64) states,
    projectors and POVMs with float64 (float32) weights, never torch.Tensor.double()'s cast of complex to real."""
    obj = data.draw(_objects(data.draw(SHAPES)))
    for move, real in ((obj.double, torch.float64), (obj.float, torch.float32)):
        moved = move()
        assert type(moved) is type(obj) and moved.equal(obj.to(real)) and moved.dtype == real.to_complex()
        for name in obj._fields:
            field = getattr(moved, "_" + name)
            assert field.is_complex() == getattr(obj, "_" + name).is_complex()
            assert (field.real if field.is_complex() else field).dtype == real


def test_clone_is_differentiable():
    data = torch.randn(2, 3, dtype=torch.complex128, requires_grad=True)
    state = PureState(data / data.abs().pow(2).sum(-1, keepdim=True).sqrt())
    state.clone().data.abs().pow(2).mul(torch.arange(3.0)).sum().backward()
    assert data.grad is not None and torch.isfinite(data.grad.abs()).all()


@given(st.data())
def test_equality_is_identity_and_values_are_compared_by_equal_and_allclose(data):
    """``==`` is ``is`` and ``hash`` is identity (one bool, never "Boolean value of Tensor ... is ambiguous"), so
    objects are dict keys and set members by identity; :meth:`equal` and :meth:`allclose` compare the values."""
    obj = data.draw(_objects(data.draw(SHAPES)))
    copy = obj.clone()
    assert (obj == obj) is True and (obj == copy) is False and (obj != copy) is True
    assert (obj == obj._first()) is False                                   # not an elementwise tensor
    assert len({obj, copy, obj}) == 2 and {obj: 1, copy: 2}[obj] == 1 and hash(obj) == hash(obj)
    assert obj.equal(copy) and obj.allclose(copy) and obj.allclose(copy.to(torch.complex128))
    other = type(obj)._trusted(**{n: getattr(obj, "_" + n) * (1 + 1e-3) for n in obj._fields})
    assert obj.allclose(other, rtol=1e-2) and (obj._first().abs().max() == 0 or not obj.allclose(other))
    with pytest.raises(TypeError, match=f"{type(obj).__name__}.equal compares with a {type(obj).__name__}"):
        obj.equal(obj._first())


def test_equal_and_allclose_compare_shapes_and_stored_values():
    state = PureState.basis_state(0, 2, dtype=torch.complex128)
    assert not state.equal(state[None]) and not state.allclose(state[None])        # no broadcasting
    assert not state.allclose(state.global_phase(1.0))                             # the same physical state
    assert not Ensemble(state[None]).allclose(Ensemble(state[None].global_phase(1.0)))
    with pytest.raises(TypeError, match="PureState.allclose compares with a PureState; got DensityMatrix"):
        state.allclose(state.proj())                                               # convert one first
    mix = Ensemble(random_pure_state(2, batch_shape=(3,), dtype=torch.complex128,
                                     generator=torch.Generator().manual_seed(4)))
    assert mix.equal(Ensemble(mix.states, mix.weights)) and mix.dense().allclose(mix.dense().clone())
