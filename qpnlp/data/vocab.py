"""Word vocabulary with distinct padding and unknown ids and IDF weights.

Ids ``0`` (:data:`PAD_ID`, token ``<pad>``) and ``1`` (:data:`UNK_ID`, token
``<unk>``) are reserved and never shared: padding positions are marked by the
explicit masks of :func:`qpnlp.data.batching.pad_batch` and must never
contribute a word state, while unknown words are real tokens that do.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

__all__ = ["PAD", "PAD_ID", "UNK", "UNK_ID", "Vocabulary"]

PAD = "<pad>"
UNK = "<unk>"
PAD_ID = 0
UNK_ID = 1
_FORMAT = "qpnlp.Vocabulary/1"


class Vocabulary:
    """Mapping between words and integer ids, built from training texts only.

    Word ids ``2 .. V-1`` are assigned by decreasing training frequency, ties
    broken alphabetically, so the same training texts always give the same ids.
    Use :meth:`build` rather than the constructor.

    Parameters
    ----------
    words : sequence of str
        The regular words in id order (their ids are ``2, 3, ...``).
    word_freq : mapping str -> int
        Training token counts of (at least) the regular words.
    doc_freq : mapping str -> int
        Number of training texts that contain each regular word.
    n_docs : int
        Number of training texts the counts come from.

    Examples
    --------
    >>> vocab = Vocabulary.build([["a", "good", "film"], ["a", "bad", "film"], ["a", "film"]])
    >>> len(vocab), vocab.encode(["a", "great", "film"])
    (6, [2, 1, 3])
    >>> vocab.decode([2, 1, 3, 0])
    ['a', '<unk>', 'film', '<pad>']
    """

    def __init__(
        self,
        words: Sequence[str],
        word_freq: Mapping[str, int],
        doc_freq: Mapping[str, int],
        n_docs: int,
    ) -> None:
        words = list(words)
        specials = {PAD, UNK} & set(words)
        if specials:
            raise ValueError(f"regular words must not include the reserved tokens {sorted(specials)}")
        if len(set(words)) != len(words):
            dup = next(w for w, c in Counter(words).items() if c > 1)
            raise ValueError(f"duplicate word {dup!r} in vocabulary")
        missing = [w for w in words if w not in word_freq or w not in doc_freq]
        if missing:
            raise ValueError(f"{len(missing)} words lack frequencies, e.g. {missing[:3]}")
        self._itos: list[str] = [PAD, UNK, *words]
        # PAD is deliberately absent from the lookup: a literal "<pad>" in a text encodes as UNK.
        self._stoi: dict[str, int] = {w: i for i, w in enumerate(self._itos) if i != PAD_ID}
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
    ) -> Vocabulary:
        """Count the training texts and keep the frequent words.

        Parameters
        ----------
        token_lists : iterable of sequences of str
            The TRAINING texts only (never dev or test: their words must stay
            unknown, exactly as at deployment).
        min_freq : int, default 1
            Keep words seen at least this many times.
        max_size : int, optional
            Keep at most this many regular words (the most frequent); the two
            reserved ids come on top, so ``len(vocab) <= max_size + 2``.

        Returns
        -------
        Vocabulary
        """
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0 or None, got {max_size}")
        word_freq: Counter[str] = Counter()
        doc_freq: Counter[str] = Counter()
        n_docs = 0
        for tokens in token_lists:
            if isinstance(tokens, str):
                raise TypeError("token_lists must hold token lists, not strings; tokenize first")
            n_docs += 1
            word_freq.update(tokens)
            doc_freq.update(set(tokens))
        for special in (PAD, UNK):
            word_freq.pop(special, None)
            doc_freq.pop(special, None)
        kept = sorted((w for w, c in word_freq.items() if c >= min_freq), key=lambda w: (-word_freq[w], w))
        if max_size is not None:
            kept = kept[:max_size]
        return cls(kept, word_freq, doc_freq, n_docs)

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
        if max_new is not None and max_new < 0:
            raise ValueError(f"max_new must be >= 0 or None, got {max_new}")
        new: list[str] = []
        seen = set(self._word_freq)
        for w in words:
            if max_new is not None and len(new) >= max_new:
                break
            if not isinstance(w, str):
                raise TypeError(f"extra words must be strings, got {type(w).__name__}")
            if w in seen or w in (PAD, UNK):
                continue
            seen.add(w)
            new.append(w)
        zeros = dict.fromkeys(new, 0)
        return Vocabulary(self._itos[2:] + new, {**self._word_freq, **zeros}, {**self._doc_freq, **zeros},
                          self._n_docs)

    # ---------------------------------------------------------------- mapping
    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, word: object) -> bool:
        """True for regular words of the vocabulary (the reserved tokens are not words)."""
        return isinstance(word, str) and word in self._word_freq

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, n_docs={self._n_docs})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.to_dict() == other.to_dict()

    @property
    def words(self) -> list[str]:
        """All tokens in id order, reserved ones included (``words[0] == "<pad>"``)."""
        return list(self._itos)

    @property
    def n_docs(self) -> int:
        """Number of training texts the vocabulary was counted on."""
        return self._n_docs

    def id_of(self, word: str) -> int:
        """The id of ``word``, :data:`UNK_ID` when unknown."""
        return self._stoi.get(word, UNK_ID)

    def word_of(self, idx: int) -> str:
        """The token with id ``idx``."""
        if not 0 <= idx < len(self._itos):
            raise IndexError(f"id {idx} out of range for a vocabulary of size {len(self)}")
        return self._itos[idx]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Map tokens to ids; unknown tokens map to :data:`UNK_ID` (never to PAD).

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
        """
        if isinstance(tokens, str):
            raise TypeError("encode expects a list of tokens, not a string; call tokenize() first")
        if len(tokens) == 0:
            raise ValueError("cannot encode an empty sentence (zero tokens): it would be all padding")
        stoi = self._stoi
        return [stoi.get(t, UNK_ID) for t in tokens]

    def encode_many(self, token_lists: Iterable[Sequence[str]]) -> list[list[int]]:
        """:meth:`encode` for each text; the error names the index of an empty one."""
        out = []
        for i, tokens in enumerate(token_lists):
            try:
                out.append(self.encode(tokens))
            except ValueError as err:
                raise ValueError(f"text {i}: {err}") from None
        return out

    def decode(self, ids: Iterable[int], skip_pad: bool = False) -> list[str]:
        """Map ids back to tokens (``<pad>``/``<unk>`` for the reserved ids).

        Parameters
        ----------
        ids : iterable of int
            Ids, e.g. one row of a padded batch (a tensor row works too).
        skip_pad : bool, default False
            Drop padding ids.
        """
        out = []
        for i in ids:
            i = int(i)
            if skip_pad and i == PAD_ID:
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
        dfs = [0.0, 0.0] + [float(self._doc_freq[w]) for w in self._itos[2:]]
        idf = torch.tensor([math.log((1 + n) / (1 + df)) + 1.0 for df in dfs], dtype=torch.float32)
        idf[PAD_ID] = 0.0
        return idf

    # ---------------------------------------------------------- persistence
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description (for checkpoints); see :meth:`from_dict`."""
        words = self._itos[2:]
        return {
            "format": _FORMAT,
            "words": list(words),
            "word_freq": [self._word_freq[w] for w in words],
            "doc_freq": [self._doc_freq[w] for w in words],
            "n_docs": self._n_docs,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Vocabulary:
        """Rebuild a vocabulary written by :meth:`to_dict` (ids are preserved)."""
        if data.get("format") != _FORMAT:
            raise ValueError(f"not a serialised Vocabulary: format is {data.get('format')!r}, expected {_FORMAT!r}")
        words, wf, df = data["words"], data["word_freq"], data["doc_freq"]
        if not len(words) == len(wf) == len(df):
            raise ValueError(f"words/word_freq/doc_freq lengths differ: {len(words)}, {len(wf)}, {len(df)}")
        return cls(words, dict(zip(words, wf)), dict(zip(words, df)), data["n_docs"])
