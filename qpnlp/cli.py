"""The ``qpnlp`` command.

``qpnlp demo`` runs the main job on built-in defaults; ``qpnlp train MODEL ...``
and ``qpnlp evaluate CHECKPOINT ...`` train and score models. Each model's
command lives in its own module under :mod:`qpnlp.commands`, which registers
its sub-parser here; nothing in the library imports this module.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

# Modules under qpnlp.commands that provide ``register(subparsers_by_verb)``.
COMMAND_MODULES = ("demo", "classify", "match", "word2fun", "evaluate", "convert")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qpnlp", description=__doc__.splitlines()[0])
    parser.add_argument("--import", dest="plugins", action="append", default=[], metavar="MODULE|FILE.py",
                        help="import this module or Python file first, so the models it registers get a "
                             "`qpnlp train` command (repeatable; installed packages can instead declare a "
                             "'qpnlp.models' entry point)")
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
    return parser


def import_plugins(argv: list[str]) -> None:
    """Import the ``--import`` modules or files named in ``argv`` (before the parser is built from the registry)."""
    names = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--import"]
    names += [a.split("=", 1)[1] for a in argv if a.startswith("--import=")]
    for name in names:
        if name.endswith(".py"):
            path = Path(name)
            if not path.is_file():
                raise FileNotFoundError(f"--import {name}: no such file")
            name = f"qpnlp_plugin_{path.stem}"
            if name in sys.modules:                      # already imported in this process (main() called twice)
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        import_plugins(argv)
    except (ImportError, FileNotFoundError) as err:
        print(f"qpnlp: error: {err}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"qpnlp: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
