"""A resumed Word2Fun run continues the saved run only: another corpus, model or setting is refused."""

import json

import pytest

from qpnlp.data import TimestampedCorpus
from qpnlp.models.base import CONFIG_FILE, read_model_header
from qpnlp.word2fun import TrainConfig, fit

DOCS = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(60)]
MODEL = dict(dim=4, min_count=1)


@pytest.fixture
def saved(tmp_path):
    """A checkpoint of one epoch of a run on DOCS."""
    config = TrainConfig(epochs=1, batch_size=256, sample=0)
    fit(TimestampedCorpus.from_pairs(DOCS), config, **MODEL, checkpoint=tmp_path / "ck")
    return tmp_path / "ck"


def _resume(checkpoint, docs=DOCS, config=TrainConfig(epochs=2, batch_size=256, sample=0), **options):
    return fit(TimestampedCorpus.from_pairs(docs), config, **{**MODEL, **options}, checkpoint=checkpoint, resume=True)


@pytest.mark.parametrize("options, named", [
    (dict(dim=8), r"the model: dim \(4 there, 8 here\)"),
    (dict(family="linear"), r"the model: family \('IV' there, 'linear' here\), logistic \(True there, False here\)"),
    (dict(time_scale=10.0), r"the model: time_scale \(30.0 there, 10.0 here\)"),
    (dict(config=TrainConfig(epochs=2, batch_size=256, sample=0, lr=0.05)), r"settings: lr \(0.01 there, 0.05"),
    (dict(config=TrainConfig(epochs=2, batch_size=512, sample=0)), r"settings: batch_size \(256 there, 512"),
    (dict(docs=[(t - 2400, words) for t, words in DOCS]), r"the corpus: span \(\[1900.0, 1909.0\] there, "
                                                         r"\[-500.0, -491.0\] here\)"),
    (dict(docs=DOCS[:50]), r"the corpus: documents \(60 there, 50 here\), tokens"),
    (dict(step_centres="middle"), r"the run: step_centres \('changepoint' there, 'middle' here\)"),
])
def test_a_resumed_run_with_another_corpus_model_or_setting_is_refused_before_training(saved, options, named):
    # these resumed silently: the saved model went on training, on a corpus outside its span or with other settings
    with pytest.raises(ValueError, match="cannot resume the Word2Fun run saved at .*" + named):
        _resume(saved, **options)
    assert read_model_header(saved)["metadata"]["epochs_done"] == 1      # nothing was trained or saved


def test_how_long_where_and_in_how_many_workers_a_run_trains_may_change(saved):
    config = TrainConfig(epochs=3, batch_size=256, sample=0, workers=2, chunk_tokens=1000, sync_every=64)
    assert _resume(saved, config=config).epochs_done == 3


def test_a_checkpoint_of_an_earlier_version_is_compared_on_what_it_records(saved):
    # written before the step centres and some training settings were recorded: those are not compared
    header = json.loads((saved / CONFIG_FILE).read_text())
    del header["metadata"]["step_centres"], header["metadata"]["training"]["negative_weight"]
    (saved / CONFIG_FILE).write_text(json.dumps(header))
    config = TrainConfig(epochs=2, batch_size=256, sample=0, negative_weight=2.0)
    assert _resume(saved, config=config).epochs_done == 2


def test_a_run_that_trained_more_epochs_than_asked_is_refused(saved):
    # resumed with epochs=1, a run of 2 epochs was returned as it was (epochs_done 2), as if it were a 1-epoch run
    _resume(saved)
    with pytest.raises(ValueError, match="already trained 2 epochs, more than epochs=1"):
        _resume(saved, config=TrainConfig(epochs=1, batch_size=256, sample=0))
    assert read_model_header(saved)["metadata"]["epochs_done"] == 2
    assert _resume(saved).epochs_done == 2                               # the same epochs: the run as it is

