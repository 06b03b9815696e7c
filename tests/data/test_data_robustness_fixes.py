"""Robustness fixes of qpnlp.data (and matching_patterns): bad indices, non-string tokens, non-integer ids, paths.

Each test failed before its fix: the bad input was silently truncated, wrapped around, read as another item or
word, or failed with a message that did not name it.
"""

import json
import math

import numpy as np
import pytest
import torch

from qpnlp.data.batching import EncodedTexts, pad_batch
from qpnlp.data.classification import ClassificationDataset
from qpnlp.data.protocols import carve_dev, splits
from qpnlp.data.qa import load_qa
from qpnlp.data.vocab import UNK_ID, Vocabulary


def _toy(fixed=None, n=6):
    return ClassificationDataset("toy", [[f"w{i}"] for i in range(n)], np.array([0, 1] * (n // 2)), ("a", "b"),
                                 fixed)


# ------------------------------------------------------------------ 1. indices of splits and subsets
def test_fixed_splits_refuse_a_boolean_mask():
    """Before: the masks were read as indices 0 and 1, so train and test shared items (a leak)."""
    masks = {"train": [True, False, True, False, True, False], "test": [False, True, False, True, False, True]}
    with pytest.raises(ValueError, match=r"split 'train' must hold row indices, got a boolean mask "
                                         r"\(use np.flatnonzero\)"):
        _toy(masks)
    ds = _toy({k: np.flatnonzero(v) for k, v in masks.items()})        # what the message suggests works
    assert ds.fixed_splits["test"].tolist() == [1, 3, 5]


@pytest.mark.parametrize("bad, message", [
    ([0, -1], r"split 'test': index -1 at position 1 is outside 0..5 .*do not wrap around"),
    ([1.5, 3], r"split 'test' must hold integer row indices; got float64 values \(1.5 at position 0\)"),
    ([3, 5, 3], r"split 'test': row index 3 appears 2 times"),
    ([6], r"split 'test': index 6 at position 0 is outside 0..5"),
    ([[1, 3]], r"split 'test' must be a 1-D array of row indices; got shape \(1, 2\)"),
])
def test_fixed_splits_refuse_bad_indices(bad, message):
    with pytest.raises(ValueError, match=message):
        _toy({"train": [0, 2, 4], "test": bad})


def test_fixed_splits_must_be_disjoint():
    with pytest.raises(ValueError, match=r"splits 'train' and 'test' share item 2; fixed splits must be disjoint"):
        _toy({"train": [0, 2, 4], "test": [1, 2]})


def test_fixed_splits_accept_empty_and_unsigned_indices():
    ds = _toy({"train": np.array([0, 1, 2, 3], dtype=np.uint32), "dev": [], "test": np.array([4, 5])})
    assert {k: (v.dtype, v.tolist()) for k, v in ds.fixed_splits.items()} == {
        "train": (np.int64, [0, 1, 2, 3]), "dev": (np.int64, []), "test": (np.int64, [4, 5])}


@pytest.mark.parametrize("bad, message", [
    (np.array([True, False, True, False, True, False]), r"subset indices must hold row indices, got a boolean mask"),
    ([5, -1], r"subset indices: index -1 at position 1 is outside 0..5"),
    ([0.0, 2.7], r"subset indices must hold integer row indices; got float64 values \(2.7 at position 1\)"),
    ([1, 1], r"subset indices: row index 1 appears 2 times"),
    ([9], r"subset indices: index 9 at position 0 is outside 0..5"),
])
def test_subset_refuses_bad_indices(bad, message):
    with pytest.raises(ValueError, match=message):
        _toy().subset(bad)


def test_subset_keeps_the_order_of_valid_indices():
    part = _toy().subset([4, 1])
    assert part.texts == [["w4"], ["w1"]] and part.labels.tolist() == [0, 1]


@pytest.mark.parametrize("bad, message", [
    (np.arange(20) + 0.5, r"train indices must hold integer row indices; got float64 values \(0.5 at position 0\)"),
    (np.r_[np.arange(20), 3], r"train indices: row index 3 appears 2 times"),
    (np.r_[np.arange(20), 20], r"train indices: index 20 at position 20 is outside 0..19"),
    (np.r_[np.arange(19), -1], r"train indices: index -1 at position 19 is outside"),
    (np.ones(20, dtype=bool), r"train indices must hold row indices, got a boolean mask \(use np.flatnonzero\)"),
])
def test_carve_dev_refuses_bad_indices(bad, message):
    """Before: floats were truncated, repeats kept, and an index past the labels raised a raw IndexError."""
    with pytest.raises(ValueError, match=message):
        carve_dev(bad, np.array([0, 1] * 10), 0.2, seed=0)


def test_existing_fixed_split_protocol_still_works():
    ds = _toy({"train": np.arange(20), "test": np.arange(20, 30)}, n=30)
    (s,) = list(splits(ds, seed=0, dev_fraction=0.2))
    assert len(s.train) == 16 and len(s.dev) == 4 and s.test.tolist() == list(range(20, 30))
    assert [len(p) for p in s.subsets(ds)] == [16, 4, 10]


# ------------------------------------------------------------------ 2. tokens that are not strings
@pytest.mark.parametrize("token, kind", [(2, "int"), (None, "NoneType"), (b"a", "bytes"), (torch.tensor(3), "Tensor"),
                                         (["a"], "list")])
def test_encode_refuses_a_token_that_is_not_a_string(token, kind):
    """Before: ``encode([2, 3])`` gave ``[1, 1]`` (every id became <unk>)."""
    vocab = Vocabulary.build([["a", "b"]])
    with pytest.raises(TypeError, match=rf"token 1 is {kind} .*not a str token"):
        vocab.encode(["a", token])


def test_encode_of_ids_points_to_decode_and_encode_many_names_the_text():
    vocab = Vocabulary.build([["a", "b"]])
    with pytest.raises(TypeError, match=r"token 0 is int 2, not a str token \(ids are not tokens: decode\(\)"):
        vocab.encode([2, 3])
    with pytest.raises(TypeError, match=r"^text 1: token 0 is int 5"):
        vocab.encode_many([["a"], [5]])
    assert vocab.encode(["a", "unseen", "<pad>", "<unk>"]) == [2, UNK_ID, UNK_ID, UNK_ID]   # str unknowns: <unk>


def test_non_string_tokens_without_specials_and_single_words():
    dense = Vocabulary.build([["a", "b"]], specials=False)
    with pytest.raises(TypeError, match=r"word 1 is int 0, not a str token"):
        dense.encode(["a", 0])
    with pytest.raises(TypeError, match=r"word 0 is float 1.0"):
        dense.ids([1.0])
    with pytest.raises(TypeError, match=r"the word is int 3"):
        Vocabulary.build([["a"]]).id_of(3)


@pytest.mark.parametrize("texts, message", [
    ([[], [1, 2]], r"text 1, token 0 is int 1"),              # before: a vocabulary of int words
    ([["a"], ["b", 3]], r"text 1, token 1 is int 3"),         # before: "'<' not supported between 'int' and 'str'"
    ([["a"], [["b"]]], r"text 1, token 0 is list"),           # before: "unhashable type: 'list'"
])
def test_build_checks_every_text(texts, message):
    with pytest.raises(TypeError, match=r"token_lists must hold lists of str tokens; " + message):
        Vocabulary.build(texts)


def test_build_accepts_str_subclasses():
    assert Vocabulary.build([[np.str_("a"), "a"]]).encode(["a"]) == [2]


def test_matching_patterns_refuse_a_list_of_ids():
    from qpnlp.interpret import matching_patterns
    from qpnlp.models.cnm import CNM, CNMConfig

    model = CNM(CNMConfig(num_words=6, dim=2, num_measurements=2, windows=[1]))
    vocab = Vocabulary.build([["a", "b", "c", "d"]])
    with pytest.raises(TypeError, match=r"question token 0 is int 2, not a str; .*1-D LongTensor"):
        matching_patterns(model, [2, 3], [4, 5], vocab=vocab)
    assert matching_patterns(model, torch.tensor([2, 3]), torch.tensor([4, 5]), vocab=vocab).question == ("a", "b")


# ------------------------------------------------------------------ 3. ids that are not integers
@pytest.mark.parametrize("ids, error, message", [
    (["23"], TypeError, r"text 0 is a str '23', not a sequence of ids"),        # before: [[2, 3]]
    ([[2.9]], ValueError, r"text 0 must hold integer ids; position 0 is 2.9"),  # before: [[2]]
    ([[2], torch.tensor([2.5, 3.0])], ValueError, r"text 1 must hold integer ids; position 0 is 2.5"),
    ([[2, math.nan]], ValueError, r"text 0 must hold integer ids; position 1 is nan"),
    ([[2, None]], TypeError, r"text 0 must hold integer ids; position 1 is NoneType"),
    ([[2, True]], TypeError, r"text 0 must hold integer ids; position 1 is bool"),
])
def test_encoded_texts_refuse_ids_that_are_not_integers(ids, error, message):
    with pytest.raises(error, match=message):
        EncodedTexts(ids, [0] * len(ids))


def test_encoded_texts_accept_integer_ids_of_every_kind():
    ids = [[2, 3], (4,), np.array([5, 6], dtype=np.int32), torch.tensor([7]), [np.int64(8), 9.0], torch.tensor([2.0])]
    data = EncodedTexts(ids, [0, 1, 0, 1, 0, 1])
    assert data.ids == [[2, 3], [4], [5, 6], [7], [8, 9], [2]]
    assert all(type(x) is int for row in data.ids for x in row)


@pytest.mark.parametrize("seqs, error, message", [
    ([[1.7, 2.2]], ValueError, r"sequence 0 must hold integer ids; position 0 is 1.7"),  # before: [[1, 2]]
    ([[3], np.array([1.0, 2.5])], ValueError, r"sequence 1 must hold integer ids; position 1 is 2.5"),
    (["23"], TypeError, r"sequence 0 is a str '23', not a sequence of ids"),
    ([torch.tensor([True])], TypeError, r"sequence 0 must hold integer ids; got torch.bool"),
])
def test_pad_batch_refuses_ids_that_are_not_integers(seqs, error, message):
    with pytest.raises(error, match=message):
        pad_batch(seqs)


def test_pad_batch_accepts_integer_valued_floats_and_int_arrays():
    ids, mask = pad_batch([[1.0, 2.0], np.array([3], dtype=np.int32)])
    assert ids.dtype == torch.long and ids.tolist() == [[1, 2], [3, 0]] and mask.tolist() == [[True, True],
                                                                                              [True, False]]


# ------------------------------------------------------------------ 4. QA split names
@pytest.mark.parametrize("split", ["../trecqa/dev", "..", "dev/../dev", "sub\\dev", ""])
def test_load_qa_refuses_a_split_that_is_a_path(fake_root, split):
    """Before: ``load_qa("wikiqa", "../trecqa/dev")`` read TREC-QA's file as WikiQA's."""
    with pytest.raises(ValueError, match=r"split must be a plain file name stem .*got"):
        load_qa("wikiqa", split, root=fake_root)


def test_load_qa_refuses_a_split_that_is_not_a_string(fake_root):
    with pytest.raises(TypeError, match=r"split must be a string .*got int 3"):
        load_qa("wikiqa", 3, root=fake_root)


# ------------------------------------------------------------------ 5. minor: vocabulary and protocol arguments
def test_from_dict_names_a_missing_key():
    data = Vocabulary.build([["a"]]).to_dict()
    del data["words"]
    with pytest.raises(ValueError, match=r"lacks the key\(s\) \['words'\]"):
        Vocabulary.from_dict(data)


@pytest.mark.parametrize("change, message", [
    (dict(n_docs=-5), r"n_docs must be an integer >= 0; got -5"),
    (dict(n_docs=1.5), r"n_docs must be an integer >= 0; got 1.5"),
    (dict(doc_freq=[3, 1]), r"doc_freq of word 0 \('a'\) is 3; a document frequency is an integer in 0..n_docs = 2"),
    (dict(doc_freq=[-1, 1]), r"doc_freq of word 0 \('a'\) is -1"),
    # the training counts and the words were taken as given: -5 kept, 1.5 read as 1, "x" a bare int() error, and
    # the word 3 kept as an int that the token "3" never finds
    (dict(word_freq=[-5, 1]), r"word_freq of word 0 \('a'\) is -5; a training count is an integer >= 0"),
    (dict(word_freq=[2, 1.5]), r"word_freq of word 1 \('b'\) is 1.5"),
    (dict(word_freq=["x", 1]), r"word_freq of word 0 \('a'\) is 'x'"),
    (dict(words=["a", 3]), r"word 1 is int 3; words are strings"),
])
def test_from_dict_refuses_counts_without_a_valid_idf(change, message):
    data = {**Vocabulary.build([["a", "b"], ["a"]]).to_dict(), **change}
    with pytest.raises(ValueError, match=message):
        Vocabulary.from_dict(data)


def test_checkpoint_names_the_vocabulary_file_and_the_missing_key(tmp_path):
    """checkpoint.py turns the ValueError into a message naming vocabulary.json."""
    from qpnlp.models.qpdn import QPDN, QPDNConfig
    from qpnlp.training.checkpoint import load_checkpoint

    vocab = Vocabulary.build([["a", "b"]])
    QPDN(QPDNConfig(num_words=len(vocab), num_classes=2, dim=2)).save_pretrained(tmp_path, vocabulary=vocab)
    data = vocab.to_dict()
    del data["doc_freq"]
    (tmp_path / "vocabulary.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocabulary.json: not a qpnlp vocabulary \(a serialised Vocabulary lacks "
                                         r"the key\(s\) \['doc_freq'\]"):
        load_checkpoint(tmp_path)


def test_ids_must_be_integers_in_word_of_and_decode():
    vocab = Vocabulary.build([["a", "b"]])
    with pytest.raises(TypeError, match=r"an id must be an integer; got float 1.5"):
        vocab.word_of(1.5)
    with pytest.raises(TypeError, match=r"ids must be integers; id 1 is float 2.7"):   # before: truncated to 'a'
        vocab.decode([3, 2.7])
    with pytest.raises(TypeError, match=r"ids must be integers; id 0 is float 2.0"):
        vocab.decode(torch.tensor([2.0]))
    with pytest.raises(IndexError, match="out of range"):
        vocab.word_of(9)
    assert vocab.decode(torch.tensor([2, 0, 3]), skip_pad=True) == ["a", "b"]
    assert vocab.decode(np.array([3, 1])) == ["b", "<unk>"]
    assert vocab.decode([torch.tensor(2), np.int64(3)]) == ["a", "b"]


def test_integer_arguments_of_the_vocabulary():
    vocab = Vocabulary.build([["a"]])
    with pytest.raises(ValueError, match=r"min_freq must be an integer >= 1, got 1.5"):
        Vocabulary.build([["a"]], min_freq=1.5)
    with pytest.raises(ValueError, match=r"max_size must be an integer >= 0 or None, got 2.5"):
        Vocabulary.build([["a"]], max_size=2.5)
    with pytest.raises(ValueError, match=r"max_new must be an integer >= 0 or None, got 1.5"):
        vocab.with_extra_words(["b"], max_new=1.5)
    with pytest.raises(TypeError, match=r"not a single str 'xyz' \(it would be read character by character\)"):
        vocab.with_extra_words("xyz")


def test_subset_past_the_end_is_a_value_error():
    with pytest.raises(ValueError, match=r"subset indices: index 5 at position 0 is outside 0..3"):
        _toy(n=4).subset([5])


@pytest.mark.parametrize("kwargs, message", [
    (dict(seed=None), r"seed must be an integer in \[0, 2\*\*32 - 1\]; got None"),
    (dict(seed=1.5), r"seed must be an integer .*got 1.5"),
    (dict(seed=-1), r"seed must be an integer .*got -1"),
    (dict(n_folds=2.5), r"n_folds must be an integer >= 2, got 2.5"),
    (dict(dev_fraction="0.1"), r"dev_fraction must lie in \[0, 1\), got '0.1'"),
])
def test_splits_refuse_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        next(splits(_toy(n=40), **kwargs))


def test_splits_with_the_largest_seed_carve_every_fold():
    folds = list(splits(_toy(n=40), seed=2 ** 32 - 1, n_folds=4))
    assert len(folds) == 4 and all(len(s.dev) for s in folds)


def test_carve_dev_refuses_a_bad_seed():
    with pytest.raises(ValueError, match=r"seed must be an integer .*got 0.5"):
        carve_dev(np.arange(10), np.array([0, 1] * 5), 0.2, seed=0.5)


def test_splits_refuse_a_data_set_name():
    """Before: an AttributeError ("'str' object has no attribute 'labels'") at the first fold."""
    with pytest.raises(TypeError, match=r"dataset must be a ClassificationDataset \(load_classification\(name\)\); "
                                        r"got str 'MR'"):
        next(splits("MR"))


@pytest.mark.parametrize("counts, sample, message", [
    ([3, 1], math.nan, "sample must be a finite number >= 0; got nan"),        # NaN keep probabilities: no token kept
    ([3, 1], -1e-3, "sample must be a finite number >= 0; got -0.001"),
    ([0, 0], 1e-3, r"counts must be finite, non-negative and not all zero; got \[0.0, 0.0\]"),   # NaN
    ([3, -1], 1e-3, r"counts must be .*got \[3.0, -1.0\]"),                   # a NaN and a probability > 1
])
def test_keep_probabilities_refuse_what_gives_nan(counts, sample, message):
    from qpnlp.data import keep_probabilities
    with pytest.raises(ValueError, match=message):
        keep_probabilities(np.array(counts), sample)
    assert keep_probabilities(np.array([], dtype=np.int64), 1e-3).shape == (0,)


@pytest.mark.parametrize("sample, error, message", [
    ("1e-3", TypeError, "sample must be a finite number >= 0; got str '1e-3'"),     # before: a ValueError
    (True, TypeError, "sample must be a finite number >= 0; got bool True"),        # before: a ValueError
    (torch.tensor(1e-3), TypeError, r"sample must be a finite number >= 0; got Tensor"),
    (10 ** 400, ValueError, "sample must be a finite number >= 0; got int too large for a float"),  # an OverflowError
], ids=["str", "bool", "tensor", "10**400"])
def test_keep_probabilities_check_sample_as_every_finite_real(sample, error, message):
    """``sample`` goes through the one check of a finite real (``qpnlp._checks.check_real``)."""
    from qpnlp.data import keep_probabilities
    with pytest.raises(error, match=message):
        keep_probabilities(np.array([3, 1]), sample)


def test_embedding_matrix_for_names_an_argument_of_the_wrong_kind():
    """Before: an AttributeError ("'str' object has no attribute 'dim'") naming neither argument."""
    from qpnlp.data import embedding_matrix_for, from_matrix
    vocab, vectors = Vocabulary.build([["a", "b"]]), from_matrix(["a"], np.ones((1, 2)))
    with pytest.raises(TypeError, match="pretrained must be a PretrainedVectors; got str 'glove-6b-50d'"):
        embedding_matrix_for(vocab, "glove-6b-50d")
    with pytest.raises(TypeError, match=r"vocab must be a Vocabulary; got list \['a', 'b'\]"):
        embedding_matrix_for(["a", "b"], vectors)


# ------------------------------------------------------------------ vector files: directories, words, underscores
def test_every_reader_says_the_same_of_a_directory(tmp_path):
    """Before: load_glove_text and iter_lines raised a bare IsADirectoryError ("[Errno 21] Is a directory");
    read_text and the timestamped reader (its own copy of the check) said it in words, differently."""
    from qpnlp.data.paths import iter_lines, read_text
    from qpnlp.data.pretrained import load_glove_text
    from qpnlp.data.timestamped import read_tsv
    for read in (load_glove_text, read_text, lambda p: next(iter_lines(p)), read_tsv):
        with pytest.raises(ValueError, match=f"^{tmp_path} is a directory; expected a text file$"):
            read(tmp_path)


@pytest.mark.parametrize("words, shown", [("ab", "str 'ab'"), (b"ab", "bytes b'ab'")])
def test_vector_readers_refuse_one_string_as_words(tmp_path, words, shown):
    """Before: words="ab" kept the words 'a' and 'b' (the set of its letters), silently."""
    from qpnlp.data.pretrained import load_glove_text
    from qpnlp.data.vectors import load_vectors
    path = tmp_path / "v.txt"
    path.write_text("a 1 2\nb 3 4\nab 5 6\n")
    for read in (load_glove_text, load_vectors):
        with pytest.raises(TypeError, match=f"words must be a collection of words, not a single {shown}"):
            read(path, words=words)
    assert load_glove_text(path, words=["ab"]).words == ["ab"]


def test_vector_text_refuses_a_number_with_underscores(tmp_path):
    """Before: Python's digit grouping read "1_0" as 10, silently."""
    from qpnlp.data.pretrained import load_glove_text
    path = tmp_path / "v.txt"
    path.write_text("new_york 1 2\nb 1_0 4\n")
    with pytest.raises(ValueError, match=f"{path}:2: non-numeric value '1_0' for word 'b'"):
        load_glove_text(path)
    path.write_text("new_york 1 2\n")
    assert load_glove_text(path).words == ["new_york"]        # an underscore in a word is a word's
