"""Invariances of the model contract, for every registered model and its variants (eval mode, dropout off).

A row's output depends on that row only: not on the other rows of its batch (alone, or in another order), not on
how far it is padded nor on which side, and not on how :func:`~qpnlp.training.chunked` cuts the batch; the same
holds for the gradients of a training step without dropout. A float64 model computes in float64 all the way.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.func import functional_call

from qpnlp.models import Model, get_model_class, registered_models
from qpnlp.training import chunked

V = 20
SIZES = dict(num_words=V, vocab_size=V, num_classes=3, dim=8, num_measurements=5, hidden=5, filters=3,
             kernel_sizes=[1, 2], windows=[1, 2], heads=2, ffn_hidden=6, family="IV", span_start=1900.0,
             span_end=2000.0, dropout=0.0)
# Variants of the registered models: the CNM ablations, each network x embedding of the order classifiers, the
# transitions and gates of the gated complex RNN, the heads and weightings of QPDN.
VARIANTS = {
    "qpdn-trainable": ("qpdn", dict(weighting="trainable")),
    "qpdn-uniform": ("qpdn", dict(weighting="uniform")),
    "qpdn-dense": ("qpdn", dict(head="dense")),
    "qpdn-povm": ("qpdn", dict(measurement="povm", povm_rank=2)),
    "real_bow-trainable": ("real_bow", dict(weighting="trainable")),
    "cnm-global": ("cnm", dict(mixture="global")),
    "cnm-trace": ("cnm", dict(head="trace")),
    "cnm-global-trace": ("cnm", dict(mixture="global", head="trace")),
    "cnm-mean": ("cnm", dict(pooling="mean", weighting="trainable")),
    "cnm-both": ("cnm", dict(window_padding="both")),
    "cnm-povm": ("cnm", dict(measurement="povm")),
    "cnm_real-global": ("cnm_real", dict(mixture="global")),
    **{f"order-{net}-{emb}": ("order_classifier", dict(network=net, embedding=emb))
       for net in ("fasttext", "cnn", "rnn", "transformer")
       for emb in ("none", "pe", "tpe", "complex_vanilla", "complex_order")},
    "order-rnn-urnn": ("order_classifier", dict(network="rnn", rnn_cell="urnn")),
    "order-rnn-cgrnn": ("order_classifier", dict(network="rnn", rnn_cell="cgrnn")),
    "order-cnn-re_im-shared": ("order_classifier", dict(network="cnn", readout="re_im", share_parts=True)),
    **{f"cgrnn-{t}": ("cgrnn_classifier", dict(transition=t)) for t in ("cayley", "cayley_step", "free")},
    "cgrnn-prod-hirose": ("cgrnn_classifier", dict(gate="prod", activation="hirose", readout="modulus")),
    "word2fun-II": ("word2fun", dict(family="II")),
}
CASES = {name: (name, {}) for name in registered_models()} | VARIANTS
# CNM's local windows end at a hole of the mask (qpnlp.nn.mixture: masked positions are absent, not skipped);
# every other model reads a mask with holes as the sentence of its real words.
WINDOWED = {label for label, (name, options) in CASES.items()
            if name.startswith("cnm") and options.get("mixture", "local") == "local"}


def _model(label: str) -> Model:
    name, options = CASES[label]
    klass = get_model_class(name)
    fields = {f.name for f in dataclasses.fields(klass.config_class)}
    config = klass.config_class.from_dict({**{k: v for k, v in SIZES.items() if k in fields}, **options})
    model = klass(config, generator=torch.Generator().manual_seed(0)).eval()
    with torch.no_grad():                                   # tables that start at zero get values
        for i, p in enumerate(model.parameters()):
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(i), dtype=p.dtype))
    return model


def _labels(*tasks: str) -> list[str]:
    return [label for label, (name, _) in CASES.items() if get_model_class(name).task in tasks]


def _padded(lengths, seed: int, width: int | None = None, side: str = "right"):
    """Random ids of the given lengths, padded to ``width`` on ``side``: ``ids, mask`` ``(B, width)``."""
    g = torch.Generator().manual_seed(seed)
    width = width or max(lengths)
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        words = torch.randint(2, V, (n,), generator=g)
        if side == "right":
            ids[row, :n] = words
        elif side == "left":
            ids[row, width - n:] = words
        else:                                               # "holes": a padding position after each word
            ids[row, :2 * n:2] = words
    return ids, ids != 0


def _batch(side: str = "right", width: int | None = None):
    """Question / text and answer batches of 4 rows, at most 7 words."""
    return _padded([7, 3, 1, 5], 1, width, side), _padded([2, 6, 4, 1], 2, width, side)


def _rows(pair, rows):
    ids, mask = pair
    return ids[rows], mask[rows]


def _trimmed(pair):
    """A right-padded batch without its all-padding columns."""
    width = int(pair[1].sum(-1).max())
    return pair[0][:, :width], pair[1][:, :width]


def _score(model: Model, q, a):
    return model(*q, *a) if model.task == "matching" else model(*q)


def _gradients(model: Model, fn) -> dict[str, torch.Tensor]:
    """Gradients of a fixed weighted sum of the outputs of ``fn()`` (model in training mode, no dropout)."""
    model.train()
    model.zero_grad()
    out = fn()
    (out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    model.eval()
    return {n: p.grad.to_dense().clone() for n, p in model.named_parameters() if p.grad is not None}


def _assert_same_gradients(got, expected):
    assert got.keys() == expected.keys() and expected
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], atol=1e-5, rtol=1e-4, msg=key)


# --------------------------------------------------------------------------- the other rows of the batch
@pytest.mark.parametrize("label", _labels("classification", "matching"))
def test_a_row_scored_alone_gets_its_output_in_the_batch(label):
    model = _model(label)
    q, a = _batch()
    with torch.no_grad():
        whole = _score(model, q, a)
        for row in range(4):
            alone = _score(model, _trimmed(_rows(q, [row])), _trimmed(_rows(a, [row])))
            torch.testing.assert_close(alone[0], whole[row], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("label", _labels("classification", "matching"))
def test_permuting_the_batch_permutes_the_outputs(label):
    model = _model(label)
    q, a = _batch()
    order = torch.tensor([2, 0, 3, 1])
    with torch.no_grad():
        torch.testing.assert_close(_score(model, _rows(q, order), _rows(a, order)), _score(model, q, a)[order],
                                   atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("label", _labels("temporal"))
def test_word2fun_vectors_depend_on_their_own_word_and_time_only(label):
    model = _model(label)
    words, times = torch.tensor([1, 5, 7, 3]), torch.tensor([1910.0, 1950.0, 1999.0, 1930.0])
    with torch.no_grad():
        whole = model.vectors(words, times)
        order = torch.tensor([2, 0, 3, 1])
        torch.testing.assert_close(model.vectors(words[order], times[order]), whole[order], atol=0, rtol=0)
        for row in range(4):
            torch.testing.assert_close(model.vectors(words[row:row + 1], times[row:row + 1])[0], whole[row])


# --------------------------------------------------------------------------- padding
@pytest.mark.parametrize("label", _labels("classification", "matching"))
def test_longer_padding_changes_neither_outputs_nor_gradients(label):
    """What ``pad_to_multiple_of`` relies on: padding a batch to 11 columns instead of 7 changes nothing."""
    model = _model(label)
    q, a = _batch()
    longer = _batch(width=11)
    with torch.no_grad():
        torch.testing.assert_close(_score(model, *longer), _score(model, q, a), atol=1e-6, rtol=1e-5)
    _assert_same_gradients(_gradients(model, lambda: _score(model, *longer)),
                           _gradients(model, lambda: _score(model, q, a)))


@pytest.mark.parametrize("label", _labels("classification", "matching"))
def test_left_padding_gives_the_outputs_and_gradients_of_right_padding(label):
    model = _model(label)
    right, left = _batch(), _batch("left")
    with torch.no_grad():
        torch.testing.assert_close(_score(model, *left), _score(model, *right), atol=1e-6, rtol=1e-5)
    _assert_same_gradients(_gradients(model, lambda: _score(model, *left)),
                           _gradients(model, lambda: _score(model, *right)))


@pytest.mark.parametrize("label", [label for label in _labels("classification", "matching") if label not in WINDOWED])
def test_a_mask_with_holes_reads_as_the_sentence_of_its_words(label):
    model = _model(label)
    with torch.no_grad():
        torch.testing.assert_close(_score(model, *_batch("holes", width=14)), _score(model, *_batch()),
                                   atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("label", sorted(WINDOWED))
def test_windows_end_at_a_hole_of_the_mask_as_documented(label):
    """CNM's local windows are cut at a masked position: with a hole after every word, each window holds one word,
    so the model scores the sentence of its words as with windows of size 1 only (the cosine, or the mean trace,
    of features repeated for each window size is that of one copy)."""
    model = _model(label)
    singles = type(model)(dataclasses.replace(model.config, windows=[1])).eval()
    singles.load_state_dict(model.state_dict())
    with torch.no_grad():
        holes = _score(model, *_batch("holes", width=14))
        torch.testing.assert_close(holes, _score(singles, *_batch()), atol=1e-6, rtol=1e-5)
        assert not torch.allclose(holes, _score(model, *_batch()), atol=1e-4)


# --------------------------------------------------------------------------- length-sorted chunks
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("label", _labels("classification", "matching"))
def test_chunks_give_one_pass_outputs_and_gradients_whatever_the_padding_side(label, side):
    """``chunked`` trimmed every chunk to its longest row's length: left-padded rows lost their last words (or
    became empty, "empty sentence" named a row of the chunk), though every model reads left padding as right."""
    model = _model(label)
    q, a = _padded([7, 2, 1, 6, 2, 7], 1, side=side), _padded([2, 6, 1, 1, 7, 2], 2, side=side)
    inputs = [q, a] if model.task == "matching" else [q]

    def one_pass():
        return _score(model, q, a)

    def chunks():
        return chunked(model, inputs, overhead=0)

    with torch.no_grad():
        torch.testing.assert_close(chunks(), one_pass(), atol=1e-6, rtol=1e-5)
    _assert_same_gradients(_gradients(model, chunks), _gradients(model, one_pass))


# --------------------------------------------------------------------------- float64
def _inputs(model: Model):
    if model.task == "temporal":                    # the loss of (centre, context, negatives, times)
        return (torch.tensor([1, 5, 7]), torch.tensor([2, 3, 4]), torch.tensor([[6, 8], [9, 2], [3, 3]]),
                torch.tensor([1910.0, 1950.0, 1999.0], dtype=torch.float64))
    q, a = _batch()
    return (*q, *a) if model.task == "matching" else q


@pytest.mark.parametrize("label", list(CASES))
def test_a_float64_model_computes_in_float64_all_the_way(label):
    """Every layer's output is float64 / complex128, and the finite differences of the output along a parameter
    direction (steps of 1e-6) match autograd: a float32 cast or accumulation on the way would leave ~1e-7 of
    rounding in the output, which the differences amplify to ~0.1."""
    model = _model(label).double()
    narrow = []
    for module in model.modules():
        module.register_forward_hook(lambda m, args, out: narrow.append(type(m).__name__) if isinstance(
            out, torch.Tensor) and out.dtype in (torch.float32, torch.complex64) else None)
    params = {n: p.detach() for n, p in model.named_parameters()}
    g = torch.Generator().manual_seed(3)
    direction = {n: torch.randn(p.shape, generator=g, dtype=p.dtype) for n, p in params.items()}
    inputs = _inputs(model)

    def along(step):
        return functional_call(model, {n: p + step * direction[n] for n, p in params.items()}, inputs)

    step = torch.zeros((), dtype=torch.float64, requires_grad=True)
    assert along(step).dtype == torch.float64 and not narrow, f"float32 outputs of {sorted(set(narrow))}"
    assert torch.autograd.gradcheck(along, (step,), eps=1e-6, atol=1e-6, rtol=1e-5)


def test_word2fun_in_float64_holds_its_fixed_frequencies_in_float64():
    """Family II's frequencies were computed in float32 and only then cast: a float64 model held 0.10000000149
    for 0.1, so its vectors were off by ~1e-7 of the phase (precision="double" gave float32 phases)."""
    klass = get_model_class("word2fun")
    config = klass.config_class(vocab_size=V, dim=8, family="II", span_start=0.0, span_end=60.0, precision="double")
    model = klass(config)
    exact = torch.tensor([10000.0 ** (-j / 4) for j in range(4)], dtype=torch.float64)
    torch.testing.assert_close(model.omega_fixed, exact, atol=0, rtol=0)
    with torch.no_grad():
        model.base.weight.zero_()
        model.amplitude.weight.fill_(1.0)
    tau = torch.tensor([59.0], dtype=torch.float64)                      # the span is [0, 60]: times are tau
    expected = torch.cat([torch.sin(exact * tau), torch.cos(exact * tau)])
    torch.testing.assert_close(model.vectors(torch.tensor([3]), tau)[0], expected, atol=1e-13, rtol=0)
    single = klass(dataclasses.replace(config, precision="single"))
    assert single.omega_fixed.dtype == torch.float32 and single.omega_fixed[1] == torch.tensor(0.1)
