"""A resumed Word2Fun run continues the saved run only: another corpus, model or setting is refused."""

import json
import os
import shutil
import sys
import warnings

import pytest
import torch

from qpnlp._atomic import atomic_directory
from qpnlp.data import TimestampedCorpus, Vocabulary
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
    # these resumed silently with the checkpoint's vocabulary: min_count and vocabulary were not compared, and a
    # corpus of other words (same documents, tokens and span) passed
    (dict(min_count=2), r"the run: min_count \(1 there, 2 here\) \(only"),        # the same words: named anyway
    (dict(min_count=25), r"the run: min_count \(1 there, 25 here\); the vocabulary: size \(5 there, 4 here\), "
                         r"words only there \('war'\)"),
    (dict(vocabulary=Vocabulary.build([["war", "peace", "peace"]], specials=False)),
     r"the vocabulary: size \(5 there, 2 here\), words only there \('army', 'trade', 'treaty'\), counts of "
     r"'peace' \(40 there, 2 here\), 'war' \(20 there, 1 here\)"),
    (dict(docs=[(t, ["row" if w == "war" else w for w in words]) for t, words in DOCS]),
     r"the vocabulary: words only there \('war'\), words only here \('row'\)"),
    (dict(docs=[(t, [{"war": "peace", "peace": "war"}.get(w, w) for w in words]) for t, words in DOCS]),
     r"the vocabulary: counts of 'peace' \(40 there, 20 here\), 'war' \(20 there, 40 here\)"),
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
    del header["metadata"]["min_count"]
    (saved / CONFIG_FILE).write_text(json.dumps(header))
    config = TrainConfig(epochs=2, batch_size=256, sample=0, negative_weight=2.0)
    with pytest.warns(UserWarning, match=r"does not record the settings negative_weight .* negative_weight 2.0 \(the "
                                         r"run: 1.0\)"):
        assert _resume(saved, config=config, min_count=2).epochs_done == 2     # the same vocabulary


#: The training settings a checkpoint of qpnlp before 2026-11-24 (080337a) records: those of its TrainConfig.
FIRST_RECORDED = ("epochs", "batch_size", "lr", "negatives", "shared_negatives", "window", "sample", "seed",
                  "chunk_tokens", "device", "workers", "roughness_penalty")


def _written_before_the_settings_existed(saved) -> None:
    header = json.loads((saved / CONFIG_FILE).read_text())
    training = header["metadata"]["training"]
    header["metadata"]["training"] = {k: training[k] for k in FIRST_RECORDED}
    (saved / CONFIG_FILE).write_text(json.dumps(header))


def test_a_checkpoint_written_before_settings_existed_says_once_what_the_resume_trains_with(saved):
    # it resumed with today's negative_weight 5, rare_lr_power 0.5, ... where the run trained with the thesis loss
    # and no per-word factors, and nothing said so
    _written_before_the_settings_existed(saved)
    with pytest.warns(UserWarning) as seen:
        result = _resume(saved)
    [said] = [str(w.message) for w in seen if "does not record" in str(w.message)]
    assert said.startswith(f"the Word2Fun run saved at {saved} does not record the settings roughness_power, "
                           "frequency_reference, rare_lr_power, rare_lr_max, negative_weight, step_centre_lr (an "
                           "earlier qpnlp wrote it, before they existed); the resumed epochs train with "
                           "roughness_power 0.5 (the run: 0.0), frequency_reference 4000.0, rare_lr_power 0.5 (the "
                           "run: 0.0), rare_lr_max 4.0, negative_weight 5.0 (the run: 1.0), step_centre_lr 0.01 (the "
                           "run: 0.03): pass the run's values"), said
    assert result.warnings == [said]
    assert set(read_model_header(saved)["metadata"]["training"]) > set(FIRST_RECORDED)     # recorded now: once
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _resume(saved, config=TrainConfig(epochs=3, batch_size=256, sample=0))


def test_a_checkpoint_written_before_settings_existed_resumed_as_it_trained_says_nothing(saved):
    _written_before_the_settings_existed(saved)
    as_before = TrainConfig(epochs=2, batch_size=256, sample=0, roughness_power=0.0, rare_lr_power=0.0,
                            rare_lr_max=2.0, negative_weight=1.0, step_centre_lr=0.03)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _resume(saved, config=TrainConfig(epochs=1, batch_size=256, sample=0)).warnings == []  # none trains
        assert _resume(saved, config=as_before).warnings == []


def test_a_checkpoint_of_an_earlier_version_resumed_with_another_min_count_says_it_may_be_the_cause(saved):
    # it resumed with the checkpoint's vocabulary whatever --min-count said; now the vocabulary is compared, and
    # the refusal named its words only, not the min_count (not recorded) that made them differ
    header = json.loads((saved / CONFIG_FILE).read_text())
    del header["metadata"]["min_count"]
    (saved / CONFIG_FILE).write_text(json.dumps(header))
    with pytest.raises(ValueError, match=r"the vocabulary: size \(5 there, 4 here\), words only there \('war'\) "
                                         r"\(built here with min_count 25; the checkpoint, of an earlier qpnlp, "
                                         r"does not record the run's min_count"):
        _resume(saved, min_count=25)


def test_a_run_that_trained_more_epochs_than_asked_is_refused(saved):
    # resumed with epochs=1, a run of 2 epochs was returned as it was (epochs_done 2), as if it were a 1-epoch run
    _resume(saved)
    with pytest.raises(ValueError, match="already trained 2 epochs, more than epochs=1"):
        _resume(saved, config=TrainConfig(epochs=1, batch_size=256, sample=0))
    assert read_model_header(saved)["metadata"]["epochs_done"] == 2
    assert _resume(saved).epochs_done == 2                               # the same epochs: the run as it is



def test_a_run_given_the_vocabulary_min_count_builds_resumes_without_it(tmp_path):
    # the command line gives fit the vocabulary it checked --words with and resumes without one
    given = Vocabulary.build([words for _, words in DOCS], min_freq=1, specials=False)
    config = TrainConfig(epochs=1, batch_size=256, sample=0)
    fit(TimestampedCorpus.from_pairs(DOCS), config, **MODEL, vocabulary=given, checkpoint=tmp_path / "ck")
    assert _resume(tmp_path / "ck").epochs_done == 2
    # beside a given vocabulary min_count does nothing: not compared, the vocabulary is
    config = TrainConfig(epochs=3, batch_size=256, sample=0)
    assert _resume(tmp_path / "ck", config=config, vocabulary=given, min_count=7).epochs_done == 3


def _killed_while_replacing(checkpoint, monkeypatch) -> None:
    """Leave ``checkpoint`` as a process killed between the two renames of its replacement leaves it: missing,
    its last version aside in ``.NAME.*.old/NAME`` (here the second rename and the undo fail)."""
    rename, calls = os.rename, []

    def only_the_first(src, dst):
        calls.append(src)
        if len(calls) > 1:
            raise OSError("killed")
        rename(src, dst)

    with monkeypatch.context() as patch:
        patch.setattr(os, "rename", only_the_first)
        with pytest.raises(OSError, match="killed"), atomic_directory(checkpoint, replaces=CONFIG_FILE) as tmp:
            (tmp / CONFIG_FILE).write_text("{}")


def test_a_checkpoint_left_aside_by_a_process_killed_while_replacing_it_is_resumed(saved, monkeypatch, capsys):
    # --out was missing, the last checkpoint in .ck.*.old/ck, and the resumed run started afresh without a word
    losses = read_model_header(saved)["metadata"]["epoch_loss"]
    _killed_while_replacing(saved, monkeypatch)
    assert not saved.exists() and len(list(saved.parent.glob(".ck.*.old/ck"))) == 1
    result = _resume(saved, log=sys.stderr)
    assert result.stats.epoch_loss[:1] == losses                          # continued from its epoch
    assert f"{saved}: put back the checkpoint of the last epoch saved" in capsys.readouterr().err
    assert [p.name for p in saved.parent.iterdir()] == ["ck"]               # nothing left aside
    assert read_model_header(saved)["metadata"]["epochs_done"] == 2


def test_several_checkpoints_left_aside_are_refused_naming_them(saved, monkeypatch):
    _killed_while_replacing(saved, monkeypatch)
    left = next(saved.parent.glob(".ck.*.old"))
    shutil.copytree(left, saved.parent / ".ck.earlier0.old")
    with pytest.raises(FileExistsError, match=f"{saved} is missing and 2 earlier versions of it were left aside .*"
                                              f"ck.earlier0.old/ck"):
        _resume(saved)
    assert not saved.exists() and len(list(saved.parent.glob(".ck.*.old/ck"))) == 2    # nothing moved


def _same_parameters(a, b) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.vectors.model.parameters(), b.vectors.model.parameters()))


@pytest.mark.parametrize("module, default, value", [
    ("qpnlp.word2fun.config", "DEFAULT_ROUGHNESS_PENALTY", 0.5),                  # families II-IV, logistic step
    ("qpnlp.word2fun.train", "STEP_CENTRE_LR_AT_CHANGE_POINTS", 0.7),            # steps at their change points
])
def test_a_run_resumed_after_a_default_changed_continues_with_its_own(saved, monkeypatch, module, default, value):
    # roughness_penalty=None was recorded as None and the resumed epochs silently took the new default; the step
    # centres' rate, recorded resolved, was refused (a setting the command line has no option for)
    shutil.copytree(saved, saved.parent / "copy")
    before = _resume(saved.parent / "copy")                                        # resumed under the old default
    recorded = read_model_header(saved)["metadata"]["training"]
    assert recorded["roughness_penalty"] == 1e-4 and recorded["step_centre_lr"] is not None     # resolved
    monkeypatch.setattr(f"{module}.{default}", value)
    resumed = _resume(saved)
    assert _same_parameters(resumed, before)
    assert resumed.config.roughness_penalty == 1e-4 and resumed.config.step_centre_lr == recorded["step_centre_lr"]


def test_a_run_resumed_with_another_roughness_penalty_than_its_default_is_refused(saved):
    with pytest.raises(ValueError, match=r"the training settings: roughness_penalty \(0.0001 there, 0.3 here\)"):
        _resume(saved, config=TrainConfig(epochs=2, batch_size=256, sample=0, roughness_penalty=0.3))


def test_a_checkpoint_that_recorded_the_defaults_unresolved_resumes_with_todays(saved):
    # an earlier qpnlp recorded roughness_penalty None (and step_centre_lr None for mid-span steps)
    header = json.loads((saved / CONFIG_FILE).read_text())
    header["metadata"]["training"].update(roughness_penalty=None, step_centre_lr=None)
    (saved / CONFIG_FILE).write_text(json.dumps(header))
    resumed = _resume(saved)
    assert resumed.config.roughness_penalty == 1e-4 and resumed.config.step_centre_lr is not None
    assert read_model_header(saved)["metadata"]["training"]["roughness_penalty"] == 1e-4
