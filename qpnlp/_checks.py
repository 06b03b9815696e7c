"""The one check of a seed, for every trainer (classification, matching, Word2Fun).

``TrainConfig(seed=...)`` of :mod:`qpnlp.training` (which turns the error
into its ``ConfigError``), Word2Fun's ``TrainConfig`` and every command's
``--seed`` go through :func:`check_seed`, so that one rule says which seeds
qpnlp takes and a bad one fails when the config is made, not after the data
was read. Also :func:`check_flag`, the one check of a True/False option (a string ``"no"`` is truthy),
:func:`check_real`, the one check of a finite real hyper-parameter, for every layer, and :func:`check_lr`, of the
learning rate of a single step; :func:`checked_copy`, the copy of a config that a trainer or a model keeps (its
checks run again),
:func:`str_array`, the words of an ``.npz`` file, checked before it is written, and
:func:`time_values`, the one reader of a sequence of times (the query times of ``KeyedVectors``, the times of
``Word2Fun.indicators``, the years of the drift measures, the times of the temporal plots).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import torch

from qpnlp._host import float64_values, host_array

__all__ = ["FLOAT32_MAX", "SEEDS", "add_param_group_fitting", "check_flag", "check_lr", "check_rate_fits", "check_real",
           "check_seed", "checked_copy", "is_integer", "is_real", "runaway_limit", "str_array", "time_values"]

#: The largest float32 (about 3.4e38): the largest learning rate every trainer takes (a larger one meets float32
#: parameters as inf, or torch's "cannot be converted to type float without overflow").
FLOAT32_MAX = 3.4028234663852886e38

#: Seeds are in [0, SEEDS): what ``np.random.seed`` (and so ``qpnlp.training.seed_everything``) accepts. Word2Fun's
#: ``torch.Generator.manual_seed`` (below 2**64) and ``np.random.default_rng`` take these too, with room for the
#: offsets of its per-worker and per-process seeds.
SEEDS = 2 ** 32

_ConfigT = TypeVar("_ConfigT")


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


def check_flag(name: str, value: object) -> bool:
    """``value`` if it is a bool; TypeError naming ``name`` otherwise (``"no"`` or 1 would be truthy).

    >>> check_flag("unitary", "no")
    Traceback (most recent call last):
    ...
    TypeError: unitary must be True or False; got str 'no'
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False; got {type(value).__name__} {value!r}")
    return value


def check_real(name: str, value: object, what: str = "a finite number", *, tensors: bool = True) -> float:
    """``value`` as a float if it is a finite real number (Python or NumPy; a bool is not), else an error naming it.

    TypeError for anything that is not a real number (a string, a list, a bool), ValueError for NaN and
    infinities, and for an integer too large for a float (``10**400``, which ``float`` cannot hold): the
    hyper-parameters of the layers (``eps``, a fixed bias, a scale, a mixing weight, a step size), where NaN
    would pass every range test (``not nan < 0``) and turn every output into NaN. A static check on a Python
    number: the callers skip it for tensors (no host synchronisation). ``what`` is the expectation in the message
    (the caller's range, e.g. ``"a finite number >= 0"``); the caller checks the range. A one-element real tensor
    given to a constructor is read as its number; ``tensors=False`` refuses tensors (TypeError), for options kept
    in a config that is written as JSON.
    """
    if tensors and isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex() \
            and not value.is_meta:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {what}; got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:                    # an int beyond 1.8e308 (float() raised, math.isfinite too)
        raise ValueError(f"{name} must be {what}; got {type(value).__name__} too large for a float") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be {what}; got {value!r}")
    return number


def check_lr(lr: object) -> float:
    """``lr`` as a float if it is a learning rate :math:`0 < \\eta \\le` :data:`FLOAT32_MAX` (a real number or a
    one-element tensor, read on the host), else an error naming ``lr``: TypeError for a non-number, ValueError for
    NaN, an infinity, ``lr <= 0`` or a rate larger than the largest float32.

    The one check of the rate given to a single step (Word2Fun's ``sgd_step``, ``centre_sgd_step`` and
    ``fused_sgd_step``), in the words of ``TrainConfig``'s check: a bad rate wrote NaN or inf into every table a
    step touched, with no error (a negative one stepped up the loss). Loops that compute their rates from a checked
    config step without it.

    >>> check_lr(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: lr must be positive and finite, at most 3.403e+38, the largest float32; got nan
    """
    what = f"positive and finite, at most {FLOAT32_MAX:.4g}, the largest float32"
    number = check_real("lr", lr, what)
    if not 0 < number <= FLOAT32_MAX:
        raise ValueError(f"lr must be {what}; got {number:g}")
    return number


def add_param_group_fitting(optimiser: torch.optim.Optimizer, param_group: dict, gain: float = 1.0,
                            why: str = "", check=None) -> None:
    """torch's ``add_param_group``, then ValueError naming ``lr`` when the group's rate times ``gain`` is larger than
    the largest value of a parameter's dtype (:data:`FLOAT32_MAX` for a float32 or complex64 table), or when
    ``check(group)`` (an optimiser's own check of the stored group, e.g. of its parameters' shapes) raises one; the
    group is removed again.

    The one overflow check of qpnlp's optimisers, as ``TrainConfig`` checks its rates: the step ``lr * update`` is
    inf there, and the parameters became inf or NaN with no error (or met torch's "value cannot be converted to type
    float without overflow", which names nothing). ``gain`` (>= 1) bounds ``|update|`` where it can exceed 1, as
    RMSprop's :math:`g / \\sqrt{s}` does, and ``why`` says so in the message. The caller checks that ``lr`` is
    finite and positive.

    >>> add_param_group_fitting(torch.optim.SGD([torch.zeros(1)]), dict(params=[torch.zeros(2)], lr=1e39))
    Traceback (most recent call last):
    ...
    ValueError: lr must be at most 3.403e+38, the largest torch.float32 (parameter 0 of its group); got 1e+39
    >>> add_param_group_fitting(torch.optim.SGD([torch.zeros(1)]), dict(params=[torch.zeros(2)], lr=1e38), 10.0,
    ...                         "its step multiplies lr by up to 10")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: lr must be at most 3.403e+37, the largest torch.float32 / 10 (its step ...); got 1e+38
    """
    torch.optim.Optimizer.add_param_group(optimiser, param_group)
    try:
        check_rate_fits(optimiser.param_groups[-1], gain, why)
        if check is not None:
            check(optimiser.param_groups[-1])
    except ValueError:
        optimiser.param_groups.pop()
        raise


def check_rate_fits(group: dict, gain: float = 1.0, why: str = "", where: str = "its group") -> None:
    """ValueError naming ``lr`` when ``group["lr"]`` times ``gain`` is larger than the largest value of a parameter's
    dtype (``group``: a param group, ``where``: how the message names it): the limit of
    :func:`add_param_group_fitting`, which an optimiser's step calls again on a rate changed in its
    ``param_groups`` (a scheduler's, one's own): a float comparison per parameter, no tensor read.

    >>> check_rate_fits(dict(params=[torch.zeros(2)], lr=1e39), where="param_groups[0]")
    Traceback (most recent call last):
    ...
    ValueError: lr must be at most 3.403e+38, the largest torch.float32 (parameter 0 of param_groups[0]); got 1e+39
    """
    for index, param in enumerate(group["params"]):
        largest = torch.finfo(param.dtype).max if param.is_floating_point() or param.is_complex() else math.inf
        if group["lr"] > largest / gain:
            factor = f" / {gain:.4g} ({why})" if gain != 1 else ""
            raise ValueError(f"lr must be at most {largest / gain:.4g}, the largest {param.dtype.to_real()}{factor} "
                             f"(parameter {index} of {where}); got {group['lr']:g}")


def check_seed(seed) -> int:
    """``seed`` if it is an integer in [0, 2**32) (:data:`SEEDS`), else ``ValueError``."""
    if not is_integer(seed) or not 0 <= seed < SEEDS:
        raise ValueError(f"seed must be an integer in [0, 2**32 - 1]; got {seed!r}")
    return seed


def checked_copy(config: _ConfigT) -> _ConfigT:
    """A deep copy of the dataclass ``config``, made by its constructor: its checks (``__post_init__``) run again.

    A config is checked when it is made; a field set afterwards (``config.epochs = 0`` in a notebook) was not.
    The trainers and the models keep this copy instead of the caller's object: a bad value fails there, naming
    the field, and later changes to ``config`` (or to a list it holds) reach neither a running training nor a
    built model, whose ``save_pretrained`` would otherwise write the settings of another model.

    Parameters
    ----------
    config : dataclass instance
        A training or model config (another object is deep-copied only: it has no fields to check).
    """
    if not dataclasses.is_dataclass(config):
        return copy.deepcopy(config)
    values = {f.name: copy.deepcopy(getattr(config, f.name)) for f in dataclasses.fields(config) if f.init}
    return dataclasses.replace(config, **values)


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


def time_values(times, name: str = "times", *, not_a_sequence: type[Exception] = TypeError,
                not_numbers: type[Exception] = TypeError, allow_empty: bool = True, finite: bool = True) -> np.ndarray:
    """``times`` (any iterable of real numbers: a list, a generator read once, a numpy array, a tensor of any
    layout) as a float64 array of shape (T,).

    Errors name ``name``: ``not_a_sequence`` (the caller's ``TypeError`` or ``ValueError``) for one number or a
    string instead of a sequence, ``not_numbers`` for items that are no numbers
    (:func:`~qpnlp._host.float64_values`), ``TypeError`` for complex numbers (never their real part), ``ValueError``
    for another shape than (T,), for no time at all (unless ``allow_empty``) and for a NaN or an infinite time (if
    ``finite``; else they are the caller's to refuse).

    >>> time_values(t for t in (1950, 1960.5)).tolist()
    [1950.0, 1960.5]
    >>> time_values(1950, "years")
    Traceback (most recent call last):
    ...
    TypeError: years must be a sequence of raw times (e.g. [1950]); got int 1950
    """
    times = host_array(times)                       # any tensor: grad, device, conj/neg bits, bfloat16
    # one time, not a sequence: a 0-d array has __iter__ (np.ndim would read a list of grad tensors, and fail)
    if isinstance(times, (str, bytes)) or not hasattr(times, "__iter__") or getattr(times, "ndim", 1) == 0:
        raise not_a_sequence(f"{name} must be a sequence of raw times (e.g. [{times!r}]); got "
                             f"{type(times).__name__} {times!r}")
    values = float64_values(times, name, not_numbers=not_numbers)
    if values.ndim != 1:                            # a (2, 2) table of times was read row by row, or flattened
        raise ValueError(f"{name} must be one-dimensional (T,), one number per time; got shape {values.shape}")
    if not allow_empty and values.size == 0:
        raise ValueError(f"{name} is empty: give one or more times")
    bad = np.flatnonzero(~np.isfinite(values)) if finite else ()
    if len(bad):
        raise ValueError(f"{name} must be finite; got {values[bad[0]]} at index {int(bad[0])}")
    return values
