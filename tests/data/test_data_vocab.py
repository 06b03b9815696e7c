import json
import math
import random

import pytest
import torch

from qpnlp.data.vocab import PAD, PAD_ID, UNK, UNK_ID, Vocabulary

TRAIN = [["the", "film", "is", "good"], ["the", "film", "is", "bad"], ["the", "plot"], ["good", "good"]]


@pytest.fixture
def vocab():
    return Vocabulary.build(TRAIN)


def test_reserved_ids_are_distinct(vocab):
    assert PAD_ID == 0 and UNK_ID == 1 and PAD_ID != UNK_ID
    assert vocab.words[:2] == [PAD, UNK]
    assert vocab.encode(["never-seen"]) == [UNK_ID]


def test_ids_by_frequency_then_alphabet(vocab):
    # the: 3, good: 3, film: 2, is: 2, bad: 1, plot: 1
    assert vocab.words[2:] == ["good", "the", "film", "is", "bad", "plot"]
    assert len(vocab) == 8
    assert vocab.encode(["the", "good", "movie"]) == [3, 2, UNK_ID]


def test_literal_pad_token_is_not_padding(vocab):
    assert vocab.encode([PAD, UNK]) == [UNK_ID, UNK_ID]
    assert PAD not in vocab and UNK not in vocab


def test_contains_and_decode(vocab):
    assert "film" in vocab and "movie" not in vocab and 3 not in vocab
    assert vocab.decode([3, 4, 0, 0]) == ["the", "film", PAD, PAD]
    assert vocab.decode(torch.tensor([3, 1, 0]), skip_pad=True) == ["the", UNK]
    with pytest.raises(IndexError, match="out of range"):
        vocab.decode([99])


def test_only_training_words_get_ids():
    dev = [["a", "new", "word"]]
    v = Vocabulary.build(TRAIN)
    assert v.encode(dev[0]) == [UNK_ID] * 3


def test_empty_sentence_raises(vocab):
    with pytest.raises(ValueError, match="empty sentence"):
        vocab.encode([])
    with pytest.raises(ValueError, match="text 1: .*empty"):
        vocab.encode_many([["the"], []])


def test_encode_rejects_a_string(vocab):
    with pytest.raises(TypeError, match="tokenize"):
        vocab.encode("the film")
    with pytest.raises(TypeError, match="tokenize"):
        Vocabulary.build(["the film"])


def test_min_freq_and_max_size():
    v = Vocabulary.build(TRAIN, min_freq=2)
    assert v.words[2:] == ["good", "the", "film", "is"]
    v = Vocabulary.build(TRAIN, max_size=3)
    assert v.words[2:] == ["good", "the", "film"] and len(v) == 5
    with pytest.raises(ValueError, match="min_freq"):
        Vocabulary.build(TRAIN, min_freq=0)


def test_frequencies(vocab):
    assert vocab.word_freq("good") == 3 and vocab.doc_freq("good") == 2
    assert vocab.word_freq("the") == 3 and vocab.doc_freq("the") == 3
    assert vocab.word_freq("movie") == 0 and vocab.doc_freq("movie") == 0
    assert vocab.n_docs == 4


def test_idf(vocab):
    idf = vocab.idf()
    assert idf.dtype == torch.float32 and idf.shape == (len(vocab),)
    n = 4
    expected = {w: math.log((1 + n) / (1 + vocab.doc_freq(w))) + 1 for w in vocab.words[2:]}
    for w, value in expected.items():
        assert idf[vocab.id_of(w)].item() == pytest.approx(value, rel=1e-6)
    assert idf[PAD_ID].item() == 0.0
    assert idf[UNK_ID].item() == pytest.approx(math.log(1 + n) + 1)
    assert idf[UNK_ID] == idf.max()  # unknown is rarer than any training word
    assert Vocabulary.build([["a"], ["a", "b"]]).idf()[2].item() == pytest.approx(1.0)  # in every text


def test_dict_round_trip_through_json(vocab):
    data = json.loads(json.dumps(vocab.to_dict()))
    back = Vocabulary.from_dict(data)
    assert back == vocab
    assert back.words == vocab.words
    assert back.encode(["plot", "x"]) == vocab.encode(["plot", "x"])
    assert torch.equal(back.idf(), vocab.idf())


def test_from_dict_rejects_other_data(vocab):
    with pytest.raises(ValueError, match="not a serialised Vocabulary"):
        Vocabulary.from_dict({"words": []})
    bad = vocab.to_dict()
    bad["doc_freq"] = bad["doc_freq"][:-1]
    with pytest.raises(ValueError, match="lengths differ"):
        Vocabulary.from_dict(bad)


def test_constructor_validates():
    with pytest.raises(ValueError, match="reserved"):
        Vocabulary([PAD], {PAD: 1}, {PAD: 1}, 1)
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(["a", "a"], {"a": 1}, {"a": 1}, 1)


def test_extra_words_get_ids_after_training_words_and_zero_counts(vocab):
    ext = vocab.with_extra_words(["film", "movie", PAD, "movie", "cinema", "plot", "actor"], max_new=2)
    assert ext.words == vocab.words + ["movie", "cinema"]
    assert ext.encode(["good", "movie", "actor"]) == [2, len(vocab), UNK_ID]
    assert ext.word_freq("movie") == 0 and ext.doc_freq("cinema") == 0
    assert ext.idf()[len(vocab)] == ext.idf()[UNK_ID]
    assert ext.idf()[: len(vocab)].tolist() == vocab.idf().tolist()
    assert Vocabulary.from_dict(json.loads(json.dumps(ext.to_dict()))) == ext
    assert vocab.encode(["movie"]) == [UNK_ID]  # the original is unchanged


def test_extra_words_bad_input(vocab):
    with pytest.raises(ValueError, match="max_new"):
        vocab.with_extra_words(["movie"], max_new=-1)
    with pytest.raises(TypeError, match="strings"):
        vocab.with_extra_words(["movie", 3])


# ------------------------------------------------------------------ without special tokens (skip-gram ids)
def test_without_specials_ids_are_dense_word_ids():
    v = Vocabulary.build(TRAIN, specials=False)
    with_specials = Vocabulary.build(TRAIN)
    assert v.words == with_specials.words[2:] == ["good", "the", "film", "is", "bad", "plot"]
    assert len(v) == 6 and not v.specials and with_specials.specials
    assert v.ids(["the", "plot"]) == [1, 5] and v.encode(["good", "film"]) == [0, 2] and v.id_of("is") == 3
    assert v.counts.tolist() == [3, 3, 2, 2, 1, 1]
    assert with_specials.counts.tolist() == [0, 0, 3, 3, 2, 2, 1, 1]
    assert dict(v.index) == {w: i for i, w in enumerate(v.words)}
    assert dict(with_specials.index) == {w: i + 2 for i, w in enumerate(v.words)}
    assert v.decode([0, 5], skip_pad=True) == ["good", "plot"]
    assert v.idf().tolist() == with_specials.idf()[2:].tolist()
    with pytest.raises(KeyError, match="'movie'"):
        v.encode(["good", "movie"])
    with pytest.raises(KeyError, match="'movie'"):
        v.id_of("movie")
    with pytest.raises(KeyError, match="'<unk>'"):
        with_specials.ids([UNK])


def test_without_specials_the_reserved_strings_are_ordinary_words():
    v = Vocabulary.build([[PAD, "a", PAD]], specials=False)
    assert v.words == [PAD, "a"] and v.encode([PAD]) == [0] and PAD in v


def test_without_specials_round_trip_and_extra_words():
    v = Vocabulary.build(TRAIN, specials=False)
    data = json.loads(json.dumps(v.to_dict()))
    assert data["specials"] is False and "specials" not in Vocabulary.build(TRAIN).to_dict()
    back = Vocabulary.from_dict(data)
    assert back == v and not back.specials and back != Vocabulary.build(TRAIN)
    ext = v.with_extra_words(["film", "movie"])
    assert ext.words == v.words + ["movie"] and not ext.specials
    with pytest.raises(ValueError, match="specials must be"):
        Vocabulary.from_dict({**data, "specials": "no"})


def test_ids_of_an_existing_vocabulary_are_unchanged():
    """The classification ids and the serialised form are exactly those of the vocabulary before specials=."""
    v = Vocabulary.build(TRAIN)
    assert v.to_dict() == {"format": "qpnlp.Vocabulary/1", "words": ["good", "the", "film", "is", "bad", "plot"],
                           "word_freq": [3, 3, 2, 2, 1, 1], "doc_freq": [2, 3, 2, 2, 1, 1], "n_docs": 4}
    assert [v.id_of(w) for w in ["good", "the", "film", "is", "bad", "plot", "zzz"]] == [2, 3, 4, 5, 6, 7, UNK_ID]


def _idf_word_by_word(v: Vocabulary) -> torch.Tensor:
    """The formula of Vocabulary.idf one id at a time (its code before it was vectorised)."""
    n = v.n_docs
    dfs = [0.0] * (2 if v.specials else 0) + [float(v.doc_freq(w)) for w in v.words[2 if v.specials else 0:]]
    idf = torch.tensor([math.log((1 + n) / (1 + df)) + 1.0 for df in dfs], dtype=torch.float32)
    if v.specials:
        idf[PAD_ID] = 0.0
    return idf


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("specials", [True, False])
def test_idf_equals_the_formula_word_by_word(seed, specials):
    """Vectorised: the same float32 values, bit for bit, as the per-word formula; empty, one word, ties."""
    rng = random.Random(seed)
    size = [0, 1, 2, 50, 300, 1000][seed]
    words = [rng.choice(["w", "café", "Ω", "日本", "😀"]) + str(i) for i in range(size)]
    n_docs = rng.choice([0, 1, 7, 10 ** 6]) if size == 0 else rng.choice([1, 7, 10 ** 6])
    df = {w: rng.choice([0, 1, n_docs, rng.randint(0, n_docs)]) for w in words}     # ties: df 0, 1 and N repeat
    scrambled = dict(sorted(df.items(), key=lambda _: rng.random()) + [("not-a-word", 3)])   # order, extra key
    v = Vocabulary(words, dict.fromkeys(words, 1), scrambled, n_docs, specials=specials)
    idf = v.idf()
    assert idf.dtype == torch.float32 and idf.shape == (len(v),)
    assert torch.equal(idf, _idf_word_by_word(v))
    assert torch.equal(Vocabulary.from_dict(json.loads(json.dumps(v.to_dict()))).idf(), idf)
