r"""BM25 ranking of answer candidates: an untrained floor for answer selection.

Each question is the query and its own candidates are the documents to rank.
Scores come from :class:`rank_bm25.BM25Okapi` (Okapi BM25, Robertson et al.)
with :math:`k_1 = 1.2`, :math:`b = 0.75`:

.. math::

    \mathrm{score}(q, d) = \sum_{t \in q} \mathrm{idf}(t)
        \frac{f(t, d)\,(k_1 + 1)}{f(t, d) + k_1 (1 - b + b\,|d| / \mathrm{avgdl})},
    \qquad \mathrm{idf}(t) = \ln\frac{N - n(t) + 0.5}{n(t) + 0.5},

where the "collection" is the candidate pool of the split: N is the number of
candidate rows of the dataset passed in (after its question filter), n(t) the
number of those containing t and avgdl their mean length. A term occurring in
more than half of the pool would get a negative idf; ``rank_bm25`` replaces
it by ``epsilon`` times the mean idf (default 0.25). Repeated query terms count
once per occurrence. Texts are tokenised with :func:`qpnlp.data.tokenize.tokenize`
(lowercased); no stemming and no stop-word list.

Run ``python -m qpnlp.evaluation.bm25`` to print the numbers on the benchmark
splits (needs ``QPNLP_DATA``).
"""

from __future__ import annotations

import math

import numpy as np

from qpnlp._checks import check_real
from qpnlp.data.qa import QADataset
from qpnlp.evaluation.ranking import RankingResult, ranking_metrics

__all__ = ["bm25_scores", "evaluate_bm25"]


def bm25_scores(dataset: QADataset, k1: float = 1.2, b: float = 0.75, epsilon: float = 0.25) -> np.ndarray:
    """BM25 score of every candidate for its question.

    Parameters
    ----------
    dataset : QADataset
        Candidates grouped by question; the idf statistics are computed over
        all of its candidate rows.
    k1, b, epsilon : float
        Okapi BM25 parameters (see the module docstring): finite, k1 >= 0, b in [0, 1], epsilon >= 0.

    Returns
    -------
    numpy.ndarray
        float64, shape (R,) for the R candidate rows.

    Raises
    ------
    TypeError
        When ``k1``, ``b`` or ``epsilon`` is not a real number (a bool is not).
    ValueError
        When one is outside its range or not finite, or ``dataset`` has no candidates or none with a token.
    """
    _check_parameters(k1=k1, b=b, epsilon=epsilon)
    try:
        from rank_bm25 import BM25Okapi
    except ImportError as err:  # pragma: no cover
        from qpnlp._optional import missing

        raise missing("rank_bm25", "bench", "bm25_scores") from err
    if len(dataset) == 0:
        raise ValueError(f"{dataset.name} {dataset.split} has no candidates")
    docs = dataset.candidate_tokens()
    if not any(docs):                       # rank_bm25 divided by their mean length, 0 (ZeroDivisionError)
        raise ValueError(f"{dataset.name} {dataset.split}: no candidate has a token (BM25 normalises by their mean "
                         f"length)")
    bm25 = BM25Okapi(docs, k1=k1, b=b, epsilon=epsilon)
    scores = np.zeros(len(docs), dtype=np.float64)
    for query, rows in zip(dataset.question_tokens(), dataset.groups):
        scores[rows] = bm25.get_batch_scores(query, rows.tolist())
    return scores


def _check_parameters(**parameters: float) -> None:
    """An error naming the first of ``k1``, ``b``, ``epsilon`` that is not a finite real number in its range
    (k1 >= 0, 0 <= b <= 1, epsilon >= 0): ``rank_bm25`` takes any, and a NaN scored every candidate NaN, a negative
    k1 or a b above 1 could turn the length normalisation's denominator negative or zero (scores of any sign, inf)."""
    for name, value in parameters.items():
        high, wanted = (1.0, "a finite number in [0, 1]") if name == "b" else (math.inf, "a finite number >= 0")
        if not 0 <= check_real(name, value, wanted, tensors=False) <= high:
            raise ValueError(f"{name} must be {wanted}; got {value!r}")


def evaluate_bm25(dataset: QADataset, ties: str = "pessimistic", **bm25_kwargs) -> RankingResult:
    """MAP / MRR / P@1 of the BM25 ranking on ``dataset`` (which must be filtered).

    Parameters
    ----------
    dataset : QADataset
        Candidates grouped by question, each question with a correct candidate.
    ties : {"pessimistic", "optimistic"}
        How exactly equal scores are ordered (:mod:`qpnlp.evaluation.ranking`); default ``"pessimistic"``.
    **bm25_kwargs
        ``k1``, ``b``, ``epsilon`` of :func:`bm25_scores`.

    Returns
    -------
    RankingResult
    """
    return ranking_metrics(bm25_scores(dataset, **bm25_kwargs), dataset.labels, dataset.groups, ties=ties)


def _main() -> None:  # pragma: no cover - a reporting script
    from qpnlp.data.qa import load_qa

    for name, split in (("wikiqa", "test"), ("wikiqa", "dev"), ("trecqa", "dev")):
        ds = load_qa(name, split)
        scores = bm25_scores(ds)
        print(f"{name} {split}: {ds.n_questions} of {ds.n_questions_raw} questions after the filter, {len(ds)} pairs")
        for ties in ("pessimistic", "optimistic"):
            print("   ", ranking_metrics(scores, ds.labels, ds.groups, ties=ties))


if __name__ == "__main__":  # pragma: no cover
    _main()
