"""Periods 2 pi / |omega| of complex-order frequencies."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from qpnlp.interpret import frequency_periods, period_distribution, period_table
from qpnlp.nn import ComplexOrderEmbedding
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig

WORDS = ["<pad>", "<unk>", "not", "the", "film"]


def test_period_is_the_number_of_tokens_of_one_turn():
    emb = ComplexOrderEmbedding(5, 2, frequency_init="zero")
    with torch.no_grad():
        emb.frequency.weight[4] = torch.tensor([2 * math.pi / 3, -2 * math.pi / 5])
    period = frequency_periods(emb.frequency_table())[4]
    torch.testing.assert_close(period, torch.tensor([3.0, 5.0]))
    ids = torch.tensor([[4, 4, 4, 4]])
    z = emb(ids, ids != 0, positions=torch.tensor([0.0, 3.0, 5.0, 15.0]))[0]
    torch.testing.assert_close(z[1, 0], z[0, 0])                     # one full turn after 3 tokens
    torch.testing.assert_close(z[2, 1], z[0, 1])                     # ... and after 5 in dimension 1
    torch.testing.assert_close(z[3], z[0])                           # 15 is a multiple of both


def test_table_from_a_model_and_counts():
    model = OrderClassifier(OrderClassifierConfig(num_words=5, num_classes=2, dim=3))
    with torch.no_grad():
        model.embedding.frequency.weight.copy_(torch.tensor(
            [[0.0] * 3, [1.0] * 3, [math.pi, math.pi, 2 * math.pi], [0.0, 0.1, 0.2], [math.pi / 4] * 3]))
    table = period_table(model, WORDS)
    assert table["word"].tolist() == ["not", "film", "the"]
    assert table[["median_period", "min_period", "max_period"]].iloc[0].tolist() == pytest.approx([2, 1, 2])
    assert table["max_period"].iloc[2] == math.inf and table["delta"].iloc[1] == pytest.approx(math.pi / 4, abs=1e-4)
    counted = period_table(model, WORDS, counts=[0, 0, 1, 9, 9], min_count=2)
    assert counted["word"].tolist() == ["film", "the"] and counted["count"].tolist() == [9, 9]
    periods = period_distribution(model, words=WORDS)
    assert periods.shape == (9,) and np.isinf(periods).sum() == 1
    assert sorted(periods[np.isfinite(periods)].tolist())[:3] == pytest.approx([1, 2, 2])


def test_sharing_schemes():
    dim_shared = ComplexOrderEmbedding(5, 4, frequency_sharing="dimension", frequency_init="normal")
    table = period_table(dim_shared, WORDS)
    assert (table["min_period"] == table["max_period"]).all()           # one frequency per word
    assert period_distribution(dim_shared).shape == (3,)
    word_shared = ComplexOrderEmbedding(5, 4, frequency_sharing="word")
    periods = period_distribution(word_shared)
    expected = 2 * math.pi / (10000.0 ** (-torch.arange(4) / 4.0))
    np.testing.assert_allclose(periods, expected.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="word-sharing"):
        period_table(word_shared, WORDS)
    with pytest.raises(ValueError, match="complex-vanilla"):
        period_table(ComplexOrderEmbedding(5, 4, frequency_sharing=None), WORDS)


def test_errors():
    with pytest.raises(ValueError, match="NaN"):
        frequency_periods(torch.tensor([1.0, float("nan")]))
    with pytest.raises(TypeError, match="real"):
        frequency_periods(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="got 2 words for 5"):
        period_table(torch.ones(5, 2), WORDS[:2])
    with pytest.raises(ValueError, match=r"\(V, D\)"):
        period_table(torch.ones(5), WORDS)
    with pytest.raises(ValueError, match="no word left"):
        period_table(torch.ones(5, 2), WORDS, counts=[0] * 5)


def test_complex_frequencies_are_an_error_not_silently_cut_to_their_real_part():
    """A complex tensor is not a frequency table: its imaginary part was dropped (with only a torch warning)."""
    omega = torch.full((5, 2), 1.0 + 2.0j)
    with pytest.raises(ValueError, match="real"):
        period_table(omega, WORDS)
    with pytest.raises(ValueError, match="real"):
        period_distribution(omega)


def test_period_table_names_exclude_ids_outside_the_vocabulary():
    omega = torch.rand(4, 3) + 0.1
    with pytest.raises(ValueError, match=r"exclude_ids must be word ids in \[0, 4\)"):
        period_table(omega, ["a", "b", "c", "d"], exclude_ids=(0, 9))


def test_counts_and_empty_frequency_tables_are_checked():
    omega = torch.tensor([[0.0, 0.0], [0.0, 0.0], [math.pi, math.pi / 2], [0.0, math.pi / 50], [1.0, 1.0]])
    with pytest.raises(ValueError, match="counts contains NaN"):   # the NaN-counted word was left out silently
        period_table(omega, WORDS, counts=[1, 1, float("nan"), 1, 1])
    with pytest.raises(TypeError, match="counts must be a sequence of numbers, not a string"):
        period_distribution(omega, counts="abcde")                  # was "too many dimensions 'str'"
    with pytest.raises(ValueError, match=r"non-empty \(V, D\)"):     # was an IndexError
        period_table(torch.ones(5, 0), WORDS)
    assert period_table(omega, WORDS, counts=[0, 0, 3, 1, 2], min_count=2)["count"].tolist() == [3, 2]


def test_counts_given_as_a_tensor_are_read_in_one_copy(device):
    # list(counts) made a 0-dim tensor per word and read each with .item() (a GPU sync per word on CUDA; a warning
    # per word for counts that require grad)
    model = OrderClassifier(OrderClassifierConfig(num_words=5, num_classes=2, dim=3))
    counts = torch.tensor([0.0, 0.0, 1.0, 9.0, 9.0], dtype=torch.float64, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counted = period_table(model, WORDS, counts=counts, min_count=2)
    assert sorted(counted["word"].tolist()) == ["film", "the"] and counted["count"].tolist() == [9, 9]


def test_periods_of_a_float64_table_are_float64():
    """period_table and period_distribution rounded the frequencies to float32 (``.float()``) first."""
    omega = 1.0 + torch.rand(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    exact = (2 * math.pi / omega[2:]).numpy()
    np.testing.assert_allclose(np.sort(period_distribution(omega)), np.sort(exact.reshape(-1)), rtol=1e-14)
    table = period_table(omega, [str(i) for i in range(6)])
    np.testing.assert_allclose(table.sort_values("id")["min_period"], exact.min(1), rtol=1e-14)
