"""FastText / CNN / RNN / Transformer classifiers over the five embedding variants."""

from __future__ import annotations

import itertools

import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.nn import EMBEDDING_KINDS, ComplexOrderEmbedding
from qpnlp.models.order_classifier import NETWORKS, OrderClassifier, OrderClassifierConfig
from qpnlp.training import TrainConfig, fit




V = 20
VARIANTS = [(n, e, c) for n, e in itertools.product(NETWORKS, EMBEDDING_KINDS)
            for c in (["lstm", "urnn", "cgrnn"] if n == "rnn" else ["lstm"])]


def _model(network, embedding, cell="lstm", cdtype=torch.complex64, device="cpu", **kw):
    cfg = OrderClassifierConfig(num_words=V, num_classes=3, network=network, embedding=embedding, dim=4, heads=2,
                                hidden=5, filters=3, kernel_sizes=(2, 3), ffn_hidden=6, rnn_cell=cell,
                                precision="double" if cdtype == torch.complex128 else "single", **kw)
    return OrderClassifier(cfg, generator=torch.Generator().manual_seed(0)).to(device)


@pytest.mark.parametrize("network, embedding, cell", VARIANTS)
def test_padding_never_changes_logits(network, embedding, cell, cdtype, device, tol):
    model = _model(network, embedding, cell, cdtype, device).eval()
    texts = [[2, 3, 4, 5, 6], [7, 8], [9]]
    width = 8
    padded = torch.tensor([t + [0] * (width - len(t)) for t in texts], device=device)
    batched = model(padded, padded != 0)
    for i, t in enumerate(texts):
        alone = torch.tensor([t], device=device)
        torch.testing.assert_close(batched[i:i + 1], model(alone, alone != 0), atol=tol(32), rtol=0)
    assert batched.shape == (3, 3) and not batched.is_complex()


@pytest.mark.parametrize("network, embedding, cell", VARIANTS)
def test_left_padding_and_holes_give_the_logits_of_right_padding(network, embedding, cell, cdtype, tol):
    """Issue 17: the CNN pooled windows over left padding; now padding anywhere is absent for every network."""
    model = _model(network, embedding, cell, cdtype).eval()
    right = torch.tensor([[2, 3, 4, 5, 6, 0, 0], [7, 8, 0, 0, 0, 0, 0]])
    left = torch.tensor([[0, 0, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 7, 8]])
    holes = torch.tensor([[2, 0, 3, 4, 0, 5, 6], [0, 7, 0, 0, 8, 0, 0]])
    expected = model(right, right != 0)
    for ids in (left, holes):
        torch.testing.assert_close(model(ids, ids != 0), expected, atol=tol(32), rtol=0)


@pytest.mark.parametrize("network", ["fasttext", "transformer"])
def test_complex_order_sees_word_order_where_none_cannot(network):
    ids = torch.tensor([[2, 3, 4, 5], [5, 4, 3, 2]])
    mask = ids != 0
    none = _model(network, "none", dropout=0.0).eval()
    out = none(ids, mask)
    torch.testing.assert_close(out[0], out[1])  # bag of words: permutation invariant
    order = _model(network, "complex_order", dropout=0.0).eval()
    out = order(ids, mask)
    assert (out[0] - out[1]).abs().max() > 1e-4


def test_one_switch_sets_dtypes(cdtype):
    for kind in EMBEDDING_KINDS:
        model = _model("cnn", kind, cdtype=cdtype)
        assert model.dtype.is_complex == kind.startswith("complex")
        assert model.config.is_complex == kind.startswith("complex")
    assert _model("rnn", "none", "cgrnn", cdtype).dtype == cdtype


def test_embedding_options_and_pretrained_reach_the_embedding():
    pre = torch.randn(V, 4)
    cfg = OrderClassifierConfig(num_words=V, num_classes=2, dim=4, embedding_options=dict(frequency_sharing="word",
                                                                                          frequency_init="sinusoidal"))
    model = OrderClassifier(cfg, pretrained=pre)
    assert isinstance(model.embedding, ComplexOrderEmbedding) and model.embedding.frequency_sharing == "word"
    torch.testing.assert_close(model.embedding.amplitude.weight[2:], pre[2:])
    shared = _model("transformer", "complex_order", share_parts=True)
    assert not shared.attention.q.weight.is_complex()


@pytest.mark.parametrize("network", NETWORKS)
def test_trains_with_the_package_trainer(network):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    texts = [torch.randint(2, V, (int(n),), generator=g).tolist() for n in torch.randint(2, 7, (24,), generator=g)]
    labels = [int(t[0] % 3) for t in texts]
    data = EncodedTexts(texts, labels)
    model = _model(network, "complex_order", "lstm")
    result = fit(model, data, data, TrainConfig(epochs=2, batch_size=8, progress=False, patience=2))
    assert len(result.history) >= 1 and all(torch.isfinite(torch.tensor(h["train_loss"])) for h in result.history)


def test_readout_re_im_doubles_width():
    model = _model("fasttext", "complex_order", readout="re_im")
    assert model.output.in_features == 10


@pytest.mark.parametrize("bad, match", [
    (dict(network="lstm"), "network"), (dict(embedding="rope"), "embedding"), (dict(rnn_cell="gru"), "rnn_cell"),
    (dict(readout="phase"), "readout"), (dict(precision="half"), "precision"), (dict(dropout=1.0), "dropout"),
    (dict(network="transformer", dim=5, heads=2), "divisible"), (dict(embedding="pe", share_parts=True), "share_parts"),
    (dict(kernel_sizes=()), "kernel"),
    # 2.7 and True were truncated to sizes 2 and 1
    (dict(kernel_sizes=(2.7, 3)), "kernel_sizes must be integers"), (dict(kernel_sizes=(True,)), "kernel_sizes"),
    # the cgRNN layer has no shared-parts option: the flag was accepted and silently did nothing
    (dict(network="rnn", rnn_cell="cgrnn", embedding="complex_order", share_parts=True), "share_parts"),
    # heads 0 divided by zero (ZeroDivisionError, not a config error); heads -1 divided dim and built no layer
    (dict(network="transformer", heads=0), "heads"), (dict(network="transformer", heads=-1), "heads")])
def test_config_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        OrderClassifierConfig(num_words=V, num_classes=2, **bad)


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("embedding", ["none", "complex_order"])
def test_compiling_breaks_the_graph_only_at_the_embedding_lookups(network, embedding):
    """torch.compile (TrainConfig.compile) traces the forward in whole graphs around the embedding rows, which are
    looked up eagerly (their sparse backward is not traceable): one break at the lookup, seen from the two frames
    that call it, three graphs. Every other break splits the step and compiles again per length (dtype.to_real,
    storage_offset and embedding's sparse backward once gave the Transformer many)."""
    from qpnlp.hilbert import validation

    model = _model(network, embedding).train()
    ids = torch.tensor([[2, 3, 4, 5, 6], [7, 8, 9, 0, 0]])
    torch._dynamo.reset()
    with validation(False):
        explained = torch._dynamo.explain(model)(ids, ids != 0)
    torch._dynamo.reset()
    assert (explained.graph_count, explained.graph_break_count) == (3, 2)


@pytest.mark.parametrize("options", [{}, dict(initial_phase=True)])
def test_fasttext_complex_order_fused_step_equals_three_steps(options, cdtype, device, tol):
    """FastText over the complex-order embedding pools through ``ComplexOrderEmbedding.dropped_mean`` (fused):
    the same logits and, after one training step (RowSparseAdam on the tables, Adam on the rest), the same
    parameters and moments as the embedding, dropout and masked mean taken one after the other (dropout on,
    one seed)."""
    from qpnlp.training import Optimisers, train_step
    ids = torch.tensor([[2, 3, 4, 5, 6], [7, 8, 0, 0, 0], [9, 9, 3, 0, 0]], device=device)
    mask, labels = ids != 0, torch.tensor([0, 2, 1], device=device)
    states = []
    for fused in (True, False):
        model = _model("fasttext", "complex_order", cdtype=cdtype, device=device, dropout=0.3,
                       embedding_options=options).train()
        assert model.embedding.fuses_mean()
        if not fused:
            model.embedding.fuses_mean = lambda: False
        optimisers = Optimisers(model, TrainConfig(lr=1e-2, embedding_lr=1e-2, progress=False))
        torch.manual_seed(5)
        logits = model(ids, mask)
        torch.manual_seed(6)
        train_step(model, optimisers, ids, mask, labels)
        moments = [t for opt in optimisers.optimisers for s in opt.state.values() for t in s.values()
                   if isinstance(t, torch.Tensor) and t.dim()]
        states.append((logits, dict(model.named_parameters()), moments))
    (logits, params, moments), (ref_logits, ref_params, ref_moments) = states
    torch.testing.assert_close(logits, ref_logits, atol=tol(16), rtol=0)
    assert params.keys() == ref_params.keys() and len(moments) == len(ref_moments) == 2 * len(params)
    for name, p in params.items():
        torch.testing.assert_close(p, ref_params[name], atol=tol(16), rtol=0, msg=name)
    for m, ref in zip(moments, ref_moments):
        torch.testing.assert_close(m, ref, atol=tol(16), rtol=1e-4)
