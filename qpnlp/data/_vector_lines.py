"""The lines of a vectors text file, as :func:`qpnlp.data.pretrained.load_glove_text` reads them.

A GloVe line is ``word v_1 ... v_d``; a word2vec or fastText ``.vec`` file starts with a header line ``N d``.
Columns are split at runs of spaces or tabs (:data:`COLUMN_SEPARATOR`); a word may hold spaces (GloVe 840B's
``. . .``) when the column before the last d is not a number. Every error names the file and the 1-based line.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from qpnlp._errors import preview

__all__ = ["COLUMN_SEPARATOR", "header_line", "is_float", "parse_vector", "stacked_vectors", "vector_columns"]

#: What separates the columns of a vectors text file: spaces or tabs (GloVe writes one space, some exports a tab).
COLUMN_SEPARATOR = re.compile(r"[ \t]+")


def header_line(parts: list[str], path: Path, dim: int | None) -> tuple[int, int]:
    """``(N, dim)`` of a header line ``N dim`` split into its two columns; ValueError for dim 0 or another than the
    ``dim`` passed (None: any)."""
    announced, header_dim = int(parts[0]), int(parts[1])
    if header_dim < 1:
        raise ValueError(f"{path}:1: the header 'N dim' says dim {header_dim}; expected dim >= 1")
    if dim is not None and dim != header_dim:
        raise ValueError(f"{path}:1: header says dim {header_dim}, expected {dim}")
    return announced, header_dim


def vector_columns(parts: list[str], dim: int, dim_from: str, path: Path, lineno: int) -> list[str]:
    """A split vector line as ``[word, v_1, ..., v_dim]``, the columns before the last ``dim`` joined by spaces
    into the word when the one before them is not a number; ValueError naming the line for a dimension 0 taken
    from it (a single column) or another number of columns (naming where ``dim`` came from, ``dim_from``)."""
    if dim < 1:
        raise ValueError(f"{path}:{lineno}: expected 'word v_1 ... v_d', got a single column")
    if len(parts) > dim + 1 and not is_float(parts[-dim - 1]):  # a word holding spaces (GloVe 840B's ". . .")
        parts = [" ".join(parts[:-dim]), *parts[-dim:]]
    if len(parts) != dim + 1:
        raise ValueError(
            f"{path}:{lineno}: expected {dim + 1} space-separated columns (word + {dim} values), "
            f"got {len(parts)} (the dimension {dim} was {dim_from})"
        )
    return parts


def stacked_vectors(path: Path, rows: list[np.ndarray], dim: int | None, n_vectors: int, announced: int | None,
                    linenos: list[int], words: list[str]) -> np.ndarray:
    """The kept vectors ``rows`` (k of the ``n_vectors`` read) stacked into a (k, dim) float32 matrix; ValueError
    for a file without vectors, a count other than the header's ``announced``, or a non-finite value (naming its
    line, ``linenos``, and word)."""
    if n_vectors == 0:  # an empty file, blank lines, or a header alone
        raise ValueError(f"{path}: no vectors found (expected lines 'word v_1 ... v_d')")
    if announced is not None and announced != n_vectors:
        raise ValueError(f"{path}: the header announces {announced} vectors, the file has {n_vectors}"
                         f"{' (truncated?)' if n_vectors < announced else ''}")
    matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    finite = np.isfinite(matrix).all(1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise ValueError(f"{path}:{linenos[row]}: non-finite value for word {preview(words[row])}")
    return matrix


def parse_vector(parts: list[str], path: Path, lineno: int) -> np.ndarray:
    """The float32 values of a split vector line ``[word, v_1, ..., v_d]``; errors name the line.

    A value beyond float32 (``1e39``) becomes inf without numpy's "overflow encountered in cast" warning: the
    caller's finiteness check refuses it, naming the line. A value with an underscore (``1_0``) is refused as
    non-numeric (:func:`is_float`), by one search of the line's values joined, not one per value."""
    try:
        if "_" in "".join(parts[1:]):   # numpy, like float(), reads Python's digit grouping: "1_0" was 10
            raise ValueError
        with np.errstate(over="ignore"):
            vec = np.asarray(parts[1:], dtype=np.float32)
    except ValueError:
        bad = next(p for p in parts[1:] if not is_float(p))
        raise ValueError(f"{path}:{lineno}: non-numeric value {preview(bad)} for word {preview(parts[0])}") from None
    return vec


def is_float(s: str) -> bool:
    """Whether ``s`` is a number of a vector file: one ``float`` reads (``"nan"`` and ``"inf"`` too), without the
    underscores of Python's digit grouping (``float("1_0")`` is 10; no vector file writes one)."""
    if "_" in s:
        return False
    try:
        float(s)
    except ValueError:
        return False
    return True
