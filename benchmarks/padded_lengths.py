"""How many padded lengths a training epoch's batches come in, with and without ``pad_to_multiple_of``.

CUDA graphs (``--compile reduce-overhead``) record one graph per input size, so
this count is the number of graphs an epoch records; the mean padded length
is what each step computes on. The batches are the trainer's own
(:func:`qpnlp.data.iterate_batches`, shuffled by (seed, epoch)) over a data
set's fixed training split, or over all its texts for the cross-validation sets.

    QPNLP_DATA=/work/shared/data python benchmarks/padded_lengths.py --datasets SST2 --multiples 1 8 16
"""

from __future__ import annotations

import argparse

import numpy as np

from qpnlp.data import EncodedTexts, iterate_batches
from qpnlp.data.classification import load_classification


def epoch_lengths(dataset: EncodedTexts, batch_size: int, seed: int, epoch: int, multiple: int) -> np.ndarray:
    """The padded length of every training batch of one epoch."""
    return np.array([ids.shape[1] for ids, _, _ in iterate_batches(dataset, batch_size, shuffle=True, seed=seed,
                                                                    epoch=epoch, multiple_of=multiple)])


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["SST2"])
    parser.add_argument("--multiples", nargs="+", type=int, default=[1, 8, 16])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    return parser


def main() -> None:
    args = _parser().parse_args()
    print("| data set | multiple | distinct lengths per epoch | mean padded length | vs exact padding |")
    print("|---|---:|---|---:|---:|")
    for name in args.datasets:
        data = load_classification(name)
        rows = data.fixed_splits["train"] if data.fixed_splits else np.arange(len(data.texts))
        # token counts stand in for ids: padding depends on the lengths only
        texts = EncodedTexts([[2] * len(data.texts[i]) for i in rows], data.labels[rows])
        epochs = {multiple: [epoch_lengths(texts, args.batch_size, args.seed, e, multiple) for e in range(args.epochs)]
                  for multiple in dict.fromkeys([1, *args.multiples])}        # 1: exact padding, the reference
        exact = np.mean([lengths.mean() for lengths in epochs[1]])
        for multiple in args.multiples:
            counts = sorted(len(set(lengths.tolist())) for lengths in epochs[multiple])
            counts = f"{counts[0]}" if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]}"
            mean = np.mean([lengths.mean() for lengths in epochs[multiple]])
            print(f"| {name} | {multiple} | {counts} | {mean:.1f} | {mean / exact:.3f}x |")


if __name__ == "__main__":
    main()
