"""Paired comparison of ``reproduce_cnm.py`` runs: each variant against a reference variant, seed by seed.

Reads the ``.json`` files ``reproduce_cnm.py`` writes (any number: runs of other variants, seeds or sessions),
pairs the runs by (data set, seed, split), and for every variant but ``--reference`` prints the mean MAP over the
paired seeds, the mean paired difference (reference minus variant), on how many seeds the reference is better, and
the two-sided Wilcoxon signed-rank p-value (``scipy.stats.wilcoxon``, as ``_stats.signed_rank_p``; with at least 5
pairs). The split is test where the runs scored one, else dev (TREC-QA here); a seed is paired only when both
runs report the same split (one row per split), never a test MAP with a dev MAP. A later file's run replaces an
earlier one of the same (data set, variant, seed).

Usage::

    python benchmarks/cnm_paired.py benchmarks/results/cnm/margin/wq_margin0.02-*.json \\
        benchmarks/results/cnm/ablations-wikiqa/*.json benchmarks/results/cnm/fasttext-maxpool/*wikiqa.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from _stats import signed_rank_p  # benchmarks/ (this script's folder)


def map_by_run(files: list[str]) -> dict[tuple[str, str], dict[int, tuple[float, str]]]:
    """``{(data set, variant): {seed: (MAP, split)}}``: test MAP where the run scored test, else dev MAP."""
    out: dict[tuple[str, str], dict[int, tuple[float, str]]] = {}
    for name in files:
        for run in json.loads(Path(name).read_text())["runs"]:
            test = run["evaluation"].get("test")
            value, split = (test["map"], "test") if test else (run["dev"]["map"], "dev")
            out.setdefault((run["dataset"], run["variant"]), {})[run["seed"]] = (value, split)
    return out


def comparison(runs: dict, reference: str) -> list[str]:
    """Markdown rows: every variant against ``reference`` on the seeds both ran, per data set."""
    rows = ["| data set | variant | split | seeds | MAP, mean | reference MAP, mean | reference - variant | "
            "reference better | Wilcoxon p |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for (dataset, variant), seeds in sorted(runs.items()):
        ref = runs.get((dataset, reference))
        if variant == reference or ref is None:
            continue
        for split in ("test", "dev"):
            common = sorted(s for s in set(seeds) & set(ref) if seeds[s][1] == ref[s][1] == split)
            if common:
                rows.append(_row(dataset, variant, split, common, [ref[s][0] for s in common],
                                 [seeds[s][0] for s in common]))
    return rows


def _row(dataset: str, variant: str, split: str, seeds: list[int], a: list[float], b: list[float]) -> str:
    """One markdown row: reference MAPs ``a`` against the variant's ``b`` on the same ``seeds`` and ``split``."""
    diffs = [x - y for x, y in zip(a, b)]
    p = f"{signed_rank_p(diffs):.4f}" if len(seeds) >= 5 else "-"
    return (f"| {dataset} | {variant} | {split} | {len(seeds)} | {statistics.mean(b):.4f} | {statistics.mean(a):.4f} | "
            f"{statistics.mean(diffs):+.4f} | {sum(d > 0 for d in diffs)} | {p} |")


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="reproduce_cnm.py .json outputs")
    parser.add_argument("--reference", default="cnm", help="the variant the others are compared with (default cnm)")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    print("\n".join(comparison(map_by_run(args.files), args.reference)))


if __name__ == "__main__":
    main()
