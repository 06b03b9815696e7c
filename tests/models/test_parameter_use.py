"""Every trainable parameter of the registered models is used: one forward and backward gives it a gradient that
is not zero, and the trainer's optimisers hold it exactly once (weight decay only in the dense optimiser)."""

import pytest
import torch
from torch import nn

from qpnlp.data import Vocabulary
from qpnlp.models import get_model_class
from qpnlp.training import Optimisers, TrainConfig

CASES = [
    ("qpdn", dict(num_measurements=4)), ("qpdn", dict(num_measurements=4, weighting="trainable")),
    ("qpdn", dict(num_measurements=4, orthonormal=True)), ("qpdn", dict(measurement="povm", num_measurements=3)),
    ("qpdn", dict(head="dense")), ("real_bow", dict(weighting="trainable")),
    *[("order_classifier", dict(network=network, embedding=embedding, rnn_cell=cell))
      for network, cell in (("fasttext", "lstm"), ("cnn", "lstm"), ("rnn", "lstm"), ("rnn", "urnn"), ("rnn", "cgrnn"),
                            ("transformer", "lstm"))
      for embedding in ("none", "pe", "tpe", "complex_vanilla", "complex_order")],
    ("order_classifier", dict(embedding_options=dict(initial_phase=True, frequency_sharing="word",
                                                     amplitude_sharing="dimension"))),
    ("cgrnn_classifier", dict(transition="expm")), ("cgrnn_classifier", dict(transition="cayley_step", gate="prod")),
    ("cnm", dict(num_measurements=4, windows=[1, 2])), ("cnm", dict(num_measurements=4, weighting="trainable")),
    ("cnm", dict(measurement="povm", num_measurements=3)), ("cnm_real", dict(num_measurements=4)),
    ("fasttext_maxpool", dict()),
]
SMALL = dict(order_classifier=dict(hidden=4, filters=2, kernel_sizes=[2, 3], heads=2, ffn_hidden=4, max_len=8),
             cgrnn_classifier=dict(hidden=4))


def _batch(g, words):
    ids = torch.randint(2, words, (4, 6), generator=g)
    mask = torch.arange(6) < torch.tensor([[6], [3], [5], [2]])
    return ids * mask, mask


def _loss(model, g, words):
    if model.task == "classification":
        ids, mask = _batch(g, words)
        return nn.functional.cross_entropy(model(ids, mask), torch.tensor([0, 1, 2, 1]))
    return (model(*_batch(g, words), *_batch(g, words)) * torch.randn(4, generator=g)).sum()


@pytest.mark.parametrize("kind,options", CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_every_trainable_parameter_gets_a_gradient_and_one_optimiser(kind, options):
    vocab = Vocabulary.build([f"w{i} w{i + 1} w{i + 2}".split() for i in range(20)])
    klass = get_model_class(kind)
    fields = dict(num_words=len(vocab), dim=4, **({"num_classes": 3} if klass.task == "classification" else {}))
    config = klass.config_class.from_dict({**fields, **SMALL.get(kind, {}), **options})
    model = klass.build(config, vocabulary=vocab, generator=torch.Generator().manual_seed(0)).train()
    g = torch.Generator().manual_seed(1)
    _loss(model, g, len(vocab)).backward()
    _loss(model, g, len(vocab)).backward()            # a second batch: a gradient zero on one batch by chance
    for name, param in model.named_parameters():
        if param.requires_grad:
            assert param.grad is not None, f"{name} is not used (no gradient)"
            grad = param.grad.coalesce().values() if param.grad.is_sparse else param.grad
            assert bool(grad.abs().sum() > 0), f"{name} gets an all-zero gradient"
    optimisers = Optimisers(model, TrainConfig(weight_decay=0.1))
    held = [id(p) for opt in optimisers.optimisers for group in opt.param_groups for p in group["params"]]
    assert sorted(held) == sorted(id(p) for p in model.parameters() if p.requires_grad)
    for opt in optimisers.optimisers:
        decay = {group.get("weight_decay", 0.0) for group in opt.param_groups}
        assert decay == ({0.1} if type(opt) in (torch.optim.Adam, torch.optim.RMSprop) else {0.0}), type(opt)
