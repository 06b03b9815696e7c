"""``qpnlp convert OLD NEW``: turn a checkpoint saved by qpnlp 0.1 into a model directory of today's format."""

from __future__ import annotations

import argparse
from pathlib import Path

from qpnlp.training import convert_legacy_checkpoint

from ._console import status_line
from ._outputs import check_output_path


def register(subparsers: dict) -> None:
    p = subparsers["root"].add_parser(
        "convert", help="convert a qpnlp 0.1 checkpoint (a file of `qpnlp train ... --save`, or a Word2Fun directory) "
                        "to a model directory")
    p.add_argument("old", help="a qpnlp 0.1 checkpoint file, or a qpnlp 0.1 Word2Fun directory")
    p.add_argument("new", help="directory to write (config.json + model.safetensors + vocabulary.json); a saved "
                               "qpnlp model there is replaced, any other non-empty directory refused")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    old = Path(args.old)
    # Writing replaces the directory: never one that is not a saved model (the user's own files).
    check_output_path(args.new, "output directory", directory=True, model=True)
    if old.is_dir():
        from qpnlp.word2fun import convert_legacy_word2fun

        out = convert_legacy_word2fun(old, args.new)
    else:
        out = convert_legacy_checkpoint(old, args.new)
    status_line(f"converted {old} -> {out}")
    return 0
