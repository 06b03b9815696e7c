r"""Ranking metrics for answer selection: MAP, MRR and P@1.

Each question's candidates are ranked by decreasing score; then, with ranks
:math:`r_1 < \dots < r_m` of the m correct candidates,

.. math::

    \mathrm{AP} = \frac{1}{m}\sum_{j=1}^{m} \frac{j}{r_j}, \qquad
    \mathrm{RR} = \frac{1}{r_1}, \qquad
    \mathrm{P@1} = [r_1 = 1],

and MAP, MRR and P@1 are their means over questions.

Ties
----
Candidates with exactly equal scores are ordered by the ``ties`` rule, so
the metrics are deterministic and do not depend on the order of the rows:

* ``"pessimistic"`` (default): among tied candidates the wrong ones rank
  first. The result is a lower bound over all tie orders; a model that gives
  every candidate the same score gets the worst possible score instead of a
  lucky one.
* ``"optimistic"``: the correct ones rank first (the upper bound).

The gap between the two shows how much a result depends on ties (e.g. BM25,
which gives 0 to every candidate sharing no word with the question).

Without ties both rules give trec_eval's AP and scikit-learn's
``average_precision_score``. With ties the others differ: trec_eval orders
tied candidates by document id, the published CNM scripts by a seeded
shuffle, and scikit-learn takes a tied block at once (each correct candidate
in it gets the precision at the block's end, which can exceed the optimistic
value: scores [1, 0, 0], labels [0, 1, 1] give 2/3, both rules 7/12).

Every question must have at least one correct candidate (AP and RR are
undefined otherwise): filter the data first (:func:`qpnlp.data.qa.load_qa`
does for dev and test).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from qpnlp._errors import preview
from qpnlp._host import host_array
from qpnlp._rows import check_row_indices

__all__ = ["RankingResult", "average_precision", "precision_at_1", "rank_order", "ranking_metrics", "reciprocal_rank"]

_TIES = ("pessimistic", "optimistic")


def _as_numpy(x, name: str, dtype=None) -> np.ndarray:
    a = np.asarray(host_array(x))                # any tensor: grad, device, conj/neg bits, bfloat16
    if np.iscomplexobj(a):  # a cast to float64 would drop the imaginary part with only a warning
        raise ValueError(f"{name} must be real; got complex {a.dtype}")
    a = a.astype(dtype) if dtype is not None else a
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    return a


def _labels(x) -> np.ndarray:
    """Labels as int64, checked to be 0 or 1 *before* the cast (0.5 or 1.7 must not become 0 or 1)."""
    a = _as_numpy(x, "labels")
    if not np.isin(a, (0, 1)).all():
        bad = sorted({v.item() for v in np.unique(a[~np.isin(a, (0, 1))])})
        raise ValueError(f"labels must be 0 or 1, got {bad}")
    return a.astype(np.int64)


#: The messages of ``_group``, one per fault of ``qpnlp._rows.FAULTS``.
_GROUP_MESSAGES = {
    "mask": "question {q}: groups must hold row indices, got a boolean mask (use np.flatnonzero)",
    "shape": "question {q}: groups must hold 1-D integer row indices, got {dtype} shape {shape}",
    "dtype": "question {q}: groups must hold 1-D integer row indices, got {dtype} shape {shape}",
    "range": "question {q}: row index {value} outside [0, {n})",
    "repeat": "question {q}: row index {value} appears {count} times; each candidate row must be listed once",
}


def _group(g, q: int, n_rows: int) -> np.ndarray:
    """Row indices ``(m,)`` of question ``q``: distinct integers in ``[0, n_rows)``, by the rules of
    :func:`~qpnlp.data.classification.row_indices` (not a boolean mask, no negative wrap-around, no row twice: a
    repeated row would count its candidate twice in the ranking); the first bad index is named."""
    return check_row_indices(g, n_rows, _GROUP_MESSAGES, q=q)


def _groups(groups):
    """``groups`` if it is a sized sequence (a list, a tuple, an array of Q groups); ``TypeError`` naming it for one
    number, a string or a generator (its Q is unknown before it is read: ``list(groups)`` first)."""
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__len__") or getattr(groups, "ndim", 1) == 0:
        raise TypeError(f"groups must be a sequence of index arrays, one per question (e.g. [[0, 1], [2, 3]]; "
                        f"list(...) a generator); got {type(groups).__name__} {preview(groups)}")
    return groups


def _check_ties(ties) -> str:
    """``ties`` if it is one of ``_TIES`` (ValueError naming it otherwise)."""
    if not isinstance(ties, str) or ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    return ties


def _finite_rows(s: np.ndarray, g: np.ndarray, q: int) -> None:
    """ValueError naming the row index (in ``scores``) and the question of the first non-finite score of group ``g``."""
    bad = np.flatnonzero(~np.isfinite(s[g]))
    if bad.size:
        row = int(g[bad[0]])
        raise ValueError(f"scores must be finite; got {s[row]} at row {row} (question {q}, candidate {int(bad[0])})")


def rank_order(scores, labels, ties: str = "pessimistic") -> np.ndarray:
    """Candidate indices from best to worst with the given tie rule.

    Parameters
    ----------
    scores : array-like
        Shape (n,), higher = better; finite.
    labels : array-like
        Shape (n,), 1 = correct, 0 = wrong.
    ties : {"pessimistic", "optimistic"}

    Returns
    -------
    numpy.ndarray
        int64, shape (n,).

    Examples
    --------
    >>> rank_order([0.5, 0.5, 0.9], [1, 0, 0]).tolist()
    [2, 1, 0]
    >>> rank_order([0.5, 0.5, 0.9], [1, 0, 0], ties="optimistic").tolist()
    [2, 0, 1]
    """
    _check_ties(ties)
    s = _as_numpy(scores, "scores", np.float64)
    y = _labels(labels)
    if s.shape != y.shape:
        raise ValueError(f"scores and labels must have the same shape, got {s.shape} and {y.shape}")
    if not np.isfinite(s).all():
        raise ValueError(f"scores must be finite; got {s[~np.isfinite(s)][0]} at index {int(np.flatnonzero(~np.isfinite(s))[0])}")
    secondary = y if ties == "pessimistic" else -y
    # lexsort: last key is primary. Final key (index) makes the order total and stable.
    return np.lexsort((np.arange(len(s)), secondary, -s)).astype(np.int64)


def _ranks_of_correct(scores, labels, ties: str) -> np.ndarray:
    y = _labels(labels)
    order = rank_order(scores, y, ties)
    ranks = np.flatnonzero(y[order] == 1) + 1
    if ranks.size == 0:
        raise ValueError("question has no correct candidate; AP/RR are undefined (filter such questions out)")
    return ranks


def average_precision(scores, labels, ties: str = "pessimistic") -> float:
    """Average precision of one question's ranking (see module docstring).

    Parameters
    ----------
    scores : array-like
        Shape (n,): the scores of one question's n candidates, higher = better; finite.
    labels : array-like
        Shape (n,), 1 = correct, 0 = wrong; at least one correct.
    ties : {"pessimistic", "optimistic"}
        How exactly equal scores are ordered (module docstring); default ``"pessimistic"``.

    Returns
    -------
    float
        In (0, 1].

    Examples
    --------
    >>> average_precision([0.9, 0.8, 0.7], [0, 1, 1])  # ranks 2 and 3: (1/2 + 2/3) / 2
    0.5833333333333333
    """
    ranks = _ranks_of_correct(scores, labels, ties)
    return float(np.mean(np.arange(1, len(ranks) + 1) / ranks))


def reciprocal_rank(scores, labels, ties: str = "pessimistic") -> float:
    """1 / rank of the best-ranked correct candidate.

    Parameters
    ----------
    scores : array-like
        Shape (n,): the scores of one question's n candidates, higher = better; finite.
    labels : array-like
        Shape (n,), 1 = correct, 0 = wrong; at least one correct.
    ties : {"pessimistic", "optimistic"}
        How exactly equal scores are ordered (module docstring); default ``"pessimistic"``.

    Returns
    -------
    float
        In (0, 1].

    Examples
    --------
    >>> reciprocal_rank([0.9, 0.8, 0.7], [0, 1, 1])
    0.5
    """
    return float(1.0 / _ranks_of_correct(scores, labels, ties)[0])


def precision_at_1(scores, labels, ties: str = "pessimistic") -> float:
    """1.0 when the top-ranked candidate is correct, else 0.0.

    Parameters
    ----------
    scores : array-like
        Shape (n,): the scores of one question's n candidates, higher = better; finite.
    labels : array-like
        Shape (n,), 1 = correct, 0 = wrong; at least one correct.
    ties : {"pessimistic", "optimistic"}
        How exactly equal scores are ordered (module docstring); default ``"pessimistic"``.

    Returns
    -------
    float
        1.0 or 0.0.
    """
    return float(_ranks_of_correct(scores, labels, ties)[0] == 1)


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared arrays and raised
class RankingResult:
    """Ranking metrics over a set of questions.

    Attributes
    ----------
    map, mrr, p_at_1 : float
        Means over the ``n_questions`` questions.
    n_questions : int
    ap, rr, p1 : numpy.ndarray
        Per-question values, float64, shape (n_questions,); left out of the repr (thousands of numbers in a
        notebook), read them as attributes.
    ties : str
        The tie rule used.
    """

    map: float
    mrr: float
    p_at_1: float
    n_questions: int
    ap: np.ndarray = field(repr=False)
    rr: np.ndarray = field(repr=False)
    p1: np.ndarray = field(repr=False)
    ties: str

    def __str__(self) -> str:
        return f"MAP {self.map:.4f}  MRR {self.mrr:.4f}  P@1 {self.p_at_1:.4f}  ({self.n_questions} questions, ties {self.ties})"

    def to_dict(self) -> dict:
        """The means, ``n_questions`` and ``ties`` as plain Python values: one row of a table of runs
        (``pandas.DataFrame([r.to_dict() for r in results])``); the per-question arrays stay out."""
        return dict(map=float(self.map), mrr=float(self.mrr), p_at_1=float(self.p_at_1),
                    n_questions=int(self.n_questions), ties=self.ties)


def ranking_metrics(
    scores, labels, groups: Sequence[Sequence[int] | np.ndarray], ties: str = "pessimistic"
) -> RankingResult:
    """MAP, MRR and P@1 over questions.

    Parameters
    ----------
    scores : array-like
        Shape (R,), one score per candidate row.
    labels : array-like
        Shape (R,), 1 = correct.
    groups : sequence of index arrays
        Q arrays of row indices in ``[0, R)``, one per question (e.g.
        ``groups`` of a :class:`~qpnlp.data.qa.QADataset`); not boolean masks.
    ties : {"pessimistic", "optimistic"}

    Returns
    -------
    RankingResult

    Raises
    ------
    TypeError
        When ``groups`` is not a sequence (one number, a string, a generator).
    ValueError
        When a question has no correct candidate or its group is not 1-D
        distinct integer row indices in ``[0, R)`` (its index is named), when
        a label is not 0 or 1, when a score is complex or not finite, or when
        there are no questions.

    Examples
    --------
    >>> r = ranking_metrics([0.1, 0.9, 0.3, 0.3], [1, 0, 1, 0], [[0, 1], [2, 3]])
    >>> r.ap.tolist(), r.map
    ([0.5, 0.5], 0.5)
    """
    s = _as_numpy(scores, "scores", np.float64)
    y = _labels(labels)
    if s.shape != y.shape:
        raise ValueError(f"scores and labels must have the same shape, got {s.shape} and {y.shape}")
    _check_ties(ties)                     # once, up front: not reported as a fault of question 0
    if len(_groups(groups)) == 0:
        raise ValueError("no questions to evaluate")
    ap, rr, p1 = (np.empty(len(groups)) for _ in range(3))
    for q, g in enumerate(groups):
        g = _group(g, q, len(s))
        _finite_rows(s, g, q)             # the row index of scores, not the index within the question
        try:
            ranks = _ranks_of_correct(s[g], y[g], ties)
        except ValueError as err:
            raise ValueError(f"question {q}: {err}") from None
        ap[q] = np.mean(np.arange(1, len(ranks) + 1) / ranks)
        rr[q] = 1.0 / ranks[0]
        p1[q] = float(ranks[0] == 1)
    return RankingResult(float(ap.mean()), float(rr.mean()), float(p1.mean()), len(groups), ap, rr, p1, ties)
