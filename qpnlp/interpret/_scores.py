r"""Scores shared by the exact search (:mod:`.nearest`) and the approximate index (:mod:`.ann`).

``"born"``: :math:`|\langle v|w\rangle|^2` of unit rows (the squared cosine
for real vectors); ``"cosine"``: the signed cosine, for complex vectors
:math:`\operatorname{Re}\langle v|w\rangle`, the cosine of their real images
``[Re, Im]``. Both modules import this one, and neither imports the other back.
Both rank with :func:`top_k`: equal scores in increasing row order.
"""

from __future__ import annotations

import torch

SCORES = ("auto", "born", "cosine")


def resolve_score(score: str, *tensors: torch.Tensor) -> str:
    """``"born"`` or ``"cosine"`` for ``score`` given the tensors it applies to."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}; got {score!r}")
    is_complex = any(t.is_complex() for t in tensors)
    if score == "auto":
        return "born" if is_complex else "cosine"
    return score


def unit_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows divided by their norm (zero rows stay zero) and the bool mask of non-zero rows."""
    norms = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    nonzero = norms.squeeze(-1) > 0
    return x / norms.clamp_min(torch.finfo(norms.dtype).tiny), nonzero


def pair_scores(q: torch.Tensor, s: torch.Tensor, score: str) -> torch.Tensor:
    """``(..., m, V)`` scores of unit rows ``q`` ``(..., m, d)`` against ``s`` ``(..., V, d)``."""
    if q.is_complex():
        amplitude = q.conj() @ s.mT                                     # <v|w> = sum_j conj(v_j) w_j
        if score == "cosine":                                           # Re<v|w>: the real images' cosine
            return amplitude.real
        return amplitude.real.square() + amplitude.imag.square()
    cosine = q @ s.mT
    return cosine.square() if score == "born" else cosine


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
