"""The spelling back-off of pretrained vectors: a vector for a word the vectors lack as written.

For vectors whose words are cased and whose tokenizer splits compounds
(spaCy's), while :func:`~qpnlp.data.tokenize.tokenize` lowercases and keeps
``old-fashioned`` whole. :func:`backoff_vector` looks a word up under its
other spellings, then as the mean of its compound parts;
:func:`backoff_keys` lists every pretrained word that look-up may read, which
vectors restricted to a vocabulary must keep. Used by
:func:`~qpnlp.data.pretrained.embedding_matrix_for` (``backoff=True``) and
:func:`~qpnlp.data.vectors.load_vectors` (``words=`` with ``backoff=True``);
:mod:`qpnlp.data.pretrained` re-exports both functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Protocol

import numpy as np

__all__ = ["backoff_keys", "backoff_vector"]


class _Vectors(Protocol):
    """What :func:`backoff_vector` reads of a :class:`~qpnlp.data.pretrained.PretrainedVectors` (that module
    imports this one, so this one cannot import it): the row of each word and the matrix."""

    @property
    def index(self) -> Mapping[str, int]: ...

    @property
    def vectors(self) -> np.ndarray: ...


# The tokenizer's PTB quotes, for vectors trained on text whose quotes stayed '"'.
_QUOTES = {"``": '"', "''": '"'}
_COMPOUND_SEPARATORS = re.compile(r"[-/]")


def _spellings(word: str) -> tuple[str, ...]:
    """The other spellings :func:`backoff_vector` tries, in order: a PTB quote's double quote; lower, capitalised,
    title, upper case."""
    return tuple(v for v in (_QUOTES.get(word), word.lower(), word.capitalize(), word.title(), word.upper()) if v)


def _spelling_row(pretrained: _Vectors, word: str) -> int | None:
    """Row of ``word`` under another spelling (``_spellings``)."""
    for variant in _spellings(word):
        if variant in pretrained.index:
            return pretrained.index[variant]
    return None


def backoff_keys(words: Iterable[str]) -> set[str]:
    """Every pretrained word :func:`backoff_vector` may look up for ``words``: each word, its other spellings, and
    its compound parts with theirs.

    What vectors restricted to a vocabulary must keep for the backoff to work on it
    (:func:`~qpnlp.data.vectors.load_vectors` with ``words=`` and ``backoff=True``): restricted to the
    vocabulary's words as written, cased vectors lost ``Scorsese`` for ``scorsese``.

    Parameters
    ----------
    words : iterable of str
        The words to look up (a vocabulary's, as :func:`~qpnlp.data.tokenize.tokenize` writes them); read once.

    Returns
    -------
    set of str
        The words themselves, their spellings and their compound parts (split at ``-`` and ``/``) with the parts'
        spellings.

    >>> {"Scorsese", "old", "Fashioned"} <= backoff_keys(["scorsese", "old-fashioned"])
    True
    """
    keys = set()
    for word in words:
        for part in (word, *(p for p in _COMPOUND_SEPARATORS.split(word) if p)):
            keys.add(part)
            keys.update(_spellings(part))
    return keys


def backoff_vector(pretrained: _Vectors, word: str) -> np.ndarray | None:
    """A vector for a word the pretrained set lacks as written, or None.

    For vectors whose words are cased and whose tokenizer splits compounds
    (spaCy's), while :func:`~qpnlp.data.tokenize.tokenize` lowercases and keeps
    ``old-fashioned`` whole. In order:

    1. another spelling: the word's lower, capitalised, title or upper case
       (``scorsese`` -> ``Scorsese``), or for the tokenizer's PTB quotes (two
       backquotes or two apostrophes) the double-quote character;
    2. a compound joined by ``-`` or ``/`` whose every part has a vector (as
       written or by 1.): the mean of the parts' vectors, as fastText composes
       a word from its pieces (``old-fashioned -> (old + fashioned) / 2``).

    Parameters
    ----------
    pretrained : qpnlp.data.pretrained.PretrainedVectors
        The vectors, (R, dim) with the row of each word in ``pretrained.index``; only read.
    word : str
        A word missing from ``pretrained`` as written
        (:func:`~qpnlp.data.pretrained.embedding_matrix_for` looks it up as written first).

    Returns
    -------
    numpy.ndarray or None
        Shape (dim,): a row of ``pretrained.vectors`` (a view, read-only where the matrix is) for 1., a new
        float32 array (the mean taken in float64) for 2.; None when neither finds one.
    """
    row = _spelling_row(pretrained, word)
    if row is not None:
        return np.asarray(pretrained.vectors[row])
    parts = [p for p in _COMPOUND_SEPARATORS.split(word) if p]
    if len(parts) < 2:
        return None
    rows = [pretrained.index.get(p, _spelling_row(pretrained, p)) for p in parts]
    if any(r is None for r in rows):
        return None
    return np.asarray(pretrained.vectors[rows], dtype=np.float64).mean(axis=0).astype(np.float32)
