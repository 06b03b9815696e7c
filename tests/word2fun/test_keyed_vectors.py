"""The query object: gensim's interface with time, trajectories, the npz export, saving and legacy directories."""

import copy
import io
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from qpnlp.data import Vocabulary, read_tsv
from qpnlp.models.base import Model, read_model_header
from qpnlp.word2fun import KeyedVectors, StaticKeyedVectors, TimeScale, Word2Fun, convert_legacy_word2fun

TS = TimeScale(1900.0, 2000.0, 60.0)
LEGACY = Path(__file__).parent / "data" / "legacy-word2fun-0.1"


def keyed(model, words, counts=None):
    counts = [1] * len(words) if counts is None else counts
    vocab = Vocabulary(words, dict(zip(words, counts)), dict.fromkeys(words, 1), 1, specials=False)
    return KeyedVectors(model, vocab)


@pytest.fixture
def vectors(make, randomise):
    return keyed(randomise(make(6, 4, family="IV"), seed=2), list("abcdef"), [60, 50, 40, 30, 20, 10])


def test_checkpoint_round_trip(tmp_path, make, randomise):
    m = randomise(make(6, 4, family="IV"), seed=2)
    e = keyed(m, list("abcdef"), list(range(6)))
    e.save_pretrained(tmp_path / "ck")
    assert (tmp_path / "ck" / "model.safetensors").exists() and (tmp_path / "ck" / "vocabulary.json").exists()
    back = KeyedVectors.from_pretrained(tmp_path / "ck")
    assert back.index_to_key == e.index_to_key and back.counts.tolist() == list(range(6))
    assert back.model.time_scale == TS and back.model.family == "IV"
    assert torch.equal(back.grid(["a", "f"], [1900, 1950.5]), e.grid(["a", "f"], [1900, 1950.5]))
    assert back.vocabulary == e.vocabulary
    # the same directory through the model contract: the same module
    model = Model.from_pretrained(tmp_path / "ck")
    assert isinstance(model, Word2Fun) and model.config == m.config
    assert torch.equal(model.grid(torch.tensor([0, 5]), torch.tensor([1900.0, 1950.5])), e.grid(["a", "f"], [1900, 1950.5]))


def test_queries_and_npz_export(tmp_path, make, randomise):
    m = randomise(make(5, 4, family="II"), seed=3)
    e = keyed(m, ["a", "b", "c", "d", "e"])
    v = e.get_vector("c", 1950)
    assert torch.allclose(v, m.vectors(torch.tensor(2), torch.tensor(1950.0)))
    nn = e.most_similar("c", topn=2, year=1950)
    sims = torch.nn.functional.cosine_similarity(e.grid(list("abde"), [1950])[0], v[None])
    assert [w for w, _ in nn] == [list("abde")[i] for i in sims.argsort(descending=True)[:2]]
    s = e.similarity_over_time("a", "b", [1900, 1950])
    assert s.shape == (2,) and abs(s[1].item() - torch.nn.functional.cosine_similarity(e.get_vector("a", 1950), e.get_vector("b", 1950), 0).item()) < 1e-5
    assert abs(e.change_degree("a", (1900, 1900), (1900, 1900))) < 1e-6
    e.export_npz(tmp_path / "g.npz", ["a", "e"], [1900, 1901, 1902])
    z = np.load(tmp_path / "g.npz")
    assert z["E"].shape == (3, 2, 4) and z["words"].tolist() == ["a", "e"] and z["years"].tolist() == [1900, 1901, 1902]
    with pytest.raises(KeyError, match="zz"):
        e.get_vector("zz", 1900)


def test_npz_export_refuses_a_word_ending_in_nul(tmp_path, make):
    # np.asarray dropped the NUL: the grid's column of "a\x00" read back as "a" (another word of the vocabulary)
    e = keyed(make(3, 4, family="II"), ["a", "a\x00", "b,c"])
    with pytest.raises(ValueError, match=r"words\[1\] is 'a\\x00'.*ends in a NUL"):
        e.export_npz(tmp_path / "g.npz")
    assert not (tmp_path / "g.npz").exists()
    e.export_npz(tmp_path / "g.npz", ["b,c", "a"], [1900])
    assert np.load(tmp_path / "g.npz")["words"].tolist() == ["b,c", "a"]


def test_npz_export_reads_years_once(tmp_path, make, randomise):
    # grid() consumed a generator of years, and np.asarray(years) then wrote an empty (or object) years array
    e = keyed(randomise(make(3, 4, family="II"), seed=1), ["a", "b", "c"])
    e.export_npz(tmp_path / "g.npz", ["a", "c"], (y for y in (1900, 1950, 2000)))
    e.export_npz(tmp_path / "t.npz", ["a", "c"], [torch.tensor(y, requires_grad=True) for y in (1900., 1950., 2000.)])
    for name in ("g.npz", "t.npz"):
        z = np.load(tmp_path / name)
        assert z["years"].tolist() == [1900.0, 1950.0, 2000.0] and z["E"].shape == (3, 2, 4)
        assert np.allclose(z["E"], e.grid(["a", "c"], [1900, 1950, 2000]).numpy())


def brute_force(vectors, year, positive, negative):
    """gensim's rule by hand: cosine with the mean of the +-unit vectors, query words left out."""
    E = vectors.grid(vectors.index_to_key, [year])[0].double()
    U = E / E.norm(dim=-1, keepdim=True)
    q = sum(U[vectors.get_index(w)] for w in positive) - sum((U[vectors.get_index(w)] for w in negative), 0)
    sims = U @ (q / q.norm())
    out = [(w, float(sims[i])) for i, w in enumerate(vectors.index_to_key) if w not in positive + negative]
    return sorted(out, key=lambda x: -x[1])


@pytest.mark.parametrize("positive, negative", [(["a"], []), (["a", "c"], ["f"]), ([], ["b"]), (["d"], ["a", "e"])])
def test_most_similar_with_positive_and_negative_words(vectors, positive, negative):
    for year in (1900.0, 1962.5):
        got = vectors.most_similar(positive=positive, negative=negative, topn=3, year=year)
        want = brute_force(vectors, year, positive, negative)[:3]
        assert [w for w, _ in got] == [w for w, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    assert len(vectors.most_similar(positive, negative, topn=100, year=1950)) == 6 - len(set(positive + negative))
    assert vectors.most_similar("a", topn=5, year=1950, min_count=35) == \
        [x for x in vectors.most_similar("a", topn=5, year=1950) if x[0] in "bc"]


def test_similarity_and_membership(vectors):
    a, b = vectors.get_vector("a", 1933), vectors.get_vector("d", 1933)
    assert vectors.similarity("a", "d", year=1933) == pytest.approx(float(a @ b / (a.norm() * b.norm())), abs=1e-6)
    assert vectors.similarity("a", "a", year=1999) == pytest.approx(1.0, abs=1e-6)
    assert "a" in vectors and "z" not in vectors and 3 not in vectors and len(vectors) == 6
    assert vectors.get_index("c") == vectors.key_to_index["c"] == 2


def test_indicators_by_word_at_given_times(vectors):
    """The Table 5.28 options reach the model: the derivative at the given raw times, as a p-norm."""
    decades = [1910, 1920, 1930, 1940, 1950]
    ids = torch.tensor([vectors.get_index(w) for w in "ab"])
    expected = vectors.model.indicators(ids, times=decades, p=2)
    got = vectors.indicators(["a", "b"], times=decades, p=2)
    for name, values in expected.items():
        assert got[name] == pytest.approx(dict(zip("ab", values.tolist())), nan_ok=True), name
    assert got["mean_abs_derivative"] != vectors.indicators(["a", "b"])["mean_abs_derivative"]


def test_the_static_view_is_the_vectors_at_that_year(vectors):
    view = vectors.at(1950.5)
    assert isinstance(view, StaticKeyedVectors) and view.year == 1950.5
    assert isinstance(view.vectors, np.ndarray) and view.vectors.shape == (6, 4)
    assert np.array_equal(view.vectors, vectors.grid(vectors.index_to_key, [1950.5])[0].numpy())
    assert np.array_equal(view["b"], vectors.get_vector("b", 1950.5).numpy())
    assert view.index_to_key == vectors.index_to_key and view.key_to_index["e"] == 4
    assert "b" in view and "z" not in view and len(view) == 6
    assert view.most_similar(["a", "c"], ["f"], topn=3) == vectors.most_similar(["a", "c"], ["f"], topn=3, year=1950.5)
    assert view.similarity("a", "b") == pytest.approx(vectors.similarity("a", "b", year=1950.5), abs=1e-6)
    with pytest.raises(ValueError):
        view.vectors[0, 0] = 1.0  # read-only


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "torch.save"])
def test_the_query_objects_pickle_and_copy(vectors, how):
    # key_to_index is a read-only MappingProxyType, which pickle and deepcopy refused ("cannot pickle 'mappingproxy'")
    def torch_save(obj):
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=False)

    round_trip = {"pickle": lambda obj: pickle.loads(pickle.dumps(obj)), "deepcopy": copy.deepcopy,
                  "torch.save": torch_save}[how]
    again = round_trip(vectors)
    assert again.most_similar("c", topn=3, year=1950) == vectors.most_similar("c", topn=3, year=1950)
    assert dict(again.key_to_index) == dict(vectors.key_to_index)
    static = vectors.at(1950)
    back = round_trip(static)
    assert back.most_similar("c", topn=3) == static.most_similar("c", topn=3) and back.year == static.year
    for kv in (again, back):                                 # still read-only
        with pytest.raises(TypeError):
            kv.key_to_index["z"] = 0
    with pytest.raises(ValueError, match="read-only"):
        back.vectors[0, 0] = 1.0


def test_words_typed_in_another_unicode_form_are_the_corpus_words(tmp_path, make, randomise):
    """The corpus readers normalise every word (read_tsv, tokenize: NFKC, curly quotes straightened), as
    `qpnlp train word2fun --words` does; a query typed with a curly apostrophe or a combining accent was a KeyError."""
    corpus = tmp_path / "c.tsv"
    corpus.write_text("1900\tunion\u2019s cafe\u0301 war\n1950\tunion's war\n", encoding="utf-8")
    words = sorted({w for _, doc in read_tsv(corpus) for w in doc})
    assert words == ["caf\u00e9", "union's", "war"]
    vectors = keyed(randomise(make(3, 4, family="IV"), seed=1), words)
    for typed, word in (("union\u2019s", "union's"), ("cafe\u0301", "caf\u00e9")):
        assert typed in vectors and typed in vectors.at(1950)
        assert vectors.get_index(typed) == vectors.at(1950).get_index(typed) == vectors.key_to_index[word]
        assert torch.equal(vectors.get_vector(typed, 1950), vectors.get_vector(word, 1950))
    assert "Union's" not in vectors                                      # case is kept, as the readers keep it
    assert vectors.similarity("union\u2019s", "war", year=1950) == vectors.similarity("union's", "war", year=1950)


def test_unknown_words_and_missing_years_are_errors(vectors):
    with pytest.raises(KeyError, match="'zebra'"):
        vectors.most_similar("zebra", year=1950)
    with pytest.raises(KeyError, match="'zebra'"):
        vectors.most_similar(positive=["a"], negative=["zebra"], year=1950)
    with pytest.raises(KeyError, match="'zebra'"):
        vectors.similarity("a", "zebra", year=1950)
    with pytest.raises(KeyError, match="'zebra'"):
        vectors.at(1950)["zebra"]
    with pytest.raises(KeyError, match="'zebra'"):
        vectors.grid(["zebra"], [1950])
    with pytest.raises(ValueError, match="needs year="):
        vectors.most_similar("a")
    with pytest.raises(ValueError, match="needs year="):
        vectors.similarity("a", "b")
    with pytest.raises(ValueError, match="at least one"):
        vectors.at(1950).most_similar()


def test_change_degree_refuses_a_reversed_period(vectors):
    # a period with start > end sampled no time at all: the mean of nothing gave NaN, silently
    assert np.isfinite(vectors.change_degree("a", (1900, 1950), (1951, 2000), step=10))
    with pytest.raises(ValueError, match=r"period_a must be a finite \(start, end\) with start <= end"):
        vectors.change_degree("a", (1950, 1900), (1951, 2000), step=10)
    with pytest.raises(ValueError, match="period_b must be"):
        vectors.change_degree("a", (1900, 1950), (2000, float("nan")), step=10)


def _change_reference(e, word, period_a, period_b, step, measure):
    """The change degree of one word, straight from its definition (two grid calls for the word alone)."""
    a, b = (e.grid([word], np.arange(start, end + 1e-9, step))[:, 0] for start, end in (period_a, period_b))
    if measure == "cosine":
        return float(1 - torch.nn.functional.cosine_similarity(a.mean(0), b.mean(0), dim=0))
    H = e.model.compass.weight.detach()
    return float((torch.sigmoid(a @ H.T).mean(0) - torch.sigmoid(b @ H.T).mean(0)).abs().mean())


@pytest.mark.parametrize("measure", ["cosine", "context"])
@pytest.mark.parametrize("family", ["linear", "II", "IV"])
def test_change_degrees_in_chunks_equal_one_word_at_a_time(make, randomise, monkeypatch, measure, family):
    import qpnlp.word2fun.keyed_vectors as kv_module

    words = [f"w{i}" for i in range(7)]
    e = keyed(randomise(make(7, 4, family=family), seed=5), words)
    with torch.no_grad():                                  # w6 moves exactly as w5: a tie
        for p in e.model.parameters():
            if p.shape[0] == 7:
                p[6] = p[5]
    periods, step = ((1900, 1920), (1980, 2000)), 5.0      # 5 + 5 times
    query = ["w3", "w0", "w6", "w5", "w3", "w1", "w2", "w4"]   # a repeated word, the tied pair
    expect = [_change_reference(e, w, *periods, step, measure) for w in query]
    for chunk_values in (kv_module.CONTEXT_CHUNK_VALUES, 40, 80, 1):   # chunks of all, 1, 2 and (at least) 1 words
        monkeypatch.setattr(kv_module, "CONTEXT_CHUNK_VALUES", chunk_values)
        got = e.change_degrees(query, *periods, step=step, measure=measure)
        assert got.dtype == np.float64 and got.shape == (len(query),)
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-6)
        assert got[0] == got[4] and got[2] == got[3]     # the same word, and two words of equal vectors
        assert e.change_degree("w3", *periods, step=step, measure=measure) == pytest.approx(expect[0], abs=1e-6)
    assert e.change_degrees([], *periods, step=step, measure=measure).shape == (0,)
    assert e.change_degrees("w3", *periods, step=step, measure=measure).tolist() == \
        e.change_degrees(["w3"], *periods, step=step, measure=measure).tolist()
    with pytest.raises(KeyError, match="'nope'"):
        e.change_degrees(["w1", "nope"], *periods, step=step, measure=measure)
    with pytest.raises(ValueError, match="measure must be 'cosine' or 'context'"):
        e.change_degrees(["w1"], *periods, step=step, measure="euclid")

def test_context_change_degree_holds_no_times_x_vocabulary_matrix(make, randomise, monkeypatch):
    # 201 times x 500 words: the (T, V) probabilities went in chunks of at most CONTEXT_CHUNK_VALUES entries
    import qpnlp.word2fun.keyed_vectors as kv_module
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Largest(TorchDispatchMode):
        largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            sizes = [t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            self.largest = max([self.largest, *sizes])
            return out

    V = 500
    e = keyed(randomise(make(V, 4, family="IV"), seed=4), [f"w{i}" for i in range(V)])
    monkeypatch.setattr(kv_module, "CONTEXT_CHUNK_VALUES", 10 * V, raising=False)
    with Largest() as seen:
        got = e.change_degree("w3", (1900, 2000), (1950, 2000), step=0.5, measure="context")
    assert seen.largest <= 10 * V
    a, b = (e.grid(["w3"], np.arange(start, 2000 + 1e-9, 0.5))[:, 0] for start in (1900, 1950))
    H = e.model.compass.weight.detach()
    expect = (torch.sigmoid(a @ H.T).mean(0) - torch.sigmoid(b @ H.T).mean(0)).abs().mean()
    assert got == pytest.approx(float(expect), rel=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_the_top_words_are_the_first_of_a_stable_sort(seed):
    from qpnlp._top_k import top_k

    def _top(scores, n):            # most_similar's ranking of numpy scores (V,), n <= the finite ones
        return top_k(torch.from_numpy(scores)[None], n)[1][0] if n else torch.zeros(0, dtype=torch.long)

    rng = np.random.default_rng(seed)
    for V in (1, 2, 9, 300):
        scores = rng.integers(-3, 4, size=V).astype(float) / 4          # many ties, +0.0 and -0.0
        scores[rng.random(V) < 0.2] = -np.inf                           # query words, rare words
        finite = int(np.isfinite(scores).sum())
        for n in sorted({0, 1, finite // 2, finite}):
            assert _top(scores, n).tolist() == np.argsort(-scores, kind="stable")[:n].tolist()
    # most_similar: words of equal vectors (equal cosines) by increasing row, min_count, the query left out
    X = rng.normal(size=(12, 3))
    X[[4, 7, 9]] = X[2]
    kv = StaticKeyedVectors([f"w{i}" for i in range(12)], X, counts=np.arange(12))
    for query, topn, min_count in (("w2", 3, 0), ("w0", 12, 0), ("w5", 5, 6), ("w1", 1, 11), ("w11", 4, 12)):
        row = kv._unit[kv.get_index(query)]
        sims = kv._unit @ (row / np.linalg.norm(row))                  # the query: the mean of one unit row, normalised
        sims[kv.get_index(query)] = -np.inf
        sims[kv.counts < min_count] = -np.inf
        order = [i for i in np.argsort(-sims, kind="stable") if np.isfinite(sims[i])][:topn]
        assert kv.most_similar(query, topn=topn, min_count=min_count) == \
            [(f"w{i}", float(sims[i])) for i in order]

def test_the_static_view_refuses_duplicate_words_and_misfit_counts():
    # a duplicate hid one row from the look-ups and most_similar("a") returned "a" itself
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.01]])
    with pytest.raises(ValueError, match="duplicate word 'a'"):
        StaticKeyedVectors(["a", "b", "a"], vectors)
    # counts of another length failed only in most_similar(min_count=...), with an IndexError
    with pytest.raises(ValueError, match="counts"):
        StaticKeyedVectors(["a", "b", "c"], vectors, counts=[1, 2])


def test_npz_export_covers_the_integer_times_inside_the_span(tmp_path, make):
    model = make(2, 2, family="linear", time_scale=TimeScale(1900.5, 1903.5, 60.0))
    keyed(model, ["a", "b"]).export_npz(tmp_path / "g.npz")
    assert np.load(tmp_path / "g.npz")["years"].tolist() == [1901.0, 1902.0, 1903.0]


def test_the_vocabulary_must_fit_the_model(make):
    with pytest.raises(ValueError, match="3 words for a model of vocabulary 4"):
        keyed(make(4, 2), ["a", "b", "c"])
    with pytest.raises(TypeError, match="without special tokens"):
        KeyedVectors(make(4, 2), Vocabulary.build([["a", "b"]]))


# ------------------------------------------------------------------ directories saved by qpnlp 0.1
def test_a_legacy_directory_names_the_converter():
    with pytest.raises(ValueError, match="convert_legacy_word2fun"):
        KeyedVectors.from_pretrained(LEGACY)


def test_the_legacy_converter_keeps_every_parameter(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(LEGACY, old)
    new = convert_legacy_word2fun(old, tmp_path / "new")
    assert sorted(p.name for p in old.iterdir()) == ["config.json", "weights.safetensors"]  # untouched
    header = read_model_header(new)
    assert header["model"] == "word2fun" and header["metadata"]["converted_from"] == str(old)
    vectors = KeyedVectors.from_pretrained(new)
    meta = json.loads((LEGACY / "config.json").read_text())
    assert list(vectors.index_to_key) == meta["words"] and vectors.counts.tolist() == meta["counts"]
    assert vectors.model.time_scale == TimeScale(1900.0, 2000.0, 30.0)
    assert vectors.model.config.max_periods == 2.0 and vectors.model.freeze_compass
    stored = load_file(str(LEGACY / "weights.safetensors"))
    state = vectors.model.state_dict()
    assert sorted(stored) == sorted(state) and all(torch.equal(stored[k], state[k]) for k in stored)
    # the vectors qpnlp 0.1 computed from this directory
    expected = json.loads((LEGACY.parent / "legacy-word2fun-0.1-grid.json").read_text())
    assert torch.equal(vectors.grid(expected["words"], expected["years"]), torch.tensor(expected["E"]))


def test_the_legacy_converter_refuses_other_directories(tmp_path):
    with pytest.raises(ValueError, match="not a qpnlp 0.1 Word2Fun directory"):
        convert_legacy_word2fun(tmp_path, tmp_path / "new")
    with pytest.raises(ValueError, match="new directory"):
        convert_legacy_word2fun(LEGACY, LEGACY)
    broken = tmp_path / "broken"
    shutil.copytree(LEGACY, broken)
    meta = json.loads((broken / "config.json").read_text())
    meta["model"]["dim"] = 6
    (broken / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="does not match its config"):
        convert_legacy_word2fun(broken, tmp_path / "new")


# ------------------------------------------------------------------ parity with gensim's KeyedVectors
def gensim_pair(seed=0, V=12, D=5):
    """A StaticKeyedVectors and a gensim KeyedVectors of the same words and (untied, random) vectors."""
    gensim = pytest.importorskip("gensim")
    words = [f"w{i}" for i in range(V)]
    X = np.random.default_rng(seed).standard_normal((V, D)).astype(np.float32)
    theirs = gensim.models.KeyedVectors(D)
    theirs.add_vectors(words, X)
    return StaticKeyedVectors(words, X), theirs


def assert_same_neighbours(ours, theirs):
    assert [w for w, _ in ours] == [w for w, _ in theirs]
    assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-6)


def test_word_queries_match_gensim():
    ours, theirs = gensim_pair()
    for positive, negative in [("w0", None), (["w1", "w2"], ["w3"]), ([], ["w4"]), (["w5", "w5", "w6"], ["w0"])]:
        for topn in (1, 3, 50):
            assert_same_neighbours(ours.most_similar(positive, negative, topn),
                                   theirs.most_similar(positive, negative, topn))
    assert ours.similarity("w1", "w7") == pytest.approx(float(theirs.similarity("w1", "w7")), abs=1e-6)


def test_a_list_of_words_indexes_their_vectors_as_in_gensim():
    # s[["a", "b"]] raised KeyError "word ['a', 'b'] is not in the vocabulary"; gensim stacks the vectors (W, D)
    ours, theirs = gensim_pair()
    for keys in (["w3", "w0", "w3"], ("w1",), np.array(["w2", "w5"])):
        assert np.array_equal(ours[keys], theirs[keys])
    assert ours["w4"].shape == (5,) and ours[[]].shape == (0, 5)
    with pytest.raises(KeyError, match="'zebra'"):
        ours[["w1", "zebra"]]
    with pytest.raises(KeyError):
        ours[0]


def test_most_similar_takes_vectors_as_in_gensim(vectors):
    # a vector query raised KeyError "word np.float32(...) is not in the vocabulary"; gensim adds it as it is
    ours, theirs = gensim_pair(seed=1)
    rng = np.random.default_rng(2)
    v, u = 3 * rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    for positive, negative in [(v, None), ([v], None), (np.stack([v, u]), None), (["w1", v], ["w2"]),
                               (["w3"], [u]), ([u, "w0"], [v, "w5"])]:
        assert_same_neighbours(ours.most_similar(positive, negative, 4), theirs.most_similar(positive, negative, 4))
    assert ours.most_similar(torch.from_numpy(v), topn=4) == ours.most_similar(v, topn=4)
    assert ours.most_similar(ours["w2"], topn=1)[0][0] == "w2"          # a vector leaves no word out
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        ours.most_similar(np.ones(4))
    with pytest.raises(ValueError, match="zero vector"):
        ours.most_similar([v], [v])
    # over time: a word's vector at one time queried at another
    then = vectors.get_vector("a", 1900)
    assert vectors.most_similar(then, ["b"], topn=6, year=1950) == vectors.at(1950).most_similar(then.numpy(), ["b"], 6)


def test_a_numpy_array_of_words_is_words_not_a_vector():
    # vectors in most_similar's positive/negative are numeric arrays; an array of strings (np.array(["a", "c"]))
    # worked as a list of words and must keep doing so
    kv = StaticKeyedVectors(["a", "b", "c", "d"], np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-0.6, 0.8]]))
    assert kv.most_similar(positive=np.array(["a", "c"]), topn=2) == kv.most_similar(positive=["a", "c"], topn=2)


def _trajectory_pair_by_pair(vectors, word, other, times):
    """One similarity trajectory from the grid of the two words (similarity_over_time before it was batched)."""
    G = vectors.grid([word, other], times)
    G = G / G.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return (G[:, 0] * G[:, 1]).sum(-1)


@pytest.mark.parametrize("family", ["II", "IV", "linear", "sliced"])
@pytest.mark.parametrize("cap", [1, 40, None])      # grids of one word, of a few words, of all the words at once
def test_similarities_over_time_equal_the_trajectories_pair_by_pair(make, randomise, monkeypatch, family, cap):
    from qpnlp.word2fun import keyed_vectors

    if cap is not None:
        monkeypatch.setattr(keyed_vectors, "CONTEXT_CHUNK_VALUES", cap)
    words = ["a", "König", "日本", "😀", "x" * 200, "tie", "tie2"]
    V = len(words)
    model = randomise(make(V, 4, family=family), seed=5)
    with torch.no_grad():                               # "tie2" a copy of "tie" (in every slice): equal cosines
        for p in model.parameters():
            for row in range(5, p.shape[0], V):
                p[row + 1] = p[row]
    vectors = keyed(model, words)
    for word, others, times in [("a", words, [1950.0]), ("tie", ["tie2", "tie", "a"], [1900, 1937.5, 2000]),
                                ("😀", ["x" * 200], np.linspace(1900, 2000, 7)), ("a", [], [1900, 1950])]:
        table = vectors.similarities_over_time(word, others, times)
        assert table.shape == (len(times), len(others)) and table.dtype == torch.float32
        for j, other in enumerate(others):
            assert torch.equal(table[:, j], _trajectory_pair_by_pair(vectors, word, other, times)), (word, other)
            assert torch.equal(vectors.similarity_over_time(word, other, times), table[:, j])
    tie = vectors.similarities_over_time("a", ["tie", "tie2"], [1900, 1950])
    assert torch.equal(tie[:, 0], tie[:, 1])
    with pytest.raises(KeyError, match="'zz'"):
        vectors.similarities_over_time("a", ["a", "zz"], [1950])


# --------------------------------------------------------------------------- tensors of any layout, and gensim
X4 = torch.tensor([[1.0, 0.0], [0.75, 0.5], [0.0, 1.0], [-0.5, 0.75]], dtype=torch.float64)   # values bf16 holds


def test_static_vectors_take_a_tensor_of_any_layout(real_layout):
    # a tensor that requires grad (an embedding's weight), a negative-bit view or bfloat16 raised in np.array
    kv = StaticKeyedVectors(list("abcd"), real_layout(X4))
    expected = StaticKeyedVectors(list("abcd"), X4.numpy().astype(kv.vectors.dtype))   # bfloat16: float32
    assert np.array_equal(kv.vectors, expected.vectors)
    assert kv.most_similar("a", topn=3) == expected.most_similar("a", topn=3)


def test_query_vectors_of_any_layout_rank_as_the_plain_vector(real_layout):
    kv = StaticKeyedVectors(list("abcd"), X4.numpy())
    query = torch.tensor([0.5, 0.25], dtype=torch.float64)
    assert kv.most_similar(real_layout(query), topn=3) == kv.most_similar(query.numpy(), topn=3)
    assert kv.most_similar(real_layout(X4[1:3]), topn=2) == kv.most_similar(X4[1:3].numpy(), topn=2)


@pytest.mark.parametrize("vector", [torch.tensor([0.5 + 1j, 0.25]), np.array([0.5 + 1j, 0.25])],
                         ids=["tensor", "numpy"])
def test_a_complex_query_vector_is_an_error_not_its_real_part(vector):
    # a complex tensor was cast to its real part with only a numpy ComplexWarning; a complex array was looked up
    # as words (KeyError "word np.complex128(...) is not in the vocabulary")
    kv = StaticKeyedVectors(list("abcd"), X4.numpy())
    with pytest.raises(TypeError, match="query vector must be real; got complex"):
        kv.most_similar(vector)


def test_query_times_of_any_tensor_layout_are_the_plain_times(vectors, real_layout):
    times = torch.tensor([1904.0, 1952.0, 1984.0], dtype=torch.float64)          # values bf16 holds
    assert vectors.query_times(real_layout(times)).tolist() == times.tolist()
    assert torch.equal(vectors.grid(["a"], real_layout(times)), vectors.grid(["a"], times.tolist()))


def test_complex_query_times_are_an_error_not_their_real_part(vectors):
    # the cast to float64 kept the real part with only a warning
    for times in (torch.tensor([1950.0 + 3j]), np.array([1950.0 + 3j]), [np.complex128(1950.0 + 3j)], [1950.0 + 3j],
                  iter(np.array([1950.0 + 3j]))):      # lists of numpy's or Python's complex numbers too
        with pytest.raises(TypeError, match="times must be real numbers; got complex"):
            vectors.query_times(times)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vectors_at_a_year_round_trip_through_word2vec_text_format(tmp_path, make, randomise, dtype):
    # to_gensim cast float64 vectors to float32: a double model's vectors did not come back as they were
    gensim = pytest.importorskip("gensim")
    model = randomise(make(6, 4, family="IV"), seed=2).to(dtype)
    static = keyed(model, list("abcdef"), [6, 5, 4, 3, 2, 1]).at(1950)
    kv = static.to_gensim()
    assert kv.vectors.dtype == static.vectors.dtype
    kv.save_word2vec_format(tmp_path / "vectors.txt")
    back = gensim.models.KeyedVectors.load_word2vec_format(tmp_path / "vectors.txt", datatype=static.vectors.dtype.type)
    assert list(back.index_to_key) == list(static.index_to_key)
    assert np.array_equal(back.vectors, static.vectors)


def test_the_query_object_leaves_the_callers_modes_as_they_were(make, randomise, monkeypatch):
    # KeyedVectors(model, vocab) called model.eval(): a model still being trained lost its training mode
    model = randomise(make(6, 4, family="IV"), seed=2).train()
    model.compass.eval()                                   # a submodule the caller keeps in eval mode
    modes = [m.training for m in model.modules()]
    seen, grid = [], model.grid
    monkeypatch.setattr(model, "grid", lambda *a: seen.append(model.training) or grid(*a))
    vectors = keyed(model, list("abcdef"))
    assert [m.training for m in model.modules()] == modes
    vectors.similarity_over_time("a", "b", [1950.0]), vectors.at(1950.0), vectors.indicators(["a"])
    assert seen and not any(seen)                          # queried in eval mode
    assert [m.training for m in model.modules()] == modes


@pytest.mark.parametrize("query, fragment", [
    (np.array([np.nan, 0.25]), r"must be finite; got nan at index 0 \(1 of its 2 values"),
    (torch.tensor([float("inf"), float("-inf")]), r"must be finite; got inf at index 0 \(2 of its 2"),
    (np.ones((1, 1, 2)), r"one vector \(D,\) or a matrix \(n, D\) of n vectors; got shape \(1, 1, 2\)"),
    (torch.ones(()), r"got shape \(\)"),
    (np.ones(3), r"must have shape \(2,\); got shape \(3,\)"),
])
def test_a_bad_query_vector_is_named_for_what_is_wrong(query, fragment):
    # a NaN query said "must be finite with shape (2,); got shape (2,)"; a (1, 1, 2) array named the (1, 2) row
    kv = StaticKeyedVectors(list("abcd"), X4.numpy())
    with pytest.raises(ValueError, match=fragment):
        kv.most_similar(query)
    with pytest.raises(ValueError, match=fragment):
        kv.most_similar(["a"], query)
