"""Word2Fun tables: similarity trajectories, nearest words per era, change ranking."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from qpnlp.interpret import change_ranking, equal_eras, nearest_by_era, similarity_trajectories
from qpnlp.data import Vocabulary
from qpnlp.word2fun import KeyedVectors, Word2Fun, Word2FunConfig

WORDS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def embeddings():
    """Linear family on [0, 1] (tau = t): f(a) = e0, f(b, t) = (1 - t, t), f(c) = e1, f(d) = (1, 0.1)."""
    model = Word2Fun(Word2FunConfig(vocab_size=4, dim=2, family="linear", span_start=0.0, span_end=1.0, time_scale=1.0))
    with torch.no_grad():
        model.base.weight.copy_(torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.1]]))
        model.slope.weight.copy_(torch.tensor([[0.0, 0.0], [-1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]))
    counts = dict(zip(WORDS, [10, 10, 10, 1]))
    return KeyedVectors(model, Vocabulary(WORDS, counts, dict.fromkeys(WORDS, 1), 1, specials=False))


def test_similarity_trajectories_are_the_cosines_over_time(embeddings):
    table = similarity_trajectories(embeddings, "a", ["b", "c"], [0.0, 0.5, 1.0])
    assert list(table.columns) == ["b", "c"] and table.index.name == "time"
    assert table.index.tolist() == [0.0, 0.5, 1.0]
    assert table["b"].tolist() == pytest.approx([1.0, 1 / math.sqrt(2), 0.0], abs=1e-6)
    assert table["c"].tolist() == pytest.approx([0.0, 0.0, 0.0], abs=1e-6)


def test_nearest_by_era(embeddings):
    table = nearest_by_era(embeddings, "a", [(0.0, 0.0), (1.0, 1.0)], k=2)
    assert list(table.columns) == ["era", "time", "rank", "word", "cosine"]
    first = table[table["rank"] == 1]
    assert first["word"].tolist() == ["b", "d"] and first["era"].tolist() == ["0-0", "1-1"]
    assert first["cosine"].iloc[0] == pytest.approx(1.0)
    wide = table.pivot(index="rank", columns="era", values="word")
    assert wide.shape == (2, 2)
    assert nearest_by_era(embeddings, "a", 2, k=1)["era"].tolist() == ["0-0.5", "0.5-1"]
    assert "d" not in nearest_by_era(embeddings, "a", [(1.0, 1.0)], k=3, min_count=5)["word"].tolist()
    with pytest.warns(UserWarning, match="outside the training span"):     # "1.7e+09-1.71231e+09" before
        assert nearest_by_era(embeddings, "a", [(1.7e9, 1712312000.0)], k=1)["era"].tolist() == ["1700000000-1712312000"]


def test_change_ranking(embeddings):
    table = change_ranking(embeddings, (0.0, 0.0), (1.0, 1.0))
    assert list(table.columns) == ["word", "count", "change"]
    assert table["word"].iloc[0] == "b" and table["change"].iloc[0] == pytest.approx(1.0)  # e0 -> e1
    assert table["change"].iloc[1:].abs().max() < 1e-6
    assert change_ranking(embeddings, (0.0, 0.0), (1.0, 1.0), min_count=5)["word"].tolist().count("d") == 0
    assert len(change_ranking(embeddings, (0.0, 0.5), (0.5, 1.0), top=2, step=0.25)) == 2
    only = change_ranking(embeddings, (0.0, 0.0), (1.0, 1.0), words=["c", "b"])
    assert only["word"].tolist() == ["b", "c"]


@pytest.mark.parametrize("measure", ["cosine", "context"])
def test_change_ranking_is_the_change_degree_of_each_word(embeddings, measure):
    # one batched change_degrees call; the reference asks change_degree word by word, as the ranking did
    for words in (None, ["b"], ["d", "a", "c"]):                         # a, c and d tie: change 0
        table = change_ranking(embeddings, (0.0, 0.5), (0.5, 1.0), words=words, step=0.25, measure=measure)
        names = WORDS if words is None else words
        rows = [(w, int(embeddings.counts[embeddings.get_index(w)]),
                 embeddings.change_degree(w, (0.0, 0.5), (0.5, 1.0), step=0.25, measure=measure)) for w in names]
        expect = pd.DataFrame(rows, columns=["word", "count", "change"]).sort_values(
            "change", ascending=False, kind="stable").reset_index(drop=True)
        pd.testing.assert_frame_equal(table, expect, check_exact=False, rtol=1e-6, atol=1e-7)

def test_equal_eras_and_errors(embeddings):
    assert equal_eras(0, 3, 3) == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]
    with pytest.raises(ValueError, match="start < end"):
        equal_eras(1, 1, 2)
    with pytest.raises(KeyError, match="'zebra'"):
        similarity_trajectories(embeddings, "a", ["zebra"], [0.0])
    with pytest.raises(ValueError, match="others is empty"):
        similarity_trajectories(embeddings, "a", [], [0.0])
    with pytest.raises(ValueError, match="finite"):
        similarity_trajectories(embeddings, "a", ["b"], [0.0, float("nan")])
    with pytest.raises(ValueError, match="times is empty"):
        similarity_trajectories(embeddings, "a", ["b"], [])
    with pytest.raises(ValueError, match="eras"):
        nearest_by_era(embeddings, "a", [(1.0, 0.0)])
    with pytest.raises(ValueError, match="period_a"):
        change_ranking(embeddings, (1.0, 0.0), (0.0, 1.0))
    with pytest.raises(ValueError, match="no word"):
        change_ranking(embeddings, (0.0, 0.0), (1.0, 1.0), min_count=100)
    with pytest.raises(TypeError, match="KeyedVectors"):
        change_ranking(pd.DataFrame(), (0.0, 0.0), (1.0, 1.0))


def test_times_must_be_a_flat_sequence_of_numbers(embeddings):
    with pytest.raises(ValueError, match=r"times must be one-dimensional \(T,\), one number per time; got shape \(2, 2\)"):
        similarity_trajectories(embeddings, "a", ["b"], [[0.0, 1.0], [0.5, 1.0]])    # was flattened silently
    with pytest.raises(TypeError, match=r"times must be a sequence of raw times \(e.g. \[0.5\]\); got float"):
        similarity_trajectories(embeddings, "a", ["b"], 0.5)                         # "'float' object is not iterable"
    with pytest.raises(TypeError, match="times must be a sequence of numbers"):
        similarity_trajectories(embeddings, "a", ["b"], ["x"])
    assert similarity_trajectories(embeddings, "a", ["b"], torch.tensor([0.0, 1.0])).index.tolist() == [0.0, 1.0]


def test_complex_times_are_an_error_and_tensors_of_any_layout_are_their_values(embeddings):
    """Complex times were cast to their real part with only a numpy warning (as ``KeyedVectors.query_times`` did);
    a tensor that requires grad raised torch's "Can't call numpy() on Tensor that requires grad"."""
    for times in (torch.tensor([0.0 + 1j]), np.array([0.5 + 1j]), [0.5 + 1j]):
        with pytest.raises(TypeError, match="times must be real numbers; got complex"):
            similarity_trajectories(embeddings, "a", ["b"], times)
    times = torch.tensor([0.0, 1.0], requires_grad=True)
    assert similarity_trajectories(embeddings, "a", ["b"], times).index.tolist() == [0.0, 1.0]


def test_eras_and_periods_of_the_wrong_type_name_the_argument(embeddings):
    # eras=2.0 gave "'float' object is not iterable"; a string period numpy's "ufunc 'isfinite' not supported"
    with pytest.raises(TypeError, match=r"eras must be an int \(a number of equal eras\) or a sequence of "
                                        r"\(start, end\); got float 2.0"):
        nearest_by_era(embeddings, "a", 2.0)
    with pytest.raises(TypeError, match="eras must be an int"):
        nearest_by_era(embeddings, "a", "0-1")
    with pytest.raises(TypeError, match=r"eras\[1\] must be a \(start, end\) pair of numbers; got int 1"):
        nearest_by_era(embeddings, "a", [(0.0, 0.5), 1])
    with pytest.raises(ValueError, match=r"eras\[0\] must be a \(start, end\) pair; got 3 values"):
        nearest_by_era(embeddings, "a", [(0.0, 0.5, 1.0)])
    for period in ("01", "0-1", 0.5, ("0", "1"), (0.0, None)):
        with pytest.raises(TypeError, match="period_a must be a \\(start, end\\) pair of numbers"):
            change_ranking(embeddings, period, (1.0, 1.0))
    with pytest.raises(TypeError, match="period_b must be a"):
        change_ranking(embeddings, (0.0, 0.0), "01")
    with pytest.raises(ValueError, match="period_a must be \\(start, end\\) with finite"):
        change_ranking(embeddings, (0.0, float("nan")), (1.0, 1.0))
    assert len(change_ranking(embeddings, [0, 0], (1, 1))) == 4                   # lists and ints still accepted


def test_similarity_trajectories_equal_the_table_built_word_by_word(embeddings):
    """One batched query: the same table as a grid of the two words per column (the code before it was batched),
    a word named twice one column."""
    def column(v, times):
        G = embeddings.grid(["a", v], times)
        G = G / G.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return (G[:, 0] * G[:, 1]).sum(-1).numpy()

    for others, times in [(["b"], [0.5]), (["d", "b", "c", "b", "a"], [0.0, 0.25, 1.0]), (WORDS, [1.0, 0.0])]:
        table = similarity_trajectories(embeddings, "a", others, times)
        expect = pd.DataFrame({v: column(v, times) for v in others}, index=pd.Index([float(t) for t in times],
                                                                                   name="time"))
        pd.testing.assert_frame_equal(table, expect, check_exact=True)


class _SingularQueries:
    """KeyedVectors as they were before the batched queries: ``change_degree`` and ``similarity_over_time`` only
    (no ``change_degrees``, no ``similarities_over_time``)."""

    _HAS = ("index_to_key", "counts", "get_index", "time_span", "most_similar", "change_degree",
            "similarity_over_time")

    def __init__(self, embeddings):
        self._embeddings = embeddings

    def __contains__(self, word):
        return word in self._embeddings

    def __len__(self):
        return len(self._embeddings)

    def __getattr__(self, name):
        if name in self._HAS:
            return getattr(self._embeddings, name)
        raise AttributeError(name)


def test_embeddings_without_a_method_a_function_calls_are_refused_naming_it(embeddings):
    """The check asked every function for all five methods and named none ("need Word2Fun KeyedVectors; got X"):
    an object with change_degree but not change_degrees did not learn what it lacked, and nearest_by_era refused
    an object with all it calls."""
    old = _SingularQueries(embeddings)
    with pytest.raises(TypeError, match=r"got _SingularQueries, which has no change_degrees$"):
        change_ranking(old, (0.0, 0.0), (1.0, 1.0))
    with pytest.raises(TypeError, match=r"got _SingularQueries, which has no similarities_over_time$"):
        similarity_trajectories(old, "a", ["b"], [0.0])
    pd.testing.assert_frame_equal(nearest_by_era(old, "a", 2, k=2), nearest_by_era(embeddings, "a", 2, k=2))
    with pytest.raises(TypeError, match=r"got object, which has no __contains__, __len__, most_similar, time_span$"):
        nearest_by_era(object(), "a", 2)
