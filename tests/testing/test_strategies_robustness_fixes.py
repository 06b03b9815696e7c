"""Impossible arguments of the qpnlp.testing strategies fail when the strategy is built, naming the argument."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qpnlp.testing import (batch_shapes, density_matrices, dims, ensembles, isometries, povms, projectors,
                           pure_states, unitaries)

# Each call must raise by itself, before any draw (the strategy is built lazily by hypothesis otherwise).
BAD = [
    (lambda: projectors(dim=3, rank=-1), ValueError, "rank must be >= 1; got -1"),        # was a rank-2 projector
    (lambda: projectors(dim=3, rank=0), ValueError, "rank must be >= 1; got 0"),          # was IndexError amax
    (lambda: projectors(dim=3, rank=4), ValueError, "rank=4 exceeds dim=3"),
    (lambda: povms(dim=3, num_outcomes=0), ValueError, "num_outcomes must be >= 1; got 0"),  # ZeroDivisionError
    (lambda: povms(dim=3, rank=0), ValueError, "rank must be >= 1; got 0"),               # ZeroDivisionError
    (lambda: povms(dim=3, rank=5), ValueError, "rank=5 exceeds dim=3"),                   # effects were rank 3
    (lambda: povms(dim=3, num_outcomes=1, rank=2), ValueError, r"needs num_outcomes \* rank >= dim"),
    (lambda: povms(method="bogus"), ValueError, "unknown method 'bogus'"),
    (lambda: pure_states(dim=-1), ValueError, "dim must be >= 1; got -1"),                # negative dimension
    (lambda: pure_states(dim=0), ValueError, "dim must be >= 1; got 0"),                  # zero vector
    (lambda: pure_states(dim=2.5), ValueError, "dim must be an integer >= 1; got float 2.5"),
    (lambda: pure_states(dtype=torch.float32), TypeError, "dtype must be torch.complex64 or torch.complex128"),
    (lambda: pure_states(device="gpu"), ValueError, "device: unknown device 'gpu'"),
    (lambda: pure_states(batch_shape=(2, -1)), ValueError, r"batch_shape\[1\] must be >= 0; got -1"),
    (lambda: pure_states(batch_shape=3.0), TypeError, "batch_shape must be an integer or a tuple of integers"),
    (lambda: pure_states(batch_shape="3"), TypeError, "batch_shape must be an integer or a tuple of integers"),
    (lambda: ensembles(dim=0), ValueError, "dim must be >= 1"),
    (lambda: ensembles(max_states=0), ValueError, "max_states must be >= 1; got 0"),
    (lambda: ensembles(masked="yes"), TypeError, "masked must be a bool"),
    (lambda: ensembles(dtype=torch.float64), TypeError, "dtype must be"),
    (lambda: density_matrices(dim=3, rank=0), ValueError, "rank must be >= 1; got 0"),
    (lambda: density_matrices(dim=3, rank=4), ValueError, "rank=4 exceeds dim=3"),
    (lambda: density_matrices(method="bogus"), ValueError, "unknown method 'bogus'"),
    (lambda: density_matrices(device="gpu"), ValueError, "device: unknown device"),
    (lambda: unitaries(dim=0), ValueError, "dim must be >= 1; got 0"),
    (lambda: unitaries(dtype=torch.float32), TypeError, "dtype must be"),
    (lambda: isometries(rows=0), ValueError, "rows must be >= 1; got 0"),
    (lambda: isometries(rows=3, cols=-1), ValueError, "cols must be >= 1; got -1"),
    (lambda: isometries(rows=3, cols=4), ValueError, "cols=4 exceeds rows=3"),
    (lambda: dims(0), ValueError, "min_dim must be >= 1; got 0"),
    (lambda: dims(5, 3), ValueError, "max_dim must be >= 5; got 3"),
    (lambda: batch_shapes(-1), ValueError, "max_dims must be >= 0; got -1"),
]


@pytest.mark.parametrize("make, error, message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_impossible_arguments_fail_when_the_strategy_is_built(make, error, message):
    with pytest.raises(error, match=message):
        make()


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_arguments_drawn_from_a_strategy_are_checked_when_drawn(data):
    with pytest.raises(ValueError, match="dim must be >= 1; got 0"):
        data.draw(pure_states(dim=st.just(0)))
    with pytest.raises(ValueError, match="rank 3 exceeds dim 2"):
        data.draw(projectors(dim=2, rank=st.just(3)))
    with pytest.raises(ValueError, match="rank 4 exceeds dim 3"):
        data.draw(povms(dim=3, rank=st.just(4)))


@settings(max_examples=20, deadline=None)
@given(povms(dim=st.integers(1, 2), batch_shape=()))
def test_drawn_povm_ranks_never_exceed_the_dimension(povm):
    # the haar method drew ranks up to 3 whatever d was: rank-3 "effects" on C^1 or C^2
    assert povm.rank <= povm.dim


@settings(max_examples=5, deadline=None)
@given(pure_states(dim=2, batch_shape=3), ensembles(dim=2, batch_shape=st.just(2)), unitaries(dim=2, batch_shape=1))
def test_an_int_batch_shape_is_one_batch_dim_as_for_the_samplers(state, mix, u):
    # as random_pure_state(2, batch_shape=3) and torch.zeros(3): an int n is (n,) (it was a TypeError here)
    assert state.batch_shape == (3,) and mix.batch_shape == (2,) and u.shape == (1, 2, 2)


@settings(max_examples=5, deadline=None)
@given(pure_states(dim=3, batch_shape=(0,), device=torch.device("cpu")), unitaries(dim=st.integers(1, 3)))
def test_valid_arguments_still_draw(state, u):
    assert state.batch_shape == (0,) and state.dim == 3
    assert u.shape[-1] == u.shape[-2]


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_max_states_may_be_a_strategy(data):
    # st.integers(1, max_states) received the strategy itself: hypothesis' InvalidArgument at the first draw
    mix = data.draw(ensembles(dim=2, batch_shape=(), max_states=st.integers(1, 3)))
    assert 1 <= mix.num_states <= 3
    with pytest.raises(ValueError, match="max_states must be >= 1; got 0"):
        data.draw(ensembles(max_states=st.just(0)))


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@settings(max_examples=3, deadline=None)
@given(st.data())
def test_a_device_this_machine_lacks_fails_clearly_when_drawn(data):
    # the name is checked when the strategy is built (so that test modules collect anywhere); the draw moved the
    # tensors there and torch raised AssertionError("Torch not compiled with CUDA enabled"), a falsified property
    for strategy in (pure_states(device="cuda"), ensembles(device="cuda"), density_matrices(device="cuda"),
                     unitaries(device="cuda"), projectors(device="cuda"), isometries(device="cuda"),
                     povms(device="cuda")):
        with pytest.raises(ValueError, match="device: 'cuda' requested but CUDA is not available"):
            data.draw(strategy)
