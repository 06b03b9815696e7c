r"""Word2Fun: tables of how words move over time, built on :class:`~qpnlp.word2fun.keyed_vectors.KeyedVectors`.

A Word2Fun word is a function of time :math:`f(u, t) \in \mathbb{R}^D`
(thesis section 4.2). These helpers only arrange the model's own queries
(:meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.similarities_over_time`,
:meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.most_similar`,
:meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.change_degree`) into
pandas tables for notebooks and plots:

* :func:`similarity_trajectories`: :math:`\cos(f(u, t), f(v, t))` for chosen
  words v, times x words (all the words in one query);
* :func:`nearest_by_era`: the nearest words of u at the middle of each era;
* :func:`change_ranking`: the words whose mean vector moved most between two
  periods (cosine distance of the period means, or the change of their
  skip-gram context probabilities), computed for all of them in batches
  (:meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.change_degrees`).

Each takes Word2Fun's KeyedVectors; another object is refused by a
``TypeError`` that names the methods it lacks of those the function calls
(e.g. ``change_degrees``, the batched ``change_degree``, for
:func:`change_ranking`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from qpnlp._checks import time_values

from . import _checks

__all__ = ["equal_eras", "era_label", "similarity_trajectories", "nearest_by_era", "change_ranking"]


def _times(times) -> list[float]:
    """``times`` as a list of one or more finite floats (any tensor; complex: a TypeError, not their real part)."""
    return time_values(times, "times", allow_empty=False).tolist()


#: What every function asks of the embeddings (``_known``): ``word in embeddings`` and ``len(embeddings)``.
_VOCABULARY = ("__contains__", "__len__")


def _check_embeddings(embeddings, needed: Sequence[str]) -> None:
    """``TypeError`` unless ``embeddings`` has the attributes ``needed`` (those the caller uses), naming the missing
    ones: an object written for another version of KeyedVectors (``change_degree`` without the batched
    ``change_degrees``) learns what it lacks, not only that it is not KeyedVectors."""
    missing = [name for name in (*_VOCABULARY, *needed) if not hasattr(embeddings, name)]
    if missing:
        raise TypeError(f"need Word2Fun KeyedVectors (trained model + vocabulary); got {type(embeddings).__name__}, "
                        f"which has no {', '.join(missing)}")


def _known(embeddings, words: Sequence[str]) -> list[str]:
    if isinstance(words, str):
        words = [words]
    words = list(words)
    unknown = [w for w in words if w not in embeddings]
    if unknown:
        raise KeyError(f"not in the vocabulary ({len(embeddings)} words): {', '.join(map(repr, unknown))}")
    return words


def equal_eras(start: float, end: float, n: int) -> list[tuple[float, float]]:
    """``n`` consecutive eras of equal length covering ``[start, end]``.

    Parameters
    ----------
    start, end : float
        The first and last time, finite, ``start < end``.
    n : int
        The number of eras, >= 1.

    Returns
    -------
    list of (float, float)
        ``n`` pairs ``(a, b)`` of consecutive era bounds, ``(end - start) / n`` long.

    Examples
    --------
    >>> equal_eras(1800, 2000, 2)
    [(1800.0, 1900.0), (1900.0, 2000.0)]
    """
    n = _checks.positive("n", n)
    if not (math.isfinite(start) and math.isfinite(end) and end > start):
        raise ValueError(f"need finite start < end; got [{start}, {end}]")
    edges = np.linspace(start, end, n + 1)
    return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]


def era_label(start: float, end: float) -> str:
    """The label ``"start-end"`` of an era, each time with the decimals the era's length :math:`L` needs.

    Times are written in fixed notation (never ``1.7e+09``) with
    :math:`\\max(2, 1 + \\lceil -\\log_{10} L \\rceil)` decimals, trailing zeros
    dropped, so that the eras of a short or fractional span keep distinct
    labels (rounded to whole years, the two eras of a corpus of 1900 and 1901
    were ``1900-1900`` and ``1900-1901``); ``" to "`` separates negative times.

    Parameters
    ----------
    start, end : float
        The bounds of the era (e.g. years).

    Examples
    --------
    >>> era_label(1900, 1933.3333333), era_label(1900.0, 1900.5), era_label(2020.1, 2020.15)
    ('1900-1933.33', '1900-1900.5', '2020.1-2020.15')
    >>> era_label(-400, -352.5), era_label(1.7e9, 1712312000.0)
    ('-400 to -352.5', '1700000000-1712312000')
    """
    length = end - start
    decimals = max(2, 1 + math.ceil(-math.log10(length))) if length > 0 else 2
    a, b = (_fixed(t, decimals) for t in (start, end))
    return f"{a} to {b}" if min(start, end) < 0 else f"{a}-{b}"


def _fixed(t: float, decimals: int) -> str:
    """``t`` in fixed notation with at most ``decimals`` decimals, trailing zeros dropped (``-0`` is ``0``)."""
    text = f"{t:.{decimals}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text == "-0" else text


def similarity_trajectories(embeddings, word: str, others: Sequence[str], times) -> pd.DataFrame:
    r"""Cosine of :math:`f(\text{word}, t)` with :math:`f(v, t)` for each ``v`` in ``others``.

    Parameters
    ----------
    embeddings : KeyedVectors
        Word2Fun's, or an object with ``similarities_over_time``.
    word : str
    others : sequence of str
    times : sequence of float
        Raw times (e.g. years).

    Returns
    -------
    pandas.DataFrame
        Index ``time`` (the given times), one column per word of ``others``.
    """
    _check_embeddings(embeddings, ("similarities_over_time",))
    word = _known(embeddings, [word])[0]
    others = _known(embeddings, others)
    if not others:
        raise ValueError("others is empty: name at least one word to compare with")
    times = _times(times)
    others = list(dict.fromkeys(others))                # a word named twice: one column
    cosines = embeddings.similarities_over_time(word, others, times)       # (T, W), every word at once
    return pd.DataFrame(cosines.detach().cpu().numpy(), index=pd.Index(times, name="time"), columns=others)


def nearest_by_era(embeddings, word: str, eras, *, k: int = 10, min_count: int = 0) -> pd.DataFrame:
    """The ``k`` nearest words of ``word`` at the middle of each era (cosine of :math:`f(\\cdot, t)`).

    Parameters
    ----------
    embeddings : KeyedVectors
        Word2Fun's, or an object with ``most_similar`` and ``time_span``.
    word : str
    eras : int or sequence of (start, end)
        Explicit eras, or a number of equal eras over the model's time span.
    k : int
    min_count : int
        Only neighbours seen at least this many times in training.

    Returns
    -------
    pandas.DataFrame
        Long table ``era, time, rank, word, cosine`` (``era`` is :func:`era_label`, ``"start-end"``);
        ``table.pivot(index="rank", columns="era", values="word")`` gives one column per era.
    """
    _check_embeddings(embeddings, ("most_similar", "time_span"))
    word = _known(embeddings, [word])[0]
    if isinstance(eras, (int, np.integer)):
        eras = equal_eras(*embeddings.time_span, int(eras))
    elif isinstance(eras, (str, bytes)) or not isinstance(eras, Iterable):    # 2.0 gave "'float' is not iterable"
        raise TypeError(f"eras must be an int (a number of equal eras) or a sequence of (start, end); "
                        f"got {type(eras).__name__} {eras!r}")
    eras = [_checks.pair(f"eras[{i}]", era) for i, era in enumerate(eras)]
    if not eras or any(not end >= start for start, end in eras):      # each a pair (_checks.pair)
        raise ValueError(f"eras must be a non-empty list of (start, end) with end >= start; got {eras}")
    rows = []
    for start, end in eras:
        middle = (start + end) / 2
        label = era_label(start, end)
        for rank, (other, cosine) in enumerate(embeddings.most_similar(word, topn=_checks.positive("k", k), year=middle,
                                                                        min_count=min_count), start=1):
            rows.append((label, middle, rank, other, cosine))
    return pd.DataFrame(rows, columns=["era", "time", "rank", "word", "cosine"])


def change_ranking(embeddings, period_a: tuple[float, float], period_b: tuple[float, float], *,
                   words: Sequence[str] | None = None, min_count: int = 0, top: int | None = None,
                   step: float = 1.0, measure: str = "cosine") -> pd.DataFrame:
    """Words ranked by how much they changed between two periods (Word2Fun's ``change_degree``).

    Parameters
    ----------
    embeddings : KeyedVectors
        Word2Fun's, or an object with ``change_degrees`` (all the words in one call), ``index_to_key``,
        ``counts`` and ``get_index``.
    period_a, period_b : (start, end)
        Inclusive ranges of raw times, sampled every ``step``.
    words : sequence of str, optional
        Words to rank (default the whole vocabulary with ``count >= min_count``).
    min_count : int
    top : int, optional
        Keep the ``top`` most changed.
    step : float
    measure : {"cosine", "context"}
        See :meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.change_degree`.

    Returns
    -------
    pandas.DataFrame
        Columns ``word, count, change``, decreasing change.
    """
    _check_embeddings(embeddings, ("change_degrees", "index_to_key", "counts", "get_index"))
    periods = []
    for name, period in (("period_a", period_a), ("period_b", period_b)):
        start, end = _checks.pair(name, period)      # a string gave numpy's "ufunc 'isfinite' not supported"
        if not (math.isfinite(start) and math.isfinite(end) and end >= start):
            raise ValueError(f"{name} must be (start, end) with finite start <= end; got {period}")
        periods.append((start, end))
    period_a, period_b = periods
    if not step > 0:
        raise ValueError(f"step must be positive; got {step}")
    if words is None:
        words = [w for w, c in zip(embeddings.index_to_key, embeddings.counts.tolist()) if c >= min_count]
    else:
        words = [w for w in _known(embeddings, words) if embeddings.counts[embeddings.get_index(w)] >= min_count]
    if not words:
        raise ValueError("no word to rank (empty list, or none with count >= min_count)")
    counts = [int(embeddings.counts[embeddings.get_index(w)]) for w in words]
    change = embeddings.change_degrees(words, tuple(period_a), tuple(period_b), step=step, measure=measure)
    table = pd.DataFrame({"word": words, "count": counts, "change": change.tolist()})
    table = table.sort_values("change", ascending=False, kind="stable").reset_index(drop=True)
    return table if top is None else table.head(_checks.positive("top", top))
