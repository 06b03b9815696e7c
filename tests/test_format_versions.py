"""A file of a later format version (a newer qpnlp's) is refused alike by models, vocabularies, training states
(and their run files) and Word2Fun runs: the error names the format and says to upgrade; the training state records
the qpnlp that wrote it."""

import json

import pytest
import torch

from qpnlp import __version__
from qpnlp.models import QPDN, QPDNConfig, read_model_header
from qpnlp.training.state import JSON_FILE, load_training_state, save_training_state
from qpnlp.word2fun import _run_state

NEWER = f"written by a newer qpnlp than this one, {__version__}: upgrade qpnlp to read it"


def _rewritten(path, **fields):
    (path).write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def test_a_model_of_a_newer_format_says_so(tmp_path):
    # "is not a qpnlp-model/1 model config (format 'qpnlp-model/2')": as if it were not a qpnlp model at all
    QPDN(QPDNConfig(num_words=10, num_classes=2, dim=4, num_measurements=2)).save_pretrained(tmp_path / "m")
    _rewritten(tmp_path / "m" / "config.json", format="qpnlp-model/2")
    with pytest.raises(ValueError, match=r"model config \(format 'qpnlp-model/2'\) \(" + NEWER):
        read_model_header(tmp_path / "m")


def test_a_training_state_records_its_qpnlp_and_one_of_a_newer_format_says_so(tmp_path):
    # "... is not a qpnlp training state": a newer qpnlp's state, named as nothing of qpnlp's
    model, identity = torch.nn.Linear(2, 2), dict(model="m", model_config=None, settings={}, data="d")
    save_training_state(tmp_path, model=model, best_state=None, optimisers=[], progress=dict(epoch=1),
                        identity=identity)
    assert json.loads((tmp_path / JSON_FILE).read_text())["qpnlp_version"] == __version__
    _rewritten(tmp_path / JSON_FILE, format="qpnlp-training-state/3")
    with pytest.raises(ValueError, match=r"format 'qpnlp-training-state/3', expected 'qpnlp-training-state/2'\) \("
                                         + NEWER):
        load_training_state(tmp_path, model=model, optimisers=[], identity=identity)
    _rewritten(tmp_path / JSON_FILE, format="other/9")
    with pytest.raises(ValueError, match=r"format 'other/9', expected 'qpnlp-training-state/2'\)$"):
        load_training_state(tmp_path, model=model, optimisers=[], identity=identity)


def test_the_generator_states_of_a_newer_word2fun_run_say_so(tmp_path):
    (tmp_path / _run_state.RNG_FILE).write_text(json.dumps({"format": "qpnlp-word2fun-rng/2", "processes": []}))
    with pytest.raises(ValueError, match=r"is not a qpnlp-word2fun-rng/1 file .*'processes'\) \(" + NEWER):
        _run_state.saved_rng(tmp_path, {}, 0)


def test_the_run_file_of_a_newer_training_state_says_so_before_its_options_are_taken(tmp_path):
    # its options were taken as this qpnlp's (a newer one may have renamed or redefined them)
    import argparse

    from qpnlp.commands._errors import UsageError
    from qpnlp.commands._outputs import RUN_FILE, RUN_FORMAT, saved_run_file

    args = argparse.Namespace(resume=True, checkpoint_dir=str(tmp_path))
    (tmp_path / RUN_FILE).write_text(json.dumps({"format": RUN_FORMAT, "arguments": {"lr": 0.1}}))
    assert saved_run_file(args)["arguments"] == {"lr": 0.1}
    _rewritten(tmp_path / RUN_FILE, format="qpnlp-training-run/2")
    with pytest.raises(UsageError, match=r"is not a qpnlp-training-run/1 file \(format 'qpnlp-training-run/2'\) \("
                                         + NEWER):
        saved_run_file(args)


def test_a_vocabulary_of_a_newer_format_says_so():
    # "not a serialised Vocabulary: format is 'qpnlp.Vocabulary/2'": as if it were no vocabulary of qpnlp's
    from qpnlp.data import Vocabulary

    data = {**Vocabulary.build([["a", "b"]]).to_dict(), "format": "qpnlp.Vocabulary/2"}
    with pytest.raises(ValueError, match=r"format is 'qpnlp.Vocabulary/2', expected 'qpnlp.Vocabulary/1' \(" + NEWER):
        Vocabulary.from_dict(data)
