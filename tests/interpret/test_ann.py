"""The optional approximate index (faiss HNSW over phase-rotated real images, exact re-ranking)."""

from __future__ import annotations

import sys

import pytest
import torch

from qpnlp.interpret import BornIndex, born_scores, faiss_available, nearest_states, nearest_words
from qpnlp.interpret import nearest as nearest_module

pytestmark = pytest.mark.skipif(not faiss_available(), reason="faiss is not installed (pip install 'qpnlp[ann]')")

RECALL = 0.95          # stated in qpnlp.interpret.ann: top-10, 5 000 random complex words, d = 32


def _unit(*shape, complex_=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.complex(torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)) if complex_ \
        else torch.randn(*shape, generator=g)
    return torch.nn.functional.normalize(x, dim=-1)


def _recall(found: torch.Tensor, exact: torch.Tensor) -> float:
    return sum(len(set(a) & set(b)) for a, b in zip(found.tolist(), exact.tolist())) / exact.numel()


@pytest.fixture(scope="module")
def vocab():
    return _unit(5000, 32, seed=1)


@pytest.fixture(scope="module")
def index(vocab):
    return BornIndex(vocab)


def test_top_k_agrees_with_the_exact_ranking(vocab, index):
    queries = _unit(100, 32, seed=2)
    scores, rows = index.search(queries, 10)
    exact_scores, exact_rows = nearest_states(queries, vocab, 10)
    assert rows.shape == scores.shape == (100, 10)
    assert _recall(rows, exact_rows) >= RECALL
    # returned scores are the exact Born probabilities of the returned words, in decreasing order
    torch.testing.assert_close(scores, born_scores(queries, vocab).gather(1, rows))
    assert bool((scores[:, :-1] >= scores[:, 1:]).all())
    assert len({tuple(sorted(r)) for r in rows.tolist()}) == 100 and all(len(set(r)) == 10 for r in rows.tolist())


def test_phase_rotations_are_what_finds_the_neighbours(vocab):
    """One real query (theta = 0) misses the words whose amplitude <v|w> points the other way."""
    queries = _unit(100, 32, seed=2)
    _, exact_rows = nearest_states(queries, vocab, 10)
    one = BornIndex(vocab, phases=1)
    assert _recall(one.search(queries, 10)[1], exact_rows) < 0.8


def test_a_word_finds_itself_under_any_global_phase(vocab, index):
    phase = torch.polar(torch.tensor(1.0), torch.tensor(2.5))
    scores, rows = index.search(vocab[:20] * phase, 3)
    assert rows[:, 0].tolist() == list(range(20))
    torch.testing.assert_close(scores[:, 0], torch.ones(20), atol=1e-5, rtol=0)


@pytest.mark.parametrize("score", ["cosine", "born"])
def test_real_vectors(score):
    vocab = _unit(2000, 16, complex_=False, seed=3)
    queries = torch.cat([vocab[:5], -vocab[5:10]])
    index = BornIndex(vocab, score=score)
    scores, rows = index.search(queries, 5)
    _, exact_rows = nearest_states(queries, vocab, 5, score=score)
    assert _recall(rows, exact_rows) >= RECALL
    if score == "born":                    # -v is the same projector as v
        assert rows[:, 0].tolist() == list(range(10))
    else:
        assert rows[:5, 0].tolist() == list(range(5))


def test_complex_cosine_takes_one_rotation():
    """score="cosine" of complex vectors is Re<v|w>, a real inner product of the real images: no rotations."""
    vocab = _unit(2000, 16, seed=5)
    index = BornIndex(vocab, score="cosine")
    assert index.phases == 1
    queries = torch.cat([vocab[:5], -vocab[5:10]])
    scores, rows = index.search(queries, 5)
    exact_scores, exact_rows = nearest_states(queries, vocab, 5, score="cosine")
    assert _recall(rows, exact_rows) >= RECALL
    assert rows[:5, 0].tolist() == list(range(5)) and not set(rows[5:].flatten().tolist()) & set(range(5, 10))


def test_real_query_against_complex_states():
    vocab = _unit(300, 4, seed=4)
    vocab[7] = torch.tensor([0.6, 0.8, 0, 0], dtype=torch.complex64)
    scores, rows = BornIndex(vocab).search(torch.tensor([0.6, 0.8, 0.0, 0.0]), 1)
    assert rows.tolist() == [[7]] and scores.dtype == torch.float32
    torch.testing.assert_close(scores, torch.ones(1, 1))


def test_rows_restrict_the_index_and_ids_map_back(vocab):
    keep = torch.zeros(5000, dtype=torch.bool)
    keep[::7] = True
    index = BornIndex(vocab, rows=keep)
    assert index.num_indexed == int(keep.sum()) and index.num_rows == 5000
    _, rows = index.search(vocab[:10], 5)
    assert bool(keep[rows].all())
    assert rows[0, 0] == 0 and rows[1, 0] != 1                      # row 1 is not indexed


def test_nearest_functions_use_the_index(vocab, index, monkeypatch):
    words = [f"w{i}" for i in range(5000)]
    assert nearest_words(vocab[7], vocab, words, top=1, index=index) == [[("w7", pytest.approx(1.0, abs=1e-5))]]
    approx = nearest_states(vocab[:5], vocab, 4, method="approximate")
    exact = nearest_states(vocab[:5], vocab, 4)
    torch.testing.assert_close(approx[0], exact[0])
    monkeypatch.setattr(nearest_module, "ANN_MIN_VOCAB", 100)
    built = []
    original = BornIndex.__init__
    monkeypatch.setattr(BornIndex, "__init__", lambda self, *a, **k: (built.append(1), original(self, *a, **k))[1])
    nearest_states(vocab[:2], vocab, 3, method="auto")
    assert built == [1]
    with pytest.raises(ValueError, match="index was built"):
        nearest_states(vocab[:2, :32], vocab[:100], 3, index=index)
    with pytest.raises(ValueError, match="either candidates or"):
        nearest_states(vocab[:2], vocab, 3, index=index, candidates=torch.ones(5000, dtype=torch.bool))


def test_errors(vocab, index, monkeypatch):
    with pytest.raises(ValueError, match="dimension"):
        index.search(torch.ones(1, 8, dtype=torch.complex64), 3)
    with pytest.raises(ValueError, match="zero vector"):
        index.search(torch.zeros(1, 32, dtype=torch.complex64), 3)
    with pytest.raises(ValueError, match="no row"):
        BornIndex(torch.zeros(4, 3))
    with pytest.raises(ValueError, match="complex queries"):
        BornIndex(vocab.real.contiguous()).search(vocab[:1], 1)
    monkeypatch.setitem(sys.modules, "faiss", None)                  # as if not installed
    with pytest.raises(ImportError, match=r"qpnlp\[ann\]"):
        BornIndex(vocab)


def test_ties_rank_by_increasing_row_as_in_the_exact_search():
    # the index and the exact search both returned tied rows in arbitrary (and different) orders
    basis = torch.eye(4, dtype=torch.complex64)
    vocab = torch.cat([basis, basis, basis])                        # every word three times
    approx = BornIndex(vocab).search(basis[1], 5)
    exact = nearest_states(basis[1], vocab, 5)
    assert approx[1].tolist() == exact[1].tolist() == [[1, 5, 9, 0, 2]]
    assert approx[0].tolist() == exact[0].tolist() == [[1.0, 1.0, 1.0, 0.0, 0.0]]


def test_a_search_keeps_its_beam_while_another_thread_searches_the_same_index(vocab):
    """search() set the index's shared hnsw.efSearch, then searched: a search of another thread (a web server's
    requests sharing one index) setting it in between made this one search with that thread's beam, its results
    then differing from the same search made alone."""
    index = BornIndex(vocab, ef_search=200)
    shared, beams = index._index, []

    class AnotherThreadBetween:
        def __getattr__(self, name):
            return getattr(shared, name)

        def search(self, x, k, params=None):
            shared.hnsw.efSearch = 1                    # the other thread's search, asking for a narrow beam
            beams.append(shared.hnsw.efSearch if params is None else params.efSearch)
            return shared.search(x, k, params=params)

    alone = index.search(vocab[:20], 10)
    index._index = AnotherThreadBetween()
    raced = index.search(vocab[:20], 10)
    assert beams and set(beams) == {200}
    assert torch.equal(raced[1], alone[1]) and torch.equal(raced[0], alone[0])
