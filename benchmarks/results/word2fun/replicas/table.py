"""The per-seed table of README.md from the drift runs' JSON files (no training): 1 worker / 2 replicas per cell.

    python benchmarks/results/word2fun/replicas/table.py          # the replicas' runs of 2026-12-02
    python benchmarks/results/word2fun/replicas/table.py merge    # the replicas' runs in merge/ (2026-12-03)
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
METRICS = ("spearman", "acc_after", "change_year_mae", "control_spearman")


def row(path: Path) -> list[float]:
    result = json.loads(path.read_text())["results"]["word2fun-IV"]
    return [result[m] for m in METRICS]


def main() -> None:
    replicas = HERE / (sys.argv[1] if len(sys.argv) > 1 else ".")
    for variant in ("standard", "low-frequency"):
        pairs = []
        for seed in (0, 5, 6, 7, 8):
            stem = f"drift-{variant}-" if seed == 0 else f"seeds/{variant}-seed{seed}-"
            one, two = row(HERE / f"{stem}1worker.json"), row(replicas / f"{stem}2replicas.json")
            pairs.append((one, two))
            print(f"| {variant} | {seed} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in zip(one, two)) + " |")
        means = [(sum(p[0][k] for p in pairs) / len(pairs), sum(p[1][k] for p in pairs) / len(pairs))
                 for k in range(len(METRICS))]
        print(f"| {variant} | mean of {len(pairs)} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in means) + " |")


if __name__ == "__main__":
    main()
