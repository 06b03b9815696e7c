"""The one check of a seed, for every trainer (classification, matching, Word2Fun).

``TrainConfig(seed=...)`` of :mod:`qpnlp.training` (which turns the error
into its ``ConfigError``), Word2Fun's ``TrainConfig`` and every command's
``--seed`` go through :func:`check_seed`, so that one rule says which seeds
qpnlp takes and a bad one fails when the config is made, not after the data
was read. Also :func:`str_array`, the words of an ``.npz`` file, checked before it is written.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

__all__ = ["FLOAT32_MAX", "SEEDS", "check_seed", "is_integer", "is_real", "runaway_limit", "str_array"]

#: The largest float32 (about 3.4e38): the largest learning rate every trainer takes (a larger one meets float32
#: parameters as inf, or torch's "cannot be converted to type float without overflow").
FLOAT32_MAX = 3.4028234663852886e38

#: Seeds are in [0, SEEDS): what ``np.random.seed`` (and so ``qpnlp.training.seed_everything``) accepts. Word2Fun's
#: ``torch.Generator.manual_seed`` (below 2**64) and ``np.random.default_rng`` take these too, with room for the
#: offsets of its per-worker and per-process seeds.
SEEDS = 2 ** 32


def runaway_limit(largest: float) -> float:
    r"""The magnitude past which a trained parameter has run away, for every trainer: :math:`10^{-3}\sqrt{m}`, ``m``
    the largest value of its dtype (``largest``, e.g. ``torch.finfo(p.dtype).max``): 1.8e16 in float32, where a
    product of two such values (a dot product, a norm) is near overflow.

    >>> f"{runaway_limit(FLOAT32_MAX):.3g}"
    '1.84e+16'
    """
    return 1e-3 * math.sqrt(largest)


def is_integer(value) -> bool:
    """Whether ``value`` is an integer, a Python or a NumPy one (a bool is not)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    """Whether ``value`` is a real number, a Python or a NumPy one (a bool is not, nor a list or an array)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_seed(seed) -> int:
    """``seed`` if it is an integer in [0, 2**32) (:data:`SEEDS`), else ``ValueError``."""
    if not is_integer(seed) or not 0 <= seed < SEEDS:
        raise ValueError(f"seed must be an integer in [0, 2**32 - 1]; got {seed!r}")
    return seed


def str_array(words: Sequence[str], name: str = "words") -> np.ndarray:
    """``words`` (W,) as the NumPy str array that :func:`numpy.savez` stores, shape (W,) (``<U1`` when empty).

    ``ValueError`` naming the first word that ends in a NUL character (``name`` names the list): NumPy's
    fixed-width strings drop trailing NULs, so it would be saved as another word (``"a\\x00"`` as ``"a"``,
    ``"\\x00"`` as ``""``) and the file would read back with other words, silently. Nothing else is refused: NumPy
    keeps every other string as it is (whitespace, commas, quotes, a NUL inside a word, the empty string).

    >>> str_array(["a b", "", "x\\ty"]).tolist()
    ['a b', '', 'x\\ty']
    """
    words = list(words)
    bad = next((i for i, w in enumerate(words) if isinstance(w, str) and w.endswith("\x00")), None)
    if bad is not None:
        raise ValueError(f"{name}[{bad}] is {words[bad]!r}: a word that ends in a NUL character cannot be saved in "
                         f"an .npz file (NumPy drops trailing NULs: it would read back as "
                         f"{words[bad].rstrip(chr(0))!r})")
    return np.asarray(words, dtype=str)
