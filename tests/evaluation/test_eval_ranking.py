import itertools

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.evaluation.ranking import (
    average_precision,
    precision_at_1,
    rank_order,
    ranking_metrics,
    reciprocal_rank,
)


def test_hand_made_ranking_without_ties():
    scores = [0.9, 0.1, 0.8, 0.3, 0.5]
    labels = [0, 1, 1, 0, 1]
    # order: 0 (w), 2 (c), 4 (c), 3 (w), 1 (c): correct at ranks 2, 3, 5
    assert rank_order(scores, labels).tolist() == [0, 2, 4, 3, 1]
    assert average_precision(scores, labels) == pytest.approx((1 / 2 + 2 / 3 + 3 / 5) / 3)
    assert reciprocal_rank(scores, labels) == 0.5
    assert precision_at_1(scores, labels) == 0.0


def test_perfect_and_worst_rankings():
    assert average_precision([3, 2, 1], [1, 1, 0]) == 1.0
    assert reciprocal_rank([3, 2, 1], [1, 0, 0]) == 1.0 and precision_at_1([3, 2, 1], [1, 0, 0]) == 1.0
    assert average_precision([1, 2, 3], [1, 0, 0]) == pytest.approx(1 / 3)


def test_ties_pessimistic_and_optimistic():
    # all candidates tied: pessimistic puts the 2 correct last, optimistic first
    scores, labels = [0.0] * 4, [1, 0, 0, 1]
    assert average_precision(scores, labels) == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert reciprocal_rank(scores, labels) == pytest.approx(1 / 3)
    assert precision_at_1(scores, labels) == 0.0
    assert average_precision(scores, labels, ties="optimistic") == 1.0
    assert precision_at_1(scores, labels, ties="optimistic") == 1.0
    # a partial tie behind a clear winner
    scores, labels = [0.9, 0.5, 0.5, 0.1], [0, 1, 0, 1]
    assert rank_order(scores, labels).tolist() == [0, 2, 1, 3]
    assert average_precision(scores, labels) == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert average_precision(scores, labels, ties="optimistic") == pytest.approx((1 / 2 + 2 / 4) / 2)


def test_row_order_does_not_matter():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 3, size=12).astype(float)
    labels = np.array([1, 0] * 6)
    for ties in ("pessimistic", "optimistic"):
        ap = average_precision(scores, labels, ties)
        perm = rng.permutation(12)
        assert average_precision(scores[perm], labels[perm], ties) == ap


@pytest.mark.parametrize("seed", range(20))
def test_tie_rules_are_the_bounds_over_tie_orders(seed):
    """Pessimistic = min and optimistic = max of AP/RR over all orders of tied candidates."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    scores = rng.integers(0, 3, size=n).astype(float)
    labels = rng.integers(0, 2, size=n)
    labels[rng.integers(n)] = 1
    values = []
    for perm in itertools.permutations(range(n)):
        # a strict order consistent with the scores: break ties by position in perm
        rank_key = np.empty(n)
        rank_key[list(perm)] = np.arange(n)
        strict = scores - 1e-3 * rank_key / n
        values.append((average_precision(strict, labels), reciprocal_rank(strict, labels)))
    values = np.array(values)
    assert average_precision(scores, labels) == pytest.approx(values[:, 0].min())
    assert average_precision(scores, labels, "optimistic") == pytest.approx(values[:, 0].max())
    assert reciprocal_rank(scores, labels) == pytest.approx(values[:, 1].min())
    assert reciprocal_rank(scores, labels, "optimistic") == pytest.approx(values[:, 1].max())


def test_ranking_metrics_averages_questions():
    scores = torch.tensor([0.2, 0.9, 0.5, 0.5, 0.7, 1.0, 0.1])
    labels = torch.tensor([1, 0, 1, 0, 1, 0, 1])
    groups = [np.array([0, 1]), np.array([2, 3, 4]), np.array([5, 6])]
    r = ranking_metrics(scores, labels, groups)
    # q0: correct at 2 -> AP .5 RR .5; q1: order 4(c) 3(w) 2(c) -> AP (1 + 2/3)/2, RR 1; q2: AP .5 RR .5
    np.testing.assert_allclose(r.ap, [0.5, (1 + 2 / 3) / 2, 0.5])
    np.testing.assert_allclose(r.rr, [0.5, 1.0, 0.5])
    np.testing.assert_allclose(r.p1, [0.0, 1.0, 0.0])
    assert r.map == pytest.approx(np.mean(r.ap)) and r.mrr == pytest.approx(2 / 3)
    assert r.p_at_1 == pytest.approx(1 / 3) and r.n_questions == 3 and "3 questions" in str(r)


def test_errors():
    with pytest.raises(ValueError, match="question 1: question has no correct candidate"):
        ranking_metrics([1, 2, 3, 4], [1, 0, 0, 0], [[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="no questions"):
        ranking_metrics([1.0], [1], [])
    with pytest.raises(ValueError, match="finite"):
        average_precision([np.nan, 1.0], [1, 0])
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        average_precision([1.0, 2.0], [1, 2])
    with pytest.raises(ValueError, match="same shape"):
        average_precision([1.0, 2.0], [1])
    with pytest.raises(ValueError, match="ties must be one of"):
        average_precision([1.0], [1], ties="random")


def test_fractional_labels_are_rejected_not_truncated():
    # 0.5 used to be cast to 0 (and 1.7 to 1) before the 0/1 check, giving AP 0.5 / 1.0 silently
    with pytest.raises(ValueError, match=r"labels must be 0 or 1, got \[0.5\]"):
        average_precision([0.9, 0.1], [0.5, 1])
    with pytest.raises(ValueError, match=r"labels must be 0 or 1, got \[1.7\]"):
        ranking_metrics([0.9, 0.1], [1.7, 0], [[0, 1]])
    assert average_precision([0.9, 0.1], [0.0, 1.0]) == 0.5  # float 0/1 and bool labels still work
    assert average_precision([0.9, 0.1], np.array([True, False])) == 1.0


def test_groups_must_be_row_indices_in_range():
    scores, labels = [0.1, 0.9, 0.5], [1, 0, 0]
    # a boolean mask used to be read as the indices [1, 1, 0]: MAP 1/3 instead of 1/2 for rows 0 and 1
    with pytest.raises(ValueError, match="question 0: .*boolean mask"):
        ranking_metrics(scores, labels, [np.array([True, True, False])])
    with pytest.raises(ValueError, match=r"question 0: row index -1 outside \[0, 3\)"):
        ranking_metrics(scores, labels, [[-1, 0]])  # used to wrap around to row 2
    with pytest.raises(ValueError, match=r"question 1: row index 5 outside \[0, 3\)"):
        ranking_metrics(scores, labels, [[0, 1], [0, 5]])
    with pytest.raises(ValueError, match="question 0: groups must hold 1-D integer"):
        ranking_metrics(scores, labels, [[0.0, 1.0]])
    assert ranking_metrics(scores, labels, [np.flatnonzero([True, True, False])]).map == 0.5
    with pytest.raises(ValueError, match="question 0: question has no correct candidate"):
        ranking_metrics(scores, labels, [[]])


def test_a_row_listed_twice_in_a_group_is_an_error_not_a_second_candidate():
    # [0, 0, 1] used to rank row 0 twice: the wrong candidate pushed the correct one to rank 3 (MAP 1/3, not 1/2)
    scores, labels = [0.9, 0.1], [0, 1]
    with pytest.raises(ValueError, match=r"question 0: row index 0 appears 2 times"):
        ranking_metrics(scores, labels, [[0, 0, 1]])
    with pytest.raises(ValueError, match=r"question 1: row index 1 appears 2 times"):  # the correct row twice
        ranking_metrics(scores, labels, [[0, 1], [1, 1, 0]])
    # rows shared between questions, unsorted rows and rows of no question stay allowed
    r = ranking_metrics([0.9, 0.1, 0.5], [0, 1, 1], [[1, 0], [1]])
    np.testing.assert_allclose(r.ap, [0.5, 1.0])


def test_complex_scores_are_an_error_not_cut_to_their_real_part():
    # complex scores (e.g. amplitudes instead of Born probabilities) were cast to float with only a ComplexWarning
    with pytest.raises(ValueError, match="scores must be real; got complex"):
        average_precision(torch.tensor([1 + 5j, 2 + 0j]), [1, 0])
    with pytest.raises(ValueError, match="scores must be real"):
        ranking_metrics(np.array([0.1j, 0.2]), [1, 0], [[0, 1]])


def test_bfloat16_scores_rank_as_their_float32_values():
    """numpy has no bfloat16: a model's bf16 scores failed with "Got unsupported ScalarType BFloat16"."""
    scores = torch.tensor([0.9, 0.1, 0.8, 0.3, 0.5], dtype=torch.bfloat16)
    labels = [0, 1, 1, 0, 1]
    assert average_precision(scores, labels) == average_precision(scores.float(), labels)
    got, expected = (ranking_metrics(s, labels, [[0, 1, 2], [3, 4]]) for s in (scores, scores.float()))
    assert (got.map, got.mrr, got.p_at_1) == (expected.map, expected.mrr, expected.p_at_1)


def test_scores_and_labels_of_any_tensor_layout_rank_as_the_plain_tensor(real_layout):
    """A negative-bit view (``z.conj().imag``) raised torch's "Can't call numpy() on Tensor that has negative bit
    set"; every layout now ranks as the plain tensor."""
    scores = torch.tensor([0.875, 0.125, 0.75, 0.25, 0.5], dtype=torch.float64)
    labels = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    expected = ranking_metrics(scores, labels, [[0, 1, 2], [3, 4]])
    got = ranking_metrics(real_layout(scores), real_layout(labels), [[0, 1, 2], [3, 4]])
    assert (got.map, got.mrr, got.p_at_1) == (expected.map, expected.mrr, expected.p_at_1)
    assert average_precision(real_layout(scores), labels) == average_precision(scores, labels)


@given(st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.booleans()), min_size=1, max_size=20,
                unique_by=lambda row: row[0]).filter(lambda rows: any(label for _, label in rows)))
def test_without_ties_ap_is_scikit_learns_and_rr_the_first_correct_rank(rows):
    """The module docstring's statement: distinct scores give scikit-learn's average precision under both rules."""
    from sklearn.metrics import average_precision_score

    scores, labels = np.array([s for s, _ in rows]), np.array([int(y) for _, y in rows])
    for ties in ("pessimistic", "optimistic"):
        assert average_precision(scores, labels, ties) == pytest.approx(average_precision_score(labels, scores))
        first = 1 + int((scores > scores[labels == 1].max()).sum())
        assert reciprocal_rank(scores, labels, ties) == 1 / first


def test_scikit_learn_scores_a_tied_block_above_the_optimistic_rule():
    """The docstring's example of scikit-learn's tie convention, outside the bounds of the two tie rules."""
    from sklearn.metrics import average_precision_score

    assert average_precision_score([0, 1, 1], [1.0, 0.0, 0.0]) == pytest.approx(2 / 3)
    for ties in ("pessimistic", "optimistic"):
        assert average_precision([1.0, 0.0, 0.0], [0, 1, 1], ties) == pytest.approx(7 / 12)


def test_repr_leaves_out_the_per_question_arrays_and_to_dict_is_one_table_row():
    n = 800
    labels = np.tile([1.0, 0.0, 0.0], n)
    groups = [np.arange(3 * i, 3 * i + 3) for i in range(n)]
    result = ranking_metrics(np.random.default_rng(0).random(3 * n), labels, groups)
    text = repr(result)
    assert len(text) < 200 and "n_questions=800" in text and ", ap=" not in text and "array" not in text
    row = result.to_dict()
    assert row == dict(map=result.map, mrr=result.mrr, p_at_1=result.p_at_1, n_questions=800, ties="pessimistic")
    assert all(type(v) in (float, int, str) for v in row.values())
