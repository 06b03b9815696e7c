"""Nested JSON-like values walked one way: the leaves of dicts, lists and tuples, each with its key path.

A key path names where a leaf lies in the whole value, built from the path of
the whole (``where``, ``""`` at the top): ``where.key`` below a dict's key
(``key`` alone at the top), ``where[i]`` at position ``i`` of a list or tuple.
So ``{"a": (1, nan), "b": {"c": inf}}`` has the leaves ``a[0]``, ``a[1]`` and
``b.c``. Everything else (a number, a string, a NumPy or torch scalar, None) is
a leaf, given as it is: each caller reads leaves its own way.

Two callers: :func:`qpnlp.training.state.non_finite_value` (the first NaN or
infinity of a history entry, named by its path) and
:func:`qpnlp.commands._report.json_ready` (a report's values as strict JSON,
the non-finite ones named).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["leaves", "map_leaves"]


def _children(value, where: str) -> Iterator[tuple[str | int, str, Any]] | None:
    """``(key, path, child)`` for each item of a dict, list or tuple ``value`` whose path is ``where``, in order
    (a dict's key as a string); None for a leaf."""
    if isinstance(value, dict):
        return ((str(k), f"{where}.{k}" if where else str(k), v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ((i, f"{where}[{i}]", v) for i, v in enumerate(value))
    return None


def leaves(value, where: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` for every leaf of ``value``, depth first in the order of its items; ``value`` itself when
    it is a leaf (path ``where``). An empty dict or list has none.

    >>> list(leaves({"a": (1, 2.5), "b": {"c": None}}))
    [('a[0]', 1), ('a[1]', 2.5), ('b.c', None)]
    """
    children = _children(value, where)
    if children is None:
        yield where, value
        return
    for _, path, child in children:
        yield from leaves(child, path)


def map_leaves(value, leaf: Callable[[str, Any], Any], where: str = ""):
    """A copy of ``value`` with every leaf replaced by ``leaf(path, leaf)``, called in the order of
    :func:`leaves`: dicts as dicts with string keys, lists and tuples as lists (as JSON holds them). ``value`` is
    not modified.

    >>> map_leaves({"a": (1, 2), 3: "x"}, lambda path, v: f"{path}={v}")
    {'a': ['a[0]=1', 'a[1]=2'], '3': '3=x'}
    """
    children = _children(value, where)
    if children is None:
        return leaf(where, value)
    mapped = [(key, map_leaves(child, leaf, path)) for key, path, child in children]
    return dict(mapped) if isinstance(value, dict) else [child for _, child in mapped]
