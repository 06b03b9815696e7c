"""One check of row indices (qpnlp._rows) behind data.classification.row_indices and the ranking groups."""

from __future__ import annotations

import numpy as np
import pytest

from qpnlp._rows import FAULTS, check_row_indices
from qpnlp.data.classification import row_indices
from qpnlp.evaluation import ranking_metrics

SCORES, LABELS = [0.1, 0.9, 0.5], [1, 0, 0]

BAD = {                                   # fault -> an input of 3 rows refused for it
    "mask": np.array([True, True, False]),
    "shape": [[0, 1]],
    "dtype": [0.0, 1.5],
    "range": [0, 3],
    "repeat": [0, 0, 1],
}


@pytest.mark.parametrize("fault", FAULTS)
def test_check_row_indices_words_each_fault_with_the_callers_template(fault):
    messages = {kind: f"{kind} of {{what}}" for kind in FAULTS}
    with pytest.raises(ValueError, match=f"^{fault} of the rows$"):
        check_row_indices(BAD[fault], 3, messages, what="the rows")


@pytest.mark.parametrize("fault", FAULTS)
def test_row_indices_and_ranking_groups_refuse_the_same_inputs(fault):
    with pytest.raises(ValueError, match="split 'test'"):
        row_indices(BAD[fault], 3, "split 'test'")
    with pytest.raises(ValueError, match="question 0: "):
        ranking_metrics(SCORES, LABELS, [BAD[fault]])


def test_ranking_groups_name_the_first_bad_row_as_row_indices_does():
    # _group named the smallest index if one was negative, else the largest: -1 here, not the first bad row 5
    with pytest.raises(ValueError, match=r"split 'test': index 5 at position 0 is outside 0..2"):
        row_indices([5, -1], 3, "split 'test'")
    with pytest.raises(ValueError, match=r"question 0: row index 5 outside \[0, 3\)"):
        ranking_metrics(SCORES, LABELS, [[5, -1]])


def test_good_and_empty_inputs_are_int64_rows():
    assert check_row_indices(np.array([2, 0], dtype=np.uint8), 3, {}).dtype == np.int64
    assert check_row_indices([], 3, {}).shape == (0,)
    assert check_row_indices(np.zeros((2, 0)), 3, {}).shape == (0,)
