"""The time axis on the times users have: negative, fractional, Unix seconds, two times, gaps, short spans."""

import json
import warnings

import numpy as np
import pytest
import torch

from qpnlp.cli import main
from qpnlp.data import TimestampedCorpus, Vocabulary, write_tsv
from qpnlp.interpret import era_label
from qpnlp.word2fun import KeyedVectors, TimeScale, TrainConfig, Word2Fun, Word2FunConfig, fit
from qpnlp.word2fun.changepoint import best_splits

WORDS = ["war", "peace", "army", "trade", "tax", "king", "law", "ship"]


def _corpus(times) -> TimestampedCorpus:
    rng = np.random.default_rng(0)
    return TimestampedCorpus.from_pairs([(t, list(rng.choice(WORDS, 12))) for t in times])


TIMES = {
    "negative (BCE)": [-400 + 10 * (i % 20) for i in range(40)],
    "through zero": [-10 + i % 21 for i in range(40)],
    "fractional": [1990.5 + 0.25 * (i % 8) for i in range(40)],
    "Unix seconds": [1.7e9 + 86400 * 30 * (i % 20) for i in range(40)],
    "two times": [1900 + i % 2 for i in range(40)],
    "unsorted, repeated": [1950, 1900, 1950, 1925, 1900, 1910] * 7,
    "a gap": [1800 if i % 2 else 2000 for i in range(40)],
    "one outlier": [1900] * 39 + [1901],
}


@pytest.mark.parametrize("times", TIMES.values(), ids=TIMES.keys())
def test_fit_trains_on_the_times_users_have_and_warns_outside_them(times):
    vectors = fit(_corpus(times), TrainConfig(epochs=1), dim=4, min_count=1).vectors
    assert vectors.time_span == (min(times), max(times))
    seen = sorted(set(times))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # the data's own times: no extrapolation warning
        assert torch.isfinite(vectors.grid(WORDS, seen)).all()
    width = max(times) - min(times)
    with pytest.warns(UserWarning, match="outside the training span"):
        assert torch.isfinite(vectors.grid(["war"], [max(times) + width])).all()   # extrapolated, not clamped


@pytest.mark.parametrize("times, match", [([1900.0] * 6, "single time"),
                                          ([1.7e12, 1.7e12 + 864e5] * 3, "Unix milliseconds")])
def test_fit_refuses_times_it_cannot_train_and_says_what_to_do(times, match):
    with pytest.raises(ValueError, match=match):
        fit(_corpus(times), TrainConfig(epochs=1), dim=4, min_count=1)


def test_fit_warns_when_the_corpus_leaves_the_time_scale_it_is_given():
    corpus = _corpus([1900 + i % 50 for i in range(60)])
    with pytest.warns(UserWarning, match=r"corpus spans \[1900, 1949\], beyond the time scale's \[1900, 1910\]"):
        fit(corpus, TrainConfig(epochs=1), dim=4, min_count=1, time_scale=TimeScale(1900, 1910, 30.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # a scale that covers the corpus: silent
        fit(corpus, TrainConfig(epochs=1), dim=4, min_count=1, time_scale=TimeScale(1850, 1950, 30.0))


@pytest.mark.parametrize("era, label", [((1900, 1925), "1900-1925"), ((1900, 1933.3333333), "1900-1933.33"),
                                        ((1900.0, 1900.5), "1900-1900.5"), ((1990.5, 1990.9375), "1990.5-1990.94"),
                                        ((2020.1, 2020.15), "2020.1-2020.15"), ((-400, -352.5), "-400 to -352.5"),
                                        ((1.7e9, 1712312000.0), "1700000000-1712312000"), ((0.0, 0.0), "0-0")])
def test_era_labels_keep_the_decimals_the_era_needs(era, label):
    assert era_label(*era) == label


def _vectors(start, end) -> KeyedVectors:
    vocab = Vocabulary.build([["a", "b"]], specials=False)
    return KeyedVectors(Word2Fun(Word2FunConfig(2, 2, family="linear", span_start=start, span_end=end)), vocab)


def test_a_span_shorter_than_a_year_is_sampled_and_exported(tmp_path):
    short = _vectors(2020.1, 2020.7)                    # decimal years within one year
    assert short.default_step() == pytest.approx(0.6 / 1000)
    years = np.load(short.export_npz(tmp_path / "g.npz"))["years"]
    assert len(years) == 1001 and years[0] == 2020.1 and years[-1] == pytest.approx(2020.7)   # was empty
    assert _vectors(1900, 1901).default_step() == 1.0 and _vectors(1900, 2000).default_step() == 1.0


def test_the_report_of_two_times_labels_and_samples_both_eras(tmp_path, capsys, monkeypatch):
    write_tsv(_corpus([1900 + i % 2 for i in range(60)]), tmp_path / "c.tsv")
    report, out, sampled = tmp_path / "r.json", tmp_path / "ck", {}
    times = KeyedVectors._times
    monkeypatch.setattr(KeyedVectors, "_times", lambda self, a, b, step, name="the period": sampled.setdefault(
        name, times(self, a, b, step, name)))                # the times each period of the change degree reads
    code = main(["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--dim", "4", "--epochs", "1",
                 "--negatives", "2", "--min-count", "1", "--no-progress", "--words", "war", "--topk", "2",
                 "--report", str(report), "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert [line.split(":")[0].strip() for line in stdout.splitlines()[1:]] == ["1900-1900.5", "1900.5-1901"]
    details = json.loads(report.read_text())["details"]
    assert details["eras"] == [[1900.0, 1900.5], [1900.5, 1901.0]]
    # each era sampled at both ends: the last one at 1900.5 alone (step 1) before, never at the corpus's 1901
    assert sampled["period_a"].tolist() == [1900.0, 1900.5] and sampled["period_b"].tolist() == [1900.5, 1901.0]
    f = KeyedVectors.from_pretrained(out).grid(["war"], [1900.0, 1900.5, 1901.0])[:, 0].double()
    expected = 1 - torch.cosine_similarity(f[:2].mean(0), f[1:].mean(0), dim=0)
    assert details["change_degree"]["war"] == pytest.approx(float(expected), abs=1e-6)


@pytest.mark.parametrize("occupied", [[], [3], [0, 0, 5]])
def test_change_points_of_words_in_one_bin_or_none_are_the_middle(occupied):
    sums, counts = torch.zeros(len(occupied) or 1, 8, 4), torch.zeros(len(occupied) or 1, 8)
    for word, b in enumerate(occupied):
        counts[word, b], sums[word, b] = 50, 1.0
    centre, found = best_splits(sums, counts)
    assert torch.equal(centre, torch.full_like(centre, 0.5)) and not found.any()
