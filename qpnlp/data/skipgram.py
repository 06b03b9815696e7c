"""Vectorised skip-gram data pipeline: subsampling, dynamic windows, negatives.

Everything here works on whole arrays of token ids (no Python loop over
sentences), following word2vec (Mikolov et al., 2013) choices:

* **frequency subsampling** -- a token of relative frequency :math:`f` is kept
  with probability :math:`p = \\min(1, (\\sqrt{f/s} + 1)\\, s/f)` (the formula
  of the word2vec C code, ``s`` = ``sample``); removed tokens are deleted
  *before* windows are formed, which widens the effective window;
* **dynamic windows** -- each centre token draws a reduced window
  :math:`b \\sim U\\{1..W\\}` and pairs with the tokens at distance
  :math:`\\le b` inside its document;
* **negatives** from the unigram distribution raised to 0.75, drawn on the
  training device by inverse-CDF sampling (:class:`NegativeSampler`).

Batches: :func:`iter_centre_batches` yields shuffled *centre tokens* with
all the pairs of each (word2vec's own order of updates), so a model whose
centre vector depends on time computes it once per centre token instead of
once per pair.

Example
-------
>>> import numpy as np, torch
>>> tokens = np.array([0, 1, 2, 3, 4]); docs = np.array([0, 0, 0, 1, 1])
>>> c, x = skipgram_pairs(tokens, docs, window=1, rng=np.random.default_rng(0))
>>> sorted(zip(c.tolist(), x.tolist()))
[(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np
import torch

from qpnlp._checks import check_real
from qpnlp._errors import preview
from qpnlp._repr import record_repr

__all__ = [
    "keep_probabilities",
    "subsample_mask",
    "skipgram_pairs",
    "NegativeSampler",
    "centre_windows",
    "CentreBatch",
    "CentreRun",
    "iter_centre_batches",
    "iter_centre_runs",
]


def keep_probabilities(counts: np.ndarray, sample: float = 1e-3) -> np.ndarray:
    """word2vec keep probability of each word.

    .. math:: p_w = \\min\\Bigl(1, \\bigl(\\sqrt{f_w / s} + 1\\bigr) \\frac{s}{f_w}\\Bigr),
              \\quad f_w = \\frac{n_w}{\\sum_v n_v}

    Parameters
    ----------
    counts : array, shape (V,)
        Corpus counts: finite, non-negative, not all zero (a ValueError, as a NaN or negative ``sample``).
    sample : float
        Threshold ``s``, finite and ``>= 0`` (ValueError; TypeError for a string, a bool or a tensor); ``0``
        disables subsampling (all ones).

    Returns
    -------
    numpy.ndarray, shape (V,), float64

    >>> keep_probabilities(np.array([1000, 10]), sample=1e-2).round(3).tolist()
    [0.111, 1.0]
    """
    # NaN gave NaN probabilities (every token dropped), 10**400 an OverflowError naming no argument
    if check_real("sample", sample, "a finite number >= 0", tensors=False) < 0:
        raise ValueError(f"sample must be a finite number >= 0; got {sample!r}")
    counts = np.asarray(counts, dtype=np.float64)
    if sample == 0:
        return np.ones_like(counts)
    if counts.size and not (np.isfinite(counts).all() and (counts >= 0).all() and counts.sum() > 0):
        raise ValueError(f"counts must be finite, non-negative and not all zero; got {preview(counts.tolist())}")
    f = counts / counts.sum()
    with np.errstate(divide="ignore"):
        p = (np.sqrt(f / sample) + 1.0) * sample / f
    return np.minimum(p, 1.0)


def subsample_mask(tokens: np.ndarray, keep_prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask, shape (n_tokens,): keep token ``i`` with probability ``keep_prob[tokens[i]]``.

    Parameters
    ----------
    tokens : numpy.ndarray of int, shape (n_tokens,)
        Word ids.
    keep_prob : numpy.ndarray of float, shape (V,)
        The keep probability of each word (:func:`keep_probabilities`).
    rng : numpy.random.Generator
        Draws one uniform number per token.
    """
    return rng.random(tokens.shape[0]) < keep_prob[tokens]


def skipgram_pairs(
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    window: int,
    rng: np.random.Generator,
    dynamic: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """All (centre, context) position pairs of a token stream, vectorised.

    Token ``i`` pairs with token ``j`` when they are in the same document and
    :math:`1 \\le |i - j| \\le b_i`, where :math:`b_i \\sim U\\{1..W\\}` if
    ``dynamic`` else :math:`b_i = W`.  The loop runs over the ``W`` offsets
    only.

    Parameters
    ----------
    tokens, doc_ids : numpy.ndarray, shape (n,)
    window : int
        Maximal window ``W``.
    rng : numpy.random.Generator
        Source of the reduced windows.
    dynamic : bool

    Returns
    -------
    centre_pos, context_pos : numpy.ndarray, shape (n_pairs,), int64
        *Positions* into ``tokens`` (index ``tokens`` to get ids), ordered by
        offset then position.
    """
    n = tokens.shape[0]
    if window < 1:
        raise ValueError(f"window must be >= 1; got {window}")
    b = rng.integers(1, window + 1, size=n) if dynamic else np.full(n, window)
    pos = np.arange(n, dtype=np.int64)
    cs, xs = [], []
    for d in range(1, min(window, max(n - 1, 0)) + 1):
        same = doc_ids[:-d] == doc_ids[d:]
        fwd = same & (b[:-d] >= d)  # centre i, context i + d
        bwd = same & (b[d:] >= d)  # centre i + d, context i
        cs.append(pos[:-d][fwd]); xs.append(pos[d:][fwd])
        cs.append(pos[d:][bwd]); xs.append(pos[:-d][bwd])
    if not cs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(cs), np.concatenate(xs)


class NegativeSampler:
    """Negatives from :math:`P(w) \\propto n_w^{0.75}`, drawn on a torch device.

    Inverse-CDF sampling: ``searchsorted(cdf, U)`` with ``U ~ U[0, 1)``.

    Parameters
    ----------
    counts : array, shape (V,)
    power : float
        Exponent of the unigram counts (0.75 in word2vec and here).
    device : torch.device or str

    Examples
    --------
    >>> s = NegativeSampler(np.array([1, 0, 1]), device="cpu")
    >>> set(s.sample((100,), generator=torch.Generator().manual_seed(0)).tolist()) <= {0, 2}
    True
    """

    def __init__(self, counts, power: float = 0.75, device="cpu"):
        w = np.asarray(counts, dtype=np.float64) ** power
        if not (w.sum() > 0):
            raise ValueError("counts must have a positive entry")
        self.probs = torch.as_tensor(w / w.sum(), dtype=torch.float64, device=device)
        cdf = torch.cumsum(self.probs, 0)
        cdf[-1] = 1.0
        self._cdf = cdf
        self.device = torch.device(device)
        self.power = power

    def __repr__(self) -> str:
        return f"NegativeSampler(n_words={self.probs.shape[0]}, power={self.power}, device={self.device})"

    def sample(self, shape: tuple, generator: torch.Generator | None = None) -> torch.Tensor:
        """Word ids, ``shape``, int64, on ``self.device``."""
        u = torch.rand(shape, generator=generator, dtype=torch.float64, device=self.device)
        return torch.searchsorted(self._cdf, u, right=True).clamp_(max=self._cdf.numel() - 1)


def _subsampled_chunks(tokens: np.ndarray, doc_ids: np.ndarray, n_docs: int, *, keep_prob: np.ndarray,
                       chunk_tokens: int, rng: np.random.Generator) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Shuffled documents in chunks of about ``chunk_tokens`` tokens, subsampled.

    Yields ``(tokens in the chunk before subsampling, kept token ids, their document ids)``;
    the documents of a chunk are gathered with vectorised numpy indexing.
    """
    starts = np.searchsorted(doc_ids, np.arange(n_docs + 1))
    lens = np.diff(starts)
    order = rng.permutation(n_docs)
    order = order[lens[order] > 0]
    chunk_of = (np.cumsum(lens[order]) - 1) // max(int(chunk_tokens), 1)
    for docs in np.split(order, np.flatnonzero(np.diff(chunk_of)) + 1):
        if docs.size == 0:
            continue
        dl = lens[docs]
        idx = np.repeat(starts[docs], dl) + np.arange(dl.sum()) - np.repeat(np.cumsum(dl) - dl, dl)
        tok, did = tokens[idx], doc_ids[idx]
        keep = subsample_mask(tok, keep_prob, rng)
        kept = int(dl.sum()), tok[keep], did[keep]
        del idx, tok, did, keep               # not held while the chunk trains
        yield kept


def centre_windows(
    doc_ids: np.ndarray,
    window: int,
    rng: np.random.Generator,
    order: np.ndarray | None = None,
    dynamic: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Skip-gram pairs grouped by centre token, vectorised.

    The same pairs as :func:`skipgram_pairs` (the reduced windows are drawn
    from ``rng`` the same way, so equal generator states give equal pair
    sets), laid out centre by centre: row ``r`` is the centre token at
    position ``order[r]`` and its pairs are consecutive.

    Parameters
    ----------
    doc_ids : numpy.ndarray, shape (n,)
        Document of each token (non-decreasing).
    window : int
        Maximal window ``W``.
    rng : numpy.random.Generator
        Source of the reduced windows :math:`b_i \\sim U\\{1..W\\}`.
    order : numpy.ndarray, shape (n,), optional
        Order of the centre positions (a permutation of ``arange(n)``);
        default the corpus order.
    dynamic : bool

    Returns
    -------
    pair_row : numpy.ndarray, shape (n_pairs,), int64
        Row of each pair's centre (non-decreasing; the centre position is
        ``order[pair_row]``).
    context_pos : numpy.ndarray, shape (n_pairs,), int64
        Position of each pair's context token; within a row by increasing
        offset ``-W..-1, 1..W``.

    >>> r, x = centre_windows(np.array([0, 0, 0, 1]), 1, np.random.default_rng(0))
    >>> r.tolist(), x.tolist()
    ([0, 1, 1, 2], [1, 0, 2, 1])
    """
    n = doc_ids.shape[0]
    if window < 1:
        raise ValueError(f"window must be >= 1; got {window}")
    b = rng.integers(1, window + 1, size=n) if dynamic else np.full(n, window)
    offsets = np.concatenate([np.arange(-window, 0), np.arange(1, window + 1)])
    # validity of each (position, offset) in corpus order: sequential, cache-friendly slices
    ok = np.zeros((n, 2 * window), dtype=bool)
    for j, d in enumerate(offsets.tolist()):
        a = abs(d)
        if a >= n:
            continue
        same = doc_ids[a:] == doc_ids[:-a]
        if d > 0:  # centre i, context i + d
            ok[:-a, j] = same & (b[:-a] >= a)
        else:  # centre i, context i - a
            ok[a:, j] = same & (b[a:] >= a)
    pos = np.arange(n, dtype=np.int64) if order is None else np.asarray(order, dtype=np.int64)
    return _pairs_by_row(ok, pos, offsets)


#: Rows (centre tokens) of :func:`centre_windows`'s pairs made at a time: its temporaries are of a block, not the chunk.
ROW_BLOCK = 1 << 14


def _pairs_by_row(ok: np.ndarray, pos: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(pair_row, context_pos)`` of :func:`centre_windows`: the ``True`` cells of ``ok[pos]`` (n, 2W) in row-major
    order, row ``r``'s context at ``pos[r] + offsets[col]``, written :data:`ROW_BLOCK` rows at a time into two int64
    arrays of the ``P`` pairs (a ``nonzero`` of the whole chunk made a (P, 2) array and three more of P: its peak was
    about 4.6 times the two outputs)."""
    n_pairs = int(np.count_nonzero(ok))
    rows, ctx = np.empty(n_pairs, np.int64), np.empty(n_pairs, np.int64)
    at = 0
    for lo in range(0, pos.shape[0], ROW_BLOCK):
        block = pos[lo:lo + ROW_BLOCK]
        r, c = np.nonzero(ok[block])
        rows[at:at + r.shape[0]] = r + lo
        ctx[at:at + r.shape[0]] = block[r] + offsets[c]
        at += r.shape[0]
    return rows, ctx


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared tensors and raised
class CentreBatch:
    """A minibatch of centre tokens with all their pairs.

    Attributes
    ----------
    words : torch.Tensor, shape (N,) -- word id of each centre token
    time : torch.Tensor, shape (N,), float64 -- raw time of each centre token (its document's)
    pair_centre : torch.Tensor, shape (B,) -- index into ``words`` of each pair's centre
    context : torch.Tensor, shape (B,) -- word id of each pair's context token
    progress : float -- fraction of the epoch's tokens processed after this batch
    """

    words: torch.Tensor
    time: torch.Tensor
    pair_centre: torch.Tensor
    context: torch.Tensor
    progress: float

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut


@dataclass(frozen=True, eq=False)
class CentreRun:
    """Consecutive minibatches of one chunk, held as the chunk's arrays and each batch's ranges in them.

    A training loop that takes many batches in one call (the compiled Word2Fun step) reads the arrays and the
    ranges; :meth:`batches` gives the same batches as :class:`CentreBatch` views.  ``n_b`` batches; ``R``
    centre tokens and ``P`` pairs in the chunk.

    Attributes
    ----------
    words, time : torch.Tensor, shape (R,) -- the chunk's centre tokens (shuffled) and their raw times (float64)
    pair_row : torch.Tensor, shape (P,) -- each pair's centre as an index into ``words`` (the whole chunk)
    context : torch.Tensor, shape (P,) -- each pair's context word
    rows, pairs : numpy.ndarray, shape (n_b, 2), int64 -- batch ``i``'s centre tokens ``rows[i, 0]:rows[i, 1]``
        and pairs ``pairs[i, 0]:pairs[i, 1]`` (every batch has a pair)
    progress : numpy.ndarray, shape (n_b,), float64 -- the epoch's progress after each batch
    """

    words: torch.Tensor
    time: torch.Tensor
    pair_row: torch.Tensor
    context: torch.Tensor
    rows: np.ndarray
    pairs: np.ndarray
    progress: np.ndarray

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut

    def __post_init__(self):
        """Refuse ranges outside the arrays: a compiled loop reads them without bounds checks."""
        n_b = self.progress.shape[0] if self.progress.ndim == 1 else -1
        R, P = self.words.shape[0], self.context.shape[0]
        if n_b < 1 or self.rows.shape != (n_b, 2) or self.pairs.shape != (n_b, 2):
            raise ValueError(f"a run needs rows and pairs (n_b, 2) for its progress (n_b,), n_b >= 1; got "
                             f"{self.rows.shape}, {self.pairs.shape} and {self.progress.shape}")
        if self.time.shape != (R,) or self.pair_row.shape != (P,):
            raise ValueError(f"time must be (R,) like words ({R},) and pair_row (P,) like context ({P},); got "
                             f"{tuple(self.time.shape)} and {tuple(self.pair_row.shape)}")
        for what, ranges, size in (("rows", self.rows, R), ("pairs", self.pairs, P)):
            if not ((0 <= ranges[:, 0]) & (ranges[:, 0] < ranges[:, 1]) & (ranges[:, 1] <= size)).all():
                raise ValueError(f"every batch needs {what} lo < hi within [0, {size}]; got {ranges.tolist()}")

    def __len__(self) -> int:
        return int(self.progress.shape[0])

    def batch(self, i: int) -> CentreBatch:
        """Batch ``i`` as a :class:`CentreBatch` of views (its ``pair_centre`` counts from its first token)."""
        (r0, r1), (p0, p1) = self.rows[i].tolist(), self.pairs[i].tolist()
        return CentreBatch(self.words[r0:r1], self.time[r0:r1], self.pair_row[p0:p1] - r0, self.context[p0:p1],
                           float(self.progress[i]))

    def batches(self) -> Iterator[CentreBatch]:
        """The batches in order (:meth:`batch`)."""
        return (self.batch(i) for i in range(len(self)))

    def split(self, n: int) -> tuple["CentreRun", "CentreRun"]:
        """The first ``n`` batches and the rest (``0 < n < len(self)``), as two runs over the same arrays."""
        if not 0 < n < len(self):
            raise ValueError(f"a run of {len(self)} batches splits after 1 to {len(self) - 1}; got {n}")
        return (replace(self, rows=self.rows[:n], pairs=self.pairs[:n], progress=self.progress[:n]),
                replace(self, rows=self.rows[n:], pairs=self.pairs[n:], progress=self.progress[n:]))

    def with_progress(self, progress: np.ndarray) -> "CentreRun":
        """The same batches with ``progress`` (n_b,) instead (a stream of several sources rescales it)."""
        return replace(self, progress=np.asarray(progress, dtype=np.float64))


def iter_centre_runs(
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    doc_times: np.ndarray,
    *,
    keep_prob: np.ndarray,
    window: int,
    batch_size: int,
    rng: np.random.Generator,
    chunk_tokens: int = 1_000_000,
    device="cpu",
    batches_per_run: int = 16,
) -> Iterator[CentreRun]:
    """One epoch of shuffled minibatches of centre tokens, each with all its pairs, ``batches_per_run`` at a time.

    The batches of :func:`iter_centre_batches` (the same draws from ``rng``, the same batches in the same
    order), grouped into :class:`CentreRun` s of at most ``batches_per_run`` batches of one chunk.

    Parameters
    ----------
    tokens, doc_ids, doc_times, keep_prob, window, batch_size, rng, chunk_tokens, device
        As for :func:`iter_centre_batches` (a run holds batches of one chunk only).
    batches_per_run : int, default 16
        The most batches in one run (>= 1; ValueError otherwise); a chunk's last run may hold fewer.
    """
    if batches_per_run < 1:
        raise ValueError(f"batches_per_run must be >= 1; got {batches_per_run}")
    in_docs = np.searchsorted(doc_ids, [0, doc_times.shape[0]])  # tokens of documents 0 .. n_docs - 1
    total = max(int(in_docs[1] - in_docs[0]), 1)
    done = 0
    for chunk_size, tok, did in _subsampled_chunks(tokens, doc_ids, doc_times.shape[0], keep_prob=keep_prob,
                                                   chunk_tokens=chunk_tokens, rng=rng):
        chunk_done = done + chunk_size
        if tok.shape[0]:
            yield from _chunk_runs(tok, did, doc_times, (done, chunk_done, total), window=window,
                                   batch_size=batch_size, rng=rng, device=device, batches_per_run=batches_per_run)
        done = chunk_done


def _chunk_runs(tok, did, doc_times, counts, *, window, batch_size, rng, device, batches_per_run):
    """The runs of one subsampled chunk (``tok``, ``did`` (n,)); ``counts`` = (tokens done before the chunk,
    after it, in the epoch)."""
    n = tok.shape[0]
    perm = rng.permutation(n)
    row, ctx = centre_windows(did, window, rng, order=perm)
    if row.size == 0:
        return
    cw = torch.from_numpy(tok[perm]).to(device)
    ct = torch.from_numpy(doc_times[did[perm]].astype(np.float64)).to(device)  # the model casts to its dtype
    del perm                                  # the frame holds what the runs do while the chunk trains
    px = torch.from_numpy(_take_in_place(tok, ctx)).to(device)
    rows, pairs, progress = _batch_ranges(row, n, batch_size, counts)
    pr = torch.from_numpy(row).to(device)
    del row, ctx                              # on the CPU pr's and px's memory; on a GPU host copies
    for lo in range(0, rows.shape[0], batches_per_run):
        hi = lo + batches_per_run
        yield CentreRun(cw, ct, pr, px, rows[lo:hi], pairs[lo:hi], progress[lo:hi])


def _batch_ranges(row: np.ndarray, n: int, batch_size: int, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, pairs, progress)`` of a chunk's batches, as :class:`CentreRun` holds them: its ``n`` rows cut at
    centre boundaries once ``batch_size`` pairs are reached (``row`` (P,), each pair's row, non-decreasing), the
    batches without a pair left out; ``counts`` as for ``_chunk_runs``."""
    done, chunk_done, total = counts
    # first pair of each row (rows without pairs start where the next row does)
    row_start = np.searchsorted(row, np.arange(n + 1))
    cuts = np.searchsorted(row_start, np.arange(batch_size, row.size, batch_size), side="left")
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    rows = np.stack([bounds[:-1], bounds[1:]], axis=1).astype(np.int64)
    pairs = row_start[rows]
    progress = (done + (chunk_done - done) * rows[:, 1] / n) / total
    keep = pairs[:, 1] > pairs[:, 0]  # a batch without pairs is skipped
    return rows[keep], pairs[keep], progress[keep]


def _take_in_place(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``values[idx]`` for int64 ``idx`` (P,): written over ``idx`` :data:`ROW_BLOCK` entries at a time and returned
    when ``values`` are int64 too (the pairs' context words without a third array of the chunk's pairs beside their
    rows and positions), a new array otherwise (its dtype is ``values``')."""
    if values.dtype != idx.dtype:
        return values[idx]
    for lo in range(0, idx.shape[0], ROW_BLOCK):
        idx[lo:lo + ROW_BLOCK] = values[idx[lo:lo + ROW_BLOCK]]
    return idx


def iter_centre_batches(
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    doc_times: np.ndarray,
    *,
    keep_prob: np.ndarray,
    window: int,
    batch_size: int,
    rng: np.random.Generator,
    chunk_tokens: int = 1_000_000,
    device="cpu",
) -> Iterator[CentreBatch]:
    """One epoch of shuffled minibatches of centre tokens, each with all its pairs.

    Documents are shuffled and processed in chunks of about ``chunk_tokens``
    tokens; in each chunk the kept tokens are
    shuffled and cut, at centre boundaries, into batches of about
    ``batch_size`` pairs (at most ``batch_size + 2 * window - 1``).  All index arrays of a chunk are built at once with
    numpy and moved to ``device`` once; batches are views.

    Parameters
    ----------
    tokens : numpy.ndarray of int, shape (n_tokens,)
        The corpus as word ids, document after document.
    doc_ids : numpy.ndarray of int, shape (n_tokens,)
        The document of each token, sorted (``0 .. n_docs - 1``); tokens outside that range are never drawn.
    doc_times : numpy.ndarray of float, shape (n_docs,)
        The time of each document; a batch's ``times`` are its centres' document times (float64, the model casts).
    keep_prob : numpy.ndarray of float, shape (V,)
        The probability of keeping each word (subsampling, :func:`keep_probabilities`); all ones keep every token.
    window : int
        The maximum window size ``W``; each centre draws its own window from ``1..W`` (word2vec's dynamic window).
    batch_size : int
        About this many (centre, context) pairs per batch; cut at centre boundaries, so at most
        ``batch_size + 2 * window - 1``.
    rng : numpy.random.Generator
        Draws the document order, the subsampling, the windows and the order of the centres.
    chunk_tokens : int, default 1_000_000
        Documents are gathered in chunks of about this many tokens (before subsampling); a chunk's index arrays are
        built at once and its batches never mix with another chunk's.
    device : str or torch.device, default "cpu"
        Where the batches' tensors are put (once per chunk).
    """
    for run in iter_centre_runs(tokens, doc_ids, doc_times, keep_prob=keep_prob, window=window,
                                batch_size=batch_size, rng=rng, chunk_tokens=chunk_tokens, device=device):
        yield from run.batches()
