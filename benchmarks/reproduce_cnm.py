"""Reproduce CNM (thesis Tables 5.6, 5.8, 5.9) on WikiQA and TREC-QA, with the ablations and the BM25 floor.

For each data set, variant and seed: build the vocabulary from the training
split, train with the triplet hinge loss, select the epoch on dev MAP, and
score the test split once with the selected parameters. TREC-QA here ships
train and dev only, so its dev metrics (the selection split, hence
optimistic) are what is reported for it. BM25 (qpnlp.evaluation.evaluate_bm25)
is scored on the same filtered dev and test questions.

Variants (thesis Table 5.9): ``cnm``; ``cnm-real`` (real vectors of size 2d);
``cnm-global`` (one global mixture per sentence); ``cnm-trace`` (trace inner
product of the position-averaged local mixtures instead of measurements);
``fasttext-maxpool`` (max-pooled real word vectors of size 2d, no mixture and
no measurement; the options below that it does not have are not passed).

Usage::

    python benchmarks/reproduce_cnm.py                                  # defaults below
    python benchmarks/reproduce_cnm.py --datasets wikiqa --variants cnm --epochs 3 --seeds 0 1

``--best-test-epoch-diagnostic`` also scores test after every epoch (an
observer: selection and the reported test figures are unchanged) and adds
the best per-epoch test MAP / MRR, the way the public code reported, as a
separate diagnostic column: it measures how much of a gap that protocol
explains and is never a result.

Writes ``<out>/<tag>.json`` and ``<out>/<tag>.md`` (tag default ``reproduce_cnm``); the table ends with the
mean +- standard deviation over seeds of every (data set, model) run on two or more seeds.
``--summarise RUN.json ...`` prints those means for earlier runs, without training.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from qpnlp.commands._types import chunk_overhead_type
from qpnlp.data import load_qa
from qpnlp.data.vectors import DEFAULT_VECTORS, load_vectors, recommended_fallback
from qpnlp.models import CNM, CNMConfig, get_model_class
from qpnlp.evaluation import evaluate_bm25
from qpnlp.training.length_chunks import DEFAULT_OVERHEAD
from qpnlp.training.matching import MatchingConfig, metrics_dict, run_matching

# The library's defaults (what `qpnlp train cnm` does with no flags): the reproduction runs with them.
TRAIN = CNM.training_defaults
CONFIG = CNMConfig(num_words=2)

# variant -> (registered model, options)
VARIANTS = {
    "cnm": ("cnm", {}),
    "cnm-real": ("cnm_real", {}),
    "cnm-global": ("cnm", dict(mixture="global")),
    "cnm-trace": ("cnm", dict(head="trace")),
    "fasttext-maxpool": ("fasttext_maxpool", {}),
}
PUBLISHED = {"trecqa": dict(map=0.7701, mrr=0.8591), "wikiqa": dict(map=0.6548, mrr=0.6664)}
PUBLISHED_ABLATION_TREC = {"cnm-real": (0.7112, 0.7922), "cnm-global": (0.6968, 0.7829),
                           "cnm-trace": (0.6952, 0.7688), "fasttext-maxpool": (0.6659, 0.7152),
                           "cnm": (0.7701, 0.8591)}


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["wikiqa", "trecqa"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=TRAIN["epochs"])
    parser.add_argument("--patience", type=int, default=TRAIN["patience"])
    parser.add_argument("--batch-size", type=int, default=TRAIN["batch_size"])
    parser.add_argument("--length-chunks", type=chunk_overhead_type, default=DEFAULT_OVERHEAD, metavar="N|off",
                        help="length-sorted chunks of the batches (qpnlp.training.length_chunks; 'off': whole "
                             "batches, as the runs before commit 9dc8913; default %(default)s)")
    parser.add_argument("--lr", type=float, default=None,
                        help="default: the model's per-data-set default (CNM.training_defaults)")
    parser.add_argument("--num-measurements", type=int, default=CONFIG.num_measurements)
    parser.add_argument("--measurement-init", default=CONFIG.measurement_init,
                        choices=("identity", "orthogonal", "random"))
    parser.add_argument("--phase-init", default=CONFIG.phase_init, choices=("uniform", "zero", "sign"))
    parser.add_argument("--dropout", type=float, default=CONFIG.dropout)
    parser.add_argument("--windows", type=int, nargs="+", default=list(CONFIG.windows),
                        help="local-mixture window sizes (default 1 2 3 4, the thesis' l = 1..4)")
    parser.add_argument("--margin", type=float, default=None,
                        help="triplet hinge margin (default: CNM's per data set, CNM.training_defaults; thesis: 0.1)")
    parser.add_argument("--negatives", type=int, nargs="+", default=None,
                        help="wrong candidates per correct one, one value per data set (default 1 each)")
    parser.add_argument("--pretrained-fallback", type=int, default=None,
                        help="append this many most frequent pretrained words to the training vocabulary (default: "
                             "the vector set's own, 400000 for glove-6b-50d)")
    parser.add_argument("--extra-train", nargs="+", default=[], metavar="DATASET",
                        help="add these data sets' train splits to each data set's training data (transfer)")
    parser.add_argument("--best-test-epoch-diagnostic", action="store_true",
                        help="also score test after every epoch (observer only) and report the best such MAP, "
                             "the public code's protocol, as a separate diagnostic column")
    parser.add_argument("--vectors", default=DEFAULT_VECTORS, help="pretrained vectors: name or path "
                        "(qpnlp.data.vectors.load_vectors; default glove-6b-50d)")
    parser.add_argument("--vectors-scale", type=float, default=None, help="factor applied to the vectors")
    parser.add_argument("--train-split", default=None,
                        help="training file (default: train-all where present, i.e. TREC-QA's TRAIN-ALL, else train)")
    parser.add_argument("--max-len", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/cnm")
    parser.add_argument("--tag", default="reproduce_cnm", help="output file stem (default reproduce_cnm)")
    parser.add_argument("--summarise", nargs="+", metavar="RUN_JSON",
                        help="print the mean +- std over seeds of these earlier runs' results, no training")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    if args.summarise:
        for path in args.summarise:
            print(f"{path}:\n" + "\n".join(_seed_means(json.loads(Path(path).read_text())["runs"])))
        return
    torch.set_num_threads(args.threads)
    negatives = dict(zip(args.datasets, args.negatives or [TRAIN["negatives"]] * len(args.datasets)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if args.vectors_scale is None:
        args.vectors_scale = CNM.training_default("vectors_scale", vectors=args.vectors)
    pretrained = load_vectors(args.vectors, scale=args.vectors_scale)
    if args.pretrained_fallback is None:
        args.pretrained_fallback = recommended_fallback(args.vectors)
    runs, floors = [], {}
    for name in args.datasets:
        for split in ("dev", "test"):
            try:
                floors[(name, split)] = metrics_dict(evaluate_bm25(load_qa(name, split)))
            except FileNotFoundError:
                pass
        for variant in args.variants:
            for seed in args.seeds:
                lr = args.lr if args.lr is not None else \
                    CNM.training_default("lr", dataset=name, vectors=args.vectors)
                margin = args.margin if args.margin is not None else \
                    CNM.training_default("margin", dataset=name, vectors=args.vectors, fallback=MatchingConfig.margin)
                config = MatchingConfig(epochs=args.epochs, batch_size=args.batch_size, lr=lr,
                                        embedding_lr=lr, patience=args.patience, seed=seed,
                                        max_len=args.max_len, progress=False, negatives=negatives[name],
                                        margin=margin, length_chunks=args.length_chunks)
                options = dict(num_measurements=args.num_measurements, dropout=args.dropout,
                               measurement_init=args.measurement_init, phase_init=args.phase_init,
                               windows=list(args.windows), **VARIANTS[variant][1])
                fields = {f.name for f in dataclasses.fields(get_model_class(VARIANTS[variant][0]).config_class)}
                options = {k: v for k, v in options.items() if k in fields}
                t0 = time.perf_counter()
                result = run_matching(name, options, config, pretrained=pretrained, model=VARIANTS[variant][0],
                                      pretrained_fallback=args.pretrained_fallback,
                                      extra_train=tuple(x for x in args.extra_train if x != name),
                                      observe_splits=("test",) if args.best_test_epoch_diagnostic else (),
                                      train_split=args.train_split,
                                      log=lambda h: print(f"  {name} {variant} seed {seed} epoch {h['epoch']}: "
                                                          f"loss {h['train_loss']:.4f} dev MAP {h['dev']['map']:.4f}",
                                                          flush=True))
                run = dict(dataset=name, variant=variant, seed=seed, lr=lr, margin=margin, options=options, dev=result.dev,
                           evaluation=result.evaluation, best_epoch=result.best_epoch,
                           epochs_run=len(result.history), history=result.history,
                           train_split=result.train_split, train_questions=result.train_questions,
                           train_triplets=result.train_triplets,
                           oov_rate=result.oov_rate, seconds=time.perf_counter() - t0)
                if any("test" in h for h in result.history):
                    run["best_test_epoch"] = max((h["test"] for h in result.history), key=lambda m: m["map"])
                runs.append(run)
                test = result.evaluation.get("test")
                print(f"{name} {variant} seed {seed}: dev MAP {result.dev['map']:.4f} MRR {result.dev['mrr']:.4f}"
                      + (f" | test MAP {test['map']:.4f} MRR {test['mrr']:.4f}" if test else "")
                      + f" (epoch {result.best_epoch}, {run['seconds']:.0f}s)", flush=True)
    wall = time.perf_counter() - start
    with open("/proc/loadavg") as fh:
        load = " ".join(fh.read().split()[:3])
    payload = dict(args=vars(args), runs=runs, bm25={f"{k[0]} {k[1]}": v for k, v in floors.items()},
                   published=PUBLISHED, wall_seconds=wall, load_average_end=load, torch=torch.__version__,
                   python=platform.python_version(), threads=torch.get_num_threads(), cpus=os.cpu_count())
    (out / f"{args.tag}.json").write_text(json.dumps(payload, indent=2) + "\n")
    table = _markdown(runs, floors, args, wall, load)
    (out / f"{args.tag}.md").write_text(table)
    print(table)


def _fmt(m: dict | None) -> str:
    return " | ".join(f"{m[k]:.4f}" for k in ("map", "mrr", "p_at_1")) + f" | {m['questions']}" if m else "- | - | - | -"


def _per_dataset_text(args, runs, key: str) -> str:
    """A setting as run (``lr``, ``margin``): the flag, or each data set's default (``CNM.training_defaults``)."""
    if getattr(args, key) is not None:
        return f"{getattr(args, key):g}"
    used = sorted({(r["dataset"], r[key]) for r in runs})
    return "per data set (" + ", ".join(f"{d} {value:g}" for d, value in used) + ")"


def _markdown(runs, floors, args, wall, load) -> str:
    diagnostic = args.best_test_epoch_diagnostic
    lines = [f"# CNM reproduction ({time.strftime('%Y-%m-%d %H:%M')} UTC)", "",
             f"epochs <= {args.epochs} (patience {args.patience}, selection on dev MAP), batch {args.batch_size}, "
             f"lr {_per_dataset_text(args, runs, 'lr')}, k {args.num_measurements} ({args.measurement_init} init), "
             f"phase init {args.phase_init}, "
             f"dropout {args.dropout}, windows {args.windows}, margin {_per_dataset_text(args, runs, 'margin')}, pretrained fallback {args.pretrained_fallback} words, "
             f"extra training data {args.extra_train or 'none'}, vectors {args.vectors} (scale {args.vectors_scale}), "
             f"training files {sorted({(r['dataset'], r['train_split'], r['train_questions']) for r in runs})}, "
             f"negatives {args.negatives or 1}, seeds {args.seeds}, "
             f"{args.threads} thread(s); wall time {wall / 60:.1f} min; load average at the end {load}.", "",
             "| data set | model | seed | best epoch | dev MAP | dev MRR | dev P@1 | dev questions | "
             "test MAP | test MRR | test P@1 | test questions | seconds |"
             + (" best test epoch MAP / MRR (diagnostic) |" if diagnostic else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if diagnostic else "")]
    for r in runs:
        best = r.get("best_test_epoch")
        extra = (f" {best['map']:.4f} / {best['mrr']:.4f} |" if best else " - |") if diagnostic else ""
        lines.append(f"| {r['dataset']} | {r['variant']} | {r['seed']} | {r['best_epoch']} | {_fmt(r['dev'])} | "
                     f"{_fmt(r['evaluation'].get('test'))} | {r['seconds']:.0f} |" + extra)
    for name in args.datasets:
        lines.append(f"| {name} | BM25 floor | - | - | {_fmt(floors.get((name, 'dev')))} | "
                     f"{_fmt(floors.get((name, 'test')))} | - |" + (" - |" if diagnostic else ""))
    lines += ["", *_seed_means(runs)]
    lines += ["", "Published (thesis Tables 5.6, 5.8; test sets): TREC-QA CNM MAP 0.7701 MRR 0.8591; "
              "WikiQA CNM MAP 0.6548 MRR 0.6664. Table 5.9 (TREC-QA) ablations: CNM-Real 0.7112 / 0.7922, "
              "CNM-Global-Mixture 0.6968 / 0.7829, CNM-trace-inner-product 0.6952 / 0.7688, FastText-MaxPool "
              "0.6659 / 0.7152." + (" k, the initial measurements and phases and the windows are CNM's options: "
                                    "fasttext-maxpool has none of them." if "fasttext-maxpool" in args.variants
                                    else ""), ""]
    return "\n".join(lines) + "\n"


def _seed_means(runs: list[dict]) -> list[str]:
    """Markdown rows: mean +- sample std over seeds of dev and test MAP / MRR per (data set, model) with >= 2 seeds."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["variant"]), []).append(r)
    rows = ["| data set | model | seeds | dev MAP | dev MRR | test MAP | test MRR |", "|---|---|---|---|---|---|---|"]
    for (name, variant), group in groups.items():
        if len(group) < 2:
            continue
        cells = []
        for split, metric in (("dev", "map"), ("dev", "mrr"), ("test", "map"), ("test", "mrr")):
            values = [r["dev"][metric] if split == "dev" else (r["evaluation"].get("test") or {}).get(metric)
                      for r in group]
            cells.append("-" if None in values else f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}")
        rows.append(f"| {name} | {variant} | {len(group)} | " + " | ".join(cells) + " |")
    return rows if len(rows) > 2 else []


if __name__ == "__main__":
    main()
