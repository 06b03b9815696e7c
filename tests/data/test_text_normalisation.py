"""One Unicode normalisation for every text input: the pre-tokenised Word2Fun TSV corpora and the words a user
names (``--words``) get the tokenizer's (format characters deleted, NFKC, curly quotes), vectors restricted to a
vocabulary keep what the spelling backoff looks up, and a TREC or QA text without any token is refused with its
line instead of reaching the model as an empty sentence."""

import numpy as np
import pytest

from qpnlp.cli import main
from qpnlp.data import TimestampedCorpus, Vocabulary, embedding_matrix_for, read_qa_tsv, read_tsv, write_tsv
from qpnlp.data.classification import read_trec
from qpnlp.data.backoff import backoff_keys
from qpnlp.data.timestamped import TsvStream
from qpnlp.data.tokenize import normalize_text, tokenize
from qpnlp.data.vectors import load_vectors

NFC, NFD = "caf\u00e9", "cafe\u0301"


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", ["a b", "caf\u00e9 union's", ""])
def test_normalize_text_leaves_normal_text_alone_and_tokenize_is_unchanged(text):
    assert normalize_text(text) == text
    assert tokenize("Union\u2019s \uff25nergy " + NFD) == ["union", "'s", "energy", NFC]


def test_a_tsv_corpus_counts_the_forms_of_one_word_as_one_word(tmp_path):
    """NFD 'café', full-width letters, a zero-width space, a curly apostrophe and a no-break space gave words of
    their own: the corpus counted 'café' once, and a BOM inside a line stuck to its token."""
    path = _write(tmp_path / "c.tsv", f"1900\t{NFC} energy union's\r\n"
                                      f"1901\t{NFD} \uff45\uff4e\uff45\uff52\uff47\uff59 union\u2019s\n"
                                      "1902\t\ufeffenergy\u200b\u00a0\u200b caf\u00e9")     # no final line end
    expected = [[NFC, "energy", "union's"], [NFC, "energy", "union's"], ["energy", NFC]]
    assert [list(d) for d in read_tsv(path).docs] == expected
    assert [toks for _, toks in TsvStream([path])] == expected
    vocab = Vocabulary.build(read_tsv(path).docs, specials=False)
    assert vocab.words == [NFC, "energy", "union's"] and vocab.counts.tolist() == [3, 3, 2]
    assert [list(d) for d in read_tsv(path, lowercase=True).docs] == expected


def test_write_tsv_refuses_a_token_that_would_read_back_as_another(tmp_path):
    corpus = TimestampedCorpus.from_pairs([(1900, [NFD, "b"])])
    with pytest.raises(ValueError, match="read back as 'caf\u00e9'"):
        write_tsv(corpus, tmp_path / "c.tsv")
    assert not (tmp_path / "c.tsv").exists()
    write_tsv(TimestampedCorpus.from_pairs([(1900, [NFC, "b"])]), tmp_path / "c.tsv")
    assert list(read_tsv(tmp_path / "c.tsv").docs[0]) == [NFC, "b"]


def _word2fun(corpus, *extra):
    return ["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--epochs", "1", "--batch-size", "64",
            "--negatives", "2", "--no-progress", "--eras", "2", "--min-count", "1", *extra]


def _accented_tsv(path, cafe: str):
    rng = np.random.default_rng(0)
    words = [cafe, "energy", "union", "war", "peace"]
    return _write(path, "".join(f"{1900 + i % 4}\t{' '.join(rng.choice(words, 6))}\n" for i in range(40)))


@pytest.mark.parametrize("in_corpus, in_words", [(NFD, NFC), (NFC, NFD)])
def test_word2fun_words_match_the_corpus_in_any_unicode_form(tmp_path, capsys, in_corpus, in_words):
    """The corpus wrote 'café' decomposed (NFD), --words composed (or the other way round): 'not in the corpus'."""
    import json

    report, corpus = tmp_path / "r.json", _accented_tsv(tmp_path / "c.tsv", in_corpus)
    assert main(_word2fun(corpus, "--words", f"{in_words},energy", "--report", str(report))) == 0, \
        capsys.readouterr().err
    assert list(json.loads(report.read_text())["details"]["nearest"]) == [NFC, "energy"]


def test_word2fun_words_in_another_case_name_the_vocabulary_spelling(tmp_path, capsys):
    assert main(_word2fun(_accented_tsv(tmp_path / "c.tsv", NFC), "--words", "Energy,nope")) == 2
    err = capsys.readouterr().err
    assert "'Energy' (not in the corpus; the vocabulary has 'energy')" in err and "'nope' (not in the corpus)" in err


def test_vectors_restricted_to_a_vocabulary_keep_what_the_backoff_looks_up(tmp_path):
    """load_vectors(words=vocab, backoff=True) kept 'scorsese' as written only: the cased 'Scorsese' and the parts
    of 'old-fashioned' were dropped before the backoff could find them, and every word was out of vocabulary."""
    path = _write(tmp_path / "v.txt", "Scorsese 1 2\nold 1 0\nfashioned 0 1\nother 5 5\n")
    vocab = Vocabulary.build([["scorsese", "old-fashioned"]])
    restricted = load_vectors(str(path), words=vocab.words, backoff=True)
    assert restricted.words == ["Scorsese", "old", "fashioned"]
    matrix, report = embedding_matrix_for(vocab, restricted)
    full, _ = embedding_matrix_for(vocab, load_vectors(str(path), backoff=True))
    assert report.n_oov == 0 and report.n_backoff == 2 and np.array_equal(matrix[2:], full[2:])
    assert load_vectors(str(path), words=vocab.words).words == []          # without backoff: as written only
    assert {"Scorsese", "SCORSESE", "old", "Fashioned"} <= backoff_keys(["scorsese", "old-fashioned"])


def test_a_trec_question_without_any_token_is_refused_with_its_line(tmp_path):
    path = _write(tmp_path / "trec.label", "DESC:def what is x ?\nNUM:count \u200b\u00ad\n")
    with pytest.raises(ValueError, match=r"trec.label:2: empty question"):
        read_trec(path)


@pytest.mark.parametrize("field", [0, 1])
def test_a_qa_question_or_candidate_without_any_token_is_refused_with_its_line(tmp_path, field):
    bad = ["what is x ?", "x is y ."]
    bad[field] = "\u200b"
    path = _write(tmp_path / "qa.tsv", "what is x ?\tx is y .\t1\nwhat is x ?\tno .\t0\n" + "\t".join(bad) + "\t1\n")
    with pytest.raises(ValueError, match=r"qa.tsv:3: empty question or candidate"):
        read_qa_tsv(path)
