"""The statistics of the benchmark tables (``benchmarks/_stats.py``, ``benchmarks/paired_runs.py``)."""

import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def paired_runs():
    sys.path.insert(0, str(BENCHMARKS))  # paired_runs imports _stats from its own folder
    try:
        import paired_runs

        yield paired_runs
    finally:
        sys.path.remove(str(BENCHMARKS))


def _f32(k, n):
    return float(np.float32(k / n))


def test_exact_accuracy_snaps_float32_means_to_correct_over_n():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _stats import exact_accuracy
    finally:
        sys.path.remove(str(BENCHMARKS))
    for n in (7, 500, 1066, 1821, 2000):
        for k in (0, 1, n // 3, n - 1, n):
            assert exact_accuracy(_f32(k, n)) == Fraction(k, n)
    assert exact_accuracy(_f32(1234, 4321)).denominator > 2000  # a larger test part: kept as it is


def test_paired_table_exact_tie_of_means_is_not_negative(paired_runs):
    # +1/1000 on one split, -1/1000 on the other: the exact mean difference is 0; on the float32 accuracies it was
    # -1.5e-8 and printed as "-0.0" (B looked worse)
    a = {"CR": {("fold 1", 0): (_f32(700, 1000), 0.5), ("fold 2", 0): (_f32(702, 1000), 0.5)}}
    b = {"CR": {("fold 1", 0): (_f32(701, 1000), 0.5), ("fold 2", 0): (_f32(701, 1000), 0.5)}}
    row = paired_runs.table(a, b, ("A", "B")).splitlines()[2].split(" | ")
    assert row[3] == "+0.0 ± 0.1" and row[4] == "1 / 1 / 0"


def test_paired_table_wilcoxon_on_exact_differences(paired_runs):
    # five splits, every B one text better on its test part of 500: tied differences, exact two-sided p = 2 / 2**5
    a = {"TREC": {("fixed", s): (_f32(430 + s, 500), 0.5) for s in range(5)}}
    b = {"TREC": {("fixed", s): (_f32(431 + s, 500), 0.5) for s in range(5)}}
    row = paired_runs.table(a, b, ("A", "B")).splitlines()[2].split(" | ")
    assert row[3] == "+0.2 ± 0.0" and row[4] == "5 / 0 / 0" and row[5] == "0.062"
    four = {"TREC": dict(list(a["TREC"].items())[:4])}
    assert paired_runs.table(four, b, ("A", "B")).splitlines()[2].split(" | ")[5] == "-"  # under 5 pairs


def test_signed_rank_p_is_exact_with_ties_and_refuses_an_old_scipy(paired_runs, monkeypatch):
    """scipy 1.14 took the normal approximation for tied differences (p 0.0707 for five equal ones, not 0.0625)."""
    _stats = sys.modules["_stats"]                       # imported by paired_runs from benchmarks/

    assert _stats.signed_rank_p([1, 1, 1, 1, 1]) == pytest.approx(0.0625)
    assert _stats.signed_rank_p([0, 0, 0]) == 1.0
    monkeypatch.setattr(_stats.scipy, "__version__", "1.14.1")
    with pytest.raises(RuntimeError, match="scipy >= 1.15"):
        _stats.signed_rank_p([1, 1, 1, 1, 1])


def _exact_signed_rank_p(differences):
    """The two-sided p over all 2**n sign flips of the nonzero differences' mid-ranks, by brute force."""
    import itertools

    from scipy.stats import rankdata

    d = np.array([x for x in differences if x != 0], float)
    ranks = rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    null = np.array([ranks[list(signs)].sum() for signs in itertools.product([False, True], repeat=len(d))])
    return min(1.0, 2 * min(np.mean(null <= observed + 1e-9), np.mean(null >= observed - 1e-9)))


def test_signed_rank_p_is_exact_where_its_docstring_says_and_approximate_beyond(paired_runs):
    """Exact up to 13 differences with ties and zeros (the published tables have at most 10); 14 tied ones take the
    normal approximation, as the docstring now says (it claimed the exact p for ties and zeros without a limit)."""
    _stats = sys.modules["_stats"]
    rng = np.random.default_rng(0)
    for size in [5, 6, 7, 8, 9, 10, 11, 13] * 2:
        d = rng.integers(-3, 4, size=size).tolist()
        if any(d):
            assert _stats.signed_rank_p(d) == pytest.approx(_exact_signed_rank_p(d))
    fourteen = [1] * 7 + [2] * 7
    assert _exact_signed_rank_p(fourteen) == pytest.approx(2 / 2 ** 14)
    assert _stats.signed_rank_p(fourteen) == pytest.approx(0.0007, abs=5e-5)
    assert _stats.signed_rank_p([1] * 5) == pytest.approx(2 / 2 ** 5) and _stats.signed_rank_p([1] * 6) == 2 / 2 ** 6
    assert "up to 13 differences" in _stats.signed_rank_p.__doc__


def _benchmark(name):
    """A script of benchmarks/ as a module (its own folder on the path, for ``_stats``)."""
    import importlib

    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def _qpdn_run(directory, seed, folds, splits):
    """A results.json of reproduce_qpdn.py with QPDN's ``{split name: (correct, n)}`` on CR."""
    per_split = [dict(split=name, test_accuracy=_f32(*score), dev_accuracy=0.5) for name, score in splits.items()]
    directory.mkdir()
    (directory / "results.json").write_text(json.dumps(dict(
        args=dict(seed=seed, folds=folds), rows=[dict(dataset="CR", qpdn=dict(per_split=per_split))])))
    return str(directory)


def test_paired_table_never_pairs_folds_of_other_fold_counts_and_survives_no_common_split(paired_runs, tmp_path):
    # "fold 1" of 10-fold CV and of 5-fold CV are other texts; with no split in common the table raised
    # statistics.StatisticsError (fmean of no data), e.g. TREC seed 0 against TREC seed 1
    folds = {f"fold {i}": (700 + i, 1000) for i in range(1, 6)}
    a = paired_runs.test_accuracies([_qpdn_run(tmp_path / "a", 0, 10, folds)], "qpdn")
    b = paired_runs.test_accuracies([_qpdn_run(tmp_path / "b", 0, 5, folds)], "qpdn")
    lines = paired_runs.table(a, b, ("A", "B")).splitlines()
    assert len(lines) == 4 and lines[-1] == "No split in common (other seeds or fold counts): CR (5 and 5 splits)."
    other_seed = paired_runs.test_accuracies([_qpdn_run(tmp_path / "d", 1, 10, folds)], "qpdn")
    assert paired_runs.table(a, other_seed, ("A", "B")).splitlines()[-1].startswith("No split in common")
    same = paired_runs.test_accuracies([_qpdn_run(tmp_path / "c", 0, 10, folds)], "qpdn")
    row = paired_runs.table(a, same, ("A", "B")).splitlines()[2].split(" | ")
    assert row[4] == "0 / 0 / 5" and row[6] == "5"


def test_complex_order_claim_is_not_significant_when_the_signed_ranks_favour_the_other_variant():
    """Complex-order one text in 100 worse on 19 of 20 pairs and 30 in 100 better on one: the mean margin is +0.55
    points, and the two-sided p (0.0004) is the signed ranks leaning against complex-order (R+ 20, R- 190); the
    verdict was "significant"."""
    rco = _benchmark("reproduce_complex_order")
    records = []
    for i in range(20):
        split, seed = f"fold {i % 10 + 1}", i // 10
        ours, theirs = (80, 50) if i == 0 else (79, 80)
        for variant in rco.OTHERS + ["complex_order"]:
            records.append(dict(network="cnn", dataset="CR", variant=variant, split=split, seed=seed,
                                test_accuracy=_f32(ours if variant == "complex_order" else theirs, 100)))
    (claim,) = rco.claims(records, ["cnn"], ["CR"])
    against = claim["against"]["pe"]
    assert against["margin"] == pytest.approx(0.0055) and against["p"] < 0.001
    assert claim["verdict"] == "holds" and not against["favoured"]
    assert sys.modules["_stats"].signed_rank_sums([Fraction(-1)] * 19 + [Fraction(30)]) == (20.0, 190.0)


def test_cnm_paired_never_pairs_a_test_map_with_a_dev_map():
    # the reference scored test on seeds 0-4, the variant only dev: the rows compared test MAP with dev MAP
    cnm_paired = _benchmark("cnm_paired")
    runs = {("trecqa", "cnm"): {s: (0.78, "test") for s in range(5)},
            ("trecqa", "cnm-real"): {s: (0.80, "dev") for s in range(5)}}
    assert cnm_paired.comparison(runs, "cnm")[2:] == []
    runs[("trecqa", "cnm-real")].update({s: (0.77, "test") for s in range(3)})
    (row,) = cnm_paired.comparison(runs, "cnm")[2:]
    assert row == "| trecqa | cnm-real | test | 3 | 0.7700 | 0.7800 | +0.0100 | 3 | - |"
