"""SparseRMSprop: lazy row updates, equal to torch's RMSprop when every row is touched."""

import pytest
import torch
from torch import nn

from qpnlp.training.sparse_rmsprop import SparseRMSprop


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


def test_bad_hyper_parameters():
    with pytest.raises(ValueError, match="lr > 0"):
        SparseRMSprop([torch.zeros(2, requires_grad=True)], lr=0.0)


# ------------------------------------------------------------------ RowSparseAdam (torch's SparseAdam by rows)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_row_sparse_adam_equals_torch_sparse_adam(dtype):
    from qpnlp.training.sparse_rmsprop import RowSparseAdam
    torch.manual_seed(2)
    ours, theirs = nn.Embedding(40, 3, sparse=True, dtype=dtype), nn.Embedding(40, 3, sparse=True, dtype=dtype)
    theirs.weight.data.copy_(ours.weight.data)
    opt_ours = RowSparseAdam(ours.parameters(), lr=0.05, betas=(0.8, 0.95))
    opt_theirs = torch.optim.SparseAdam(theirs.parameters(), lr=0.05, betas=(0.8, 0.95))
    for step in range(6):
        ids = torch.randint(0, 40, (3, 7))                 # repeated rows, uncoalesced gradients
        target = torch.randn(3, 7, 3, dtype=dtype)
        for emb, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            _loss(emb, ids, target).backward()
            opt.step()
    assert torch.equal(ours.weight, theirs.weight)        # the same operations in the same order: bit for bit
    for key in ("exp_avg", "exp_avg_sq"):
        assert torch.equal(opt_ours.state[ours.weight][key], opt_theirs.state[theirs.weight][key])
    assert opt_ours.state[ours.weight]["step"] == opt_theirs.state[theirs.weight]["step"] == 6
    opt_theirs.load_state_dict(opt_ours.state_dict())      # the same state format both ways


def test_coalesced_trusts_sorted_unique_rows_and_sorts_the_others():
    from qpnlp.training.sparse_rmsprop import coalesced
    values = torch.arange(6.0).view(3, 2)
    ordered = torch.sparse_coo_tensor(torch.tensor([[1, 4, 6]]), values, (8, 2), check_invariants=True)
    assert not ordered.is_coalesced() and coalesced(ordered).is_coalesced()
    assert torch.equal(coalesced(ordered).to_dense(), ordered.to_dense())
    repeated = torch.sparse_coo_tensor(torch.tensor([[4, 1, 4]]), values, (8, 2), check_invariants=True)
    assert torch.equal(coalesced(repeated)._indices(), torch.tensor([[1, 4]]))
    assert torch.equal(coalesced(repeated).to_dense(), repeated.to_dense())
