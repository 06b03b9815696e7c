"""Call-order and lifecycle misuse of the trainers, as a notebook makes it.

Each test failed before its fix: a config changed after it was made skipped its checks (``epochs = 0`` returned a
"best" dev accuracy of -1.0, ``batch_size = 0`` divided by zero, a mistyped ``loss`` trained the pointwise loss
without a word), and ``fit_matching`` / ``score_pairs`` given a classifier, a ``TrainConfig`` or a list failed
inside the first batch with torch's or Python's own error.
"""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import CNM, CNMConfig, RealBagOfWords, RealBagOfWordsConfig
from qpnlp.training import ConfigError, TrainConfig, fit
from qpnlp.training.matching import EncodedQA, MatchingConfig, evaluate_ranking, fit_matching, score_pairs

TRAIN = EncodedTexts([[2, 3], [4, 5, 6], [7], [8, 9]], [0, 1, 0, 1])
DEV = EncodedTexts([[2, 3], [4]], [0, 1])
QA = EncodedQA([[2, 3], [4, 5]], [[6, 7], [2, 3, 8], [4], [9]], np.array([0, 0, 1, 1]), np.array([0, 1, 1, 0]),
               (np.arange(0, 2), np.arange(2, 4)))


def _bow(seed: int = 0) -> RealBagOfWords:
    return RealBagOfWords(RealBagOfWordsConfig(num_words=10, num_classes=2, dim=4),
                          generator=torch.Generator().manual_seed(seed))


def _cnm() -> CNM:
    return CNM(CNMConfig(num_words=10, dim=4, num_measurements=3), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("field, value, match", [
    ("epochs", 0, "epochs, batch_size and patience must be >= 1"),
    ("batch_size", 0, "epochs, batch_size and patience must be >= 1"),
    ("lr", -1.0, "learning rates must be positive"),
])
def test_fit_checks_a_config_changed_after_it_was_made(field, value, match):
    config = TrainConfig(epochs=1, batch_size=2)
    setattr(config, field, value)
    with pytest.raises(ConfigError, match=match):
        fit(_bow(), TRAIN, DEV, config)


@pytest.mark.parametrize("field, value, match", [
    ("epochs", 0, "epochs, batch_size and patience must be >= 1"),
    ("loss", "hinge", "loss must be one of"),
    ("margin", -5.0, "need finite margin >= 0"),
])
def test_fit_matching_checks_a_config_changed_after_it_was_made(field, value, match):
    config = MatchingConfig(epochs=1, batch_size=2)
    setattr(config, field, value)
    with pytest.raises(ConfigError, match=match):
        fit_matching(_cnm(), QA, QA, config)


def test_fit_reads_its_own_copy_of_the_config():
    """A change the caller makes while fit runs (here from its log) does not reach the run."""
    config = TrainConfig(epochs=3, batch_size=2, patience=3)

    def log(entry):
        config.epochs = 1

    assert len(fit(_bow(), TRAIN, DEV, config, log=log).history) == 3


def test_fit_matching_refuses_what_it_cannot_train():
    config = MatchingConfig(epochs=1, batch_size=2)
    with pytest.raises(TypeError, match=r"RealBagOfWords is a 'classification' model; fit_matching\(\) takes "
                                        r"matching models.*qpnlp\.training\.fit"):
        fit_matching(_bow(), QA, QA, config)
    with pytest.raises(TypeError, match=r"config must be a MatchingConfig.*got TrainConfig"):
        fit_matching(_cnm(), QA, QA, TrainConfig(epochs=1))
    with pytest.raises(TypeError, match=r"the dev set must be an EncodedQA.*got list"):
        fit_matching(_cnm(), QA, [[1, 2]], config)
    assert fit_matching(_cnm(), QA, QA, config).best_epoch == 1


def test_score_pairs_names_the_classifier_trainer():
    with pytest.raises(TypeError, match=r"score_pairs\(\) takes matching models"):
        score_pairs(_bow(), QA)
    with pytest.raises(TypeError, match=r"the scored set must be an EncodedQA"):
        evaluate_ranking(_cnm(), EncodedTexts([[2]], [0]))
    assert score_pairs(_cnm(), QA).shape == (4,)


def test_a_second_fit_continues_from_the_parameters_and_resume_equals_one_run():
    """What fit's docstring says of a second call: it starts from the model's parameters (not afresh), and
    checkpoint_dir + resume with more epochs gives the longer run's model."""
    once, twice, resumed = _bow(), _bow(), _bow()
    fit(once, TRAIN, DEV, TrainConfig(epochs=4, batch_size=2, patience=10))
    first = fit(twice, TRAIN, DEV, TrainConfig(epochs=2, batch_size=2, patience=10))
    again = fit(twice, TRAIN, DEV, TrainConfig(epochs=2, batch_size=2, patience=10))
    assert again.history[0]["train_loss"] != first.history[0]["train_loss"]      # not a restart from scratch
    with tempfile.TemporaryDirectory() as tmp:
        fit(resumed, TRAIN, DEV, TrainConfig(epochs=2, batch_size=2, patience=10), checkpoint_dir=tmp)
        fit(resumed, TRAIN, DEV, TrainConfig(epochs=4, batch_size=2, patience=10), checkpoint_dir=tmp, resume=True)
    assert all(torch.equal(a, b) for a, b in zip(once.state_dict().values(), resumed.state_dict().values()))
