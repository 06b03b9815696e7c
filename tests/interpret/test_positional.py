"""Per-word positional sensitivity delta_j = mean_d |omega_{j,d}| (paper appendix D, Table 7)."""

from __future__ import annotations

import re

import pytest
import torch

from qpnlp.interpret.positional import PositionalSensitivity, positional_sensitivity, sensitivity_scores
from qpnlp.nn import ComplexOrderEmbedding
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig

WORDS = ["<pad>", "<unk>", "worst", "the", "film", "slowly"]


def _embedding(**kw):
    emb = ComplexOrderEmbedding(len(WORDS), 3, **kw)
    return emb


def test_scores_are_mean_absolute_frequency():
    omega = torch.tensor([[1.0, -2.0, 3.0], [0.0, 0.0, -0.3]])
    torch.testing.assert_close(sensitivity_scores(omega), torch.tensor([2.0, 0.1]))
    with pytest.raises(ValueError, match="real"):
        sensitivity_scores(omega[0])


def test_table_from_embedding_and_from_model():
    emb = _embedding()
    with torch.no_grad():
        emb.frequency.weight.copy_(torch.tensor([[0.0] * 3, [9.0] * 3, [-5.0, 5, 5], [0.1, 0, 0], [1, -1, 1],
                                                 [0.01, 0, 0]]))
    table = positional_sensitivity(emb, WORDS, top=3)
    assert isinstance(table, PositionalSensitivity)
    assert [w for w, _ in table.largest] == ["worst", "film", "the"]  # <unk> excluded
    assert [w for w, _ in table.smallest] == ["slowly", "the", "film"]
    assert table.largest[0][1] == pytest.approx(5.0)
    md = table.to_markdown()
    assert md.splitlines()[2].startswith("| 1 | worst | 5 | slowly |")
    assert len(table.rows()) == 3
    model = OrderClassifier(OrderClassifierConfig(num_words=len(WORDS), num_classes=2, dim=3))
    assert len(positional_sensitivity(model, WORDS, top=10).largest) == 4


def test_counts_filter_and_dimension_sharing():
    emb = _embedding(frequency_sharing="dimension")
    table = positional_sensitivity(emb, WORDS, counts=[0, 0, 5, 1, 5, 1], min_count=2)
    assert sorted(w for w, _ in table.largest) == ["film", "worst"]
    torch.testing.assert_close(table.delta, emb.frequency.weight.detach().abs().squeeze(-1))


def test_counts_filter_on_the_device_of_the_embedding(device):
    """Counts are a CPU list; the frequencies may be on CUDA (run with --device cuda)."""
    emb = _embedding().to(device)
    table = positional_sensitivity(emb, WORDS, counts=[0, 0, 5, 1, 5, 1], min_count=2)
    assert sorted(w for w, _ in table.largest) == ["film", "worst"]

def test_errors():
    with pytest.raises(ValueError, match="word-sharing"):
        positional_sensitivity(_embedding(frequency_sharing="word"), WORDS)
    with pytest.raises(ValueError, match="no positions"):
        positional_sensitivity(_embedding(frequency_sharing=None), WORDS)
    with pytest.raises(TypeError, match="ComplexOrderEmbedding"):
        positional_sensitivity(torch.nn.Linear(2, 2), WORDS)
    with pytest.raises(ValueError, match="words"):
        positional_sensitivity(torch.zeros(3, 2), WORDS)
    with pytest.raises(ValueError, match="top"):
        positional_sensitivity(torch.zeros(6, 2), WORDS, top=0)


def test_nan_frequencies_are_an_error():
    """A NaN frequency (diverged training) ranked first among the most position-sensitive words."""
    omega = torch.ones(6, 2)
    omega[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        positional_sensitivity(omega, WORDS)


def test_exclude_ids_outside_the_vocabulary_are_named_and_excluding_every_word_is_an_error():
    omega = torch.arange(12.0).reshape(6, 2)
    with pytest.raises(ValueError, match=r"exclude_ids must be word ids in \[0, 6\) .*; got \[6, -1\]"):
        positional_sensitivity(omega, WORDS, exclude_ids=(0, 6, -1))
    with pytest.raises(ValueError, match="no word left"):            # as period_table and importance_table
        positional_sensitivity(omega, WORDS, exclude_ids=range(6))
    with pytest.raises(ValueError, match="no word left"):
        positional_sensitivity(omega, WORDS, counts=[0] * 6, min_count=1)
    assert [w for w, _ in positional_sensitivity(omega, WORDS, exclude_ids=(0, 1, 5)).smallest] == ["worst", "the",
                                                                                                    "film"]


def test_words_counts_and_top_are_checked_as_in_the_period_and_importance_tables():
    omega = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 2.0], [0.5, 0.5]])
    words = ["<pad>", "<unk>", "a", "b"]
    with pytest.raises(TypeError, match="not a string"):       # "abcd" used to name the rows a, b, c, d
        positional_sensitivity(omega, "abcd")
    with pytest.raises(ValueError, match=r"counts contains NaN"):  # a NaN count silently dropped the word
        positional_sensitivity(omega, words, counts=[1, 1, float("nan"), 1])
    with pytest.raises(ValueError, match=r"counts must have one number per word \(4\); got torch.int64 \(4, 1\)"):
        positional_sensitivity(omega, words, counts=[[1], [1], [1], [1]])   # was a broadcasting RuntimeError
    with pytest.raises(ValueError, match="top must be an integer >= 1; got '3'"):
        positional_sensitivity(omega, words, top="3")


def test_frequencies_without_dimensions_are_an_error_not_nan_sensitivities():
    # a (V, 0) table gave delta = NaN for every word (and period_table an IndexError)
    with pytest.raises(ValueError, match=r"real, non-empty \(V, D\) tensor; got torch.float32 \(4, 0\)"):
        positional_sensitivity(torch.ones(4, 0), ["<pad>", "<unk>", "a", "b"])
    with pytest.raises(ValueError, match=r"non-empty \(V, D\)"):
        sensitivity_scores(torch.ones(4, 0))


def test_equal_deltas_are_listed_by_increasing_id_in_both_lists():
    # ``largest`` was the ascending order reversed, so that equal deltas came by decreasing id there
    omega = torch.tensor([[0.0], [0.0], [1.0], [2.0], [1.0], [2.0]])
    table = positional_sensitivity(omega, ["<pad>", "<unk>", "a", "b", "c", "d"], top=4)
    assert [w for w, _ in table.largest] == ["b", "d", "a", "c"]
    assert [w for w, _ in table.smallest] == ["a", "c", "b", "d"]


def test_repr_shows_the_first_words_of_each_list_not_the_whole_lists():
    omega = torch.arange(2000.0).reshape(1000, 2)
    table = positional_sensitivity(omega, [f"w{i}" for i in range(1000)], top=900)
    text = repr(table)
    assert len(text) < 300, text
    assert text.startswith("PositionalSensitivity(n_words=1000, top=900, largest=[('w999', 1998), ")
    assert "'w2'" in text and "..." in text                  # the smallest list (PAD and UNK left out)
    small = positional_sensitivity(omega[:4], ["<pad>", "<unk>", "a", "b"], top=5)
    assert repr(small) == "PositionalSensitivity(n_words=4, top=2, largest=[('b', 6.5), ('a', 4.5)], " \
                          "smallest=[('a', 4.5), ('b', 6.5)])"


def test_markdown_keeps_a_word_with_a_pipe_in_its_column():
    # the tokenizer makes "|" a token; it was written into the row as it is and shifted the columns after it
    words = ["<pad>", "<unk>", "|", "a\\b", "x|y", "new\nline"]
    table = positional_sensitivity(torch.arange(12.0).reshape(6, 2), words, top=4)
    rows = table.to_markdown().splitlines()[2:]
    assert len(rows) == 4
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]
    assert all(len(row) == 5 for row in cells), cells
    assert [row[1] for row in cells] == ["new\\nline", "x\\|y", "a\\\\b", "\\|"]
