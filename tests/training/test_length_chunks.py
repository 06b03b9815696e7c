"""Length-sorted chunks of padded batches: an optimal plan, and the same outputs and gradients as one pass."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import get_model_class
from qpnlp.training import TrainConfig, chunked, fit, plan_chunks, predict
from qpnlp.training.length_chunks import chunks_in_training
from qpnlp.training import ConfigError
from qpnlp.training.trainer import training_chunks

V = 40

# Every registered classification or matching model, small, without dropout.
MODELS = {
    "qpdn": dict(num_classes=3, dim=6, num_measurements=4, weighting="trainable"),
    "real_bow": dict(num_classes=3, dim=6),
    "order_classifier": dict(num_classes=3, dim=4, network="transformer", embedding="complex_order", heads=2,
                             ffn_hidden=6, dropout=0.0),
    "cgrnn_classifier": dict(num_classes=3, dim=4, hidden=5),
    "cnm": dict(dim=6, num_measurements=4, windows=[1, 2, 3]),
    "cnm_real": dict(dim=6, num_measurements=4, windows=[1, 2]),
    "fasttext_maxpool": dict(dim=3),
}


def _model(name: str, **options):
    klass = get_model_class(name)
    config = klass.config_class.from_dict({"num_words": V, **MODELS[name], **options})
    return klass(config, generator=torch.Generator().manual_seed(0))


def _padded(lengths, seed=0):
    g = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(2, V, (n,), generator=g)
    return ids, ids != 0


def _cost(sorted_lengths: np.ndarray, cuts, overhead: int) -> int:
    return sum((j - i) * int(sorted_lengths[:, i:j].max(1).sum()) + overhead for i, j in cuts)


def _brute_force(sorted_lengths: np.ndarray, overhead: int) -> int:
    rows = sorted_lengths.shape[1]
    best = None
    for k in range(rows):
        for inner in itertools.combinations(range(1, rows), k):
            bounds = (0, *inner, rows)
            cost = _cost(sorted_lengths, list(zip(bounds, bounds[1:])), overhead)
            best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overhead", [0, 5, 40])
def test_the_plan_is_a_partition_with_the_least_cost(seed, overhead):
    rng = np.random.default_rng(seed)
    lengths = [torch.as_tensor(rng.integers(1, 30, size=7)), torch.as_tensor(rng.integers(1, 10, size=7))]
    chunks = plan_chunks(lengths, overhead)
    rows = torch.cat(chunks)
    assert sorted(rows.tolist()) == list(range(7))
    table = np.stack([n.numpy() for n in lengths])
    order = np.argsort(table.sum(0), kind="stable")
    assert rows.tolist() == order.tolist()                       # chunks are runs of the length order
    bounds = np.cumsum([0] + [len(c) for c in chunks])
    cost = _cost(table[:, order], list(zip(bounds[:-1], bounds[1:])), overhead)
    assert cost == _brute_force(table[:, order], overhead)


def test_equal_lengths_or_a_large_overhead_keep_one_chunk():
    assert len(plan_chunks([torch.full((9,), 4)], overhead=0)) == 1
    assert len(plan_chunks([torch.tensor([1, 50, 2, 3])], overhead=10_000)) == 1
    assert [c.tolist() for c in plan_chunks([torch.tensor([1, 50, 2, 3])], overhead=0)] == [[0], [2], [3], [1]]


def test_bad_plans_are_refused():
    with pytest.raises(ValueError, match="overhead"):
        plan_chunks([torch.tensor([1, 2])], overhead=-1)
    with pytest.raises(ValueError, match="at least one"):
        plan_chunks([])
    with pytest.raises(ConfigError, match="length_chunks"):
        TrainConfig(length_chunks=-3)


def test_one_chunk_passes_the_batch_through_untouched():
    ids, mask = _padded([3, 3, 3])
    seen = []
    out = chunked(lambda i, m: seen.append((i, m)) or i.sum(-1), [(ids, mask)], overhead=0)
    assert seen[0][0] is ids and seen[0][1] is mask and out.tolist() == ids.sum(-1).tolist()
    ids, mask = _padded([1, 9, 2])                                  # chunks off: one pass whatever the lengths
    seen.clear()
    chunked(lambda i, m: seen.append((i, m)) or i.sum(-1), [(ids, mask)], overhead=None)
    assert len(seen) == 1 and seen[0][0] is ids and seen[0][1] is mask


def _assert_chunks_match_one_pass(model, ids, mask):
    """Eval outputs and training gradients (no dropout) on chunks equal those of one pass."""
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(chunked(model, [(ids, mask)], overhead=0), model(ids, mask), atol=1e-5, rtol=1e-5)
    model.train()
    grads = []
    for fn in (lambda: model(ids, mask), lambda: chunked(model, [(ids, mask)], overhead=0)):
        model.zero_grad()
        (fn() * torch.linspace(-1, 1, 3)).sum().backward()
        grads.append({n: p.grad.to_dense().clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for key in grads[0]:
        torch.testing.assert_close(grads[1][key], grads[0][key], atol=1e-5, rtol=1e-4, msg=key)


@pytest.mark.parametrize("name", [n for n in MODELS if get_model_class(n).task == "classification"])
def test_classifier_outputs_and_gradients_equal_one_pass(name):
    model = _model(name)
    ids, mask = _padded([2, 17, 3, 16, 1, 15, 4])
    assert len(plan_chunks([mask.sum(-1)], overhead=0)) > 1
    _assert_chunks_match_one_pass(model, ids, mask)


@pytest.mark.parametrize("name", ["cnm", "cnm_real"])
def test_matching_scores_equal_one_pass(name):
    model = _model(name).eval()
    q, a = _padded([3, 5, 2, 4], seed=1), _padded([20, 2, 9, 3], seed=2)
    assert len(plan_chunks([q[1].sum(-1), a[1].sum(-1)], overhead=0)) > 1
    with torch.no_grad():
        torch.testing.assert_close(chunked(model, [q, a], overhead=0), model(*q, *a), atol=1e-6, rtol=1e-5)


def test_models_that_ask_chunk_their_training_batches_with_or_without_dropout():
    assert chunks_in_training(_model("cnm")) and chunks_in_training(_model("cnm", dropout=0.1))
    assert not chunks_in_training(_model("qpdn"))                  # cheap calls: the trainers keep batches whole
    for network in ("cnn", "rnn", "transformer"):
        assert chunks_in_training(_model("order_classifier", network=network, dropout=0.1))
    assert not chunks_in_training(_model("order_classifier", network="fasttext"))
    config = TrainConfig(progress=False)
    assert training_chunks(_model("order_classifier", dropout=0.1), config) == config.length_chunks
    assert training_chunks(_model("order_classifier"), TrainConfig(progress=False, length_chunks=None)) is None


@pytest.mark.parametrize("network", ["fasttext", "cnn", "rnn", "transformer"])
@pytest.mark.parametrize("embedding", ["none", "pe", "tpe", "complex_order", "complex_vanilla"])
def test_every_order_classifier_gives_one_pass_outputs_and_gradients_on_chunks(network, embedding):
    model = _model("order_classifier", network=network, embedding=embedding, filters=3, kernel_sizes=[1, 2],
                   hidden=5)
    ids, mask = _padded([2, 17, 3, 16, 1, 15, 4])
    _assert_chunks_match_one_pass(model, ids, mask)


@pytest.mark.parametrize("options", [dict(network="cnn", precision="double", share_parts=True),
                                     dict(network="transformer", share_parts=True, readout="re_im"),
                                     dict(network="rnn", rnn_cell="urnn"), dict(network="rnn", rnn_cell="cgrnn"),
                                     dict(network="rnn", readout="squared_modulus", embedding="complex_vanilla")])
def test_order_classifier_options_give_one_pass_results_on_chunks(options):
    model = _model("order_classifier", **{"embedding": "complex_order", "filters": 3, "kernel_sizes": [1, 2],
                                          "hidden": 5, **options})
    ids, mask = _padded([2, 17, 3, 16, 1, 15, 4])
    _assert_chunks_match_one_pass(model, ids, mask)


def test_dropout_on_chunks_draws_masks_of_the_same_rate():
    """Chunked training with dropout keeps the drop rate: the masks are drawn per chunk, not skipped."""
    model = _model("order_classifier", network="cnn", dropout=0.5, filters=3, kernel_sizes=[1, 2]).train()
    ids, mask = _padded([2, 17, 3, 16, 1, 15, 4] * 20)
    seen = []
    model.drop.register_forward_hook(lambda module, args, out: seen.append((args[0], out)))
    torch.manual_seed(0)
    chunked(model, [(ids, mask)], overhead=0)
    assert len(seen) > 1                                            # one dropout call per chunk
    kept = torch.cat([(out != 0).flatten() for inp, out in seen if inp.numel()]).float().mean()
    assert 0.45 < float(kept) < 0.55


def test_a_batch_with_an_empty_row_goes_whole_so_the_error_names_the_row_in_the_batch():
    model = _model("order_classifier", network="transformer")
    ids, mask = _padded([2, 17, 3, 16, 1, 15, 4])
    ids[3], mask[3] = 0, False
    with pytest.raises(ValueError, match="empty sentence.*batch index 3 "):
        chunked(model, [(ids, mask)], overhead=0)
    seen = []
    chunked(lambda i, m: seen.append(i) or i.sum(-1), [(ids, mask)], overhead=0)
    assert len(seen) == 1 and seen[0] is ids
    assert len(plan_chunks([torch.tensor([2, 9, 0, 9])], overhead=0)) == 1
    assert len(plan_chunks([torch.tensor([2, 9, 1, 9]), torch.tensor([3, 3, 3, 0])], overhead=0)) == 1


def test_a_batch_without_rows_goes_whole_and_arrays_are_named():
    """B = 0 failed in numpy ("zero-size array to reduction operation maximum which has no identity") before the
    model could say its batch was empty; an array of lengths failed with "no attribute 'detach'"."""
    empty = torch.zeros(0, dtype=torch.long)
    assert [c.tolist() for c in plan_chunks([empty, empty], overhead=0)] == [[]]
    ids, mask = _padded([2, 5])
    with pytest.raises(ValueError, match=r"ids is empty \(shape \(0, 5\)\)"):
        chunked(_model("qpdn"), [(ids[:0], mask[:0])], overhead=0)
    with pytest.raises(TypeError, match="lengths must be .* tensors.*got ndarray"):
        plan_chunks([np.array([2, 9])])


def test_a_batch_whose_padding_costs_less_than_a_call_is_not_planned():
    lengths = torch.tensor([5, 6, 7, 8])                            # padding 3 + 2 + 1 = 6 positions
    assert len(plan_chunks([lengths], overhead=6)) == 1
    assert len(plan_chunks([lengths], overhead=5)) == 1             # the plan: one cut saves less than it costs
    assert len(plan_chunks([lengths], overhead=0)) == 4


def test_fit_with_chunks_follows_the_one_pass_run_and_predicts_the_same():
    rng = np.random.default_rng(0)
    texts = [rng.integers(2, V, size=n).tolist() for n in rng.integers(1, 25, size=48)]
    labels = rng.integers(0, 3, size=48)
    train, dev = EncodedTexts(texts[:40], labels[:40]), EncodedTexts(texts[40:], labels[40:])
    runs = []
    for chunks in (None, 0):
        model = _model("qpdn")
        model.chunk_training = True
        config = TrainConfig(epochs=2, patience=2, batch_size=16, progress=False, length_chunks=chunks)
        assert training_chunks(model, config) == chunks
        result = fit(model, train, dev, config)
        runs.append((model, [h["train_loss"] for h in result.history]))
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=1e-5)
    for (a, _), (b, _) in itertools.combinations(runs, 2):
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4, msg=name)
    torch.testing.assert_close(predict(runs[0][0], dev, length_chunks=0), predict(runs[0][0], dev, length_chunks=None),
                               atol=1e-6, rtol=1e-5)
