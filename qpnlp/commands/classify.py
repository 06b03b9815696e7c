"""``qpnlp train MODEL``: sentence classification under the papers' protocols, for every registered classifier.

One sub-command per classification model of the registry (``qpdn``,
``real-bow``, ``order-classifier``, ``cgrnn-classifier`` and any model a user
registers); its model options are generated from the model's config
(:mod:`._config_options`).
"""

from __future__ import annotations

import argparse
import time

from qpnlp.data import DATASETS, load_classification, splits
from qpnlp.data.vectors import load_vectors
from qpnlp.models import get_model_class, registered_models
from qpnlp.training import save_checkpoint
from qpnlp.training.classification import apply_setting, parse_grid, run_split, run_split_selected, summarise

from ._common import add_fallback_option, add_training_options, add_vectors_option, train_config, write_report
from ._config_options import add_config_options, config_options


def register(subparsers: dict) -> None:
    for name in registered_models("classification"):
        p = subparsers["train"].add_parser(
            name.replace("_", "-"), help=f"train {name} on a classification data set",
            description="Train and test under the papers' protocol: 10-fold CV (CR, MPQA, MR, SUBJ) or the fixed "
                        "splits (SST2, TREC); dev carved from training data for early stopping.")
        p.add_argument("--dataset", required=True, type=str.upper, choices=sorted(DATASETS),
                       help="data set name (case-insensitive)")
        p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
        p.add_argument("--folds", type=int, default=10, help="CV folds (default %(default)s)")
        p.add_argument("--max-splits", type=int, default=None, help="run only the first N folds")
        add_vectors_option(p)
        p.add_argument("--select", nargs="+", metavar="NAME=V1,V2", default=None,
                       help="select settings on dev inside each split from this grid of model options or "
                            "training settings (e.g. --select dropout=0,0.3 weighting=amplitude_norm,trainable); "
                            "only the selected setting is scored on test")
        p.add_argument("--save", metavar="DIRECTORY", help="save the model of the first split run")
        add_fallback_option(p)
        add_training_options(p, epochs=20, lr=1e-2, batch_size=32)
        add_config_options(p, get_model_class(name).config_class)
        p.set_defaults(func=run, kind=name)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    candidates = None if args.select is None else parse_grid(args.select)
    dataset = load_classification(args.dataset, root=args.data)
    pretrained = load_vectors(args.vectors)
    config = train_config(args)
    options = config_options(args)
    results = []
    for i, split in enumerate(splits(dataset, seed=args.seed, n_folds=args.folds)):
        if args.max_splits is not None and i >= args.max_splits:
            break
        if candidates is None:
            result, model, prepared, _ = run_split(args.kind, dataset, split, pretrained, options, config,
                                                   pretrained_fallback=args.pretrained_fallback)
        else:
            result, model, prepared, _ = run_split_selected(args.kind, dataset, split, pretrained, options, config,
                                                            candidates, pretrained_fallback=args.pretrained_fallback)
        results.append(result)
        chosen = "" if result.selected is None else f", selected {result.selected}"
        print(f"{dataset.name} {split.name}: test accuracy {result.test_accuracy:.4f} "
              f"(dev {result.dev_accuracy:.4f}, epoch {result.best_epoch}{chosen}, {result.seconds:.0f}s)",
              flush=True)
        if args.save and i == 0:
            used = config if result.selected is None else apply_setting(result.selected, {}, config)[1]
            save_checkpoint(args.save, model, vocabulary=prepared.vocab,
                            metadata=dict(dataset=dataset.name, split=split.name, seed=args.seed, folds=args.folds,
                                          label_names=list(dataset.label_names), train=used.to_dict(),
                                          max_len=args.max_len, selected=result.selected))
            print(f"checkpoint written to {args.save}")
    summary = summarise(results)
    print(f"{dataset.name}: test accuracy {summary['mean']:.4f} +- {summary['std']:.4f} over {summary['n']} "
          f"split(s), seed {args.seed}")
    write_report(args.report, dict(command="train", model=args.kind, dataset=dataset.name, split="test",
                                   metrics=dict(accuracy_mean=summary["mean"], accuracy_std=summary["std"]),
                                   splits=summary["per_split"], seed=args.seed, model_options=options,
                                   train=config.to_dict(), grid=candidates,
                                   wall_seconds=time.perf_counter() - start))
    return 0
