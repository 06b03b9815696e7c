"""argparse types of the CLI options: counts, rates, finite numbers, seeds, ``--length-chunks``, devices and paths.

Each refuses a bad value with argparse's one-line error ("argument --lr:
must be a finite number > 0; got -1"), before any work. :data:`DEVICE_HELP`
is the help of every command's ``--device``.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import Any

from qpnlp._device import SUPPORTED, resolve_device
from qpnlp.training.config import MAX_RATE, ConfigError, check_seed


def _converted(text: str, convert: Callable[[str], Any], expected: str) -> Any:
    """``convert(text)``; a ``ValueError`` becomes argparse's error "expected {expected}; got 'text'"."""
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}") from None


def count_type(minimum: int = 1) -> Callable[[str], int]:
    """argparse type: an integer >= ``minimum``."""
    def parse(text: str) -> int:
        value = _converted(text, int, f"an integer >= {minimum}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}; got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def chunk_overhead_type(text: str) -> int | None:
    """argparse type of ``--length-chunks``: an integer >= 0, or ``off`` (None)."""
    if text.strip().lower() == "off":
        return None
    return count_type(0)(text)


chunk_overhead_type.__name__ = "length-chunks value"


def seed_type(text: str) -> int:
    """argparse type of ``--seed``: an integer in [0, 2**32 - 1] (:func:`~qpnlp.training.config.check_seed`)."""
    value = _converted(text, int, "an integer")
    try:
        return check_seed(value)
    except ConfigError:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**32 - 1]; got {value}") from None


seed_type.__name__ = "seed"


def finite_type(text: str) -> float:
    """argparse type: a finite number of either sign (``nan`` and ``inf`` are refused)."""
    value = _converted(text, float, "a number")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number; got {text}")
    return value


finite_type.__name__ = "number"


def rate_type(*, zero: bool = False) -> Callable[[str], float]:
    """argparse type: a finite number > 0 (>= 0 with ``zero``) that float32 holds (at most
    :data:`~qpnlp.training.config.MAX_RATE`, about 3.4e38: rates, decays and margins meet float32 parameters)."""
    def parse(text: str) -> float:
        value = _converted(text, float, "a number")
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>=' if zero else '>'} 0; got {text}")
        if value > MAX_RATE:
            raise argparse.ArgumentTypeError(f"must be at most {MAX_RATE:.4g} (the largest float32); got {text}")
        return value
    parse.__name__ = "number"
    return parse


# The help of every command's --device: the names device_type accepts.
DEVICE_HELP = f"{SUPPORTED}: a device this machine has (default %(default)s)"


def device_type(value: str) -> str:
    """argparse type: a torch device this machine has (``cpu``, ``cuda``, ``cuda:N``, ``mps``)."""
    try:
        resolve_device(value, cpu="--device cpu")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def path_type(text: str) -> str:
    """argparse type of an output path: a leading ``~`` expanded (``--save=~/model``: the shell leaves a tilde after
    ``=``, and the files went to a directory named ``~`` in the working directory)."""
    return os.path.expanduser(text)


path_type.__name__ = "path"
