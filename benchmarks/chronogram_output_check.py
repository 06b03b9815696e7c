"""Which of chronogram's vectors are the output vectors of its skip-gram likelihood, and what they score.

``word2fun_heldout.py`` scores every model by
:math:`\\log\\sigma(f(u, t) \\cdot h(v)) + \\sum_i \\log\\sigma(-f(u, t) \\cdot h(\\hat v_i))`, which needs the
model's time-dependent input vectors :math:`f` and its output vectors :math:`h`. Chronogram 0.2.0 (PyPI) exposes
``embedding(u, t)`` and one static vector per word, ``embedding_s(v)``, which its source at v0.2.0 returns as
``out.col(v)``, the output vector its training step uses (``ChronoGramModel::inplaceUpdate``). This script trains
chronogram on SOTU sentences in its own environment, saves it (``Chronogram.save``) and reads the file with
``chronogram_format.read_chronogram``. For sampled (word, neighbour, year) pairs it then prints:

* the largest difference between ``embedding_s`` and the saved output vectors (the file keeps values to 1/4096);
* the largest difference between ``embedding(u, t)`` and the input vector rebuilt from the saved coefficients
  (Chebyshev polynomials :math:`T_i(2z - 1)` of the normalised time ``z``), which shows that the file is read right;
* the mean dot product :math:`f \\cdot h` of true pairs and of random pairs, the random word drawn uniformly from
  the vocabulary or in proportion to count^0.75 (as the held-out score draws its negatives), and the fraction of
  (true, random) pairs in which the true one scores higher (AUC).

Run (the environment is the held-out benchmark's, created when missing)::

    python benchmarks/chronogram_output_check.py --venv /tmp/qpnlp-bench-venvs/chronogram
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from qpnlp.data import load_sotu
from chronogram_format import ChronogramFile, read_chronogram  # benchmarks/ (this script's folder)
from word2fun_heldout import CHRONOGRAM_PACKAGES, CHRONOGRAM_TRAINING, ensure_venv, run_script

CHECK = CHRONOGRAM_TRAINING + r'''
import random

model, _ = trained(cfg["min_count"], 1, cfg["window"], cfg["epochs"])
model.save(cfg["model"])                 # version 4 (compressed=False fails in 0.2.0)
rng, vocab = random.Random(cfg["seed"]), list(model.vocabs)
known = set(vocab)
lines = [line.rstrip("\n").split("\t", 1) for line in open(cfg["corpus"], encoding="utf-8")]
pairs = []
while len(pairs) < cfg["pairs"]:
    when, text = rng.choice(lines)
    words = [w for w in text.split() if w in known]
    if len(words) < 2:
        continue
    i = rng.randrange(len(words))
    j = min(len(words) - 1, max(0, i + rng.choice([-2, -1, 1, 2])))
    if i != j:
        pairs.append((words[i], words[j], rng.choice(vocab), float(when)))
json.dump({"pairs": pairs,
           "input": [list(map(float, model.embedding(u, t))) for u, _, _, t in pairs],
           "embedding_s": {w: list(map(float, model.embedding_s(w))) for w in vocab[:50]}}, open(cfg["dump"], "w"))
'''


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default="/tmp/qpnlp-bench-venvs/chronogram",
                    help="chronogram's environment (created when missing: pip install 'numpy<2' chronogram==0.2.0)")
    ap.add_argument("--sentences", type=int, default=30000, help="SOTU sentences (a seeded sample) to train on")
    ap.add_argument("--dim", type=int, default=50)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--min-count", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    return ap


def main() -> None:
    args = _parser().parse_args()
    python = ensure_venv(args.venv, CHRONOGRAM_PACKAGES)
    corpus = load_sotu(unit="sentence")
    order = np.random.default_rng(args.seed).permutation(len(corpus.docs))[: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "c.tsv").write_text("".join(f"{float(corpus.times[i])}\t{' '.join(corpus.docs[i])}\n"
                                              for i in order if corpus.docs[i]), encoding="utf-8")
        cfg = {**vars(args), "corpus": str(Path(tmp, "c.tsv")), "window": 5, "model": str(Path(tmp, "model.bin")),
               "dump": str(Path(tmp, "dump.json"))}
        run_script(python, CHECK, cfg, tmp, "chronogram")
        saved = read_chronogram(cfg["model"])
        dump = json.loads(Path(cfg["dump"]).read_text())
        lines = Path(cfg["corpus"]).read_text(encoding="utf-8").splitlines()
    print("python benchmarks/chronogram_output_check.py " + " ".join(f"--{k.replace('_', '-')} {v}"
                                                                    for k, v in vars(args).items()))
    print(json.dumps(summary(saved, dump, lines, args.seed)))


def summary(saved: ChronogramFile, dump: dict, corpus_lines: list[str], seed: int) -> dict:
    """The comparisons of the module notes, for the dumped pairs."""
    row = {w: i for i, w in enumerate(saved.words)}
    pairs = dump["pairs"]
    f = np.asarray(dump["input"])
    centre, true = (np.array([row[p[k]] for p in pairs]) for k in (0, 1))
    uniform = np.array([row[p[2]] for p in pairs])
    counts = Counter(w for line in corpus_lines for w in line.split("\t", 1)[1].split() if w in row)
    weights = np.array([counts[w] for w in saved.words], float) ** 0.75
    drawn = np.random.default_rng(seed).choice(len(weights), size=len(pairs), p=weights / weights.sum())
    z = (np.array([p[3] for p in pairs]) - saved.z_bias) * saved.z_slope * (1 - 2 * saved.time_padding) \
        + saved.time_padding
    chebyshev = np.cos(np.arange(saved.order)[None, :] * np.arccos(np.clip(2 * z - 1, -1, 1))[:, None])
    rebuilt = np.einsum("nrd,nr->nd", saved.input_coefficients[centre], chebyshev)
    dots = {name: np.sum(f * saved.output[words], 1) for name, words in
            (("true", true), ("uniform", uniform), ("count^0.75", drawn))}
    auc = lambda a, b: float(np.mean(a[:, None] > b[None, :]))          # noqa: E731
    return {"max_abs_embedding_s_minus_saved_output": max(float(np.abs(np.asarray(v) - saved.output[row[w]]).max())
                                                          for w, v in dump["embedding_s"].items()),
            "max_abs_embedding_minus_rebuilt_input": float(np.abs(rebuilt - f).max()),
            "mean_dot_true": float(dots["true"].mean()), "mean_dot_random_uniform": float(dots["uniform"].mean()),
            "mean_dot_random_count075": float(dots["count^0.75"].mean()),
            "auc_true_vs_uniform": auc(dots["true"], dots["uniform"]),
            "auc_true_vs_count075": auc(dots["true"], dots["count^0.75"]),
            "vocabulary": len(saved.words), "pairs": len(f)}


if __name__ == "__main__":
    main()
