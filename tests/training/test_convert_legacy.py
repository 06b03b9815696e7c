"""`qpnlp convert`: a qpnlp 0.1 checkpoint is checked (structure, config, vocabulary, tensor shapes) before the model
is allocated, with errors naming the file and the key at fault."""

import re

import pytest
import torch

from qpnlp.data import Vocabulary
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.training import convert_legacy_checkpoint, load_checkpoint

CONFIG = dict(num_words=20, num_classes=2, dim=6, num_measurements=4)


def _legacy(**changes) -> dict:
    model = QPDN(QPDNConfig(**CONFIG), generator=torch.Generator().manual_seed(0))
    payload = dict(format="qpnlp-checkpoint-1", kind="qpdn", config=dict(CONFIG),
                   vocab=Vocabulary.build([[f"w{i}" for i in range(18)]]).to_dict(),   # 20 ids with <pad>, <unk>
                   label_names=["neg", "pos"], meta={"dataset": "toy"},
                   state_dict={k: v.clone() for k, v in model.state_dict().items()})
    payload.update(changes)
    return {k: v for k, v in payload.items() if v is not None}


def _convert(tmp_path, payload):
    torch.save(payload, tmp_path / "old.pt")
    return convert_legacy_checkpoint(tmp_path / "old.pt", tmp_path / "new")


def _at(tmp_path, message: str) -> str:
    return re.escape(str(tmp_path / "old.pt")) + ".*" + message


def test_a_valid_legacy_checkpoint_converts(tmp_path):
    checkpoint = load_checkpoint(_convert(tmp_path, _legacy()))
    assert checkpoint.metadata["label_names"] == ["neg", "pos"] and len(checkpoint.vocabulary) == 20


@pytest.mark.parametrize("key", ["kind", "config", "vocab", "state_dict"])
def test_a_missing_key_is_named_with_the_file(tmp_path, key):
    # was a bare KeyError: 'kind'
    payload = _legacy()
    del payload[key]
    with pytest.raises(ValueError, match=_at(tmp_path, f"needs '{key}', which this file lacks")):
        _convert(tmp_path, payload)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("key, value, message", [
    ("meta", ["dataset", "toy"], "'meta' must be a dict; got list"),
    ("config", [("num_words", 20)], "'config' must be a dict; got list"),
    ("vocab", "w0 w1", "'vocab' must be a dict; got str"),
    ("kind", 3, "'kind' must be a str; got int"),
    ("label_names", "ab", "'label_names' must be a list or tuple; got str"),       # was split into ['a', 'b']
    ("state_dict", {"embedding.weight": [1.0, 2.0]}, "'state_dict' must map tensor names to tensors"),
])
def test_a_key_of_the_wrong_type_is_named_with_the_file(tmp_path, key, value, message):
    with pytest.raises(ValueError, match=_at(tmp_path, re.escape(message))):
        _convert(tmp_path, _legacy(**{key: value}))


def test_a_bad_config_vocabulary_or_kind_is_named_with_the_file(tmp_path):
    with pytest.raises(ValueError, match=_at(tmp_path, "'config' is not a valid 'qpdn' config")):
        _convert(tmp_path, _legacy(config={**CONFIG, "dim": "six"}))
    with pytest.raises(ValueError, match=_at(tmp_path, "'vocab' is not a qpnlp vocabulary")):
        _convert(tmp_path, _legacy(vocab={"words": 5}))
    with pytest.raises(ValueError, match=_at(tmp_path, "'kind': unknown model")):
        _convert(tmp_path, _legacy(kind="no_such_model"))


@pytest.mark.parametrize("inflated, message", [
    ({"num_words": 10 ** 9}, "'vocab': the vocabulary has 20 words but the model's embedding tables have 1000000000"),
    ({"dim": 10 ** 6}, r"'state_dict': tensor '.*' is \(20, 6\) .*but the config describes \(20, 1000000\)"),
])
def test_an_inflated_config_is_refused_before_any_model_is_allocated(tmp_path, monkeypatch, inflated, message):
    # num_words=10**9 built the whole model (about 24 GB) before load_state_dict compared the shapes
    built = []

    def empty(cls, config):
        built.append(torch.get_default_device().type)
        if built[-1] != "meta":
            raise AssertionError(f"a model of {inflated} was allocated on {built[-1]}")
        return cls(config)

    monkeypatch.setattr(QPDN, "empty", classmethod(empty))
    with pytest.raises(ValueError, match=_at(tmp_path, message)):
        _convert(tmp_path, _legacy(config={**CONFIG, **inflated}))
    assert set(built) <= {"meta"}


def test_tensors_that_do_not_match_the_config_are_named_with_the_file(tmp_path):
    # were torch's load_state_dict RuntimeError ("Error(s) in loading state_dict for QPDN: size mismatch ...")
    state = _legacy()["state_dict"]
    name = next(iter(state))
    wrong = {**state, name: torch.zeros(3, 3)}
    with pytest.raises(ValueError, match=_at(tmp_path, f"'state_dict': tensor '{re.escape(name)}' is \\(3, 3\\)")):
        _convert(tmp_path, _legacy(state_dict=wrong))
    with pytest.raises(ValueError, match=_at(tmp_path, r"'state_dict': the state dict does not match its config: "
                                                       r"missing tensors \[")):
        _convert(tmp_path, _legacy(state_dict={k: v for k, v in state.items() if k != name}))


def test_a_vocabulary_of_another_size_than_the_embeddings_is_refused(tmp_path):
    # converted, and then load_checkpoint refused the converted directory
    small = Vocabulary.build([["a", "b", "c"]]).to_dict()
    with pytest.raises(ValueError, match=_at(tmp_path, "'vocab': the vocabulary has 5 words but the model's "
                                                       "embedding tables have 20 rows")):
        _convert(tmp_path, _legacy(vocab=small))
    assert not (tmp_path / "new").exists()


def test_load_checkpoint_refuses_a_vocabulary_json_that_is_a_directory(tmp_path):
    # it was skipped: the checkpoint loaded with vocabulary None, as if it had been saved without one
    directory = _convert(tmp_path, _legacy())
    (directory / "vocabulary.json").unlink()
    (directory / "vocabulary.json").mkdir()
    with pytest.raises(ValueError, match=r"new/vocabulary.json: not a qpnlp vocabulary \(.*Is a directory"):
        load_checkpoint(directory)


def test_a_model_of_todays_format_is_named_as_such_not_as_a_bad_legacy_directory(tmp_path):
    """`qpnlp convert` of a saved model said 'not a qpnlp 0.1 Word2Fun directory': it has nothing to convert."""
    from qpnlp.word2fun import convert_legacy_word2fun

    QPDN(QPDNConfig(**CONFIG)).save_pretrained(tmp_path / "today")
    with pytest.raises(ValueError, match=r"today is already a saved qpnlp model \(qpdn\) in the current format; "
                                         r"nothing to convert"):
        convert_legacy_word2fun(tmp_path / "today", tmp_path / "new")
    assert not (tmp_path / "new").exists()
