"""Word importance from the learned mixture weights (trainable, amplitude norm, IDF)."""

from __future__ import annotations

import math

import pytest
import torch

from qpnlp.interpret import importance_table, word_importance, word_scores
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.models import CNM, CNMConfig, CNMReal, CNMRealConfig
from qpnlp.nn import WordWeighting

WORDS = ["<pad>", "<unk>", "great", "the", "a", "boring"]


def _qpdn(weighting="trainable", **kw):
    return QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=2, weighting=weighting), **kw)


def test_trainable_scores_rank_words_and_give_the_mixture_weight_ratio():
    model = _qpdn()
    with torch.no_grad():
        model.weighting.table.weight[:, 0] = torch.tensor([0.0, 5.0, 2.0, -1.0, 0.0, 1.0])
    table = importance_table(model, WORDS)
    assert table["word"].tolist() == ["great", "boring", "a", "the"]                  # <pad>, <unk> excluded
    # relative_weight = exp(s - median); median of (2, 1, 0, -1) = 0 (torch takes the lower middle value)
    assert table["relative_weight"].tolist() == pytest.approx([math.e ** 2, math.e, 1.0, math.e ** -1])
    # ... and it is the ratio of the mixture weights of two words in one sentence
    ids = torch.tensor([[2, 4]])
    with torch.no_grad():
        _, weights = model.mixture(ids, torch.ones_like(ids, dtype=torch.bool))
    assert float(weights[0, 0] / weights[0, 1]) == pytest.approx(table["relative_weight"][0] /
                                                                 table["relative_weight"][2], rel=1e-5)
    lists = word_importance(model.weighting, torch.arange(2, 6), torch.ones(4), WORDS[2:], top=2)
    assert lists == {"most": [("great", 2.0), ("boring", 1.0)], "least": [("the", -1.0), ("a", 0.0)]}


def test_idf_and_amplitude_norm_schemes():
    idf = torch.tensor([1.0, 1.0, 4.0, 0.5, 1.0, 2.0])
    table = importance_table(_qpdn("idf", idf=idf), WORDS)
    assert table["word"].tolist() == ["great", "boring", "a", "the"]
    assert table["relative_weight"].tolist() == pytest.approx([4.0, 2.0, 1.0, 0.5])      # idf / median idf
    pretrained = torch.tensor([[0, 0, 0], [1, 0, 0], [3, 0, 0], [0.5, 0, 0], [1, 1, 0], [0, 2, 0]], dtype=torch.float)
    model = _qpdn("amplitude_norm", pretrained=pretrained)
    torch.testing.assert_close(word_scores(model), pretrained.norm(dim=-1))
    assert importance_table(model, WORDS)["word"].tolist() == ["great", "boring", "a", "the"]


def test_cnm_and_counts():
    model = CNM(CNMConfig(num_words=6, dim=3, num_measurements=2, weighting="trainable"))
    with torch.no_grad():
        model.weighting.table.weight[:, 0] = torch.tensor([0.0, 0.0, 1.0, 2.0, 3.0, 4.0])
    table = importance_table(model, WORDS, counts=[0, 0, 10, 1, 10, 10], min_count=5)
    assert table["word"].tolist() == ["boring", "a", "great"] and table["count"].tolist() == [10, 10, 10]
    real = CNMReal(CNMRealConfig(num_words=6, dim=3, num_measurements=2))
    torch.testing.assert_close(word_scores(real), real.real_embedding.weight.detach().norm(dim=-1))


def test_errors():
    with pytest.raises(ValueError, match="uniform"):
        importance_table(_qpdn("uniform"), WORDS)
    with pytest.raises(TypeError, match="WordWeighting"):
        word_importance(torch.nn.Linear(1, 1), torch.tensor([2]), torch.ones(1), ["a"])
    weighting = WordWeighting(6, "trainable")
    with pytest.raises(ValueError, match="empty"):
        word_importance(weighting, torch.tensor([], dtype=torch.long), torch.ones(0), [])
    with pytest.raises(ValueError, match="got 1 words for 2"):
        word_importance(weighting, torch.tensor([2, 3]), torch.ones(2), ["a"])
    with pytest.raises(ValueError, match="norms"):
        word_importance(weighting, torch.tensor([2, 3]), torch.ones(3), ["a", "b"])
    with pytest.raises(ValueError, match="top"):
        word_importance(weighting, torch.tensor([2, 3]), torch.ones(2), ["a", "b"], top=0)
    with pytest.raises(ValueError, match="words"):
        importance_table(_qpdn(), WORDS[:3])
    with pytest.raises(ValueError, match="no word left"):
        importance_table(_qpdn(), WORDS, counts=[0] * 6, min_count=1)
    model = _qpdn()
    with torch.no_grad():
        model.weighting.table.weight[3, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        importance_table(model, WORDS)


def test_exclude_ids_outside_the_vocabulary_are_named():
    with pytest.raises(ValueError, match=r"exclude_ids must be word ids in \[0, 6\) .*; got \[7, -1\]"):
        importance_table(_qpdn(), WORDS, exclude_ids=(0, 7, -1))
    with pytest.raises(ValueError, match="no word left"):
        importance_table(_qpdn(), WORDS, exclude_ids=range(6))
    assert importance_table(_qpdn(), WORDS, exclude_ids=(0, 1, 5))["id"].tolist() == [2, 3, 4]


def test_nan_counts_are_an_error_not_a_filter():
    model = _qpdn()
    with pytest.raises(ValueError, match="counts contains NaN"):
        importance_table(model, WORDS, counts=[5, 5, float("nan"), 5, 5, 5])


def test_equal_scores_are_listed_in_the_order_of_ids_in_both_lists():
    # ``least`` was the descending order reversed, so that equal scores came in reverse order there
    w = WordWeighting(6, "idf", idf=torch.tensor([1.0, 1.0, 2.0, 3.0, 2.0, 3.0]))
    ranked = word_importance(w, torch.tensor([2, 3, 4, 5]), torch.ones(4), ["a", "b", "c", "d"], top=4)
    assert [word for word, _ in ranked["most"]] == ["b", "d", "a", "c"]
    assert [word for word, _ in ranked["least"]] == ["a", "c", "b", "d"]


def test_a_double_models_scores_are_ranked_in_float64():
    """importance_table and word_importance rounded the scores to float32: scores 1e-9 apart tied, and the
    table kept vocabulary order instead of the scores' order."""
    model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=2, weighting="trainable",
                            complex128=True))
    with torch.no_grad():
        model.weighting.table.weight[2:, 0] = 1.0 + torch.tensor([1.0, 3.0, 2.0, 0.0], dtype=torch.float64) * 1e-9
    table = importance_table(model, WORDS)
    assert table["word"].tolist() == ["the", "a", "great", "boring"]
    assert table["score"].iloc[0] == 1.0 + 3e-9
    ranked = word_importance(model.weighting, torch.tensor([2, 3, 4, 5]), torch.ones(4, dtype=torch.float64),
                             WORDS[2:], top=1)
    assert ranked == {"most": [("the", 1.0)], "least": [("boring", 1.0)]}
