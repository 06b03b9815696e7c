"""Paired comparison of ``reproduce_cnm.py`` runs: each variant against a reference variant, seed by seed.

Reads the ``.json`` files ``reproduce_cnm.py`` writes (any number: runs of other variants, seeds or sessions),
pairs the runs by (data set, seed), and for every variant but ``--reference`` prints the mean MAP over the paired
seeds, the mean paired difference (reference minus variant), on how many seeds the reference is better, and the
two-sided Wilcoxon signed-rank p-value (``scipy.stats.wilcoxon``, as ``_stats.signed_rank_p``; with at least 5
pairs). The split is test where the runs scored one, else dev (TREC-QA here). A later file's run replaces an
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
        common = sorted(set(seeds) & set(ref))
        if not common:
            continue
        a, b = [ref[s][0] for s in common], [seeds[s][0] for s in common]
        diffs = [x - y for x, y in zip(a, b)]
        p = f"{signed_rank_p(diffs):.4f}" if len(common) >= 5 else "-"
        rows.append(f"| {dataset} | {variant} | {seeds[common[0]][1]} | {len(common)} | {statistics.mean(b):.4f} | "
                    f"{statistics.mean(a):.4f} | {statistics.mean(diffs):+.4f} | {sum(d > 0 for d in diffs)} | {p} |")
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="reproduce_cnm.py .json outputs")
    parser.add_argument("--reference", default="cnm", help="the variant the others are compared with (default cnm)")
    args = parser.parse_args(argv)
    print("\n".join(comparison(map_by_run(args.files), args.reference)))


if __name__ == "__main__":
    main()
