"""Call-order misuse of Word2Fun's training, as a notebook makes it.

Each test failed before its fix: a ``TrainConfig`` field set after the config was made (``lr = -1``,
``workers = 0``) trained unchecked whenever no default was left to resolve, and a table frozen the torch way
(``requires_grad_(False)``) went on training, as the hand-written SGD step reads no ``requires_grad``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus, Vocabulary
from qpnlp.word2fun import TrainConfig, fit, train_word2fun

DOCS = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(60)]


@pytest.mark.parametrize("field, value", [("lr", -1.0), ("workers", 0), ("chunk_tokens", 0)])
def test_fit_checks_a_config_changed_after_it_was_made(field, value):
    config = TrainConfig(epochs=1, batch_size=256, roughness_penalty=0.0)     # no default left to resolve
    setattr(config, field, value)
    with pytest.raises(ValueError, match=rf"must be positive and finite: \{{'{field}'"):
        fit(TimestampedCorpus.from_pairs(DOCS), config, dim=4, min_count=1, family="linear", logistic=False)


def test_the_result_holds_a_copy_of_the_config():
    config = TrainConfig(epochs=1, batch_size=256, roughness_penalty=0.0)
    result = fit(TimestampedCorpus.from_pairs(DOCS), config, dim=4, min_count=1, family="linear", logistic=False)
    config.epochs = 5
    assert result.config is not config and result.config.epochs == 1


def _encoded(vocab: Vocabulary):
    tokens = np.array([vocab.index[w] for _, doc in DOCS for w in doc])
    doc_ids = np.repeat(np.arange(len(DOCS)), [len(doc) for _, doc in DOCS])
    return tokens, doc_ids, np.array([t for t, _ in DOCS], float), vocab.counts


def test_a_table_frozen_with_requires_grad_is_refused_not_trained(make):
    vocab = Vocabulary.build([doc for _, doc in DOCS], specials=False)
    config = TrainConfig(epochs=1, batch_size=256, roughness_penalty=0.0)
    model = make(len(vocab), 4, family="linear")
    model.compass.weight.requires_grad_(False)
    before = model.compass.weight.detach().clone()
    with pytest.raises(ValueError, match=r"the compass has requires_grad=False.*set_compass\(.*freeze=True\)"):
        train_word2fun(model, *_encoded(vocab), config)
    assert torch.equal(model.compass.weight.detach(), before)
    model.base.weight.requires_grad_(False)
    with pytest.raises(ValueError, match=r"parameter base.weight has requires_grad=False"):
        train_word2fun(model, *_encoded(vocab), config)
    model.base.weight.requires_grad_(True)
    model.set_compass(before, freeze=True)                 # the way that the step and the config both know
    train_word2fun(model, *_encoded(vocab), config)
    assert torch.equal(model.compass.weight.detach(), before)


@pytest.mark.parametrize("compass", ["trainable", "frozen"])
def test_fit_checks_and_copies_its_config_once(monkeypatch, compass):
    """``fit`` checked its config (``checked_copy``) and handed the copy to ``train_source``, which checked and
    copied it again (twice more with a frozen compass's pre-training)."""
    from qpnlp import _checks
    from qpnlp.word2fun import loop, train

    seen = []

    def counting(config):
        seen.append(config)
        return _checks.checked_copy(config)

    for module in (train, loop):
        monkeypatch.setattr(module, "checked_copy", counting)
    config = TrainConfig(epochs=1, batch_size=256)
    fit(TimestampedCorpus.from_pairs(DOCS), config, dim=4, min_count=1, compass=compass, compass_epochs=1)
    assert seen == [config] and seen[0] is config


@pytest.mark.parametrize("field, value", [("lr", -1.0), ("workers", 0)])
def test_the_loop_entered_directly_checks_a_config_changed_after_it_was_made(make, field, value):
    from qpnlp.word2fun.loop import train_source
    from qpnlp.word2fun.sources import ArraySource

    vocab = Vocabulary.build([doc for _, doc in DOCS], specials=False)
    tokens, doc_ids, times, counts = _encoded(vocab)
    config = TrainConfig(epochs=1, batch_size=256, roughness_penalty=0.0)
    setattr(config, field, value)
    for train in (lambda: train_source(make(len(vocab), 4, family="linear"), ArraySource(tokens, doc_ids, times),
                                       counts, config),
                  lambda: train_word2fun(make(len(vocab), 4, family="linear"), tokens, doc_ids, times, counts, config)):
        with pytest.raises(ValueError, match=rf"must be positive and finite: \{{'{field}'"):
            train()
