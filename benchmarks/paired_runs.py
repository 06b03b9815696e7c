"""Paired comparison of two sets of ``reproduce_qpdn.py`` runs: per data set, mean +- std, paired difference, wins.

Each side is one or more run directories (their ``results.json``; several directories = several seeds of the
fixed-split data sets). Splits are paired by (data set, split name, seed, number of folds), so only splits both
sides ran are compared ("fold 1" of 10-fold and of 5-fold CV hold other texts: never paired); a data set without
a split in common is named under the table. Means +- sample standard deviations (n - 1) are over the paired
splits. The last columns choose, in every split, the side with the better dev accuracy (ties: the first side) and
score that side's test accuracy: the two runs as one dev-selected grid. The Wilcoxon signed-rank test over the
paired splits is ``scipy.stats.wilcoxon`` (two-sided, on the exact differences of correct/n; reported where there
are at least 5 pairs, as the complex-order paper does over folds/seeds).

Usage::

    python benchmarks/paired_runs.py --a benchmarks/results/qpdn/povm/projective-seed[0-9] \\
        --b benchmarks/results/qpdn/povm/povm-k100-seed[0-9] --labels projective "POVM k=100" --model qpdn
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


from _stats import exact_accuracy, signed_rank_p  # benchmarks/ (this script's folder)

ORDER = ("CR", "MPQA", "MR", "SUBJ", "SST2", "TREC")


def test_accuracies(directories: list[str], model: str) -> dict[str, dict[tuple, tuple[float, float]]]:
    """``{dataset: {(split, seed, folds): (test accuracy, dev accuracy)}}`` over the runs in ``directories``
    (``folds``: the run's ``--folds`` for a cross-validation fold, None for a fixed split)."""
    out: dict[str, dict[tuple, tuple[float, float]]] = {}
    for directory in directories:
        run = json.loads((Path(directory) / "results.json").read_text())
        seed, folds = run["args"]["seed"], run["args"].get("folds")
        for row in run["rows"]:
            if model not in row:
                continue
            for split in row[model]["per_split"]:
                key = (split["split"], seed, folds if split["split"].startswith("fold") else None)
                out.setdefault(row["dataset"], {})[key] = (split["test_accuracy"], split["dev_accuracy"])
    return out


def _mean_std(values: list[float]) -> str:
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.fmean(values):.1f} ± {100 * std:.1f}"


def table(a: dict, b: dict, labels: tuple[str, str]) -> str:
    lines = [f"| data set | {labels[0]} | {labels[1]} | {labels[1]} − {labels[0]} (paired) | "
             f"{labels[1]} better / worse / tied | Wilcoxon p | splits | selected on dev | {labels[1]} chosen |",
             "|---|---|---|---|---|---|---|---|---|"]
    unpaired = []
    for dataset in sorted(set(a) & set(b), key=lambda d: ORDER.index(d) if d in ORDER else len(ORDER)):
        keys = sorted(set(a[dataset]) & set(b[dataset]), key=str)  # (split, seed, folds or None)
        if not keys:
            unpaired.append(f"{dataset} ({len(a[dataset])} and {len(b[dataset])} splits)")
            continue
        xs, ys = [a[dataset][k][0] for k in keys], [b[dataset][k][0] for k in keys]
        b_chosen = [b[dataset][k][1] > a[dataset][k][1] for k in keys]
        selected = [y if chosen else x for x, y, chosen in zip(xs, ys, b_chosen)]
        # on the exact differences of correct/n: float32 accuracies would split tied differences in their last bits
        # (the Wilcoxon ranks) and give an exact tie of means a sign (-0.0)
        diffs = [exact_accuracy(y) - exact_accuracy(x) for x, y in zip(xs, ys)]
        better, worse = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
        p = f"{signed_rank_p(diffs):.3f}" if len(keys) >= 5 and any(diffs) else "-"
        lines.append(f"| {dataset} | {_mean_std(xs)} | {_mean_std(ys)} | {float(100 * statistics.mean(diffs)):+.1f} ± "
                     f"{100 * (statistics.stdev(diffs) if len(diffs) > 1 else 0):.1f} | {better} / {worse} / "
                     f"{len(diffs) - better - worse} | {p} | {len(keys)} | {_mean_std(selected)} | "
                     f"{sum(b_chosen)} of {len(keys)} |")
    if unpaired:
        lines += ["", f"No split in common (other seeds or fold counts): {', '.join(unpaired)}."]
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", nargs="+", required=True, help="run directories of the first side")
    parser.add_argument("--b", nargs="+", required=True, help="run directories of the second side")
    parser.add_argument("--labels", nargs=2, default=("A", "B"))
    parser.add_argument("--model", default="qpdn", choices=("qpdn", "real_bow"))
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    print(table(test_accuracies(args.a, args.model), test_accuracies(args.b, args.model), tuple(args.labels)),
          end="")


if __name__ == "__main__":
    main()
