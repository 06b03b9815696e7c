"""A model config's fields: their defaults (:func:`field_default`), and their JSON types: a value read from
``config.json`` (or given to the config) must be of the type its field's annotation names
(:meth:`~qpnlp.models.base.ModelConfig.from_dict`, ``__post_init__``)."""

from __future__ import annotations

import dataclasses
import math
import re
import typing
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


_JSON_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}


def field_annotation(field: dataclasses.Field) -> str:
    """The annotation of a dataclass ``field`` in one spelling: ``"int"``, ``"list[int]"``, ``"float | None"``,
    whether the module has ``from __future__ import annotations`` (a string, as written) or not (a type object:
    ``int``, ``list[int]``, ``typing.Optional[float]``). ``Optional[X]``, ``Union[X, None]``, ``Union[None, X]``,
    ``None | X`` and ``X | None`` all read ``"X | None"`` (None last); ``typing.List[X]`` reads ``"list[X]"``."""
    hint = field.type
    annotation = hint.__name__ if isinstance(hint, type) and not typing.get_args(hint) else \
        str(hint).replace("typing.", "").replace("NoneType", "None")
    members = list(dict.fromkeys(_union_members(_ALIASES.sub(lambda m: m[1].lower(), annotation))))
    return " | ".join([m for m in members if m != "None"] + ["None"] * ("None" in members))


def optional_base(annotation: str) -> tuple[str, bool]:
    """``(base, optional)`` of a :func:`field_annotation`: ``("list[float]", True)`` for ``"list[float] | None"``,
    ``("int", False)`` for ``"int"``; a union of several types keeps them all (``"int | str"``)."""
    base, optional = annotation.removesuffix(" | None"), annotation.endswith(" | None")
    return ("None", False) if annotation == "None" else (base, optional)


# typing's capitalised aliases of the builtin generics (typing.List[float] is list[float])
_ALIASES = re.compile(r"\b(List|Tuple|Dict)\b")


def _union_members(annotation: str) -> list[str]:
    """The members of a union written ``A | B``, ``Optional[A]`` or ``Union[A, B]`` (nested too), in written order:
    ``["None", "list[float]"]`` for ``"Union[None, list[float]]"``; one member for any other annotation."""
    members: list[str] = []
    for part in _split_top(annotation, "|"):
        for prefix, extra in (("Optional[", ["None"]), ("Union[", [])):
            if part.startswith(prefix) and part.endswith("]"):
                members += [m for inner in _split_top(part[len(prefix):-1], ",") for m in _union_members(inner)]
                members += extra
                break
        else:
            members.append(part)
    return members


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets, each part stripped: ``"dict[str, int], None"`` at ``,`` is
    ``["dict[str, int]", "None"]``."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if char == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def _check_json_type(owner: str, name: str, field: dataclasses.Field, value: Any) -> None:
    """Refuse a config value whose JSON type does not match the field's annotation (scalars and lists)."""
    annotation = field_annotation(field)
    base, optional = optional_base(annotation)
    if value is None and optional:
        return
    if base in _JSON_TYPES:
        allowed = _JSON_TYPES[base]
        ok = isinstance(value, allowed) and (base == "bool" or not isinstance(value, bool))
        if ok and base == "float" and not _finite(value):
            raise ValueError(f"{owner}.{name} must be finite (a float); got {preview(value, 60)}")
    elif base.startswith("list"):
        ok = isinstance(value, list) and _items_match(base, value)
        if ok and "float" in base and not all(_finite(v) for v in value):
            raise ValueError(f"{owner}.{name} must be finite (floats); got {preview(value, 60)}")
    elif base.startswith("tuple"):
        ok = isinstance(value, (list, tuple))
    elif base.startswith("dict"):
        ok = isinstance(value, dict)
    else:
        return
    if not ok:
        raise ValueError(f"{owner}.{name} must be {annotation}; got {type(value).__name__} {preview(value, 60)}")


def _finite(value: float) -> bool:
    """A finite float (an int beyond the float range, 10**400, is not: ``math.isfinite`` raised OverflowError)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _items_match(annotation: str, values: list) -> bool:
    """Items of a ``list[int]`` / ``list[float]`` / ``list[str]`` field of the right JSON type."""
    inner = annotation[annotation.find("[") + 1:annotation.rfind("]")].strip() if "[" in annotation else ""
    if inner not in _JSON_TYPES:
        return True
    allowed = _JSON_TYPES[inner]
    return all(isinstance(v, allowed) and (inner == "bool" or not isinstance(v, bool)) for v in values)
