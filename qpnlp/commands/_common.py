"""Helpers shared by the CLI commands: reports, devices, training options."""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from qpnlp.training import TrainConfig


def write_report(path: str | None, report: dict) -> None:
    """Write a JSON report (dataset, split, metrics, seed, wall time, ...) if a path was given."""
    if not path:
        return
    report = {**report, "torch": torch.__version__, "python": platform.python_version(),
              "written": time.strftime("%Y-%m-%dT%H:%M:%S")}
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"report written to {out}")


def device_type(value: str) -> str:
    """argparse type: a usable torch device name."""
    device = torch.device(value)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError("CUDA requested but not available on this machine")
    return value


def add_training_options(parser: argparse.ArgumentParser, *, epochs: int, lr: float, batch_size: int) -> None:
    group = parser.add_argument_group("training")
    group.add_argument("--epochs", type=int, default=epochs, help="maximum epochs (default %(default)s)")
    group.add_argument("--batch-size", type=int, default=batch_size, help="(default %(default)s)")
    group.add_argument("--lr", type=float, default=lr, help="Adam learning rate, dense parameters (default %(default)s)")
    group.add_argument("--embedding-lr", type=float, default=None,
                       help="SparseAdam learning rate of the embedding tables (default: --lr)")
    group.add_argument("--phase-lr", type=float, default=None,
                       help="learning rate of the phase tables of complex embeddings (default: --embedding-lr)")
    group.add_argument("--weight-decay", type=float, default=0.0, help="L2 on dense parameters (default 0)")
    group.add_argument("--patience", type=int, default=4, help="early-stopping patience on dev accuracy")
    group.add_argument("--seed", type=int, default=0, help="seed of folds, initialisation and shuffling")
    group.add_argument("--device", type=device_type, default="cpu", help="cpu or cuda (default cpu)")
    group.add_argument("--max-len", type=int, default=None, help="truncate texts to their first N tokens")
    group.add_argument("--no-progress", action="store_true", help="no progress bars")
    group.add_argument("--report", metavar="FILE.json", help="write the metrics to this JSON file")


def add_vectors_option(parser: argparse.ArgumentParser) -> None:
    from qpnlp.data.vectors import VECTOR_SETS

    parser.add_argument("--vectors", metavar="NAME|PATH", default="glove-6b-50d",
                        help=f"pretrained vectors: a name ({', '.join(VECTOR_SETS)}) or a GloVe / word2vec / "
                             "fastText .vec text file, a word2vec .bin file or a spaCy model directory "
                             "(default %(default)s)")
    parser.add_argument("--glove", metavar="FILE", dest="vectors", help=argparse.SUPPRESS)  # qpnlp 0.1 spelling


def add_fallback_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pretrained-fallback", type=int, default=0, metavar="N",
                        help="append the N most frequent pretrained words to the training vocabulary, so unseen "
                             "test words keep their vectors (400000 = all of GloVe 6B; default 0: training words "
                             "only)")


def train_config(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                       embedding_lr=args.embedding_lr or args.lr, phase_lr=args.phase_lr,
                       weight_decay=args.weight_decay,
                       patience=args.patience, seed=args.seed, device=args.device, max_len=args.max_len,
                       progress=not args.no_progress)
