"""The compiled row-wise Adam update (numba) against torch's SparseAdam arithmetic, and its guards."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qpnlp import _numba
from qpnlp.training import adam_rows
from qpnlp.training.sparse_rmsprop import RowSparseAdam

pytest.importorskip("numba", reason="the compiled Adam loop needs numba (the extra 'fast', in 'test')")


def _tables(V=30, D=37, R=11, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    param = torch.randn(V, D, generator=g, dtype=dtype)
    exp_avg = torch.randn(V, D, generator=g, dtype=dtype) * 0.1
    exp_avg_sq = torch.rand(V, D, generator=g, dtype=dtype) * 0.01
    rows = torch.randperm(V, generator=g)[:R].sort().values
    values = torch.randn(R, D, generator=g, dtype=dtype)
    return param, rows, values, exp_avg, exp_avg_sq


def _torch_rows(param, rows, values, exp_avg, exp_avg_sq, step_size, beta1, beta2, eps):
    """The torch ops of RowSparseAdam._rows_step (torch's SparseAdam arithmetic)."""
    m = values.sub(exp_avg[rows]).mul_(1 - beta1).add_(exp_avg[rows])
    v = values.pow(2).sub_(exp_avg_sq[rows]).mul_(1 - beta2).add_(exp_avg_sq[rows])
    exp_avg[rows], exp_avg_sq[rows] = m, v
    param.index_add_(0, rows, m.div(v.sqrt().add_(eps)).mul_(-step_size))


def _agree_to_the_square_roots_rounding(ours, theirs, before):
    """Element by element, within two ulps of the step and one of the result: torch's vectorised square root is
    within an ulp of the correctly rounded one, which moves the step ``m / (sqrt(v) + eps) * -s`` by up to an
    ulp of its denominator and of the division, and the sum ``theta + step`` rounds once in each. A step larger
    than the parameter (zero gradient, large step size) makes the step's ulps the larger ones."""
    eps = torch.finfo(theirs.dtype).eps
    step = (theirs - before).abs()
    assert ((ours - theirs).abs() <= eps * (theirs.abs() + 2 * step)).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_loop_equals_the_torch_ops(dtype):
    ours = _tables(dtype=dtype)
    theirs = [t.clone() for t in ours]
    before = ours[0].clone()
    step_size = 0.01 * math.sqrt(1 - 0.999 ** 3) / (1 - 0.9 ** 3)
    assert adam_rows.accepts(ours[0], ours[2], ours[3], ours[4])
    adam_rows.adam_rows(*ours, step_size=step_size, beta1=0.9, beta2=0.999, eps=1e-8)
    _torch_rows(*theirs, step_size, 0.9, 0.999, 1e-8)
    assert torch.equal(ours[3], theirs[3]) and torch.equal(ours[4], theirs[4])      # the moments: bit for bit
    untouched = torch.ones(ours[0].shape[0], dtype=torch.bool)
    untouched[ours[1]] = False
    assert torch.equal(ours[0][untouched], theirs[0][untouched])
    _agree_to_the_square_roots_rounding(ours[0], theirs[0], before)


def test_nan_in_a_gradient_stays_in_its_row():
    param, rows, values, exp_avg, exp_avg_sq = _tables()
    values[0, 2] = float("nan")
    before = param.clone()
    adam_rows.adam_rows(param, rows, values, exp_avg, exp_avg_sq, step_size=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
    assert torch.isnan(param[rows[0], 2]) and torch.isnan(exp_avg[rows[0], 2])
    assert int(torch.isnan(param).sum()) == 1 and not torch.equal(param[rows[1]], before[rows[1]])


def test_rows_out_of_range_and_wrong_shapes_raise():
    param, rows, values, exp_avg, exp_avg_sq = _tables()
    options = dict(step_size=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
    with pytest.raises(IndexError, match=r"row ids must lie in \[0, 30\)"):
        adam_rows.adam_rows(param, rows + 30 - int(rows.max()), values, exp_avg, exp_avg_sq, **options)
    with pytest.raises(IndexError):
        adam_rows.adam_rows(param, rows - int(rows.min()) - 1, values, exp_avg, exp_avg_sq, **options)
    with pytest.raises(ValueError, match="values must be"):
        adam_rows.adam_rows(param, rows, values[:, :-1], exp_avg, exp_avg_sq, **options)
    with pytest.raises(ValueError, match="the moments must have the table's shape"):
        adam_rows.adam_rows(param, rows, values, exp_avg[:-1], exp_avg_sq, **options)


def test_accepts_only_contiguous_cpu_float_tables_and_the_switch(monkeypatch):
    param, rows, values, exp_avg, exp_avg_sq = _tables()
    assert adam_rows.accepts(param, values, exp_avg, exp_avg_sq)
    assert not adam_rows.accepts(param.t(), values, exp_avg, exp_avg_sq)
    assert not adam_rows.accepts(param.half(), values.half(), exp_avg.half(), exp_avg_sq.half())
    assert not adam_rows.accepts(param.double(), values, exp_avg, exp_avg_sq)
    assert not adam_rows.accepts(param[0], values[0], exp_avg[0], exp_avg_sq[0])
    monkeypatch.setenv("QPNLP_SPARSE_ADAM_COMPILED", "0")
    assert not adam_rows.available() and not adam_rows.accepts(param, values, exp_avg, exp_avg_sq)
    monkeypatch.setenv("QPNLP_SPARSE_ADAM_COMPILED", "1")
    monkeypatch.setattr(_numba, "HAVE_NUMBA", False)
    assert not adam_rows.available()


def test_row_sparse_adam_takes_the_loop_on_cpu(monkeypatch):
    """On the gradient's rows as they come where they increase (no check in torch ops); an uncoalesced gradient's
    rows (repeated here) are refused before any write, then the loop runs on the coalesced gradient."""
    calls, loop = [], adam_rows.adam_rows

    def spy(*args, **kwargs):
        calls.append((args[1].tolist(), loop(*args, **kwargs)))
        return calls[-1][1]

    monkeypatch.setattr(adam_rows, "adam_rows", spy)
    emb = torch.nn.Embedding(10, 4, sparse=True)
    optimiser = RowSparseAdam(emb.parameters(), lr=0.1)
    emb(torch.tensor([1, 3, 3])).sum().backward()
    optimiser.step()
    assert calls == [([1, 3, 3], False), ([1, 3], True)]
    calls.clear()
    unmarked = torch.sparse_coo_tensor(torch.tensor([[2, 5]]), torch.ones(2, 4), (10, 4), check_invariants=True)
    emb.weight.grad = unmarked
    optimiser.step()
    assert not unmarked.is_coalesced() and calls == [([2, 5], True)]


def test_rows_that_do_not_increase_are_refused_before_any_write():
    param, rows, values, exp_avg, exp_avg_sq = _tables()
    before = [t.clone() for t in (param, exp_avg, exp_avg_sq)]
    options = dict(step_size=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
    for bad in (rows.flip(0), torch.cat((rows[:3], rows[2:]))):
        assert not adam_rows.adam_rows(param, bad, torch.ones(bad.numel(), values.shape[1]), exp_avg, exp_avg_sq,
                                       **options)
    assert all(torch.equal(t, b) for t, b in zip((param, exp_avg, exp_avg_sq), before))
    assert adam_rows.adam_rows(param, rows, values, exp_avg, exp_avg_sq, **options)


def test_a_step_larger_than_the_parameter_agrees_to_the_steps_rounding():
    """Zero gradient, step size 0.5: steps up to 2.6 against parameters near 2.3, where the square root's ulp in
    the step exceeds the parameter's (hypothesis found it; two ulps of 2.3 apart on this machine)."""
    param, _, _, exp_avg, exp_avg_sq = _tables(V=9, D=11, R=0, seed=20)
    ours = [param, torch.tensor([0, 8]), torch.zeros(2, 11), exp_avg, exp_avg_sq]
    theirs, before = [t.clone() for t in ours], param.clone()
    assert adam_rows.adam_rows(*ours, step_size=0.5, beta1=0.9, beta2=0.999, eps=1e-8)
    _torch_rows(*theirs, 0.5, 0.9, 0.999, 1e-8)
    assert (theirs[0] - before).abs().max() > theirs[0][[0, 8]].abs().min()
    _agree_to_the_square_roots_rounding(ours[0], theirs[0], before)


@settings(max_examples=40)
@given(data=st.data())
def test_fuzzed_rows_update_as_the_torch_ops(data):
    """Random rows (none, one, the table's last, all of them), widths of one and across vector tails, gradients of
    zero, subnormal, tiny and huge size, float32 and float64: moments bit for bit, parameters to the square root's
    rounding."""
    draw = data.draw
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    V, D = draw(st.integers(1, 9)), draw(st.integers(1, 19))
    rows = sorted(draw(st.sets(st.integers(0, V - 1), max_size=V)))
    param, _, _, exp_avg, exp_avg_sq = _tables(V=V, D=D, R=0, dtype=dtype, seed=draw(st.integers(0, 99)))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    size = draw(st.sampled_from([0.0, 1e-45, 1e-30, 1.0, 1e30]))
    values = torch.randn(len(rows), D, dtype=dtype, generator=gen) * size
    ours = [param, torch.tensor(rows, dtype=torch.long), values, exp_avg, exp_avg_sq]
    theirs, before = [t.clone() for t in ours], param.clone()
    options = dict(step_size=draw(st.sampled_from([1e-3, 0.5])), beta1=0.9, beta2=0.999, eps=1e-8)
    assert adam_rows.adam_rows(*ours, **options)
    _torch_rows(*theirs, *options.values())
    assert torch.equal(ours[3], theirs[3]) and torch.equal(ours[4], theirs[4])
    _agree_to_the_square_roots_rounding(ours[0], theirs[0], before)
