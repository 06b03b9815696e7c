"""Exact nearest words by the Born probability |<v|w>|^2 (or cosine for real vectors)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.interpret import (born_scores, measurement_vectors, measurement_words, nearest_states, nearest_table,
                             nearest_words)
from qpnlp.interpret import nearest as nearest_module
from qpnlp.measurement import Projector, ProjectiveMeasurement
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.models import CNM, CNMConfig, CNMReal, CNMRealConfig
from qpnlp.testing import pure_states

WORDS = ["<pad>", "<unk>", "king", "queen", "apple", "pear"]


def _random_states(n, d, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    real = torch.empty((), dtype=dtype).real.dtype
    z = torch.complex(torch.randn(n, d, generator=g, dtype=real), torch.randn(n, d, generator=g, dtype=real))
    return torch.nn.functional.normalize(z, dim=-1).to(device)


def test_a_word_is_its_own_nearest_word_with_probability_one(cdtype, device, tol):
    states = _random_states(6, 5, cdtype, device)
    states[0] = 0                                                       # padding row never ranks
    # a global phase does not change the measured word
    queries = states[2:] * torch.polar(torch.tensor(1.0, dtype=states.real.dtype, device=device),
                                       torch.tensor(0.7, dtype=states.real.dtype, device=device))
    ranked = nearest_words(queries, states, WORDS, top=3)
    assert [r[0][0] for r in ranked] == WORDS[2:]
    for r in ranked:
        assert r[0][1] == pytest.approx(1.0, abs=tol(5))
        assert all(word != "<pad>" for word, _ in r)
        assert [p for _, p in r] == sorted((p for _, p in r), reverse=True)


def test_hand_made_probabilities(device):
    # |w> = (0.6, 0.8i): measuring along e0 gives 0.36, along e1 0.64;
    # along v = (e0 + i e1)/sqrt2: <v|w> = (0.6 + (-i)(0.8i))/sqrt2 = 1.4/sqrt2, so 0.98
    vocab = torch.tensor([[1, 0], [0, 1], [0.6, 0.8j]], dtype=torch.complex128, device=device)
    query = torch.tensor([[1, 1j]], dtype=torch.complex128, device=device) / math.sqrt(2)
    scores = born_scores(vocab[2], vocab)
    torch.testing.assert_close(scores.cpu(), torch.tensor([[0.36, 0.64, 1.0]], dtype=torch.float64))
    values, rows = nearest_states(query, vocab, 3)
    assert rows[0, 0] == 2 and sorted(rows[0, 1:].tolist()) == [0, 1]
    torch.testing.assert_close(values.cpu(), torch.tensor([[0.98, 0.5, 0.5]], dtype=torch.float64))
    # the conjugate matters: v' = (e0 - i e1)/sqrt2 gives |0.6 - 0.8|^2 / 2 = 0.02
    torch.testing.assert_close(born_scores(query.conj(), vocab)[0, 2].cpu(), torch.tensor(0.02, dtype=torch.float64))
    assert values.device == vocab.device and rows.device == vocab.device


def test_scores_normalise_and_follow_the_born_rule_of_measurement():
    vocab = torch.tensor([[2, 0], [0, 3j]], dtype=torch.complex64)       # not unit: normalised
    torch.testing.assert_close(born_scores(torch.tensor([1.0 + 0j, 1.0]), vocab), torch.tensor([[0.5, 0.5]]))


@given(pure_states(batch_shape=st.just((7,))), st.integers(0, 6))
def test_ranking_agrees_with_word_probabilities(states, i):
    from qpnlp.measurement import word_probabilities

    data = states.data
    expected = word_probabilities(data, data[i:i + 1]).squeeze(-1)
    values, rows = nearest_states(data[i], data, 7)
    torch.testing.assert_close(values[0], expected[rows[0]])
    assert rows[0, 0] == i or expected[rows[0, 0]] >= 1 - 1e-4


def test_real_vectors_rank_by_signed_cosine_or_by_squared_cosine():
    vocab = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.6, 0.8]])
    assert nearest_words(torch.tensor([1.0, 0.0]), vocab, ["a", "minus a", "b"], top=3) == \
        [[("a", 1.0), ("b", pytest.approx(0.6)), ("minus a", -1.0)]]
    born = nearest_words(torch.tensor([1.0, 0.0]), vocab, ["a", "minus a", "b"], top=2, score="born")
    assert sorted(w for w, _ in born[0]) == ["a", "minus a"] and [p for _, p in born[0]] == [1.0, 1.0]


def test_complex_cosine_is_the_euclidean_ranking_of_the_real_images():
    """score="cosine" for complex vectors: Re<v|w> of the unit vectors, the thesis' KD-tree ranking (section
    5.1.4.2); it was refused. Unlike the Born probability it sees the global phase: -v is the farthest word."""
    v = torch.tensor([1, 0], dtype=torch.complex64)
    vocab = torch.stack([v, -v, torch.tensor([0.6, 0.8j]), torch.tensor([0.6j, 0.8])])
    words = ["v", "minus v", "b", "c"]
    assert nearest_words(v, vocab, words, top=4, score="cosine") == \
        [[("v", 1.0), ("b", pytest.approx(0.6)), ("c", pytest.approx(0.0, abs=1e-7)), ("minus v", -1.0)]]
    assert sorted(nearest_words(v, vocab, words, top=2)[0]) == [("minus v", 1.0), ("v", 1.0)]     # a tie by Born
    gen = torch.Generator().manual_seed(2)
    states = torch.randn(200, 6, dtype=torch.complex128, generator=gen)
    queries = torch.randn(5, 6, dtype=torch.complex128, generator=gen)
    _, rows = nearest_states(queries, states, 10, score="cosine")
    unit = lambda x: torch.view_as_real(x / x.norm(dim=-1, keepdim=True)).flatten(-2)  # noqa: E731
    by_distance = torch.cdist(unit(queries), unit(states)).argsort(dim=-1)[:, :10]
    assert torch.equal(rows, by_distance)


def test_candidates_chunks_and_top_larger_than_vocabulary(monkeypatch):
    states = _random_states(50, 4, torch.complex64, "cpu")
    keep = torch.zeros(50, dtype=torch.bool)
    keep[[3, 7, 9]] = True
    monkeypatch.setattr(nearest_module, "_CHUNK_SCORES", 60)           # one query per chunk
    values, rows = nearest_states(states[:5], states, 10, candidates=keep)
    assert rows.shape == (5, 3) and set(rows.flatten().tolist()) <= {3, 7, 9}
    full, _ = nearest_states(states[:5], states, 50)
    monkeypatch.undo()
    again, _ = nearest_states(states[:5], states, 50)
    torch.testing.assert_close(full, again)


def test_table_layout():
    vocab = torch.eye(3, dtype=torch.complex64)
    table = nearest_table(vocab, vocab, ["a", "b", "c"], top=2, query_names=["x", "y", "z"])
    assert list(table.columns) == ["query", "rank", "word", "probability"]
    assert table["query"].tolist() == ["x", "x", "y", "y", "z", "z"]
    assert table.loc[table["rank"] == 1, "word"].tolist() == ["a", "b", "c"]
    real = nearest_table(torch.eye(2), torch.eye(2), ["a", "b"], top=1)
    assert list(real.columns)[-1] == "cosine"


@pytest.mark.parametrize("call, error, match", [
    (lambda: nearest_words(torch.eye(2, dtype=torch.complex64), torch.eye(3, dtype=torch.complex64), "abc"),
     TypeError, "not a string"),
    (lambda: nearest_words(torch.eye(3, dtype=torch.complex64), torch.eye(3, dtype=torch.complex64), ["a", "b"]),
     ValueError, "got 2 words for 3"),
    (lambda: nearest_words(torch.eye(3, dtype=torch.complex64), torch.zeros(0, 3, dtype=torch.complex64), []),
     ValueError, "empty"),
    (lambda: born_scores(torch.ones(2, dtype=torch.complex64), torch.eye(3, dtype=torch.complex64)),
     ValueError, "dimension 2"),
    (lambda: born_scores(torch.tensor([float("nan"), 1.0]), torch.eye(2)), ValueError, "NaN"),
    (lambda: born_scores(torch.zeros(2), torch.eye(2)), ValueError, "zero vector"),
    (lambda: born_scores(torch.ones(1, 1, 2), torch.eye(2)), ValueError, "shape"),
    (lambda: nearest_states(torch.eye(2), torch.eye(2), 0), ValueError, "k must be"),
    (lambda: nearest_states(torch.eye(2), torch.eye(2), 1, method="fast"), ValueError, "method"),
    (lambda: nearest_states(torch.eye(2), torch.zeros(2, 2), 1), ValueError, "no usable"),
    (lambda: nearest_states(torch.eye(2), torch.eye(2), 1, candidates=torch.zeros(2, dtype=torch.bool)),
     ValueError, "selects no row"),
    (lambda: nearest_states(torch.eye(2), torch.eye(2), 1, candidates=torch.ones(3, dtype=torch.bool)),
     ValueError, "shape"),
    (lambda: born_scores(torch.eye(2), torch.eye(2), score="l2"), ValueError, "score"),
])
def test_bad_input_is_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_measurement_words_of_a_model_measurement(device):
    model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=2), generator=torch.Generator()
                 .manual_seed(0)).to(device)
    states = model.embedding.all_states().detach()
    with torch.no_grad():                                                # v_0 = the state of "queen"
        model.measurement.weight[0] = states[3]
    table = measurement_words(model, WORDS, top=2)
    assert list(table.columns) == ["measurement", "rank", "word", "probability"]
    first = table[(table["measurement"] == 0) & (table["rank"] == 1)].iloc[0]
    assert first["word"] == "queen" and first["probability"] == pytest.approx(1.0, abs=1e-5)
    assert not set(table["word"]) & {"<pad>", "<unk>"}                   # excluded by default
    only = measurement_words(model.measurement, WORDS, states=states, outcomes=[1], top=1, exclude_ids=())
    assert only["measurement"].tolist() == [1]
    with pytest.raises(ValueError, match="outcomes"):
        measurement_words(model, WORDS, outcomes=[5])
    with pytest.raises(ValueError, match="states="):
        measurement_words(model.measurement, WORDS)


def test_measurement_words_ranked_as_the_thesis_did():
    """score="cosine": Re<v_k|w>, the thesis' KD-tree ranking of Tables 5.13-5.14; -w is a measurement's
    likeliest word by the Born probability and its farthest by the cosine."""
    model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=2), generator=torch.Generator()
                 .manual_seed(0))
    states = model.embedding.all_states().detach()
    with torch.no_grad():
        model.measurement.weight[0] = -states[3]                         # minus the state of "queen"
    born = measurement_words(model, WORDS, top=4, outcomes=[0])
    cosine = measurement_words(model, WORDS, top=4, outcomes=[0], score="cosine")
    assert born["word"].iloc[0] == "queen" and born["probability"].iloc[0] == pytest.approx(1.0, abs=1e-5)
    assert list(cosine.columns)[-1] == "cosine"
    assert cosine["word"].iloc[-1] == "queen" and cosine["cosine"].iloc[-1] == pytest.approx(-1.0, abs=1e-5)
    povm = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=5, measurement="povm"))
    with pytest.raises(ValueError, match="projective"):
        measurement_words(povm, WORDS, score="cosine")
    with pytest.raises(ValueError, match="'born' or 'cosine'"):
        measurement_words(model, WORDS, score="auto")


def test_measurement_vectors_sources():
    m = ProjectiveMeasurement(3, 2, init="identity")
    torch.testing.assert_close(measurement_vectors(m), torch.eye(3, dtype=torch.complex64)[:2])
    torch.testing.assert_close(measurement_vectors(m.as_projectors()), torch.eye(3, dtype=torch.complex64)[:2])
    cnm = CNM(CNMConfig(num_words=6, dim=3, num_measurements=2))
    assert measurement_vectors(cnm).shape == (2, 3)
    real = CNMReal(CNMRealConfig(num_words=6, dim=3, num_measurements=2))
    v = measurement_vectors(real)
    assert v.shape == (2, 6) and not v.is_complex()
    assert measurement_words(real, WORDS, top=1)["probability"].between(0, 1).all()
    with pytest.raises(ValueError, match="no measurement"):
        measurement_vectors(QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, head="dense")))
    with pytest.raises(ValueError, match="rank-1"):
        measurement_vectors(Projector(torch.eye(3, dtype=torch.complex64)[None, :2]))
    with pytest.raises(TypeError):
        measurement_vectors("v")


def test_measurement_vectors_of_povm_heads():
    """Issue 19: a rank-1 POVM head has one (non-unit) vector per outcome; the words' table reports <w|E_k|w>."""
    model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=5, measurement="povm"),
                 generator=torch.Generator().manual_seed(0))
    v = measurement_vectors(model)
    assert v.shape == (5, 3) and v.is_complex()
    torch.testing.assert_close(v.mH @ v, torch.eye(3, dtype=v.dtype).conj(), atol=1e-5, rtol=0)   # sum_k E_k = I
    torch.testing.assert_close(measurement_vectors(model.measurement), v)
    torch.testing.assert_close(measurement_vectors(model.measurement.as_povm()), v)
    table = measurement_words(model, WORDS, top=2, exclude_ids=(0,))
    states = model.embedding.all_states().detach()
    expected = model.measurement(states[1:]).detach()                   # (V - 1, k): <w|E_k|w>
    for _, row in table.iterrows():
        word = WORDS.index(row["word"])
        assert row["probability"] == pytest.approx(float(expected[word - 1, row["measurement"]]), abs=1e-5)
    ranked = table[table["rank"] == 1].set_index("measurement")["word"]
    assert all(WORDS.index(ranked[k]) - 1 == int(expected[:, k].argmax()) for k in range(5))
    rank2 = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=4, num_measurements=2, measurement="povm"))
    with pytest.raises(ValueError, match="rank-1 effects"):
        measurement_vectors(rank2)


def test_measurement_words_names_exclude_ids_outside_the_vocabulary():
    """A negative id silently excluded the last word, a large one gave IndexError: both are now ValueError."""
    model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=2))
    for bad in ([-1], [6]):
        with pytest.raises(ValueError, match=r"exclude_ids must be word ids in \[0, 6\)"):
            measurement_words(model, WORDS, top=1, exclude_ids=bad)


def test_equal_scores_rank_by_increasing_row_as_a_stable_sort(device):
    # torch.topk returned tied rows in an arbitrary order ([1, 9, 5, 11, 8] here), and which of 2000 tied rows
    # made the cut depended on the input size; the ranking is now that of a stable sort of each row
    basis = torch.eye(4, dtype=torch.complex64, device=device)
    vocab = torch.cat([basis, basis, basis])                        # every word three times
    values, rows = nearest_states(basis[1], vocab, 5)
    assert rows.tolist() == [[1, 5, 9, 0, 2]] and values.tolist() == [[1.0, 1.0, 1.0, 0.0, 0.0]]
    assert nearest_words(basis[1], basis, ["a", "b", "c", "d"], top=4) == \
        [[("b", 1.0), ("a", 0.0), ("c", 0.0), ("d", 0.0)]]
    flat = torch.zeros(20000, 3, device=device)
    flat[:, 0] = 1
    flat[7, 1] = 1                                                  # one word below the rest
    assert nearest_states(torch.tensor([1.0, 0, 0]), flat, 10)[1].tolist() == [[0, 1, 2, 3, 4, 5, 6, 8, 9, 10]]
    g = torch.Generator().manual_seed(3)
    vocab = torch.eye(3, dtype=torch.float64)[torch.randint(0, 3, (50,), generator=g)]    # 3 distinct words
    queries = torch.randn(4, 3, generator=g, dtype=torch.float64)
    expected = born_scores(queries, vocab).sort(dim=-1, descending=True, stable=True)
    for k in (1, 7, 50):
        values, rows = nearest_states(queries.to(device), vocab.to(device), k)
        assert rows.tolist() == expected.indices[:, :k].tolist()
        # scored on the device: equal to the CPU's scores to float rounding (1e-16 apart on CUDA)
        torch.testing.assert_close(values.cpu(), expected.values[:, :k], rtol=0, atol=1e-12)


def test_top_k_ranks_as_a_stable_sort_when_rows_mix_ties_and_distinct_scores(device):
    # rows of few distinct scores (the cut inside a tie, with some columns above it) beside rows of distinct scores
    from qpnlp._top_k import top_k
    g = torch.Generator().manual_seed(0)
    for n, k in ((1, 1), (6, 1), (6, 3), (40, 7), (40, 40), (500, 25)):
        scores = torch.cat([torch.randint(0, 4, (5, n), generator=g).float(), torch.randn(2, n, generator=g)])
        expected = scores.sort(dim=-1, descending=True, stable=True)
        values, columns = top_k(scores.to(device), k)
        assert columns.tolist() == expected.indices[:, :k].tolist()
        assert values.tolist() == expected.values[:, :k].tolist()
    late_tie = torch.arange(1000.0).flip(0)[None].repeat(2, 1)      # the tie at the cut in the last columns
    late_tie[0, -3:], late_tie[1, :] = 2000.0, 0.0
    late_tie[1, 990:] = 1.0
    expected = late_tie.sort(dim=-1, descending=True, stable=True)
    values, columns = top_k(late_tie.to(device), 2)
    assert columns.tolist() == expected.indices[:, :2].tolist() == [[997, 998], [990, 991]]


def test_top_k_keeps_a_nan_score_above_a_tie_at_the_cut(device):
    # torch.topk and a descending stable sort rank NaN first; a row whose cut fell inside a tie dropped its NaN
    # columns (they are not "> kth") and took a further tied column instead, so the same NaN was kept or lost
    # depending on whether the k-th score happened to tie
    from qpnlp._top_k import top_k
    nan = float("nan")
    scores = torch.tensor([[1.0, nan, 1.0, 1.0, 0.0], [nan, 1.0, 1.0, nan, 1.0], [nan, 2.0, 1.0, 1.0, 1.0],
                           [nan, 2.0, 3.0, 1.0, 0.0], [1.0, nan, 0.0, nan, nan], [nan, nan, nan, nan, nan]])
    for k in (1, 2, 3, 4):
        expected = scores.sort(dim=-1, descending=True, stable=True)
        values, columns = top_k(scores.to(device), k)
        assert columns.tolist() == expected.indices[:, :k].tolist(), k
        assert values.isnan().tolist() == expected.values[:, :k].isnan().tolist()


_TIED_SCORES = st.sampled_from([0.0, -0.0, 1.0, 2.0, 5e-324, float("nan"), float("inf"), -float("inf")])


@given(st.integers(1, 70).flatmap(lambda n: st.tuples(st.lists(st.lists(_TIED_SCORES, min_size=n, max_size=n),
                                                                 min_size=1, max_size=4), st.integers(1, n))),
       st.sampled_from([torch.float32, torch.float64]))
def test_fuzzed_top_k_is_a_stable_descending_sort(rows_and_k, dtype):
    """Few distinct scores (ties everywhere, signed zeros, a subnormal, NaN, infinities), rows wider than the first
    prefix of _cut_inside_tie (4 k), k up to the row's width: the columns of a stable descending sort."""
    from qpnlp._top_k import top_k
    rows, k = rows_and_k
    scores = torch.tensor(rows, dtype=dtype)
    expected = scores.sort(dim=-1, descending=True, stable=True)
    values, columns = top_k(scores, k)
    assert torch.equal(columns, expected.indices[:, :k])
    torch.testing.assert_close(values, expected.values[:, :k], rtol=0, atol=0, equal_nan=True)


def test_an_installed_faiss_that_does_not_import_leaves_auto_exact(monkeypatch):
    """An installed faiss that fails to import (built for another NumPy) is found by ``find_spec``: ``method="auto"``
    on a large vocabulary raised the index's ImportError instead of searching exactly."""
    import importlib.util
    import sys

    from qpnlp import _optional
    from qpnlp.interpret import ann

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "faiss" else find_spec(name, *a))
    monkeypatch.setattr(_optional, "IMPORTS", {})                                  # not tried yet in this process
    monkeypatch.setitem(sys.modules, "faiss", None)                  # import faiss -> ImportError
    gen = torch.Generator().manual_seed(0)
    vocab = torch.randn(nearest_module.ANN_MIN_VOCAB, 4, generator=gen)
    with pytest.warns(RuntimeWarning, match="faiss is installed but does not import"):
        scores, rows = nearest_states(vocab[7], vocab, k=3, method="auto")
    exact = nearest_states(vocab[7], vocab, k=3, method="exact")
    assert torch.equal(rows, exact[1]) and torch.equal(scores, exact[0])
    assert not ann.faiss_available()
