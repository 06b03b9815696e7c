"""The dropout of every model config goes through the library's one check, :func:`qpnlp.nn._checks.check_dropout`."""

from __future__ import annotations

import math

import pytest

from qpnlp.models.cgrnn_classifier import CGRNNClassifierConfig
from qpnlp.models.cnm import CNMConfig
from qpnlp.models.fasttext_maxpool import FastTextMaxPoolConfig
from qpnlp.models.order_classifier import OrderClassifierConfig
from qpnlp.models.qpdn import QPDNConfig
from qpnlp.models.real_bow import RealBagOfWordsConfig
from qpnlp.nn._checks import check_dropout

CONFIGS = {
    "cgrnn_classifier": lambda p: CGRNNClassifierConfig(num_words=10, num_classes=2, dropout=p),
    "cnm": lambda p: CNMConfig(num_words=10, dropout=p),
    "fasttext_maxpool": lambda p: FastTextMaxPoolConfig(num_words=10, dropout=p),
    "order_classifier": lambda p: OrderClassifierConfig(num_words=10, num_classes=2, dropout=p),
    "qpdn": lambda p: QPDNConfig(num_words=10, num_classes=2, dropout=p),
    "real_bow": lambda p: RealBagOfWordsConfig(num_words=10, num_classes=2, dropout=p),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("p", [-0.1, 1.0, 1, 1.5])
def test_an_out_of_range_dropout_is_refused_with_the_message_of_check_dropout(name, p):
    # before: each config wrote its own "dropout must be in [0, 1)"; now one message for the layers and the configs
    with pytest.raises(ValueError) as expected:
        check_dropout("dropout", p)
    with pytest.raises(ValueError) as got:
        CONFIGS[name](p)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("p", [True, "0.1", math.nan, math.inf, None])
def test_a_dropout_that_is_no_finite_number_is_refused_naming_dropout(name, p):
    with pytest.raises((ValueError, TypeError), match=r"\bdropout must be"):
        CONFIGS[name](p)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("p", [0, 0.0, 0.5, 0.999])
def test_a_dropout_in_range_is_kept(name, p):
    assert CONFIGS[name](p).dropout == p
