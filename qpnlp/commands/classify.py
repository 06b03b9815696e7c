"""``qpnlp train qpdn|real-bow``: sentence classification under the papers' protocols."""

from __future__ import annotations

import argparse
import time

from qpnlp.data import DATASETS, load_classification, load_glove_50d, load_glove_text, splits
from qpnlp.models.embedding import PHASE_INITS
from qpnlp.models.weighting import WEIGHTINGS
from qpnlp.training import save_checkpoint
from qpnlp.training.classification import apply_setting, parse_grid, run_split, run_split_selected, summarise

from ._common import add_fallback_option, add_training_options, train_config, write_report

KINDS = {"qpdn": "qpdn", "real-bow": "real_bow"}


def register(subparsers: dict) -> None:
    for name, kind in KINDS.items():
        p = subparsers["train"].add_parser(
            name, help=f"train {name} on a classification data set",
            description="Train and test under the papers' protocol: 10-fold CV (CR, MPQA, MR, SUBJ) or the fixed "
                        "splits (SST2, TREC); dev carved from training data for early stopping.")
        p.add_argument("--dataset", required=True, type=str.upper, choices=sorted(DATASETS),
                       help="data set name (case-insensitive)")
        p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
        p.add_argument("--folds", type=int, default=10, help="CV folds (default 10)")
        p.add_argument("--max-splits", type=int, default=None, help="run only the first N folds")
        p.add_argument("--glove", metavar="FILE", help="GloVe-format text file (default: GloVe 6B 50d package)")
        p.add_argument("--num-measurements", type=int, default=50, help="k (default 50)")
        p.add_argument("--weighting", choices=WEIGHTINGS, default="amplitude_norm")
        p.add_argument("--complete", action="store_true", help="orthonormal basis of d measurements")
        p.add_argument("--fixed-projectors", action="store_true", help="freeze orthogonal measurements")
        p.add_argument("--head", choices=("measurement", "dense"), default="measurement",
                       help="dense = dense layer on rho instead of projectors (ablation)")
        p.add_argument("--phase-init", choices=PHASE_INITS, default="uniform")
        p.add_argument("--dropout", type=float, default=0.0)
        p.add_argument("--select", nargs="+", metavar="NAME=V1,V2", default=None,
                       help="select settings on dev inside each split from this grid of model options or "
                            "training settings (e.g. --select dropout=0,0.3 weighting=amplitude_norm,trainable); "
                            "only the selected setting is scored on test")
        p.add_argument("--save", metavar="CHECKPOINT", help="save the model of the first split run")
        add_fallback_option(p)
        add_training_options(p, epochs=20, lr=1e-2, batch_size=32)
        p.set_defaults(func=run, kind=kind)


def model_options(args: argparse.Namespace) -> dict:
    if args.kind == "real_bow":
        return dict(weighting=args.weighting, dropout=args.dropout)
    return dict(num_measurements=args.num_measurements, weighting=args.weighting, complete=args.complete,
                orthonormal=args.fixed_projectors, train_measurements=not args.fixed_projectors,
                head=args.head, phase_init=args.phase_init, dropout=args.dropout)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    candidates = None if args.select is None else parse_grid(args.select)
    dataset = load_classification(args.dataset, root=args.data)
    pretrained = load_glove_text(args.glove) if args.glove else load_glove_50d()
    config = train_config(args)
    results = []
    for i, split in enumerate(splits(dataset, seed=args.seed, n_folds=args.folds)):
        if args.max_splits is not None and i >= args.max_splits:
            break
        if candidates is None:
            result, model, prepared, model_config = run_split(args.kind, dataset, split, pretrained,
                                                              model_options(args), config,
                                                              pretrained_fallback=args.pretrained_fallback)
        else:
            result, model, prepared, model_config = run_split_selected(
                args.kind, dataset, split, pretrained, model_options(args), config, candidates,
                pretrained_fallback=args.pretrained_fallback)
        results.append(result)
        chosen = "" if result.selected is None else f", selected {result.selected}"
        print(f"{dataset.name} {split.name}: test accuracy {result.test_accuracy:.4f} "
              f"(dev {result.dev_accuracy:.4f}, epoch {result.best_epoch}{chosen}, {result.seconds:.0f}s)",
              flush=True)
        if args.save and i == 0:
            used = config if result.selected is None else apply_setting(result.selected, {}, config)[1]
            save_checkpoint(args.save, kind=args.kind, config=model_config, model=model,
                            vocab=prepared.vocab.to_dict(), label_names=list(dataset.label_names),
                            meta=dict(dataset=dataset.name, split=split.name, seed=args.seed, folds=args.folds,
                                      train=used.to_dict(), max_len=args.max_len, selected=result.selected))
    summary = summarise(results)
    print(f"{dataset.name}: test accuracy {summary['mean']:.4f} +- {summary['std']:.4f} over {summary['n']} "
          f"split(s), seed {args.seed}")
    write_report(args.report, dict(command="train", model=args.kind, dataset=dataset.name, split="test",
                                   metrics=dict(accuracy_mean=summary["mean"], accuracy_std=summary["std"]),
                                   splits=summary["per_split"], seed=args.seed, model_options=model_options(args),
                                   train=config.to_dict(), grid=candidates,
                                   wall_seconds=time.perf_counter() - start))
    return 0
