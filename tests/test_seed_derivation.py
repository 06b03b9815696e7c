"""Each random stream is derived from the run's seed as docs/getting-started.md ("How each stream is derived") says.

The tests recompute every stream from the documented formula and compare it with what the library draws; the
last one checks the page still states the formulas the others check. ``benchmarks/seed_streams.py`` measures what
the shared streams documented there do.
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.model_selection import StratifiedKFold

import qpnlp.training.classification as classification
from qpnlp.data import ClassificationDataset, EncodedTexts, TimestampedCorpus, iterate_batches
from qpnlp.data.protocols import Split, carve_dev, splits
from qpnlp.training import TrainConfig
from qpnlp.training.trainer import seeded
from qpnlp.word2fun import TrainConfig as W2FConfig
from qpnlp.word2fun import Word2Fun, Word2FunConfig, fit
from qpnlp.word2fun import train as w2f_train

DOC = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"


def _labels(n=60):
    return np.array([0, 1, 1] * (n // 3))


@pytest.mark.parametrize("seed", [0, 5])
def test_the_folds_and_the_dev_of_the_kth_fold_follow_the_documented_seeds(seed):
    labels = _labels()
    data = ClassificationDataset("toy", [["w"]] * len(labels), labels, ("a", "b"))
    folds = StratifiedKFold(n_splits=4, shuffle=True, random_state=seed).split(np.zeros(len(labels)), labels)
    for k, (split, (train, test)) in enumerate(zip(splits(data, seed=seed, n_folds=4), folds), start=1):
        assert split.name == f"fold {k}" and np.array_equal(split.test, np.sort(test))
        expected = carve_dev(train, labels, 0.1, seed + k - 1)
        assert np.array_equal(split.train, expected[0]) and np.array_equal(split.dev, expected[1])


def test_the_batch_order_of_epoch_e_and_its_zero_padding():
    texts = EncodedTexts([[i + 2] for i in range(10)], [0] * 10)
    for epoch in (0, 3):
        order = [int(b[0][0, 0]) - 2 for b in iterate_batches(texts, 1, shuffle=True, seed=7, epoch=epoch)]
        assert order == np.random.default_rng((7, epoch)).permutation(10).tolist()
    # numpy pads short entropy with zeros: epoch 0 is the stream of default_rng(seed) (the OOV vectors')
    assert np.array_equal(np.random.default_rng((7, 0)).random(3), np.random.default_rng(7).random(3))


def test_dropout_draws_the_stream_the_initial_parameters_draw():
    with seeded(11):
        global_draws = torch.rand(50)
    assert torch.equal(global_draws, torch.rand(50, generator=torch.Generator().manual_seed(11)))


def _toy_split(n=120):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, n)
    texts = [[f"{'ab'[y]}{i}" for i in rng.integers(0, 6, 4)] for y in labels]
    split = Split("fixed", train=np.arange(80), dev=np.arange(80, 100), test=np.arange(100, n))
    return ClassificationDataset("toy", texts, labels, ("a", "b")), split


def test_grid_candidates_of_other_training_settings_start_from_the_same_parameters(monkeypatch):
    built, real = [], classification.build_classifier

    def recording(*args):
        model, config = real(*args)
        built.append({k: v.clone() for k, v in model.state_dict().items()})
        return model, config

    monkeypatch.setattr(classification, "build_classifier", recording)
    data, split = _toy_split()
    config = TrainConfig(epochs=1, lr=0.05, embedding_lr=0.05, batch_size=16, progress=False, seed=2)
    classification.run_split_selected("qpdn", data, split, None, dict(dim=4, num_measurements=3), config,
                                      [dict(lr=0.05), dict(lr=0.01, batch_size=8)])
    assert len(built) == 2 and all(torch.equal(built[0][k], built[1][k]) for k in built[0])
    with seeded(2):        # and that start is the generator of the seed: manual_seed(seed)
        again, _ = real("qpdn", classification.prepare(data, split, None, seed=2), 2, dict(dim=4, num_measurements=3),
                        2)
    assert all(torch.equal(v, built[0][k]) for k, v in again.state_dict().items())


def _corpus(n=120):
    rng = np.random.default_rng(0)
    words = ["war", "peace", "trade", "army", "navy", "tax"]
    return TimestampedCorpus.from_pairs((1900 + i % 10, list(rng.choice(words, 6))) for i in range(n))


def _recording_train_source(monkeypatch):
    seen, real = [], w2f_train._train_checked

    def recording(model, source, counts, cfg, **kw):
        seen.append(dict(base=model.base.weight.detach().clone(), rng=kw["rng"].bit_generator.state,
                         gens=[g.get_state() for g in kw["generators"]]))
        return real(model, source, counts, cfg, **kw)

    monkeypatch.setattr(w2f_train, "_train_checked", recording)
    return seen


def test_word2fun_initialisation_pairs_and_each_workers_negatives(monkeypatch):
    seen = _recording_train_source(monkeypatch)
    fit(_corpus(), W2FConfig(epochs=1, seed=9, workers=2), family="II", dim=4, min_count=1)
    (start,) = seen
    fresh = Word2Fun(Word2FunConfig(vocab_size=6, dim=4, family="II", span_start=1900.0, span_end=1909.0), seed=9)
    assert torch.equal(start["base"], fresh.base.weight)                          # manual_seed(seed)
    assert start["rng"] == np.random.default_rng(9).bit_generator.state           # process 0: default_rng(seed)
    for w, state in enumerate(start["gens"]):                                     # seed + 7919 w + 104729 r
        assert torch.equal(state, torch.Generator().manual_seed(9 + 7919 * w).get_state())
    assert torch.equal(start["gens"][0], torch.Generator().manual_seed(9).get_state())   # worker 0 = the init's


def test_a_frozen_compass_training_starts_from_the_pretrainings_streams(monkeypatch):
    seen = _recording_train_source(monkeypatch)
    fit(_corpus(), W2FConfig(epochs=1, seed=4), family="IV", dim=4, min_count=1, compass="frozen", compass_epochs=1)
    pretraining, training = seen
    assert pretraining["rng"] == training["rng"]
    assert all(torch.equal(a, b) for a, b in zip(pretraining["gens"], training["gens"]))


def test_the_page_states_the_formulas_these_tests_check():
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### How each stream is derived"):text.index("## Environment variables")]
    for formula in ("StratifiedKFold(n_splits, shuffle=True, random_state=seed)", "seed + k - 1",
                    "default_rng((seed, e))", "default_rng(seed)", "torch.Generator().manual_seed(seed)",
                    "torch.manual_seed(seed)", "seed + 7919 w + 104729 r", "default_rng([seed, r, 0])",
                    "the same parameters", "replays"):
        assert formula in section, formula
    assert "``(seed + k - 1) mod 2**32``" in " ".join(splits.__doc__.split())    # not "fold i ... seed + i"
