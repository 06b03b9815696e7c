"""Robustness fixes of the models: bad config options, CNM's measurement-only methods, save_pretrained's arguments.

Each test failed before its fix.
"""

from __future__ import annotations

import json

import pytest
import torch

from qpnlp.models import CNM, QPDN, CNMConfig, OrderClassifier, OrderClassifierConfig, QPDNConfig

SMALL = dict(num_words=10, num_classes=2, dim=4, hidden=3)


# ------------------------------------------------------------------------------- 1. embedding_options
@pytest.mark.parametrize("options, error, match", [
    ({"frequency_init": "uniform", "frequency_scale": float("inf")}, ValueError,
     r"embedding_options\['frequency_scale'\] must be a positive finite number; got inf"),
    ({"frequency_scale": "2"}, TypeError, r"embedding_options\['frequency_scale'\] must be a positive finite number"),
    ({"initial_phase": "no"}, TypeError, r"embedding_options\['initial_phase'\] must be True or False; got str 'no'"),
    ({"sparse": "no"}, TypeError, r"embedding_options\['sparse'\] must be True or False"),
    ({"frequency_sharing": None}, ValueError, r"embedding_options\['frequency_sharing'\]: complex_order needs"),
    ({"foo": 1}, TypeError, r"embedding_options: \['foo'\] are unknown options"),
    ({1: True}, TypeError, r"embedding_options must have string keys"),
])
def test_order_classifier_config_checks_embedding_options(options, error, match):
    """The config took them all: NaN logits (inf), phases and sparse tables switched on ('no' is truthy), and
    '>' not supported between 'str' and 'int' when the model was built."""
    with pytest.raises(error, match=match):
        OrderClassifierConfig(**SMALL, embedding_options=options)


def test_from_dict_refuses_bad_embedding_options():
    """from_dict accepted an infinite scale; saving the model then said it "holds NaN or infinite values"."""
    with pytest.raises(ValueError, match=r"embedding_options\['frequency_scale'\]"):
        OrderClassifierConfig.from_dict(dict(num_words=10, num_classes=2, embedding_options={
            "frequency_init": "uniform", "frequency_scale": float("inf")}))


def test_options_of_another_embedding_kind_are_refused_by_the_config():
    with pytest.raises(TypeError, match=r"\['frequency_sharing'\] apply to complex_order only .*kind 'pe'"):
        OrderClassifierConfig(**SMALL, embedding="pe", embedding_options={"frequency_sharing": "word"})


def test_valid_embedding_options_survive_save_and_load(tmp_path):
    options = {"initial_phase": False, "sparse": False, "frequency_init": "normal", "frequency_scale": 0.5}
    model = OrderClassifier(OrderClassifierConfig(**SMALL, embedding_options=options))
    assert model.embedding.phase is None and not model.embedding.amplitude.sparse
    model.save_pretrained(tmp_path / "m")
    assert OrderClassifier.from_pretrained(tmp_path / "m").config.embedding_options == options
    pe = OrderClassifier(OrderClassifierConfig(**SMALL, embedding="pe", embedding_options={"sparse": False}))
    assert not pe.embedding.word.sparse


# ------------------------------------------------------------------------------- 5. CNM's encode
def test_cnm_encode_with_the_trace_head_names_encode():
    """It said "probabilities() needs head='measurement'" although encode was called."""
    model = CNM(CNMConfig(num_words=10, dim=4, num_measurements=3, head="trace"))
    ids = torch.tensor([[2, 3]])
    with pytest.raises(ValueError, match=r"^encode\(\) needs head='measurement'; this CNM has head='trace'"):
        model.encode(ids, ids != 0)
    with pytest.raises(ValueError, match=r"^probabilities\(\) needs head='measurement'"):
        model.probabilities(ids, ids != 0)


# ------------------------------------------------------------------------------- 5. save_pretrained
def _qpdn():
    return QPDN(QPDNConfig(num_words=10, num_classes=2, dim=4, num_measurements=3))


@pytest.mark.parametrize("metadata, match", [
    ([1, 2], r"metadata must be a mapping \(a dict of JSON values\); got list"),
    ("notes", r"metadata must be a mapping .*got str"),
    ({1: 2}, r"metadata keys must be strings \(JSON object keys\); got int 1"),
    ({(1, 2): 2}, r"metadata keys must be strings .*got tuple"),
])
def test_save_pretrained_refuses_metadata_that_is_not_a_string_keyed_mapping(metadata, match, tmp_path):
    """A list gave "dictionary update sequence element #0..."; {1: 2} was saved as {"1": 2} without a word."""
    with pytest.raises(TypeError, match=match):
        _qpdn().save_pretrained(tmp_path / "m", metadata=metadata)
    assert not (tmp_path / "m").exists()


def test_save_pretrained_keeps_string_keyed_metadata(tmp_path):
    _qpdn().save_pretrained(tmp_path / "m", metadata={"dataset": "mr", "fold": 1})
    assert json.loads((tmp_path / "m" / "config.json").read_text())["metadata"] == {"dataset": "mr", "fold": 1}


def test_save_pretrained_below_a_file_names_the_file(tmp_path):
    """A bare "[Errno 17] File exists: '.../file'" named neither the target nor the problem."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"cannot save to .*file/sub/m: .*/file is a file, not a directory"):
        _qpdn().save_pretrained(tmp_path / "file" / "sub" / "m")
    _qpdn().save_pretrained(tmp_path / "new" / "sub")              # missing parents are still created
    assert (tmp_path / "new" / "sub" / "config.json").is_file()
