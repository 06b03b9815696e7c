"""read_word2vec_binary reads in blocks: the same vectors and the same errors as reading each word byte by byte."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest

from qpnlp.data import vectors as vectors_module
from qpnlp.data.pretrained import from_matrix
from qpnlp.data.vectors import _values_are_text, read_word2vec_binary

WORDS = ["a", "b", "König", "日本語", "😀", "x" * 100, "tab\tword", "a"]    # unicode, a long word, a repeated one


def _byte_by_byte(path: Path, words=None):
    """The reader before it read in blocks (qpnlp 2.x): one byte at a time up to the space after each word."""
    path = Path(path)
    keep = None if words is None else set(words)
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    try:
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as handle:
            out_words, rows = [], []
            header = handle.readline().split()
            if len(header) != 2 or not all(h.isdigit() for h in header):
                raise ValueError(f"{path}:1: expected a word2vec binary header 'N d'; got {b' '.join(header)[:40]!r}")
            n, dim = int(header[0]), int(header[1])
            if n < 1 or dim < 1:
                raise ValueError(f"{path}:1: the header announces {n} vectors of dimension {dim}; expected at "
                                 f"least one vector of dimension >= 1")
            width = 4 * dim
            for i in range(n):
                word = bytearray()
                while (ch := handle.read(1)) != b" ":
                    if not ch:
                        raise ValueError(f"{path}: file ends in entry {i + 1} of {n}")
                    if ch != b"\n":
                        word += ch
                data = handle.read(width)
                if i == 0 and _values_are_text(data):
                    raise ValueError(f"{path}: the first vector is written as text ({bytes(data[:40])!r}), not as "
                                     f"{dim} binary float32 values: a word2vec text file (load_vectors reads it as "
                                     f"text)")
                if len(data) != width:
                    raise ValueError(f"{path}: entry {i + 1} of {n} has {len(data)} of {width} vector bytes")
                try:
                    text = word.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise ValueError(f"{path}: entry {i + 1} is not UTF-8 ({err}), or the dimension in the header "
                                     f"'N D' does not match the vectors (the header says D = {dim}: {width} bytes "
                                     f"per vector)") from None
                if keep is None or text in keep:
                    vector = np.frombuffer(data, dtype="<f4")
                    if not np.isfinite(vector).all():
                        raise ValueError(f"{path}: entry {i + 1} of {n} ({text!r}) has a non-finite value")
                    out_words.append(text)
                    rows.append(vector)
            if handle.read(4096).strip():
                raise ValueError(f"{path}: the header announces {n} vectors but the file goes on after entry {n} "
                                 f"(wrong header, or a dimension other than {dim}?)")
    except (EOFError, gzip.BadGzipFile) as err:
        raise ValueError(f"{path}: truncated or corrupt gzip file ({err})") from None
    matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    first = {}
    for i, w in enumerate(out_words):
        first.setdefault(w, i)
    return from_matrix(list(first), matrix[list(first.values())])


def _outcome(read, path, words=None):
    """``(words, matrix)`` of a read, or the error's type and message."""
    try:
        vectors = read(path, words=words)
    except ValueError as err:
        return type(err), str(err)
    assert vectors.vectors.dtype == np.float32 and vectors.vectors.shape == (len(vectors.words), vectors.dim)
    return vectors.words, vectors.vectors.tobytes()


def _random_file(rng: random.Random, n: int, dim: int, newline: bytes = b"\n") -> bytes:
    """A word2vec binary file of ``n`` random entries: ``newline`` after a vector or not (gensim), some NaN/inf."""
    header = f"{n} {dim}".encode() + newline
    entries = []
    for _ in range(n):
        values = np.array([rng.choice([0.0, 1.5, -2.25, 32.0, 1e-30, rng.uniform(-1, 1)]) for _ in range(dim)],
                          dtype="<f4")                    # 32.0 is b"\x00\x00\x00B", 0.0 zero bytes, no spaces
        if rng.random() < 0.05:
            values[rng.randrange(dim)] = rng.choice([np.nan, np.inf])
        end = rng.choice([newline, b""])
        entries.append(rng.choice(WORDS).encode() + b" " + values.tobytes() + end)
    return header + b"".join(entries)


@pytest.mark.parametrize("seed", range(12))
def test_block_reader_equals_the_byte_by_byte_reader(tmp_path, monkeypatch, seed):
    """Blocks of 1 to 64 bytes and the default, so that words and vectors cross block ends anywhere."""
    rng = random.Random(seed)
    data = _random_file(rng, n=rng.choice([1, 2, 5, 9]), dim=rng.choice([1, 3, 8]))
    files = {"v.bin": data, "v.bin.gz": gzip.compress(data)}
    if seed % 3 == 0:
        files["v.bin"] += rng.choice([b"\n\n", b"  \n", b"x", b"\x00\x01\x02"])    # after the N entries
    if seed % 4 == 1:
        files["v.bin"] = files["v.bin"].replace(b"\xc3\xb6", b"\xc3(", 1)          # König not UTF-8
    filters = [None, set(), {"a", "日本語", "x" * 100}]
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content)
        for block in (1, 3, 7, 64, vectors_module._BLOCK):
            monkeypatch.setattr(vectors_module, "_BLOCK", block)
            for words in filters:
                assert _outcome(read_word2vec_binary, path, words) == _outcome(_byte_by_byte, path, words), \
                    (name, block, words)


@pytest.mark.parametrize("gzipped", [False, True])
def test_block_reader_equals_the_byte_by_byte_reader_on_every_truncation(tmp_path, monkeypatch, gzipped):
    """Every prefix of a file (plain, or of its gzip stream): the same error, naming the same entry."""
    data = _random_file(random.Random(7), n=4, dim=2)
    whole = gzip.compress(data) if gzipped else data
    path = tmp_path / ("v.bin.gz" if gzipped else "v.bin")
    for cut in range(len(whole) + 1):
        path.write_bytes(whole[:cut])
        for block in (5, vectors_module._BLOCK):
            monkeypatch.setattr(vectors_module, "_BLOCK", block)
            if cut <= 2 and gzipped:                    # no gzip signature: read as a plain file by both
                assert _outcome(read_word2vec_binary, path) == _outcome(_byte_by_byte, path)
                continue
            assert _outcome(read_word2vec_binary, path) == _outcome(_byte_by_byte, path), (cut, block)


def test_block_reader_edge_cases(tmp_path, monkeypatch):
    """One entry, a word longer than the block, no entry after the header, text values, a wrong dimension, and
    a non-finite value named before a later entry's error (as in file order)."""
    one = b"1 2\n" + "ä".encode() * 40 + b" " + np.array([1, 2], dtype="<f4").tobytes()
    cases = {
        "one.bin": one,
        "no-entries.bin": b"3 2\n",
        "text.bin": b"2 2\na 1.0 2.0\nb 3 4\n",
        "dim.bin": b"2 3\na " + np.arange(2, dtype="<f4").tobytes() + b"\nb " + np.arange(2, dtype="<f4").tobytes(),
        "no-space.bin": b"2 2\n" + b"abc" * 50,
        "nan-then-not-utf8.bin": b"2 1\na " + np.array([np.nan], dtype="<f4").tobytes() + b"\xff " + one[-4:],
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        for block in (1, 16, vectors_module._BLOCK):
            monkeypatch.setattr(vectors_module, "_BLOCK", block)
            assert _outcome(read_word2vec_binary, tmp_path / name) == _outcome(_byte_by_byte, tmp_path / name)
    with pytest.raises(ValueError, match=r"entry 1 of 2 \('a'\) has a non-finite value"):
        read_word2vec_binary(tmp_path / "nan-then-not-utf8.bin")
    vectors = read_word2vec_binary(tmp_path / "one.bin")
    assert vectors.words == ["ä" * 40] and vectors.vectors.tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("seed", range(1, 7))  # seed 0: a NaN in entry 1, before any CRLF
def test_crlf_line_ends_read_as_newline_line_ends(tmp_path, monkeypatch, seed):
    """A file with Windows line ends (``\\r\\n`` after the header and the vectors) gives the words, vectors and
    errors of the same file with ``\\n``, not words with a leading ``\\r``; blocks of 1 to 64 bytes split the
    ``\\r\\n`` anywhere, between its two bytes too."""
    n, dim = random.Random(seed).choice([9, 20]), random.Random(seed + 1).choice([1, 3, 8])
    unix, windows = (_random_file(random.Random(seed), n, dim, newline) for newline in (b"\n", b"\r\n"))
    filters = (None, frozenset({"a", "b"}))
    for name, compress in {"v.bin": bytes, "v.bin.gz": gzip.compress}.items():
        (tmp_path / name).write_bytes(compress(unix))               # the same name: errors name the file
        expected = {words: _outcome(read_word2vec_binary, tmp_path / name, words) for words in filters}
        (tmp_path / name).write_bytes(compress(windows))
        for block in (1, 2, 3, 5, 7, 64, vectors_module._BLOCK):
            monkeypatch.setattr(vectors_module, "_BLOCK", block)
            for words in filters:
                assert _outcome(read_word2vec_binary, tmp_path / name, words) == expected[words], (name, block, words)


def test_crlf_split_between_blocks(tmp_path, monkeypatch):
    """A block that ends between the ``\\r`` and the ``\\n`` after a vector (7 bytes: ``a``, space, 4 bytes, ``\\r``)
    and every other block size: the words as written; a file of another name is detected as binary too."""
    one = np.array([1.5], dtype="<f4").tobytes()
    data = b"3 1\r\na " + one + b"\r\nb " + one + b"\r\n\r\nc " + one + b"\r\n"
    (tmp_path / "v.bin").write_bytes(data)
    for block in range(1, len(data) + 1):
        monkeypatch.setattr(vectors_module, "_BLOCK", block)
        vectors = read_word2vec_binary(tmp_path / "v.bin")
        assert vectors.words == ["a", "b", "c"] and vectors.vectors.tolist() == [[1.5]] * 3, block
    (tmp_path / "v.w2v").write_bytes(data)
    assert vectors_module.load_vectors(tmp_path / "v.w2v").words == ["a", "b", "c"]
