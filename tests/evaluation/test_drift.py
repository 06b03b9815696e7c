import dataclasses
import gc
import re
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.data.synthetic_drift import PlantedDrift
from qpnlp.evaluation.drift import (
    DriftGrid, _ranking_metrics, auc, change_points, change_scores, context_change_scores, evaluate_grid,
    nearest_topic, noise_corrected,
)


def test_auc_against_brute_force():
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 1, 30), rng.normal(0, 1, 40)
    pos[:3] = neg[:3]  # ties
    ref = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert auc(pos, neg) == pytest.approx(ref)
    assert auc([1, 2], [3]) == 0.0 and np.isnan(auc([], [1]))


def _pairwise_auc(pos, neg):  # the O(n^2) definition the module used before scikit-learn
    diff = np.asarray(pos, float)[:, None] - np.asarray(neg, float)[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


@pytest.mark.parametrize("seed", range(5))
def test_auc_by_scikit_learn_equals_the_pairwise_count(seed):
    rng = np.random.default_rng(seed)
    pos, neg = rng.integers(0, 8, 200).astype(float), rng.integers(0, 6, 300).astype(float)  # many ties
    assert auc(pos, neg) == pytest.approx(_pairwise_auc(pos, neg), abs=1e-12)
    big_pos, big_neg = rng.normal(0.3, 1, 20_000), rng.normal(0, 1, 20_000)  # O(n log n): fast at 20k per class
    assert auc(big_pos, big_neg) == pytest.approx(_pairwise_auc(big_pos[:2000], big_neg[:2000]), abs=0.03)


def test_change_scores_and_context_scores():
    years = np.arange(4.0)
    E = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[1.0, 1.0]], [[0.0, 1.0]]])
    # early mean (1, 0), late mean (0.5, 1): 1 - 0.5 / sqrt(1.25)
    assert change_scores(E, years, (0, 1), (2, 3)).item() == pytest.approx(1 - 0.5 / np.sqrt(1.25), abs=1e-6)
    P = torch.tensor([[[0.2, 0.8]], [[0.4, 0.6]], [[0.9, 0.1]], [[0.7, 0.3]]])
    assert context_change_scores(P, years, (0, 1), (2, 3)).item() == pytest.approx(0.5, abs=1e-6)


def test_years_of_any_layout_are_their_values_and_complex_years_an_error():
    E = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[1.0, 1.0]], [[0.0, 1.0]]])
    plain = change_scores(E, np.arange(4.0), (0, 1), (2, 3))
    grad_years = torch.arange(4.0, requires_grad=True)             # np.asarray raised torch's "requires grad"
    assert torch.equal(change_scores(E, grad_years, (0, 1), (2, 3)), plain)
    for complex_years in (np.arange(4.0) + 1j, [0, 1, 2, 3 + 1j]):  # were cut to their real part
        with pytest.raises(TypeError, match="years must be real"):
            change_scores(E, complex_years, (0, 1), (2, 3))


def test_change_points_finds_planted_splits():
    T, D = 50, 6
    years = np.arange(1900.0, 1950.0)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=D), rng.normal(size=D)
    E = np.zeros((T, 3, D))
    for j, c in enumerate([10, 25, 40]):
        E[:, j] = np.where(np.arange(T)[:, None] < c, a, b) + 0.05 * rng.normal(size=(T, D))
    est = change_points(torch.tensor(E, dtype=torch.float32), years).numpy()
    assert np.allclose(est, [1909.5, 1924.5, 1939.5])


def test_nearest_topic():
    Et = torch.tensor([[[[1.0, 0.0], [0.9, 0.1]], [[0.0, 1.0], [0.1, 0.9]]]])  # 1 time, 2 topics, 2 words
    Ep = torch.tensor([[[0.8, 0.3], [0.2, 0.9]]])
    assert nearest_topic(Ep, Et).tolist() == [[0, 1]]


def perfect_case(noise=0.0, shuffle=False):
    """Hand-made grid: topic k is the basis vector e_k; drift words interpolate as planted."""
    K, M, D = 4, 3, 4
    years = np.arange(2000.0, 2040.0)
    strength = np.array([0.3, 0.6, 0.8, 1.0, 0.0, 0.0])
    switch = np.array([2015.0, 2020.0, 2025.0, 2018.0, np.nan, np.nan])
    width = np.array([0.0, 6.0, 0.0, 4.0, np.nan, np.nan])
    source, dest = np.array([0, 1, 2, 3, 0, 1]), np.array([1, 2, 3, 0, 0, 1])
    truth = PlantedDrift(words=tuple(f"p{i}" for i in range(6)), kind=("drift",) * 4 + ("stable", "trap"),
                         source=source, dest=dest, strength=strength, switch_year=switch, width=width,
                         topic_words=tuple(tuple(f"t{k}w{j}" for j in range(M)) for k in range(K)), years=years)
    eye = torch.eye(D)
    rng = np.random.default_rng(1)
    E = torch.zeros(len(years), 6 + K * M, D)
    for ti, y in enumerate(years):
        mix = truth.mixture(y)
        for p in range(6):
            E[ti, p] = (1 - mix[p]) * eye[source[p]] + mix[p] * eye[dest[p]]
        for k in range(K):
            for j in range(M):
                E[ti, 6 + k * M + j] = eye[k]
    E = E + noise * torch.from_numpy(rng.normal(size=E.shape)).float()
    words = list(truth.words) + [w for tw in truth.topic_words for w in tw]
    ctx = 5 * torch.stack([eye[k] for k in range(K) for _ in range(M)])[None]
    return DriftGrid(E, words, years, context=ctx, context_words=words[6:]), truth


@pytest.mark.parametrize("space", ["vector", "prediction"])
def test_evaluate_grid_on_a_perfect_grid(space):
    grid, truth = perfect_case()
    r = evaluate_grid(grid, truth, space=space)
    assert r["spearman"] == pytest.approx(1.0)
    assert r["auc"] == 1.0 and r["acc_before"] == 1.0 and r["acc_after"] == 1.0
    assert r["change_year_mae"] <= 0.5
    assert r["trap_top_rank"] >= 5  # after the 4 drift words (tied with the stable word)


def test_evaluate_grid_without_drift_words_is_a_clear_error():
    # no drift word: np.concatenate raised "need at least one array to concatenate"
    grid, truth = perfect_case()
    none = dataclasses.replace(truth, kind=("stable",) * 5 + ("trap",))
    for space in ("vector", "prediction"):
        with pytest.raises(ValueError, match=r"truth has no drift word \(kinds \['stable', 'trap'\] over 6 probes\)"):
            evaluate_grid(grid, none, space=space)


def test_evaluate_grid_collapses_on_a_grid_without_change():
    grid, truth = perfect_case()
    E = grid.E[:1].expand_as(grid.E)  # every word frozen at its first vector
    static = DriftGrid(E, grid.words, grid.years, context=grid.context, context_words=grid.context_words)
    r = evaluate_grid(static, truth)
    assert np.isnan(r["spearman"]) or abs(r["spearman"]) < 1e-9
    assert r["acc_after"] < 0.5


def test_evaluate_grid_per_word_adds_up_to_acc_after():
    grid, truth = perfect_case()
    E = grid.E[:1].expand_as(grid.E)  # frozen: every word stays at its source topic
    static = DriftGrid(E, grid.words, grid.years, context=grid.context, context_words=grid.context_words)
    r = evaluate_grid(static, truth, per_word=True)
    words = r["per_word"]
    assert list(words) == ["p0", "p1", "p2", "p3"]  # the drift words only
    assert words["p0"]["acc_after"] == 1.0 and words["p0"]["wrong_years_after"] == []  # strength 0.3: source dominates
    assert words["p1"]["acc_after"] is None  # strength 0.6: within 0.1 of 0.5, left out
    assert words["p2"]["acc_after"] == 0.0 and words["p2"]["wrong_years_after"] == list(np.arange(2025.0, 2040.0))
    assert words["p3"]["wrong_years_after"] == list(np.arange(2020.0, 2040.0))  # switch 2018, width 4
    assert r["acc_after"] == pytest.approx(25 / (25 + 15 + 20))  # p0's 25 years right, p2's 15 and p3's 20 wrong
    moving = evaluate_grid(grid, truth, per_word=True)["per_word"]
    changes = [moving[w]["change"] for w in ("p0", "p1", "p2", "p3")]
    assert changes == sorted(changes) and changes[0] < changes[-1]  # grows with the planted strength
    assert "per_word" not in evaluate_grid(static, truth)


def test_grid_validation_and_npz_round_trip(tmp_path):
    grid, truth = perfect_case(noise=0.01)
    grid.save_npz(tmp_path / "g.npz")
    back = DriftGrid.load_npz(tmp_path / "g.npz")
    assert torch.equal(back.E, grid.E) and back.words == grid.words
    with pytest.raises(ValueError, match="E must be"):
        DriftGrid(torch.zeros(3, 2, 4), ["a"], [1, 2, 3])
    with pytest.raises(ValueError, match="context must be"):
        DriftGrid(torch.zeros(3, 1, 4), ["a"], [1, 2, 3], context=torch.zeros(2, 1, 4), context_words=["a"])


def test_npz_round_trip_keeps_context_and_timings(tmp_path):
    # save_npz used to drop the context vectors: the loaded grid was scored in vector space, not prediction space
    grid, truth = perfect_case(noise=0.2)
    grid = DriftGrid(grid.E, grid.words, grid.years, 12.5, 1e6, grid.context, grid.context_words)
    grid.save_npz(tmp_path / "g.npz")
    back = DriftGrid.load_npz(tmp_path / "g.npz")
    assert torch.equal(back.context, grid.context) and back.context_words == grid.context_words
    assert (back.train_seconds, back.tokens_per_s) == (12.5, 1e6)
    assert evaluate_grid(back, truth) == evaluate_grid(grid, truth)
    plain = DriftGrid(grid.E, grid.words, grid.years)  # no context: still round-trips
    plain.save_npz(tmp_path / "p.npz")
    again = DriftGrid.load_npz(tmp_path / "p.npz")
    assert again.context is None and again.context_words == () and np.isnan(again.train_seconds)


def test_npz_keeps_words_with_separators_and_refuses_a_trailing_nul(tmp_path):
    # NumPy's str arrays drop trailing NULs: "a\x00" was saved as "a", "\x00" as "", and the grid read back with
    # another word in that column, silently (or "words must be distinct" when both were there)
    odd = ("a b", "", "x\ty", "1,725", '"', "#", "-x", "a\x00b")
    grid = DriftGrid(torch.zeros(2, len(odd), 3), odd, [1.0, 2.0], context=torch.zeros(1, 2, 3),
                     context_words=("c,d", "\n"))
    grid.save_npz(tmp_path / "g.npz")
    back = DriftGrid.load_npz(tmp_path / "g.npz")
    assert back.words == odd and back.context_words == ("c,d", "\n")
    for words, context_words, named in ((("ok", "a\x00"), ("c",), "words[1]"),
                                        (("ok", "a"), ("\x00",), "context_words[0]")):
        bad = DriftGrid(torch.zeros(1, 2, 3), words, [1.0], context=torch.zeros(1, 1, 3), context_words=context_words)
        with pytest.raises(ValueError, match=re.escape(named) + ".*ends in a NUL"):
            bad.save_npz(tmp_path / "bad.npz")
        assert not (tmp_path / "bad.npz").exists()


def test_change_scores_reject_a_period_without_times():
    E, years = torch.ones(4, 2, 3), np.arange(2000.0, 2004.0)
    P = torch.full((4, 2, 3), 0.5)
    with pytest.raises(ValueError, match="early period .* contains no time"):  # used to return NaN
        change_scores(E, years, (1990, 1995), (2002, 2003))
    with pytest.raises(ValueError, match="late period .* contains no time"):
        context_change_scores(P, years, (2000, 2001), (2010, 2020))


def test_change_scores_name_an_empty_grid():
    # a grid of no time (T = 0) failed in the period's mean with torch's "min(): Expected reduction dim"
    for score, X in ((change_scores, torch.ones(0, 2, 3)), (context_change_scores, torch.full((0, 2, 3), 0.5))):
        with pytest.raises(ValueError, match=r"the grid is empty \(years has no time, T = 0\): the early period"):
            score(X, np.array([]), (2000, 2001), (2002, 2003))


@pytest.mark.parametrize("early, late, name", [(1, (2, 3), "early"), ((0, 1), 2000.0, "late"),
                                               ((0, 1, 2), (2, 3), "early"), ((0, 1), "2, 3", "late")])
def test_change_scores_want_each_period_as_a_start_end_pair(early, late, name):
    # one year for a range failed with a bare "'int' object is not subscriptable", three years read the first two
    E, P, years = torch.ones(4, 2, 3), torch.full((4, 2, 3), 0.5), np.arange(4.0)
    match = f"{name} must be a \\(start, end\\) pair, an inclusive range of years; got"
    for score, X in ((change_scores, E), (context_change_scores, P)):
        with pytest.raises(TypeError, match=match):
            score(X, years, early, late)
        with pytest.raises(TypeError, match=match):
            noise_corrected(score, X, years, early, late)
    pair = change_scores(E, years, (0, 1), (2, 3))                  # any pair of numbers: a list, a tensor
    assert torch.equal(change_scores(E, years, [0, 1], torch.tensor([2.0, 3.0])), pair)


@pytest.mark.parametrize("value, error", [(float("nan"), ValueError), (float("inf"), ValueError), (-1.0, ValueError),
                                          ("3", TypeError), (True, TypeError), (None, TypeError)])
def test_evaluate_grid_names_a_bad_min_segment_years(value, error):
    # NaN failed in the change-point split with "cannot convert float NaN to integer", inf with an OverflowError
    grid, truth = perfect_case()
    with pytest.raises(error, match="min_segment_years must be a"):
        evaluate_grid(grid, truth, space="vector", min_segment_years=value)


def test_change_points_need_two_times():
    with pytest.raises(ValueError, match="T >= 2"):
        change_points(torch.ones(1, 2, 3), np.array([2000.0]))
    with pytest.raises(ValueError, match="3 years"):
        change_points(torch.ones(4, 2, 3), np.arange(3.0))
    E = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])               # fewer than 2 * min_segment times: split anywhere
    assert change_points(E, np.array([2000.0, 2001.0])).tolist() == [2000.5]


def test_change_points_and_scores_stay_on_the_device_of_the_trajectories(device):
    # change_points built its split sizes and the years on the CPU: a CUDA E failed on mixing devices
    E = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 1.0]]], dtype=torch.float64, device=device)
    years = np.array([2000.0, 2001.0, 2002.0, 2003.0])
    points = change_points(E, years, min_segment=1)
    assert points.device.type == device.type and points.dtype == torch.float64
    assert points.cpu().tolist() == [2001.5]
    scores = change_scores(E, years, (2000, 2001), (2002, 2003))
    assert scores.device.type == device.type and scores.dtype == torch.float64
    assert scores.cpu().tolist() == [1.0]

def _century_case(switch):
    """100 yearly times (1900-1999), one abrupt drift word per ``switch`` (strength 1), topics = basis vectors."""
    K, M = 2, 2
    years = np.arange(1900.0, 2000.0)
    n = len(switch)
    truth = PlantedDrift(words=tuple(f"p{i}" for i in range(n)) + ("s0",), kind=("drift",) * n + ("stable",),
                         source=np.zeros(n + 1, int), dest=np.array([1] * n + [0]), strength=np.array([1.0] * n + [0.0]),
                         switch_year=np.array(list(switch) + [np.nan]), width=np.array([0.0] * n + [np.nan]),
                         topic_words=tuple(tuple(f"t{k}w{j}" for j in range(M)) for k in range(K)), years=years)
    eye = torch.eye(K)
    E = torch.zeros(len(years), n + 1 + K * M, K)
    for ti, y in enumerate(years):
        mix = truth.mixture(y)
        for p in range(n + 1):
            E[ti, p] = (1 - mix[p]) * eye[truth.source[p]] + mix[p] * eye[truth.dest[p]]
        E[ti, n + 1:] = eye.repeat_interleave(M, 0)
    words = list(truth.words) + [w for tw in truth.topic_words for w in tw]
    return E, words, truth


def test_change_year_mae_lets_a_binned_grid_place_a_switch_in_its_first_and_last_bins():
    # the minimum segment of the change-point split is a span of time (3 years), not 3 grid times: with 3 grid times a
    # decade grid (the gensim baselines) could place no change before 1929.7 or after 1969.3, so a switch in 1921 or
    # 1978 cost it about 8 years where a yearly grid is free to find it
    switch = [1921.0, 1978.0, 1950.0]
    E, words, truth = _century_case(switch)
    yearly = evaluate_grid(DriftGrid(E, words, truth.years), truth, space="vector")
    assert yearly["change_year_mae"] == pytest.approx(0.5)  # midpoints c - 1/2 of the steps
    decades = np.arange(100) // 10
    Eb = torch.stack([E[torch.from_numpy(decades == k)].mean(0) for k in range(10)])
    centres = 1904.5 + 10.0 * np.arange(10)
    binned = evaluate_grid(DriftGrid(Eb, words, centres), truth, space="vector")
    # the splits between the bins holding most of each word's old and new years: 1919.5, 1979.5, 1949.5
    assert binned["change_year_mae"] == pytest.approx((1.5 + 1.5 + 0.5) / 3)
    fixed = evaluate_grid(DriftGrid(Eb, words, centres), truth, space="vector", min_segment_years=30.0)
    assert fixed["change_year_mae"] > 5  # the previous rule (3 grid times = 30 years): 1929.5 and 1969.5


def test_change_points_reject_trajectories_that_would_give_a_silent_wrong_year():
    E = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 1.0]]])
    # years given newest first used to give the midpoint 1.5 of the reversed split, as if they were increasing
    with pytest.raises(ValueError, match="years must be strictly increasing; got 3 then 2 at index 1"):
        change_points(E, np.array([3.0, 2.0, 1.0, 0.0]), min_segment=1)
    with pytest.raises(ValueError, match="years must be finite"):
        change_points(E, np.array([0.0, 1.0, np.nan, 3.0]), min_segment=1)
    # a NaN vector used to be argmax'ed into a year (0.5 here), a (T, W) matrix read as T scalars per word
    E_nan = E.clone()
    E_nan[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"E contains NaN or inf \(first at index \(0, 0, 0\)\)"):
        change_points(E_nan, np.arange(4.0), min_segment=1)
    with pytest.raises(ValueError, match=r"E must be a real floating \(T, W, D\) tensor; got torch.float32 \(4, 2\)"):
        change_points(E[:, 0], np.arange(4.0), min_segment=1)
    assert change_points(E.numpy(), [0, 1, 2, 3], min_segment=1).tolist() == [1.5]  # array-likes still work


def test_change_scores_check_years_and_vectors():
    E, P = torch.ones(4, 2, 3), torch.full((4, 2, 3), 0.5)
    with pytest.raises(ValueError, match=r"years must have shape \(4,\), one time per grid row; got \(3,\)"):
        change_scores(E, np.arange(3.0), (0, 1), (2, 3))                    # was an IndexError of a boolean mask
    with pytest.raises(ValueError, match="years must be finite; got nan at index 2"):  # the NaN time was dropped
        context_change_scores(P, np.array([0.0, 1.0, np.nan, 3.0]), (0, 1), (2, 3))
    with pytest.raises(ValueError, match="P contains NaN"):
        context_change_scores(torch.full((4, 2, 3), float("nan")), np.arange(4.0), (0, 1), (2, 3))
    # profiles over C contexts, as the docstring names them; the message said (T, W, D)
    with pytest.raises(ValueError, match=r"P must be a real floating \(T, W, C\) tensor; got torch.float32 \(4, 3\)"):
        context_change_scores(torch.full((4, 3), 0.5), np.arange(4.0), (0, 1), (2, 3))
    with pytest.raises(ValueError, match=r"E must be a real floating \(T, W, D\) tensor"):
        change_scores(torch.ones(4, 3), np.arange(4.0), (0, 1), (2, 3))


def test_auc_reads_tensors_and_refuses_complex_scores():
    """auc cast its scores with np.asarray(x, float): the change scores of vectors that require grad raised torch's
    "Can't call numpy() on Tensor that requires grad", complex scores lost their imaginary part with only a
    ComplexWarning (a silent AUC of the real parts) and None read as a NaN score."""
    pos = torch.tensor([3.0, 2.0], requires_grad=True)
    assert auc(pos, torch.tensor([1.0, 2.0])) == auc([3.0, 2.0], [1.0, 2.0]) == 0.875
    with pytest.raises(TypeError, match="neg must be real numbers; got complex128"):
        auc([1.0], np.array([0.5 + 1j]))
    with pytest.raises(ValueError, match="pos must be a sequence of numbers"):
        auc(None, [0.5])


def test_auc_names_the_side_with_a_nan():
    with pytest.raises(ValueError, match="pos scores must be finite; got nan at index 1"):
        auc([0.5, np.nan], [0.1])
    with pytest.raises(ValueError, match="neg scores must be finite"):
        auc([0.5], [np.inf])


def test_grid_rejects_repeated_words_unsorted_years_and_names_unknown_words():
    with pytest.raises(ValueError, match=r"words must be distinct; repeated: \['a'\]"):  # columns read the last one
        DriftGrid(torch.ones(2, 2, 3), ["a", "a"], [0, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        DriftGrid(torch.ones(2, 2, 3), ["a", "b"], [1, 0])
    with pytest.raises(ValueError, match=r"years must be one-dimensional \(T,\)"):
        DriftGrid(torch.ones(2, 2, 3), ["a", "b"], [[0, 1]])
    grid = DriftGrid(torch.ones(2, 2, 3), ["a", "b"], [0, 1])
    with pytest.raises(KeyError, match=r"not in the grid \(2 words\): 'c', 'd'"):
        grid.columns(["a", "c", "d"])


@pytest.mark.parametrize("make, dtype", [(make, dtype) for make in (np.asarray, torch.from_numpy)
                                         for dtype in (np.complex64, np.complex128, bool, object, str)
                                         if make is np.asarray or dtype not in (object, str)])   # torch holds no such
def test_grid_refuses_vectors_that_are_not_real_numbers(make, dtype):
    # a complex E or context was cast to float32 with only a warning: its imaginary part was dropped, silently
    bad = make(np.ones((2, 1, 3), dtype=dtype))
    with pytest.raises(TypeError, match=r"^E must hold real numbers \(read as float32\); got "):
        DriftGrid(bad, ["a"], [0, 1])
    with pytest.raises(TypeError, match=r"^context must hold real numbers"):
        DriftGrid(torch.ones(2, 1, 3), ["a"], [0, 1], context=bad[:1], context_words=["c"])


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e39])
def test_grid_refuses_vectors_that_are_not_finite_in_float32(value):
    # a NaN or an infinity (1e39: inf in float32) was kept: every change score and nearest topic read NaN
    E = np.ones((2, 2, 3))
    E[1, 0, 2] = value
    with pytest.raises(ValueError, match=r"^E must be finite; got (nan|-?inf) at batch index \(1, 0\) \(shape"):
        DriftGrid(E, ["a", "b"], [0, 1])
    with pytest.raises(ValueError, match=r"^context must be finite; got .* at batch index \(1, 0\)"):
        DriftGrid(np.ones((2, 2, 3)), ["a", "b"], [0, 1], context=E, context_words=["c", "d"])
    assert DriftGrid(np.ones((2, 2, 3), dtype=np.int64), ["a", "b"], [0, 1]).E.dtype == torch.float32  # integers


@pytest.mark.parametrize("seed", range(4))
def test_grid_names_the_repeated_words_as_a_count_per_word_does(seed):
    # the check counts the words once (a Counter), not once per word (words.count: 13 s for 40 000 words)
    rng = np.random.default_rng(seed)
    for W in (0, 1, 2, 7, 40):
        words = tuple(f"w{i}" for i in rng.integers(0, max(W // 2, 1) if seed % 2 else 10 * W + 1, size=W))
        repeated = sorted({w for w in words if words.count(w) > 1})          # the straightforward reference
        if repeated:
            with pytest.raises(ValueError) as err:
                DriftGrid(torch.zeros(2, W, 3), words, [0, 1])
            assert str(err.value) == f"words must be distinct; repeated: {repeated[:5]}"
        else:
            assert DriftGrid(torch.zeros(2, W, 3), words, [0, 1]).words == words

@pytest.mark.parametrize("space", ["vector", "prediction"])
def test_evaluate_grid_gives_nan_for_a_metric_no_drift_word_counts_towards(space):
    # every strength within 0.1 of 0.5: no word counts towards acc after (numpy raised "need at least one array");
    # every strength below 0.5: no strong word for the change years
    grid, truth = perfect_case()
    weak = dataclasses.replace(truth, strength=np.array([0.45, 0.55, 0.42, 0.58, 0.0, 0.0]))
    r = evaluate_grid(grid, weak, space=space, per_word=True)
    assert np.isnan(r["acc_after"]) and all(w["acc_after"] is None for w in r["per_word"].values())
    assert 0.0 <= r["acc_before"] <= 1.0 and np.isfinite(r["change_year_mae"])   # p1 and p3 are strong (>= 0.5)
    none_strong = dataclasses.replace(weak, strength=np.array([0.45, 0.3, 0.42, 0.2, 0.0, 0.0]))
    r = evaluate_grid(grid, none_strong, space=space)
    assert np.isnan(r["change_year_mae"]) and np.isnan(r["change_year_median_ae"])
    assert 0.0 <= r["acc_after"] <= 1.0


def test_evaluate_grid_leaves_out_a_word_whose_transition_outlasts_the_grid():
    grid, truth = perfect_case()
    late = dataclasses.replace(truth, switch_year=np.array([2015.0, 2020.0, 2045.0, 2018.0, np.nan, np.nan]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # was numpy's "Mean of empty slice" and a NaN
        r = evaluate_grid(grid, late, per_word=True)
    assert r["per_word"]["p2"]["acc_after"] is None and r["per_word"]["p2"]["wrong_years_after"] == []
    assert 0.0 <= r["acc_after"] <= 1.0


def test_npz_is_written_at_the_path_given_and_a_truncated_one_is_named(tmp_path):
    # save_npz("grid") wrote grid.npz (load_npz("grid") then failed); a truncated archive raised zipfile's
    # "File is not a zip file" without the file's name, an archive without E a bare KeyError
    grid, _ = perfect_case(noise=0.01)
    grid.save_npz(tmp_path / "grid")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid"]
    assert torch.equal(DriftGrid.load_npz(tmp_path / "grid").E, grid.E)
    data = (tmp_path / "grid").read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cut in (len(data) - 1, len(data) // 2, 0):
            (tmp_path / "cut.npz").write_bytes(data[:cut])
            with pytest.raises(ValueError, match=r"cut.npz: not a readable .npz archive, truncated or damaged"):
                DriftGrid.load_npz(tmp_path / "cut.npz")
        gc.collect()
    # np.load(path) left the file it opened open when the archive did not parse ("ResourceWarning: unclosed file")
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
    np.savez(tmp_path / "other.npz", words=np.asarray(["a"]))
    with pytest.raises(ValueError, match=r"other.npz: not a drift grid \(no E, years in the archive\)"):
        DriftGrid.load_npz(tmp_path / "other.npz")


def test_load_npz_still_reads_an_open_file(tmp_path):
    # np.load takes an open binary file as well as a path, and load_npz passed it on; opening the path itself (to
    # close it after a parse error) made load_npz(handle) a TypeError "expected str, bytes or os.PathLike object"
    import io

    grid, _ = perfect_case(noise=0.01)
    grid.save_npz(tmp_path / "g.npz")
    data = (tmp_path / "g.npz").read_bytes()
    assert torch.equal(DriftGrid.load_npz(io.BytesIO(data)).E, grid.E)
    with open(tmp_path / "g.npz", "rb") as handle:
        assert DriftGrid.load_npz(handle).words == grid.words
        assert not handle.closed                        # the caller's file: the caller closes it
    with pytest.raises(ValueError, match="not a readable .npz archive"):
        DriftGrid.load_npz(io.BytesIO(data[: len(data) // 2]))


def _probes_in_order(truth, order):
    """``truth`` with its probes listed in ``order`` (the same words, kinds and planted drifts)."""
    per_probe = ("source", "dest", "strength", "switch_year", "width")
    return dataclasses.replace(truth, words=tuple(truth.words[i] for i in order),
                               kind=tuple(truth.kind[i] for i in order),
                               **{name: np.asarray(getattr(truth, name))[order] for name in per_probe})


@pytest.mark.parametrize("space", ["vector", "prediction"])
def test_trap_ranks_of_tied_changes_do_not_depend_on_the_order_of_the_probes(space):
    """The stable and the trap word of the perfect grid have the same change (none). The ranks were argsort's
    order of the tie: the trap word listed last got rank 6 and percentile 0, listed before the stable word rank 5
    and percentile 0.2. Now the percentile is at its mid-rank 5.5, the top rank at the tie's best rank 5."""
    grid, truth = perfect_case()
    results = [evaluate_grid(grid, _probes_in_order(truth, order), space=space)
               for order in ([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 5, 4], [5, 4, 3, 2, 1, 0])]
    for r in results:
        assert r["trap_mean_percentile"] == pytest.approx(1 - 4.5 / 5) and r["trap_top_rank"] == 5


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["drift", "stable", "trap"]), st.integers(0, 4)),
                min_size=2, max_size=12).filter(lambda probes: any(k == "drift" for _, k, _ in probes)),
       st.randoms(use_true_random=False))
def test_ranking_metrics_count_ties_by_mid_rank_and_best_rank_in_any_probe_order(probes, random):
    """Reference: a trap word with change c has mid-rank 1 + #(> c) + (#(== c) - 1) / 2 and best rank 1 + #(> c);
    the result is the same for every order of the probes."""
    ch = np.array([float(c) for c, _, _ in probes])
    kind = np.array([k for _, k, _ in probes])
    strength = np.array([s / 4 for _, _, s in probes])
    out = _ranking_metrics(ch, strength, kind)
    traps = ch[kind == "trap"]
    if traps.size:
        above = np.array([(ch > c).sum() for c in traps])
        mid = 1 + above + (np.array([(ch == c).sum() for c in traps]) - 1) / 2
        assert out["trap_mean_percentile"] == pytest.approx(np.mean(1 - (mid - 1) / (len(ch) - 1)))
        assert out["trap_top_rank"] == 1 + above.min()
    order = list(range(len(ch)))
    random.shuffle(order)
    again = _ranking_metrics(ch[order], strength[order], kind[order])
    assert again.keys() == out.keys()
    for key, value in out.items():
        assert again[key] == pytest.approx(value, nan_ok=True)


def test_spearman_is_nan_without_a_warning_when_the_strengths_are_all_equal():
    """Equal changes gave NaN silently, equal strengths NaN with scipy's ConstantInputWarning."""
    grid, truth = perfect_case()
    equal = dataclasses.replace(truth, strength=np.array([0.8, 0.8, 0.8, 0.8, 0.0, 0.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(evaluate_grid(grid, equal, space="vector")["spearman"])
