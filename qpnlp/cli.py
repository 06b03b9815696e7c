"""The ``qpnlp`` command.

``qpnlp demo`` runs the main job on built-in defaults; ``qpnlp train MODEL ...``
and ``qpnlp evaluate CHECKPOINT ...`` train and score models. Each model's
command lives in its own module under :mod:`qpnlp.commands`, which registers
its sub-parser here; nothing in the library imports this module.

The results are on stdout and only there (``qpnlp ... > results.txt`` keeps
the metrics); the per-epoch lines and other progress, the status lines (files
written, training state kept), warnings and errors are on stderr (the rule
is written in ``qpnlp.commands._console``). Every error is one line on
stderr, ``qpnlp <command>: error: ...``. The exit code is 0 for success, 2
for a usage error (an unknown option, a bad option value), 1 for a failure
while running (missing or bad files, data that does not fit, training that
diverged), 130 for Ctrl-C and 143 for SIGTERM (``kill``, ``timeout``, a
scheduler), which stops the command as Ctrl-C does. A reader of stdout that
leaves early (``qpnlp ... | head -1``) ends the command with exit code 1 and
no message (the reader has what it asked for; ``set -o pipefail`` still sees
the 1); the files the command was asked for are written before its results,
so none is lost; results for a closed stdout (``qpnlp ... >&-``) end the command with
exit code 1 and an error line once its files are written, and a closed
stderr (``2>&-``) drops the status lines. ``qpnlp --debug ...`` adds the
traceback. ``python -m qpnlp`` is the same command.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

# Modules under qpnlp.commands that provide ``register(subparsers_by_verb)``.
COMMAND_MODULES = ("demo", "classify", "match", "word2fun", "evaluate", "convert")

EPILOG = ("results on stdout; progress, status lines, warnings and errors on stderr. exit codes: 0 success, "
          "1 failure while running (files, data, diverged training; also, without a message, a closed stdout pipe, "
          "as in `qpnlp ... | head -1`; with one, results for a closed stdout, `>&-`), 2 usage error, "
          "130 interrupted (Ctrl-C), 143 stopped by SIGTERM (as by Ctrl-C: the best model so far saved, the report "
          "finished). environment: QPNLP_DATA (the data root of --dataset), QPNLP_COMPILED=0 (torch "
          "ops instead of the compiled loops), QPNLP_DIST_BACKEND and QPNLP_DIST_TIMEOUT (Word2Fun's --processes); "
          "all of them: the 'Environment variables' section of docs/getting-started.md")


class Parser(argparse.ArgumentParser):
    """argparse, with errors on one line: ``qpnlp train qpdn: error: argument --epochs: must be >= 1; got 0``.

    Descriptions taken from a module docstring's first line lose their reST literal quotes (pairs of
    backquotes).
    """

    def __init__(self, *args, description: str | None = None, **kwargs) -> None:
        super().__init__(*args, description=None if description is None else description.replace("``", ""),
                         **kwargs)

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see '{self.prog} --help')\n")

    def _print_message(self, message: str, file=None) -> None:
        """``--help`` and ``--version`` on stderr when stdout is closed (``qpnlp --help >&-``), as argparse does."""
        from qpnlp.commands._console import ClosedStdout

        super()._print_message(message, sys.stderr if isinstance(file, ClosedStdout) else file)


def _version() -> str:
    from qpnlp import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="qpnlp", description=__doc__.splitlines()[0], epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"qpnlp {_version()}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (may also be given after the command)")
    parser.add_argument("--import", dest="plugins", action="append", default=[], metavar="MODULE|FILE.py",
                        help="import this module or Python file first, so the models it registers get a "
                             "`qpnlp train` command (repeatable; a file imports the modules next to it, as "
                             "`python FILE.py` does: its directory is first on sys.path while it loads; installed "
                             "packages can instead declare a 'qpnlp.models' entry point)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{demo,train,evaluate,convert}")
    train = verbs.add_parser("train", help="train a model").add_subparsers(
        dest="model", required=True, metavar="MODEL"
    )
    subparsers = {"root": verbs, "train": train}
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"qpnlp.commands.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"qpnlp.commands.{name}":
                raise
            continue
        module.register(subparsers)
    for group in (verbs, train):
        for command in group.choices.values():
            command.set_defaults(prog=command.prog)
            if command.epilog is None:
                command.epilog = EPILOG
    return parser


def import_plugins(argv: list[str]) -> None:
    """Import the ``--import`` modules or files named in ``argv`` (before the parser is built from the registry)."""
    names = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--import"]
    names += [a.split("=", 1)[1] for a in argv if a.startswith("--import=")]
    for name in names:
        if name.endswith(".py"):
            path = Path(name)
            if not path.is_file():
                raise FileNotFoundError(f"{name}: no such file")
            name, number = f"qpnlp_plugin_{path.stem}", 1
            while name in sys.modules and not _same_file(sys.modules[name], path):   # another file of this name
                number += 1
                name = f"qpnlp_plugin_{path.stem}_{number}"
            if name in sys.modules:                      # already imported in this process (main() called twice)
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            try:
                with _importable_from(path.resolve().parent):
                    spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[spec.name]
                raise
        else:
            importlib.import_module(name)


@contextlib.contextmanager
def _importable_from(directory: Path):
    """``directory`` first on ``sys.path`` while the block runs, as ``python FILE.py`` puts the file's directory
    (symbolic links resolved), so that a plugin file imports the modules next to it; then taken off again if it was
    not there before, so that ``main`` leaves ``sys.path`` as it found it (the modules imported meanwhile stay in
    ``sys.modules``, as every import does; a plugin that imports a sibling only later, inside a function, finds it
    only if it imported it at load time)."""
    entry = str(directory)
    if entry in sys.path:
        yield
        return
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):         # the plugin may have taken it off itself
            sys.path.remove(entry)


def _same_file(module, path: Path) -> bool:
    """Whether ``module`` was imported from the file ``path``."""
    source = getattr(module, "__file__", None)
    try:
        return source is not None and Path(source).samefile(path)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    """Run ``qpnlp`` with ``argv`` (default ``sys.argv[1:]``) and return its exit code (usage errors, ``--help`` and
    ``--version`` raise :class:`SystemExit`, as argparse does)."""
    from qpnlp.commands._console import escaped_unencodable, standard_streams

    argv = sys.argv[1:] if argv is None else list(argv)
    with standard_streams(), escaped_unencodable():
        try:
            return _main(argv)
        except KeyboardInterrupt:     # while starting: importing torch and every command takes seconds
            if "--debug" in argv:
                traceback.print_exc()
            print("qpnlp: interrupted", file=sys.stderr, flush=True)
            return 130


def _main(argv: list[str]) -> int:
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        import_plugins(argv)
    except Exception as err:  # noqa: BLE001 - a plugin may fail in any way; report it on one line
        if debug:
            traceback.print_exc()
        usage = isinstance(err, (ImportError, FileNotFoundError))
        detail = " ".join(str(err).split()) if usage else f"{type(err).__name__}: {' '.join(str(err).split())}"
        print(f"qpnlp: error: --import: {detail}", file=sys.stderr)
        return 2 if usage else 1
    try:
        parser = build_parser()
    except Exception as err:  # noqa: BLE001 - a broken installation or plugin: one line, the traceback on --debug
        if debug:
            traceback.print_exc()
        print(f"qpnlp: error: {type(err).__name__}: {' '.join(str(err).split())} (run with --debug for the "
              f"traceback)", file=sys.stderr)
        return 1
    args, extras = parser.parse_known_args(argv)
    if extras:                                    # name the command whose options these are not
        prog = getattr(args, "prog", "qpnlp")
        print(f"{prog}: error: unrecognized arguments: {' '.join(extras)} (see '{prog} --help')", file=sys.stderr)
        raise SystemExit(2)
    args.debug = debug
    args.command_line = (["--debug"] if debug else []) + argv   # to start the command again (word2fun --processes)
    if getattr(args, "resume", False):            # the options given: the others continue the saved run's
        from qpnlp.commands._resume import GIVEN, given_options

        setattr(args, GIVEN, given_options(parser, argv, args))
    from qpnlp.commands._errors import run_command

    return run_command(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
