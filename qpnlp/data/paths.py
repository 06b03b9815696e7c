"""Where the benchmark data lives, and how its text files are opened.

The benchmark files are never part of the package; they are found through an
explicit ``root`` argument or the environment variable ``QPNLP_DATA``.

:func:`read_text` is how every reader opens a data file: gzip, bzip2 and xz
files are decompressed transparently (recognised by their first bytes, not
their names, so ``rt-polarity.neg`` may be gzip-compressed), other archives
(zip, zstd, 7z) and binary files are refused with a message naming the file,
and a decoding error names the file, the line, the column and the encodings
tried. :func:`iter_lines` streams a large file (a corpus, a vectors file) line
by line, plain or gzip, with the same kind of errors. :func:`find_file` finds
``NAME`` or, failing that, ``NAME.gz``.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import io
import itertools
import lzma
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from qpnlp import _env

__all__ = ["DATA_ENV_VAR", "MAX_LINE_BYTES", "data_root", "find_file", "iter_lines", "read_lines", "read_text",
           "refuse_unreadable", "split_lines"]

#: Name of the environment variable that points at the benchmark data folder.
DATA_ENV_VAR = "QPNLP_DATA"


def data_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the folder that holds the benchmark data.

    Parameters
    ----------
    root : str or path-like, optional
        Explicit folder. When omitted, ``$QPNLP_DATA`` is used.

    Returns
    -------
    pathlib.Path
        The absolute, existing folder (expected to contain ``classification/``
        and ``qa/``).

    Raises
    ------
    FileNotFoundError
        When no root is given and ``QPNLP_DATA`` is unset or empty, or when the
        folder does not exist. The message says how to set ``QPNLP_DATA``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data_root(d) == Path(d).resolve()
    True
    """
    hint = (
        f"set the environment variable {DATA_ENV_VAR} to the benchmark data folder "
        f"(e.g. `export {DATA_ENV_VAR}=/path/to/shared/data`) or pass the folder (root=..., or --data on the "
        f"command line)"
    )
    if root is None:
        env = _env.text(DATA_ENV_VAR)
        if env is None:
            raise FileNotFoundError(f"no data root given and {DATA_ENV_VAR} is not set; {hint}")
        path, source = Path(env).expanduser(), f"{DATA_ENV_VAR}={env!r}"
    else:
        path, source = Path(root).expanduser(), f"root={str(root)!r}"
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise FileNotFoundError(f"data root {path} ({source}) {what}; {hint}")
    return path.resolve()


# (magic bytes, format name, decompress or None when qpnlp cannot read it)
_COMPRESSED = (
    (re.compile(rb"\x1f\x8b"), "gzip", gzip.decompress),
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2", bz2.decompress),
    (re.compile(rb"\xfd7zXZ\x00"), "xz", lzma.decompress),
    (re.compile(rb"PK\x03\x04"), "zip archive", None),
    (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd-compressed file", None),
    (re.compile(rb"7z\xbc\xaf\x27\x1c"), "7z archive", None),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def refuse_unreadable(path: Path, head: bytes, readable: Sequence[str] = ("gzip", "bzip2", "xz")) -> None:
    """Raise ``ValueError`` saying what the file is when its first (16) bytes ``head`` show UTF-16 text or a
    compressed or archive format other than ``readable``.

    Parameters
    ----------
    path : pathlib.Path
        The file, named in the error.
    head : bytes
        The file's first bytes (16 suffice for every format recognised).
    readable : sequence of str, default ("gzip", "bzip2", "xz")
        The compressed formats the caller can read (names as in the error messages); the others are refused.
    """
    if head.startswith(_UTF16_BOMS):
        raise ValueError(f"{path} is UTF-16 encoded; convert it to UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)")
    for magic, kind, _ in _COMPRESSED:
        if magic.match(head) and kind not in readable:
            raise ValueError(f"{path} is a {kind}; extract it first (qpnlp reads plain text and "
                             f"{', '.join(readable)} files here)")


def find_file(folder: str | os.PathLike[str], name: str) -> Path:
    r"""``folder/name`` if it exists, else ``folder/name.gz`` if that exists, else ``folder/name`` (for the error).

    Parameters
    ----------
    folder : path-like
        The folder to look in.
    name : str
        The file's name without the ``.gz`` suffix.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "train.tsv.gz").write_bytes(gzip.compress(b"q\ta\t1\n"))
    ...     find_file(d, "train.tsv").name
    'train.tsv.gz'
    """
    path = Path(folder) / name
    gz = path.with_name(path.name + ".gz")
    return gz if not path.exists() and gz.is_file() else path


def _existing_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path`, after the one check of every reader here: ``ValueError`` for a directory
    (``open`` raised a bare ``IsADirectoryError``), ``FileNotFoundError`` for a missing file, both naming it."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a directory; expected a text file")
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    return path


#: The longest line :func:`iter_lines` reads, in bytes (line end included): a streamed file costs about this much
#: memory whatever its size, a gzip bomb without line ends included.
MAX_LINE_BYTES = 1 << 26


def iter_lines(path: str | os.PathLike[str], encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    r"""``(line number, line)`` of a text file, plain or gzip (recognised by its first bytes), streamed.

    For files read once line by line and possibly larger than memory (corpora, vectors); :func:`read_text`
    reads a whole file. Lines are decoded one at a time, so a decoding error names its line and column; a
    UTF-8 byte-order mark is dropped. Lines keep their line ends: ``\n`` or ``\r\n``, or ``\r`` alone in a
    file whose first line has no ``\n`` (old-Mac line ends, read in blocks; elsewhere a ``\r`` is part of
    its line). A line longer than :data:`MAX_LINE_BYTES` is refused once that many bytes are read.

    Parameters
    ----------
    path : path-like
        A text file, plain or gzip.
    encoding : str, default "utf-8"
        The encoding every line is decoded with (strictly: a bad byte raises ``ValueError`` naming the line).

    Raises
    ------
    FileNotFoundError
        For a missing file.
    ValueError
        For a directory, UTF-16 text, another compressed or archive format (:func:`refuse_unreadable`), bytes that
        ``encoding`` cannot decode, a line longer than :data:`MAX_LINE_BYTES`, a ``\n`` in a file of ``\r`` line
        ends, or a truncated or corrupt gzip file; the message names the file.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "mac.txt").write_bytes(b"one\rtwo\r")
    ...     list(iter_lines(Path(d) / "mac.txt"))
    [(1, 'one\r'), (2, 'two\r')]
    """
    path = _existing_file(path)
    with open(path, "rb") as fh:
        head = fh.read(16)
    refuse_unreadable(path, head, readable=("gzip",))
    lineno, limit = 0, MAX_LINE_BYTES
    try:
        with gzip.open(path, "rb") if head.startswith(b"\x1f\x8b") else open(path, "rb") as fh:
            for lineno, raw in enumerate(_raw_lines(fh, limit, path), 1):
                if len(raw) > limit:
                    raise ValueError(f"{path}:{lineno}: a line longer than {limit} bytes "
                                     f"(qpnlp.data.paths.MAX_LINE_BYTES); not a file of text lines")
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                yield lineno, raw.decode(encoding)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}:{lineno}: not {encoding} text (byte 0x{err.object[err.start]:02x} at column "
                         f"{err.start + 1}); convert the file (e.g. iconv -f latin1 -t utf-8)") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:    # zlib.error: corrupt compressed data
        where = f"after line {lineno}" if lineno else "before the first line"
        raise ValueError(f"{path}: truncated or corrupt gzip file {where} ({err})") from None


def _raw_lines(fh: io.BufferedIOBase, limit: int, path: Path) -> Iterator[bytes]:
    r"""The lines of the binary file ``fh``, line ends kept, for :func:`iter_lines`; a line longer than ``limit``
    bytes is cut after ``limit + 1`` bytes or more, for the caller to refuse.

    Lines end at ``\n`` (so ``\r\n`` too) where the first line has one; where it has none but a ``\r``, the
    file has old-Mac line ends and lines end at ``\r`` (binary ``readline`` read such a file as one line),
    read in blocks so that memory stays near ``limit``. ``ValueError`` naming ``path`` for a ``\n`` in such a file
    (mixed line ends, which no one reading gives right).
    """
    first = fh.readline(limit + 1)
    if b"\n" in first or b"\r" not in first:
        yield from itertools.chain((first,) if first else (), iter(functools.partial(fh.readline, limit + 1), b""))
        return
    pending, block, count = bytearray(), first, 0
    while block:
        if b"\n" in block:
            raise ValueError(f"{path}: mixed line ends: a '\\n' after line {count}, in a file of old-Mac '\\r' "
                             f"line ends; convert the file to one kind (e.g. mac2unix or dos2unix)")
        *ended, rest = block.split(b"\r")
        for part in ended:
            pending += part + b"\r"
            count += 1
            yield bytes(pending)
            pending.clear()
        pending += rest
        if len(pending) > limit:
            yield bytes(pending)
            return
        block = fh.read(1 << 16)
    if pending:
        yield bytes(pending)


def read_text(path: str | os.PathLike[str], encodings: Sequence[str] = ("utf-8",)) -> str:
    r"""The text of a data file, decompressed if it is gzip, bzip2 or xz, decoded with the first encoding that fits.

    Parameters
    ----------
    path : path-like
        A text file, possibly compressed (recognised by its first bytes).
    encodings : sequence of str, default ("utf-8",)
        Tried in order on the whole file; a UTF-8 byte-order mark is dropped. When UTF-8 comes first and fails,
        a fallback is refused if the file still holds UTF-8 characters (mixed encodings: the fallback would
        garble them).

    Returns
    -------
    str

    Raises
    ------
    FileNotFoundError
        For a missing file.
    ValueError
        For a directory, an archive qpnlp cannot read (zip, zstd, 7z), a
        corrupt compressed file, a binary file (a NUL byte), a UTF-16 file,
        bytes that no encoding decodes, or a file mixing UTF-8 with another
        encoding; the message names the file (and for decoding, the line,
        the column and the encodings tried).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "a.txt").write_bytes(gzip.compress("caf\u00e9\n".encode()))
    ...     read_text(Path(d) / "a.txt")
    'café\n'
    """
    path = _existing_file(path)
    data = path.read_bytes()
    refuse_unreadable(path, data[:16])
    for magic, kind, decompress in _COMPRESSED:
        if magic.match(data):
            try:
                data = decompress(data)
            except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as err:
                raise ValueError(f"{path}: truncated or corrupt {kind} file ({err})") from None
            break
    refuse_unreadable(path, data[:16])  # UTF-16 inside a compressed file
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ValueError(f"{path} is not a text file (a NUL byte on line {line}, byte offset {nul}); expected "
                         f"one text item per line")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    first_error = None
    for encoding in encodings:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as err:
            first_error = first_error or err
            continue
        if first_error is not None and _is_utf8(encodings[0]):
            _refuse_mixed_utf8(path, data, first_error)
        return text
    if first_error is None:
        raise ValueError("read_text needs at least one encoding")
    line, column = _line_and_column(data, first_error.start)
    raise ValueError(f"{path}:{line}: cannot decode byte 0x{data[first_error.start]:02x} at column {column} as "
                     f"{' or '.join(encodings)}") from None



def read_lines(path: str | os.PathLike[str], encodings: Sequence[str] = ("utf-8",)) -> list[str]:
    r"""The lines of :func:`read_text`'s text, without their line ends (:func:`split_lines`).

    Parameters
    ----------
    path : path-like
        A text file, possibly compressed, as :func:`read_text` reads it.
    encodings : sequence of str, default ("utf-8",)
        Tried in order on the whole file, as by :func:`read_text`.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "a.txt").write_bytes(b"one\x0ctwo\r\nthree\rfour")
    ...     read_lines(Path(d) / "a.txt")
    ['one\x0ctwo', 'three', 'four']
    """
    return split_lines(read_text(path, encodings))


def split_lines(text: str) -> list[str]:
    r"""The lines of ``text``, without their line ends, split at ``\n``, ``\r\n`` and ``\r`` only.

    The one definition of a line end for the readers. Not :meth:`str.splitlines`, which also splits at form
    feeds, ``\x1c``-``\x1e``, ``\x85`` and U+2028/9: characters that occur inside a sentence (``\x85`` is the
    cp1252 ellipsis read as ISO-8859-1) and would silently turn one sentence into two and shift the line
    numbers of every later error.

    Parameters
    ----------
    text : str
        Decoded text, with any mix of line ends.

    Examples
    --------
    >>> split_lines("one\x0ctwo\r\nthree\rfour\n")
    ['one\x0ctwo', 'three', 'four']
    """
    return [line.rstrip("\n") for line in io.StringIO(text, newline=None)]


#: A well-formed UTF-8 sequence of two to four bytes: in a file that is not UTF-8 as a whole, a sign that some of
#: it is (a file decoded as ISO-8859-1 would turn each such character into two or three wrong ones).
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def _is_utf8(encoding: str) -> bool:
    return encoding.lower().replace("_", "-") in ("utf-8", "utf8")


def _line_and_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of byte ``offset``."""
    return data.count(b"\n", 0, offset) + 1, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _refuse_mixed_utf8(path: Path, data: bytes, error: UnicodeDecodeError) -> None:
    """Raise when a file that failed as UTF-8 still holds UTF-8 characters: a fallback encoding would garble them.

    A file saved in two encodings (say UTF-8 with one line pasted from a Windows-1252 document) decodes as
    ISO-8859-1 without an error, but every UTF-8 character becomes mojibake (``é`` -> ``Ã©``), silently.
    """
    utf8 = _UTF8_MULTIBYTE.search(data)
    if utf8 is None:
        return
    bad_line, bad_column = _line_and_column(data, error.start)
    good_line, _ = _line_and_column(data, utf8.start())
    raise ValueError(f"{path}: mixed encodings: line {good_line} has UTF-8 text "
                     f"({utf8.group().decode('utf-8')!r}) but line {bad_line} has byte 0x{data[error.start]:02x} "
                     f"at column {bad_column}, which is not UTF-8; save the file in one encoding (UTF-8)")
