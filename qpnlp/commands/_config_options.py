"""Command-line options generated from a model's config dataclass.

Every field of a registered model's config becomes an option of its ``qpnlp
train`` command, with the config's default (defaults are the product: the CLI
and the library agree because the CLI has no defaults of its own) and the help
text of the field from the config's numpydoc ``Attributes`` section. So a
model added to the registry is trainable from the command line without
touching the CLI.

Types, read from the annotations as :func:`typing.get_type_hints` resolves them
(:func:`~qpnlp.models._config_types.field_hints`, the same with or without ``from __future__ import annotations``):
``int``, ``float``, ``str`` as such; ``bool`` as ``--flag/--no-flag``; a ``Literal`` of ints, floats or strings as
an option of those ``choices`` (``--pooling {sum,mean}``, the value of the literal's type); ``list[X]``,
``tuple[X, ...]`` as ``nargs="+"`` of such ``X`` (a bare ``list``/``tuple`` of ints; ``list[bool]`` items are
switches, ``true``/``false`` or ``1``/``0``, ``yes``/``no``, ``on``/``off``); ``dict`` as a JSON object; each also
optional (``X | None``, ``Optional[X]``, ``Union[X, None]``), the default then None. A field of any other annotation (``set[int]``, ``int | str``,
``list[list[int]]``, or one that does not resolve) is not left out silently, nor read as something else: its option
is listed in ``--help`` as not settable on the command line and refused by name when given; the model keeps the
field's default.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import typing

from qpnlp._env import boolean
from qpnlp.models._config_types import (Unresolved, field_default, field_hints, item_hints, optional_base,
                                         spelling)

__all__ = ["add_config_options", "config_options", "explicit_options", "field_help", "grid_less_given", "recorded"]

# Fields the trainer fills from the data (vocabulary size, number of classes, the vectors' width).
FILLED_BY_TRAINER = frozenset({"num_words", "num_classes", "dim"})
# Namespace attribute listing the config fields and training settings given on the command line (an option given
# at its default value counts).
_EXPLICIT = "explicit_options"


def field_help(config_class: type) -> dict[str, str]:
    """``{field: description}`` from the numpydoc ``Attributes`` (or ``Parameters``) section of the docstring."""
    doc = inspect.getdoc(config_class) or ""
    section = re.search(r"^(?:Attributes|Parameters)\n-+\n(.*?)(?:\n\n[A-Z][a-z]+\n-+|\Z)", doc, re.S | re.M)
    helps: dict[str, str] = {}
    if not section:
        return helps
    names: list[str] = []
    for line in section.group(1).splitlines():
        if line and not line.startswith(" "):
            names = [n.strip() for n in line.split(":")[0].split(",")]
            for name in names:
                helps[name] = ""
        elif line.strip():
            for name in names:
                helps[name] = (helps[name] + " " + _plain(line.strip())).strip()
    return helps


def _plain(text: str) -> str:
    """Drop reStructuredText markup for a terminal: ``x`` -> x, :class:`~a.B` -> B."""
    text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as err:                    # argparse would say "invalid _json_object value"
        raise argparse.ArgumentTypeError(f"expected a JSON object; got {text!r} ({err})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object; got {text!r}")
    return value


def _boolean(text: str) -> bool:
    """A ``list[bool]`` item: a switch as every other is spelt (:func:`qpnlp._env.boolean`: ``1``/``0``,
    ``true``/``false``, ``yes``/``no``, ``on``/``off``, any case)."""
    try:
        return boolean(text, "each item")
    except ValueError as err:                    # argparse would say "invalid _boolean value"
        raise argparse.ArgumentTypeError(str(err)) from None


def _scalar(hint) -> dict | None:
    """The ``type`` (and ``choices``) keywords of a value of type ``hint``: ``int``, ``float``, ``str``, ``bool``
    (a switch: a list item, :func:`_boolean`) or a ``Literal`` of ints, floats or strings; None for any other."""
    if hint in (int, float, str):
        return dict(type=hint)
    if hint is bool:
        return dict(type=_boolean)
    values = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else ()
    if not values or not all(type(v) in (int, float, str) for v in values):
        return None
    spelt = {str(v): v for v in values}
    return dict(type=lambda text: spelt.get(text, text), choices=values)   # an unknown text: "invalid choice"


def _default(field: dataclasses.Field):
    """The option's default: the field's (``qpnlp.models._config_types.field_default``), None without one."""
    default = field_default(field)
    return None if default is dataclasses.MISSING else default


def add_config_options(parser: argparse.ArgumentParser, config_class: type, *,
                       skip: frozenset[str] = FILLED_BY_TRAINER) -> None:
    """Add one option per field of ``config_class`` (except ``skip``) to a group named after the model.

    Call it after the command's own options: a field whose name is taken by
    one of them (``max_len``) becomes ``--model-max-len``.
    """
    group = parser.add_argument_group(f"model ({config_class.__name__})")
    helps = field_help(config_class)
    for field in dataclasses.fields(config_class):
        if field.name in skip:
            continue
        flag = "--" + field.name.replace("_", "-")
        if flag in parser._option_string_actions:      # a run option of the same name (e.g. --max-len)
            flag = "--model-" + field.name.replace("_", "-")
        default = _default(field)
        text = (helps.get(field.name, "").replace("%", "%%") + " (default %(default)s)").strip()
        hint = field_hints(config_class)[field.name]  # int, with or without `from __future__ import annotations`
        kwargs = _typed(hint, default)
        if kwargs is None:                         # no command-line form: an option that says so when given
            group.add_argument(flag, **_refused(config_class, field.name, hint, default, helps))
            continue
        kwargs.update(dest=f"config__{field.name}", default=default, help=text)
        if "type" in kwargs and "choices" not in kwargs:   # a value to read (a bool is --flag / --no-flag)
            kwargs.setdefault("metavar", field.name.upper())
        group.add_argument(flag, **kwargs)


def _typed(hint, default) -> dict | None:
    """The ``add_argument`` keywords of a field of this resolved annotation (``X`` or ``X | None`` alike), or None
    where it has no command-line form (``set[int]``, ``int | str``, ``list[list[int]]``). Every action also records
    that its option was given (a default grid then leaves its axis out)."""
    base, _ = optional_base(hint)
    if base is bool:
        return dict(action=recorded(argparse.BooleanOptionalAction))          # --flag / --no-flag
    stored = dict(action=recorded(argparse._StoreAction))
    items = item_hints(base)
    if items is not None:
        item = _scalar(items[0]) if len(set(items)) == 1 else dict(type=int) if not items else None
        return None if item is None else \
            dict(stored, nargs="+", **item, default=list(default) if default is not None else None)
    if dict in (base, typing.get_origin(base)):
        return dict(stored, type=_json_object, metavar="JSON")
    scalar = _scalar(base)
    return None if scalar is None else dict(stored, **scalar)


def _refused(config_class: type, name: str, hint, default, helps: dict[str, str]) -> dict:
    """The ``add_argument`` keywords of a field without a command-line form: listed in ``--help`` as such, and
    refused by name when given (it was silently left out: ``unrecognized arguments``). The config keeps its
    default."""
    what = (f"could not be resolved ({hint.reason})" if isinstance(hint, Unresolved) else
            "has no command-line form (int, float, str, bool, a Literal of them, a list or tuple of them, a dict as "
            "JSON, each optionally | None)")
    why = (f"{config_class.__name__}.{name} is annotated {spelling(hint)}, which {what}; the model keeps its default "
           f"{default!r}")

    class Refused(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            parser.error(f"{option_string}: {why}")

    text = f"{helps.get(name, '')} (not settable on the command line: {why})".strip()
    return dict(action=Refused, nargs="*", dest=f"unsettable__{name}", default=argparse.SUPPRESS,
                metavar=name.upper(), help=text.replace("%", "%%"))


def recorded(base: type) -> type:
    """``base`` that also notes its field in the namespace when the option is given (read back by
    :func:`explicit_options`): a model config field (dest ``config__NAME``) or a training setting (dest ``NAME``)."""
    class Recorded(base):
        def __call__(self, parser, namespace, values, option_string=None):
            super().__call__(parser, namespace, values, option_string)
            given = list(getattr(namespace, _EXPLICIT, None) or [])
            field = self.dest.removeprefix("config__")
            setattr(namespace, _EXPLICIT, given if field in given else given + [field])
    return Recorded


def explicit_options(args: argparse.Namespace) -> list[str]:
    """The config fields and training settings given on the command line (an option at its default value counts
    when it was given)."""
    return list(getattr(args, _EXPLICIT, None) or [])


def grid_less_given(default: list[str], args: argparse.Namespace, notes: list[str]) -> list[str]:
    """The axes ``NAME=V1,V2`` of a default selection grid less those whose option the command line gives
    (:func:`explicit_options`): a given option is never overridden by a default it did not ask for. Says what it
    left out: a line appended to ``notes``, which the command writes once the whole command line is checked (an
    error stays the one line on stderr)."""
    given = set(explicit_options(args))
    fixed = [axis for axis in default if axis.partition("=")[0] in given]
    kept = [axis for axis in default if axis not in fixed]
    if fixed:
        notes.append(f"default selection grid without {' '.join(fixed)} (given on the command line): "
                     f"{' '.join(kept) or 'no selection'}")
    return kept


def config_options(args: argparse.Namespace) -> dict:
    """The model options given on the command line (every generated field, at its value)."""
    prefix = "config__"
    return {k[len(prefix):]: v for k, v in vars(args).items() if k.startswith(prefix)}
