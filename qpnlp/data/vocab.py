"""The one word vocabulary: ids by frequency, optional padding and unknown ids, counts and IDF weights.

With ``specials=True`` (the default, for sentence models) ids ``0``
(:data:`PAD_ID`, token ``<pad>``) and ``1`` (:data:`UNK_ID`, token ``<unk>``)
are reserved and never shared: padding positions are marked by the explicit
masks of :func:`qpnlp.data.batching.pad_batch` and must never contribute a
word state, while unknown words are real tokens that do.

With ``specials=False`` (for skip-gram models such as Word2Fun, whose
samplers need dense ids ``0 .. V-1``) there are no reserved ids: every id is a
word, and an unknown word is an error rather than ``<unk>``.

:data:`PAD_ID` is defined here and only here; every other module imports it.
"""

from __future__ import annotations

import functools
import math
import types
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from qpnlp._checks import is_integer
from qpnlp._errors import newer_format_note, preview

__all__ = ["PAD", "PAD_ID", "UNK", "UNK_ID", "Vocabulary"]

#: The padding token; its id is :data:`PAD_ID`.
PAD = "<pad>"
#: The unknown-word token; its id is :data:`UNK_ID`.
UNK = "<unk>"
#: The id of padding in every :class:`Vocabulary` (masked out, never a word).
PAD_ID = 0
#: The id of words outside the vocabulary.
UNK_ID = 1
_FORMAT = "qpnlp.Vocabulary/1"


def _check_not_one_string(name: str, words: object) -> None:
    """``TypeError`` naming ``name`` where a collection of words is given as one ``str`` or ``bytes``, which any
    iteration would read character by character (``"abc"`` as ``"a"``, ``"b"``, ``"c"``)."""
    if isinstance(words, (str, bytes)):
        raise TypeError(f"{name} must be a collection of words, not a single {type(words).__name__} "
                        f"{preview(words)} (it would be read character by character); wrap it in a list")


class Vocabulary:
    """Mapping between words and integer ids, built from training texts only.

    Word ids ``2 .. V-1`` (``0 .. V-1`` without special tokens) are assigned
    by decreasing training frequency, ties broken alphabetically, so the same
    training texts always give the same ids. Use :meth:`build` rather than the
    constructor.

    Parameters
    ----------
    words : sequence of str
        The regular words in id order (their ids are ``2, 3, ...``, or
        ``0, 1, ...`` with ``specials=False``).
    word_freq : mapping str -> int
        Training token counts of (at least) the regular words.
    doc_freq : mapping str -> int
        Number of training texts that contain each regular word.
    n_docs : int
        Number of training texts the counts come from.
    specials : bool, default True
        Reserve ids 0 (``<pad>``) and 1 (``<unk>``). Without them the ids are
        dense word ids, unknown words raise ``KeyError`` and ``<pad>`` /
        ``<unk>`` are ordinary strings.

    Examples
    --------
    >>> vocab = Vocabulary.build([["a", "good", "film"], ["a", "bad", "film"], ["a", "film"]])
    >>> len(vocab), vocab.encode(["a", "great", "film"])
    (6, [2, 1, 3])
    >>> vocab.decode([2, 1, 3, 0])
    ['a', '<unk>', 'film', '<pad>']

    Without special tokens (skip-gram ids; the counts feed the samplers):

    >>> dense = Vocabulary.build([["a", "good", "film"], ["a", "film"]], specials=False)
    >>> dense.words, dense.counts.tolist(), dense.ids(["film", "a"])
    (['a', 'film', 'good'], [2, 2, 1], [1, 0])
    """

    def __init__(
        self,
        words: Sequence[str],
        word_freq: Mapping[str, int],
        doc_freq: Mapping[str, int],
        n_docs: int,
        *,
        specials: bool = True,
    ) -> None:
        words = list(words)
        if not isinstance(specials, bool):
            raise TypeError(f"specials must be a bool, got {type(specials).__name__}")
        reserved = {PAD, UNK} & set(words) if specials else set()
        if reserved:
            raise ValueError(f"regular words must not include the reserved tokens {sorted(reserved)}")
        if len(set(words)) != len(words):
            dup = next(w for w, c in Counter(words).items() if c > 1)
            raise ValueError(f"duplicate word {preview(dup)} in vocabulary")
        missing = [w for w in words if w not in word_freq or w not in doc_freq]
        if missing:
            raise ValueError(f"{len(missing)} words lack frequencies, e.g. {missing[:3]}")
        self._specials = specials
        self._n_special = 2 if specials else 0
        self._itos: list[str] = [PAD, UNK, *words] if specials else words
        # PAD is deliberately absent from the lookup: a literal "<pad>" in a text encodes as UNK.
        self._stoi: dict[str, int] = {w: i for i, w in enumerate(self._itos) if not (specials and i == PAD_ID)}
        self._word_freq = {w: int(word_freq[w]) for w in words}
        self._doc_freq = {w: int(doc_freq[w]) for w in words}
        self._n_docs = int(n_docs)

    # ------------------------------------------------------------------ build
    @classmethod
    def build(
        cls,
        token_lists: Iterable[Sequence[str]],
        min_freq: int = 1,
        max_size: int | None = None,
        *,
        specials: bool = True,
    ) -> Vocabulary:
        """Count the training texts and keep the frequent words.

        Parameters
        ----------
        token_lists : iterable of sequences of str
            The TRAINING texts only (never dev or test: their words must stay
            unknown, exactly as at deployment). For a timestamped corpus pass
            its ``docs``.
        min_freq : int, default 1
            Keep words seen at least this many times.
        max_size : int, optional
            Keep at most this many regular words (the most frequent); the two
            reserved ids come on top, so ``len(vocab) <= max_size + 2``.
        specials : bool, default True
            Reserve the padding and unknown ids (see the class docstring).

        Returns
        -------
        Vocabulary

        Raises
        ------
        TypeError
            For a text that is a string (not tokenised) or that holds a token
            other than a string (the message names the text and the token).
        ValueError
            For ``min_freq`` not an integer >= 1 or ``max_size`` not an
            integer >= 0.
        """
        if not is_integer(min_freq) or min_freq < 1:
            raise ValueError(f"min_freq must be an integer >= 1, got {min_freq!r}")
        if max_size is not None and (not is_integer(max_size) or max_size < 0):
            raise ValueError(f"max_size must be an integer >= 0 or None, got {max_size!r}")
        word_freq: Counter[str] = Counter()
        doc_freq: Counter[str] = Counter()
        n_docs = 0
        for tokens in token_lists:
            if isinstance(tokens, str):
                raise TypeError("token_lists must hold token lists, not strings; tokenize first")
            try:
                distinct = set(tokens)
            except TypeError:  # an unhashable token (a list, ...)
                distinct = None
            if distinct is None or not _STR.issuperset(map(type, distinct)):  # C speed; str subclasses re-checked
                _check_tokens(tokens, f"token_lists must hold lists of str tokens; text {n_docs}, token",
                              " (for a TimestampedCorpus pass corpus.docs)")
            n_docs += 1
            word_freq.update(tokens)
            doc_freq.update(distinct)
        if specials:
            for special in (PAD, UNK):
                word_freq.pop(special, None)
                doc_freq.pop(special, None)
        kept = sorted((w for w, c in word_freq.items() if c >= min_freq), key=lambda w: (-word_freq[w], w))
        if max_size is not None:
            kept = kept[:max_size]
        return cls(kept, word_freq, doc_freq, n_docs, specials=specials)

    def with_extra_words(self, words: Iterable[str], max_new: int | None = None) -> Vocabulary:
        """A copy with ``words`` that are not yet in the vocabulary appended (ids after the training words).

        Use it for a *pretrained fallback vocabulary*: the words of a
        pretrained embedding (e.g. the most frequent GloVe words, in their
        order) get their own ids, so a test word never seen in training keeps
        its pretrained vector instead of collapsing to ``<unk>``. No dev or test
        text is looked at. The new words have training frequency and document
        frequency 0 (so their :meth:`idf` equals the unknown word's).

        Parameters
        ----------
        words : iterable of str
            Candidate words in priority order; reserved tokens, duplicates and
            words already present are skipped.
        max_new : int, optional
            Append at most this many new words.

        Examples
        --------
        >>> v = Vocabulary.build([["a", "film"]]).with_extra_words(["film", "movie", "the"], max_new=1)
        >>> v.words, v.word_freq("movie")
        (['<pad>', '<unk>', 'a', 'film', 'movie'], 0)
        """
        _check_not_one_string("words", words)
        if max_new is not None and (not is_integer(max_new) or max_new < 0):
            raise ValueError(f"max_new must be an integer >= 0 or None, got {max_new!r}")
        new: list[str] = []
        seen = set(self._word_freq)
        for w in words:
            if max_new is not None and len(new) >= max_new:
                break
            if not isinstance(w, str):
                raise TypeError(f"extra words must be strings, got {type(w).__name__}")
            if w in seen or (self._specials and w in (PAD, UNK)):
                continue
            seen.add(w)
            new.append(w)
        zeros = dict.fromkeys(new, 0)
        return Vocabulary(self._itos[self._n_special:] + new, {**self._word_freq, **zeros},
                          {**self._doc_freq, **zeros}, self._n_docs, specials=self._specials)

    # ---------------------------------------------------------------- mapping
    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, word: object) -> bool:
        """True for regular words of the vocabulary (the reserved tokens are not words)."""
        return isinstance(word, str) and word in self._word_freq

    def __repr__(self) -> str:
        extra = "" if self._specials else ", specials=False"
        return f"Vocabulary(size={len(self)}, n_docs={self._n_docs}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.to_dict() == other.to_dict()

    @property
    def words(self) -> list[str]:
        """All tokens in id order, reserved ones included (``words[0] == "<pad>"`` with specials)."""
        return list(self._itos)

    @property
    def specials(self) -> bool:
        """Whether ids 0 and 1 are the reserved ``<pad>`` and ``<unk>``."""
        return self._specials

    @property
    def index(self) -> Mapping[str, int]:
        """Read-only mapping of every regular word to its id (reserved tokens excluded)."""
        return types.MappingProxyType(self._regular_index)

    @functools.cached_property
    def _regular_index(self) -> dict[str, int]:
        if not self._specials:
            return self._stoi
        return {w: i for i, w in enumerate(self._itos) if i >= self._n_special}

    @functools.cached_property
    def counts(self) -> np.ndarray:
        """Training token count of every id, int64, shape (V,) (0 for the reserved ids); read-only."""
        counts = np.zeros(len(self._itos), dtype=np.int64)
        counts[self._n_special:] = [self._word_freq[w] for w in self._itos[self._n_special:]]
        counts.setflags(write=False)
        return counts

    @property
    def n_docs(self) -> int:
        """Number of training texts the vocabulary was counted on."""
        return self._n_docs

    def id_of(self, word: str) -> int:
        """The id of ``word``, :data:`UNK_ID` when unknown (``KeyError`` without special tokens).

        A ``word`` that is not a string is a ``TypeError`` (it would otherwise be an unknown word).
        """
        if not self._specials:
            return self.ids([word])[0]
        if not isinstance(word, str):
            raise _token_error(word, "the word")
        return self._stoi.get(word, UNK_ID)

    def ids(self, words: Iterable[str]) -> list[int]:
        """Ids of regular ``words``; raises ``KeyError`` naming the first unknown word (never maps to UNK).

        A word that is not a string is a ``TypeError`` naming its position.
        """
        if isinstance(words, str):
            raise TypeError("ids expects a list of words, not a string")
        index = self.index
        out = []
        for position, w in enumerate(words):
            if not isinstance(w, str):
                raise _token_error(w, f"word {position}")
            if w not in index:
                raise KeyError(f"word {w!r} is not in the vocabulary ({len(index)} words)")
            out.append(index[w])
        return out

    def word_of(self, idx: int) -> str:
        """The token with id ``idx``, an integer in ``0 .. V-1`` (``TypeError`` for 1.5, ``IndexError`` outside)."""
        if not is_integer(idx):
            raise TypeError(f"an id must be an integer; got {type(idx).__name__} {preview(idx)}")
        if not 0 <= idx < len(self._itos):
            raise IndexError(f"id {idx} out of range for a vocabulary of size {len(self)}")
        return self._itos[idx]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Map tokens to ids; unknown tokens map to :data:`UNK_ID` (never to PAD).

        Without special tokens an unknown token raises ``KeyError`` naming it.

        Parameters
        ----------
        tokens : sequence of str
            One tokenised text, length L >= 1.

        Returns
        -------
        list of int
            Length L.

        Raises
        ------
        ValueError
            For an empty text: it would become an all-padding row whose mean
            over words is undefined. Drop or replace empty texts upstream.
        TypeError
            For a string (not tokenised) or a token that is not a string (an
            id, ``None``, bytes, a tensor), naming its position: it would
            silently become ``<unk>``. Only tokens that miss the lookup are
            checked, so the check costs nothing on known words.
        """
        if isinstance(tokens, str):
            raise TypeError("encode expects a list of tokens, not a string; call tokenize() first")
        if len(tokens) == 0:
            raise ValueError("cannot encode an empty sentence (zero tokens): it would be all padding")
        if not self._specials:
            return self.ids(tokens)
        stoi = self._stoi
        try:
            ids = [stoi.get(t, UNK_ID) for t in tokens]
        except TypeError:  # an unhashable token (a list, an array)
            ids = None
        # A token that is not a string can only hide behind UNK_ID; the type test runs at C speed.
        if ids is None or (UNK_ID in ids and not _STR.issuperset(map(type, tokens))):
            _check_tokens(tokens)
        return ids

    def encode_many(self, token_lists: Iterable[Sequence[str]]) -> list[list[int]]:
        """:meth:`encode` for each text; the error names the index of the text (empty, a string, a non-str token)."""
        out = []
        for i, tokens in enumerate(token_lists):
            try:
                out.append(self.encode(tokens))
            except (ValueError, TypeError) as err:
                raise type(err)(f"text {i}: {err}") from None
        return out

    def decode(self, ids: Iterable[int], skip_pad: bool = False) -> list[str]:
        """Map ids back to tokens (``<pad>``/``<unk>`` for the reserved ids).

        Parameters
        ----------
        ids : iterable of int
            Ids, e.g. one row of a padded batch (a tensor row works too).
            An id that is not an integer (``2.7``) is a ``TypeError``: a
            cast would truncate it to another word.
        skip_pad : bool, default False
            Drop padding ids.
        """
        if isinstance(ids, (torch.Tensor, np.ndarray)):
            ids = ids.tolist()
        out = []
        for position, i in enumerate(ids):
            if isinstance(i, (torch.Tensor, np.ndarray)) and i.ndim == 0:
                i = i.item()
            if not is_integer(i):
                raise TypeError(f"ids must be integers; id {position} is {type(i).__name__} {preview(i)}")
            if skip_pad and self._specials and i == PAD_ID:
                continue
            out.append(self.word_of(i))
        return out

    # ------------------------------------------------------------ statistics
    def word_freq(self, word: str) -> int:
        """Training token count of ``word`` (0 for unknown and reserved tokens)."""
        return self._word_freq.get(word, 0)

    def doc_freq(self, word: str) -> int:
        """Number of training texts containing ``word`` (0 when unknown)."""
        return self._doc_freq.get(word, 0)

    def idf(self) -> torch.Tensor:
        r"""Smoothed inverse document frequencies, one per id.

        .. math:: \mathrm{idf}(w) = \ln\frac{1 + N}{1 + \mathrm{df}(w)} + 1

        with N training texts (the scikit-learn ``smooth_idf`` convention, always
        >= 1). The reserved ids are handled as follows:

        * PAD (id 0) gets 0, so padding never carries weight even if a mask is
          forgotten;
        * UNK (id 1) gets the idf of a word never seen in training
          (df = 0, the largest value, ``ln(1 + N) + 1``): unknown words are
          rarer than every training word.

        Returns
        -------
        torch.Tensor
            float32, shape (V,).

        Examples
        --------
        >>> v = Vocabulary.build([["a", "b"], ["a"]])
        >>> [round(x, 3) for x in v.idf().tolist()]
        [0.0, 2.099, 1.0, 1.405]
        """
        n = self._n_docs
        df = np.zeros(len(self._itos), dtype=np.int64)           # (V,): 0 for the reserved ids
        # _doc_freq is built in id order (__init__) and never changed: its values are df of ids n_special, ...
        df[self._n_special:] = np.fromiter(self._doc_freq.values(), dtype=np.int64, count=len(self._doc_freq))
        # The formula once per distinct df (few: frequencies repeat), with math.log as for one word: the same
        # float64 values as a loop over the words (numpy's log may differ in the last bit), then float32.
        distinct, row = np.unique(df, return_inverse=True)
        table = np.array([math.log((1 + n) / (1 + float(d))) + 1.0 for d in distinct.tolist()], dtype=np.float64)
        idf = torch.from_numpy(table[row.reshape(-1)].astype(np.float32))
        if self._specials:
            idf[PAD_ID] = 0.0
        return idf

    # ---------------------------------------------------------- persistence
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description (for checkpoints); see :meth:`from_dict`.

        ``"specials": false`` is written only for a vocabulary without special
        tokens, so vocabularies with them serialise exactly as before.
        """
        words = self._itos[self._n_special:]
        data = {
            "format": _FORMAT,
            "words": list(words),
            "word_freq": [self._word_freq[w] for w in words],
            "doc_freq": [self._doc_freq[w] for w in words],
            "n_docs": self._n_docs,
        }
        if not self._specials:
            data["specials"] = False
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Vocabulary:
        """Rebuild a vocabulary written by :meth:`to_dict` (ids are preserved).

        ``TypeError`` for anything but a mapping (e.g. a JSON list), ``ValueError`` for a mapping of another format,
        one that lacks a key (named), a word that is not a string, a training count (``word_freq``) that is not an
        integer >= 0, or counts that give no valid IDF: ``n_docs`` not an integer >= 0, or a document frequency
        outside ``0 .. n_docs`` (it would make :meth:`idf` negative or fail).
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"a serialised Vocabulary is a mapping (a JSON object with 'format', 'words', "
                            f"'word_freq', 'doc_freq', 'n_docs'); got {type(data).__name__} {preview(data)}")
        if data.get("format") != _FORMAT:
            raise ValueError(f"not a serialised Vocabulary: format is {preview(data.get('format'))}, expected "
                             f"{_FORMAT!r}{newer_format_note(data.get('format'), _FORMAT)}")
        missing = [key for key in _KEYS if key not in data]
        if missing:
            raise ValueError(f"a serialised Vocabulary lacks the key(s) {missing}; it has "
                             f"{preview(sorted(map(str, data)), 200)}")
        words, wf, df, n_docs = (data[key] for key in _KEYS)
        if not len(words) == len(wf) == len(df):
            raise ValueError(f"words/word_freq/doc_freq lengths differ: {len(words)}, {len(wf)}, {len(df)}")
        specials = data.get("specials", True)
        if not isinstance(specials, bool):
            raise ValueError(f"specials must be true or false; got {preview(specials)}")
        _check_counts(words, wf, df, n_docs)
        return cls(words, dict(zip(words, wf)), dict(zip(words, df)), n_docs, specials=specials)


_KEYS = ("words", "word_freq", "doc_freq", "n_docs")
_STR = frozenset({str})


def _check_counts(words: Sequence[Any], word_freq: Sequence[Any], doc_freq: Sequence[Any], n_docs: Any) -> None:
    r"""``ValueError`` unless every word is a string, every training count an integer >= 0, ``n_docs`` an integer
    >= 0 and every document frequency an integer in ``0 .. n_docs``.

    The smoothed IDF :math:`\ln\frac{1 + N}{1 + \mathrm{df}} + 1` is >= 1 exactly under these conditions; the counts
    (:attr:`Vocabulary.counts`) weigh the skip-gram samplers, where a negative or fractional one has no meaning.
    """
    bad = next((i for i, w in enumerate(words) if not isinstance(w, str)), None)
    if bad is not None:       # an id-like 3 was kept as the int 3: the token "3" never found it
        raise ValueError(f"word {bad} is {type(words[bad]).__name__} {preview(words[bad])}; words are strings")
    bad = next((i for i, c in enumerate(word_freq) if not is_integer(c) or c < 0), None)
    if bad is not None:
        raise ValueError(f"word_freq of word {bad} ({preview(words[bad])}) is {preview(word_freq[bad])}; a training "
                         f"count is an integer >= 0")
    if not is_integer(n_docs) or n_docs < 0:
        raise ValueError(f"n_docs must be an integer >= 0; got {preview(n_docs)}")
    bad = next((i for i, d in enumerate(doc_freq) if not is_integer(d) or not 0 <= d <= n_docs), None)
    if bad is not None:
        raise ValueError(f"doc_freq of word {bad} ({preview(words[bad])}) is {preview(doc_freq[bad])}; a document "
                         f"frequency is an integer in 0..n_docs = {n_docs}")


def _check_tokens(tokens: Iterable[Any], where: str = "token", hint: str = "") -> None:
    """``TypeError`` naming the first token of ``tokens`` that is not a string, as ``f"{where} {position}"``."""
    for position, token in enumerate(tokens):
        if not isinstance(token, str):
            raise _token_error(token, f"{where} {position}", hint)


def _token_error(token: Any, where: str, hint: str = "") -> TypeError:
    """The ``TypeError`` for a token that is not a string (an id, None, bytes, a tensor) found at ``where``."""
    advice = " (ids are not tokens: decode() maps ids to words)" if is_integer(token) else ""
    return TypeError(f"{where} is {type(token).__name__} {preview(token)}, not a str token{advice}{hint}")
