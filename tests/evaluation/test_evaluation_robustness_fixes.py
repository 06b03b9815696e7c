"""Bad inputs of nearest_topic, change_points and ranking_metrics fail clearly, naming the argument."""

import re

import numpy as np
import pytest
import torch

from qpnlp.evaluation import ranking_metrics
from qpnlp.evaluation.drift import change_points, nearest_topic


def _probe_topics(T=2, P=3, D=4, K=5, M=6):
    gen = torch.Generator().manual_seed(0)
    return torch.randn(T, P, D, generator=gen), torch.randn(T, K, M, D, generator=gen)


def test_nearest_topic_refuses_nan():
    # a NaN probe silently got topic 0
    probes, topics = _probe_topics()
    probes[1, 2, 0] = float("nan")
    with pytest.raises(ValueError, match=r"E_probe contains NaN or inf \(first at index \(1, 2, 0\)\)"):
        nearest_topic(probes, topics)
    probes, topics = _probe_topics()
    topics[0, 1, 2, 3] = float("inf")
    with pytest.raises(ValueError, match=r"E_topics contains NaN or inf \(first at index \(0, 1, 2, 3\)\)"):
        nearest_topic(probes, topics)


@pytest.mark.parametrize("shape", [(3, 5, 6, 4), (2, 5, 6, 3)])
def test_nearest_topic_names_mismatched_times_or_dimensions(shape):
    # was "einsum(): subscript d has size 3 ..."
    probes, _ = _probe_topics()
    with pytest.raises(ValueError, match=r"E_topics .* must have the T=2 times and D=4 dimensions of E_probe"):
        nearest_topic(probes, torch.randn(shape))


@pytest.mark.parametrize("shape", [(2, 0, 6, 4), (2, 5, 0, 4)])
def test_nearest_topic_needs_a_topic_and_a_word(shape):
    # K = 0 was "IndexError: argmax(): Expected reduction dim 2"
    probes, _ = _probe_topics()
    with pytest.raises(ValueError, match="E_topics must hold K >= 1 topics of M >= 1 words"):
        nearest_topic(probes, torch.zeros(shape))


def test_nearest_topic_shapes_and_numpy_input():
    probes, topics = _probe_topics()
    with pytest.raises(ValueError, match=r"E_topics must be a real floating \(T, K, M, D\) tensor"):
        nearest_topic(probes, topics[:, :, 0])
    with pytest.raises(ValueError, match=r"E_probe must be a real floating \(T, W, D\) tensor"):
        nearest_topic(probes[0], topics)
    expected = nearest_topic(probes, topics)
    # numpy input was an AttributeError; mixed float32 / float64 works too
    assert torch.equal(nearest_topic(probes.numpy(), topics.double().numpy()), expected)
    assert expected.shape == (2, 3) and expected.dtype == torch.int64


@pytest.mark.parametrize("min_segment, shown", [(-5, "int -5"), (0, "int 0"), (1.5, "float 1.5"),
                                                (2.0, "float 2.0"), (True, "bool True")])
def test_change_points_min_segment_is_an_integer_at_least_one(min_segment, shown):
    # -5 and 1.5 were accepted (1.5 changed the result)
    E = torch.randn(6, 2, 3, generator=torch.Generator().manual_seed(1))
    with pytest.raises(ValueError, match=f"min_segment must be an integer >= 1.*got {shown}"):
        change_points(E, np.arange(6.0), min_segment=min_segment)
    assert change_points(E, np.arange(6.0), min_segment=np.int64(2)).shape == (2,)


def test_ranking_metrics_checks_ties_up_front():
    # was reported as "question 0: ties must be ..."
    with pytest.raises(ValueError, match="ties must be one of") as info:
        ranking_metrics([0.5, 0.5], [1, 0], [[0, 1]], ties="x")
    assert "question" not in str(info.value)


def test_ranking_metrics_names_the_row_of_a_nan_score():
    # the index within the question's group (0) was reported instead of the row (3)
    scores = [0.1, 0.9, 0.2, float("nan")]
    with pytest.raises(ValueError, match=r"scores must be finite; got nan at row 3 \(question 1, candidate 0\)"):
        ranking_metrics(scores, [1, 0, 1, 0], [[0, 1], [3, 2]])


@pytest.mark.parametrize("groups, shown", [((g for g in [[0, 1]]), "generator <generator object"), (2, "int 2"),
                                           ("01", "str '01'"), (np.array(0), "ndarray array(0)")])
def test_ranking_metrics_names_groups_that_are_no_sequence(groups, shown):
    # was "TypeError: object of type 'generator' has no len()" (or 'int'), naming no argument
    with pytest.raises(TypeError, match=f"groups must be a sequence of index arrays.*; got {re.escape(shown)}"):
        ranking_metrics([0.5, 0.1], [1, 0], groups)
    assert ranking_metrics([0.5, 0.1], [1, 0], np.array([[0, 1]])).map == 1.0
