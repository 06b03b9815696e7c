"""Read a chronogram model file (``Chronogram.save(path)``, format version 4, or version 3) with NumPy.

Chronogram 0.2.0's Python API gives a word's time-dependent input vector (``embedding(word, time)``) but not the
output (context) vectors of its skip-gram likelihood, which the held-out score needs. Its save file holds them. The
layout, from ``ChronoGramModel::saveModel`` and the serialisers of ``IOUtils.h`` / ``ChronoGramModel.h`` at tag
v0.2.0 of github.com/bab2min/chronogram (little-endian, no padding):

* ``b"CHGR"``, uint32 version (3: the matrices as float32; 4, what ``save`` writes by default: the matrices in
  a variable-length code, below);
* uint32 ``s`` and ``s`` bytes of ``HyperParameter`` (uint32 dimension ``D``, uint32 order ``R``, then 18 more
  4-byte fields; the last, ``useSubwordOut``, at byte 76);
* float32 ``zBias``, ``zSlope``;
* the vocabulary: uint32 ``V``, then per word uint32 length and its UTF-8 bytes; uint32 ``V`` and ``V`` uint64
  frequencies;
* the subword vocabulary (same layout, ``SV`` words), uint32 count + uint32 ``subwordTable``, uint32 count + uint64
  ``subwordTablePtrs``;
* the matrices in Eigen's column-major order, without sizes: ``in`` (D, R V), ``subwordIn``
  (D, R SV), ``out`` (D, V), and ``subwordOut`` (D, SV) when ``useSubwordOut``; version 4 writes each value
  ``x`` as ``n = int(4096 x)`` (``IOUtils.cpp``, ``writeFloatVL``): one byte ``n & 0x7F`` for ``-64 <= n < 64``,
  else two bytes ``0x80 | (n >> 8 & 0x7F)``, ``n & 0xFF`` for ``-16384 <= n < 16384``, clipped to that range
  beyond (so values are kept to 1/4096 and within [-4, 4));
* float32 ``timePadding``, ``R`` float32 ``timePrior``.

Column-major (D, V) is row-major (V, D): ``out[v]`` is word ``v``'s output vector. Reading checks the magic, the
version and that the file ends where the layout does, so a file of another layout is refused, not misread.

(``save(path, compressed=False)`` would write version 3, but 0.2.0's binding parses ``compressed`` as a
``Py_ssize_t`` into a C ``int``, and the call fails with "writing type 'j' failed".)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

__all__ = ["ChronogramFile", "read_chronogram"]


@dataclass(frozen=True)
class ChronogramFile:
    """What a chronogram file holds that the held-out score needs: ``words`` (V), ``output`` (V, D) float32,
    ``input_coefficients`` (V, R, D) float32 (the input vector at a time is their combination with chronogram's
    polynomial coefficients), ``dimension``, ``order``, ``z_bias``, ``z_slope``, ``time_padding``."""

    words: list[str]
    output: np.ndarray
    input_coefficients: np.ndarray
    dimension: int
    order: int
    z_bias: float
    z_slope: float
    time_padding: float


class _Cursor:
    """Reads little-endian values from a bytes object, refusing to run past its end."""

    def __init__(self, data: bytes, path: Path):
        self.data, self.at, self.path = data, 0, path

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.data):
            raise ValueError(f"{self.path}: ends at byte {len(self.data)}, a chronogram v3 file needs more "
                             f"(reading {n} bytes at {self.at})")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def f32(self) -> float:
        return struct.unpack("<f", self.take(4))[0]

    def matrix(self, count: int, version: int) -> np.ndarray:
        """``count`` float32 values of a matrix: as written (version 3) or in the variable-length code (4)."""
        if version == 3:
            return self.array("<f4", count)
        data = np.frombuffer(self.data, np.uint8, offset=self.at)
        values, used = _decode_vl(data, count)
        if used < 0:
            raise ValueError(f"{self.path}: ends inside a matrix of {count} values (from byte {self.at})")
        self.at += used
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize
        return np.frombuffer(self.take(size * count), dtype=dtype)

    def words(self) -> list[str]:
        return [self.take(self.u32()).decode("utf-8") for _ in range(self.u32())]


def read_chronogram(path: str | Path) -> ChronogramFile:
    """The vocabulary, output vectors and input coefficients of a chronogram v3 file (module notes)."""
    path = Path(path)
    cur = _Cursor(path.read_bytes(), path)
    if cur.take(4) != b"CHGR":
        raise ValueError(f"{path}: not a chronogram model file (no CHGR magic)")
    version = cur.u32()
    if version not in (3, 4):
        raise ValueError(f"{path}: chronogram file version {version}; versions 3 and 4 are read")
    hyper = cur.take(cur.u32())
    if len(hyper) < 80:
        raise ValueError(f"{path}: a HyperParameter block of {len(hyper)} bytes, expected at least 80")
    dim, order = struct.unpack_from("<II", hyper, 0)
    use_subword_out = struct.unpack_from("<I", hyper, 76)[0]
    z_bias, z_slope = cur.f32(), cur.f32()
    words = cur.words()
    n_freq = cur.u32()
    cur.array("<u8", n_freq)
    subwords = cur.words()
    cur.array("<u4", cur.u32())
    cur.array("<u8", cur.u32())
    V, SV = len(words), len(subwords)
    if n_freq != V:
        raise ValueError(f"{path}: {V} words but {n_freq} frequencies")
    coefficients = cur.matrix(dim * order * V, version).reshape(V, order, dim)
    cur.matrix(dim * order * SV, version)
    output = cur.matrix(dim * V, version).reshape(V, dim)
    if use_subword_out:
        cur.matrix(dim * SV, version)
    time_padding = cur.f32()
    cur.array("<f4", order)
    if cur.at != len(cur.data):
        raise ValueError(f"{path}: {len(cur.data) - cur.at} bytes left after the layout of a chronogram v3 file")
    return ChronogramFile(words, output.copy(), coefficients.copy(), int(dim), int(order), z_bias, z_slope,
                          time_padding)


@numba.njit(cache=True)
def _decode_vl(data, count):  # pragma: no cover - compiled
    """The first ``count`` values of chronogram's variable-length code in ``data`` and the bytes they took (-1: the
    data ended first). A value's length depends on the one before, so the walk is sequential: compiled, as the
    Python loop would take about a minute for the 10M values of a SOTU model."""
    out = np.empty(count, np.float32)
    at = 0
    for i in range(count):
        if at >= len(data):
            return out, -1
        first = np.int32(data[at])
        if first & 0x80:
            if at + 1 >= len(data):
                return out, -1
            high = (first ^ 0x80) | ((first & 0x40) << 1)
            n = (high << 8) | np.int32(data[at + 1])
            if n >= 32768:
                n -= 65536
            at += 2
        else:
            n = first | ((first & 0x40) << 1)
            if n >= 128:
                n -= 256
            at += 1
        out[i] = n / 4096.0
    return out, at
