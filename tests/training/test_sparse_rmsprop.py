"""SparseRMSprop: lazy row updates, equal to torch's RMSprop when every row is touched."""

import math
import re

import pytest
import torch
from torch import nn

from qpnlp.training.sparse_rmsprop import RowSparseAdam, SparseRMSprop


def _loss(emb, ids, target):
    return (emb(ids) - target).square().sum()


def test_equals_dense_rmsprop_when_every_row_is_in_the_batch():
    torch.manual_seed(0)
    sparse, dense = nn.Embedding(5, 3, sparse=True), nn.Embedding(5, 3)
    dense.weight.data.copy_(sparse.weight.data)
    opt_s = SparseRMSprop(sparse.parameters(), lr=0.05, alpha=0.9, eps=1e-7)
    opt_d = torch.optim.RMSprop(dense.parameters(), lr=0.05, alpha=0.9, eps=1e-7)
    for step in range(4):
        ids = torch.tensor([[0, 1, 2, 3, 4, 2]])  # every row, one repeated
        target = torch.randn(1, 6, 3)
        for emb, opt in ((sparse, opt_s), (dense, opt_d)):
            opt.zero_grad()
            _loss(emb, ids, target).backward()
            opt.step()
    torch.testing.assert_close(sparse.weight, dense.weight)


def test_rows_outside_the_batch_are_untouched():
    torch.manual_seed(1)
    emb = nn.Embedding(6, 2, sparse=True)
    opt = SparseRMSprop(emb.parameters(), lr=0.1)
    before = emb.weight.detach().clone()
    _loss(emb, torch.tensor([[1, 4]]), torch.ones(1, 2, 2)).backward()
    opt.step()
    changed = (emb.weight != before).any(-1)
    assert changed.tolist() == [False, True, False, False, True, False]
    assert opt.state[emb.weight]["square_avg"][[0, 2, 3, 5]].eq(0).all()


def _step_with(grads, table, **options):
    """``table`` (a copy) after one SparseRMSprop step per gradient of ``grads``, and its running average."""
    param = table.clone().requires_grad_()
    opt = SparseRMSprop([param], **options)
    for grad in grads:
        param.grad = grad
        opt.step()
    return param.detach(), opt.state[param]["square_avg"]


def _entries_twice(grad):
    """``grad`` (sparse COO) uncoalesced: each entry given twice, as halves (exact in binary)."""
    grad = grad.coalesce()
    indices, values = grad.indices(), grad.values() / 2
    return torch.sparse_coo_tensor(torch.cat([indices, indices], 1), torch.cat([values, values]), grad.shape,
                                   check_invariants=True)


@pytest.mark.parametrize("uncoalesced", [False, True])
def test_a_gradient_of_two_sparse_dimensions_updates_the_rows_of_its_entries(uncoalesced):
    """``dense.to_sparse()`` on a table (sparse_dim 2, scalar entries) failed on shapes ("The size of tensor a (4)
    must match the size of tensor b (7)") or, with as many entries as columns, updated the wrong elements; now it
    is the row-sparse gradient (sparse_dim 1) bit for bit, and torch's dense RMSprop on the rows it touches."""
    torch.manual_seed(3)
    table, rows = torch.randn(6, 4), [0, 2, 3]
    dense = []
    for step in range(3):
        grad = torch.zeros(6, 4)
        grad[rows] = torch.randn(3, 4) * (torch.rand(3, 4) < 0.6)   # zero entries in the touched rows
        grad[rows, step] = 1.0 + step                                  # every touched row has an entry
        dense.append(grad)
    entries = [g.to_sparse() for g in dense]
    assert entries[0].sparse_dim() == 2
    options = dict(lr=0.05, alpha=0.9, eps=1e-7)
    ours, ours_avg = _step_with([_entries_twice(g) if uncoalesced else g for g in entries], table, **options)
    by_rows, by_rows_avg = _step_with([g.to_sparse(1) for g in dense], table, **options)
    assert torch.equal(ours, by_rows) and torch.equal(ours_avg, by_rows_avg)
    touched = table[rows].clone().requires_grad_()
    reference = torch.optim.RMSprop([touched], **options)
    for grad in dense:
        touched.grad = grad[rows]
        reference.step()
    torch.testing.assert_close(ours[rows], touched.detach())
    untouched = [1, 4, 5]
    assert torch.equal(ours[untouched], table[untouched]) and ours_avg[untouched].eq(0).all()


def test_a_hybrid_gradient_of_two_sparse_dimensions_updates_the_rows_of_its_entries():
    """A 3-D parameter's gradient of sparse_dim 2 (entries of shape (5,)) equals its row-sparse form bit for bit;
    one with no entry changes nothing."""
    torch.manual_seed(4)
    table, grad = torch.randn(4, 3, 5), torch.zeros(4, 3, 5)
    grad[1, 2], grad[3, 0], grad[3, 2] = torch.randn(3, 5)
    options = dict(lr=0.1, alpha=0.8)
    assert grad.to_sparse(2).sparse_dim() == 2 and grad.to_sparse(2).values().shape[1:] == (5,)
    ours, ours_avg = _step_with([grad.to_sparse(2)] * 2, table, **options)
    by_rows, by_rows_avg = _step_with([grad.to_sparse(1)] * 2, table, **options)
    assert torch.equal(ours, by_rows) and torch.equal(ours_avg, by_rows_avg)
    assert torch.equal(ours[[0, 2]], table[[0, 2]]) and not torch.equal(ours[1], table[1])
    nothing = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 5), (4, 3, 5),
                                      check_invariants=True)
    assert torch.equal(_step_with([nothing], table, **options)[0], table)


def test_bad_hyper_parameters():
    with pytest.raises(ValueError, match="lr > 0"):
        SparseRMSprop([torch.zeros(2, requires_grad=True)], lr=0.0)


# ------------------------------------------------------------------ RowSparseAdam (torch's SparseAdam by rows)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("compiled", ["1", "0"])
def test_row_sparse_adam_equals_torch_sparse_adam(dtype, compiled, monkeypatch):
    """The torch ops bit for bit; the compiled loop (numba, where installed) to an ulp of the square root.

    37 columns: torch's vectorised kernels (whose square root is not always correctly rounded) and their tail.
    """
    from qpnlp.training.sparse_rmsprop import RowSparseAdam
    monkeypatch.setenv("QPNLP_SPARSE_ADAM_COMPILED", compiled)
    torch.manual_seed(2)
    ours, theirs = nn.Embedding(40, 37, sparse=True, dtype=dtype), nn.Embedding(40, 37, sparse=True, dtype=dtype)
    theirs.weight.data.copy_(ours.weight.data)
    opt_ours = RowSparseAdam(ours.parameters(), lr=0.05, betas=(0.8, 0.95))
    opt_theirs = torch.optim.SparseAdam(theirs.parameters(), lr=0.05, betas=(0.8, 0.95))
    for step in range(6):
        ids = torch.randint(0, 40, (3, 7))                 # repeated rows, uncoalesced gradients
        target = torch.randn(3, 7, 37, dtype=dtype)
        theirs.weight.data.copy_(ours.weight.data)         # the same parameters at every step: no drift apart
        for emb, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            _loss(emb, ids, target).backward()
            opt.step()
        tolerance = 0 if compiled == "0" else torch.finfo(dtype).eps * theirs.weight.detach().abs().max()
        assert (ours.weight - theirs.weight).abs().max() <= tolerance
    for key in ("exp_avg", "exp_avg_sq"):                  # no square root in the moments: bit for bit
        assert torch.equal(opt_ours.state[ours.weight][key], opt_theirs.state[theirs.weight][key])
    assert opt_ours.state[ours.weight]["step"] == opt_theirs.state[theirs.weight]["step"] == 6
    opt_theirs.load_state_dict(opt_ours.state_dict())      # the same state format both ways


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("compiled", ["1", "0"])
def test_row_sparse_adam_step_equals_torch_sparse_adam_step(dtype, compiled, monkeypatch):
    """One step from the same parameters and moments: the torch ops bit for bit, the compiled loop to 1 ulp."""
    from qpnlp.training import adam_rows
    from qpnlp.training.sparse_rmsprop import RowSparseAdam
    monkeypatch.setenv("QPNLP_SPARSE_ADAM_COMPILED", compiled)
    torch.manual_seed(3)
    start = torch.randn(50, 37, dtype=dtype)
    params = [nn.Parameter(start.clone()) for _ in range(2)]
    opts = [RowSparseAdam([params[0]], lr=0.05), torch.optim.SparseAdam([params[1]], lr=0.05)]
    for _ in range(3):
        rows = torch.unique(torch.randint(0, 50, (30,)))
        grad = torch.sparse_coo_tensor(rows.unsqueeze(0), torch.randn(rows.numel(), 37, dtype=dtype), (50, 37),
                                       check_invariants=True)
        for p, opt in zip(params, opts):
            p.grad = grad.clone()
            opt.step()
        difference = (params[0] - params[1]).abs().max()
        if compiled == "1" and adam_rows.available():
            ulp = torch.finfo(dtype).eps * params[1].detach().abs().max()
            assert difference <= ulp
        else:
            assert difference == 0
        params[0].data.copy_(params[1].data)


def test_coalesced_trusts_sorted_unique_rows_and_sorts_the_others():
    from qpnlp.training.sparse_rmsprop import coalesced
    values = torch.arange(6.0).view(3, 2)
    ordered = torch.sparse_coo_tensor(torch.tensor([[1, 4, 6]]), values, (8, 2), check_invariants=True)
    assert not ordered.is_coalesced() and coalesced(ordered).is_coalesced()
    assert torch.equal(coalesced(ordered).to_dense(), ordered.to_dense())
    repeated = torch.sparse_coo_tensor(torch.tensor([[4, 1, 4]]), values, (8, 2), check_invariants=True)
    assert torch.equal(coalesced(repeated)._indices(), torch.tensor([[1, 4]]))
    assert torch.equal(coalesced(repeated).to_dense(), repeated.to_dense())


def test_a_coalesced_gradient_is_built_without_torch_2_11s_invariant_warning(monkeypatch):
    """torch 2.11 warns even when check_invariants=False is explicit; the CLI printed it beside its error line."""
    import warnings

    from qpnlp import _sparse
    from qpnlp.training.sparse_rmsprop import coalesced

    original = torch.sparse_coo_tensor

    def warning_like_torch_2_11(*args, **kwargs):
        warnings.warn("Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) will occur",
                      UserWarning)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, "sparse_coo_tensor", warning_like_torch_2_11)
    monkeypatch.setattr(_sparse, "_SILENCE", _sparse._warns_despite_opt_out())     # what the import probe finds
    assert _sparse._SILENCE
    rows, values = torch.tensor([[0, 2]]), torch.ones(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grad = _sparse.coalesced_coo(rows, values, (4, 3))
        unmarked = original(rows, values, (4, 3), check_invariants=True)
        assert coalesced(unmarked).is_coalesced()         # the optimiser's path goes through coalesced_coo too
    assert grad.is_coalesced() and torch.equal(grad.to_dense()[2], torch.ones(3))


def test_a_torch_without_the_invariant_warning_builds_gradients_without_catch_warnings(monkeypatch):
    # every sparse gradient of the tables entered warnings.catch_warnings (not thread-safe: it swaps the
    # process-wide filters; and time on a hot path) to silence a warning that torch 2.13 does not give
    import warnings

    from qpnlp import _sparse

    assert not _sparse._warns_despite_opt_out() and not _sparse._SILENCE      # the pinned torch 2.13

    def refused(*args, **kwargs):
        raise AssertionError("catch_warnings entered")

    monkeypatch.setattr(warnings, "catch_warnings", refused)
    grad = _sparse.coalesced_coo(torch.tensor([[1, 3]]), torch.arange(4.0).view(2, 2), (5, 2))
    assert grad.is_coalesced() and torch.equal(grad._indices(), torch.tensor([[1, 3]]))
    assert torch.equal(grad.to_dense(), torch.tensor([[0.0, 0], [0, 1], [0, 0], [2, 3], [0, 0]]))


@pytest.mark.parametrize("bad", [dict(lr=float("nan")), dict(lr=float("inf")), dict(eps=float("nan")),
                                 dict(lr="0.1")])
def test_rates_that_are_not_finite_numbers_are_refused(bad):
    # NaN and infinite rates passed the comparisons (lr <= 0 is False for NaN) and trained every row to NaN
    with pytest.raises(ValueError, match="need finite lr > 0"):
        SparseRMSprop([torch.zeros(2, requires_grad=True)], **bad)


def test_a_groups_own_rate_is_checked_too():
    # a group's lr bypassed the check of the defaults: lr=-1 climbed the loss
    with pytest.raises(ValueError, match=r"got lr=-1.0"):
        SparseRMSprop([dict(params=[torch.zeros(2, requires_grad=True)], lr=-1.0)])


@pytest.mark.parametrize("group", [dict(lr=float("inf")), dict(lr=True), dict(lr=-1.0), dict(lr=float("nan")),
                                   dict(betas=(0.9, float("nan"))), dict(betas=(0.9,)), dict(eps=-1.0)])
def test_row_sparse_adam_checks_every_groups_rates(group):
    # torch's SparseAdam checked the constructor's values only: lr=inf (which passes 0 < lr) stepped every row of the
    # batch to -inf, lr=True trained at rate 1, and a group's own lr=-1 or NaN climbed the loss or wrote NaN
    table = torch.nn.Parameter(torch.zeros(5, 3))
    with pytest.raises(ValueError, match=r"need finite lr > 0, betas \(two numbers in \[0, 1\)\), eps > 0; got lr="):
        RowSparseAdam([dict(params=[table], **group)], lr=0.1)
    if "lr" in group:
        with pytest.raises(ValueError):             # the constructor's own: torch's message or this one
            RowSparseAdam([table], **group)


@pytest.mark.parametrize("kind", [SparseRMSprop, RowSparseAdam])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_rate_beyond_the_largest_float_of_the_table_is_refused(kind, dtype):
    # lr=1e39 passed the finite check: RowSparseAdam stepped the batch's rows of a float32 table to inf or NaN, and
    # SparseRMSprop met torch's "value cannot be converted to type float without overflow" at its first step
    table = torch.nn.Embedding(5, 3, sparse=True, dtype=dtype)
    limit = _ADAM_LIMIT if kind is RowSparseAdam else _RMSPROP_LIMIT
    message = rf"^lr must be at most {limit} \(parameter 0 of its group\); got 1e\+39$"
    if dtype == torch.float32:
        with pytest.raises(ValueError, match=message):
            kind(table.parameters(), lr=1e39)
        optimiser = kind(table.parameters(), lr=0.1)
        with pytest.raises(ValueError, match=message):      # a later group too, and it is not kept
            optimiser.add_param_group(dict(params=[torch.nn.Parameter(torch.zeros(2, 3))], lr=1e39))
        assert len(optimiser.param_groups) == 1
        return
    optimiser = kind(table.parameters(), lr=1e39)           # a float64 table holds the step
    table(torch.tensor([1, 2])).sum().backward()
    optimiser.step()
    assert torch.isfinite(table.weight).all()


_RMSPROP_LIMIT = (r"3.403e\+37, the largest torch.float32 / 10 \(SparseRMSprop's step multiplies lr by up to "
                  r"1 / sqrt\(1 - alpha\), alpha=0.99\)")
_ADAM_LIMIT = (r"4.68e\+37, the largest torch.float32 / 7.27 \(Adam's step multiplies lr by up to \(1 - beta1\) / "
               r"sqrt\(\(1 - beta2\)\(1 - beta1\^2 / beta2\)\), betas=\(0.9, 0.999\)\)")


@pytest.mark.parametrize("sparse", [True, False])
def test_a_rate_that_the_step_multiplies_past_the_largest_float_is_refused(sparse):
    # the first step multiplies lr by 1 / sqrt(1 - alpha) (10 with the default alpha): lr=3e38 or 1e38, under the
    # largest float32, stepped every row of the batch to -inf with no error
    table = torch.nn.Embedding(5, 3, sparse=sparse)
    for lr in (3e38, 1e38):
        message = rf"^lr must be at most {_RMSPROP_LIMIT} \(parameter 0 of its group\); got {re.escape(f'{lr:g}')}$"
        with pytest.raises(ValueError, match=message):
            SparseRMSprop(table.parameters(), lr=lr)
    with pytest.raises(ValueError, match=r"at most 1.076e\+38, the largest torch.float32 / 3.162 .*alpha=0.9\)"):
        SparseRMSprop(table.parameters(), lr=3e38, alpha=0.9)
    optimiser = SparseRMSprop(table.parameters(), lr=3.4e37)       # just under the limit: the step stays finite
    table(torch.tensor([1, 2])).sum().backward()
    optimiser.step()
    assert torch.isfinite(table.weight).all() and table.weight[1:3].abs().amax() > 3e38


def test_a_dense_gradient_is_divided_before_the_rate_multiplies_it():
    # addcdiv_ multiplied lr * g first: lr=1e30 and a gradient of 1e9 gave -inf, though the step is 10 * lr = 1e31
    table = torch.nn.Parameter(torch.zeros(2, 3))
    optimiser = SparseRMSprop([table], lr=1e30)
    table.grad = torch.full((2, 3), 1e9)
    optimiser.step()
    torch.testing.assert_close(table.detach(), torch.full((2, 3), -1e31))


@pytest.mark.parametrize("kind", [SparseRMSprop, RowSparseAdam])
@pytest.mark.parametrize("rows", [2, 7])
def test_a_state_of_other_shapes_is_refused_on_load(kind, rows):
    # a smaller state failed at the next step inside torch (IndexError "index out of range in self"), a larger
    # one was used without a word
    table = torch.nn.Embedding(5, 3, sparse=True)
    optimiser = kind(table.parameters(), lr=0.1)
    table(torch.tensor([1, 2])).sum().backward()
    optimiser.step()
    saved = optimiser.state_dict()
    good = {k: v.clone() if torch.is_tensor(v) else v for k, v in saved["state"][0].items()}
    wrong = {k: torch.zeros(rows, 3) if torch.is_tensor(v) and v.dim() else v for k, v in good.items()}
    with pytest.raises(ValueError, match=rf"of parameter 0 has shape \({rows}, 3\) but the parameter has shape"):
        optimiser.load_state_dict({**saved, "state": {0: wrong}})
    assert all(torch.equal(optimiser.state[table.weight][k], v) for k, v in good.items() if torch.is_tensor(v))


def _gradient(grad, kind):
    """``grad`` (dense) as the step meets it: ``kind`` "dense", "rows" (sparse_dim 1) or "entries" (sparse_dim 2)."""
    return {"dense": grad, "rows": grad.to_sparse(1), "entries": grad.to_sparse()}[kind]


@pytest.mark.parametrize("sparse", [True, False])
def test_a_rate_set_in_param_groups_after_construction_is_checked_at_the_step(sparse):
    # the constructor checked lr, but a rate written into param_groups later (a scheduler's, one's own) was not:
    # lr=1e38 or (with its alpha changed too) 3e38 stepped the batch's rows to -inf, lr=nan wrote NaN
    table = torch.nn.Embedding(5, 3, sparse=sparse)
    other = torch.nn.Parameter(torch.ones(2, 3))
    optimiser = SparseRMSprop([other, *table.parameters()], lr=0.1)
    optimiser.add_param_group(dict(params=[torch.nn.Parameter(torch.zeros(2))]))
    table(torch.tensor([1, 2])).sum().backward()
    other.grad = torch.ones(2, 3)
    before = table.weight.detach().clone()
    refusals = {1e38: rf"^lr must be at most {_RMSPROP_LIMIT} \(parameter 0 of param_groups\[0\]\); got 1e\+38$",
                3e38: r"at most 1.076e\+38, .*alpha=0.9\) \(parameter 0 of param_groups\[0\]\); got 3e\+38$",
                float("nan"): r"^need finite lr > 0, 0 <= alpha < 1, eps > 0; got lr=nan"}
    for lr, message in refusals.items():
        optimiser.param_groups[0].update(lr=lr, alpha=0.9 if lr == 3e38 else 0.99)
        with pytest.raises(ValueError, match=message):
            optimiser.step()
        assert torch.equal(table.weight, before) and torch.equal(other, torch.ones(2, 3)) and not optimiser.state
    optimiser.param_groups[0].update(lr=0.1, alpha=0.99)
    optimiser.param_groups[1]["lr"] = 1e39                  # a later group fails: no group is stepped
    with pytest.raises(ValueError, match=r"\(parameter 0 of param_groups\[1\]\); got 1e\+39$"):
        optimiser.step()
    assert torch.equal(table.weight, before) and not optimiser.state


def test_a_scheduler_lowering_the_rate_steps_as_torchs_rmsprop():
    # the check at every step lets legal rates through: a scheduler's, as torch's RMSprop takes them
    torch.manual_seed(2)
    sparse, dense = nn.Embedding(5, 3, sparse=True), nn.Embedding(5, 3)
    dense.weight.data.copy_(sparse.weight.data)
    opt_s = SparseRMSprop(sparse.parameters(), lr=0.05, alpha=0.9)
    opt_d = torch.optim.RMSprop(dense.parameters(), lr=0.05, alpha=0.9)
    schedulers = [torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5) for opt in (opt_s, opt_d)]
    for step in range(4):
        ids, target = torch.tensor([[0, 1, 2, 3, 4, 2]]), torch.randn(1, 6, 3)
        for emb, opt, scheduler in zip((sparse, dense), (opt_s, opt_d), schedulers):
            opt.zero_grad()
            _loss(emb, ids, target).backward()
            opt.step()
            scheduler.step()
    assert opt_s.param_groups[0]["lr"] == 0.05 / 16
    torch.testing.assert_close(sparse.weight, dense.weight)


def _reference_step(param, square_avg, grad, lr, alpha, eps):
    """The lazy RMSprop step of the module docstring, written with the torch ops of the step before the overflow
    checks (a dense ``grad``; its zero rows are the rows outside the batch)."""
    rows = grad.abs().sum(1).nonzero().squeeze(1)
    values = grad[rows]
    avg = square_avg[rows].mul_(alpha).addcmul_(values, values, value=1 - alpha)
    square_avg[rows] = avg
    param.index_add_(0, rows, values / avg.sqrt().add_(eps), alpha=-lr)


@pytest.mark.parametrize("kind", ["dense", "rows", "entries"])
@pytest.mark.parametrize("scale", [1.0, 1e19])
def test_ordinary_steps_are_the_lazy_formula_bit_for_bit(kind, scale):
    # the overflow checks only read: parameters and averages are the same floats as before them, also where a dense
    # gradient is large enough (1e19) for the checked copy of the average
    torch.manual_seed(3)
    table = torch.randn(6, 4) * scale
    expected, expected_avg = table.clone(), torch.zeros(6, 4)
    param = table.clone().requires_grad_()
    optimiser = SparseRMSprop([param], lr=0.05, alpha=0.9, eps=1e-7)
    for step in range(4):
        grad = torch.randn(6, 4) * scale * (torch.rand(6, 1) < 0.5 if kind != "dense" else 1)
        param.grad = _gradient(grad, kind)
        optimiser.step()
        _reference_step(expected, expected_avg, grad, 0.05, 0.9, 1e-7)
    assert torch.equal(param.detach(), expected) and torch.equal(optimiser.state[param]["square_avg"], expected_avg)


@pytest.mark.parametrize("kind", ["dense", "rows", "entries"])
@pytest.mark.parametrize("value", [1e36, -3e38, 3e38])
def test_a_finite_gradient_whose_square_overflows_the_average_is_refused(kind, value):
    # (1 - alpha) g^2 was inf for |g| > 1.8e20 (alpha 0.99): the average of the entry held inf, its step g / inf was
    # 0 then and at every later step, the entry no longer trained and nothing said so (torch's RMSprop does the same)
    param = torch.zeros(4, 3, requires_grad=True)
    optimiser = SparseRMSprop([param], lr=0.1)
    param.grad = _gradient(torch.ones(4, 3), kind)
    optimiser.step()
    before, before_avg = param.detach().clone(), optimiser.state[param]["square_avg"].clone()
    grad = torch.ones(4, 3)
    grad[2, 1] = value
    param.grad = _gradient(grad, kind)
    message = f"SparseRMSprop: a gradient entry of parameter 0 of param_groups[0], shape (4, 3), is {abs(value):g}:"
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        optimiser.step()
    assert torch.equal(param.detach(), before) and torch.equal(optimiser.state[param]["square_avg"], before_avg)
    double = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
    double.grad = _gradient(grad.double(), kind)
    SparseRMSprop([double], lr=0.1).step()                  # a float64 table holds the square: RMSprop's step
    torch.testing.assert_close(double[2, 1].item(), -0.1 / 0.1 * (1 if value > 0 else -1))


@pytest.mark.parametrize("kind", ["dense", "rows", "entries"])
@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_a_gradient_that_is_not_finite_still_makes_its_entry_nan(kind, value):
    # unchanged by the overflow check (module docstring): no error, the entry NaN, the trainers' checks report it
    param = torch.zeros(4, 3, requires_grad=True)
    optimiser = SparseRMSprop([param], lr=0.1)
    grad = torch.ones(4, 3)
    grad[2, 1] = value
    param.grad = _gradient(grad, kind)
    optimiser.step()
    assert param[2, 1].isnan() and param.isnan().sum() == 1
    param.grad = _gradient(torch.ones(4, 3), kind)          # a finite gradient later: the entry stays as it was
    optimiser.step()
    average = optimiser.state[param]["square_avg"]
    assert param[2, 1].isnan() and param.isnan().sum() == 1 and average.isfinite().sum() == 11
    assert average[2, 1].isnan() if math.isnan(value) else average[2, 1] == value


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_row_sparse_adam_makes_the_entry_of_a_gradient_that_is_not_finite_nan(value):
    # the module docstring: that entry NaN (not its row), its moments NaN, or inf then NaN at its next step
    table = nn.Parameter(torch.zeros(4, 3))
    optimiser = RowSparseAdam([table], lr=0.1)
    grad = torch.ones(4, 3)
    grad[2, 1] = value
    for step, gradient in enumerate((grad, torch.ones(4, 3))):
        table.grad = gradient.to_sparse(1)
        optimiser.step()
        moments = [optimiser.state[table][key] for key in ("exp_avg", "exp_avg_sq")]
        assert table[2, 1].isnan() and table.isnan().sum() == 1 and all(m.isfinite().sum() == 11 for m in moments)
        assert all(m[2, 1].isnan() if math.isnan(value) or step else m[2, 1] == value for m in moments)


@pytest.mark.parametrize("group", [dict(lr=1e39), dict(lr=float("nan")), dict(lr=-1.0), dict(betas=(0.9, 1.0)),
                                   dict(eps=float("inf"))])
def test_row_sparse_adam_checks_a_rate_set_in_param_groups_at_the_step(group):
    # the constructor checked lr, but a value written into param_groups later (a scheduler's, one's own) was not:
    # lr=1e39 stepped the batch's rows of a float32 table to -inf, lr=nan wrote NaN, lr=-1 climbed the loss
    table = nn.Embedding(5, 3, sparse=True)
    later = nn.Parameter(torch.zeros(2, 3))
    optimiser = RowSparseAdam(table.parameters(), lr=0.1)
    optimiser.add_param_group(dict(params=[later]))
    table(torch.tensor([1, 2])).sum().backward()
    later.grad = torch.ones(2, 3).to_sparse(1)
    before = table.weight.detach().clone()
    message = (rf"^lr must be at most {_ADAM_LIMIT} \(parameter 0 of param_groups\[{{}}\]\); "
               r"got 1e\+39$" if group.get("lr") == 1e39 else
               r"^need finite lr > 0, betas \(two numbers in \[0, 1\)\), eps > 0; got lr=")
    for index in (0, 1):                                    # a later group fails: no group is stepped
        optimiser.param_groups[index].update(group)
        with pytest.raises(ValueError, match=message.format(index)):
            optimiser.step()
        assert torch.equal(table.weight, before) and torch.equal(later, torch.zeros(2, 3)) and not optimiser.state
        optimiser.param_groups[index].update(lr=0.1, betas=(0.9, 0.999), eps=1e-8)
    optimiser.step()
    assert optimiser.state[table.weight]["step"] == optimiser.state[later]["step"] == 1


def _last_adam_step(lr: float, gradients: list[float], zeros: int) -> float:
    """The last step of a float32 entry under RowSparseAdam (default betas): ``zeros`` zero gradients (as a state
    of that many steps, its moments still 0), then ``gradients``; the entry is set to 0 before the last one."""
    table = nn.Parameter(torch.zeros(2, 1))
    optimiser = RowSparseAdam([table], lr=lr)
    table.grad = torch.sparse_coo_tensor([[0]], [[0.0]], (2, 1), check_invariants=True)
    optimiser.step()
    optimiser.state[table]["step"] = zeros
    for gradient in gradients:
        table.data.zero_()
        table.grad = torch.sparse_coo_tensor([[0]], [[gradient]], (2, 1), check_invariants=True)
        optimiser.step()
    return -float(table.detach()[0, 0])


@pytest.mark.parametrize("compiled", ["1", "0"])
def test_row_sparse_adam_refuses_a_rate_that_its_step_multiplies_past_the_largest_float(compiled, monkeypatch):
    # Adam's step is up to 7.27 lr at the default betas, not lr: lr=3e38 (under the largest float32, accepted) stepped
    # an entry to inf at the first large gradient after zeros (3.15 lr), and lr=1.07e38 (max / 3.16, Kingma & Ba's
    # bound) after gradients growing by beta2 / beta1 a step; the largest rate now allowed stays finite there
    monkeypatch.setenv("QPNLP_SPARSE_ADAM_COMPILED", compiled)
    table = nn.Parameter(torch.zeros(2, 1))
    for lr in (3e38, 1.07e38):
        with pytest.raises(ValueError, match=rf"^lr must be at most {_ADAM_LIMIT} \(parameter 0 of its group\); "):
            RowSparseAdam([table], lr=lr)
    largest = torch.finfo(torch.float32).max / 7.2702918 / (1 + 1e-6)
    with pytest.raises(ValueError, match="at most 4.68e"):
        RowSparseAdam([table], lr=largest * 1.00001)
    growing = [(0.999 / 0.9) ** k for k in range(300)]             # the worst case: the ratio's supremum
    step = _last_adam_step(largest, growing, zeros=10000)
    assert math.isfinite(step) and step > 7.27 * largest
    assert _last_adam_step(largest, [1.0], zeros=5000) > 3.15 * largest


def test_row_sparse_adam_under_a_scheduler_lowering_the_rate_steps_as_torchs_sparse_adam():
    # the check at every step lets legal rates through: a scheduler's, as torch's SparseAdam takes them
    torch.manual_seed(4)
    ours, theirs = nn.Embedding(6, 3, sparse=True), nn.Embedding(6, 3, sparse=True)
    theirs.weight.data.copy_(ours.weight.data)
    optimisers = RowSparseAdam(ours.parameters(), lr=0.05), torch.optim.SparseAdam(theirs.parameters(), lr=0.05)
    schedulers = [torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5) for opt in optimisers]
    for step in range(4):
        ids, target = torch.randint(0, 6, (1, 4)), torch.randn(1, 4, 3)
        for emb, opt, scheduler in zip((ours, theirs), optimisers, schedulers):
            opt.zero_grad()
            _loss(emb, ids, target).backward()
            opt.step()
            scheduler.step()
    assert optimisers[0].param_groups[0]["lr"] == 0.05 / 16
    torch.testing.assert_close(ours.weight, theirs.weight)
