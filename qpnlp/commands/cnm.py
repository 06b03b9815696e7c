"""``qpnlp train cnm``: answer selection (TREC-QA, WikiQA) with the Complex-valued Network for Matching."""

from __future__ import annotations

import argparse
import time

from qpnlp.data import QA_DATASETS, load_glove_50d, load_glove_text
from qpnlp.models.cnm import CNM_HEADS, CNM_INITS, CNM_WEIGHTINGS, MIXTURES
from qpnlp.models.embedding import PHASE_INITS
from qpnlp.models.local_mixture import POOLINGS
from qpnlp.training import save_checkpoint
from qpnlp.training.matching import (LOSSES, MatchingConfig, evaluate_ranking, encode_qa, limit_questions,
                                     metrics_dict)

from ._common import add_fallback_option, add_training_options, write_report


def register(subparsers: dict) -> None:
    p = subparsers["train"].add_parser(
        "cnm", help="train CNM on an answer-selection data set",
        description="Train CNM (thesis 3.3, 5.1.3) on the train split, select the epoch on dev MAP, and score the "
                    "test split once when the data set has one (TREC-QA here ships train/dev only: dev is reported).")
    p.add_argument("--dataset", required=True, type=str.lower, choices=QA_DATASETS, help="trecqa or wikiqa")
    p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
    p.add_argument("--glove", metavar="FILE", help="GloVe-format text file (default: GloVe 6B 50d package)")
    p.add_argument("--no-pretrained", action="store_true", help="random amplitudes instead of GloVe (tests)")
    p.add_argument("--dim", type=int, default=50, help="dimension without pretrained vectors (default 50)")
    p.add_argument("--num-measurements", type=int, default=50, help="k (default 50)")
    p.add_argument("--windows", type=int, nargs="+", default=[1, 2, 3, 4], help="window sizes (default 1 2 3 4)")
    p.add_argument("--pooling", choices=POOLINGS, default="max")
    p.add_argument("--weighting", choices=CNM_WEIGHTINGS, default="amplitude_norm")
    p.add_argument("--mixture", choices=MIXTURES, default="local", help="global = CNM-Global-Mixture ablation")
    p.add_argument("--head", choices=CNM_HEADS, default="measurement",
                   help="trace = CNM-trace-inner-product ablation")
    p.add_argument("--real", action="store_true", help="CNM-Real ablation (real vectors of size 2d)")
    p.add_argument("--measurement-init", choices=CNM_INITS, default="identity")
    p.add_argument("--phase-init", choices=PHASE_INITS, default="uniform")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--loss", choices=LOSSES, default="triplet")
    p.add_argument("--margin", type=float, default=0.1, help="triplet hinge margin (default 0.1)")
    p.add_argument("--negatives", type=int, default=1, help="wrong candidates drawn per correct one (default 1)")
    p.add_argument("--max-questions", type=int, default=None,
                   help="use only the first N questions of each split (quick runs, tests)")
    p.add_argument("--save", metavar="CHECKPOINT", help="save the selected model")
    p.add_argument("--extra-train", nargs="+", default=[], metavar="DATASET", choices=sorted(QA_DATASETS),
                   help="add these data sets' train splits to the training data (transfer); dev and test stay "
                        "--dataset's")
    add_fallback_option(p)
    add_training_options(p, epochs=10, lr=1e-2, batch_size=32)
    p.set_defaults(func=run)


def model_options(args: argparse.Namespace) -> dict:
    return dict(num_measurements=args.num_measurements, windows=list(args.windows), pooling=args.pooling,
                weighting=args.weighting, mixture=args.mixture, head=args.head, real=args.real,
                measurement_init=args.measurement_init, phase_init=args.phase_init, dropout=args.dropout,
                **({"dim": args.dim} if args.no_pretrained else {}))


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
    pretrained = None if args.no_pretrained else (load_glove_text(args.glove) if args.glove else load_glove_50d())
    log = (lambda h: print(f"epoch {h['epoch']}: loss {h['train_loss']:.4f}  dev MAP {h['dev']['map']:.4f} "
                           f"MRR {h['dev']['mrr']:.4f}  ({h['seconds']:.0f}s)", flush=True))
    result = run_matching(args.dataset, model_options(args), config, pretrained=pretrained, root=args.data,
                          max_questions=args.max_questions, pretrained_fallback=args.pretrained_fallback,
                          extra_train=tuple(args.extra_train), log=log)
    print(f"{result.dataset} dev (selection, epoch {result.best_epoch}): MAP {result.dev['map']:.4f} "
          f"MRR {result.dev['mrr']:.4f} P@1 {result.dev['p_at_1']:.4f} on {result.dev['questions']} questions")
    for split, m in result.evaluation.items():
        print(f"{result.dataset} {split}: MAP {m['map']:.4f} MRR {m['mrr']:.4f} P@1 {m['p_at_1']:.4f} "
              f"on {m['questions']} questions")
    if args.save:
        save_checkpoint(args.save, kind="cnm", config=result.model_config, model=result.model,
                        vocab=result.vocab.to_dict(), label_names=["wrong", "correct"],
                        meta=dict(dataset=result.dataset, seed=args.seed, train=config.to_dict(),
                                  max_len=args.max_len, max_questions=args.max_questions))
        print(f"checkpoint written to {args.save}")
    write_report(args.report, dict(command="train", model="cnm", dataset=result.dataset,
                                   metrics=dict(dev=result.dev, **result.evaluation), best_epoch=result.best_epoch,
                                   history=result.history, seed=args.seed, model_options=model_options(args),
                                   train=config.to_dict(), train_questions=result.train_questions,
                                   train_triplets=result.train_triplets, oov_rate=result.oov_rate,
                                   extra_train=list(args.extra_train), pretrained_fallback=args.pretrained_fallback,
                                   vocabulary_size=len(result.vocab), wall_seconds=time.perf_counter() - start))
    return 0


def evaluate_checkpoint(args: argparse.Namespace, model, payload: dict) -> int:
    """``qpnlp evaluate`` for a CNM checkpoint: MAP / MRR / P@1 on any split file of the QA data set."""
    from qpnlp.data import Vocabulary, load_qa

    start = time.perf_counter()
    meta = payload["meta"]
    name = (args.dataset or meta.get("dataset") or "").lower()
    if not name:
        raise ValueError("the checkpoint does not name its data set; pass --dataset")
    dataset = limit_questions(load_qa(name, args.split, root=args.data, filter_questions=True),
                              getattr(args, "max_questions", None))
    data = encode_qa(dataset, Vocabulary.from_dict(payload["vocab"]))
    metrics = metrics_dict(evaluate_ranking(model, data, device=args.device, max_len=meta.get("max_len")))
    print(f"{dataset.name} {args.split}: MAP {metrics['map']:.4f} MRR {metrics['mrr']:.4f} "
          f"P@1 {metrics['p_at_1']:.4f} on {metrics['questions']} questions ({len(data)} pairs)")
    write_report(args.report, dict(command="evaluate", checkpoint=str(args.checkpoint), model="cnm",
                                   dataset=dataset.name, split=args.split, metrics=metrics, n=len(data),
                                   seed=meta.get("seed"), wall_seconds=time.perf_counter() - start))
    return 0
