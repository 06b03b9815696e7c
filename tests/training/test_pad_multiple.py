"""TrainConfig.pad_to_multiple_of: training batches in a few padded lengths, with the results of exact padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import get_model_class
from qpnlp.training import TrainConfig, fit
from qpnlp.training.compiled import CUDA_GRAPHS_PAD_MULTIPLE, training_pad_multiple
from qpnlp.training.matching import EncodedQA, MatchingConfig, fit_matching
from qpnlp.training import ConfigError

V = 40

# Small models without dropout (dropout would draw its masks over the padded shape: another random stream).
CLASSIFIERS = {
    "qpdn": dict(num_classes=3, dim=6, num_measurements=4, weighting="trainable"),
    "order_classifier": dict(num_classes=3, dim=4, network="transformer", embedding="complex_order", heads=2,
                             ffn_hidden=6, dropout=0.0),
    "order_classifier/rnn": dict(num_classes=3, dim=4, network="rnn", embedding="complex_order", dropout=0.0),
    "order_classifier/cnn": dict(num_classes=3, dim=4, network="cnn", embedding="tpe", dropout=0.0),
    "order_classifier/fasttext": dict(num_classes=3, dim=4, network="fasttext", embedding="pe", dropout=0.0),
    "cgrnn_classifier": dict(num_classes=3, dim=4, hidden=5),
}


def _model(name: str, options: dict):
    klass = get_model_class(name.split("/")[0])
    return klass(klass.config_class.from_dict({"num_words": V, **options}), generator=torch.Generator().manual_seed(0))


def _texts(n: int, seed: int) -> EncodedTexts:
    rng = np.random.default_rng(seed)
    return EncodedTexts([rng.integers(2, V, size=k).tolist() for k in rng.integers(1, 21, size=n)],
                        rng.integers(0, 3, size=n))


def _widths(model) -> list[int]:
    """The padded widths of the training forwards (the model in training mode), recorded by a hook."""
    widths = []
    model.register_forward_pre_hook(lambda m, args: widths.append(args[0].shape[1]) if m.training else None)
    return widths


def _parameters_close(a, b):
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4, msg=name)


def test_the_multiple_is_the_configs_or_eight_under_cuda_graphs():
    assert training_pad_multiple(None, None) is None
    assert training_pad_multiple(None, "default", "cuda") is None
    assert training_pad_multiple(None, "reduce-overhead", "cuda:1") == CUDA_GRAPHS_PAD_MULTIPLE == 8
    assert training_pad_multiple(None, "reduce-overhead", torch.device("cuda")) == 8
    assert training_pad_multiple(None, "reduce-overhead", "cpu") is None         # no CUDA graphs on the CPU
    assert training_pad_multiple(1, "reduce-overhead", "cuda") == 1              # 1: no rounding
    assert training_pad_multiple(16, None) == 16
    assert training_pad_multiple(None, "max-autotune", "cuda") == 8            # records CUDA graphs too
    assert training_pad_multiple(None, "max-autotune-no-cudagraphs", "cuda") is None


@pytest.mark.parametrize("value", [0, -8])
def test_a_multiple_below_one_is_refused(value):
    for config in (TrainConfig, MatchingConfig):
        with pytest.raises(ConfigError, match="pad_to_multiple_of must be >= 1"):
            config(pad_to_multiple_of=value)


@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_padded_training_follows_the_exactly_padded_run(name):
    """Rounded-up batches give the losses and parameters of batches padded to their longest text, to rounding."""
    train, dev = _texts(40, seed=0), _texts(8, seed=1)
    runs = []
    for multiple in (None, 8):
        model = _model(name, CLASSIFIERS[name])
        widths = _widths(model)
        config = TrainConfig(epochs=2, patience=2, batch_size=8, lr=0.02, embedding_lr=0.02, progress=False,
                             pad_to_multiple_of=multiple)
        result = fit(model, train, dev, config)
        runs.append((model, [h["train_loss"] for h in result.history], widths))
    exact, rounded = runs[0][2], runs[1][2]
    assert len(set(exact)) > 3 and {w % 8 for w in exact} != {0}
    assert {w % 8 for w in rounded} == {0} and len(set(rounded)) < len(set(exact))
    assert [-(-w // 8) * 8 for w in exact] == rounded               # the same batches, each rounded up
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=1e-5)
    _parameters_close(runs[0][0], runs[1][0])


def test_max_len_caps_the_rounded_length():
    model = _model("qpdn", CLASSIFIERS["qpdn"])
    widths = _widths(model)
    fit(model, _texts(24, seed=0), _texts(8, seed=1),
        TrainConfig(epochs=1, batch_size=8, progress=False, max_len=12, pad_to_multiple_of=8))
    assert set(widths) <= {8, 12} and 12 in widths


def _qa(seed: int, questions: int = 6) -> EncodedQA:
    """Questions of 2-8 tokens, each with 4 candidates of 1-29 tokens, the first one correct."""
    rng = np.random.default_rng(seed)
    qs, cands, qidx, labels, groups = [], [], [], [], []
    for q in range(questions):
        qs.append(rng.integers(2, V, size=rng.integers(2, 9)).tolist())
        start = len(cands)
        for j in range(4):
            cands.append(rng.integers(2, V, size=rng.integers(1, 30)).tolist())
            qidx.append(q)
            labels.append(int(j == 0))
        groups.append(np.arange(start, len(cands)))
    return EncodedQA(qs, cands, np.array(qidx), np.array(labels), tuple(groups))


@pytest.mark.parametrize("loss", ["triplet", "pointwise"])
def test_matching_chunks_are_rounded_up_too(loss):
    """CNM cuts its training batches into length-sorted chunks: each chunk's width is rounded up as well."""
    runs = []
    for multiple in (None, 8):
        klass = get_model_class("cnm")
        model = klass(klass.config_class.from_dict(dict(num_words=V, dim=6, num_measurements=4, windows=[1, 2])),
                      generator=torch.Generator().manual_seed(0))
        widths = []
        model.register_forward_pre_hook(
            lambda m, args: widths.extend((args[0].shape[1], args[2].shape[1])) if m.training else None)
        config = MatchingConfig(epochs=2, patience=2, batch_size=8, loss=loss, progress=False, length_chunks=0,
                                pad_to_multiple_of=multiple)
        result = fit_matching(model, _qa(0), _qa(1), config)
        runs.append((model, [h["train_loss"] for h in result.history], widths))
    assert {w % 8 for w in runs[0][2]} != {0} and {w % 8 for w in runs[1][2]} == {0}
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=1e-5)
    _parameters_close(runs[0][0], runs[1][0])
