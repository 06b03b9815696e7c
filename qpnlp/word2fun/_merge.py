"""How the updates of several copies of Word2Fun are merged: the replicas of one process
(:mod:`qpnlp.word2fun._replicas`) and the processes of a distributed run
(:class:`~qpnlp.word2fun.distributed.ParameterSync`).

``W`` copies start from the same parameters :math:`\\theta_s`, each trains its own batches, and every row ``r`` of
every trained table (a word's function, a compass vector) continues from

.. math:: \\theta_{s,r} + \\frac{1}{\\max(k_r / 2,\\, 1)} \\sum_{w} (\\theta_{w,r} - \\theta_{s,r}),

with :math:`k_r` the number of copies that changed row ``r``: the sum of the updates for a row that one or two
copies changed (word2vec's learning rate, as one worker seeing every batch), and ``2 / k_r`` of it for a row that
more copies changed.

Why not the sum for every row: each copy computes its update from :math:`\\theta_s`, so where a segment's steps carry
a frequent row a fraction :math:`a` of the way to its optimum (the compass's rows and the frequent words' functions,
early in an epoch: ``a`` near 1), the sum of ``k`` such updates leaves it :math:`(1 - k a)` times as far on the other
side: a distance that can grow for ``k = 3`` and more.  Three replicas on the State of the Union corpus diverged
(NaN) at the default learning rate; three processes ended their first epoch at 5.4x the loss of one, four diverged.
Scaled by ``2 / k`` the distance is :math:`(1 - 2 a)` times: it never grows, for any ``k`` and ``a`` in [0, 1], and
``2 / k`` is the largest share with that property, so it keeps the most of a row's progress where its steps are
small (``a`` near 0, where the sum is right).  The mean over the copies that changed a row (``1 / k``) is stable
too but halves the progress of every row two copies share: on the State of the Union corpus two replicas' held-out
log-likelihood fell from -2.502 (the sum) to -2.530, three replicas' was -2.557 against -2.517 with ``2 / k``
(``benchmarks/results/word2fun/replicas/merge/``).

Rows are a table's first dimension (:func:`rows`); a row that no copy changed stays as it is.
"""

from __future__ import annotations

import math

import torch

from qpnlp import _numba
from qpnlp.word2fun import pair_loop

__all__ = ["rows", "changed_rows", "divisor", "merge_rows", "merge_replicas"]


def rows(table: torch.Tensor) -> torch.Tensor:
    """``table`` as a 2-D view (R, C), one row per entry of its first dimension (a scalar: one row of one)."""
    return table.view(table.shape[0] if table.dim() else 1, -1)     # parameters are contiguous (the steps need it)


def changed_rows(delta: torch.Tensor) -> torch.Tensor:
    """``1.0`` for each row of ``delta`` (R, C), a copy's change of a table, that has a non-zero entry (NaN counts),
    else ``0.0``: shape (R,), ``delta``'s dtype, to be summed over the copies."""
    return (delta != 0).any(dim=1).to(delta.dtype)


def divisor(changed: torch.Tensor) -> torch.Tensor:
    """:math:`\\max(k / 2, 1)` for each count ``k`` of ``changed`` (float, any shape): what the summed update of a
    row that ``k`` copies changed is divided by (the module docstring)."""
    return (changed / 2).clamp_(min=1)


def merge_rows(start: torch.Tensor, total: torch.Tensor, changed: torch.Tensor,
               bound: tuple[float, float] | None) -> None:
    """``start`` (R, C) becomes ``start + total / max(changed / 2, 1)`` in place, row by row, clipped to ``bound``
    (NaN stays NaN): ``total`` (R, C) the copies' summed changes, ``changed`` (R,) how many copies changed each row
    (:func:`changed_rows`, summed)."""
    start.add_(total / divisor(changed)[:, None])
    if bound is not None:
        start.clamp_(*bound)


def merge_replicas(first: torch.Tensor, others: list[torch.Tensor], start: torch.Tensor,
                   bound: tuple[float, float] | None) -> None:
    """Merge copies in one process: the rows (R, C) of ``start`` become the merge of ``[first] + others``
    (:func:`merge_rows`, the changes summed in that order), which is then copied into every one of them.  The
    compiled loop (``_merged``, one pass over memory, which bounds this) where it runs, else torch's ops: the same
    float operations in the same order, the same values."""
    copies = [first] + others
    if pair_loop.accepts(*copies, start):
        lo, hi = bound if bound is not None else (-math.inf, math.inf)
        by_count = divisor(torch.arange(1, len(copies) + 1, dtype=first.dtype))        # k = 1 .. copies
        _numba.jit(_merged)(tuple(t.numpy() for t in copies), start.numpy(), by_count.numpy(),
                            _numba.scalar(first, lo), _numba.scalar(first, hi))
        return
    deltas = [q - start for q in copies]
    merge_rows(start, sum(deltas), sum(changed_rows(d) for d in deltas), bound)
    for q in copies:
        q.copy_(start)


def _merged(copies, start, divisor, lo, hi):  # pragma: no cover - compiled
    """Each row of ``start`` (R, C) that ``k`` of the ``copies`` (a tuple of (R, C) arrays) changed becomes
    ``start + (their differences from it, summed in order) / divisor[k - 1]``, clipped to ``[lo, hi]``, in
    ``start`` and every copy (a row none changed is only clipped): :func:`merge_replicas`'s torch ops in one pass,
    IEEE arithmetic in the arrays' dtype."""
    for r in range(start.shape[0]):
        k = 0
        for q in copies:
            for j in range(start.shape[1]):
                if q[r, j] - start[r, j] != 0:
                    k += 1
                    break
        for j in range(start.shape[1]):
            s = start[r, j]
            if k == 0:
                if lo <= s <= hi or s != s:         # every copy holds start's row; NaN stays
                    continue
                x = s
            else:
                total = copies[0][r, j] - s
                for v in range(1, len(copies)):
                    total += copies[v][r, j] - s
                x = s + total / divisor[k - 1]
            if x < lo:
                x = lo
            elif x > hi:
                x = hi
            start[r, j] = x
            for q in copies:
                q[r, j] = x
