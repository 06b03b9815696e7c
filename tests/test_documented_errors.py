"""The errors the docstrings and docs promise, one row each: the call, the exception type, a fragment of its message.

An audit of the "Raises" sections and the "refused" / "raises" sentences of qpnlp's docstrings and docs built the
input each claim names and checked the type, the message and the boundary. The rows are the claims it verified that
no other test pinned, so that code and docs cannot drift apart unnoticed.
"""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pytest
import torch

import qpnlp.hilbert as H
from qpnlp.data import Vocabulary
from qpnlp.data.classification import read_tsv
from qpnlp.data.pretrained import load_glove_text
from qpnlp.data.timestamped import TimestampedCorpus
from qpnlp.data.vectors import read_spacy_vectors, read_word2vec_binary
from qpnlp.hilbert import DensityMatrix, PureState
from qpnlp.interpret import positional_sensitivity, single_shot_accuracy
from qpnlp.measurement import Projector, kraus_update
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.nn import ComplexOrderEmbedding, as_complex_input, complex_order_embedding, make_gate
from qpnlp.word2fun import distributed
from qpnlp.word2fun.static_vectors import StaticKeyedVectors

C64 = torch.complex64
S = 2 ** -0.5


def _qpdn() -> QPDN:
    return QPDN(QPDNConfig(num_words=6, num_classes=2, dim=4, num_measurements=3))


def _static() -> StaticKeyedVectors:
    return StaticKeyedVectors(["war", "peace", "trade"], np.eye(3, 4, dtype=np.float32))


def _write(tmp_path, name: str, data: str | bytes):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _enter_validation(mode) -> None:
    """``with validation(mode): pass`` (a block left open would keep its mode in this thread)."""
    with H.validation(mode):
        pass


def _two_classes() -> DensityMatrix:
    return DensityMatrix(torch.stack([torch.diag(torch.tensor([1.0, 0.0], dtype=C64)),
                                      torch.diag(torch.tensor([0.0, 1.0], dtype=C64))]))


#: (id, call(tmp_path), exception, message fragment); each row quotes the claim it checks.
CLAIMS = [
    # hilbert: set_validation / validation / validate= -- "anything else raises ValueError"
    ("set_validation(1)", lambda t: H.set_validation(1), ValueError, "validation mode must be one of"),
    ("validation(0)", lambda t: _enter_validation(0), ValueError, "validation mode must be one of"),
    ("PureState(validate=1)", lambda t: PureState(torch.tensor([1.0, 0.0], dtype=C64), validate=1), ValueError,
     "validate must be one of"),
    # data: read_tsv -- "a label outside 0..n_classes-1 (the message names the file and the 1-based line number)"
    ("read_tsv label 1.0", lambda t: read_tsv(_write(t, "a.tsv", "good\t1\nbad\t1.0\n")), ValueError, "a.tsv:2:"),
    # data: read_word2vec_binary -- "a header announcing no vector"
    ("word2vec header of 0 vectors", lambda t: read_word2vec_binary(_write(t, "w.bin", b"0 2\n")), ValueError,
     "announces 0 vectors"),
    # data: read_spacy_vectors -- "a directory without those files ... the message names the file"
    ("spaCy directory without its files", lambda t: read_spacy_vectors(t), ValueError, "not a spaCy model"),
    # data: Vocabulary.word_of -- "IndexError outside"
    ("word_of(-1)", lambda t: Vocabulary.build([["a"]]).word_of(-1), IndexError, "out of range for a vocabulary"),
    # data: TimestampedCorpus.from_pairs -- "a date ... is refused with the document's index"
    ("from_pairs of a numpy date", lambda t: TimestampedCorpus.from_pairs([(np.datetime64("1900-01-01"), ["a"])]),
     TypeError, "the time of document 0 is the date"),
    # nn: complex_order_embedding -- "Frequencies without positions" (ValueError)
    ("frequencies without positions", lambda t: complex_order_embedding(torch.ones(1, 2), torch.ones(2), None),
     ValueError, "positions are required"),
    # nn: complex_order_embedding -- "a mask that is not bool" (TypeError)
    ("an integer mask", lambda t: complex_order_embedding(torch.ones(1, 2), torch.ones(2), torch.ones(1),
                                                          mask=torch.ones(1, dtype=torch.int64)),
     TypeError, "mask must be a bool tensor"),
    # nn: as_complex_input -- "Anything that would lose precision ... raises TypeError"
    ("complex128 into complex64", lambda t: as_complex_input(torch.ones(2, dtype=torch.complex128), C64), TypeError,
     "refusing to downcast silently"),
    # nn: make_gate -- "another name raises ValueError"
    ("make_gate('max')", lambda t: make_gate("max"), ValueError, "unknown gate 'max'"),
    # measurement: kraus_update -- "When the outcome has probability zero"
    ("Kraus outcome of probability 0", lambda t: kraus_update(
        DensityMatrix(torch.diag(torch.tensor([1.0, 0.0], dtype=C64))),
        torch.diag(torch.tensor([0.0, 1.0], dtype=C64))), ValueError, "probability 0"),
    # interpret: single_shot_accuracy -- "Projectors must be orthogonal ... ValueError otherwise" (docs: "refuses
    # overlapping ones")
    ("overlapping projectors", lambda t: single_shot_accuracy(
        Projector(torch.tensor([[[1.0, 0.0]], [[S, S]]], dtype=C64)), _two_classes()), ValueError,
     "must be orthonormal to form a measurement"),
    # interpret: positional_sensitivity -- "no per-word frequencies (... word sharing ...)"
    ("positional sensitivity of word sharing", lambda t: positional_sensitivity(
        ComplexOrderEmbedding(5, 2, frequency_sharing="word"), ["<pad>", "<unk>", "a", "b", "c"]), ValueError,
     "word-sharing frequencies"),
    # models: ModelConfig -- "an int field given True or 2.0 ... raises ValueError naming the field"
    ("QPDNConfig(num_classes=2.0)", lambda t: QPDNConfig(num_words=6, num_classes=2.0, dim=4, num_measurements=3),
     ValueError, "QPDNConfig.num_classes must be int; got float 2.0"),
    # models: save_pretrained -- "metadata that is not a mapping with string keys (TypeError)"
    ("metadata with an int key", lambda t: _qpdn().save_pretrained(t / "m", metadata={1: 2}), TypeError,
     "metadata keys must be strings"),
    # models: from_pretrained through a subclass -- a directory of another model is refused, naming both
    ("a QPDN loaded as a CNM", lambda t: __import__("qpnlp.models", fromlist=["CNM"]).CNM.from_pretrained(
        _qpdn().save_pretrained(t / "q")), ValueError, "holds a 'qpdn' model, not a CNM"),
    # word2fun: StaticKeyedVectors.most_similar -- "TypeError for a complex vector"
    ("a complex query vector", lambda t: _static().most_similar(np.ones(4, dtype=complex)), TypeError,
     "a query vector must be real"),
    # word2fun: most_similar -- "for topn ... not integers (topn >= 1)"
    ("most_similar(topn=True)", lambda t: _static().most_similar("war", topn=True), ValueError,
     "topn must be a positive int"),
]


@pytest.fixture(autouse=True)
def _validation_mode_kept():
    """A row that set the mode wrongly must not leak it (the global mode is restored either way)."""
    mode = H.get_validation()
    yield
    H.set_validation(mode)


@pytest.mark.parametrize(("call", "error", "fragment"), [row[1:] for row in CLAIMS], ids=[row[0] for row in CLAIMS])
def test_a_documented_error_is_raised_as_documented(tmp_path, call, error, fragment):
    with pytest.raises(error) as info:
        call(tmp_path)
    assert fragment in str(info.value)


def test_a_vector_value_beyond_float32_is_refused_without_a_numpy_warning(tmp_path):
    """load_glove_text: "a non-finite value ... the message names the file and the 1-based line"; 1e39 (inf in
    float32) also printed numpy's "RuntimeWarning: overflow encountered in cast" before that error."""
    path = _write(tmp_path, "g.txt", "a 1 2\nb 1 1e39\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="g.txt:2: non-finite value for word 'b'"):
            load_glove_text(path)


@pytest.mark.parametrize("value", ["1e14", "inf"])
def test_a_group_timeout_beyond_timedelta_names_the_variable(monkeypatch, value):
    """getting-started.md: "a value that is none of those listed raises an error naming the variable"; 1e14 seconds
    raised timedelta's OverflowError ("days=1157407407; ..."), naming nothing, exit code 1 for a command."""
    monkeypatch.setenv("QPNLP_DIST_TIMEOUT", value)
    with pytest.raises(ValueError, match="QPNLP_DIST_TIMEOUT must be a number of seconds > 0"):
        distributed.group_options("cpu")


def test_the_longest_group_timeout_is_accepted(monkeypatch):
    monkeypatch.setenv("QPNLP_DIST_TIMEOUT", f"{datetime.timedelta.max.days * 86400}")
    assert distributed.group_options("cpu")[1] == datetime.timedelta(days=datetime.timedelta.max.days)


@pytest.mark.parametrize("mode", [False, True, "strict"])
def test_the_documented_validation_modes_are_accepted(mode):
    with H.validation(mode):
        assert H.get_validation() is mode
    assert PureState(torch.tensor([1.0, 0.0], dtype=C64), validate=mode).dim == 2
