"""The one check of an array of row indices, for every caller that picks rows by index.

:func:`qpnlp.data.classification.row_indices` (subsets, fixed splits, a
protocol's training indices) and the question groups of
:func:`qpnlp.evaluation.ranking_metrics` take the same input, distinct
integer indices into ``n`` rows, and refuse the same inputs for the same
reasons (:data:`FAULTS`). :func:`check_row_indices` finds the first fault;
each caller words the message its users know, through a template per fault.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from qpnlp._checks import is_integer

__all__ = ["FAULTS", "check_row_indices"]

#: The ways an array of row indices is refused, in the order they are checked: a boolean ``mask`` (it would be read
#: as the indices 0 and 1), a ``shape`` that is not 1-D, a ``dtype`` that is not an integer one (a cast would
#: truncate 1.7 to 1), an index out of ``range`` (a negative one would wrap around to the end) and a ``repeat``
#: (a row listed twice is counted twice).
FAULTS = ("mask", "shape", "dtype", "range", "repeat")


def check_row_indices(indices, n: int, messages: Mapping[str, str], **context) -> np.ndarray:
    """``indices`` as distinct int64 row indices into ``n`` rows, shape (m,); else a ValueError worded by ``messages``.

    ``messages`` maps each fault of :data:`FAULTS` to a :meth:`str.format` template. Its fields are ``context``
    and ``n``, ``last`` (``n - 1``), ``shape`` and ``dtype`` (of ``np.asarray(indices)``), ``value`` and
    ``position`` (the first offending index and its place; for ``"dtype"`` the first value that is not a whole
    number) and ``count`` (how often ``value`` appears, for ``"repeat"``). An empty input is no row, shape (0,).

    >>> check_row_indices([2, 0], 3, {}).tolist()
    [2, 0]
    >>> check_row_indices([0, 3], 3, {"range": "row {value} at {position} is not in 0..{last}"})
    Traceback (most recent call last):
    ...
    ValueError: row 3 at 1 is not in 0..2
    """
    a = np.asarray(indices)
    fault = _first_fault(a, n)
    if fault is not None:
        kind, fields = fault
        raise ValueError(messages[kind].format(n=n, last=n - 1, shape=a.shape, dtype=a.dtype, **fields, **context))
    return a.astype(np.int64).reshape(-1) if a.size else np.zeros(0, dtype=np.int64)


def _first_fault(a: np.ndarray, n: int) -> tuple[str, dict] | None:
    """The first fault of :data:`FAULTS` in ``a`` with its fields (``value``, ``position``, ``count``), or None."""
    if a.dtype == np.bool_:
        return "mask", {}
    if a.size == 0:
        return None
    if a.ndim != 1:
        return "shape", {}
    if a.dtype.kind not in "iu":
        values = a.tolist()
        position = next((i for i, x in enumerate(values)
                         if not is_integer(x) and not (isinstance(x, float) and x.is_integer())), 0)
        return "dtype", dict(value=values[position], position=position)
    bad = np.flatnonzero((a < 0) | (a >= n))
    if bad.size:
        return "range", dict(value=a[bad[0]].item(), position=int(bad[0]))
    values, counts = np.unique(a, return_counts=True)
    if (counts > 1).any():
        return "repeat", dict(value=values[counts > 1][0].item(), count=int(counts[counts > 1][0]))
    return None
