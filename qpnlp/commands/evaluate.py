"""``qpnlp evaluate CHECKPOINT``: score a saved classifier on a data set split."""

from __future__ import annotations

import argparse
import time

from qpnlp.data import EncodedTexts, Vocabulary, load_classification, splits
from qpnlp.training import accuracy, load_checkpoint

from ._common import device_type, write_report

SPLITS = ("train", "dev", "test")


def register(subparsers: dict) -> None:
    p = subparsers["root"].add_parser("evaluate", help="evaluate a checkpoint on a data set split")
    p.add_argument("checkpoint", help="file written by `qpnlp train ... --save`")
    p.add_argument("--dataset", type=str.upper, help="data set (default: the one it was trained on)")
    p.add_argument("--split", default="test",
                   help=f"classification: one of {', '.join(SPLITS)} of the training protocol's split (CV: the fold "
                        "the model was trained on); QA (cnm): any split file of the data set folder")
    p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
    p.add_argument("--device", type=device_type, default="cpu")
    p.add_argument("--report", metavar="FILE.json", help="write the metrics to this JSON file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    model, payload = load_checkpoint(args.checkpoint, device=args.device)
    if payload["kind"] == "cnm":
        from .cnm import evaluate_checkpoint

        return evaluate_checkpoint(args, model, payload)
    if args.split not in SPLITS:
        raise ValueError(f"--split must be one of {', '.join(SPLITS)} for a classifier; got {args.split!r}")
    meta = payload["meta"]
    name = args.dataset or meta.get("dataset")
    if not name:
        raise ValueError("the checkpoint does not name its data set; pass --dataset")
    dataset = load_classification(name, root=args.data)
    wanted = meta.get("split", "fixed") if name == meta.get("dataset") else "fixed"
    split = next((s for s in splits(dataset, seed=meta.get("seed", 0), n_folds=meta.get("folds", 10))
                  if s.name == wanted), None)
    if split is None:
        raise ValueError(f"split {wanted!r} not found for {name}")
    part = dict(zip(SPLITS, split.subsets(dataset)))[args.split]
    vocab = Vocabulary.from_dict(payload["vocab"])
    data = EncodedTexts(vocab.encode_many(part.texts), part.labels)
    acc = accuracy(model, data, device=args.device, max_len=meta.get("max_len"))
    print(f"{name} {split.name} {args.split}: accuracy {acc:.4f} on {len(data)} texts")
    write_report(args.report, dict(command="evaluate", checkpoint=str(args.checkpoint), model=payload["kind"],
                                   dataset=name, split=f"{split.name} {args.split}", metrics=dict(accuracy=acc),
                                   n=len(data), seed=meta.get("seed"), wall_seconds=time.perf_counter() - start))
    return 0
