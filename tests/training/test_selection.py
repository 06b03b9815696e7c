"""Hyper-parameter selection on dev inside a split (the papers' parameter pool, without looking at test)."""

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch

import qpnlp.training.classification as classification
import qpnlp.training.trainer as trainer
from qpnlp.data import ClassificationDataset, from_matrix
from qpnlp.data.protocols import Split
from qpnlp.training import ConfigError, TrainConfig, TrainingDiverged
from qpnlp.training.classification import (apply_setting, build_classifier, grid, parse_grid, prepare, run_split,
                                           run_split_selected, summarise)

OPTIONS = dict(dim=6, num_measurements=4)
CONFIG = TrainConfig(epochs=4, lr=0.05, embedding_lr=0.05, batch_size=16, progress=False, seed=1)


def _toy_dataset(n=240, seed=0):
    """Class 0 draws words a0..a7, class 1 words b0..b7 (separable bags of words); fixed 160/40/40 split."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    texts = [[f"{'ab'[y]}{i}" for i in rng.integers(0, 8, rng.integers(2, 7))] for y in labels]
    data = ClassificationDataset("toy", texts, labels, ("a", "b"))
    split = Split("fixed", train=np.arange(160), dev=np.arange(160, 200), test=np.arange(200, n))
    return data, split


def test_grid_is_the_cartesian_product_in_order():
    settings = grid(dropout=[0.0, 0.3], weighting=["amplitude_norm", "trainable"], lr=[1e-2])
    assert len(settings) == 4
    assert settings[0] == dict(dropout=0.0, weighting="amplitude_norm", lr=1e-2)
    assert settings[-1] == dict(dropout=0.3, weighting="trainable", lr=1e-2)
    assert grid() == [{}]
    with pytest.raises(ValueError, match="at least one value"):
        grid(dropout=[])


def test_parse_grid_reads_json_values_and_rejects_bad_axes():
    assert parse_grid(["num_measurements=50,100", "weighting=trainable", "complete=false"]) == [
        dict(num_measurements=50, weighting="trainable", complete=False),
        dict(num_measurements=100, weighting="trainable", complete=False)]
    for bad in (["dropout"], ["=1"], ["dropout="]):
        with pytest.raises(ValueError, match="name=v1,v2"):
            parse_grid(bad)
    with pytest.raises(ValueError, match="given twice"):
        parse_grid(["dropout=0", "dropout=0.3"])


@pytest.mark.parametrize("spec", ["dropout=0.1,nan", "lr=inf", "lr=NaN", "dropout=-Infinity", "lr=1e999"])
def test_parse_grid_refuses_values_that_are_not_finite_numbers_naming_the_axis(spec):
    # "nan" stayed a string and reached a model config as "dropout must be float; got str 'nan'"
    name, _, values = spec.partition("=")
    bad = [v for v in values.split(",") if v != "0.1"][0]
    with pytest.raises(ValueError, match=f"grid axis {name}: '{bad}' is not a finite number"):
        parse_grid([spec])


def test_apply_setting_routes_training_and_model_keys():
    options, config = apply_setting(dict(dropout=0.3, lr=1e-3, batch_size=8), dict(dropout=0.0, weighting="idf"),
                                    CONFIG)
    assert options == dict(dropout=0.3, weighting="idf")
    assert (config.lr, config.batch_size, config.embedding_lr) == (1e-3, 8, CONFIG.embedding_lr)
    assert CONFIG.lr == 0.05  # the base config is not modified
    with pytest.raises(ValueError, match="cannot be part of a selection grid"):
        apply_setting(dict(seed=3), {}, CONFIG)
    with pytest.raises(ValueError, match="learning rates must be positive"):
        apply_setting(dict(lr=0.0), {}, CONFIG)


def test_one_candidate_reproduces_run_split_exactly():
    data, split = _toy_dataset()
    plain, plain_model, *_ = run_split("qpdn", data, split, None, OPTIONS, CONFIG)
    selected, model, *_ = run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, [{}])
    assert (selected.test_accuracy, selected.dev_accuracy, selected.best_epoch) == (
        plain.test_accuracy, plain.dev_accuracy, plain.best_epoch)
    for a, b in zip(plain_model.state_dict().values(), model.state_dict().values()):
        assert torch.equal(a, b)
    assert selected.selected == {} and selected.candidate_dev_accuracies == [plain.dev_accuracy]


def test_selection_keeps_the_best_dev_candidate_and_scores_test_once(monkeypatch):
    data, split = _toy_dataset()
    scored = []
    real_accuracy = trainer.accuracy

    def counting_accuracy(model, texts, **kw):
        scored.append(texts)
        return real_accuracy(model, texts, **kw)

    monkeypatch.setattr(trainer, "accuracy", counting_accuracy)
    monkeypatch.setattr(classification, "accuracy", counting_accuracy)
    starved = dict(lr=1e-6, embedding_lr=1e-6, epochs=1)  # cannot learn in one tiny step per batch
    result, model, prepared, _ = run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, [starved, {}])
    assert result.selected == {}
    low, high = result.candidate_dev_accuracies
    assert high > low and high >= 0.9
    assert result.dev_accuracy == high
    assert sum(texts is prepared.test for texts in scored) == 1
    assert sum(texts is prepared.dev for texts in scored) == 1 + CONFIG.epochs  # every epoch of both candidates
    assert result.test_accuracy == pytest.approx(real_accuracy(model, prepared.test))


def test_ties_keep_the_earliest_candidate():
    data, split = _toy_dataset()
    # patience beyond the epoch budget changes nothing: both candidates train identically
    result, *_ = run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, [dict(patience=5), dict(patience=6)])
    assert result.candidate_dev_accuracies[0] == result.candidate_dev_accuracies[1]
    assert result.selected == dict(patience=5)
    with pytest.raises(ValueError, match="at least one setting"):
        run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, [])


def test_a_diverged_candidate_frees_its_model_and_optimiser_state_before_the_next_candidate(monkeypatch):
    # the divergence kept for the end of the grid held, through its traceback, the candidate's frames: its model and
    # its optimisers (Adam's moments, each as large as the parameters) lived on while every later candidate trained
    built = []
    real_optimisers, real_build = trainer.Optimisers, classification.build_classifier

    def tracked_optimisers(model, config):
        optimisers = real_optimisers(model, config)
        built.append(weakref.ref(optimisers))
        return optimisers

    def building(*args, **kwargs):
        gc.collect()                                    # only what is still referenced stays
        alive.append([ref() is not None for ref in built])
        model, config = real_build(*args, **kwargs)
        built.append(weakref.ref(model))
        return model, config

    alive: list[list[bool]] = []
    monkeypatch.setattr(trainer, "Optimisers", tracked_optimisers)
    monkeypatch.setattr(classification, "build_classifier", building)
    data, split = _toy_dataset()
    explodes = dict(lr=1e30, embedding_lr=1e30)
    result, *_ = run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, [explodes, {}, dict(lr=0.01)])
    assert result.candidate_dev_accuracies[0] is None and result.selected == {}
    # before candidate 1: nothing of candidate 0; before candidate 2: the best so far's model (1), not its optimisers
    assert alive == [[], [False, False], [False, False, True, False]]
    with pytest.raises(TrainingDiverged, match="training diverged in epoch 1") as raised:   # each diverges: raised
        run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, [explodes, dict(explodes, lr=1e31)])
    assert raised.value.context["split"] == "fixed" and "lr 1e+31" in str(raised.value)


def test_test_scoring_uses_the_configured_length_chunks(monkeypatch):
    # length_chunks=None (chunks off) must hold for the test evaluation as it does for dev
    data, split = _toy_dataset()
    overheads = []
    real_chunked = trainer.chunked

    def recording_chunked(fn, inputs, overhead=None, multiple_of=None):
        overheads.append(overhead)
        return real_chunked(fn, inputs, overhead, multiple_of)

    monkeypatch.setattr(trainer, "chunked", recording_chunked)
    config = TrainConfig(epochs=1, lr=0.05, embedding_lr=0.05, batch_size=16, progress=False, seed=1,
                         length_chunks=None)
    for run in (lambda: run_split("qpdn", data, split, None, OPTIONS, config),
                lambda: run_split_selected("qpdn", data, split, None, OPTIONS, config, [{}])):
        overheads.clear()
        run()
        assert overheads and set(overheads) == {None}


def test_real_baseline_rejects_options_it_would_ignore():
    data, split = _toy_dataset()
    prepared = prepare(data, split, None)
    with pytest.raises(ValueError, match="unknown RealBagOfWordsConfig keys: \\['num_measurements'\\]"):
        build_classifier("real_bow", prepared, 2, dict(num_measurements=50), seed=0)
    model, config = build_classifier("real_bow", prepared, 2, dict(dim=6, dropout=0.3), seed=0)
    assert config["dropout"] == 0.3 and config["dim"] == 6


def test_grid_axes_must_be_lists_of_values():
    # a string axis was split into its characters (four candidates '0', '.', '0', '1'); a number failed with
    # "object of type 'float' has no len()"
    for axis in ("0.01", 0.01, None):
        with pytest.raises(ConfigError, match=r"grid axis lr must be a list of values"):
            grid(lr=axis)


def test_run_split_selected_checks_the_candidates_before_training(monkeypatch):
    # a num_classes or dim candidate was overridden by the data without a word (every candidate trained the same
    # model), a repeated candidate was trained twice and a string candidate failed in dict methods
    data, split = _toy_dataset()
    monkeypatch.setattr(classification, "prepare", lambda *a, **k: pytest.fail("the data was prepared"))
    for candidates, message in (([dict(num_classes=5)], r"unknown selection key\(s\) \['num_classes'\]"),
                                ([dict(dim=4), dict(dim=8)], r"unknown selection key\(s\) \['dim'\]"),
                                ([dict(bogus=1)], r"unknown selection key\(s\) \['bogus'\]"),
                                ([dict(lr=0.01), dict(lr=0.02), dict(lr=0.01)], "candidates 0 and 2 are the same"),
                                (["lr"], "candidate 0 is str 'lr'")):
        with pytest.raises(ConfigError, match=message):
            run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, candidates)


def test_model_options_that_contradict_the_data_are_refused():
    # num_classes=5 built a 2-class model, dim=6 with 4-d vectors a 4-d one, both without a word
    data, split = _toy_dataset()
    glove = from_matrix(["a1", "b1"], np.ones((2, 4)))
    with pytest.raises(ConfigError, match=r"num_classes=5 contradict the data, which sets num_classes=2"):
        build_classifier("qpdn", prepare(data, split, None), 2, dict(OPTIONS, num_classes=5), seed=0)
    with pytest.raises(ConfigError, match=r"dim=6 contradict the data, which sets dim=4"):
        build_classifier("qpdn", prepare(data, split, glove), 2, OPTIONS, seed=0)
    _, config = build_classifier("qpdn", prepare(data, split, glove), 2, dict(OPTIONS, dim=4, num_classes=2), seed=0)
    assert (config["dim"], config["num_classes"]) == (4, 2)                    # the data's own values are fine
    assert build_classifier("qpdn", prepare(data, split, None), 2, OPTIONS, seed=0)[1]["dim"] == 6


def test_vectors_that_cover_almost_no_training_word_are_warned_about():
    """Vectors of another language or letter case left every word random, and nothing said so."""
    data, split = _toy_dataset()
    words = [f"{c}{i}" for c in "ab" for i in range(8)]
    with pytest.warns(UserWarning, match=r"pretrained vectors cover 0/16 training words \(0.0%.*Wrong vectors"):
        prepare(data, split, from_matrix([w.upper() for w in words], np.ones((16, 4))))
    with pytest.warns(UserWarning, match=r"cover 1/16 training words \(6.2%"):
        prepare(data, split, from_matrix(["a1"], np.ones((1, 4))))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare(data, split, from_matrix(["a1", "b1"], np.ones((2, 4))))      # 2/16 = 12.5%: no warning
        prepare(data, split, from_matrix(words, np.ones((16, 4))))


def test_no_split_results_is_not_a_mean_of_nan():
    with pytest.raises(ValueError, match="no scores to summarise"):
        summarise([])
