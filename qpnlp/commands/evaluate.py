"""``qpnlp evaluate CHECKPOINT``: score a saved model on a data set split."""

from __future__ import annotations

import argparse

from qpnlp.training.evaluate import CLASSIFICATION_SPLITS, evaluate_checkpoint

from ._console import result_line
from .match import questions_phrase
from ._outputs import prepare_outputs
from ._report import Report
from ._types import DEVICE_HELP, count_type, device_type, path_type


LABELS = {"map": "MAP", "mrr": "MRR", "p_at_1": "P@1"}
#: The report's ``counts`` keys in words (its ``split_unit``, the printed line).
UNITS = {"sentences": "sentences", "questions": "questions", "candidates": "candidates",
         "skipgram_pairs": "skip-gram pairs"}


def register(subparsers: dict) -> None:
    p = subparsers["root"].add_parser("evaluate", help="evaluate a checkpoint on a data set split")
    p.add_argument("checkpoint", help="directory written by `qpnlp train ... --save`")
    p.add_argument("--dataset", help="data set of the checkpoint's task (default: the one it was trained on); "
                                     "required for Word2Fun: 'sotu' or a TSV corpus (YEAR<TAB>tokens) whose held-out "
                                     "log-likelihood is scored (its words lowercased where the model's training "
                                     "stream lowercased them)")
    p.add_argument("--split", default=None,
                   help=f"classification: one of {', '.join(CLASSIFICATION_SPLITS)} of the training protocol's split "
                        "(CV: the fold the model was trained on); matching: any split file of the QA data set; "
                        "not for Word2Fun, scored on the whole corpus (default test)")
    p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
    p.add_argument("--max-questions", type=count_type(), default=None,
                   help="matching: only the first N questions (default: all)")
    p.add_argument("--device", type=device_type, default="cpu", help=DEVICE_HELP)
    p.add_argument("--report", metavar="FILE.json", type=path_type,
                   help="write the report to this JSON file (default: no report)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = Report(args, command="evaluate")
    prepare_outputs(args)
    with report.guard():
        return _evaluate(args, report)


def _evaluate(args, report: Report) -> int:
    result = evaluate_checkpoint(args.checkpoint, dataset=args.dataset, split=args.split, root=args.data,
                                 device=args.device, max_questions=args.max_questions)
    metrics = " ".join(f"{LABELS.get(k, k)} {v:.4f}" for k, v in result["metrics"].items() if isinstance(v, float))
    report.finish(model=result["model"], dataset=result["dataset"], split=result["split"], metrics=result["metrics"],
                  n=result["n"], counts=result["counts"], seed=result["seed"], checkpoint=result["checkpoint"],
                  split_counts={result["split"]: result["counts"]}, split_unit=", ".join(UNITS[k] for k in
                                                                                   result["counts"]),
                  config=result.get("config", {}),
                  details={k: v for k, v in result.items() if k not in
                           ("model", "dataset", "split", "metrics", "n", "counts", "seed", "checkpoint",
                            "wall_seconds", "config")})
    result_line(f"{result['dataset']} {result['split']}: {metrics} on {_counted(result)} ({result['model']})")
    return 0


def _counted(result: dict) -> str:
    """What the metrics were computed on, in words: ``"3 sentences"``, ``"812 skip-gram pairs"``, or a matcher's
    questions, over which the ranking metrics (MAP, MRR, P@1) average, as training counts them, with how many its
    split's filter removed (:func:`~qpnlp.commands.match.questions_phrase`), and its candidate answers (``n``: one
    question-candidate pair each): ``"4 questions (...), 12 candidate answers"``."""
    counts = result["counts"]
    if "questions" not in counts:
        return ", ".join(f"{v} {UNITS[k]}" for k, v in counts.items())
    removed = result.get("questions_removed", {}).get(result["split"])
    return f"{questions_phrase(counts['questions'], removed)}, {counts['candidates']} candidate answers"
