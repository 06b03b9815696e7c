"""Every word's vector at one time: :class:`StaticKeyedVectors`, a static embedding with gensim's queries.

:meth:`qpnlp.word2fun.KeyedVectors.at` builds one from trained Word2Fun vectors at a year; it holds them as a
numpy array (V, D) with gensim's ``KeyedVectors`` interface: ``most_similar`` (words and vectors, positive and
negative), ``similarity``, indexing by a word or a list of words, ``to_gensim()`` for the rest.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

import numpy as np
import torch

from qpnlp._checks import is_integer
from qpnlp._host import host_array
from qpnlp._top_k import top_k
from qpnlp.data.tokenize import normalize_text

__all__ = ["StaticKeyedVectors"]

def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _word_list(words) -> list[str]:
    if words is None:
        return []
    if isinstance(words, str):
        return [words]
    if isinstance(words, (bytes, bytearray)):   # else its bytes would be looked up one by one, as ints
        raise TypeError(f"words must be str or an iterable of str; got bytes {words!r}")
    return list(words)


def _is_vector(item) -> bool:
    """Whether a query item is a vector: a tensor, or a numpy array of numbers (an array of strings holds words;
    a complex one is a vector too, refused by ``_query_row``, not looked up as words)."""
    return isinstance(item, torch.Tensor) or (isinstance(item, np.ndarray) and item.dtype.kind in "biufc")


def _query_list(items) -> list:
    """The words and vectors of a ``most_similar`` argument, as gensim reads them: a word or a vector (D,) is one
    item, a matrix (n, D) its n rows, anything else an iterable of items (words or vectors). A vector of another
    number of dimensions is a ValueError naming its shape (a (1, 1, D) array was read as one row (1, D), whose shape
    the error then named)."""
    if _is_vector(items):
        if items.ndim not in (1, 2):
            raise ValueError(f"query vectors must be one vector (D,) or a matrix (n, D) of n vectors; got shape "
                             f"{tuple(items.shape)}")
        return [items] if items.ndim == 1 else list(items)
    return _word_list(items)


def _index_of(key_to_index: Mapping[str, int], key: object) -> int | None:
    """The id of the word ``key`` as written, else as the corpus readers write it, None when neither is known.

    :func:`~qpnlp.data.timestamped.read_tsv` and :func:`~qpnlp.data.tokenize.tokenize` give every training word
    :func:`~qpnlp.data.tokenize.normalize_text`'s form (NFKC, curly quotes straightened, format characters deleted;
    case kept), as ``qpnlp train word2fun --words`` reads its words: ``union’s`` typed with a curly apostrophe, or
    ``café`` with a combining accent, is the corpus's ``union's`` and ``café``, not an unknown word.
    """
    if not isinstance(key, str):
        return None
    index = key_to_index.get(key)
    if index is None and not key.isascii():      # ASCII text is its own normal form
        index = key_to_index.get(normalize_text(key))
    return index


def _missing(word, n: int) -> KeyError:
    return KeyError(f"word {word!r} is not in the vocabulary ({n} words)")


def _plain_state(obj) -> dict:
    """``obj.__dict__`` for pickle and copy, the read-only ``key_to_index`` as a plain dict (a ``MappingProxyType``
    does not pickle)."""
    return {**obj.__dict__, "key_to_index": dict(obj.key_to_index)}


class StaticKeyedVectors:
    """Every word's vector at one time: a static embedding with gensim's queries.

    Built by :meth:`KeyedVectors.at <qpnlp.word2fun.KeyedVectors.at>`; immutable.

    Parameters
    ----------
    index_to_key : sequence of str, length V (distinct words)
    vectors : numpy.ndarray or torch.Tensor, shape (V, D)
        Real; copied (a tensor's values as :func:`torch.Tensor.numpy` would give them, bfloat16 as float32).
    counts : numpy.ndarray, shape (V,), optional
        Training counts (for ``min_count`` filters).
    year : float, optional
        The time these vectors are taken at.

    Examples
    --------
    >>> import numpy as np
    >>> kv = StaticKeyedVectors(["a", "b", "c", "d"], np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-0.6, 0.8]]))
    >>> kv.most_similar("a", topn=1), round(kv.similarity("a", "c"), 3), kv["b"].tolist()
    ([('b', 0.8)], 0.0, [0.8, 0.6])
    >>> [(word, round(cos, 3)) for word, cos in kv.most_similar(positive=["c"], negative=["a"])]
    [('d', 0.99), ('b', -0.141)]
    """

    def __init__(self, index_to_key: Sequence[str], vectors: np.ndarray, *, counts: np.ndarray | None = None,
                 year: float | None = None):
        self.index_to_key = tuple(index_to_key)
        self.key_to_index = MappingProxyType({w: i for i, w in enumerate(self.index_to_key)})
        if len(self.key_to_index) != len(self.index_to_key):
            dup = next(w for i, w in enumerate(self.index_to_key) if self.key_to_index[w] != i)
            raise ValueError(f"duplicate word {dup!r} in index_to_key")
        vectors = np.array(host_array(vectors), copy=True)   # a tensor too: grad, device, conj/neg bits, bfloat16
        if vectors.ndim != 2 or vectors.shape[0] != len(self.index_to_key):
            raise ValueError(f"vectors must have shape ({len(self.index_to_key)}, D); got {vectors.shape}")
        if vectors.dtype.kind not in "biuf":
            raise TypeError(f"vectors must be real numbers; got dtype {vectors.dtype}")
        if vectors.dtype.kind != "f":
            vectors = vectors.astype(np.float64)
        finite = np.isfinite(vectors).all(-1)
        if not finite.all():   # else its cosines are NaN and most_similar drops every word without a word
            row = int(np.flatnonzero(~finite)[0])
            raise ValueError(f"vectors must be finite; the vector of {self.index_to_key[row]!r} (row {row}) holds "
                             f"NaN or inf")
        vectors.setflags(write=False)
        self.vectors = vectors
        self.counts = np.zeros(len(self.index_to_key), np.int64) if counts is None else np.asarray(counts, np.int64)
        if self.counts.shape != (len(self.index_to_key),):
            raise ValueError(f"counts must have shape ({len(self.index_to_key)},); got {self.counts.shape}")
        self.year = None if year is None else float(year)
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
        unit.setflags(write=False)
        self._unit = unit

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, key: object) -> bool:
        return _index_of(self.key_to_index, key) is not None

    def __getitem__(self, key_or_keys: str | Iterable[str]) -> np.ndarray:
        """The vector of one word, shape (D,); the vectors of an iterable of W words stacked, shape (W, D) (gensim's
        rule)."""
        if isinstance(key_or_keys, (str, bytes)) or not hasattr(key_or_keys, "__iter__"):
            return self.vectors[self.get_index(key_or_keys)]
        return self.vectors[[self.get_index(w) for w in key_or_keys]]

    def __repr__(self) -> str:
        return f"StaticKeyedVectors({len(self)} words x {self.vector_size}, year={self.year})"

    def __getstate__(self) -> dict:
        return _plain_state(self)

    def __setstate__(self, state: dict) -> None:
        """Restore ``__getstate__``, read-only again: the mapping and the arrays (unpickled writable)."""
        self.__dict__.update(state, key_to_index=MappingProxyType(state["key_to_index"]))
        for array in (self.vectors, self._unit):
            array.setflags(write=False)

    @property
    def vector_size(self) -> int:
        return int(self.vectors.shape[1])

    def get_index(self, key: str) -> int:
        """The row of ``key`` (as written, else in the corpus's Unicode form: ``_index_of``); ``KeyError`` naming it
        when unknown."""
        index = _index_of(self.key_to_index, key)
        if index is None:
            raise _missing(key, len(self))
        return index

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of the vectors of ``a`` and ``b``."""
        return float(self._unit[self.get_index(a)] @ self._unit[self.get_index(b)])

    def to_gensim(self):
        """A ``gensim.models.KeyedVectors`` holding these vectors (needs gensim; a copy: float64 vectors stay float64,
        others become float32, gensim's default).

        Everything gensim offers on static vectors (``most_similar``,
        ``evaluate_word_analogies``, ``save_word2vec_format``, ...) then works
        on Word2Fun's vectors at this time; the training counts are set as
        gensim's ``count`` attribute. A double model's vectors thus round-trip exactly through gensim's
        word2vec text format (``save_word2vec_format(path)``, then ``load_word2vec_format(path,
        datatype=numpy.float64)``); the binary format holds float32 only. Neither format holds a word with
        whitespace (a space, a tab, a line end: the word ends at the first space) -- gensim writes such a word
        unchecked; the object returned here holds every word exactly.
        """
        try:
            from gensim.models import KeyedVectors as GensimKeyedVectors
        except ImportError as err:  # pragma: no cover - depends on the environment
            from qpnlp._optional import missing

            raise missing("gensim", "bench", "KeyedVectors.to_gensim()") from err
        dtype = np.float64 if self.vectors.dtype == np.float64 else np.float32
        kv = GensimKeyedVectors(self.vector_size, count=0, dtype=dtype)
        kv.add_vectors(list(self.index_to_key), self.vectors.astype(dtype))
        kv.allocate_vecattrs(["count"], [np.int64])
        kv.expandos["count"][:] = self.counts
        return kv

    def _query_row(self, item) -> np.ndarray:
        """The row a ``most_similar`` item adds to the query: a word's unit vector, a vector (D,) as it is."""
        if not _is_vector(item):
            return self._unit[self.get_index(item)]
        vector = host_array(item)                  # any tensor: grad, device, conj/neg bits, bfloat16
        if vector.dtype.kind == "c":               # the cast below kept the real part with only a numpy warning
            raise TypeError(f"a query vector must be real; got {vector.dtype}")
        vector = np.asarray(vector, dtype=self._unit.dtype)
        if vector.shape != (self.vector_size,):
            raise ValueError(f"a query vector must have shape ({self.vector_size},); got shape {vector.shape}")
        bad = np.flatnonzero(~np.isfinite(vector))
        if bad.size:
            raise ValueError(f"a query vector must be finite; got {vector[bad[0]]} at index {bad[0]} ({bad.size} "
                             f"of its {self.vector_size} values are NaN or infinite)")
        return vector

    def most_similar(self, positive: str | Iterable[str] | None = None, negative: str | Iterable[str] | None = None,
                     topn: int = 10, *, min_count: int = 0) -> list[tuple[str, float]]:
        """The ``topn`` words most similar to the mean of the positive minus the negative words (gensim's rule).

        With items :math:`x_i` of signs :math:`w_i = \\pm 1` (n of them: a word's unit vector, or a vector as it
        is), the query is :math:`q = \\frac1n \\sum_i w_i x_i` and word ``v`` of vector :math:`e_v` scores
        :math:`\\cos(e_v, q)`.

        Parameters
        ----------
        positive, negative : str, numpy.ndarray or torch.Tensor (D,), or an iterable of them, optional
            Words that contribute their unit vector positively / negatively,
            or vectors (D,) that contribute as they are (not normalised, as in
            gensim); a matrix (n, D) is n vectors.
        topn : int, default 10
        min_count : int, default 0
            Only return words seen at least this many times in training.

        Returns
        -------
        list of (word, cosine)
            Decreasing cosine; the query words are left out (words close to a query vector are not).

        Raises
        ------
        KeyError
            For a word not in the vocabulary.
        TypeError
            For a complex vector (its imaginary part would be dropped).
        ValueError
            Without any word or vector, for ``topn`` or ``min_count`` that are not
            integers (``topn`` >= 1, ``min_count`` >= 0), for an array that is
            neither a vector (D,) nor a matrix (n, D) (the shape given is named),
            for a vector not of shape (D,), for a vector with a NaN or an infinite
            value (the first is named, with its index), or when the query is the
            zero vector (e.g. the same word positive and negative): it ranks nothing.
        """
        pos, neg = _query_list(positive), _query_list(negative)
        if not pos and not neg:
            raise ValueError("most_similar needs at least one positive or negative word")
        if not is_integer(topn) or topn < 1:
            raise ValueError(f"topn must be a positive int; got {topn!r}")
        if not is_integer(min_count) or min_count < 0:
            raise ValueError(f"min_count must be an int >= 0; got {min_count!r}")
        topn = int(topn)
        rows = np.stack([self._query_row(item) for item in pos + neg])   # (n, D)
        ids = [self.get_index(w) for w in pos + neg if not _is_vector(w)]
        weights = np.array([1.0] * len(pos) + [-1.0] * len(neg), dtype=self._unit.dtype)
        query = (weights[:, None] * rows).mean(0)
        norm = float(np.linalg.norm(query))
        # the items cancel (or are zero), relative to their size: every cosine would be 0, a meaningless order
        if norm <= 1e-6 * float(np.linalg.norm(rows, axis=-1).mean()):
            shown = [[f"vector{tuple(x.shape)}" if _is_vector(x) else x for x in xs] for xs in (pos, neg)]
            raise ValueError(f"the query of positive {shown[0]} and negative {shown[1]} is the zero vector (the words "
                             f"cancel or their vectors are zero); it ranks nothing")
        query = query / norm
        sims = self._unit @ query
        sims[ids] = -np.inf
        if min_count > 0:
            sims[self.counts < min_count] = -np.inf
        n = min(topn, int(np.isfinite(sims).sum()))
        order = top_k(torch.from_numpy(sims)[None], n)[1][0].tolist() if n else []   # ties by increasing row
        return [(self.index_to_key[i], float(sims[i])) for i in order]
