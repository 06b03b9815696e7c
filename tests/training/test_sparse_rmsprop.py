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
