"""The stable top-k: the ``k`` largest scores of each row, equal scores by increasing column.

One home for the rankings that must not depend on :func:`torch.topk`'s unspecified order of ties: the nearest-word
searches and the approximate index (:mod:`qpnlp.interpret`) and the static keyed vectors' ``most_similar``
(:mod:`qpnlp.word2fun.static_vectors`, numpy scores through :func:`torch.from_numpy`).
"""

from __future__ import annotations

import torch


def top_k(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The ``k`` largest entries of each row of ``scores`` ``(m, n)``, descending, and their columns: ``(m, k)`` each.

    Equal scores are ranked by increasing column, as a stable sort of the whole row would rank them
    (:func:`torch.topk` leaves their order, and which of them make the cut, unspecified: it changes with the
    size of the input and the device). A row whose k-th and (k+1)-th largest scores :math:`s_{(k)} = s_{(k+1)}`
    are equal keeps every column above :math:`s_{(k)}` and the lowest columns scoring exactly :math:`s_{(k)}`.
    ``1 <= k <= n``.
    """
    values, columns = scores.topk(min(k + 1, scores.shape[-1]), dim=-1)
    crowded = _equal(values[:, k], values[:, k - 1]).nonzero().squeeze(-1) if values.shape[-1] > k else []
    values, columns = values[:, :k], columns[:, :k]
    if len(crowded):                                                # the cut falls inside a tie
        columns[crowded] = _cut_inside_tie(scores, crowded, values[crowded], columns[crowded])
        values[crowded] = scores[crowded[:, None], columns[crowded]]
    columns, by_column = columns.sort(dim=-1)
    values = values.gather(-1, by_column)
    order = values.argsort(dim=-1, descending=True, stable=True)
    return values.gather(-1, order), columns.gather(-1, order)


def _cut_inside_tie(scores: torch.Tensor, crowded: torch.Tensor, values: torch.Tensor,
                    columns: torch.Tensor) -> torch.Tensor:
    """The ``k`` columns :func:`top_k` keeps in the rows ``crowded`` ``(c,)`` of ``scores`` ``(m, n)``, whose ``k``-th
    largest score ties with the next.

    ``values``, ``columns`` ``(c, k)``: :func:`torch.topk`'s on those rows. The columns scoring above the k-th score
    are all among them; the rest are the lowest columns scoring exactly the k-th score. Those are searched in a prefix
    of each row, widened fourfold until it holds enough of them (a large tie, e.g. a query orthogonal to most of the
    vocabulary, is settled in its first few columns), as the largest values of ``width - column`` over the tied
    entries. No sort, cumulative sum or copy of the whole rows.
    """
    k, n = values.shape[-1], scores.shape[-1]
    kth = values[:, -1:]
    above = (values > kth) | (values.isnan() & ~kth.isnan())        # topk ranks NaN first, as a sort does
    needed_count = k - above.sum(-1, keepdim=True)
    width = min(n, 4 * k)
    while (tied := _equal(scores[crowded, :width], kth)).sum(-1, keepdim=True).lt(needed_count).any():
        width = min(n, 4 * width)                                   # ends: the whole row holds enough
    reversed_column = torch.arange(width, 0, -1, dtype=torch.int32, device=scores.device)
    lowest_tied = width - torch.where(tied, reversed_column, 0).topk(min(k, width), dim=-1).values.long()
    needed = torch.arange(lowest_tied.shape[-1], device=scores.device) < needed_count
    return torch.cat([columns, lowest_tied], dim=-1)[torch.cat([above, needed], dim=-1)].view(-1, k)


def _equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a == b`` elementwise, NaN equal to NaN: the ties of a sort, which ranks every NaN first."""
    return (a == b) | (a.isnan() & b.isnan())
