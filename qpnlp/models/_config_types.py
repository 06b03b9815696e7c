"""A model config's fields: their defaults (:func:`field_default`), their types (:func:`field_hints`: the
annotations as :func:`typing.get_type_hints` resolves them, read with :func:`typing.get_origin` /
:func:`typing.get_args`, never by parsing their text) and their JSON types: a value read from ``config.json`` (or
given to the config) must be of the type its field's annotation names, items of a list or tuple too
(:meth:`~qpnlp.models.base.ModelConfig.from_dict`, ``__post_init__``)."""

from __future__ import annotations

import dataclasses
import math
import sys
import types
import typing
import weakref
from typing import Any

from qpnlp._errors import preview


def field_default(field: dataclasses.Field) -> Any:
    """The default value of a dataclass ``field`` (its ``default``, or a new ``default_factory()``), or
    :data:`dataclasses.MISSING` for a field without one (``num_words``)."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


_JSON_TYPES = {int: (int,), float: (int, float), bool: (bool,), str: (str,)}


@dataclasses.dataclass(frozen=True)
class Unresolved:
    """A field's annotation string that does not name a type where its class is defined (``Vectors | None`` with
    ``Vectors`` imported under ``if TYPE_CHECKING:``): ``text`` as written and ``reason``, the error that resolving it
    raised. The field has no command-line option and its values are not type-checked."""
    text: str
    reason: str

    def __str__(self) -> str:
        return self.text


_HINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def field_hints(config_class: type) -> dict[str, Any]:
    """``{field: type}`` of a dataclass, its annotations resolved by :func:`typing.get_type_hints` (a string under
    ``from __future__ import annotations``, a type object otherwise): ``int``, ``list[float] | None``.

    Where the class' hints do not all resolve, each field is resolved alone, in the namespace of the class that
    declares it (its module's names, then typing's: ``Optional[int]`` in a class built by ``make_dataclass``); a
    field that still does not resolve is an :class:`Unresolved`. Cached per class once every field resolves.
    """
    cached = _HINTS.get(config_class)
    if cached is not None:
        return cached
    fields = dataclasses.fields(config_class)
    try:
        resolved = typing.get_type_hints(config_class)
        hints = {f.name: resolved[f.name] for f in fields}
    except Exception:                            # NameError, TypeError, SyntaxError... from one of them
        hints = {f.name: _resolve_alone(config_class, f) for f in fields}
    if not any(isinstance(h, Unresolved) for h in hints.values()):
        _HINTS[config_class] = hints
    return hints


def _resolve_alone(config_class: type, field: dataclasses.Field) -> Any:
    """One field's annotation resolved by :func:`typing.get_type_hints`, or an :class:`Unresolved`."""
    if not isinstance(field.type, str):
        return field.type
    owner = next((c for c in config_class.__mro__ if field.name in vars(c).get("__annotations__", {})), config_class)
    module = sys.modules.get(owner.__module__)
    namespace = {**vars(typing), **(vars(module) if module is not None else {})}
    try:
        return typing.get_type_hints(types.SimpleNamespace(__annotations__={"hint": field.type}), namespace,
                                     dict(vars(owner)))["hint"]
    except Exception as err:
        return Unresolved(field.type, f"{type(err).__name__}: {err}")


def spelling(hint: Any) -> str:
    """A resolved annotation in one spelling: ``"int"``, ``"list[int]"``, ``"float | None"``, ``"tuple[str, ...]"``,
    ``"Literal['a', 'b']"``. ``Optional[X]``, ``Union[X, None]``, ``None | X`` all read ``"X | None"`` (None last);
    ``typing.List[X]`` reads ``"list[X]"``."""
    if hint is type(None) or hint is None:
        return "None"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        base, optional = optional_base(hint)
        members = typing.get_args(base) if typing.get_origin(base) in (typing.Union, types.UnionType) else (base,)
        return " | ".join([spelling(m) for m in members] + ["None"] * optional)
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if origin is not None and args:
        return f"{getattr(origin, '__name__', origin)}[{', '.join('...' if a is ... else spelling(a) for a in args)}]"
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")


def field_annotation(config_class: type, name: str) -> str:
    """The :func:`spelling` of the field ``name``'s resolved annotation (:func:`field_hints`); an unresolved one as
    written."""
    return spelling(field_hints(config_class)[name])


def optional_base(hint: Any) -> tuple[Any, bool]:
    """``(base, optional)`` of a resolved annotation: ``(list[float], True)`` for ``list[float] | None`` (or
    ``Optional[list[float]]``), ``(int, False)`` for ``int``; a union of several types keeps them all
    (``int | str``)."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint, False
    members = [m for m in typing.get_args(hint) if m is not type(None)]
    optional = len(members) < len(typing.get_args(hint))
    return (members[0] if len(members) == 1 else typing.Union[tuple(members)]), optional


def item_hints(hint: Any) -> tuple[Any, ...] | None:
    """The item types of a ``list`` / ``tuple`` annotation, one for ``list[X]`` and ``tuple[X, ...]``
    (``(X,)``), each for ``tuple[A, B]``, ``()`` for a bare ``list`` / ``tuple``; None for any other annotation."""
    origin, args = typing.get_origin(hint) or hint, typing.get_args(hint)
    if origin not in (list, tuple):
        return None
    return args[:1] if origin is list or args[1:] == (...,) else args


def _check_json_type(config_class: type, name: str, value: Any) -> None:
    """Refuse a config value whose JSON type does not match the field's resolved annotation (scalars, literals and
    lists, tuples and dicts, their items too)."""
    hint = field_hints(config_class)[name]
    owner = config_class.__name__
    if not _matches(hint, value):
        raise ValueError(f"{owner}.{name} must be {spelling(hint)}; got {type(value).__name__} "
                         f"{preview(value, 60)}")
    if not _finite_floats(hint, value):
        what = "a float" if optional_base(hint)[0] is float else "floats"
        raise ValueError(f"{owner}.{name} must be finite ({what}); got {preview(value, 60)}")


def _matches(hint: Any, value: Any) -> bool:
    """Whether ``value`` is of the JSON type ``hint`` names (True for an annotation without one: not checked)."""
    if hint is type(None):
        return value is None
    if isinstance(hint, type) and hint in _JSON_TYPES:
        return isinstance(value, _JSON_TYPES[hint]) and (hint is bool or not isinstance(value, bool))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(m, value) for m in args)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if dict in (hint, origin):
        return isinstance(value, dict)
    items = item_hints(hint)
    if items is None:
        return True
    if not isinstance(value, list if list in (hint, origin) else (list, tuple)):
        return False
    if len(items) > 1 and len(items) != len(value):
        return False
    return all(_matches(h, v) for h, v in zip(_cycle(items, value), value))


def _finite_floats(hint: Any, value: Any) -> bool:
    """Whether the items ``hint`` declares ``float`` in a ``value`` of that type are finite."""
    base = optional_base(hint)[0]
    if base is float:
        return value is None or _finite(value)
    items = item_hints(base)
    if not items or not isinstance(value, (list, tuple)):
        return True
    return all(_finite_floats(h, v) for h, v in zip(_cycle(items, value), value))


def _cycle(items: tuple, value: Any) -> tuple:
    """The item type of each item of ``value``: ``items`` for a fixed-length tuple, else its one item type."""
    return items if len(items) > 1 else items * len(value)


def _finite(value: float) -> bool:
    """A finite float (an int beyond the float range, 10**400, is not: ``math.isfinite`` raised OverflowError)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False

