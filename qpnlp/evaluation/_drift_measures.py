"""The change measures of the drift evaluation (:mod:`qpnlp.evaluation.drift`, which re-exports them): functions of
word trajectories, vectors ``(T, W, D)`` or profiles ``(T, W, C)`` over ``T`` times, and of their years.

* :func:`change_scores` and :func:`context_change_scores`: the change between an early and a late period;
* :func:`noise_corrected`: a change minus the change within the two periods;
* :func:`change_points`: each word's change year, by the best two-segment split;
* :func:`nearest_topic`: each word's nearest topic at each time;
* :func:`auc`: how often a positive's score beats a negative's.

Also here: the checks of their arguments (times, trajectories, topic vectors), which
:class:`~qpnlp.evaluation.drift.DriftGrid` shares.
"""

from __future__ import annotations

import numpy as np
import torch

from qpnlp._checks import is_integer, time_values
from qpnlp._host import float64_values

__all__ = ["change_scores", "context_change_scores", "noise_corrected", "change_points", "auc", "nearest_topic"]


def _years(years, T: int, increasing: bool = False) -> np.ndarray:
    """``years`` as float64 (T,), finite (and strictly increasing if asked); ValueError naming the problem (complex
    years: TypeError, not their real part)."""
    y = time_values(years, "years", not_a_sequence=ValueError, not_numbers=ValueError)
    if y.shape != (T,):
        raise ValueError(f"years must have shape ({T},), one time per grid row; got {y.shape}")
    if increasing and (np.diff(y) <= 0).any():
        i = int(np.flatnonzero(np.diff(y) <= 0)[0])
        raise ValueError(f"years must be strictly increasing; got {y[i]:g} then {y[i + 1]:g} at index {i + 1}")
    return y


def _trajectories(X, name: str, axes: str = "(T, W, D)") -> torch.Tensor:
    """``X`` as a finite real tensor of the three ``axes`` (ValueError otherwise, naming them as the caller's
    docstring does: ``(T, W, C)`` for profiles over C contexts)."""
    X = torch.as_tensor(X)
    if X.dim() != 3 or X.is_complex() or not X.is_floating_point():
        raise ValueError(f"{name} must be a real floating {axes} tensor; got {X.dtype} {tuple(X.shape)}")
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


def _period(period, name: str) -> tuple[float, float]:
    """``period`` as the (start, end) of an inclusive range of years: any pair of real numbers (a tuple, a list, an
    array, a tensor; an infinite end leaves the range open); TypeError naming ``name`` for anything else (one year,
    a string, three years), which the measures read as ``period[0]`` and ``period[1]``."""
    try:
        start, end = time_values(period, name, finite=False)
    except (TypeError, ValueError):             # not a sequence of numbers, or not two of them
        raise TypeError(f"{name} must be a (start, end) pair, an inclusive range of years; got "
                        f"{type(period).__name__} {period!r}") from None
    return float(start), float(end)


def _period_mean(X: torch.Tensor, years: np.ndarray, period: tuple, name: str) -> torch.Tensor:
    """Mean of ``X`` over the times in the inclusive range ``period`` (:func:`_period`; ValueError when there is
    none, or when the grid has no time at all)."""
    start, end = _period(period, name)
    y = torch.as_tensor(years)
    if y.numel() == 0:                          # y.min() below: torch's "Expected reduction dim"
        raise ValueError(f"the grid is empty (years has no time, T = 0): the {name} period ({start:g}, {end:g}) "
                         f"has no mean")
    inside = (y >= start) & (y <= end)
    if not bool(inside.any()):
        raise ValueError(f"the {name} period ({start:g}, {end:g}) contains no time of the grid "
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
        When ``early`` or ``late`` contains no time of ``years`` (its mean is undefined; so on a grid of no time,
        T = 0), when ``E`` is not a finite real (T, W, D) tensor or ``years`` not T finite times.
    TypeError
        When ``early`` or ``late`` is not a (start, end) pair of numbers (e.g. one year).

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
        Finite real scores of the positives and of the negatives (flattened): lists, arrays or tensors of any
        layout (e.g. :func:`change_scores` of vectors that require grad, or on a GPU).

    Returns
    -------
    float
        In [0, 1]; NaN when ``pos`` or ``neg`` is empty.

    Raises
    ------
    ValueError
        Naming ``pos`` or ``neg`` when it is not a sequence of numbers or holds a NaN or an infinity.
    TypeError
        When it holds complex numbers (never their real part alone).

    Examples
    --------
    >>> auc([3.0, 2.0], [1.0, 2.0])
    0.875
    """
    from sklearn.metrics import roc_auc_score

    pos, neg = (float64_values(v, name, not_numbers=ValueError).reshape(-1) for v, name in ((pos, "pos"), (neg, "neg")))
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
        When ``early`` or ``late`` contains no time of ``years`` (so on a grid of no time, T = 0), when ``P`` is not
        a finite real (T, W, C) tensor or ``years`` not T finite times.
    TypeError
        When ``early`` or ``late`` is not a (start, end) pair of numbers (e.g. one year).

    Examples
    --------
    >>> P = torch.tensor([[[0.5, 0.5]], [[0.9, 0.1]]])
    >>> round(context_change_scores(P, np.array([0.0, 1.0]), (0, 0), (1, 1)).item(), 6)
    0.4
    """
    P = _trajectories(P, "P", "(T, W, C)")
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
    early, late = _period(early, "early"), _period(late, "late")
    em, lm = (early[0] + early[1]) / 2, (late[0] + late[1]) / 2
    y = np.asarray(years)
    e1, e2 = (early[0], em), (np.nextafter(em, np.inf), early[1])
    l1, l2 = (late[0], lm), (np.nextafter(lm, np.inf), late[1])
    if not all(((y >= a) & (y <= b)).any() for a, b in (e1, e2, l1, l2)):
        raise ValueError("each half of the early and late periods must contain at least one time of the grid")
    return score_fn(X, years, early, late) - 0.5 * (score_fn(X, years, e1, e2) + score_fn(X, years, l1, l2))
