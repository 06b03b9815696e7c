"""``qpnlp evaluate CHECKPOINT``: score a saved model on a data set split."""

from __future__ import annotations

import argparse

from qpnlp.training.evaluate import CLASSIFICATION_SPLITS, evaluate_checkpoint

from ._common import device_type, write_report


LABELS = {"map": "MAP", "mrr": "MRR", "p_at_1": "P@1"}


def register(subparsers: dict) -> None:
    p = subparsers["root"].add_parser("evaluate", help="evaluate a checkpoint on a data set split")
    p.add_argument("checkpoint", help="directory written by `qpnlp train ... --save`")
    p.add_argument("--dataset", help="data set (default: the one it was trained on); Word2Fun: 'sotu' or a "
                                     "TSV corpus (YEAR<TAB>tokens) whose held-out log-likelihood is scored")
    p.add_argument("--split", default="test",
                   help=f"classification: one of {', '.join(CLASSIFICATION_SPLITS)} of the training protocol's split "
                        "(CV: the fold the model was trained on); matching: any split file of the QA data set "
                        "(default %(default)s)")
    p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
    p.add_argument("--max-questions", type=int, default=None, help="matching: only the first N questions")
    p.add_argument("--device", type=device_type, default="cpu", help="(default %(default)s)")
    p.add_argument("--report", metavar="FILE.json", help="write the metrics to this JSON file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = evaluate_checkpoint(args.checkpoint, dataset=args.dataset, split=args.split, root=args.data,
                                 device=args.device, max_questions=args.max_questions)
    metrics = " ".join(f"{LABELS.get(k, k)} {v:.4f}" for k, v in report["metrics"].items() if isinstance(v, float))
    print(f"{report['dataset']} {report['split']}: {metrics} on {report['n']} items ({report['model']})")
    write_report(args.report, dict(command="evaluate", **report))
    return 0
