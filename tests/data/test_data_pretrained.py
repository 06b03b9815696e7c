import gzip

import numpy as np
import pytest
import torch

from qpnlp.data.pretrained import (
    PretrainedVectors,
    embedding_matrix_for,
    from_matrix,
    load_glove_50d,
    load_glove_text,
    with_pretrained_fallback,
)
from qpnlp.data.vocab import PAD_ID, UNK_ID, Vocabulary


def _write(tmp_path, text, name="vec.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_glove_text_without_header(tmp_path):
    pv = load_glove_text(_write(tmp_path, "the 0.1 0.2 0.3\n, -1 0 1\n\ncat 1e-3 2 3 \n"))
    assert pv.words == ["the", ",", "cat"] and pv.dim == 3
    assert pv.vectors.dtype == np.float32 and pv.vectors.shape == (3, 3)
    np.testing.assert_allclose(pv.vector("cat"), [1e-3, 2, 3])
    assert pv.index["cat"] == 2 and "dog" not in pv


def test_glove_text_with_word2vec_header(tmp_path):
    pv = load_glove_text(_write(tmp_path, "2 2\na 1 2\nb 3 4\n"))
    assert pv.words == ["a", "b"] and pv.dim == 2


@pytest.mark.parametrize("header", [b"", b"2 2\r"])
def test_glove_text_with_old_mac_line_ends(tmp_path, header):
    # a file of "\r" line ends was read as one line: "non-numeric value '2\rb' for word 'a'"
    path = tmp_path / "vec.txt"
    path.write_bytes(header + b"a 1 2\rb 3 4\r")
    pv = load_glove_text(path)
    assert pv.words == ["a", "b"] and pv.vectors.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_glove_text_wrong_column_count_names_the_line(tmp_path):
    path = _write(tmp_path, "a 1 2 3\nb 1 2\n")
    with pytest.raises(ValueError, match=r"vec.txt:2: expected 4 space-separated columns .* got 3"):
        load_glove_text(path)
    with pytest.raises(ValueError, match=r":1: expected 3 space-separated"):
        load_glove_text(path, dim=2)


def test_glove_text_words_holding_spaces(tmp_path):
    # glove.840B.300d.txt has a few words with spaces (". . .", "at name@domain.com"): the last d columns are the
    # values; an extra numeric column is still a dimension mismatch
    pv = load_glove_text(_write(tmp_path, "a 1 2\n. . . 3 4\nat name@domain.com 5 6\n"))
    assert pv.words == ["a", ". . .", "at name@domain.com"]
    np.testing.assert_array_equal(pv.vector(". . ."), [3, 4])
    with pytest.raises(ValueError, match=r":2: expected 3 space-separated columns .* got 4"):
        load_glove_text(_write(tmp_path, "a 1 2\nb 3 4 5\n"))


@pytest.mark.parametrize("text", ["a\t1\t2\nb\t3\t4\n", "a\t1 2\nb\t3 4\n", "a  1  2\nb 3 4\t\n",
                                  "2 2\na\t1\t2\nb\t3\t4\n"], ids=["tabs", "tab-then-spaces", "runs", "header"])
def test_glove_text_columns_may_be_separated_by_tabs_or_runs_of_spaces(tmp_path, text):
    """'a<TAB>1 2' was read as the word 'a<TAB>1' with the 1-d vector [2], silently; tabs alone were 'a single
    column', and a doubled space a 'non-numeric value'."""
    pv = load_glove_text(_write(tmp_path, text))
    assert pv.words == ["a", "b"] and pv.dim == 2
    np.testing.assert_array_equal(pv.vectors, [[1, 2], [3, 4]])


def test_glove_text_without_any_vector_or_of_dimension_zero_is_refused(tmp_path):
    """A header alone gave an empty set of vectors (every word silently out of vocabulary); a header of dimension 0
    gave vectors of dimension 0, refused later by a model without the file named."""
    with pytest.raises(ValueError, match=r"vec.txt: no vectors found"):
        load_glove_text(_write(tmp_path, "0 50\n"))
    with pytest.raises(ValueError, match=r"vec.txt:1: the header 'N dim' says dim 0; expected dim >= 1"):
        load_glove_text(_write(tmp_path, "2 0\na\nb\n"))
    with pytest.raises(ValueError, match="dim must be an integer >= 1"):
        load_glove_text(_write(tmp_path, "a 1 2\n"), dim=0)
    assert load_glove_text(_write(tmp_path, "1 2\na 1 2\n"), words=set()).words == []    # filtered: still fine


def test_glove_text_non_numeric_value_names_the_line(tmp_path):
    with pytest.raises(ValueError, match=r":2: non-numeric value 'x' for word 'b'"):
        load_glove_text(_write(tmp_path, "a 1 2\nb 1 x\n"))


def test_glove_text_header_dim_mismatch(tmp_path):
    with pytest.raises(ValueError, match="header says dim 2, expected 3"):
        load_glove_text(_write(tmp_path, "1 2\na 1 2\n"), dim=3)


def test_glove_text_duplicates_and_filter(tmp_path):
    path = _write(tmp_path, "a 1 1\nb 2 2\na 3 3\nc 4 4\n")
    pv = load_glove_text(path)
    assert pv.words == ["a", "b", "c"]
    np.testing.assert_array_equal(pv.vector("a"), [1, 1])  # first occurrence wins
    assert load_glove_text(path, words={"c", "zz"}).words == ["c"]


def test_glove_text_empty_file(tmp_path):
    with pytest.raises(ValueError, match="no vectors"):
        load_glove_text(_write(tmp_path, "\n"))


def test_glove_text_header_count_must_match(tmp_path):
    with pytest.raises(ValueError, match=r"header announces 3 vectors, the file has 2 \(truncated\?\)"):
        load_glove_text(_write(tmp_path, "3 2\na 1 2\nb 3 4\n"))
    with pytest.raises(ValueError, match="header announces 1 vectors, the file has 2$"):
        load_glove_text(_write(tmp_path, "1 2\na 1 2\nb 3 4\n"), words={"a"})  # counted before filtering


def test_glove_text_non_finite_and_encoding_errors_name_the_line(tmp_path):
    with pytest.raises(ValueError, match=r"vec.txt:3: non-finite value for word 'c'"):
        load_glove_text(_write(tmp_path, "a 1 2\nb 3 4\nc nan 1\n"))
    assert load_glove_text(_write(tmp_path, "a 1 2\nc inf 1\n"), words={"a"}).words == ["a"]  # dropped rows unchecked
    path = tmp_path / "latin.txt"
    path.write_bytes("a 1 2\ncafé 3 4\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.txt:2: not utf-8 text \(byte 0xe9 at column 4\)"):
        load_glove_text(path)
    assert load_glove_text(path, encoding="latin-1").words == ["a", "café"]


def test_glove_text_gzip_errors_name_the_users_file(tmp_path):
    path = tmp_path / "vec.txt.gz"
    path.write_bytes(gzip.compress(b"a 1 2\nb 1 x\n"))
    with pytest.raises(ValueError, match=r"vec.txt.gz:2: non-numeric value 'x'"):
        load_glove_text(path)
    rows = "".join(f"w{i} {i} {i * i}\n" for i in range(2000)).encode()
    path.write_bytes(gzip.compress(rows)[:-20])  # the end of the stream cut off
    with pytest.raises(ValueError, match="vec.txt.gz: truncated or corrupt gzip file"):
        load_glove_text(path)


def test_from_matrix_takes_a_tensor_of_any_layout(real_layout):
    """An embedding's weight (requires grad), a negative-bit view or bfloat16 raised in np.asarray."""
    matrix = torch.tensor([[0.5, -1.0], [2.0, 0.25]])                            # values bfloat16 holds
    pv = from_matrix(["a", "b"], real_layout(matrix))
    assert pv.vectors.dtype == np.float32 and pv.vectors.tolist() == matrix.tolist()


def test_from_matrix_validates():
    with pytest.raises(ValueError, match="2 words but 3 vector rows"):
        from_matrix(["a", "b"], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="duplicate word 'a'"):
        from_matrix(["a", "a"], np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"non-finite values, first at row 1 \('b'\)"):
        from_matrix(["a", "b"], np.array([[0.0, 1.0], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        from_matrix(["a"], np.zeros(3))
    with pytest.raises(KeyError, match="no pretrained vector"):
        from_matrix(["a"], np.zeros((1, 2))).vector("b")


@pytest.fixture
def toy():
    vocab = Vocabulary.build([["good", "film", "qqzx"], ["film", "good", "film"], ["wxyv"]])
    pv = from_matrix(["film", "good", "the"], np.arange(6.0).reshape(3, 2) + 1)
    return vocab, pv


def test_embedding_matrix_rows(toy):
    vocab, pv = toy
    m, report = embedding_matrix_for(vocab, pv, seed=3)
    assert m.dtype == np.float32 and m.shape == (len(vocab), 2)
    assert np.all(m[PAD_ID] == 0)
    np.testing.assert_array_equal(m[vocab.id_of("film")], pv.vector("film"))
    np.testing.assert_array_equal(m[vocab.id_of("good")], pv.vector("good"))
    random_rows = [UNK_ID, vocab.id_of("qqzx"), vocab.id_of("wxyv")]
    assert np.all(np.abs(m[random_rows]) <= 0.25) and np.all(m[random_rows] != 0)
    assert report.n_words == 4 and report.n_oov == 2 and report.rate == 0.5
    assert report.token_rate == pytest.approx(2 / 7)
    assert set(report.examples) == {"qqzx", "wxyv"} and "2/4" in str(report)


def test_embedding_matrix_is_seeded(toy):
    vocab, pv = toy
    a, _ = embedding_matrix_for(vocab, pv, seed=0)
    b, _ = embedding_matrix_for(vocab, pv, seed=0)
    c, _ = embedding_matrix_for(vocab, pv, seed=1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[UNK_ID], c[UNK_ID])


def test_embedding_matrix_init_options(toy):
    vocab, pv = toy
    z, _ = embedding_matrix_for(vocab, pv, unk_init="zeros")
    assert np.all(z[UNK_ID] == 0)
    n, _ = embedding_matrix_for(vocab, pv, unk_init="normal", scale=0.1)
    assert np.all(n[PAD_ID] == 0) and np.any(np.abs(n[UNK_ID]) > 0)
    f, _ = embedding_matrix_for(vocab, pv, unk_init=lambda rng, shape: np.full(shape, 7.0))
    assert np.all(f[UNK_ID] == 7) and np.all(f[PAD_ID] == 0)
    with pytest.raises(ValueError, match="returned shape"):
        embedding_matrix_for(vocab, pv, unk_init=lambda rng, shape: np.zeros(2))
    with pytest.raises(ValueError, match="unk_init must be"):
        embedding_matrix_for(vocab, pv, unk_init="xavier")


def test_embedding_matrix_without_special_tokens():
    # Skip-gram vocabularies (specials=False) have dense word ids: ids 0 and 1 are words, not PAD/UNK.
    dense = Vocabulary.build([["film", "good", "film", "qqzx"], ["good", "film"]], specials=False)
    assert dense.words == ["film", "good", "qqzx"]
    pv = from_matrix(["film", "good", "the"], np.arange(6.0).reshape(3, 2) + 1)
    m, report = embedding_matrix_for(dense, pv, seed=3)
    assert m.shape == (3, 2)
    np.testing.assert_array_equal(m[0], pv.vector("film"))
    np.testing.assert_array_equal(m[1], pv.vector("good"))
    assert np.all(np.abs(m[2]) <= 0.25) and np.all(m[2] != 0)
    assert report.n_words == 3 and report.n_oov == 1 and report.examples == ("qqzx",)
    assert report.token_rate == pytest.approx(1 / 6)


def test_oov_report_covers_the_training_words_not_the_fallback(toy):
    # a pretrained fallback vocabulary appends words taken from the vectors (all found): they must not dilute
    # the coverage of the training vocabulary (glove-6b-50d's default fallback of 400k words gave 0.1 %)
    vocab, pv = toy
    _, plain = embedding_matrix_for(vocab, pv)
    _, padded = embedding_matrix_for(with_pretrained_fallback(vocab, pv, 10), pv)
    assert (padded.n_words, padded.n_oov, padded.rate) == (plain.n_words, plain.n_oov, plain.rate) == (4, 2, 0.5)
    assert padded.token_rate == plain.token_rate and "2/4" in str(padded)


def test_fallback_appends_only_words_the_tokenizer_can_produce(toy):
    # GloVe 6B 50d's 400k words hold 5,311 that tokenize() never writes ("u.s." -> "u.s ." , "&amp;" -> "& amp ;",
    # "\u2019s" -> "'s"): the fallback gave them rows nothing could look up. The others keep their order and vectors,
    # and n counts them.
    vocab, _ = toy
    words = ["the", "u.s.", "The", "&amp;", "\u2019s", "don't", "-lrb-", "u.s", "'s", "n't", ",", "dual-layer",
             "caf\u00e9"]
    pv = from_matrix(words, np.arange(2.0 * len(words)).reshape(-1, 2))
    kept = ["the", "u.s", "'s", "n't", ",", "dual-layer", "caf\u00e9"]
    full = with_pretrained_fallback(vocab, pv, len(words))
    assert full.words[len(vocab):] == kept
    assert with_pretrained_fallback(vocab, pv, 3).words[len(vocab):] == kept[:3]
    matrix, _ = embedding_matrix_for(full, pv)
    for word in kept:
        np.testing.assert_array_equal(matrix[full.id_of(word)], pv.vector(word))


def test_every_fallback_word_round_trips_through_the_tokenizer(tmp_path):
    from qpnlp.data.tokenize import tokenize

    lines = ["the", "U.S.", "u.s.", "st.", "&amp;", "\u2018", "\u2019ll", "n\u2019t", "\u2026", "...", "--", "``",
             "-rrb-", "can't", "it's", "1,725", "3.5", "1/2x", "o'neill", "at&t", "\uff45nergy", "a\u200bb",
             "cafe\u0301", "Scorsese", "\u00e9t\u00e9", "_", "<unk>", "<pad>"]
    path = _write(tmp_path, "".join(f"{w} {i} 1\n" for i, w in enumerate(lines)))
    pv = load_glove_text(path)
    vocab = with_pretrained_fallback(Vocabulary.build([["film"]]), pv, len(pv))
    appended = vocab.words[3:]
    assert appended and all(tokenize(w) == [w] for w in appended)
    assert appended == [w for w in pv.words if tokenize(w) == [w] and w not in ("<unk>", "<pad>")]
    assert {"u.s.", "U.S.", "&amp;", "can't", "-rrb-", "\uff45nergy", "Scorsese"}.isdisjoint(appended)


def test_glove_50d_package():
    pv = load_glove_50d()
    assert isinstance(pv, PretrainedVectors)
    assert pv.vectors.shape == (400_000, 50) and pv.vectors.dtype == np.float32
    assert pv.words[:3] == ["the", ",", "."]
    np.testing.assert_allclose(pv.vector("the")[:3], [0.418, 0.24968, -0.41242], rtol=1e-5)
    assert "nan" in pv and "null" in pv  # read as strings, not missing values
    assert load_glove_50d() is pv  # cached
    assert not pv.vectors.flags.writeable
    with pytest.raises(ValueError):
        pv.vectors[0, 0] = 1.0


@pytest.mark.data
def test_glove_coverage_of_mr(data_root):
    from qpnlp.data.classification import load_classification

    vocab = Vocabulary.build(load_classification("MR", root=data_root).texts)
    m, report = embedding_matrix_for(vocab, load_glove_50d())
    assert m.shape == (len(vocab), 50)
    assert report.rate < 0.15 and report.token_rate < 0.02
