"""qpnlp's environment variables, read one way: a blank value is an unset one, a bad one an error naming it.

Each is read where it is used, at every use (not cached at import), so that
``os.environ["QPNLP_COMPILED"] = "0"`` in a notebook after ``import qpnlp``
takes effect at the next call.  The list, with values and defaults, is the
"Environment variables" section of ``docs/getting-started.md``.

* :func:`text`: the value, stripped; ``None`` where unset or blank;
* :func:`flag`: a switch, ``0``/``1`` (or ``false``/``true``, ``no``/``yes``,
  ``off``/``on``, in any case: :func:`boolean`, which also reads the items of a
  ``list[bool]`` model option and the switches of a selection grid);
* :func:`count`: a whole number >= 0 (torchrun's ``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``).
"""

from __future__ import annotations

import os

__all__ = ["text", "flag", "boolean", "count", "SWITCHES"]

#: The spellings of a switch (lower case; read in any case), wherever qpnlp reads one from text (:func:`boolean`).
SWITCHES = {"0": False, "false": False, "no": False, "off": False, "1": True, "true": True, "yes": True, "on": True}


def text(name: str) -> str | None:
    """The value of the environment variable ``name`` without surrounding blanks; ``None`` where it is unset or
    blank (``QPNLP_DATA=`` is no data root, not the working directory)."""
    value = os.environ.get(name, "").strip()
    return value or None


def flag(name: str, default: bool) -> bool:
    """The switch ``name``: ``default`` where unset or blank, else its value.

    Raises ``ValueError`` naming the variable for any other value than ``0``/``1``, ``false``/``true``,
    ``no``/``yes``, ``off``/``on`` (case-insensitive): ``QPNLP_COMPILED=2`` or ``=maybe`` used to count as on.
    """
    if text(name) is None:
        return default
    return boolean(os.environ[name], name)


def boolean(value: str, name: str) -> bool:
    """``value`` as a switch (:data:`SWITCHES`): ``1``, ``true``, ``yes``, ``on`` are True, ``0``, ``false``,
    ``no``, ``off`` False, in any case and with surrounding blanks; ``ValueError`` naming ``name`` and the spellings
    for any other.

    The one reading of a switch written as text: an environment variable (:func:`flag`), an item of a
    ``list[bool]`` model option (``qpnlp.commands._config_options``), a switch of a selection grid
    (:func:`qpnlp.training.classification.parse_grid`, where ``0`` and ``1`` are numbers).

    >>> boolean(" Yes", "QPNLP_COMPILED")
    True
    >>> boolean("maybe", "QPNLP_COMPILED")
    Traceback (most recent call last):
    ...
    ValueError: QPNLP_COMPILED must be 0 or 1 (or false/true, no/yes, off/on); got 'maybe'
    """
    try:
        return SWITCHES[value.strip().lower()]
    except KeyError:
        raise ValueError(f"{name} must be 0 or 1 (or false/true, no/yes, off/on); got {value!r}") from None


def count(name: str, default: int) -> int:
    """The whole number >= 0 that ``name`` holds: ``default`` where unset or blank; ``ValueError`` naming the
    variable otherwise (``WORLD_SIZE=two`` raised int()'s "invalid literal for int() with base 10")."""
    value = text(name)
    if value is None:
        return default
    if not value.isascii() or not value.isdigit():
        raise ValueError(f"{name} must be a whole number >= 0; got {os.environ[name]!r}")
    return int(value)
