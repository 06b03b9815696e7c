"""What users pass by mistake: times out of range, odd query arguments, checkpoints, vocabularies and saved files."""

import json
import warnings

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus, Vocabulary
from qpnlp.word2fun import KeyedVectors, StaticKeyedVectors, TrainConfig, fit
from qpnlp.word2fun.evaluate import heldout_pairs, word2fun_log_likelihood

DOCS = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(60)]
CONFIG = TrainConfig(epochs=1, batch_size=256)


@pytest.fixture
def vectors(make, randomise):
    vocab = Vocabulary.build([["war", "peace", "war", "trade", "army", "army", "navy"]], specials=False)
    return KeyedVectors(randomise(make(len(vocab), 4, family="IV", logistic=True), seed=1), vocab)


# ------------------------------------------------------------------ times
@pytest.mark.parametrize("year", [1e13, -2e12, 1e30])
def test_times_beyond_the_representable_range_are_errors(vectors, year):
    # the docs promise an error beyond +-1e12; float32 sines of 1e30 gave arbitrary vectors, silently
    with pytest.raises(ValueError, match=r"within \+-1e\+12"):
        vectors.model.vectors(torch.tensor([0]), torch.tensor([year], dtype=torch.float64))
    with pytest.raises(ValueError, match=r"within \+-1e\+12"):
        vectors.most_similar("war", year=year)


def test_a_query_outside_the_training_span_warns(vectors):
    # the functions are fitted on 1900-2000 only: 19500 (a typo for 1950) extrapolated without a word
    with pytest.warns(UserWarning, match=r"time 19500 lies outside the training span \[1900, 2000\]") as caught:
        vectors.most_similar("war", year=19500)
    assert caught[0].filename == __file__            # the warning names the caller's line
    with pytest.warns(UserWarning, match="outside the training span"):
        vectors.change_degree("war", (1900, 1910), (2990, 3000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vectors.similarity("war", "army", year=2000)  # the span's ends are inside it
        vectors.grid(["war"], np.arange(1900, 2001, 10.0))


@pytest.mark.parametrize("call, error, match", [
    (lambda v: v.grid(["war"], 1950), TypeError, r"times must be a sequence of raw times \(e.g. \[1950\]\)"),
    (lambda v: v.grid(["war"], [[1950, 1960]]), ValueError, r"times must be one-dimensional"),
    (lambda v: v.most_similar("war", year="nineteen-fifty"), TypeError, "year must be one raw time"),
    (lambda v: v.at([1950, 1960]), TypeError, "year must be one raw time"),
    (lambda v: v.change_degree("war", 1900, (1990, 2000)), TypeError, r"period_a must be a \(start, end\) pair"),
    (lambda v: v.change_degree("war", (1900, 1910), (1990, 2000, 2010)), TypeError, "period_b must be a"),
    (lambda v: v.change_degree("war", (1900, 1910), (1990, 2000), step="1"), ValueError, "step must be a positive"),
    (lambda v: v.most_similar(b"war", year=1950), TypeError, "words must be str"),
    (lambda v: v.most_similar("war", year=1950, min_count="2"), ValueError, "min_count must be an int >= 0"),
])
def test_query_arguments_of_the_wrong_shape_are_named(vectors, call, error, match):
    # these failed inside torch or numpy (expand, 'int' object is not iterable, '>' not supported, KeyError 119),
    # and a third item of a period was ignored
    with pytest.raises(error, match=match):
        call(vectors)


# ------------------------------------------------------------------ most_similar
def test_most_similar_reads_an_iterator_of_words_once(vectors):
    # the look-up consumed the generator and the query then said it had no word
    expected = vectors.most_similar(["war", "army"], topn=2, year=1950)
    assert vectors.most_similar((w for w in ["war", "army"]), topn=2, year=1950) == expected
    assert vectors.most_similar(negative=iter(["peace"]), year=1950) == vectors.most_similar(negative=["peace"],
                                                                                             year=1950)


def test_a_query_that_is_the_zero_vector_is_an_error(vectors):
    # every cosine was 0.0 and the words came back in vocabulary order, as if ranked
    with pytest.raises(ValueError, match="is the zero vector"):
        vectors.most_similar(positive=["war"], negative=["war"], year=1950)
    view = StaticKeyedVectors(["a", "b", "c"], np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="is the zero vector"):
        view.most_similar("a")


def test_the_static_view_refuses_non_finite_vectors():
    # a NaN vector made every cosine NaN: most_similar returned [] without a word
    with pytest.raises(ValueError, match=r"the vector of 'b' \(row 1\) holds NaN or inf"):
        StaticKeyedVectors(["a", "b", "c"], np.array([[1.0, 0.0], [np.nan, 0.0], [0.0, 1.0]]))
    with pytest.raises(TypeError, match="real numbers"):
        StaticKeyedVectors(["a", "b"], np.array([["x", "y"], ["z", "w"]]))


# ------------------------------------------------------------------ export and files
def test_export_npz_refuses_a_directory_and_takes_one_word(vectors, tmp_path):
    # numpy wrote a directory DIR as the file DIR.npz beside it; one word was split into its letters
    with pytest.raises(IsADirectoryError, match="is a directory"):
        vectors.export_npz(tmp_path, ["war"], [1950])
    assert not tmp_path.with_name(tmp_path.name + ".npz").exists()
    vectors.export_npz(tmp_path / "g.npz", "war", [1950, 1960])
    z = np.load(tmp_path / "g.npz")
    assert z["words"].tolist() == ["war"] and z["E"].shape == (2, 1, 4)


@pytest.mark.parametrize("content, match", [([1, 2], "a JSON list, not an object"),
                                            ("specials", "with special tokens"),
                                            ("extra", "a vocabulary of 6 words")])
def test_a_saved_vocabulary_that_does_not_fit_names_its_file(vectors, tmp_path, content, match):
    # a JSON list failed with AttributeError; a vocabulary of another size or with specials named no file
    vectors.save_pretrained(tmp_path / "m")
    path = tmp_path / "m" / "vocabulary.json"
    data = json.loads(path.read_text())
    if content == "specials":
        data["specials"] = True
    elif content == "extra":
        data["words"].append("tea")
        data["word_freq"].append(1)
        data["doc_freq"].append(1)
    else:
        data = content
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=f"vocabulary.json: .*{match}"):
        KeyedVectors.from_pretrained(tmp_path / "m")


# ------------------------------------------------------------------ fit
def test_fit_refuses_a_checkpoint_it_could_not_write_before_training(tmp_path, monkeypatch):
    # the refusal came from save_pretrained after the first epoch: a whole epoch of training lost
    import qpnlp.word2fun.train as train

    def never(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(train, "_train_checked", never)
    own = tmp_path / "notes"
    own.mkdir()
    (own / "todo.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="holds no config.json"):
        fit(TimestampedCorpus.from_pairs(DOCS), CONFIG, dim=4, min_count=1, checkpoint=own)
    with pytest.raises(ValueError, match="is not a directory"):
        fit(TimestampedCorpus.from_pairs(DOCS), CONFIG, dim=4, min_count=1, checkpoint=own / "todo.txt")
    assert (own / "todo.txt").read_text() == "mine"


def test_resume_from_vectors_without_a_training_run_is_named(vectors, tmp_path):
    # a directory saved by save_pretrained (no epochs, no corpus) failed with KeyError: 'corpus'
    vectors.save_pretrained(tmp_path / "plain")
    with pytest.raises(ValueError, match="holds Word2Fun vectors but no training run of fit"):
        fit(TimestampedCorpus.from_pairs(DOCS), CONFIG, dim=4, min_count=1, checkpoint=tmp_path / "plain", resume=True)


def test_fit_refuses_a_vocabulary_none_of_whose_words_the_corpus_has():
    # the run "trained" on 0 tokens and returned the initial vectors with loss 0
    other = Vocabulary.build([["tea", "cake", "tea"]], specials=False)
    with pytest.raises(ValueError, match=r"no token of the corpus is in the vocabulary \(2 words"):
        fit(TimestampedCorpus.from_pairs(DOCS), CONFIG, dim=4, vocabulary=other)


@pytest.mark.parametrize("other", [[], ["zz"]])
def test_fit_refuses_a_corpus_whose_trained_tokens_have_one_time(other):
    """Every word of the vocabulary in 1950, and in 1990 a document without a token (or only a word below min_count):
    it passed the single-time refusal and trained a drift over 1950-1990 from 1950's tokens alone.  The refusal is
    its own ValueError, which ``qpnlp train word2fun`` catches by type (it matched the message's start) to name the
    corpus's files."""
    from qpnlp.word2fun import TimeScale
    from qpnlp.word2fun._corpus_checks import OneTimeCorpus

    corpus = TimestampedCorpus.from_pairs([(1950, ["war", "tax", "peace"] * 2)] * 5 + [(1990, other)])
    assert issubclass(OneTimeCorpus, ValueError)
    with pytest.raises(OneTimeCorpus, match=r"every token of the vocabulary \(3 words\) is dated 1950: the "
                                            r"documents of other times hold none"):
        fit(corpus, CONFIG, dim=4, family="linear", min_count=2)
    scaled = fit(corpus, CONFIG, dim=4, family="linear", min_count=2, time_scale=TimeScale(1900, 2000, 30.0))
    assert scaled.vectors.time_span == (1900.0, 2000.0)         # a given time scale may hold one time's data


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(config={"epochs": 1}), TypeError, "config must be a TrainConfig; got dict"),
    (dict(vocabulary=["war", "peace"]), TypeError, "vocabulary must be a Vocabulary"),
    (dict(min_count=0), ValueError, "min_count must be an int >= 1; got 0"),
    (dict(min_count=2.5), ValueError, "min_count must be an int >= 1; got 2.5"),
    (dict(compass="frozen", compass_epochs=0), ValueError, "compass_epochs must be an int >= 1"),
])
def test_fit_names_arguments_of_the_wrong_kind(kwargs, error, match):
    # AttributeError ('dict' has no attribute 'device'), min_freq instead of min_count, 'epochs' for compass_epochs
    with pytest.raises(error, match=match):
        fit(TimestampedCorpus.from_pairs(DOCS), **{"config": CONFIG, "dim": 4, **kwargs})


def test_held_out_pairs_of_another_vocabulary_are_an_error(vectors):
    # an IndexError from inside the embedding look-up
    corpus = TimestampedCorpus.from_pairs(DOCS + [(1905, ["a", "b", "c", "d", "e", "f"])])
    pairs = heldout_pairs(corpus, Vocabulary.build(corpus.docs, specials=False), window=2)
    with pytest.raises(ValueError, match=r"the pairs hold word id \d+ but the model has 5 words"):
        word2fun_log_likelihood(vectors.model, pairs)


def test_query_times_may_be_any_iterable_of_numbers(vectors):
    expected = vectors.grid(["war"], [1950.0, 1960.0])
    for times in ((t for t in (1950, 1960)), range(1950, 1961, 10), np.array([1950.0, 1960.0], np.float32),
                  torch.tensor([1950.0, 1960.0])):
        assert torch.equal(vectors.grid(["war"], times), expected)


def test_query_times_is_the_public_check_of_times(vectors):
    # qpnlp.training.evaluate reached the private KeyedVectors._query_times to warn about corpus times
    times = vectors.query_times(t for t in (1950, 1960.5))
    assert times.dtype == np.float64 and times.tolist() == [1950.0, 1960.5]
    with pytest.raises(TypeError, match=r"the corpus times must be a sequence of raw times \(e.g. \[1950\]\)"):
        vectors.query_times(1950, "the corpus times")
    with pytest.warns(UserWarning, match=r"time 1800 lies outside the training span \[1900, 2000\]"):
        assert vectors.query_times(torch.tensor([1800, 1950])).tolist() == [1800.0, 1950.0]
    assert "query_times" in type(vectors).__doc__           # documented where the class is


def test_every_reader_of_times_refuses_the_same_times_naming_its_argument(vectors):
    """Four readers of times (``query_times``, ``Word2Fun.indicators``, the drift measures' years, the temporal
    trajectories' times) checked them four ways (``indicators`` took complex times as their real part and no
    generator, messages differed): one reader, ``qpnlp._checks.time_values``, now."""
    from qpnlp.evaluation.drift import change_scores
    from qpnlp.interpret import similarity_trajectories
    ids = torch.tensor([0, 1])
    readers = {   # each caller's own error types: (one number, items that are no numbers)
        "query_times": (lambda t: vectors.query_times(t), (TypeError, ValueError), "times"),
        "indicators": (lambda t: vectors.model.indicators(ids, times=t), (None, ValueError), "times"),
        "drift": (lambda t: change_scores(torch.ones(2, 2, 3), t, (0, 0), (1, 1)), (ValueError, ValueError), "years"),
        "temporal": (lambda t: similarity_trajectories(vectors, "war", ["army"], t), (TypeError, TypeError), "times"),
    }
    for name, (read, (one, not_numbers), arg) in readers.items():
        with pytest.raises(TypeError, match=f"{arg} must be real numbers; got complex128"):
            read([1950 + 1j, 1960])
        with pytest.raises(ValueError, match=fr"{arg} must be one-dimensional \(T,\), one number per time; got shape"):
            read([[1950.0, 1960.0]])
        with pytest.raises(not_numbers, match=f"{arg} must be a sequence of numbers"):
            read(["1950s", "1960s"])
        # NumPy dates were read as units since 1970 (1950 as -20.0; indicators took them so too)
        for dates in (np.array(["1950", "1960"], dtype="datetime64[Y]"), [np.datetime64("1950-05-01")] * 2):
            with pytest.raises(not_numbers, match=fr"{arg} must be a sequence of numbers \(got datetime64"):
                read(dates)
        if one is not None:
            with pytest.raises(one, match=fr"{arg} must be a sequence of raw times \(e.g. \[1950\]\)"):
                read(1950)
        if name != "query_times":                          # non-finite query times are the model's errors
            with pytest.raises(ValueError, match=f"{arg} must be finite; got nan at index 1"):
                read([1950.0, float("nan")])
    year = 1950.1
    expected = vectors.model.indicators(ids, times=np.array([year]))["mean_abs_derivative"]
    for times in ([year], (t for t in [year]), year, torch.tensor(year, dtype=torch.float64)):
        assert torch.equal(vectors.model.indicators(ids, times=times)["mean_abs_derivative"], expected)
