"""Check that what qpnlp's messages tell users to type still exists, without running anything.

Error messages, warnings, help texts and docstrings say ``use --max-questions`` or ``call
qpnlp.word2fun.set_compass(...)``; a renamed option or function leaves such a hint stale. This walks every string
literal of ``qpnlp/`` with :mod:`ast` (docstrings, messages, the constant parts of f-strings) and checks

* each option it names (``--[a-z][a-z0-9-]*``): inside a command line the message gives (``qpnlp train cnm
  --epochs 3``, found as benchmarks/documented_commands.py finds them) against that command's parser (a placeholder
  model, ``qpnlp train MODEL``, against every ``qpnlp train`` parser; ``benchmarks/NAME.py ...`` against the script's
  parser), elsewhere against the commands of its module (a command module's, ``qpnlp/commands/match.py``; a
  registered model's, ``qpnlp/models/cnm.py``), else against every option of every ``qpnlp`` command (the model
  options generated from the registered models' configs included);
* each dotted ``qpnlp.x.y`` name it names, which must import (a module, or an attribute of one);
* each option in the prose of ``README.md`` and ``docs/**/*.md`` (a command line there is parsed whole by
  benchmarks/documented_commands.py) against the options of every ``qpnlp`` command and benchmark script.

    python benchmarks/hinted_names.py          # one line per stale hint; exit 1 if any
    python benchmarks/hinted_names.py --json   # every hint with its verdict

tests/test_hinted_names.py runs the check with its list of exempt hints (the options of other tools).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("_qpnlp_documented_commands", ROOT / "benchmarks" / "documented_commands.py")
DOCUMENTED = sys.modules.setdefault(_SPEC.name, importlib.util.module_from_spec(_SPEC))
if not hasattr(DOCUMENTED, "verdict"):
    _SPEC.loader.exec_module(DOCUMENTED)    # the command-line extraction and the parsers (parser_of)

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# A dotted name: qpnlp.data.Vocabulary, not a format tag (qpnlp.Vocabulary/1).
NAME = re.compile(r"(?<![\w.])qpnlp(?:\.[A-Za-z_]\w*)+(?![\w/]|\.\w)")
ROOT_OPTIONS = ("--import", "--debug")     # qpnlp's own, given before the command
OK = "ok"


@dataclass(frozen=True)
class Hint:
    """One option or name a text names: where (``path:line``), what (``--epochs``, ``qpnlp.hilbert.PureState``)
    and the command it belongs to: of the command line it is part of (``qpnlp train cnm``, ``benchmarks/NAME.py``),
    else of its module (``qpnlp train cnm | qpnlp train cnm-real``: any of them), else empty (any ``qpnlp`` command)."""

    where: str
    text: str
    program: str = ""

    def __str__(self) -> str:
        return f"{self.where}: {self.text}" + (f" (in `{self.program} ...`)" if self.program else "")


def strings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal of a module: an f-string as one text, each value a ``{}``."""
    tree = ast.parse(source)
    parts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts.update(map(id, node.values))
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            yield node.lineno, node.value


def _command(program: str, argv: tuple[str, ...]) -> str:
    """``qpnlp train cnm`` for the words ``--debug train cnm --epochs 3`` of ``qpnlp`` (``qpnlp`` alone before a
    placeholder, ``qpnlp ... --debug``: any command); a script stays itself."""
    if program != "qpnlp":
        return program
    words = [w for i, w in enumerate(argv) if w not in ROOT_OPTIONS and (i == 0 or argv[i - 1] != "--import")]
    verb = words[:1] if words[:1] != ["train"] else words[:2]
    return "" if verb and DOCUMENTED.PLACEHOLDER.fullmatch(verb[0]) else " ".join(["qpnlp", *verb])


def hints_in(text: str, where: str, names: bool = True) -> list[Hint]:
    """The options (and, with ``names``, the dotted ``qpnlp`` names) ``text`` names; an option inside a command line
    of the text carries that command."""
    hints, inside = [], Counter()
    for pattern in (DOCUMENTED.SCRIPT, DOCUMENTED.CLI):
        for match in pattern.finditer(text):
            program = match.group("program") or match.group("bare") if pattern is DOCUMENTED.SCRIPT else "qpnlp"
            argv = DOCUMENTED.arguments(text[match.end():])
            for word in argv:
                flag = FLAG.match(word.split("=", 1)[0])
                if flag and flag.group() == word.split("=", 1)[0]:
                    hints.append(Hint(where, flag.group(), _command(program, argv)))
                    inside[flag.group()] += 1
    for flag in FLAG.findall(text):
        if inside[flag]:
            inside[flag] -= 1
        else:
            hints.append(Hint(where, flag))
    return hints + ([Hint(where, name) for name in NAME.findall(text)] if names else [])


def message_hints(root: Path = ROOT) -> list[Hint]:
    """Every hint in the string literals of ``root / "qpnlp"``; an option outside a command line in the module of
    commands (``qpnlp/commands/word2fun.py``, a model's module) carries those commands (``|``-separated)."""
    found, owned = [], owners(root)
    for path in sorted((root / "qpnlp").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        for line, text in strings(path.read_text(encoding="utf-8")):
            found += [Hint(h.where, h.text, owned.get(name, "")) if h.text.startswith("--") and not h.program else h
                      for h in hints_in(text, f"{name}:{line}")]
    return found


@cache
def owners(root: Path = ROOT) -> dict[str, str]:
    """``{"qpnlp/commands/match.py": "qpnlp train cnm | qpnlp train cnm-real | ...", "qpnlp/models/cnm.py": "qpnlp
    train cnm", ...}``: the commands each command module registers, and each registered model's module."""
    from qpnlp.cli import COMMAND_MODULES, Parser
    from qpnlp.models import get_model_class, registered_models

    found: dict[str, set[str]] = {}
    for module in COMMAND_MODULES:
        parser = Parser(prog="qpnlp")
        verbs = parser.add_subparsers()
        train = verbs.add_parser("train").add_subparsers()
        importlib.import_module(f"qpnlp.commands.{module}").register({"root": verbs, "train": train})
        found[f"qpnlp/commands/{module}.py"] = set(_options(parser)) - {"qpnlp train"}   # no model of its own
    for model in registered_models():
        source = Path(inspect.getsourcefile(get_model_class(model))).resolve()
        if source.is_relative_to(root.resolve()):
            found.setdefault(source.relative_to(root.resolve()).as_posix(), set()).add(f"qpnlp train {model.replace('_', '-')}")
    return {name: " | ".join(sorted(commands)) for name, commands in found.items()}


def doc_hints(root: Path = ROOT) -> list[Hint]:
    """Every option in ``README.md`` and ``docs/**/*.md`` outside the command lines (those are parsed whole)."""
    found = []
    for path in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        if "_build" in path.parts or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        for number, line in DOCUMENTED.logical_lines(text, markdown=True):
            where = f"{path.relative_to(root).as_posix()}:{number}"
            found += [hint for hint in hints_in(line, where, names=False) if not hint.program]
    return found


def _options(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """``{command: its option strings}`` for each leaf command of ``parser`` (``qpnlp train cnm``)."""
    found: dict[str, set[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found.update(_options(child) or {child.prog: {s for a in child._actions for s in a.option_strings}})
    return found


@cache
def qpnlp_options(root: Path = ROOT) -> dict[str, frozenset[str]]:
    """``{"qpnlp train cnm": options, ...}`` of today's CLI, each with the root options; ``""``: all of them."""
    parser = DOCUMENTED.parser_of("qpnlp", (), root)
    own = {s for action in parser._actions for s in action.option_strings}      # --version, --debug, --import
    found = {name: frozenset(options | own) for name, options in _options(parser).items()}
    return {**found, "qpnlp": frozenset(own), "": frozenset().union(*found.values())}


@cache
def script_options(program: str, root: Path = ROOT) -> frozenset[str]:
    """The option strings of the benchmark script ``program`` (LookupError without a parser)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        parser = DOCUMENTED.parser_of(program, (), root)
    return frozenset(s for a in parser._actions for s in a.option_strings)


def _any_model(command: str) -> bool:
    """``qpnlp train MODEL``, ``qpnlp train {}``, ``qpnlp train``: a model the text leaves open."""
    model = command.split()[2:3] if command.startswith("qpnlp train") else ["model"]
    return not model or bool(DOCUMENTED.PLACEHOLDER.fullmatch(model[0]) or "{" in model[0])


def _flag_verdict(hint: Hint, root: Path) -> str:
    if hint.program.startswith("benchmarks/"):
        try:
            return OK if hint.text in script_options(hint.program, root) else f"{hint.program} has no {hint.text}"
        except LookupError as err:
            return str(err)
    commands = qpnlp_options(root)
    if _any_model(hint.program):
        train = [o for name, o in commands.items() if name.startswith("qpnlp train ")]
        return OK if any(hint.text in o for o in train) else f"no `qpnlp train` command has {hint.text}"
    names = hint.program.split(" | ")
    if unknown := [name for name in names if name not in commands]:
        return f"no command `{unknown[0]}`"
    return OK if any(hint.text in commands[n] for n in names) else f"`{hint.program or 'qpnlp'}` has no {hint.text}"


def resolves(name: str) -> str:
    """:data:`OK` when the dotted ``name`` imports (a module, or attributes of the longest module prefix), else why."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name is not None and module.startswith(err.name) and err.name.startswith("qpnlp"):
                continue
            raise
        break
    for attr in parts[end:]:
        if not hasattr(obj, attr):
            return f"{'.'.join(parts[:end])} has no attribute {attr!r}"
        obj, end = getattr(obj, attr), end + 1
    return OK


def verdict(hint: Hint, root: Path = ROOT) -> str:
    """:data:`OK` when the option or name of ``hint`` exists today, else why not."""
    return _flag_verdict(hint, root) if hint.text.startswith("--") else resolves(hint.text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print every hint with its verdict as JSON")
    args = parser.parse_args(argv)
    checked = [(hint, verdict(hint)) for hint in message_hints() + doc_hints()]
    stale = [(hint, why) for hint, why in checked if why != OK]
    if args.json:
        print(json.dumps([{**asdict(hint), "verdict": why} for hint, why in checked], indent=1))
    else:
        for hint, why in stale:
            print(f"{hint}\n    -> {why}")
    print(f"{len(checked)} hints, {len(stale)} stale", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
