"""Inputs that were accepted silently or refused with a misleading message (an audit's findings), one test each.

Options without effect on ``qpnlp train cnm``, vector files whose dimension
is wrong, the 'pe' position table's bound, damaged checkpoints, ``qpnlp
evaluate`` of a Word2Fun model with ``--split`` or a corpus outside its span,
rates that overflow float32, random-state dimensions that are not integers
and non-finite vectors given to ``normalize``.
"""

from __future__ import annotations

import argparse
import json
import struct
import warnings

import pytest
import torch

import qpnlp.hilbert as H
import qpnlp.measurement as M
from qpnlp.cli import main
from qpnlp.commands._types import rate_type
from qpnlp.data import Vocabulary
from qpnlp.data.pretrained import load_glove_text
from qpnlp.data.vectors import read_word2vec_binary
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.nn.position import RealPositionalEmbedding
from qpnlp.training import TrainConfig, load_checkpoint
from qpnlp.training.config import ConfigError
from qpnlp.training.evaluate import evaluate_checkpoint

WORDS = "the film a plot is was good great fine bad awful dull".split()


# --------------------------------------------------------------------------- 1. qpnlp train cnm: options without effect
def _cnm(*extra):
    """A ``train cnm`` command line whose data root does not exist: a usage error must come before any read."""
    return ["train", "cnm", "--dataset", "wikiqa", "--data", "/nonexistent/qpnlp-data", "--epochs", "1",
            "--no-progress", *extra]


@pytest.mark.parametrize("extra, fragment", [
    (["--vectors", "vec.txt", "--dim", "8"], "--dim 8 has no effect with --vectors vec.txt"),
    (["--dim", "8"], "--dim 8 has no effect with --vectors glove-6b-50d"),
    (["--vectors", "vec.txt", "--no-pretrained"], "--vectors has no effect with --no-pretrained"),
    (["--no-pretrained", "--vectors-scale", "2"], "--vectors-scale has no effect with --no-pretrained"),
    (["--no-pretrained", "--vectors-backoff", "on"], "--vectors-backoff has no effect with --no-pretrained"),
    (["--no-pretrained", "--pretrained-fallback", "10"], "--pretrained-fallback has no effect with --no-pretrained"),
    (["--no-pretrained", "--loss", "pointwise", "--margin", "5"], "--margin 5 has no effect with --loss pointwise"),
    # --negatives was ignored by the pointwise loss, and the run printed the triplets it did not train on
    (["--no-pretrained", "--loss", "pointwise", "--negatives", "5"], "--negatives 5 has no effect with --loss"),
    (["--no-pretrained", "--negatives", "1", "--loss", "pointwise"], "--negatives 1 has no effect with --loss"),
])
def test_cnm_option_without_effect_is_a_usage_error(capsys, extra, fragment):
    """--dim beside vectors, vector options beside --no-pretrained and --margin beside --loss pointwise were
    ignored (the report even recorded the unused --dim); --pretrained-fallback failed late with a Python name."""
    code = main(_cnm(*extra))
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err and len(err.strip().splitlines()) == 1, err


def test_cnm_dim_defaults_to_50_with_no_pretrained_only():
    from qpnlp.cli import build_parser
    from qpnlp.commands.match import check_effective_options, model_options

    args = build_parser().parse_args(_cnm("--no-pretrained"))
    check_effective_options(args)
    assert model_options(args)["dim"] == 50
    args = build_parser().parse_args(_cnm("--vectors", "vec.txt", "--margin", "0.2", "--negatives", "3"))
    check_effective_options(args)                                # triplet loss: --margin and --negatives apply
    assert "dim" not in model_options(args) and args.dim is None


# --------------------------------------------------------------------------- 2. vector files of the wrong dimension
def test_word2vec_binary_with_a_wrong_header_dimension_says_so(tmp_path):
    """A header 'N 5' over 4-d vectors read the vectors' bytes as words: 'entry 2 is not UTF-8' and nothing else."""
    rows = [(w, [0.5 + i, -1.25, 2.0, 0.75]) for i, w in enumerate(WORDS)]
    path = tmp_path / "vectors.bin"
    path.write_bytes(f"{len(rows)} 5\n".encode() + b"".join(w.encode() + b" " + struct.pack("<4f", *v) + b"\n"
                                                           for w, v in rows))
    with pytest.raises(ValueError, match=r"not UTF-8 .*or the dimension in the header 'N D' does not match the "
                                         r"vectors \(the header says D = 5"):
        read_word2vec_binary(path)


@pytest.mark.parametrize("text, source", [
    ("a 1 2 3\nb 1 2 3 4\n", r"vec.txt:2: .* got 5 \(the dimension 3 was taken from line 1, the first vector line\)"),
    ("2 3\na 1 2 3\nb 1 2 3 4\n", r"vec.txt:3: .* got 5 \(the dimension 3 was read from the header 'N dim' on line 1\)"),
])
def test_glove_text_column_error_says_where_the_dimension_came_from(tmp_path, text, source):
    path = tmp_path / "vec.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=source):
        load_glove_text(path)


# --------------------------------------------------------------------------- 3. the 'pe' table's bound
def test_pe_position_error_names_the_command_line_flag():
    """'(raise max_len)' sent users of `qpnlp train order-classifier` to --max-len, which truncates texts."""
    emb = RealPositionalEmbedding(10, 4, position="pe", max_len=3)
    ids = torch.tensor([[2, 3, 4, 5, 6]])
    with pytest.raises(ValueError, match=r"positions must lie in \[0, 3\) for 'pe'; got range \[0, 4\] .*"
                                         r"--model-max-len of `qpnlp train`.*--max-len"):
        emb(ids, torch.ones_like(ids, dtype=torch.bool))


# --------------------------------------------------------------------------- 4. damaged checkpoints
@pytest.fixture
def checkpoint(tmp_path):
    vocab = Vocabulary.build([WORDS])
    model = QPDN(QPDNConfig(num_words=len(vocab), num_classes=2, dim=4, num_measurements=4))
    model.save_pretrained(tmp_path / "ck", vocabulary=vocab, metadata=dict(
        dataset="MR", split="fold 1", seed=0, folds=10, label_names=["neg", "pos"], task="classification"))
    return tmp_path / "ck"


def test_vocabulary_from_dict_refuses_a_list():
    with pytest.raises(TypeError, match="a serialised Vocabulary is a mapping .* got list"):
        Vocabulary.from_dict(["a", "b"])


def test_checkpoint_with_a_list_as_vocabulary_names_the_file(checkpoint):
    (checkpoint / "vocabulary.json").write_text('["a", "b"]')
    with pytest.raises(ValueError, match=r"vocabulary\.json: not a qpnlp vocabulary .*mapping"):
        load_checkpoint(checkpoint)


@pytest.mark.parametrize("key, value, fragment", [
    ("dataset", 5, "metadata 'dataset' must be a data set name (a string); got int 5"),
    ("seed", "zero", "metadata 'seed' must be an integer in [0, 2**32 - 1]; got str 'zero'"),
    ("max_len", -3, "metadata 'max_len' must be an integer >= 1; got int -3"),
    ("folds", 1, "metadata 'folds' must be an integer >= 2; got int 1"),
    ("label_names", "neg pos", "metadata 'label_names' must be a list of strings"),
])
def test_hand_edited_metadata_names_config_json_and_the_key(checkpoint, key, value, fragment):
    path = checkpoint / "config.json"
    header = json.loads(path.read_text())
    header["metadata"][key] = value
    path.write_text(json.dumps(header))
    with pytest.raises(ValueError) as info:
        evaluate_checkpoint(checkpoint, root="/nonexistent/qpnlp-data")     # refused before the data is read
    assert str(path) in str(info.value) and fragment in str(info.value)


# --------------------------------------------------------------------------- 5. evaluate a Word2Fun model
@pytest.fixture
def word2fun(tmp_path):
    from qpnlp.word2fun.model import Word2Fun, Word2FunConfig

    vocab = Vocabulary.build([WORDS], specials=False)
    Word2Fun(Word2FunConfig(len(vocab), 4, span_start=1900, span_end=1990)).save_pretrained(
        tmp_path / "w2f", vocabulary=vocab)
    return tmp_path / "w2f"


def _corpus(path, years):
    path.write_text("".join(f"{year}\t{' '.join(WORDS)}\n" for year in years))
    return path


def test_evaluate_word2fun_refuses_split(word2fun, tmp_path):
    """--split nosuchsplit was ignored (exit 0) while --max-questions was refused."""
    corpus = _corpus(tmp_path / "c.tsv", [1900, 1950])
    with pytest.raises(ConfigError, match=r"split \(--split\) .* word2fun is a temporal model, scored on the whole "
                                          r"corpus; got 'nosuchsplit'"):
        evaluate_checkpoint(word2fun, dataset=str(corpus), split="nosuchsplit")


def test_evaluate_word2fun_warns_about_years_outside_the_span(word2fun, tmp_path):
    """A corpus of other years was scored on extrapolated functions without the warning KeyedVectors gives."""
    inside = _corpus(tmp_path / "inside.tsv", [1900, 1950, 1990])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert evaluate_checkpoint(word2fun, dataset=str(inside))["split"] == "all"
    outside = _corpus(tmp_path / "outside.tsv", [1800, 1950])
    with pytest.warns(UserWarning, match=r"time 1800 lies outside the training span \[1900, 1990\]: the vectors "
                                         r"there extrapolate"):
        evaluate_checkpoint(word2fun, dataset=str(outside))


# --------------------------------------------------------------------------- 6. numbers: overflow, NaN, dimensions
def test_rate_options_refuse_values_that_overflow_float32():
    """--weight-decay 1e308 failed in the optimiser with torch's 'cannot be converted ... without overflow'."""
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be at most 3.403e\+38 \(the largest float32\)"):
        rate_type(zero=True)("1e308")
    assert rate_type()("1e30") == 1e30                 # large but representable: the divergence check's business


@pytest.mark.parametrize("field, value, fragment", [
    ("weight_decay", 1e308, "weight_decay must be at most 3.403e+38"),
    ("lr", 3e38, "lr must be at most 3.403e+37"),                    # Adam's first step multiplies it by 10
    ("lr", "nan", "lr must be a finite number; got 'nan'"),           # --select lr=nan,0.1
    ("embedding_lr", "-inf", "embedding_lr must be a finite number; got '-inf'"),
])
def test_train_config_refuses_overflowing_and_non_finite_rates(field, value, fragment):
    with pytest.raises(ConfigError) as info:
        TrainConfig(**{field: value})
    assert fragment in str(info.value)


def test_select_nan_is_refused_as_not_finite(capsys):
    code = main(["train", "qpdn", "--dataset", "mr", "--data", "/nonexistent/qpnlp-data", "--select", "lr=nan,0.1"])
    err = capsys.readouterr().err
    assert code == 2 and "grid axis lr: 'nan' is not a finite number" in err, err
    with pytest.raises(ValueError, match="lr must be a finite number; got 'nan'"):   # a hand-written config
        TrainConfig(lr="nan")


@pytest.mark.parametrize("call, fragment", [
    (lambda: H.random_pure_state(2.5), "dim must be an integer >= 1; got float 2.5"),
    (lambda: H.random_unitary(float("nan")), "dim must be an integer >= 1; got float nan"),
    (lambda: H.random_density_matrix(3, rank=1.5), "rank must be an integer >= 1; got float 1.5"),
    (lambda: H.random_isometry(3, 2.0), "cols must be an integer >= 1; got float 2.0"),
    (lambda: M.random_povm(2, 2.5), "num_outcomes must be an integer >= 1; got float 2.5"),
    (lambda: M.random_povm(2.5, 4), "dim must be an integer >= 1; got float 2.5"),
])
def test_random_samplers_refuse_dimensions_that_are_not_integers(call, fragment):
    """torch's randn argument error or 'cannot convert float NaN to integer' did not name the argument."""
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value)


def test_random_samplers_take_numpy_integers():
    import numpy as np

    assert H.random_pure_state(np.int64(3)).dim == 3
    assert M.random_povm(np.int32(2), 3).num_outcomes == 3


# --------------------------------------------------------------------------- 7. normalize of non-finite vectors
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.complex128])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_normalize_refuses_non_finite_vectors(dtype, bad):
    """[nan, 1] gave NaNs and [inf, 1] gave [nan, 0] silently; only zero vectors were refused."""
    vectors = torch.tensor([[1.0, 0.0], [bad, 1.0]]).to(dtype)
    with pytest.raises(ValueError, match=r"vectors must be finite; got .* at batch index \(1,\) \(shape \(2, 2\)\)"):
        H.normalize(vectors)
    assert torch.isnan(H.normalize(vectors, validate=False)[1]).any()     # off: no value check, no branch


def test_normalize_refuses_norms_that_overflow():
    with pytest.raises(ValueError, match="vectors must have a finite norm: 1 norms overflow"):
        H.normalize(torch.tensor([3e38, 3e38]))
    with pytest.raises(ValueError, match="cannot normalise a zero vector"):
        H.normalize(torch.zeros(2))
