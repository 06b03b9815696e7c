"""Word2Fun's token sources: where the loop's tokens come from, one pass per epoch, in chunks.

A source has ``n_tokens`` (the tokens of one pass) and ``chunks(rng)``, which
yields ``(tokens, doc_ids, doc_times)``: the encoded tokens and the document of
each, shape (n,), and the time of each document of the chunk, shape (n_docs,).
:func:`~qpnlp.word2fun.loop.train_source` turns every chunk into batches
(:func:`~qpnlp.data.skipgram.iter_centre_batches`) and decays the learning rate
with the fraction of the epoch's tokens done, whichever the source.

* :class:`ArraySource` holds an encoded corpus in memory: one chunk, which the
  loop shuffles as a whole in pieces of ``chunk_tokens``;
* :class:`StreamSource` reads a :class:`~qpnlp.data.timestamped.TsvStream` from
  disk on every pass and encodes it in chunks of about ``chunk_tokens`` tokens
  (and at most ``chunk_tokens`` documents), so memory is bounded by the chunk,
  not the corpus (the loop holds about two: one trained while its drawing thread
  prepares the next, and at most 16 runs of batches between them).

The chunks of a stream, concatenated, are the in-memory encoding's documents with a token
(:meth:`~qpnlp.data.timestamped.TimestampedCorpus.encode`), each whole in one chunk; a stream that fits in
one chunk (fewer in-vocabulary tokens and fewer documents than ``chunk_tokens``) yields the
:class:`ArraySource`'s arrays themselves, so training on it is the same, bit for bit.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

__all__ = ["ArraySource", "StreamSource"]


class ArraySource:
    """An encoded corpus in memory: ``tokens``, ``doc_ids`` (n_tokens,) and ``doc_times`` (n_docs,).

    Arrays, tensors (CPU) or lists; integer ``tokens`` and ``doc_ids`` of any width are read as int64 (the compiled
    step reads int64: int32 failed in its compiler, uint16 and float ids in indexing, naming neither), other
    dtypes are a ``TypeError`` naming the array. Nothing is written into them.

    Parameters
    ----------
    tokens : array-like
        Integer (n_tokens,): the word id of each token, in corpus order.
    doc_ids : array-like
        Integer (n_tokens,): the document of each token, an index into ``doc_times``; a document's tokens are
        contiguous.
    doc_times : array-like
        (n_docs,): the time of each document (e.g. its year), kept as given (``numpy.asarray``).
    """

    def __init__(self, tokens: np.ndarray, doc_ids: np.ndarray, doc_times: np.ndarray):
        self.tokens, self.doc_ids = _ids("tokens", tokens), _ids("doc_ids", doc_ids)
        self.doc_times = np.asarray(doc_times)

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.shape[0])

    def chunks(self, rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        yield self.tokens, self.doc_ids, self.doc_times

    def token_times(self) -> np.ndarray:
        """The distinct times of the documents that hold a token, sorted, shape (T,): one pass over ``doc_ids``
        (``bincount``), memory per document (not a time per token)."""
        return np.unique(self.doc_times[np.bincount(self.doc_ids, minlength=len(self.doc_times)) > 0])


def _ids(name: str, values) -> np.ndarray:
    """``values`` as an int64 array (no copy when it is one); TypeError naming ``name`` unless they are integers."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu" and array.size:     # an empty list is float64
        raise TypeError(f"{name} must be integer ids; got an array of {array.dtype}")
    return array.astype(np.int64, copy=False)


class StreamSource:
    """A :class:`~qpnlp.data.timestamped.TsvStream` encoded with ``vocabulary`` in chunks of about ``chunk_tokens``.

    Out-of-vocabulary tokens are dropped; ``n_tokens`` (the in-vocabulary
    tokens of one pass) is counted on the first pass unless given.  A chunk
    also ends at ``chunk_tokens`` documents: documents with hardly any word of
    the vocabulary (a small given vocabulary, a high ``min_count``) would
    otherwise pile up, each with its time, until ``chunk_tokens`` tokens came.

    Parameters
    ----------
    stream : qpnlp.data.timestamped.TsvStream
        Any re-iterable of ``(time, tokens)`` documents, read once per pass (this process's shard in a
        distributed run).
    vocabulary : qpnlp.data.Vocabulary
        Its ``index`` (word -> id) encodes the tokens.
    chunk_tokens : int
        A chunk ends once it holds at least this many tokens or documents.
    n_tokens : int or None, default None
        The in-vocabulary tokens of one pass, when known (from the word counts); None: counted by a first pass
        when ``n_tokens`` is first read.
    """

    def __init__(self, stream, vocabulary, chunk_tokens: int, n_tokens: int | None = None):
        self.stream, self.index, self.chunk_tokens = stream, vocabulary.index, int(chunk_tokens)
        self._n_tokens = n_tokens

    @property
    def n_tokens(self) -> int:
        if self._n_tokens is None:
            self._n_tokens = sum(int(c.shape[0]) for c, _, _ in self.chunks(None))
        return self._n_tokens

    def chunks(self, rng: np.random.Generator | None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The chunks' ``(tokens, doc_ids, doc_times)``; the lists they are gathered in are dropped before a chunk
        is yielded (the suspended generator held them, 8 bytes a token, while the chunk trained)."""
        index, ids, lens, times = self.index, [], [], []
        for t, toks in self.stream:
            row = [index[w] for w in toks if w in index]
            ids.extend(row)
            lens.append(len(row))
            times.append(t)
            if len(ids) >= self.chunk_tokens or len(lens) >= self.chunk_tokens:
                chunk = self._arrays(ids, lens, times) if ids else None   # no word of the vocabulary: nothing to train
                ids, lens, times, row = [], [], [], None
                if chunk is not None:
                    yield chunk
                    chunk = None
        if ids:
            chunk = self._arrays(ids, lens, times)
            del ids, lens, times
            yield chunk

    @staticmethod
    def _arrays(ids, lens, times):
        lens = np.asarray(lens, dtype=np.int64)
        return (np.asarray(ids, dtype=np.int64), np.repeat(np.arange(lens.shape[0], dtype=np.int64), lens),
                np.asarray(times, dtype=np.float64))
