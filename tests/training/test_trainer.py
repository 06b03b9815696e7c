"""Trainer, sparse optimisation and checkpoints."""

import json

import numpy as np
import pytest
import torch

from qpnlp.data import EncodedTexts, Vocabulary
from qpnlp.models import QPDN, QPDNConfig, RealBagOfWords, RealBagOfWordsConfig
from qpnlp.training import (TrainConfig, accuracy, convert_legacy_checkpoint, fit, load_checkpoint, save_checkpoint,
                            train_step)
from qpnlp.training import ConfigError, Optimisers


def _toy(n=200, seed=0):
    """Class 0 uses words 2..9, class 1 words 10..17: linearly separable bags of words."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    texts = [list(rng.integers(2 + 8 * y, 10 + 8 * y, rng.integers(2, 7))) for y in labels]
    return EncodedTexts(texts, labels)


def _model(seed=0, **kw):
    return QPDN(QPDNConfig(num_words=20, num_classes=2, dim=6, num_measurements=4, **kw),
                generator=torch.Generator().manual_seed(seed))


def test_fit_learns_a_separable_task_and_keeps_the_best_dev_epoch():
    torch.manual_seed(0)
    model = _model()
    result = fit(model, _toy(), _toy(seed=1), TrainConfig(epochs=6, lr=0.05, embedding_lr=0.05, progress=False))
    assert result.best_dev_accuracy >= 0.95
    assert accuracy(model, _toy(seed=1)) == pytest.approx(result.best_dev_accuracy)
    best = max(h["dev_accuracy"] for h in result.history)
    assert result.history[result.best_epoch - 1]["dev_accuracy"] == best


def test_early_stopping_selects_on_negative_scores_too():
    """A dev score below -1 (a negative loss, a log-likelihood) is still a score: the best epoch is kept."""
    from qpnlp.training import early_stopping

    model = torch.nn.Linear(2, 1)
    config = TrainConfig(epochs=5, patience=2, progress=False)
    scores = iter([-5.0, -3.0, -4.0, -4.5, -1.0])

    def train_epoch(epoch):
        with torch.no_grad():
            model.bias.fill_(epoch)                   # the parameters record the epoch
        return 0.0

    def evaluate():
        score = next(scores)
        return score, dict(dev=score)

    out = early_stopping(model, config, Optimisers(model, config), train_epoch=train_epoch, evaluate=evaluate)
    assert (out.best_epoch, out.best_score, len(out.history)) == (2, -3.0, 4)   # patience 2 after epoch 2
    assert float(model.bias.detach()) == 2.0                                    # not the initial parameters


def test_sparse_optimiser_updates_only_rows_in_the_batch():
    model = _model(weighting="trainable")
    opts = Optimisers(model, TrainConfig())
    assert [type(o).__name__ for o in opts.optimisers] == ["RowSparseAdam", "Adam"]       # torch's SparseAdam, by rows
    assert isinstance(opts.optimisers[0], torch.optim.SparseAdam)
    before = model.embedding.amplitude.weight.detach().clone()
    ids = torch.tensor([[3, 4, 0]])
    train_step(model, opts, ids, ids != 0, torch.tensor([1]))
    changed = (model.embedding.amplitude.weight.detach() != before).any(-1).nonzero().flatten().tolist()
    assert changed == [3, 4]


def test_train_step_names_labels_of_a_wrong_dtype_shape_or_device_before_the_forward():
    """cross_entropy failed with "expected target dtype to be Long or Byte, but got Float" (or Int, Bool), or
    "Tensor on device cpu is not on the expected device meta!", naming no argument; int32 labels are class ids."""
    model = _model()
    opts = Optimisers(model, TrainConfig())
    ids = torch.tensor([[3, 4, 0], [5, 0, 0]])
    labels = torch.tensor([1, 0])
    for bad, error, match in [(labels.float(), TypeError, "labels must be integer class ids.*float32"),
                              (labels.bool(), TypeError, "labels must be integer class ids.*bool"),
                              (labels.numpy(), TypeError, "labels must be a torch.Tensor; got ndarray"),
                              (labels[:, None], ValueError, r"labels must have shape \(2,\).*got \(2, 1\)"),
                              (labels.to("meta"), ValueError, "ids on cpu, labels on meta")]:
        before = [p.detach().clone() for p in model.parameters()]
        with pytest.raises(error, match=match):
            train_step(model, opts, ids, ids != 0, bad)
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))     # refused before the step
    losses = []
    for given in (labels, labels.int()):
        fresh = _model()
        losses.append(train_step(fresh, Optimisers(fresh, TrainConfig()), ids, ids != 0, given))
    assert losses[0] == losses[1]


def test_training_is_deterministic_for_a_seed():
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = _model(seed=5)
        fit(model, _toy(), _toy(seed=1), TrainConfig(epochs=2, progress=False, seed=3))
        runs.append(model.classifier.weight.detach().clone())
    assert torch.equal(runs[0], runs[1])


def test_on_epoch_observer_joins_the_history_without_changing_training():
    """The observer's dict lands in each epoch's history; the trained weights equal those of a run without it."""
    weights, histories = [], []
    for observer in (None, lambda m: dict(test_accuracy=accuracy(m, _toy(seed=2)), training=m.training)):
        torch.manual_seed(0)
        model = _model(seed=5)
        result = fit(model, _toy(), _toy(seed=1), TrainConfig(epochs=3, progress=False, seed=3), on_epoch=observer)
        weights.append(model.classifier.weight.detach().clone())
        histories.append(result.history)
    assert torch.equal(weights[0], weights[1])
    assert all("test_accuracy" not in h for h in histories[0])
    assert [0.0 <= h["test_accuracy"] <= 1.0 for h in histories[1]] == [True] * 3
    assert not any(h["training"] for h in histories[1])
    with pytest.raises(ValueError, match="dev_accuracy"):
        fit(_model(), _toy(), _toy(seed=1), TrainConfig(epochs=1, progress=False), on_epoch=lambda m: {"dev_accuracy": 1})


@pytest.mark.parametrize("kw", [{}, dict(complete=True, dim=4), dict(weighting="idf")])
def test_checkpoint_round_trip(tmp_path, kw):
    config = QPDNConfig(num_words=20, num_classes=2, **{"dim": 6, "num_measurements": 4, **kw})
    idf = torch.linspace(1, 2, 20) if kw.get("weighting") == "idf" else None
    model = QPDN(config, idf=idf).eval()
    vocab = Vocabulary.build([[f"w{i}" for i in range(18)]])           # 20 ids with <pad> and <unk>
    path = save_checkpoint(tmp_path / "m", model, vocabulary=vocab,
                           metadata={"dataset": "toy", "seed": 3, "label_names": ["neg", "pos"]})
    checkpoint = load_checkpoint(path)
    ids = torch.tensor([[3, 4, 5, 0]])
    assert torch.equal(checkpoint.model(ids, ids != 0), model(ids, ids != 0))
    assert checkpoint.vocabulary == vocab and checkpoint.metadata["label_names"] == ["neg", "pos"]
    assert checkpoint.metadata["seed"] == 3


@pytest.mark.data
@pytest.mark.parametrize("recorded, used", [(None, None), (0, 0), ("absent", 256)])
def test_evaluate_scores_with_the_length_chunks_the_training_run_scored_with(data_root, tmp_path, monkeypatch,
                                                                             recorded, used):
    """``qpnlp evaluate`` chunked every batch (256) whatever ``--length-chunks`` the run was trained and scored
    with: the logits differ in their last bits, so the reported figure was not reproduced to the bit."""
    import qpnlp.training.evaluate as evaluation
    from qpnlp.data import load_classification

    trec = load_classification("TREC", root=data_root)
    vocab = Vocabulary.build(trec.texts[:50])
    model = RealBagOfWords(RealBagOfWordsConfig(num_words=len(vocab), num_classes=6, dim=4))
    train = {} if recorded == "absent" else {"length_chunks": recorded}
    save_checkpoint(tmp_path / "m", model, vocabulary=vocab, metadata=dict(dataset="TREC", split="fixed", train=train,
                                                                           task="classification"))
    seen = []
    monkeypatch.setattr(evaluation, "accuracy", lambda *a, **kw: seen.append(kw["length_chunks"]) or accuracy(*a, **kw))
    evaluation.evaluate_checkpoint(tmp_path / "m", root=data_root)
    assert seen == [used]


def test_load_checkpoint_says_a_missing_directory_does_not_exist(tmp_path):
    """A path that does not exist was called 'not a saved qpnlp model (no config.json)'."""
    with pytest.raises(FileNotFoundError, match="checkpoint .*missing does not exist"):
        load_checkpoint(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="not a saved qpnlp model"):
        load_checkpoint(tmp_path / "empty")


class _Evil:
    def __reduce__(self):
        return (print, ("executed",))


def test_checkpoint_loading_never_unpickles_code(tmp_path, capsys):
    path = tmp_path / "evil.pt"
    torch.save({"format": "qpnlp-checkpoint-1", "kind": "qpdn", "payload": _Evil()}, path)
    with pytest.raises(ValueError, match="qpnlp convert"):
        load_checkpoint(path)                                  # a file is never unpickled by the loader
    with pytest.raises(ValueError, match="not a readable qpnlp 0.1 checkpoint"):
        convert_legacy_checkpoint(path, tmp_path / "out")      # the converter reads with weights_only=True
    assert "executed" not in capsys.readouterr().out
    torch.save({"format": "something-else"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a qpnlp 0.1 checkpoint"):
        convert_legacy_checkpoint(tmp_path / "other.pt", tmp_path / "out")


def test_bad_train_config():
    with pytest.raises(ValueError, match="learning rates"):
        TrainConfig(lr=0)
    with pytest.raises(ValueError, match=">= 1"):
        TrainConfig(epochs=0)


@pytest.mark.parametrize("field, value", [("batch_size", 1.5), ("epochs", 2.5), ("patience", True),
                                          ("length_chunks", 1.5), ("max_len", 8.0), ("pad_to_multiple_of", "8"),
                                          ("seed", -1), ("seed", 2 ** 32), ("seed", 0.5)])
def test_train_config_refuses_counts_that_are_not_integers_and_seeds_numpy_refuses(field, value):
    # a selection grid (--select batch_size=1.5,2) used to fail after the data was read ("'float' object cannot be
    # interpreted as an integer", exit 1), or train silently (epochs=2.5); --seed -1 failed in np.random.seed
    from qpnlp.training.matching import MatchingConfig

    with pytest.raises(ConfigError, match=field):
        TrainConfig(**{field: value})
    with pytest.raises(ConfigError, match="negatives"):
        MatchingConfig(negatives=1.5)
    TrainConfig(seed=np.int64(2 ** 32 - 1), epochs=np.int64(3))        # NumPy integers are integers


@pytest.mark.parametrize("value", ["no", 1, None])
def test_train_config_refuses_a_progress_that_is_not_a_bool(value):
    # progress only decides whether a bar is drawn: "no" and 1 were taken (as True), None as False
    from qpnlp.training.matching import MatchingConfig

    for config in (TrainConfig, MatchingConfig):
        with pytest.raises(ConfigError, match=f"progress must be True or False; got {type(value).__name__}"):
            config(progress=value)
    assert TrainConfig(progress=True).progress is True


def test_prepare_with_pretrained_fallback_keeps_unseen_test_words():
    from qpnlp.data import ClassificationDataset, from_matrix
    from qpnlp.data.protocols import Split
    from qpnlp.training.classification import prepare

    texts = [["good", "film"], ["bad", "film"], ["good", "plot"], ["superb", "movie"]]
    data = ClassificationDataset("toy", texts, np.array([1, 0, 1, 1]), ("neg", "pos"))
    split = Split("s", train=np.array([0, 1]), dev=np.array([2]), test=np.array([3]))
    glove = from_matrix(["the", "movie", "superb", "film"], np.arange(8.0).reshape(4, 2))
    plain = prepare(data, split, glove)
    assert plain.test.ids[0] == [1, 1]  # both test words unknown
    fallback = prepare(data, split, glove, pretrained_fallback=3)
    words = fallback.vocab.words
    assert words[: len(plain.vocab)] == plain.vocab.words and words[len(plain.vocab):] == ["the", "movie", "superb"]
    superb, movie = fallback.test.ids[0]
    assert fallback.pretrained_matrix[superb].tolist() == [4.0, 5.0]
    assert fallback.pretrained_matrix[movie].tolist() == [2.0, 3.0]
    with pytest.raises(ValueError, match="needs pretrained"):
        prepare(data, split, None, pretrained_fallback=3)


def test_rmsprop_option_learns_the_toy_task_and_touches_only_batch_rows():
    torch.manual_seed(0)
    model = _model()
    config = TrainConfig(epochs=8, lr=1e-2, embedding_lr=1e-2, batch_size=16, optimizer="rmsprop", progress=False)
    opts = Optimisers(model, config)
    assert type(opts.optimisers[0]).__name__ == "SparseRMSprop"
    assert isinstance(opts.optimisers[1], torch.optim.RMSprop)
    fit(model, _toy(), _toy(seed=1), config)
    assert accuracy(model, _toy(seed=2)) > 0.9
    with pytest.raises(ValueError, match="optimizer must be one of"):
        TrainConfig(optimizer="sgd")


def test_phase_lr_gives_the_phase_table_its_own_learning_rate():
    """Adam's first step moves each touched entry by about lr: phases by phase_lr, amplitudes by embedding_lr."""
    model = _model()
    opts = Optimisers(model, TrainConfig(embedding_lr=1e-3, phase_lr=1e-1))
    sparse = opts.optimisers[0]
    assert [g["lr"] for g in sparse.param_groups] == [1e-3, 1e-1]
    assert sparse.param_groups[1]["params"] == [model.embedding.phase.weight]
    amplitude = model.embedding.amplitude.weight.detach().clone()
    phase = model.embedding.phase.weight.detach().clone()
    ids = torch.tensor([[3, 4, 0]])
    train_step(model, opts, ids, ids != 0, torch.tensor([1]))
    step_a = (model.embedding.amplitude.weight.detach() - amplitude)[3:5].abs().max()
    step_p = (model.embedding.phase.weight.detach() - phase)[3:5].abs().max()
    assert float(step_a) == pytest.approx(1e-3, rel=1e-2) and float(step_p) == pytest.approx(1e-1, rel=1e-2)
    assert [len(g["params"]) for g in Optimisers(model, TrainConfig()).optimisers[0].param_groups] == [2]
    with pytest.raises(ValueError, match="learning rates must be positive"):
        TrainConfig(phase_lr=0.0)


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop"])
def test_a_cayley_step_transition_takes_the_cayley_step_and_stays_unitary(optimizer):
    """``transition="cayley_step"`` is a plain parameter kept unitary by CayleyStepSGD (poster eq. 3): Adam or
    RMSprop on it left the unitary group (unitarity error 2.4 after 20 steps). The step is lr * the Cayley step of
    its gradient, and a small one lowers the loss."""
    from qpnlp.models import CGRNNClassifier, CGRNNClassifierConfig
    from qpnlp.nn import CayleyStepSGD, cayley_step, unitarity_error

    model = CGRNNClassifier(CGRNNClassifierConfig(num_words=12, num_classes=3, dim=4, hidden=3, complex128=True,
                                                  transition="cayley_step"), generator=torch.Generator().manual_seed(0))
    w = model.rnn.cell.transition.weight
    opts = Optimisers(model, TrainConfig(lr=0.05, weight_decay=0.1, optimizer=optimizer))
    cayley = [o for o in opts.optimisers if isinstance(o, CayleyStepSGD)]
    assert len(cayley) == 1 and [p for g in cayley[0].param_groups for p in g["params"]] == [w]
    assert all(p is not w for o in opts.optimisers if o is not cayley[0] for g in o.param_groups for p in g["params"])
    ids, labels = torch.tensor([[2, 3, 4, 0], [5, 6, 7, 8]]), torch.tensor([0, 2])
    before = w.detach().clone()
    loss = torch.nn.functional.cross_entropy(model(ids, ids != 0), labels)
    grad = torch.autograd.grad(loss, w)[0]
    train_step(model, opts, ids, ids != 0, labels)
    torch.testing.assert_close(w.detach(), cayley_step(before, grad, 0.05))
    for _ in range(19):
        train_step(model, opts, ids, ids != 0, labels)
    assert unitarity_error(w.detach()) < 1e-12
    # the step descends: a small Cayley step on the gradient lowers the loss
    with torch.no_grad():
        model.eval()
        start = torch.nn.functional.cross_entropy(model(ids, ids != 0), labels)
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(ids, ids != 0), labels).backward()
    with torch.no_grad():
        w.copy_(cayley_step(w, w.grad, 1e-3))
        assert torch.nn.functional.cross_entropy(model(ids, ids != 0), labels) < start


def test_phase_lr_for_a_model_without_a_phase_table_is_refused_not_ignored():
    # cnm-real and the real baselines have no phase table: --phase-lr was silently ignored
    model = RealBagOfWords(RealBagOfWordsConfig(num_words=10, dim=4, num_classes=2))
    with pytest.raises(ValueError, match=r"phase_lr \(--phase-lr\) 0.01 would be ignored: RealBagOfWords has no trainable "
                                         r"phase table"):
        Optimisers(model, TrainConfig(phase_lr=1e-2))
    Optimisers(model, TrainConfig())


def test_phase_lr_is_checked_with_the_model_options_before_any_data():
    """check_model_options (and check_grid, per candidate) ask the optimiser's question of the model built at
    placeholder sizes: whether it has a phase table depends on its options; the global RNG is left as it was."""
    from qpnlp.training.classification import check_grid, check_model_options

    phases, none = {"embedding_options": {"initial_phase": True}}, {"embedding_options": {"initial_phase": False}}
    state = torch.random.get_rng_state()
    check_model_options("order_classifier", phases, TrainConfig(phase_lr=1e-2))
    check_model_options("order_classifier", none, TrainConfig())                 # phase_lr unset: nothing to refuse
    assert torch.equal(torch.random.get_rng_state(), state)
    with pytest.raises(ConfigError, match=r"phase_lr \(--phase-lr\) 0.01 would be ignored: OrderClassifier has no"):
        check_model_options("order_classifier", none, TrainConfig(phase_lr=1e-2))
    with pytest.raises(ConfigError, match=r"selection candidate \{'embedding_options': \{'initial_phase': False\}\}: "
                                          r"phase_lr \(--phase-lr\) 0.01 would be ignored"):
        check_grid("order_classifier", [phases, none], {}, TrainConfig(phase_lr=1e-2))


def test_load_checkpoint_refuses_a_vocabulary_smaller_than_the_model(tmp_path):
    """Ids beyond the vocabulary would have no word: the vocabulary does not belong to the model."""
    model = QPDN(QPDNConfig(num_words=20, num_classes=2, dim=6, num_measurements=4))
    path = save_checkpoint(tmp_path / "m", model, vocabulary=Vocabulary.build([[f"w{i}" for i in range(18)]]))
    (path / "vocabulary.json").write_text(json.dumps(Vocabulary.build([["a", "b", "c"]]).to_dict()))
    with pytest.raises(ValueError, match=r"vocabulary.json: the vocabulary has 5 words but the model's embedding "
                                         r"tables have 20 rows \(num_words in .*config.json\)"):
        load_checkpoint(path)


@pytest.mark.parametrize("words", [3, 25])
def test_save_checkpoint_refuses_a_vocabulary_of_another_size_than_the_model(tmp_path, words):
    """Saved, and then load_checkpoint refused what was written; nothing is written now."""
    model = QPDN(QPDNConfig(num_words=20, num_classes=2, dim=6, num_measurements=4))
    vocabulary = Vocabulary.build([[f"w{i}" for i in range(words)]])
    with pytest.raises(ValueError, match=rf"cannot save QPDN to .*m: the vocabulary has {words + 2} words but the "
                                         rf"model's embedding tables have 20 rows"):
        save_checkpoint(tmp_path / "m", model, vocabulary=vocabulary)
    assert not (tmp_path / "m").exists()


def test_labels_outside_the_models_classes_are_refused():
    # a training label past the classes failed inside cross_entropy (IndexError "Target 3 is out of bounds"); a dev
    # or scored label past them counted as an error in every accuracy without a word
    config = TrainConfig(epochs=1, batch_size=16, progress=False)
    with pytest.raises(ValueError, match=r"the training labels must be class indices in \[0, 2\).*got label 3"):
        fit(_model(), EncodedTexts(_toy().ids, np.where(_toy().labels == 1, 3, 0)), _toy(seed=1), config)
    with pytest.raises(ValueError, match=r"the dev labels must be class indices in \[0, 2\).*got label -1"):
        fit(_model(), _toy(), EncodedTexts(_toy(seed=1).ids, _toy(seed=1).labels - 1), config)
    with pytest.raises(ValueError, match=r"the scored labels must be class indices in \[0, 2\).*got label 7"):
        accuracy(_model(), EncodedTexts(_toy().ids, np.where(_toy().labels == 1, 7, 0)))


@pytest.mark.parametrize("field, value", [("lr", "0.1"), ("embedding_lr", None), ("lr", True),
                                          ("weight_decay", "0"), ("phase_lr", "1e-2")])
def test_train_config_refuses_rates_that_are_not_numbers(field, value):
    # "0.1" failed with "must be real number, not str" (no field named), True trained with lr 1.0
    from qpnlp.training.matching import MatchingConfig

    with pytest.raises(ConfigError, match=f"{field} must be a number"):
        TrainConfig(**{field: value})
    for bad in (dict(margin="0.1"), dict(pointwise_scale=float("inf")), dict(margin=float("inf"))):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            MatchingConfig(**bad)


def test_predict_keeps_the_precision_of_float64_logits():
    """``predict`` cast every model's logits to float32, narrowing a float64 model's."""
    from qpnlp.training.trainer import predict

    class Float64Logits(torch.nn.Module):
        def forward(self, ids, mask):
            return (ids[:, :1].double() + 1 / 3).expand(-1, 2)

    logits = predict(Float64Logits(), EncodedTexts([[2], [3, 4]], [0, 1]))
    assert logits.dtype == torch.float64
    assert logits[0, 0].item() == 2 + 1 / 3


@pytest.mark.parametrize("trainer", ["fit", "fit_matching"])
def test_training_without_progress_starts_no_tqdm_monitor_thread(trainer, monkeypatch):
    """fit and fit_matching with progress=False made a disabled tqdm bar, which still starts tqdm's monitor thread
    (tqdm.__new__), a daemon left running for about 10 s after the training; now no bar is made at all."""
    import threading

    import tqdm.auto

    from qpnlp.models import CNM, CNMConfig
    from qpnlp.training.matching import EncodedQA, MatchingConfig, fit_matching

    monkeypatch.setattr(tqdm.auto.tqdm, "monitor", None)         # a monitor of an earlier test would be reused
    before = set(threading.enumerate())
    if trainer == "fit":
        fit(_model(), _toy(40), _toy(20, seed=1), TrainConfig(epochs=1, progress=False))
    else:
        q, c = [[2, 3], [4, 5]], [[2, 3], [9], [4, 5], [8]]
        data = EncodedQA(q, c, np.array([0, 0, 1, 1]), np.array([1, 0, 1, 0]), (np.array([0, 1]), np.array([2, 3])))
        fit_matching(CNM(CNMConfig(num_words=20, dim=4, num_measurements=2)), data, data,
                     MatchingConfig(epochs=1, batch_size=2, progress=False))
    started = [t.name for t in set(threading.enumerate()) - before]
    assert tqdm.auto.tqdm.monitor is None and not any("monitor" in name for name in started), started


def _modes(model: torch.nn.Module) -> dict[str, bool]:
    return {name: m.training for name, m in model.named_modules()}


def test_predict_and_accuracy_put_back_the_train_eval_mode_of_every_submodule():
    """``predict`` left the model in eval mode: a loop scoring dev accuracy between its own training steps trained on
    without dropout. Each submodule's mode is put back, a dropout the caller switched off included, also when a
    batch raises."""
    from qpnlp.training.trainer import predict

    model = _model(dropout=0.5).train()
    model.dropout.eval()
    before = _modes(model)
    assert predict(model, _toy(n=20)).shape == (20, 2)
    assert 0.0 <= accuracy(model, _toy(n=20)) <= 1.0
    assert _modes(model) == before
    seen = []
    model.register_forward_pre_hook(lambda m, args: seen.append(m.training) or (_ for _ in ()).throw(
        RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        predict(model, _toy(n=20))
    assert seen == [False] and _modes(model) == before
