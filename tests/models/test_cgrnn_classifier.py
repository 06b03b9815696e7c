"""CGRNNClassifier: the checks on its inputs."""

from __future__ import annotations

import pytest
import torch

from qpnlp.models import CGRNNClassifier, CGRNNClassifierConfig


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_cgrnn_classifier_checks_its_pretrained_vectors(value):
    config = CGRNNClassifierConfig(num_words=30, num_classes=2, dim=8, hidden=4)
    with pytest.raises(ValueError, match=r"pretrained must have shape \(30, 8\); got \(8,\)"):
        CGRNNClassifier(config, pretrained=torch.randn(8))
    bad = torch.randn(30, 8)
    bad[3, 1] = value
    with pytest.raises(ValueError, match="NaN or inf"):         # as RealBagOfWords and the complex tables
        CGRNNClassifier(config, pretrained=bad)
    good = torch.randn(30, 8)
    model = CGRNNClassifier(config, pretrained=good)
    torch.testing.assert_close(model.embedding.weight[1:], good[1:])
    assert not model.embedding.weight[0].any()                      # the padding row
