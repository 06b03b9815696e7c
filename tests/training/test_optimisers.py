"""Optimisers: each trainable parameter reaches exactly one optimiser, once, with the update its kind documents."""

import warnings

import pytest
import torch
from torch import nn

from qpnlp.nn import StateTransition
from qpnlp.nn.unitary import split_cayley_step_parameters
from qpnlp.training import Optimisers, TrainConfig, check_optimizer, dense_gradients, sparse_tables
from qpnlp.training.sparse_rmsprop import RowSparseAdam


def _held(optimisers: Optimisers) -> list[torch.Tensor]:
    return [p for opt in optimisers.optimisers for group in opt.param_groups for p in group["params"]]


class TiedTables(nn.Module):
    """A question and an answer table that share one weight (tied), and a dense layer."""

    def __init__(self):
        super().__init__()
        self.question = nn.Embedding(10, 3, sparse=True)
        self.answer = nn.Embedding(10, 3, sparse=True)
        self.answer.weight = self.question.weight
        self.out = nn.Linear(3, 1)

    def forward(self, q, a):
        return self.out(self.question(q).sum(1) * self.answer(a).sum(1)).sum()


class SparseBag(nn.Module):
    """The registry docs' bag of words, with a sparse ``nn.EmbeddingBag``."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.EmbeddingBag(10, 3, mode="sum", sparse=True)
        self.out = nn.Linear(3, 2)

    def forward(self, ids, mask):
        return self.out(self.embedding(ids, per_sample_weights=mask.float()))


def _sparse_adam_reference(param: torch.Tensor, grad: torch.Tensor, lr: float) -> torch.Tensor:
    """``param`` after one ``torch.optim.SparseAdam`` step with ``grad``."""
    ref = nn.Parameter(param.detach().clone())
    ref.grad = grad.clone()
    torch.optim.SparseAdam([ref], lr=lr).step()
    return ref.detach()


def test_a_table_tied_to_two_modules_is_held_and_stepped_once():
    """Each module of a tied table listed its weight: RowSparseAdam held it twice (torch's duplicate warning) and
    every step updated it twice (state step 2, rows moved by 2 lr instead of lr)."""
    torch.manual_seed(0)
    model = TiedTables()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # torch warns about duplicate parameters in a group
        opts = Optimisers(model, TrainConfig(embedding_lr=0.1))
    held = _held(opts)
    assert sum(p is model.question.weight for p in held) == 1 and len(held) == len(list(model.parameters()))
    model(torch.tensor([[1, 2]]), torch.tensor([[3]])).backward()
    expected = _sparse_adam_reference(model.question.weight, model.question.weight.grad, 0.1)
    opts.step()
    assert opts.optimisers[0].state[model.question.weight]["step"] == 1
    torch.testing.assert_close(model.question.weight.detach(), expected, rtol=1e-6, atol=1e-7)


def test_a_cayley_step_matrix_shared_by_two_transitions_is_stepped_once():
    first, second = StateTransition(3, mode="cayley_step"), StateTransition(3, mode="cayley_step")
    second.weight = first.weight
    model = nn.ModuleList([first, second])
    stiefel, other = split_cayley_step_parameters(model)
    assert len(stiefel) == 1 and stiefel[0] is first.weight and other == []
    assert [len(_held(Optimisers(model, TrainConfig())))] == [1]


def test_a_sparse_embedding_bag_takes_the_row_sparse_optimiser():
    """An ``nn.EmbeddingBag(sparse=True)`` went to dense Adam, whose first step raised (pointing at Optimisers and
    dense_gradients, neither of which knew the bag); check_optimizer let Adam through."""
    torch.manual_seed(0)
    model = SparseBag()
    assert sparse_tables(model) == ["embedding.weight"]
    opts = Optimisers(model, TrainConfig(embedding_lr=0.1))
    assert isinstance(opts.optimisers[0], RowSparseAdam)
    assert [p for g in opts.optimisers[0].param_groups for p in g["params"]] == [model.embedding.weight]
    ids = torch.tensor([[1, 2, 2, 0]])
    model(ids, ids != 0).sum().backward()
    expected = _sparse_adam_reference(model.embedding.weight, model.embedding.weight.grad, 0.1)
    opts.step()
    torch.testing.assert_close(model.embedding.weight.detach(), expected, rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match=r"sparse embedding tables \['embedding.weight'\]"):
        check_optimizer(model, torch.optim.Adam(model.parameters()))
    assert dense_gradients(model).embedding.sparse is False


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop"])
@pytest.mark.parametrize("compiled", ["1", "0"])
def test_frozen_parameters_stay_bit_for_bit_through_training_with_weight_decay(optimizer, compiled, monkeypatch):
    """Frozen pretrained amplitudes and fixed projectors are in no optimiser: weight decay, the row-sparse step
    (compiled loop or torch ops) and early stopping's restore leave them as they were, bit for bit."""
    from qpnlp.data import EncodedTexts
    from qpnlp.models import QPDN, QPDNConfig
    from qpnlp.training import fit

    monkeypatch.setenv("QPNLP_SPARSE_ADAM_COMPILED", compiled)
    g = torch.Generator().manual_seed(0)
    texts = [torch.randint(2, 30, (int(n),), generator=g).tolist() for n in torch.randint(2, 8, (48,), generator=g)]
    train, dev = EncodedTexts(texts[:32], [i % 2 for i in range(32)]), EncodedTexts(texts[32:], [0, 1] * 8)
    model = QPDN(QPDNConfig(num_words=30, num_classes=2, dim=4, num_measurements=3, freeze_amplitude=True,
                            train_measurements=False, weighting="trainable"),
                 pretrained=torch.randn(30, 4, generator=g), generator=g)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    fit(model, train, dev, TrainConfig(epochs=2, batch_size=8, lr=0.05, embedding_lr=0.05, weight_decay=0.5,
                                       optimizer=optimizer))
    for name, param in model.named_parameters():
        assert torch.equal(param.detach(), before[name]) != param.requires_grad, name
