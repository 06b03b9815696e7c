import dataclasses

import numpy as np
import pytest

from qpnlp.data.qa import load_qa, read_qa_tsv
from qpnlp.evaluation.bm25 import bm25_scores, evaluate_bm25


def _toy(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text(
        "what is the capital of france ?\tParis is the capital of France .\t1\n"
        "what is the capital of france ?\tThe weather is nice today .\t0\n"
        "what is the capital of france ?\tBerlin is a city .\t0\n"
        "who wrote hamlet ?\tHamlet was written by Shakespeare .\t1\n"
        "who wrote hamlet ?\tThe capital of Italy is Rome .\t0\n"
    )
    return read_qa_tsv(path, name="toy", split="dev")


def test_bm25_prefers_word_overlap(tmp_path):
    ds = _toy(tmp_path)
    scores = bm25_scores(ds)
    assert scores.shape == (5,) and scores.dtype == np.float64
    assert scores[0] > scores[1] and scores[0] > scores[2] and scores[3] > scores[4]
    assert scores[4] == 0.0  # no shared word with "who wrote hamlet ?"
    r = evaluate_bm25(ds)
    assert r.map == 1.0 and r.mrr == 1.0 and r.n_questions == 2


def test_bm25_parameters_matter(tmp_path):
    ds = _toy(tmp_path)
    assert not np.allclose(bm25_scores(ds, k1=1.2, b=0.75), bm25_scores(ds, k1=2.0, b=0.0))


@pytest.mark.parametrize("bad, error, message", [
    (dict(k1=float("nan")), ValueError, "k1 must be a finite number >= 0; got nan"),
    (dict(k1=-1.0), ValueError, "k1 must be a finite number >= 0; got -1.0"),
    (dict(b=1.5), ValueError, r"b must be a finite number in \[0, 1\]; got 1.5"),
    (dict(epsilon=float("inf")), ValueError, "epsilon must be a finite number >= 0; got inf"),
    (dict(k1="1.2"), TypeError, "k1 must be a finite number >= 0; got str '1.2'"),
    (dict(b=True), TypeError, r"b must be a finite number in \[0, 1\]; got bool True"),
])
def test_bm25_parameters_are_checked(tmp_path, bad, error, message):
    # rank_bm25 takes any value: k1=nan scored every candidate NaN without a word, k1 < 0 or b > 1 gave scores of
    # a meaningless sign, and k1="1.2" failed inside rank_bm25 ("can only concatenate str")
    with pytest.raises(error, match=message):
        bm25_scores(_toy(tmp_path), **bad)


def test_bm25_of_candidates_without_a_token_is_refused(tmp_path):
    # rank_bm25 divided by their mean length, 0: a bare ZeroDivisionError (read_qa_tsv refuses such rows; a
    # hand-made data set or one whose candidates tokenise to nothing does not)
    ds = dataclasses.replace(_toy(tmp_path), candidates=["", "", "", "", ""])
    with pytest.raises(ValueError, match="toy dev: no candidate has a token"):
        bm25_scores(ds)


@pytest.mark.data
def test_bm25_wikiqa_test_floor(data_root):
    ds = load_qa("wikiqa", "test", root=data_root)
    r = evaluate_bm25(ds)
    assert r.n_questions == 243                # without a correct candidate removed (Yang et al., 2015)
    assert 0.55 < r.map < 0.62 and 0.55 < r.mrr < 0.63
    assert r.map <= evaluate_bm25(ds, ties="optimistic").map


@pytest.mark.data
def test_bm25_trecqa_dev(data_root):
    r = evaluate_bm25(load_qa("trecqa", "dev", root=data_root))
    assert r.n_questions == 65 and 0.65 < r.map < 0.76
