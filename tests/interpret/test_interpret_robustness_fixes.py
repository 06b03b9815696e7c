"""Bad inputs of word_importance, measurement_words and the optimal-measurement helpers fail clearly."""

import pytest
import torch

from qpnlp.hilbert import PureState
from qpnlp.interpret import class_averages, measurement_bound, measurement_words, single_shot_accuracy, word_importance
from qpnlp.measurement import ProjectiveMeasurement
from qpnlp.nn import WordWeighting

C = torch.complex64


def _weightings():
    return [WordWeighting(10, "trainable"), WordWeighting(10, "idf", idf=torch.ones(10)),
            WordWeighting(10, "amplitude_norm")]


@pytest.mark.parametrize("bad_id", [30, 10, -3])
@pytest.mark.parametrize("weighting", _weightings(), ids=["trainable", "idf", "amplitude_norm"])
def test_word_importance_refuses_ids_outside_the_vocabulary(weighting, bad_id):
    # trainable / idf raised IndexError from the lookup; amplitude_norm accepted id 30 of a 10-word model
    with pytest.raises(ValueError, match=r"ids must be word ids in \[0, 10\).*" + str(bad_id)):
        word_importance(weighting, torch.tensor([2, bad_id]), torch.ones(2), ["a", "b"], top=1)


def test_word_importance_checks_the_norms():
    weighting = WordWeighting(10, "amplitude_norm")
    ids = torch.tensor([2, 3])
    with pytest.raises(TypeError, match="norms must be a torch.Tensor.*got list"):       # was AttributeError
        word_importance(weighting, ids, [1.0, 1.0], ["a", "b"], top=1)
    with pytest.raises(ValueError, match="norms must be >= 0.*-1 at index 0"):          # was accepted
        word_importance(weighting, ids, torch.tensor([-1.0, 1.0]), ["a", "b"], top=1)
    with pytest.raises(ValueError, match="norms contains NaN"):
        word_importance(weighting, ids, torch.tensor([1.0, float("nan")]), ["a", "b"], top=1)
    with pytest.raises(TypeError, match="norms must be a real tensor"):
        word_importance(weighting, ids, torch.ones(2, dtype=C), ["a", "b"], top=1)
    assert word_importance(weighting, ids, torch.tensor([2.0, 1.0]), ["a", "b"], top=1)["most"] == [("a", 2.0)]


def _measurement_and_states():
    return ProjectiveMeasurement(3, 2, init="identity"), torch.eye(3, dtype=C)


@pytest.mark.parametrize("outcomes, shown", [([0.7], "float 0.7"), (["0"], "str '0'"), ([True], "bool True"),
                                             ([0, 1.0], "float 1.0")])
def test_measurement_words_takes_integer_outcomes_only(outcomes, shown):
    # 0.7 was truncated to measurement 0 and "0" accepted
    m, states = _measurement_and_states()
    with pytest.raises(TypeError, match=f"outcomes must be integers.*got {shown}"):
        measurement_words(m, ["a", "b", "c"], states=states, top=1, exclude_ids=(), outcomes=outcomes)


def test_measurement_words_outcomes_in_range_and_as_tensor():
    m, states = _measurement_and_states()
    with pytest.raises(ValueError, match=r"outcomes must be a non-empty list of measurements in \[0, 2\); got \[5\]"):
        measurement_words(m, ["a", "b", "c"], states=states, top=1, exclude_ids=(), outcomes=[5])
    with pytest.raises(TypeError, match="not a string"):
        measurement_words(m, ["a", "b", "c"], states=states, top=1, exclude_ids=(), outcomes="01")
    table = measurement_words(m, ["a", "b", "c"], states=states, top=1, exclude_ids=(), outcomes=torch.tensor([1]))
    assert table["measurement"].tolist() == [1] and table["word"].tolist() == ["b"]


def _states():
    return PureState(torch.eye(2, dtype=C))


def test_class_averages_refuses_an_unbatched_state():
    # was IndexError: tuple index out of range
    with pytest.raises(ValueError, match="sentences is one unbatched PureState"):
        class_averages(PureState(torch.tensor([1, 0], dtype=C)), [0])
    with pytest.raises(ValueError, match=r"sentences as a tensor must be a batch .*got shape \(2, 2\)"):
        class_averages(torch.eye(2, dtype=C) / 2, [0, 1])


@pytest.mark.parametrize("num_classes, message", [(-1, "num_classes must be >= 1; got -1"),
                                                  (0, "num_classes must be >= 1; got 0"),
                                                  (2.5, "num_classes must be an integer >= 1; got float 2.5")])
def test_class_averages_checks_num_classes(num_classes, message):
    # -1 gave "RuntimeError: minlength", 2.5 was truncated to 2
    with pytest.raises(ValueError, match=message):
        class_averages(_states(), [0, 1], num_classes=num_classes)


def test_class_averages_of_nothing_says_so():
    # said "labels must be 0 integers ... got torch.float32"
    with pytest.raises(ValueError, match="sentences is empty"):
        class_averages([], [])


def test_measurement_bound_with_one_class_names_the_labels():
    # blamed the internal class_states argument of pretty_good_measurement
    with pytest.raises(ValueError, match="labels must name at least two classes") as info:
        measurement_bound(_states(), [0, 0])
    assert "class_states" not in str(info.value)


def test_single_shot_accuracy_checks_the_dimension():
    # was "einsum(): subscript e has size 2 ..."
    classes = torch.stack([torch.diag(torch.tensor([1.0, 0.0])), torch.eye(2) / 2]).to(C)
    with pytest.raises(ValueError, match=r"measurement acts on C\^3 but class_states have d=2"):
        single_shot_accuracy(ProjectiveMeasurement(3, 2, init="identity"), classes)
    accuracy, _ = single_shot_accuracy(ProjectiveMeasurement(2, 2, init="identity"), classes)
    assert abs(float(accuracy) - 0.75) < 1e-6


def test_measurement_words_builds_no_autograd_graph(monkeypatch):
    # eafbd59 moved its @torch.no_grad() onto the helper above it; the ranking then ran with autograd on
    from qpnlp.interpret import nearest

    seen, table = [], nearest.nearest_table

    def recording(*args, **kwargs):
        seen.append(torch.is_grad_enabled())
        return table(*args, **kwargs)

    monkeypatch.setattr(nearest, "nearest_table", recording)
    m, states = _measurement_and_states()
    measurement_words(m, ["a", "b", "c"], states=states, top=1, exclude_ids=())
    assert seen == [False]
