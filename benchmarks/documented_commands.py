"""Check that the documented command lines still parse, without running them.

Every figure in the results and docs comes with the command that reproduces it: ``python benchmarks/NAME.py ...``
(also ``python3``, ``torchrun``, a venv's ``.../python``) or ``qpnlp ...`` (also ``python -m qpnlp``). This finds
them in ``README.md``, ``docs/**/*.md``, ``benchmarks/results/**/*.md`` and the ``.txt`` files there (their
headers and job lists), joins backslash-continued lines, and parses each against today's parser: the script's
``_parser()`` (or ``build_parser()``), the CLI's ``qpnlp.cli.build_parser()``. Globs, brace expansions and
placeholders (``run-f3-seed[1-4]``, ``{cr,mpqa}``, ``DS``, ``$S``) are taken as the literal words they are: only
the options and their values are checked, no path has to exist; ``...`` (an elided part) is a placeholder too.
Abbreviated options are refused (a renamed flag whose old name prefixes another must not slip through).

    python benchmarks/documented_commands.py         # one line per command that does not parse; exit 1 if any
    python benchmarks/documented_commands.py --all   # every command found, with its verdict
    python benchmarks/documented_commands.py --json  # every command as JSON: where, program, argv, verdict

tests/test_documented_commands.py runs the check with its list of exempt commands.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import re
import shlex
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = r"(?:[\w./~$-]*/)?(?:python3?(?:\.\d+)?|torchrun)"           # python, python3.11, .venv/bin/python
OPTIONS = r"(?:\s+-[-\w=.:]+(?:\s+\d+)?)*"                                 # python -u, torchrun --nproc_per_node 2
# ``python benchmarks/NAME.py`` (with or without its arguments), or ``benchmarks/NAME.py --option`` as a header gives it
SCRIPT = re.compile(rf"(?:(?<![\w/.-]){PROGRAM}{OPTIONS}\s+(?:\./)?(?P<program>benchmarks/\w+\.py)(?=[\s`]|$)"
                    rf"|(?<![\w/.$-])(?:\./)?(?P<bare>benchmarks/\w+\.py)(?=\s+-))")
CLI = re.compile(rf"(?:(?<![\w/.-]){PROGRAM}{OPTIONS}\s+-m\s+qpnlp(?:\.cli)?|(?<![\w/.$-])(?:[\w./~-]*/)?qpnlp)"
                 r"(?=\s+(?:train|evaluate|demo|convert|--import|--debug)(?:[\s`]|$))")
# A placeholder stands for a value: DS, S, F+1, JSON-OPTIONS, $S, seed$s, <path>, an elided part (never an option).
PLACEHOLDER = re.compile(r"(?!-)(?:[A-Z][A-Z0-9_+-]*|.*\$.*|<[^>]*>|\.\.\.|\u2026|\[\.\.\.\])")
OK, MENTION = "ok", "mention"     # the verdicts other than an error message


@dataclass(frozen=True)
class Command:
    """One documented command line: where it is (``path:line``), its program and its arguments."""

    where: str
    program: str                   # "benchmarks/NAME.py" or "qpnlp"
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: {self.program} {shlex.join(self.argv)}"


def sources(root: Path = ROOT) -> list[Path]:
    """The files whose command lines are checked (sorted; a docs build under ``_build`` left out)."""
    results = root / "benchmarks" / "results"
    files = [root / "README.md", *(root / "docs").rglob("*.md"), *results.rglob("*.md"), *results.rglob("*.txt")]
    return sorted(p for p in files if p.is_file() and "_build" not in p.parts)


def logical_lines(text: str, markdown: bool = False) -> Iterator[tuple[int, str]]:
    """(number of the first line, line) with backslash-continued lines joined into one, and in markdown also a
    line whose inline code (a `span`) goes on over the line break (outside fenced blocks)."""
    number, parts, fenced = 0, [], False
    for index, line in enumerate(text.splitlines(), start=1):
        number = number or index
        if markdown and line.lstrip().startswith("```"):
            fenced = not fenced
        elif line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        elif markdown and not fenced and line.strip() and " ".join([*parts, line]).count("`") % 2:
            parts.append(line)
            continue
        yield number, " ".join([*parts, line])
        number, parts = 0, []
    if parts:
        yield number, " ".join(parts)


def arguments(rest: str) -> tuple[str, ...]:
    """The words of a command line's remainder up to its end: a shell operator (``;``, ``|``, ``&&``, ``>``, ...),
    a comment, a closing backquote or a word ending a clause (``--rounds 5, at 360e9e5``: its comma dropped)."""
    rest = rest.split("`", 1)[0]
    lexer = shlex.shlex(rest, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = []
    try:
        for word in lexer:
            if set(word) <= set("();<>|&"):
                break
            words.append(word.removesuffix(","))
            if word.endswith(","):
                break
    except ValueError:                          # an unbalanced quote (prose around the command): plain words
        words = rest.split()
    return tuple(_unbracketed(words))


def _unbracketed(words: Iterable[str]) -> Iterator[str]:
    """The words with an optional part's brackets taken off (``[--variant low-frequency]``: its words are checked
    too); a glob's brackets (``seed[1-4]``) stay."""
    optional = False
    for word in words:
        if word.startswith("[-"):
            word, optional = word[1:], True
        if optional and word.endswith("]"):
            word, optional = word[:-1], False
        yield word


def commands_in(path: Path, root: Path = ROOT) -> list[Command]:
    """The command lines of one file, in order."""
    found = []
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in logical_lines(text, markdown=path.suffix == ".md"):
        for pattern in (SCRIPT, CLI):
            for match in pattern.finditer(line):
                program = match.group("program") or match.group("bare") if pattern is SCRIPT else "qpnlp"
                command = Command(f"{name}:{number}", program, arguments(line[match.end():]))
                found.append((number, match.start(), command))
    return [command for *_, command in sorted(found, key=lambda found: found[:2])]


def documented_commands(root: Path = ROOT) -> list[Command]:
    """Every documented command line under ``root``."""
    return [command for path in sources(root) for command in commands_in(path, root)]


@cache
def parser_of(program: str, plugins: tuple[str, ...] = (), root: Path = ROOT) -> argparse.ArgumentParser:
    """Today's parser of ``program``: ``qpnlp``'s (with the models of its ``--import`` ``plugins``, files taken from
    ``root``) or the ``_parser()`` / ``build_parser()`` of the benchmark script ``root / program``.

    Raises
    ------
    LookupError
        The script or a plugin does not exist, or the script builds no importable parser.
    """
    if program == "qpnlp":
        from qpnlp.cli import build_parser, import_plugins

        try:
            import_plugins([w for name in plugins for w in ("--import", str(root / name) if name.endswith(".py")
                                                            else name)])
        except (ImportError, FileNotFoundError) as err:
            raise LookupError(f"--import: {err}") from None
        return build_parser()
    path = root / program
    if not path.is_file():
        raise LookupError(f"{program}: no such script")
    spec = importlib.util.spec_from_file_location(f"_documented_{abs(hash(path))}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module              # as for a script run (dataclasses look their module up)
    sys.path.insert(0, str(path.parent))         # the scripts import their helpers (_bench, _stats) from there
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    build = getattr(module, "_parser", None) or getattr(module, "build_parser", None)
    if build is None:
        raise LookupError(f"{program}: no _parser() or build_parser() to parse its command line with")
    return build()


def verdict(command: Command, root: Path = ROOT) -> str:
    """:data:`OK` when ``command`` parses today, :data:`MENTION` for a bare mention (``qpnlp train cnm`` in a
    sentence: no option given, only required arguments missing; it names the command, it does not claim to run it),
    else why it does not parse (argparse's message: an unknown option, a removed choice, a value of the wrong type).

    A placeholder (:data:`PLACEHOLDER`) is taken as a valid value of any type and choice, and as an extra word (a
    ``$S`` standing for several options).
    """
    argv = command.argv
    plugins = tuple(argv[i + 1] for i, word in enumerate(argv[:-1]) if word == "--import")
    try:
        parser = parser_of(command.program, plugins if command.program == "qpnlp" else (), root)
    except LookupError as err:
        return str(err)
    stderr = io.StringIO()
    try:
        with _placeholders_accepted(), contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            _, extras = parser.parse_known_args(list(argv))
    except SystemExit as exit_:
        message = " ".join(stderr.getvalue().split()).split(" error: ", 1)[-1] or f"exit {exit_.code}"
        if exit_.code == 0:
            return OK                                      # --help, --version
        bare = message.startswith("the following arguments are required") and not any(a[:1] == "-" for a in argv)
        return MENTION if bare else message
    extras = [word for word in extras if not PLACEHOLDER.fullmatch(word)]
    return f"unrecognized arguments: {' '.join(extras)}" if extras else OK


@contextlib.contextmanager
def _placeholders_accepted() -> Iterator[None]:
    """argparse (every parser and sub-parser) taking a placeholder as a value of any type and any choice, and no
    abbreviated option (``--lr`` for ``--lr-decay``: a renamed flag whose old name prefixes another is unknown)."""
    cls = argparse.ArgumentParser
    get, check, prefixes = cls._get_value, cls._check_value, cls._get_option_tuples

    def get_value(self, action, text):
        return text if PLACEHOLDER.fullmatch(text) else get(self, action, text)

    def check_value(self, action, value):
        if not (isinstance(value, str) and PLACEHOLDER.fullmatch(value)):
            check(self, action, value)

    cls._get_value, cls._check_value, cls._get_option_tuples = get_value, check_value, lambda self, option: []
    try:
        yield
    finally:
        cls._get_value, cls._check_value, cls._get_option_tuples = get, check, prefixes


def json_verdicts(script: Path) -> tuple[dict, ...]:
    """``script --json`` (this checker, or benchmarks/hinted_names.py) run in a fresh process without
    ``QPNLP_DATA``, as the tests run it: the plugins and argparse patches it imports stay out of the caller's
    process. Its verdicts, one dict per command or hint; RuntimeError with its stderr if it did not run."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    env.pop("QPNLP_DATA", None)
    proc = subprocess.run([sys.executable, str(script), "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    if proc.returncode not in (0, 1) or not proc.stdout:
        raise RuntimeError(f"{script.name} --json exited {proc.returncode}: {proc.stderr[-3000:]}")
    return tuple(json.loads(proc.stdout))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--all", action="store_true", help="print every command found, not only the failures")
    shown.add_argument("--json", action="store_true", help="print every command with its verdict as JSON")
    args = parser.parse_args(argv)
    checked = [(command, verdict(command)) for command in documented_commands()]
    failures = [(command, why) for command, why in checked if why not in (OK, MENTION)]
    if args.json:
        print(json.dumps([{"where": c.where, "program": c.program, "argv": c.argv, "verdict": why}
                          for c, why in checked], indent=1))
    for command, why in checked if args.all else failures if not args.json else ():
        print(f"{command}\n    -> {why}")
    mentions = sum(why == MENTION for _, why in checked)
    print(f"{len(checked)} command lines ({mentions} bare mentions), {len(failures)} do not parse", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
