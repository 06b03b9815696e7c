"""Command-line options generated from a model's config dataclass.

Every field of a registered model's config becomes an option of its ``qpnlp
train`` command, with the config's default (defaults are the product: the CLI
and the library agree because the CLI has no defaults of its own) and the help
text of the field from the config's numpydoc ``Attributes`` section. So a
model added to the registry is trainable from the command line without
touching the CLI.

Types: ``int``, ``float``, ``str`` as such; ``bool`` as ``--flag/--no-flag``;
``list``/``tuple`` as ``nargs="+"`` (of ints, or of floats or strings where the annotation says so:
``list[float]``); ``dict`` as a JSON object; each also optional (``X | None``, ``Optional[X]``, ``Union[X, None]``,
``None | X``: one spelling, :func:`~qpnlp.models._config_types.field_annotation`), the default then None.
Annotations read the same with or without ``from __future__ import annotations``. A field of any other annotation
(``set[int]``, ``int | str``) is not left out silently: its option is listed in ``--help`` as not settable on the
command line and refused by name when given; the model keeps the field's default.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re

from qpnlp.models._config_types import field_annotation, field_default, optional_base

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


# The first item type of a list or tuple annotation: "float" in "list[float] | None", "str" in "tuple[str, ...]".
_ITEM_TYPE = re.compile(r"(?:list|tuple)\[\s*(\w+)")


def _item_type(annotation: str) -> type:
    """The type of the items of a ``list[...]`` / ``tuple[...]`` field's option: float or str where the annotation
    says so (``list[float]``, ``tuple[str, ...]``, also optional: ``list[float] | None``), else int (``list[int]``,
    a bare ``tuple``)."""
    match = _ITEM_TYPE.match(annotation)
    return {"float": float, "str": str}.get(match[1] if match else "", int)


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
        annotation = field_annotation(field)       # "int" with or without `from __future__ import annotations`
        kwargs = _typed(annotation, default)
        if kwargs is None:                         # no command-line form: an option that says so when given
            group.add_argument(flag, **_refused(config_class, field.name, annotation, default, helps))
            continue
        kwargs.update(dest=f"config__{field.name}", default=default, help=text)
        if "type" in kwargs:                      # a value to read (a bool is --flag / --no-flag)
            kwargs.setdefault("metavar", field.name.upper())
        group.add_argument(flag, **kwargs)


def _typed(annotation: str, default) -> dict | None:
    """The ``add_argument`` keywords of a field of this :func:`field_annotation` (``X`` or ``X | None`` alike), or
    None where it has no command-line form (``set[int]``, ``int | str``). Every action also records that its
    option was given (a default grid then leaves its axis out)."""
    base, _ = optional_base(annotation)
    if base == "bool":
        return dict(action=recorded(argparse.BooleanOptionalAction))          # --flag / --no-flag
    stored = dict(action=recorded(argparse._StoreAction))
    if base in ("list", "tuple") or base.startswith(("list[", "tuple[")):
        return dict(stored, nargs="+", type=_item_type(base), default=list(default) if default is not None else None)
    if base == "dict" or base.startswith("dict["):
        return dict(stored, type=_json_object, metavar="JSON")
    if base in ("int", "float", "str"):
        return dict(stored, type={"int": int, "float": float, "str": str}[base])
    return None


def _refused(config_class: type, name: str, annotation: str, default, helps: dict[str, str]) -> dict:
    """The ``add_argument`` keywords of a field without a command-line form: listed in ``--help`` as such, and
    refused by name when given (it was silently left out: ``unrecognized arguments``). The config keeps its
    default."""
    why = (f"{config_class.__name__}.{name} is annotated {annotation}, which has no command-line form (int, float, "
           f"str, bool, a list or tuple of them, a dict as JSON, each optionally | None); the model keeps its default "
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
