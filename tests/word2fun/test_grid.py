"""Word2Fun.grid: rows gathered once per word, all times broadcast, equal bit for bit to the per-pair evaluation."""

import pytest
import torch

import qpnlp.word2fun.model as model_module
from qpnlp.word2fun import FAMILIES

CASES = [(family, logistic) for family in FAMILIES for logistic in (False, True)
         if not (family == "sliced" and logistic)]  # the sliced family has no logistic step


def _reference(m, words, times):
    """The grid before batching, inlined: :meth:`Word2Fun.vectors` at the (T, W) pairs, every row gathered per pair."""
    T, W = times.shape[0], words.shape[0]
    return m.vectors(words.unsqueeze(0).expand(T, W), torch.as_tensor(times).unsqueeze(1).expand(T, W))


@pytest.mark.parametrize("family,logistic", CASES)
@pytest.mark.parametrize("double", [False, True])
def test_grid_equals_the_per_pair_vectors_bit_for_bit(family, logistic, double, make, randomise, monkeypatch):
    m = randomise(make(11, 6, family=family, n_slices=4, frequency_init="harmonic", logistic=logistic), seed=3)
    if double:
        m = m.double()
    queries = [
        (torch.tensor([4]), torch.tensor([1950.0])),                                     # one word, one time
        (torch.tensor([4]), torch.tensor([1900.0, 1913.7, 2000.0])),                     # one word, many times
        (torch.arange(11), torch.tensor([1987.25])),                                     # every word, one time
        (torch.tensor([2, 7, 2, 2, 0]), torch.tensor([1930.0, 1930.0, 1999.5, 1930.0])),  # repeated words and times
        (torch.tensor([1, 9, 3]), torch.tensor([1850.0, 1899.9, 2000.1, 2150.0])),       # outside the span [1900, 2000]
        (torch.tensor([5, 6]), torch.arange(1890.0, 2011.0)),                            # many times
    ]
    for words, times in queries:
        ref = _reference(m, words, times)
        for cap in (1 << 20, 1, 2 * words.shape[0] * m.dim + 1):   # one block; a block a time; blocks of 2 (ragged)
            monkeypatch.setattr(model_module, "GRID_CHUNK_VALUES", cap)
            G = m.grid(words, times)
            assert G.shape == (times.shape[0], words.shape[0], m.dim) and G.dtype == m.dtype and G.is_contiguous()
            assert torch.equal(G, ref), (family, logistic, words, times, cap)


@pytest.mark.parametrize("family", ["static", "II"])
def test_grid_returns_fresh_memory(family, make, randomise):
    # the static family's rows are broadcast over the times: the grid must not alias them or the parameters
    m = randomise(make(5, 4, family=family))
    words, times = torch.tensor([1, 3]), torch.tensor([1920.0, 1960.0, 1990.0])
    G = m.grid(words, times)
    before, ref = m.base.weight.clone(), _reference(m, words, times)
    assert torch.equal(G, ref)
    G.add_(1.0)
    assert torch.equal(m.base.weight, before) and torch.equal(m.grid(words, times), ref)


def test_grid_of_no_words_or_no_times_is_empty(make):
    m = make(5, 4, family="IV", logistic=True)
    assert m.grid(torch.tensor([], dtype=torch.long), torch.tensor([1950.0])).shape == (1, 0, 4)
    assert m.grid(torch.tensor([1, 2]), torch.tensor([])).shape == (0, 2, 4)
