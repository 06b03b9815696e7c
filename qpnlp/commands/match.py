"""``qpnlp train MODEL``: answer selection (TREC-QA, WikiQA) for every registered matching model (CNM, CNM-Real)."""

from __future__ import annotations

import argparse
import time

from qpnlp.data import QA_DATASETS
from qpnlp.data.vectors import load_vectors
from qpnlp.models import get_model_class, registered_models
from qpnlp.training import save_checkpoint
from qpnlp.training.matching import LOSSES, MatchingConfig

from ._common import add_fallback_option, add_training_options, add_vectors_option, write_report
from ._config_options import add_config_options, config_options


def register(subparsers: dict) -> None:
    for name in registered_models("matching"):
        p = subparsers["train"].add_parser(
            name.replace("_", "-"), help=f"train {name} on an answer-selection data set",
            description=f"Train {name} (thesis 3.3, 5.1.3) on the train split, select the epoch on dev MAP, and score "
                        "the test split once when the data set has one (TREC-QA here ships train/dev only: dev is "
                        "reported).")
        p.add_argument("--dataset", required=True, type=str.lower, choices=QA_DATASETS, help="trecqa or wikiqa")
        p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
        add_vectors_option(p)
        p.add_argument("--no-pretrained", action="store_true", help="random amplitudes instead of GloVe (tests)")
        p.add_argument("--dim", type=int, default=50, help="dimension without pretrained vectors (default %(default)s)")
        p.add_argument("--loss", choices=LOSSES, default="triplet", help="(default %(default)s)")
        p.add_argument("--margin", type=float, default=0.1, help="triplet hinge margin (default %(default)s)")
        p.add_argument("--negatives", type=int, default=1,
                       help="wrong candidates drawn per correct one (default %(default)s)")
        p.add_argument("--max-questions", type=int, default=None,
                       help="use only the first N questions of each split (quick runs, tests)")
        p.add_argument("--save", metavar="DIRECTORY", help="save the selected model")
        p.add_argument("--extra-train", nargs="+", default=[], metavar="DATASET", choices=sorted(QA_DATASETS),
                       help="add these data sets' train splits to the training data (transfer); dev and test stay "
                            "--dataset's")
        add_fallback_option(p)
        add_training_options(p, epochs=10, lr=1e-2, batch_size=32)
        add_config_options(p, get_model_class(name).config_class)
        p.set_defaults(func=run, kind=name)


def model_options(args: argparse.Namespace) -> dict:
    return {**config_options(args), **({"dim": args.dim} if args.no_pretrained else {})}


def matching_config(args: argparse.Namespace) -> MatchingConfig:
    return MatchingConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                          embedding_lr=args.embedding_lr or args.lr, phase_lr=args.phase_lr,
                          weight_decay=args.weight_decay,
                          patience=args.patience, seed=args.seed, device=args.device, max_len=args.max_len,
                          progress=not args.no_progress, loss=args.loss, margin=args.margin, negatives=args.negatives)


def run(args: argparse.Namespace) -> int:
    from qpnlp.training.matching import run_matching

    start = time.perf_counter()
    config = matching_config(args)
    pretrained = None if args.no_pretrained else load_vectors(args.vectors)
    log = (lambda h: print(f"epoch {h['epoch']}: loss {h['train_loss']:.4f}  dev MAP {h['dev']['map']:.4f} "
                           f"MRR {h['dev']['mrr']:.4f}  ({h['seconds']:.0f}s)", flush=True))
    result = run_matching(args.dataset, model_options(args), config, pretrained=pretrained, model=args.kind,
                          root=args.data, max_questions=args.max_questions,
                          pretrained_fallback=args.pretrained_fallback, extra_train=tuple(args.extra_train), log=log)
    print(f"{result.dataset} dev (selection, epoch {result.best_epoch}): MAP {result.dev['map']:.4f} "
          f"MRR {result.dev['mrr']:.4f} P@1 {result.dev['p_at_1']:.4f} on {result.dev['questions']} questions")
    for split, m in result.evaluation.items():
        print(f"{result.dataset} {split}: MAP {m['map']:.4f} MRR {m['mrr']:.4f} P@1 {m['p_at_1']:.4f} "
              f"on {m['questions']} questions")
    if args.save:
        save_checkpoint(args.save, result.model, vocabulary=result.vocab,
                        metadata=dict(dataset=result.dataset, seed=args.seed, train=config.to_dict(),
                                      label_names=["wrong", "correct"], max_len=args.max_len,
                                      max_questions=args.max_questions))
        print(f"checkpoint written to {args.save}")
    write_report(args.report, dict(command="train", model=args.kind, dataset=result.dataset,
                                   metrics=dict(dev=result.dev, **result.evaluation), best_epoch=result.best_epoch,
                                   history=result.history, seed=args.seed, model_options=model_options(args),
                                   train=config.to_dict(), train_questions=result.train_questions,
                                   train_triplets=result.train_triplets, oov_rate=result.oov_rate,
                                   extra_train=list(args.extra_train), pretrained_fallback=args.pretrained_fallback,
                                   vocabulary_size=len(result.vocab), wall_seconds=time.perf_counter() - start))
    return 0
