"""Stated defaults are the real ones: in the API reference and in ``qpnlp ... --help``.

A numpydoc entry that states a default in its type (``lr : float, default 1e-3``, also ``default=``,
``default:``) states the signature's default, or the dataclass field's; an entry marked ``optional`` or given a
default belongs to a parameter that may be left out. Only defaults that read as a Python literal or as a name
(``DEFAULT_OVERHEAD``, ``torch.float32``, ``:data:`~qpnlp.word2fun.step_sizes.STEP_CENTRE_LR```) are compared;
any other form is listed in :data:`UNREAD` with the reason, so that a new one cannot pass unseen. A default
resolved at run time (``None``: a value the code picks) is checked where the text names the value
(:data:`RESOLVED`, :data:`CLI_RESOLVED`).
"""

import argparse
import ast
import dataclasses
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("_qpnlp_test_docstrings", Path(__file__).with_name("test_docstrings.py"))
_DOCSTRINGS = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_DOCSTRINGS)   # its walk over the public API and its numpydoc section reader

STATED = re.compile(r"(?:^|,)\s*default(?:[=:]\s*|\s*=\s*|\s+)(?P<value>\S.*)$")
OPTIONAL = re.compile(r"(?:^|,)\s*(?:optional|default\b)")
ROLE = re.compile(r"^:(?:py:)?\w+:`[~!]?(?P<target>[^`<>]+)`$")
EMPTY = inspect.Parameter.empty
NOT_READ = object()

#: Stated defaults that are neither a literal nor a name, each with why it stays prose.
UNREAD = {
    "qpnlp.data.synthetic_drift.generate_drift_corpus:spec": "DriftSpec(): a call (a fresh spec of the defaults)",
}


def _public_objects() -> dict[str, object]:
    """The public functions and classes (``__all__`` of every public module) and their public methods."""
    found = dict(_DOCSTRINGS.CALLABLES)
    for path, obj in _DOCSTRINGS.CALLABLES.items():
        if inspect.isclass(obj):
            for name, member in vars(obj).items():
                member = getattr(member, "__func__", member)     # staticmethod, classmethod
                if not name.startswith("_") and inspect.isfunction(member):
                    found.setdefault(f"{path}.{name}", member)
    return found


def _documented(obj) -> list[tuple[list[str], str, str]]:
    """The entries documenting the parameters of ``obj`` (a record's ``Attributes`` too, see test_docstrings)."""
    docs = _DOCSTRINGS._constructor_docs(obj) if inspect.isclass(obj) else [obj.__doc__ or ""]
    sections = ("Parameters", "Attributes") if _DOCSTRINGS._is_record(obj) else ("Parameters",)
    return [entry for doc in docs for section in sections for entry in _DOCSTRINGS._section_entries(doc, section)]


def _actual_defaults(obj) -> dict[str, object]:
    """Each parameter's default (``EMPTY`` without one): a dataclass field's default or its factory's value, else
    the signature's."""
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        return {f.name: f.default if f.default is not dataclasses.MISSING else
                f.default_factory() if f.default_factory is not dataclasses.MISSING else EMPTY
                for f in dataclasses.fields(obj) if f.init}
    return {name: p.default for name, p in _DOCSTRINGS._signature(obj).parameters.items()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _literal(text: str):
    """The Python literal ``text`` is, :data:`NOT_READ` if none."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return NOT_READ


def _read(text: str, namespace: dict):
    """The value a stated default names: a Python literal, or a (dotted) name of ``namespace`` or an importable
    one, in double backquotes or a Sphinx role or bare; :data:`NOT_READ` for anything else."""
    text = text.strip().rstrip(".").strip()
    text = ROLE.sub(r"\g<target>", text).strip("`")
    if (value := _literal(text)) is not NOT_READ:
        return value
    if not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)*", text):
        return NOT_READ
    head, *rest = text.split(".")
    try:
        value = namespace[head] if head in namespace else pkgutil.resolve_name(text)
        for part in rest if head in namespace else []:
            value = getattr(value, part)
    except (KeyError, AttributeError, ImportError, ValueError):
        return NOT_READ
    return value


def _same(stated, actual) -> bool:
    """Whether a stated default is the actual one: equal values, a tuple equal to a list, and no bool for a
    number."""
    if isinstance(stated, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(stated) == len(actual) and all(map(_same, stated, actual))
    if isinstance(stated, bool) != isinstance(actual, bool):
        return False
    try:
        return bool(stated == actual)
    except Exception:        # e.g. a tensor compared with a number of another shape
        return False


def _stated_defaults(obj) -> list[tuple[str, str, object]]:
    """``(parameter, stated text, value read)`` for every entry of ``obj`` that states a default in its type; a
    ``a, b : float, default 0.0, 1.0`` entry gives each name its own value."""
    namespace = vars(inspect.getmodule(obj)) if inspect.getmodule(obj) else {}
    found = []
    for names, kind, _ in _documented(obj):
        match = STATED.search(kind)
        if match is None:
            continue
        text = match.group("value")
        value = _read(text, namespace)
        each = len(names) > 1 and isinstance(value, tuple) and len(value) == len(names)
        found += [(name, text, value[i] if each else value) for i, name in enumerate(names)]
    return found


OBJECTS = _public_objects()
STATING = {path: obj for path, obj in OBJECTS.items() if _stated_defaults(obj)}


def _disagreements(path: str, obj) -> list[str]:
    actual = _actual_defaults(obj)
    wrong = []
    for name, text, value in _stated_defaults(obj):
        if name not in actual:
            wrong.append(f"{name}: states default {text!r} for no parameter of that name")
        elif value is NOT_READ:
            if f"{path}:{name}" not in UNREAD:
                wrong.append(f"{name}: default {text!r} reads as no literal or name (add it to UNREAD with a reason)")
        elif actual[name] is EMPTY:
            wrong.append(f"{name}: states default {text!r} but the parameter is required")
        elif not _same(value, actual[name]):
            wrong.append(f"{name}: states default {text!r} but the default is {actual[name]!r}")
    return wrong


@pytest.mark.parametrize("path", sorted(STATING))
def test_a_default_stated_in_the_type_is_the_signatures(path):
    wrong = _disagreements(path, STATING[path])
    assert not wrong, f"{path}: {wrong}"


def test_the_walk_reads_most_stated_defaults():
    read = [(path, name) for path, obj in STATING.items() for name, _, value in _stated_defaults(obj)
            if value is not NOT_READ]
    assert len(read) > 150 and ("qpnlp.training.TrainConfig", "length_chunks") in read
    assert ("qpnlp.word2fun.TrainConfig", "epochs") in read and ("qpnlp.data.Vocabulary.build", "min_freq") in read
    unread = {f"{path}:{name}" for path, obj in STATING.items() for name, _, value in _stated_defaults(obj)
              if value is NOT_READ}
    assert set(UNREAD) <= unread, f"UNREAD entries that are read now or gone: {set(UNREAD) - unread}"


@pytest.mark.parametrize("path", sorted(OBJECTS))
def test_an_optional_parameter_may_be_left_out(path):
    # complex_order_embedding documented `frequency` and `positions` as optional: leaving them out raised TypeError
    actual = _actual_defaults(OBJECTS[path])
    required = [name for names, kind, _ in _documented(OBJECTS[path]) if OPTIONAL.search(kind)
                for name in names if actual.get(name, None) is EMPTY]
    assert not required, f"{path}: documented as optional or with a default, but required: {required}"


def test_the_readers_read_literals_names_and_roles():
    import torch

    from qpnlp.word2fun.step_sizes import STEP_CENTRE_LR

    namespace = {"torch": torch, "LIMIT": 7}
    assert [_read(t, namespace) for t in ("1e-3", '"cpu"', "(1, 2)", "None", "``0.5``.", "LIMIT", "torch.float32",
                                          ":data:`~qpnlp.word2fun.step_sizes.STEP_CENTRE_LR`")] == [
        1e-3, "cpu", (1, 2), None, 0.5, 7, torch.float32, STEP_CENTRE_LR]
    assert _read("DriftSpec()", namespace) is NOT_READ and _read("torch.nothing", namespace) is NOT_READ
    assert [STATED.search(k).group("value") for k in ("int, default 0", "str, default=\"a\"", "default: None",
                                                      "float, default :data:`X`")] == ["0", '"a"', "None", ":data:`X`"]
    assert STATED.search("Tensor, optional (default zeros)") is None            # prose: not compared
    assert _same((1, 2), [1, 2]) and not _same(0, False) and not _same(1.0, 2.0) and _same(1, 1.0)

    def f(a, b=0, *, c=(1, 2), flag=False):
        """Summary.

        Parameters
        ----------
        a : int, optional
            A.
        b : int, default 1
            B.
        c : tuple of int, default (1, 2)
            C.
        flag : bool, default 0
            Flag.
        """

    assert _disagreements("f", f) == ["b: states default '1' but the default is 0",
                                      "flag: states default '0' but the default is False"]
    assert [n for names, kind, _ in _documented(f) if OPTIONAL.search(kind) for n in names] == ["a", "b", "c", "flag"]


# --------------------------------------------------------------------------- defaults resolved at run time
def _entry(obj, name: str) -> str:
    return next(f"{kind} {text}" for names, kind, text in _documented(obj) if name in names)


def _resolved():
    from qpnlp.training import TrainConfig
    from qpnlp.training.compiled import CUDA_GRAPHS_PAD_MULTIPLE
    from qpnlp.word2fun import TrainConfig as Word2FunTrainConfig
    from qpnlp.word2fun.changepoint import STEP_CENTRE_LR_AT_CHANGE_POINTS
    from qpnlp.word2fun.step_sizes import STEP_CENTRE_LR

    return [(Word2FunTrainConfig, "step_centre_lr", [STEP_CENTRE_LR, STEP_CENTRE_LR_AT_CHANGE_POINTS]),
            (TrainConfig, "pad_to_multiple_of", [CUDA_GRAPHS_PAD_MULTIPLE])]


@pytest.mark.parametrize("obj, name, values", _resolved(), ids=lambda x: getattr(x, "__qualname__", str(x)))
def test_an_entry_states_the_values_its_none_resolves_to(obj, name, values):
    # TrainConfig.step_centre_lr read "None: STEP_CENTRE_LR, 0.03", where fit's default start (the change points)
    # trains the centres at 0.01
    entry = _entry(obj, name)
    assert all(re.search(rf"(?<![\d.]){re.escape(f'{v:g}')}(?![\d.])", entry) for v in values), (name, values, entry)


def _cli_options() -> dict[tuple[str, str], argparse.Action]:
    """``(command, option) -> action`` over every command and subcommand of ``qpnlp``."""
    from qpnlp.cli import build_parser

    found, parsers = {}, [("", build_parser())]
    while parsers:
        command, parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += [(f"{command} {name}".strip(), sub) for name, sub in action.choices.items()]
            elif action.option_strings and action.help not in (None, argparse.SUPPRESS):
                found[command, action.option_strings[-1]] = action
    return found


CLI_STATED = re.compile(r"\bdefault:?\s+(?P<value>[^\s;,)]+)")


def test_an_options_help_states_its_default():
    """Help written in words (no ``%(default)s``) that states a default states the option's."""
    options = _cli_options()
    assert ("train qpdn", "--embedding-lr") in options and ("train word2fun", "--eras") in options
    wrong, compared = {}, set()
    for key, action in options.items():
        if action.default is None or "%(default)" in action.help:
            continue                        # None: resolved at run time (test below); %(default)s: argparse's own
        for match in CLI_STATED.finditer(action.help):
            value = _literal(match.group("value"))         # a word ("cpu", "off") is prose here
            if value is not NOT_READ and not isinstance(value, str):
                compared.add(key)
                if not _same(value, action.default):
                    wrong[key] = (match.group("value"), action.default)
    assert ("train qpdn", "--embedding-lr") in compared         # "(default: 0.001)", written out by the command
    assert not wrong, f"options whose help states another default: {wrong}"


def _cli_resolved():
    from qpnlp.commands.word2fun import DEFAULT_ERAS
    from qpnlp.data.protocols import DEFAULT_FOLDS
    from qpnlp.data.vectors import VECTOR_SETS
    from qpnlp.training.classification import DEFAULT_DIM
    from qpnlp.training.compiled import CUDA_GRAPHS_PAD_MULTIPLE

    return [("train qpdn", "--folds", [DEFAULT_FOLDS]), ("train cnm", "--dim", [DEFAULT_DIM]),
            ("train word2fun", "--eras", [DEFAULT_ERAS]),
            ("train qpdn", "--pad-to-multiple-of", [CUDA_GRAPHS_PAD_MULTIPLE]),
            ("train cnm", "--pad-to-multiple-of", [CUDA_GRAPHS_PAD_MULTIPLE]),
            ("train qpdn", "--pretrained-fallback", [s.fallback for s in VECTOR_SETS.values()])]


@pytest.mark.parametrize("command, option, values", _cli_resolved())
def test_an_options_help_states_the_values_its_none_resolves_to(command, option, values):
    action = _cli_options()[command, option]
    assert action.default is None
    assert all(re.search(rf"(?<![\d.]){re.escape(str(v))}(?![\d.])", action.help) for v in values), action.help
