"""The per-seed table of README.md from the drift runs' JSON files (no training): 1 worker / 2 replicas per cell.

    python benchmarks/results/word2fun/replicas/table.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
METRICS = ("spearman", "acc_after", "change_year_mae", "control_spearman")


def row(path: Path) -> list[float]:
    result = json.loads(path.read_text())["results"]["word2fun-IV"]
    return [result[m] for m in METRICS]


def main() -> None:
    for variant in ("standard", "low-frequency"):
        pairs = []
        for seed in (0, 5, 6, 7, 8):
            stem = f"drift-{variant}-" if seed == 0 else f"seeds/{variant}-seed{seed}-"
            one, two = row(HERE / f"{stem}1worker.json"), row(HERE / f"{stem}2replicas.json")
            pairs.append((one, two))
            print(f"| {variant} | {seed} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in zip(one, two)) + " |")
        means = [(sum(p[0][k] for p in pairs) / len(pairs), sum(p[1][k] for p in pairs) / len(pairs))
                 for k in range(len(METRICS))]
        print(f"| {variant} | mean of {len(pairs)} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in means) + " |")


if __name__ == "__main__":
    main()
