"""Dev accuracy of one QPDN / real-BoW setting on the first split of a data set (for model selection).

The first split is fold 1 of the seeded 10-fold CV (CR, MPQA, MR, SUBJ) or
the fixed split (SST-2, TREC); the dev part is carved from its training
part. Only ``dev_accuracy`` is printed: test data is never scored here.
Same call as ``benchmarks/reproduce_qpdn.py`` (``run_split``), first split
only. Selection table: ``benchmarks/results/qpdn/SELECTION.md``.

Usage::

    python benchmarks/qpdn_dev_probe.py MR qpdn 400000 '{"phase_init": "sign"}'

Arguments: data set, model kind (``qpdn`` | ``real_bow``), number of
pretrained fallback words, and optional JSON options: model options, or
training settings (any :class:`~qpnlp.training.TrainConfig` field such as
``lr``, ``embedding_lr``, ``phase_lr``, ``batch_size``, ``weight_decay``),
routed as in a selection grid
(:func:`~qpnlp.training.classification.apply_setting`).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from qpnlp.data import load_classification, splits
from qpnlp.data.vectors import load_vectors
from qpnlp.training import TrainConfig
from qpnlp.training.classification import apply_setting, run_split
from qpnlp.training.defaults import training_settings

#: QPDN's own training settings (epochs 30, batch 32, lr 1e-2, embedding_lr 1e-3, patience 4), for either kind.
DEFAULT_TRAIN = dict({k: training_settings("qpdn")[k] for k in ("epochs", "batch_size", "lr", "embedding_lr",
                                                               "patience")}, seed=0, progress=False)


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=str.upper)
    parser.add_argument("kind", choices=("qpdn", "real_bow"))
    parser.add_argument("fallback", type=int, help="pretrained fallback words (0 = training words only)")
    parser.add_argument("options", nargs="?", default="{}", help="JSON model / training options")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--vectors", default="glove-6b-50d", help="name or path (qpnlp.data.vectors.load_vectors)")
    parser.add_argument("--vectors-scale", type=float, default=None, help="factor applied to the vectors")
    parser.add_argument("--vectors-backoff", choices=("on", "off"), default=None,
                        help="look missing words up by other spellings and compound parts (default: off)")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    base = dict(weighting="amplitude_norm", **({"num_measurements": 50} if args.kind == "qpdn" else {}))
    options, config = apply_setting(json.loads(args.options), base, TrainConfig(**DEFAULT_TRAIN))
    dataset = load_classification(args.dataset)
    split = next(iter(splits(dataset, seed=0, n_folds=10)))
    start = time.time()
    vectors = load_vectors(args.vectors, scale=args.vectors_scale,
                           backoff=None if args.vectors_backoff is None else args.vectors_backoff == "on")
    result, _, prepared, _ = run_split(args.kind, dataset, split, vectors, options, config,
                                       pretrained_fallback=args.fallback)
    print(json.dumps(dict(ds=args.dataset, kind=args.kind, fallback=args.fallback, extra=args.options,
                          vectors=args.vectors, scale=args.vectors_scale, oov=prepared.oov_rate,
                          dev=round(result.dev_accuracy, 4), epoch=result.best_epoch, V=len(prepared.vocab),
                          s=round(time.time() - start))), flush=True)


if __name__ == "__main__":
    main()
