r"""Periods of the complex-order embedding's frequencies (how fast a word's phase turns with position).

Coordinate d of word j at position pos is :math:`r_{j,d} e^{i(\omega_{j,d}\mathrm{pos} + \theta_{j,d})}`:
it turns once around the unit circle every

.. math:: T_{j,d} = \frac{2\pi}{|\omega_{j,d}|} \quad \text{tokens}

(:math:`T = \infty` for :math:`\omega = 0`, a coordinate that ignores the
position). Short periods (a few tokens) make the word's contribution depend
on its exact position, long periods (longer than the sentences) make it
nearly position-free: the distribution of periods shows which word order
scales the model learned (Wang et al., ICLR 2020, section 3 and appendix D).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch  # noqa: F401  (the examples use it)
from torch import Tensor

from . import _checks
from .positional import frequency_table

__all__ = ["frequency_periods", "period_table", "period_distribution"]


def frequency_periods(frequencies: Tensor) -> Tensor:
    r"""Periods :math:`2\pi / |\omega|` in tokens, element-wise (``inf`` where :math:`\omega = 0`).

    Parameters
    ----------
    frequencies : Tensor
        Real, any shape.

    Returns
    -------
    Tensor
        Real, same shape.

    Examples
    --------
    >>> frequency_periods(torch.tensor([math.pi, -math.pi / 2, 0.0]))
    tensor([2., 4., inf])
    """
    if not isinstance(frequencies, Tensor) or frequencies.is_complex() or not frequencies.is_floating_point():
        got = getattr(frequencies, "dtype", type(frequencies))
        raise TypeError(f"frequencies must be a real floating tensor; got {got}")
    _checks.finite("frequencies", frequencies)
    return (2 * math.pi) / frequencies.detach().abs()


def period_table(source, words: Sequence[str], *, counts: Sequence[int] | None = None, min_count: int = 1,
                 exclude_ids: Sequence[int] = (0, 1)) -> pd.DataFrame:
    r"""Per-word period statistics, shortest median period first.

    Parameters
    ----------
    source : ComplexOrderEmbedding, model with one as ``.embedding``, or Tensor
        Per-word frequencies (see :func:`~qpnlp.interpret.positional.frequency_table`).
    words : sequence of str
        Name of every id.
    counts, min_count : optional
        Keep words seen at least ``min_count`` times.
    exclude_ids : sequence of int
        Ids left out (padding and unknown by default).

    Returns
    -------
    pandas.DataFrame
        Columns ``word, id, delta`` (:math:`\operatorname{mean}_d |\omega_{j,d}|`),
        ``median_period, min_period, max_period`` (tokens; ``inf`` for a zero
        frequency) and ``count`` when counts are given.

    Examples
    --------
    >>> omega = torch.tensor([[0.0, 0.0], [0.0, 0.0], [math.pi, math.pi / 2], [0.0, math.pi / 50]])
    >>> period_table(omega, ["<pad>", "<unk>", "not", "the"])
      word  id   delta  median_period  min_period  max_period
    0  not   2  2.3562            3.0         2.0         4.0
    1  the   3  0.0314            inf       100.0         inf
    """
    omega = _checks.on_host(frequency_table(source))
    ids, words, counts = _checks.word_rows(words, omega.shape[0], "frequency rows", counts, min_count, exclude_ids)
    periods = frequency_periods(omega[ids])
    sorted_periods = periods.sort(dim=-1).values
    # median of D values: the mean of the two middle ones for even D (inf stays inf)
    d = periods.shape[1]
    median = (sorted_periods[:, (d - 1) // 2] + sorted_periods[:, d // 2]) / 2
    table = pd.DataFrame({"word": [words[i] for i in ids.tolist()], "id": ids.tolist(),
                          "delta": omega[ids].abs().mean(-1).tolist(), "median_period": median.tolist(),
                          "min_period": sorted_periods[:, 0].tolist(), "max_period": sorted_periods[:, -1].tolist()})
    if counts is not None:
        table["count"] = [int(c) for c in counts[ids].tolist()]
    return table.sort_values(["median_period", "delta"], ascending=[True, False], kind="stable").round(
        {"delta": 4}).reset_index(drop=True)


def period_distribution(source, *, words: Sequence[str] | None = None, counts: Sequence[int] | None = None,
                        min_count: int = 1, exclude_ids: Sequence[int] = (0, 1)) -> np.ndarray:
    r"""All periods :math:`2\pi/|\omega_{j,d}|` of the kept words, flattened (for a histogram).

    Word-sharing embeddings (one frequency per dimension, shared by all words)
    are accepted here: their D periods are returned.

    Parameters
    ----------
    source : ComplexOrderEmbedding, model with one as ``.embedding``, or Tensor
        Per-word frequencies (see :func:`~qpnlp.interpret.positional.frequency_table`).
    words : sequence of str, optional
        Name of every id; default (None) the ids as strings.
    counts, min_count : optional
        Keep words seen at least ``min_count`` (default 1) times.
    exclude_ids : sequence of int
        Ids left out (padding and unknown by default).

    Returns
    -------
    numpy.ndarray
        float64 ``(n,)``, ``inf`` for zero frequencies (plots leave them out
        and say how many there are).

    Examples
    --------
    >>> period_distribution(torch.tensor([[0.0], [0.0], [math.pi], [2 * math.pi]]))
    array([2., 1.])
    """
    from qpnlp.nn import ComplexOrderEmbedding

    emb = source if isinstance(source, ComplexOrderEmbedding) else getattr(source, "embedding", None)
    if isinstance(emb, ComplexOrderEmbedding) and emb.frequency_sharing == "word":
        return frequency_periods(_checks.on_host(emb.frequency)).double().numpy()
    omega = _checks.on_host(frequency_table(source))
    names = words if words is not None else [str(i) for i in range(omega.shape[0])]
    ids, _, _ = _checks.word_rows(names, omega.shape[0], "frequency rows", counts, min_count, exclude_ids)
    return frequency_periods(omega[ids]).reshape(-1).double().numpy()
