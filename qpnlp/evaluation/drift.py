"""Semantic-drift evaluation on a grid of time-specific vectors.

Every model is scored through the same object: a grid ``E`` of shape (T, W, D) -- the vector of each of ``W``
words at each of ``T`` times -- with its ``words`` and ``years``.  Word2Fun produces it with
:meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.grid`; the gensim baselines of
:mod:`qpnlp.evaluation.drift_baselines` produce it from word2vec models.

Metrics (:func:`evaluate_grid`), for a :class:`~qpnlp.data.synthetic_drift.PlantedDrift`:

* ``spearman`` -- between planted strength and measured change of the drift
  words, where change is the cosine distance between the mean vectors of an
  early and a late period (:func:`change_scores`) or, in prediction space,
  the mean absolute change of pair probabilities (:func:`context_change_scores`),
  minus the change within the two periods (:func:`noise_corrected`);
* ``auc`` -- drift words vs non-drifting probes (stable and trap words);
* ``trap_mean_percentile`` -- mean percentile of the trap words' change among
  all probes (1 = most changed; a tie at its mid-rank), and ``trap_top_rank`` --
  the best (smallest) 1-based rank of a trap word (a tie at its best rank);
* ``acc_before`` / ``acc_after`` -- how often the topic whose centroid is nearest to a drift word is its source topic
  before the transition and its dominant topic (destination if strength > 0.5, else source) after it, over all years
  outside the transition; words with strength within 0.1 of 0.5 are ambiguous and excluded from ``acc_after``;
* ``change_year_mae`` -- mean absolute error of the change year estimated by the best two-segment split
  (:func:`change_points`) for drift words with strength >= 0.5; each segment spans at least ``min_segment_years`` (3)
  of time whatever the grid's spacing (3 yearly times, 1 time of a decade grid).

Example
-------
>>> E = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 1.0]]])
>>> change_points(E, np.array([0.0, 1.0, 2.0, 3.0]), min_segment=1).tolist()
[1.5]
"""

from __future__ import annotations

import contextlib
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import rankdata, spearmanr

from qpnlp._atomic import atomic_file
from qpnlp._checks import is_integer
from qpnlp.data.synthetic_drift import PlantedDrift

__all__ = [
    "DriftGrid",
    "change_scores",
    "context_change_scores",
    "noise_corrected",
    "change_points",
    "auc",
    "nearest_topic",
    "evaluate_grid",
]


@dataclass(frozen=True)
class DriftGrid:
    """Time-specific vectors of a model, the object every metric reads.

    Attributes
    ----------
    E : torch.Tensor, shape (T, W, D) -- vector of each word at each time
    words : tuple of str, length W, distinct
    years : numpy.ndarray, shape (T,), finite and strictly increasing
    context : torch.Tensor, shape (1 or T, C, D), optional
        Target ("compass") vectors of ``context_words``, static (first dim 1)
        or per time.  When given, the metrics can be computed in *prediction
        space*: the profile :math:`p_t(u, v) = \\sigma(E_t[u] \\cdot h_t(v))`,
        the skip-gram probability the model assigns to the pair (u, v) at t.
    context_words : tuple of str, length C
    train_seconds, tokens_per_s : float
    """

    E: torch.Tensor
    words: tuple
    years: np.ndarray
    train_seconds: float = float("nan")
    tokens_per_s: float = float("nan")
    context: torch.Tensor | None = None
    context_words: tuple = ()

    def __post_init__(self):
        E = torch.as_tensor(self.E, dtype=torch.float32)
        object.__setattr__(self, "E", E)
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "context_words", tuple(self.context_words))
        years = np.asarray(self.years, dtype=np.float64)
        object.__setattr__(self, "years", years)
        if years.ndim != 1:
            raise ValueError(f"years must be 1-D (T,); got shape {years.shape}")
        if E.dim() != 3 or E.shape[0] != years.shape[0] or E.shape[1] != len(self.words):
            raise ValueError(f"E must be (T={years.shape[0]}, W={len(self.words)}, D); got {tuple(E.shape)}")
        _years(years, E.shape[0], increasing=True)
        repeated = sorted(w for w, n in Counter(self.words).items() if n > 1)   # one pass, not W passes
        if repeated:  # columns() would silently read the last of them
            raise ValueError(f"words must be distinct; repeated: {repeated[:5]}")
        if self.context is not None:
            C = torch.as_tensor(self.context, dtype=torch.float32)
            if C.dim() != 3 or C.shape[0] not in (1, E.shape[0]) or C.shape[1] != len(self.context_words) or C.shape[2] != E.shape[2]:
                raise ValueError(f"context must be (1 or {E.shape[0]}, {len(self.context_words)}, {E.shape[2]}); got {tuple(C.shape)}")
            object.__setattr__(self, "context", C)

    def profiles(self, words) -> torch.Tensor:
        """Prediction-space profiles :math:`\\sigma(E_t[u] \\cdot h_t(v))` of ``words``, shape (T, len(words), C)."""
        if self.context is None:
            raise ValueError("this grid has no context vectors; prediction-space metrics need them")
        return torch.sigmoid(torch.einsum("twd,tcd->twc", self.columns(words), self.context.expand(self.E.shape[0], -1, -1)))

    def columns(self, words) -> torch.Tensor:
        """Vectors of ``words``, shape (T, len(words), D) (KeyError naming the words the grid lacks)."""
        idx = {w: i for i, w in enumerate(self.words)}
        missing = [w for w in words if w not in idx]
        if missing:
            raise KeyError(f"not in the grid ({len(self.words)} words): {', '.join(map(repr, missing[:10]))}")
        return self.E[:, [idx[w] for w in words]]

    def save_npz(self, path) -> None:
        """Save every field (the context vectors too: without them :func:`evaluate_grid` changes space) to the
        .npz file ``path`` exactly (:func:`numpy.savez` would append ``.npz`` to a name without it), atomically."""
        extra = {} if self.context is None else {"context": self.context.numpy(),
                                                  "context_words": np.asarray(self.context_words, dtype=str)}
        with atomic_file(path, "wb") as handle:             # a file object: numpy appends no suffix to it
            np.savez(handle, words=np.asarray(self.words), years=self.years, E=self.E.numpy(),
                     train_seconds=self.train_seconds, tokens_per_s=self.tokens_per_s, **extra)

    @classmethod
    def load_npz(cls, path) -> "DriftGrid":
        """A grid written by :meth:`save_npz` or :meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.export_npz`;
        ValueError naming the file when it is not a readable .npz archive (e.g. truncated) or lacks E, words or
        years."""
        try:
            # the file opened here, not by np.load: np.load(path) leaves the file it opened open when the archive
            # does not parse ("ResourceWarning: unclosed file")
            # an open file (np.load takes one) is the caller's to close
            with (contextlib.nullcontext(path) if hasattr(path, "read") else open(path, "rb")) as handle, \
                    np.load(handle, allow_pickle=False) as archive:
                z = {key: archive[key] for key in archive.files}   # members are read lazily: all of them here
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as err:
            raise ValueError(f"{path}: not a readable .npz archive, truncated or damaged ({err})") from None
        missing = [key for key in ("E", "words", "years") if key not in z]
        if missing:
            raise ValueError(f"{path}: not a drift grid (no {', '.join(missing)} in the archive)")
        context = z.get("context")                          # the optional fields: older files lack them
        return cls(torch.from_numpy(z["E"]), tuple(z["words"].tolist()), z["years"],
                   float(z.get("train_seconds", float("nan"))), float(z.get("tokens_per_s", float("nan"))),
                   None if context is None else torch.from_numpy(context),
                   tuple(z.get("context_words", np.array([], dtype=str)).tolist()))


def _years(years, T: int, increasing: bool = False) -> np.ndarray:
    """``years`` as float64 (T,), finite (and strictly increasing if asked); ValueError naming the problem."""
    y = np.asarray(years, dtype=np.float64)
    if y.shape != (T,):
        raise ValueError(f"years must have shape ({T},), one time per grid row; got {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError(f"years must be finite; got {y[~np.isfinite(y)][0]} at index {int(np.flatnonzero(~np.isfinite(y))[0])}")
    if increasing and (np.diff(y) <= 0).any():
        i = int(np.flatnonzero(np.diff(y) <= 0)[0])
        raise ValueError(f"years must be strictly increasing; got {y[i]:g} then {y[i + 1]:g} at index {i + 1}")
    return y


def _trajectories(X, name: str) -> torch.Tensor:
    """``X`` as a finite (T, W, D) tensor (ValueError otherwise)."""
    X = torch.as_tensor(X)
    if X.dim() != 3 or X.is_complex() or not X.is_floating_point():
        raise ValueError(f"{name} must be a real floating (T, W, D) tensor; got {X.dtype} {tuple(X.shape)}")
    if not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name} contains NaN or inf (first at index {tuple(torch.nonzero(~torch.isfinite(X))[0].tolist())})")
    return X


def _topic_vectors(E_topics, E_probe: torch.Tensor) -> torch.Tensor:
    """``E_topics`` as a finite real (T, K, M, D) tensor with K, M >= 1 and the T and D of ``E_probe`` (T, P, D)."""
    X = torch.as_tensor(E_topics)
    if X.dim() != 4 or X.is_complex() or not X.is_floating_point():
        raise ValueError(f"E_topics must be a real floating (T, K, M, D) tensor; got {X.dtype} {tuple(X.shape)}")
    T, K, M, D = X.shape
    if K == 0 or M == 0:
        raise ValueError(f"E_topics must hold K >= 1 topics of M >= 1 words (T, K, M, D); got {tuple(X.shape)}")
    if (T, D) != (E_probe.shape[0], E_probe.shape[2]):
        raise ValueError(f"E_topics (T, K, M, D) {tuple(X.shape)} must have the T={E_probe.shape[0]} times and "
                         f"D={E_probe.shape[2]} dimensions of E_probe {tuple(E_probe.shape)}")
    if not bool(torch.isfinite(X).all()):
        where = tuple(torch.nonzero(~torch.isfinite(X))[0].tolist())
        raise ValueError(f"E_topics contains NaN or inf (first at index {where})")
    return X


def _min_segment(min_segment) -> int:
    """``min_segment`` if it is an integer >= 1 (a segment holds at least one time); ValueError naming it otherwise."""
    if not is_integer(min_segment) or min_segment < 1:
        raise ValueError(f"min_segment must be an integer >= 1 (fewest times on each side of the split); "
                         f"got {type(min_segment).__name__} {min_segment!r}")
    return int(min_segment)


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _period_mean(X: torch.Tensor, years: np.ndarray, period: tuple, name: str) -> torch.Tensor:
    """Mean of ``X`` over the times in the inclusive range ``period`` (ValueError when there is none)."""
    y = torch.as_tensor(years)
    inside = (y >= period[0]) & (y <= period[1])
    if not bool(inside.any()):
        raise ValueError(f"the {name} period {tuple(period)} contains no time of the grid "
                         f"(times {float(y.min()):g} .. {float(y.max()):g})")
    return X[inside.to(X.device)].mean(0)                  # the years are on the CPU, X may be on CUDA


def change_scores(E: torch.Tensor, years: np.ndarray, early: tuple, late: tuple) -> torch.Tensor:
    """Cosine distance between mean vectors over ``early`` and ``late`` (inclusive year ranges).

    Parameters
    ----------
    E : torch.Tensor
        Real, finite (T, W, D): the vector of each word at each time.
    years : numpy.ndarray
        (T,) finite times.
    early, late : (float, float)
        Inclusive year ranges, each holding a time of ``years``.

    Returns
    -------
    torch.Tensor, shape (W,):  :math:`1 - \\cos(\\bar e_{early}, \\bar e_{late})`.

    Raises
    ------
    ValueError
        When ``early`` or ``late`` contains no time of ``years`` (its mean is undefined), when ``E``
        is not a finite real (T, W, D) tensor or ``years`` not T finite times.

    Examples
    --------
    >>> E = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])
    >>> change_scores(E, np.array([0.0, 1.0]), (0, 0), (1, 1)).tolist()
    [0.0, 1.0]
    """
    E = _trajectories(E, "E")
    years = _years(years, E.shape[0])
    a, b = _period_mean(E, years, early, "early"), _period_mean(E, years, late, "late")
    return 1.0 - (_unit(a) * _unit(b)).sum(-1)


def change_points(E: torch.Tensor, years: np.ndarray, min_segment: int = 3) -> torch.Tensor:
    """Change year of each word by the best split of its unit-vector trajectory into two segments.

    For a split after position ``s`` the score is
    :math:`\\frac{n_a n_b}{n} \\lVert \\bar x_a - \\bar x_b \\rVert^2` (between-segment
    sum of squares, i.e. the least-squares two-segment fit); the estimate is
    the midpoint between the last year before and the first year after the
    best split.

    Parameters
    ----------
    E : torch.Tensor
        Real, finite (T, W, D): the vector of each word at each time.
    years : numpy.ndarray
        (T,) finite, strictly increasing times, T >= 2.
    min_segment : int
        Fewest times on each side of the split, an integer >= 1; a grid with fewer than
        ``2 * min_segment`` times is split anywhere.

    Returns
    -------
    torch.Tensor, shape (W,), float64 years, on the device of ``E``

    Raises
    ------
    ValueError
        When ``E`` is not a finite real (T, W, D) tensor with T >= 2, or ``years`` not T finite,
        strictly increasing times (the midpoint of a split would be meaningless), or ``min_segment`` is not
        an integer >= 1.
    """
    min_segment = _min_segment(min_segment)
    X = _unit(_trajectories(E, "E").to(torch.float64))  # (T, W, D)
    T = X.shape[0]
    if T < 2 or len(years) != T:
        raise ValueError(f"change points need E (T, W, D) and years (T,) with T >= 2; got E {tuple(E.shape)} and "
                         f"{len(years)} years")
    years = _years(years, T, increasing=True)
    cs = torch.cumsum(X, 0)  # (T, W, D)
    total = cs[-1]
    s = torch.arange(1, T, dtype=torch.float64, device=X.device)  # n_a for split after index s-1
    ma = cs[:-1] / s[:, None, None]
    mb = (total - cs[:-1]) / (T - s)[:, None, None]
    score = (s * (T - s) / T)[:, None] * ((ma - mb) ** 2).sum(-1)  # (T-1, W)
    valid = (s >= min_segment) & ((T - s) >= min_segment)
    if valid.any():
        score[~valid] = -float("inf")
    best = score.argmax(0)  # split between best and best + 1
    y = torch.as_tensor(years, dtype=torch.float64, device=X.device)  # best is on E's device (CUDA)
    return (y[best] + y[best + 1]) / 2


def auc(pos, neg) -> float:
    """Probability that a random positive scores above a random negative (ties count 1/2).

    The area under the ROC curve, by scikit-learn's ``roc_auc_score``
    (O(n log n); equal to the pairwise count of the definition).

    Parameters
    ----------
    pos, neg : array-like
        Finite scores of the positives and of the negatives (flattened).

    Returns
    -------
    float
        In [0, 1]; NaN when ``pos`` or ``neg`` is empty.

    Examples
    --------
    >>> auc([3.0, 2.0], [1.0, 2.0])
    0.875
    """
    from sklearn.metrics import roc_auc_score

    pos, neg = np.asarray(pos, float).reshape(-1), np.asarray(neg, float).reshape(-1)
    for name, values in (("pos", pos), ("neg", neg)):
        if not np.isfinite(values).all():  # scikit-learn's "Input contains NaN" does not say which
            raise ValueError(f"{name} scores must be finite; got {values[~np.isfinite(values)][0]} at index "
                             f"{int(np.flatnonzero(~np.isfinite(values))[0])}")
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    labels = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    return float(roc_auc_score(labels, np.concatenate([pos, neg])))


def nearest_topic(E_probe: torch.Tensor, E_topics: torch.Tensor) -> torch.Tensor:
    """Index of the nearest topic centroid for each probe at each time.

    Parameters
    ----------
    E_probe : (T, P, D)
    E_topics : (T, K, M, D) -- the vectors of the ``M`` words of each topic, K >= 1, M >= 1

    Returns
    -------
    torch.Tensor (T, P) int64 -- argmax over k of :math:`\\cos(e_p, \\bar c_k)` with
    :math:`\\bar c_k` the mean of the unit vectors of topic ``k``.

    Raises
    ------
    ValueError
        When ``E_probe`` is not a finite real (T, P, D) tensor, ``E_topics`` not a finite real
        (T, K, M, D) tensor with K, M >= 1, or their T or D differ (a NaN would pick topic 0 silently).

    Examples
    --------
    >>> probes = torch.tensor([[[1.0, 0.1]]])
    >>> topics = torch.tensor([[[[0.0, 1.0]], [[1.0, 0.0]]]])
    >>> nearest_topic(probes, topics).tolist()
    [[1]]
    """
    E_probe = _trajectories(E_probe, "E_probe")
    E_topics = _topic_vectors(E_topics, E_probe)
    dtype = torch.promote_types(E_probe.dtype, E_topics.dtype)          # einsum takes one dtype
    E_probe, E_topics = E_probe.to(dtype), E_topics.to(E_probe.device, dtype)
    C = _unit(_unit(E_topics).mean(2))  # (T, K, D)
    sims = torch.einsum("tpd,tkd->tpk", _unit(E_probe), C)
    return sims.argmax(-1)


def context_change_scores(P: torch.Tensor, years: np.ndarray, early: tuple, late: tuple) -> torch.Tensor:
    """Change in prediction space: mean absolute change of the period-averaged pair probabilities.

    .. math:: \\Delta(u) = \\frac{1}{C} \\sum_v \\bigl| \\overline{p_t(u, v)}_{t \\in early} - \\overline{p_t(u, v)}_{t \\in late} \\bigr|

    Parameters
    ----------
    P : torch.Tensor
        Real, finite (T, W, C) profiles (see :meth:`DriftGrid.profiles`).
    years : numpy.ndarray
        (T,) finite times.
    early, late : (float, float)
        Inclusive year ranges, each holding a time of ``years``.

    Returns
    -------
    torch.Tensor, shape (W,)

    Raises
    ------
    ValueError
        When ``early`` or ``late`` contains no time of ``years``, when ``P`` is not a finite real
        (T, W, C) tensor or ``years`` not T finite times.

    Examples
    --------
    >>> P = torch.tensor([[[0.5, 0.5]], [[0.9, 0.1]]])
    >>> round(context_change_scores(P, np.array([0.0, 1.0]), (0, 0), (1, 1)).item(), 6)
    0.4
    """
    P = _trajectories(P, "P")
    years = _years(years, P.shape[0])
    a, b = _period_mean(P, years, early, "early"), _period_mean(P, years, late, "late")
    return (a - b).abs().mean(-1)


def noise_corrected(score_fn, X: torch.Tensor, years: np.ndarray, early: tuple, late: tuple) -> torch.Tensor:
    """Change between ``early`` and ``late`` minus the change *within* them (a noise floor).

    .. math:: \\Delta(E, L) - \\tfrac12 \\bigl(\\Delta(E_1, E_2) + \\Delta(L_1, L_2)\\bigr)

    where :math:`E_1, E_2` (:math:`L_1, L_2`) are the two halves of each
    period and :math:`\\Delta` is ``score_fn(X, years, a, b)`` (e.g.
    :func:`change_scores` or :func:`context_change_scores`).  A model that
    fits noise over time shows as much change inside a period as across
    periods, so its corrected score is near zero: with years shuffled the
    scores collapse.

    Parameters
    ----------
    score_fn : callable
        ``score_fn(X, years, a, b) -> (W,)``: the change :math:`\\Delta` between inclusive year ranges a and b.
    X : torch.Tensor
        Its first argument: vectors (T, W, D) or profiles (T, W, C).
    years : numpy.ndarray
        (T,) finite times.
    early, late : (float, float)
        Inclusive year ranges; each half of each must hold a time of ``years``.

    Examples
    --------
    >>> X = torch.tensor([[[0.0]], [[0.2]], [[1.0]], [[1.2]]])
    >>> f = lambda X, y, a, b: context_change_scores(X, y, a, b)
    >>> round(noise_corrected(f, X, np.arange(4.0), (0, 1), (2, 3)).item(), 6)  # 1.0 - (0.2 + 0.2) / 2
    0.8
    """
    em, lm = (early[0] + early[1]) / 2, (late[0] + late[1]) / 2
    y = np.asarray(years)
    e1, e2 = (early[0], em), (np.nextafter(em, np.inf), early[1])
    l1, l2 = (late[0], lm), (np.nextafter(lm, np.inf), late[1])
    if not all(((y >= a) & (y <= b)).any() for a, b in (e1, e2, l1, l2)):
        raise ValueError("each half of the early and late periods must contain at least one time of the grid")
    return score_fn(X, years, early, late) - 0.5 * (score_fn(X, years, e1, e2) + score_fn(X, years, l1, l2))


def _share(hits: list[np.ndarray]) -> float:
    """The share of ``True`` over all the words' years; NaN where no word has a year to count (undefined)."""
    hits = [h for h in hits if h.size]
    return float(np.concatenate(hits).mean()) if hits else float("nan")


def evaluate_grid(
    grid: DriftGrid, truth: PlantedDrift, early: tuple | None = None, late: tuple | None = None, space: str = "auto",
    noise_correction: bool = True, per_word: bool = False, min_segment_years: float = 3.0,
) -> dict:
    """All drift metrics of the protocol for one model (see module docstring).

    A metric that no drift word counts towards is NaN, not an error:
    ``acc_after`` when every strength is within 0.1 of 0.5,
    ``change_year_mae`` and ``change_year_median_ae`` when no strength is at
    least 0.5, ``acc_before`` when no grid year precedes any transition;
    ``spearman`` when the drift words' strengths or changes are all equal.

    Parameters
    ----------
    grid : DriftGrid
        The model's time-specific vectors.
    truth : PlantedDrift
        The planted drift: probe words, their kinds and strengths, change years, topic words.
    early, late : (float, float), optional
        Inclusive year ranges compared; default the first and last fifth of the years.
    space : {"auto", "vector", "prediction"}
        ``"vector"``: change and nearest topics by cosines of the vectors ``E``; ``"prediction"`` (``"auto"``'s
        choice when the grid has context vectors for the topic words): by the pair probabilities
        :math:`\\sigma(e \\cdot h)`, change by :func:`context_change_scores`, the nearest topic as the one whose
        words get the highest mean probability, change points on the probability profiles.
    noise_correction : bool
        Change scores by :func:`noise_corrected` (default True).
    per_word : bool
        Also return ``"per_word"``: for each drift word, its change score, the share of its years after the
        transition whose nearest topic is the dominant one (``None`` where ``acc_after`` leaves the word out: a
        strength within 0.1 of 0.5, or no grid year after the transition) and the years that miss it.
    min_segment_years : float
        Shortest segment of the change-point split in *time* (default 3), converted to grid times by the grid's
        (median) spacing: 3 times of a yearly grid, 1 time of a grid of decade bins. A fixed count of grid times
        would let a binned model place no change in its first or last three bins (30 years) while a yearly model
        may place one anywhere but its first and last three years.
    """
    space, early, late = _space_and_periods(space, grid, truth, early, late)
    probes = list(truth.words)
    Ep = grid.columns(probes)                   # (T, P, D); a KeyError names the probes the grid lacks
    kind = np.asarray(truth.kind)
    if not (kind == "drift").any():             # was a bare "need at least one array to concatenate"
        raise ValueError(f"truth has no drift word (kinds {sorted(set(kind.tolist()))} over {len(probes)} probes): "
                         f"the drift metrics (spearman, auc, acc_before, acc_after, change years) need at least one")
    topic_flat, K, M = [w for tw in truth.topic_words for w in tw], len(truth.topic_words), len(truth.topic_words[0])
    if space == "prediction":
        ch, near, traj = _prediction_space(grid, truth, probes, topic_flat, early, late, noise_correction)
    else:
        ch, near, traj = _vector_space(grid, Ep, topic_flat, (K, M), early, late, noise_correction)
    out = {"space": space, "noise_correction": noise_correction, **_ranking_metrics(ch, truth.strength, kind)}
    before_ok, after_ok, words = _topic_hits(near, ch, truth, kind == "drift", grid.years)
    out["acc_before"], out["acc_after"] = _share(before_ok), _share(after_ok)
    if per_word:
        out["per_word"] = words
    out.update(_change_year_errors(traj, truth, grid.years, min_segment_years))
    out["tokens_per_s"], out["train_seconds"] = grid.tokens_per_s, grid.train_seconds
    return out


def _space_and_periods(space: str, grid: DriftGrid, truth: PlantedDrift, early, late) -> tuple[str, tuple, tuple]:
    """The space (``"auto"``: prediction if the grid has context vectors), ``early`` and ``late`` (see above)."""
    space = ("prediction" if grid.context is not None else "vector") if space == "auto" else space
    if space not in ("vector", "prediction"):
        raise ValueError(f"space must be 'auto', 'vector' or 'prediction'; got {space!r}")
    y0, y1 = float(truth.years.min()), float(truth.years.max())
    return space, early or (y0, y0 + 0.2 * (y1 - y0)), late or (y1 - 0.2 * (y1 - y0), y1)


def _period_change(score_fn, X: torch.Tensor, years: np.ndarray, early, late, noise_correction: bool) -> np.ndarray:
    """``score_fn(X, years, early, late)`` (W,) as NumPy, :func:`noise_corrected` if asked."""
    scores = noise_corrected(score_fn, X, years, early, late) if noise_correction else score_fn(X, years, early, late)
    return scores.numpy()


def _vector_space(grid: DriftGrid, Ep: torch.Tensor, topic_flat: list, topic_shape: tuple, early, late,
                  noise_correction: bool) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """Change (P,) by :func:`change_scores`, nearest topic (T, P) by :func:`nearest_topic`, trajectories ``Ep``."""
    ch = _period_change(change_scores, Ep, grid.years, early, late, noise_correction)
    Et = grid.columns(topic_flat)
    near = nearest_topic(Ep, Et.reshape(Et.shape[0], *topic_shape, -1)).numpy()  # (T, P)
    return ch, near, Ep


def _prediction_space(grid: DriftGrid, truth: PlantedDrift, probes: list, topic_flat: list, early, late,
                      noise_correction: bool) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """Change (P,) by :func:`context_change_scores`, nearest topic (T, P) as the one whose words get the highest
    mean probability, and profiles (T, P, C') against the C' topic words that have context vectors."""
    ctx_idx = {w: i for i, w in enumerate(grid.context_words)}
    known = [w for w in topic_flat if w in ctx_idx]  # topic words the model has context vectors for
    if not known:
        raise ValueError("the grid has context vectors for none of the topic words")
    P = grid.profiles(probes)[..., [ctx_idx[w] for w in known]]  # (T, P, C')
    ch = _period_change(context_change_scores, P, grid.years, early, late, noise_correction)
    member = torch.zeros(len(known), len(truth.topic_words))  # (C', K): 1 where the word is in the topic
    topic_of = {w: k for k, tw in enumerate(truth.topic_words) for w in tw}
    for j, w in enumerate(known):
        member[j, topic_of[w]] = 1.0
    near = ((P @ member) / member.sum(0).clamp_min(1)).argmax(-1).numpy()  # mean probability per topic
    return ch, near, P


def _ranking_metrics(ch: np.ndarray, strength: np.ndarray, kind: np.ndarray) -> dict:
    """The metrics that rank the probes by change ``ch`` (P,): spearman, auc(s) and the trap words' ranks.

    Spearman is NaN when the drift words' strengths or changes are all equal (undefined; scipy would warn). Tied
    changes do not depend on the order of the probes: the percentile takes a trap word's mid-rank (its mean rank
    over the orders of the tie, as the AUC counts a tie 1/2), the top rank its best rank in the tie (the trap word
    ranked before the probes it ties with)."""
    is_d, is_t = kind == "drift", kind == "trap"
    constant = np.ptp(ch[is_d]) == 0 or np.ptp(strength[is_d]) == 0
    out = {"spearman": float("nan") if constant else float(spearmanr(strength[is_d], ch[is_d]).statistic),
           "auc": auc(ch[is_d], ch[~is_d]), "auc_vs_stable_only": auc(ch[is_d], ch[kind == "stable"])}
    mid, top = rankdata(-ch, method="average"), rankdata(-ch, method="min")  # 1 = most changed
    out["trap_mean_percentile"] = (float(np.mean(1.0 - (mid[is_t] - 1) / (len(ch) - 1))) if is_t.any()
                                   else float("nan"))
    out["trap_top_rank"] = int(top[is_t].min()) if is_t.any() else -1
    return out


def _topic_hits(near: np.ndarray, ch: np.ndarray, truth: PlantedDrift, is_d: np.ndarray, years: np.ndarray) -> tuple:
    """Per drift word, whether its nearest topic (``near`` (T, P)) is the source before and the dominant one after
    (strength at least 0.1 from 0.5): the hits before, the hits after and the ``per_word`` dict of the result."""
    sw, wd, st = truth.switch_year, np.nan_to_num(truth.width), truth.strength
    before_ok, after_ok, words = [], [], {}
    for p in np.flatnonzero(is_d):
        lo, hi = sw[p] - wd[p] / 2, sw[p] + wd[p] / 2
        before_ok.append(near[years < lo, p] == truth.source[p])
        after, ok = years >= hi, None
        if abs(st[p] - 0.5) >= 0.1:
            dom = truth.dest[p] if st[p] > 0.5 else truth.source[p]
            ok = near[after, p] == dom
            after_ok.append(ok)
        words[truth.words[p]] = {"change": float(ch[p]),
                                 "acc_after": None if ok is None or not ok.size else float(ok.mean()),
                                 "wrong_years_after": [] if ok is None else [float(y) for y in years[after][~ok]]}
    return before_ok, after_ok, words


def _change_year_errors(traj: torch.Tensor, truth: PlantedDrift, years: np.ndarray, min_segment_years: float) -> dict:
    """Errors of the :func:`change_points` of ``traj`` for drift words with strength >= 0.5 (NaN: none)."""
    strong, sw = (np.asarray(truth.kind) == "drift") & (truth.strength >= 0.5), truth.switch_year
    out = {"change_year_mae": float("nan"), "change_year_median_ae": float("nan")}  # no strong drift word: undefined
    if strong.any():
        spacing = float(np.median(np.diff(years))) if len(years) > 1 else 1.0
        min_segment = max(1, int(np.ceil(min_segment_years / spacing - 1e-9)))
        est = change_points(traj[:, strong], years, min_segment=min_segment).numpy()
        out["change_year_mae"] = float(np.abs(est - sw[strong]).mean())
        out["change_year_median_ae"] = float(np.median(np.abs(est - sw[strong])))
    return out
