"""A Word2Fun run whose loss grows far above where it started, but stays finite and below the run-away limit of
its parameters, warns (``fit``: RuntimeWarning; ``qpnlp train word2fun``: a stderr line and the report's
``warnings``): at 10 times the default learning rate it ended 5000 times its first epoch's loss with exit code 0 and
a checkpoint, and nothing said so. A normal run does not warn."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from qpnlp.cli import main
from qpnlp.data import TimestampedCorpus, write_tsv
from qpnlp.word2fun import TrainConfig, fit
from qpnlp.word2fun.train import LOSS_GROWTH_LIMIT, loss_growths

WORDS = ["war", "peace", "trade", "army", "navy", "tax", "bank", "union"]


def _corpus() -> TimestampedCorpus:
    """300 documents of 8 tokens of eight words over 20 years (the corpus of test_cli_report)."""
    rng = np.random.default_rng(0)
    return TimestampedCorpus.from_pairs([(1900 + i % 20, list(rng.choice(WORDS, 8))) for i in range(300)])


def _fit(lr: float):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = fit(_corpus(), TrainConfig(lr=lr, epochs=7, batch_size=256, negatives=2), dim=4, min_count=1)
    return result.stats.epoch_loss, [w for w in seen if "mean loss grew" in str(w.message)]


@pytest.mark.parametrize("lr, grows", [(TrainConfig.lr, False), (10 * TrainConfig.lr, True)])
def test_fit_warns_when_the_loss_grows_far_above_its_first_epoch(lr, grows):
    losses, said = _fit(lr)
    assert (losses[-1] > LOSS_GROWTH_LIMIT * losses[0]) is grows, losses
    assert len(said) == int(grows) and all(w.category is RuntimeWarning for w in said)
    if grows:
        assert f"from {losses[0]:.4g} in epoch 1 to {losses[-1]:.4g} in epoch 7" in str(said[0].message)
        assert said[0].filename == __file__               # the caller's line, not qpnlp's


@pytest.mark.parametrize("lr, grows", [(TrainConfig.lr, False), (10 * TrainConfig.lr, True)])
def test_the_command_says_it_and_the_report_keeps_it(tmp_path, capsys, lr, grows):
    corpus, report = tmp_path / "c.tsv", tmp_path / "r.json"
    write_tsv(_corpus(), corpus)
    assert main(["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--epochs", "7", "--batch-size", "256",
                 "--negatives", "2", "--min-count", "1", "--lr", str(lr), "--no-progress",
                 "--report", str(report)]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "mean loss grew" in line]
    data = json.loads(report.read_text())
    if grows:
        [line] = lines
        assert line.startswith("qpnlp train word2fun: warning: Word2Fun's mean loss grew from ")
        assert data["warnings"] == [line.split("warning: ", 1)[1]] and data["status"] == "completed"
    else:
        assert lines == [] and data["warnings"] == []


def test_the_compass_pre_training_is_held_to_the_same_rule_and_named():
    """compass="frozen" first trains a static model, a run of its own with its own losses: at 10 times the default
    learning rate over 7 epochs its loss grew from 4.16 to about 19 000, and only the (then shorter) growth of the
    model's own run was checked, so nothing said so."""
    corpus = _corpus()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = fit(corpus, TrainConfig(lr=10 * TrainConfig.lr, epochs=2, batch_size=256, negatives=2), dim=4,
                     min_count=1, compass="frozen", compass_epochs=7)
    pre = result.compass_stats.epoch_loss
    assert pre[-1] > LOSS_GROWTH_LIMIT * pre[0], pre
    said = [str(w.message) for w in seen if "grew" in str(w.message)]
    assert said[0].startswith("the mean loss of the compass pre-training (compass='frozen', a static model) grew "
                              f"from {pre[0]:.4g} in epoch 1 to {pre[-1]:.4g} in epoch 7"), said
    assert loss_growths(result) == said
    assert result.warnings == said               # what fit said, which qpnlp train word2fun keeps in its report
    calm = fit(corpus, TrainConfig(epochs=2, batch_size=256, negatives=2), dim=4, min_count=1, compass="frozen",
               compass_epochs=7)
    assert loss_growths(calm) == []
