"""The compiled loops of :mod:`qpnlp.nn.order_mean_loop` against the torch ops of :mod:`qpnlp.nn.position_mean`.

The same pooled values (to float rounding: the sums over words run in another order) and the same table gradients
(same rows, padding row left out; same values) for every table layout, with and without dropout, float32 and
float64, sparse and dense; the ids checked before a loop runs; NaN propagated as the torch ops propagate it.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qpnlp.nn import make_embedding, order_mean_loop
from qpnlp.nn.position_mean import complex_order_mean

pytest.importorskip("numba", reason="the compiled loops need numba (the extra 'fast', in 'test')")

V, D = 11, 6
#: Padding (0), a repeated id, masked words that are not padding (row 2), a row of no word (row 3).
IDS = torch.tensor([[2, 3, 2, 5, 0], [6, 7, 8, 0, 0], [4, 4, 9, 10, 1], [0, 0, 0, 0, 0]])
MASK = IDS != 0
MASK[2, 3:] = False
#: (frequency, phase) tables present: complex-order, without phase, complex-vanilla, amplitude only.
LAYOUTS = {"order+phase": (True, True), "order": (True, False), "vanilla": (False, True), "amplitude": (False, False)}


def _tol(dtype):
    return dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-12, rtol=1e-12)


def _tables(dtype, layout, seed=0):
    g = torch.Generator().manual_seed(seed)
    with_frequency, with_phase = LAYOUTS[layout]
    tables = [torch.randn(V, D, dtype=dtype, generator=g), torch.randn(V, D, dtype=dtype, generator=g),
              torch.randn(V, D, dtype=dtype, generator=g) * 3]
    tables = [t if present else None for t, present in zip(tables, (True, with_frequency, with_phase))]
    return [None if t is None else t.requires_grad_() for t in tables]


def _run(compiled, monkeypatch, tables, *, ids=IDS, mask=MASK, p=0.0, sparse=True, padding_idx=0, seed=1):
    """The pooled values and the tables' gradients (dense, and their sparse rows) with or without the loops."""
    monkeypatch.setenv("QPNLP_ORDER_MEAN_COMPILED", "1" if compiled else "0")
    dtype = tables[0].dtype
    g = torch.Generator().manual_seed(seed)
    batch, length = ids.shape
    positions = torch.arange(length, dtype=dtype).expand(batch, length) * 1.5 + 0.25
    keep = (torch.rand(batch, length, D, generator=g, dtype=dtype) >= p).to(dtype) if p else None
    calls = []
    monkeypatch.setattr(order_mean_loop, "forward", _spy(order_mean_loop.forward, calls))
    for t in tables:
        if t is not None:
            t.grad = None
    out = complex_order_mean(ids, mask, positions, *tables, keep=keep, p=p, padding_idx=padding_idx, sparse=sparse)
    grad = torch.randn(out.shape, dtype=out.dtype, generator=g)
    (out.conj() * grad).real.sum().backward()
    assert bool(calls) == compiled
    return out.detach(), [None if t is None else t.grad for t in tables]


def _spy(fn, calls):
    def wrapped(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)
    return wrapped


def _assert_same(compiled, reference, dtype, sparse, equal_nan=False):
    (out, grads), (ref_out, ref_grads) = compiled, reference
    torch.testing.assert_close(out, ref_out, equal_nan=equal_nan, **_tol(dtype))
    for grad, ref in zip(grads, ref_grads):
        assert (grad is None) == (ref is None)
        if grad is None:
            continue
        assert grad.is_sparse == ref.is_sparse == sparse
        if sparse:
            rows = grad._indices()[0]                              # coalesced: sorted, unique
            assert torch.equal(grad._indices(), ref._indices()) and bool((rows[1:] > rows[:-1]).all())
            grad, ref = grad.to_dense(), ref.to_dense()
        torch.testing.assert_close(grad, ref, equal_nan=equal_nan, **_tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("p", [0.0, 0.4])
@pytest.mark.parametrize("sparse", [True, False])
def test_compiled_equals_the_torch_ops(dtype, layout, p, sparse, monkeypatch):
    """Values and all three tables' gradients; sparse gradients hold every id of the batch (masked words'
    included), padding left out; a row of no word pools to zero."""
    tables = _tables(dtype, layout)
    compiled = _run(True, monkeypatch, tables, p=p, sparse=sparse)
    reference = _run(False, monkeypatch, tables, p=p, sparse=sparse)
    _assert_same(compiled, reference, dtype, sparse)
    assert not compiled[0][3].any()
    if sparse:
        assert torch.equal(compiled[1][0]._indices()[0], torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))


@pytest.mark.parametrize("padding_idx", [None, 4])
def test_padding_row_and_partial_gradients(padding_idx, monkeypatch):
    """Another padding row (or none), and tables of which only some need a gradient."""
    tables = _tables(torch.float64, "order+phase")
    tables[1].requires_grad_(False)
    compiled = _run(True, monkeypatch, tables, p=0.3, padding_idx=padding_idx)
    reference = _run(False, monkeypatch, tables, p=0.3, padding_idx=padding_idx)
    _assert_same(compiled, reference, torch.float64, True)
    assert compiled[1][1] is None
    rows = compiled[1][0]._indices()[0].tolist()
    assert (4 in rows) == (padding_idx is None) and 0 in rows


@pytest.mark.parametrize("shape", [(0, 5), (3, 0)], ids=["no-rows", "no-words"])
@pytest.mark.parametrize("sparse", [True, False])
def test_an_empty_batch(shape, sparse, monkeypatch):
    tables = _tables(torch.float32, "order+phase")
    ids = torch.zeros(shape, dtype=torch.long)
    compiled = _run(True, monkeypatch, tables, ids=ids, mask=ids != 0, p=0.3, sparse=sparse)
    reference = _run(False, monkeypatch, tables, ids=ids, mask=ids != 0, p=0.3, sparse=sparse)
    _assert_same(compiled, reference, torch.float32, sparse)
    assert compiled[0].shape == (shape[0], D)
    assert all(not g.to_dense().any() for g in compiled[1])


@pytest.mark.parametrize("where", ["word", "masked word", "frequency"])
def test_nan_propagates_as_in_the_torch_ops(where, monkeypatch):
    """A NaN in a row reaches the same outputs and gradients (a masked word's is multiplied by 0, not skipped)."""
    tables = _tables(torch.float32, "order+phase")
    with torch.no_grad():
        table, row = {"word": (tables[0], 3), "masked word": (tables[0], 10), "frequency": (tables[1], 7)}[where]
        table[row, 2] = float("nan")
    compiled = _run(True, monkeypatch, tables, p=0.3)
    reference = _run(False, monkeypatch, tables, p=0.3)
    assert compiled[0].isnan().any()
    _assert_same(compiled, reference, torch.float32, True, equal_nan=True)


def test_out_of_range_ids_raise_before_they_are_read(monkeypatch):
    """The loops check each index before they read with it: ids outside every table raise IndexError (as the torch
    ops raise one), and nothing is written to the tables."""
    tables = _tables(torch.float32, "order+phase")
    monkeypatch.setenv("QPNLP_ORDER_MEAN_COMPILED", "1")
    before = [t.detach().clone() for t in tables]
    for bad in (V, -1):
        ids = IDS.clone()
        ids[1, 2] = bad
        with pytest.raises(IndexError, match="word ids"):
            complex_order_mean(ids, ids != 0, torch.ones(IDS.shape), *tables)
        with pytest.raises(IndexError, match="word ids"):
            order_mean_loop.distinct_ids(ids, V, 0)
    short = torch.randn(V - 2, D)                                  # one table shorter than the ids need
    with pytest.raises(IndexError, match="word ids"):
        order_mean_loop.forward(IDS, MASK, None, 0.0, torch.ones(IDS.shape), tables[0].detach(), tables[1].detach(),
                                short)
    a = torch.zeros(IDS.numel(), D)
    with pytest.raises(IndexError, match="distinct ids"):
        order_mean_loop.row_gradients(IDS, 5, torch.zeros(4, D, 2), torch.ones(4, 1), None, MASK, None, a, a, a,
                                      (True, False, True))
    assert all(torch.equal(t, b) for t, b in zip(tables, before))


def test_shapes_are_checked():
    ids, a, table = IDS, torch.zeros(IDS.numel(), D), torch.zeros(V, D)
    with pytest.raises(ValueError, match="shapes do not match"):                 # frequencies without positions
        order_mean_loop.forward(ids, MASK, None, 0.0, None, table, table, None)
    with pytest.raises(ValueError, match="shapes do not match"):
        order_mean_loop.forward(ids, MASK, None, 0.0, None, table, None, table[:, 1:])
    with pytest.raises(ValueError, match="shapes do not match"):
        order_mean_loop.forward(ids, MASK, torch.ones(4, 5, 1), 0.0, None, table, None, table)
    with pytest.raises(ValueError, match="shapes do not match"):
        order_mean_loop.row_gradients(ids, V, torch.zeros(4, D + 1, 2), torch.ones(4, 1), None, MASK, None, a, a, a,
                                      (True, False, False))


def test_what_the_loops_take(monkeypatch):
    """CPU, int64 ids, a bool mask, one float dtype, contiguous, matching shapes, and the switches on; otherwise the
    torch ops run."""
    tables = [t.detach() for t in _tables(torch.float32, "order+phase")]
    keep, positions = torch.ones(4, 5, D), torch.ones(4, 5)
    monkeypatch.setenv("QPNLP_ORDER_MEAN_COMPILED", "1")
    assert order_mean_loop.accepts(IDS, MASK, keep, positions, *tables)
    assert order_mean_loop.accepts(IDS, MASK, None, None, tables[0], None, tables[2])
    assert not order_mean_loop.accepts(IDS, MASK, keep.double(), positions, *tables)
    assert not order_mean_loop.accepts(IDS, MASK.float(), keep, positions, *tables)
    assert not order_mean_loop.accepts(IDS, MASK, keep[..., :1], positions, *tables)
    assert not order_mean_loop.accepts(IDS, MASK, keep, positions, tables[0].t(), *tables[1:])
    assert not order_mean_loop.accepts(IDS, MASK, keep, positions, tables[0][:, :3], *tables[1:])
    assert not order_mean_loop.accepts(IDS.int(), MASK, keep, positions, *tables)
    assert not order_mean_loop.accepts(IDS, MASK, keep[:, :4], positions, *tables)
    monkeypatch.setenv("QPNLP_COMPILED", "0")
    assert not order_mean_loop.accepts(IDS, MASK, keep, positions, *tables)
    monkeypatch.setenv("QPNLP_COMPILED", "1")
    monkeypatch.setenv("QPNLP_ORDER_MEAN_COMPILED", "0")
    assert not order_mean_loop.available()


@pytest.mark.parametrize("kind", ["complex_order", "complex_vanilla"])
def test_the_embeddings_dropped_mean_takes_the_loops(kind, monkeypatch):
    """Through :meth:`ComplexOrderEmbedding.dropped_mean` (its default positions, dropout drawn by one seed)."""
    results = []
    for compiled in (True, False):
        monkeypatch.setenv("QPNLP_ORDER_MEAN_COMPILED", "1" if compiled else "0")
        emb = make_embedding(kind, V, D, generator=torch.Generator().manual_seed(3))
        torch.manual_seed(7)
        out = emb.dropped_mean(IDS, MASK, dropout=0.3)
        out.abs().sum().backward()
        results.append((out.detach(), [w.grad for w in emb.parameters()]))
    _assert_same(results[0], results[1], torch.float32, emb.amplitude.sparse)


@pytest.mark.parametrize("padding_idx", [None, 0, 5, 12])
def test_distinct_ids_are_torch_unique_without_the_padding_id(padding_idx):
    """Sorted distinct ids and each position's index among them, as ``torch.unique`` gives them, the padding id
    (present, or not in the batch) left out and pointing one past the last row; its scratch is never cleared, so
    calls in a row must not see each other's ids."""
    g = torch.Generator().manual_seed(4)
    for shape in [(6, 9), (3, 1), (0, 4), (7, 40)]:
        ids = torch.randint(0, 13, shape, generator=g)
        rows, inverse = order_mean_loop.distinct_ids(ids, 13, padding_idx)
        expected = torch.unique(ids)
        if padding_idx is not None:
            expected = expected[expected != padding_idx]
        assert torch.equal(rows, expected) and inverse.shape == ids.shape
        padding = ids == (-1 if padding_idx is None else padding_idx)
        assert torch.equal(rows[inverse[~padding]], ids[~padding]) and bool((inverse[padding] == rows.numel()).all())


def test_the_keep_mask_is_overwritten_as_the_torch_ops_overwrite_it(monkeypatch):
    """The loop writes k m into ``keep`` (the documented side effect of the torch ops) and computes c_b itself."""
    tables = _tables(torch.float32, "order+phase")
    positions = torch.arange(5.0).expand(4, 5)
    keeps = []
    for compiled in ("1", "0"):
        monkeypatch.setenv("QPNLP_ORDER_MEAN_COMPILED", compiled)
        keep = (torch.rand(4, 5, D, generator=torch.Generator().manual_seed(2)) >= 0.5).float()
        complex_order_mean(IDS, MASK, positions, *tables, keep=keep, p=0.5)
        keeps.append(keep)
    assert torch.equal(keeps[0], keeps[1]) and not keeps[0][~MASK].any()


@pytest.mark.parametrize("trig", ["1", "0"])
@pytest.mark.parametrize("limit", [10.0, 1e4])
def test_the_loops_cosines_and_sines_are_within_an_ulp_of_one(trig, limit, monkeypatch):
    """The cosines and sines the forward loop computes (the polynomial of ``qpnlp._trig``, libm beyond 8192 or
    with ``QPNLP_TRIG_COMPILED=0``) agree with a float64 reference as closely as ``tests/test_trig.py`` asks."""
    monkeypatch.setenv("QPNLP_TRIG_COMPILED", trig)
    g = torch.Generator().manual_seed(5)
    batch, length, width, rows = 8, 30, 50, 100
    ids = torch.randint(1, rows, (batch, length), generator=g)
    positions = torch.arange(float(length)).expand(batch, length).contiguous()
    frequency = (torch.rand(rows, width, generator=g) * 2 - 1) * limit / length
    phase = torch.randn(rows, width, generator=g)
    mask = torch.ones(batch, length, dtype=torch.bool)
    _, _, _, cos, sin = order_mean_loop.forward(ids, mask, None, 0.0, positions, torch.ones(rows, width), frequency,
                                                phase)
    angle = (frequency[ids] * positions.unsqueeze(-1) + phase[ids]).reshape(-1, width).double()   # float32 angles
    ulp_of_one = torch.finfo(torch.float32).eps
    assert float((cos.double() - angle.cos()).abs().max()) < ulp_of_one
    assert float((sin.double() - angle.sin()).abs().max()) < ulp_of_one


@settings(max_examples=30)
@given(data=st.data())
def test_fuzzed_batches_pool_and_differentiate_as_the_torch_ops(data):
    """Random (B, L) batches, empty ones included: rows of padding only, masks of any pattern, repeated ids, the last
    table row, the padding row at either end or none, every table layout, dtype and gradient kind."""
    draw = data.draw
    batch, length = draw(st.integers(0, 4)), draw(st.integers(0, 5))
    ids = torch.tensor(draw(st.lists(st.integers(0, V - 1), min_size=batch * length, max_size=batch * length)),
                       dtype=torch.long).view(batch, length)
    mask = torch.tensor(draw(st.lists(st.booleans(), min_size=ids.numel(), max_size=ids.numel())),
                        dtype=torch.bool).view(ids.shape)
    dtype, seed = draw(st.sampled_from([torch.float32, torch.float64])), draw(st.integers(0, 99))
    tables = _tables(dtype, draw(st.sampled_from(list(LAYOUTS))), seed)
    options = dict(ids=ids, mask=mask, p=draw(st.sampled_from([0.0, 0.5])), sparse=draw(st.booleans()),
                   padding_idx=draw(st.sampled_from([None, 0, V - 1])), seed=seed)
    with pytest.MonkeyPatch.context() as patch:
        compiled, reference = _run(True, patch, tables, **options), _run(False, patch, tables, **options)
    _assert_same(compiled, reference, dtype, options["sparse"])
