"""The ``qpnlp`` command.

``qpnlp demo`` runs the main job on built-in defaults; ``qpnlp train MODEL ...``
and ``qpnlp evaluate CHECKPOINT ...`` train and score models. Each model's
command lives in its own module under :mod:`qpnlp.commands`, which registers
its sub-parser here; nothing in the library imports this module.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules under qpnlp.commands that provide ``register(subparsers_by_verb)``.
COMMAND_MODULES = ("demo", "classify", "evaluate", "word2fun", "cnm")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qpnlp", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{demo,train,evaluate}")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"qpnlp: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
