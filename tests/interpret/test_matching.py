"""CNM matching patterns: contributions per (window, measurement), pooled windows, word attributions."""

from __future__ import annotations

import math

import pytest
import torch

from qpnlp.data import Vocabulary
from qpnlp.interpret import MatchingPatterns, matching_patterns
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.models.cnm import CNM, CNMConfig


@pytest.fixture
def toy():
    """cat = |e0>, dog = |e1>; measurements e0, e1; uniform weights; windows 1 and 2."""
    vocab = Vocabulary.build([["cat", "dog"]])
    assert vocab.encode(["cat", "dog"]) == [2, 3]
    model = CNM(CNMConfig(num_words=len(vocab), dim=2, num_measurements=2, windows=[1, 2], weighting="uniform",
                          measurement_init="identity", phase_init="zero", dropout=0.0))
    with torch.no_grad():
        model.embedding.amplitude.weight[2] = torch.tensor([1.0, 0.0])
        model.embedding.amplitude.weight[3] = torch.tensor([0.0, 1.0])
    return model, vocab


def test_hand_made_pair(toy):
    model, vocab = toy
    patterns = matching_patterns(model, ["cat", "cat"], ["dog", "cat"], vocab)
    # x_q = [1, 0 | 1, 0], x_a = [1, 1 | 1, 0.5]  ->  score = 2 / (sqrt 2 sqrt 3.25)
    denominator = math.sqrt(2) * math.sqrt(3.25)
    assert patterns.score == pytest.approx(2 / denominator, rel=1e-6)
    top = patterns.features.head(2)
    assert sorted(top["window"].tolist()) == [1, 2] and top["measurement"].tolist() == [0, 0]
    assert top["contribution"].tolist() == pytest.approx([1 / denominator] * 2, rel=1e-6)
    assert patterns.features["contribution"].iloc[2:].abs().max() < 1e-7
    assert top["answer_window"].tolist() == ["cat", "cat"]                # the window of "cat" wins measurement e0
    # ties in the question: both windows give 1; max pooling takes the first, "cat cat" for l = 2
    assert dict(zip(top["window"], top["question_window"])) == {1: "cat", 2: "cat cat"}
    two = patterns.features[(patterns.features["window"] == 2) & (patterns.features["measurement"] == 1)].iloc[0]
    assert two["answer_window"] == "dog cat" and two["answer_probability"] == pytest.approx(0.5)
    assert two["answer_words"] == [("dog", pytest.approx(0.5), pytest.approx(1.0)),
                                   ("cat", pytest.approx(0.5), pytest.approx(0.0))]
    assert patterns.attributions("answer") == pytest.approx([0.0, 2 / denominator], abs=1e-7)
    assert sum(patterns.attributions("question")) == pytest.approx(patterns.score)


def test_score_is_the_models_score_and_attributions_add_up():
    torch.manual_seed(0)
    model = CNM(CNMConfig(num_words=30, dim=6, num_measurements=5, windows=[1, 2, 3]),
                generator=torch.Generator().manual_seed(1))
    q, a = torch.tensor([2, 5, 7, 9, 11]), torch.tensor([3, 5, 8, 21, 22, 29, 4])
    model.train()
    patterns = matching_patterns(model, q, a)
    assert model.training                                                # restored
    model.eval()
    with torch.no_grad():
        expected = float(model(q[None], torch.ones(1, 5, dtype=torch.bool), a[None],
                               torch.ones(1, 7, dtype=torch.bool)))
    assert patterns.score == pytest.approx(expected, abs=1e-6)
    assert patterns.features["contribution"].sum() == pytest.approx(expected, abs=1e-6)
    assert (patterns.features["contribution"] >= 0).all()
    assert len(patterns.features) == 3 * 5
    for side, n in (("question", 5), ("answer", 7)):
        assert len(patterns.attributions(side)) == n
        assert sum(patterns.attributions(side)) == pytest.approx(expected, abs=1e-5)
    # each pooled window reproduces the pooled probability: sum_j p_j |<v_k|w_j>|^2 = x
    for row in patterns.features.itertuples():
        assert sum(p * prob for _, p, prob in row.question_words) == pytest.approx(row.question_probability, abs=1e-6)
        assert len(row.answer_words) <= row.window



def test_window_padding_both_windows_and_attributions():
    """window_padding="both": window t holds words t-l+1 .. t; the patterns must follow the model's windows."""
    model = CNM(CNMConfig(num_words=30, dim=6, num_measurements=4, windows=[1, 2, 3], window_padding="both"),
                generator=torch.Generator().manual_seed(3))
    q, a = torch.tensor([2, 5, 7, 9]), torch.tensor([3, 8, 21])
    patterns = matching_patterns(model, q, a)
    model.eval()
    with torch.no_grad():
        expected = float(model(q[None], torch.ones(1, 4, dtype=torch.bool), a[None],
                               torch.ones(1, 3, dtype=torch.bool)))
    assert patterns.score == pytest.approx(expected, abs=1e-6)
    for side in ("question", "answer"):
        assert sum(patterns.attributions(side)) == pytest.approx(expected, abs=1e-5)
    for row in patterns.features.itertuples():
        for name in ("question", "answer"):
            members = getattr(row, f"{name}_words")
            assert sum(p for _, p, _ in members) == pytest.approx(1.0, abs=1e-6)
            assert sum(p * prob for _, p, prob in members) == pytest.approx(getattr(row, f"{name}_probability"),
                                                                              abs=1e-6)

def test_renderings(toy):
    model, vocab = toy
    patterns = matching_patterns(model, ["cat", "<b>"], ["dog", "cat"], vocab)
    html = patterns.to_html(top=3)
    assert "&lt;b&gt;" in html and "<b>" not in html.replace("<b>score</b>", "").replace("<b>Q:</b>", "") \
        .replace("<b>A:</b>", "")
    assert 'rgba(255, 140, 0, 1.000)' in html and html.count("<tr>") == 1 + 3
    assert patterns._repr_html_() == patterns.to_html()
    text = patterns.to_text(top=2)
    lines = text.splitlines()
    assert lines[0].startswith("score ") and lines[2] == f"A: dog [cat {patterns.attributions('answer')[1]:.3f}]"
    assert len(lines) == 4 + 2 and str(patterns) == patterns.to_text()
    assert isinstance(patterns, MatchingPatterns)


def test_errors(toy):
    model, vocab = toy
    with pytest.raises(TypeError, match="CNM"):
        matching_patterns(QPDN(QPDNConfig(num_words=4, num_classes=2, dim=2)), ["cat"], ["dog"], vocab)
    for option in (dict(head="trace"), dict(pooling="mean"), dict(mixture="global")):
        other = CNM(CNMConfig(num_words=4, dim=2, num_measurements=2, **option))
        with pytest.raises(ValueError, match="need head='measurement'"):
            matching_patterns(other, ["cat"], ["dog"], vocab)
    with pytest.raises(ValueError, match="question is empty"):
        matching_patterns(model, [], ["dog"], vocab)
    with pytest.raises(TypeError, match="string"):
        matching_patterns(model, "cat", ["dog"], vocab)
    with pytest.raises(ValueError, match="padding id"):
        matching_patterns(model, torch.tensor([2, 0]), torch.tensor([3]))
    with pytest.raises(ValueError, match="vocab="):
        matching_patterns(model, ["cat"], ["dog"])
    with pytest.raises(ValueError, match="1-D LongTensor"):
        matching_patterns(model, torch.tensor([[2]]), torch.tensor([3]))


def test_the_mode_of_each_submodule_is_restored_also_when_scoring_fails(toy):
    """Only ``model.training`` was put back, with ``model.train(flag)``: a dropout the caller had switched off
    (``model.dropout.eval()``) came back in training mode, and dropped words of its next training steps."""
    model, vocab = toy
    model.train()
    model.dropout.eval()
    before = {name: m.training for name, m in model.named_modules()}
    matching_patterns(model, ["cat", "cat"], ["dog", "cat"], vocab)
    assert {name: m.training for name, m in model.named_modules()} == before
    model.embedding.register_forward_pre_hook(lambda m, args: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        matching_patterns(model, ["cat"], ["dog"], vocab)
    assert {name: m.training for name, m in model.named_modules()} == before
