"""Robustness fixes of the classification trainer's entry points (fit, predict, accuracy, seed_everything).

Each test failed before its fix: a matching model reached its forward with two arguments, a device string,
an empty data set, a float seed or ``length_chunks`` and a list or a dict in place of the data or the config
were passed on to torch, numpy or attribute look-ups.
"""

from __future__ import annotations

import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import CNM, QPDN, CNMConfig, QPDNConfig
from qpnlp.training import TrainConfig, accuracy, fit, predict, seed_everything

TRAIN = EncodedTexts([[2, 3], [4, 5, 6], [7], [8, 9]], [0, 1, 0, 1])
DEV = EncodedTexts([[2, 3], [4]], [0, 1])
CONFIG = TrainConfig(epochs=1, batch_size=2, progress=False)


def _qpdn():
    return QPDN(QPDNConfig(num_words=10, num_classes=2, dim=4, num_measurements=3),
                generator=torch.Generator().manual_seed(0))


def test_fit_names_the_matching_trainer_for_a_matching_model():
    """It failed in the first batch: "CNM.forward() missing 2 required positional arguments"."""
    cnm = CNM(CNMConfig(num_words=10, dim=4, num_measurements=3))
    with pytest.raises(TypeError, match=r"CNM is a matching model .*fit\(\) takes classifiers.*fit_matching"):
        fit(cnm, TRAIN, DEV, CONFIG)
    with pytest.raises(TypeError, match=r"CNM is a matching model .*accuracy\(\) takes classifiers.*fit_matching"):
        accuracy(cnm, DEV)
    with pytest.raises(TypeError, match=r"predict\(\) takes classifiers"):
        predict(cnm, DEV)


def test_accuracy_checks_the_device_name():
    """predict passed 'gpu' to .to(): torch's "Expected one of cpu, cuda, ipu, xpu, ..." error."""
    with pytest.raises(ValueError, match=r"unknown device 'gpu'; expected cpu, cuda, cuda:N or mps"):
        accuracy(_qpdn(), DEV, device="gpu")
    assert 0.0 <= accuracy(_qpdn(), DEV, device=torch.device("cpu")) <= 1.0


def test_accuracy_and_predict_refuse_empty_data():
    """They failed with "torch.cat(): expected a non-empty list of Tensors"."""
    with pytest.raises(ValueError, match=r"data is empty \(0 texts\)"):
        accuracy(_qpdn(), EncodedTexts([], []))
    with pytest.raises(ValueError, match=r"data is empty"):
        predict(_qpdn(), EncodedTexts([], []))


def test_predict_refuses_data_that_is_not_encoded_texts():
    with pytest.raises(TypeError, match=r"data must be an EncodedTexts .*got list"):
        predict(_qpdn(), [[2, 3]])


@pytest.mark.parametrize("chunks, error", [(1.5, TypeError), ("256", TypeError), (-1, ValueError)])
def test_accuracy_checks_length_chunks(chunks, error):
    """1.5 was accepted (and used as a chunking cost)."""
    with pytest.raises(error, match=r"length_chunks must be an integer >= 0 or None; got"):
        accuracy(_qpdn(), DEV, length_chunks=chunks)


def test_accuracy_keeps_valid_length_chunks():
    model = _qpdn()
    assert accuracy(model, DEV, length_chunks=None) == accuracy(model, DEV, length_chunks=0)


@pytest.mark.parametrize("seed", [1.5, None, -1, 2 ** 40, "3"])
def test_seed_everything_checks_the_seed(seed):
    """1.5 gave numpy's "Cannot cast scalar from dtype('float64') to dtype('int64')"."""
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*32 - 1\]"):
        seed_everything(seed)


def test_seed_everything_still_seeds():
    seed_everything(3)
    a = torch.rand(2)
    seed_everything(3)
    torch.testing.assert_close(torch.rand(2), a)


def test_fit_names_data_and_config_of_the_wrong_type():
    """A list as train or a dict as config raised AttributeError ('list' object has no attribute 'labels')."""
    with pytest.raises(TypeError, match=r"train must be an EncodedTexts .*got list"):
        fit(_qpdn(), [([2], 0)], DEV, CONFIG)
    with pytest.raises(TypeError, match=r"dev must be an EncodedTexts .*got tuple"):
        fit(_qpdn(), TRAIN, (), CONFIG)
    with pytest.raises(TypeError, match=r"config must be a TrainConfig .*got dict"):
        fit(_qpdn(), TRAIN, DEV, {"epochs": 1})


def test_accuracy_refuses_nan_logits_instead_of_counting_argmax_of_nan():
    """torch.argmax takes a NaN for the largest value: a model whose classifier is NaN predicted class 0 for
    every text and scored the share of class 0 (0.5 here) as its accuracy; a NaN in one text's logits counted
    that text right or wrong by where the NaN stood."""
    model = _qpdn()
    with torch.no_grad():
        model.classifier.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match=r"NaN logits for 2 of 2 texts \(first: text 0\)"):
        accuracy(model, DEV)
    model = _qpdn()
    with torch.no_grad():
        model.classifier.bias[1] = float("-inf")            # -inf is a logit (a zero probability): no error
    assert accuracy(model, DEV) == 0.5
