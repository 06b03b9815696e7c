"""A model keeps a checked copy of its config (``Model.__init__``).

It kept the caller's object: changing a field to build the next model of a notebook changed the first model's
config too, so its ``save_pretrained`` wrote the other settings and the reloaded model predicted otherwise, and a
field set to a bad value after the config was made reached the layers unchecked.
"""

from __future__ import annotations

import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import CNM, CNMConfig, Model, RealBagOfWords, RealBagOfWordsConfig
from qpnlp.training import predict

DATA = EncodedTexts([[2, 3, 4], [5, 6], [7, 8, 9, 2]], [0, 1, 0])


def test_changing_the_config_after_building_leaves_the_model_and_its_save_alone(tmp_path):
    config = RealBagOfWordsConfig(num_words=10, num_classes=2, dim=4)
    first = RealBagOfWords(config, generator=torch.Generator().manual_seed(0))
    config.weighting = "uniform"                          # the next model of the notebook
    second = RealBagOfWords(config, generator=torch.Generator().manual_seed(1))
    assert first.config.weighting == "amplitude_norm" and second.config.weighting == "uniform"
    first.save_pretrained(tmp_path / "first")
    again = Model.from_pretrained(tmp_path / "first")
    assert again.config == first.config
    torch.testing.assert_close(predict(again, DATA), predict(first, DATA), rtol=0, atol=0)


def test_a_list_in_the_config_is_copied_too():
    config = CNMConfig(num_words=10, dim=4)
    model = CNM(config)
    config.windows.append(9)
    assert model.config.windows == [1, 2, 3, 4]


def test_a_field_set_after_the_config_was_made_is_checked_when_the_model_is_built():
    config = RealBagOfWordsConfig(num_words=10, num_classes=2, dim=4)
    config.dropout = 1.5
    with pytest.raises(ValueError, match=r"dropout must be a dropout probability in \[0, 1\); got 1.5"):
        RealBagOfWords(config)
