r"""Length-sorted chunks of a padded batch: the same outputs for fewer padded positions.

A batch is padded to its longest text, so one long candidate answer makes
every row of the batch pay for its length (TREC-QA TRAIN-ALL: answers of 29
tokens on average padded to 93 per batch). The models score every row on its
own (no batch statistics), so a batch can be cut into chunks of rows of
similar length, each trimmed to its own longest row, and the outputs put back
in row order: equal outputs to floating-point rounding, for fewer padded
positions.

The cut is chosen by dynamic programming over the rows sorted by length:
with rows :math:`i < j` of the sorted order forming one chunk of cost

.. math:: c(i, j) = (j - i) \sum_p \max_{i \le r < j} n_{p, r} + \omega ,

(:math:`n_{p, r}` the length of row r in the p-th padded input, e.g.
question and answer; :math:`\omega` = ``overhead``, the fixed cost of one
more model call counted in padded positions), the plan minimises
:math:`\sum_{\text{chunks}} c` exactly (O(B^2) for B rows, vectorised per
chunk end; skipped when all the batch's padding costs at most one call,
since then no cut can pay). ``overhead = 0`` cuts wherever the length
changes; a large overhead keeps one chunk (then the batch is passed through
untouched).

Where it pays (benchmarks/length_chunks.py, benchmarks/epoch_time.py): evaluation batches of 256 rows,
and the training batches of the matching models (one long candidate answer
pads the whole batch), and those of the order classifiers' CNN, RNN and Transformer (SST-2 phrases: 29% of
the padded positions are words); a QPDN training batch of 32 MR sentences at d = 50 costs more in calls than
its padding, so the trainers chunk training batches only for models that ask for it (``chunk_training``, e.g.
:class:`~qpnlp.models.CNM`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from qpnlp.data.batching import padded_length

#: Default fixed cost of one more chunk, in padded positions (rows x length): the fastest
#: CNM training step on TREC-QA TRAIN-ALL batches of 64-1024 (benchmarks/length_chunks.py).
DEFAULT_OVERHEAD = 256

Padded = tuple[torch.Tensor, torch.Tensor]          # ids (B, L), bool mask (B, L)


def plan_chunks(lengths: Sequence[torch.Tensor], overhead: int = DEFAULT_OVERHEAD) -> list[torch.Tensor]:
    """Rows of each chunk (``long`` index tensors, together a permutation of ``range(B)``).

    A batch with an empty row (length 0 in any input), or without rows (B = 0), is one chunk.

    Parameters
    ----------
    lengths : sequence of torch.Tensor
        One ``(B,)`` tensor of row lengths per padded input of the batch.
    overhead : int
        Cost of one more chunk in padded positions (>= 0).

    Examples
    --------
    >>> [c.tolist() for c in plan_chunks([torch.tensor([2, 9, 2, 9])], overhead=0)]
    [[0, 2], [1, 3]]
    >>> [c.tolist() for c in plan_chunks([torch.tensor([2, 9, 2, 9])], overhead=100)]
    [[0, 1, 2, 3]]
    """
    if overhead < 0:
        raise ValueError(f"overhead must be >= 0; got {overhead}")
    if not lengths:
        raise ValueError("need the lengths of at least one padded input")
    for n in lengths:                           # an array failed with "no attribute 'detach'"
        if not isinstance(n, torch.Tensor):
            raise TypeError(f"lengths must be (B,) tensors, one per padded input; got {type(n).__name__}")
    table = np.stack([np.asarray(n.detach().cpu(), dtype=np.int64) for n in lengths])     # (P, B)
    rows = table.shape[1]
    if rows == 0 or not table.all() or int((table.max(1, keepdims=True) - table).sum()) <= overhead:
        # all the padding costs less than one more call: any cut would cost more than it saves; or a row is
        # empty, or none is there (max had no identity): the batch stays whole, so that the model's own check
        # (or handling) sees the row where it is
        return [torch.arange(rows, device=lengths[0].device)]
    order = np.argsort(table.sum(0), kind="stable")
    sorted_lengths = table[:, order]
    best = np.zeros(rows + 1)
    start = np.zeros(rows + 1, dtype=np.int64)
    for end in range(1, rows + 1):
        # widest row of chunk [i, end) for every i: running maxima from the end backwards
        widest = np.maximum.accumulate(sorted_lengths[:, end - 1::-1], axis=1)[:, ::-1].sum(0)   # (end,)
        cost = best[:end] + (end - np.arange(end)) * widest + overhead
        start[end] = int(np.argmin(cost))
        best[end] = cost[start[end]]
    cuts, end = [], rows
    while end > 0:
        cuts.append((int(start[end]), end))
        end = int(start[end])
    return [torch.as_tensor(order[i:j], device=lengths[0].device) for i, j in reversed(cuts)]


def _rows(padded: Padded, rows: torch.Tensor, multiple_of: int | None = None) -> Padded:
    """Rows ``rows`` of a padded input, trimmed after their last real position (rounded up to ``multiple_of``).

    The columns cut are those past the last True of every row, so a left-padded row (or one with holes) keeps all
    its words; for right-padded rows that is the longest row's length.
    """
    ids, mask = padded[0].index_select(0, rows), padded[1].index_select(0, rows)
    used = mask.any(0).flip(0).to(torch.uint8)          # (L,) from the end: a column holding a word of some row
    end = used.shape[0] - int(used.argmax())            # no word at all (never in a plan's chunk): every column
    width = padded_length(end, ids.shape[1], multiple_of)
    return ids[:, :width], mask[:, :width]


def chunked(fn: Callable[..., torch.Tensor], inputs: Sequence[Padded],
            overhead: int | None = DEFAULT_OVERHEAD, multiple_of: int | None = None) -> torch.Tensor:
    """``fn(*ids_mask_pairs)`` computed on length-sorted chunks, outputs ``(B, ...)`` back in row order.

    ``fn`` must score every row on its own (row r of the output depends on
    row r of the inputs only, and not on how far they are padded), as every
    qpnlp model does (tested). Each chunk keeps its columns up to the last
    real position of its rows, so left padding or holes lose no word. With one chunk, ``overhead=None`` (chunks
    off) or a row without words (so that an error names the row's index in the
    batch), ``fn`` gets the inputs as they are. Gradients flow through the chunks.
    ``multiple_of`` rounds each chunk's width up to a multiple of it (at most
    the input's width), as :func:`~qpnlp.data.batching.pad_batch` does.

    Parameters
    ----------
    fn : callable
        ``fn(ids_1, mask_1, ids_2, mask_2, ...) -> (B, ...)``, the model's forward; row r of its output may depend
        on row r of its inputs only.
    inputs : sequence of (torch.Tensor, torch.Tensor)
        The padded inputs as ``(ids, mask)`` pairs, ``(B, L_i)`` each (at least one; ValueError otherwise).
    overhead : int or None, default DEFAULT_OVERHEAD
        The cost of one more chunk in padded positions (:func:`plan_chunks`); None: one call on the whole batch.
    multiple_of : int or None, default None
        Round each chunk's width up to a multiple of it, at most the input's width; None: no rounding.
    """
    if not inputs:
        raise ValueError("need at least one (ids, mask) input")
    if overhead is None:
        return fn(*(t for pair in inputs for t in pair))
    chunks = plan_chunks([mask.sum(-1) for _, mask in inputs], overhead)
    if len(chunks) == 1:
        return fn(*(t for pair in inputs for t in pair))
    outputs = [fn(*(t for pair in inputs for t in _rows(pair, rows, multiple_of))) for rows in chunks]
    back = torch.argsort(torch.cat(chunks))
    return torch.cat(outputs).index_select(0, back)


def chunks_in_training(model: nn.Module) -> bool:
    """Whether the trainers should chunk this model's training batches: it asks for it (attribute
    ``chunk_training``).

    A model with dropout draws its masks chunk by chunk: the same distribution, another random stream than
    the one-pass batch, so such a run is not the one-pass run bit for bit (``TrainConfig(length_chunks=None)``,
    ``--length-chunks off``, is).
    """
    return bool(getattr(model, "chunk_training", False))
