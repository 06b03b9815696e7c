"""Does chronogram's ``embedding_s(v)`` act as the output vector of its skip-gram likelihood?

``word2fun_heldout.py`` scores every model by
:math:`\\log\\sigma(f(u, t) \\cdot h(v)) + \\sum_i \\log\\sigma(-f(u, t) \\cdot h(\\hat v_i))`, which needs the
model's time-dependent input vectors :math:`f` and its output vectors :math:`h`. Chronogram 0.2.0 (PyPI)
exposes ``embedding(u, t)`` and one static vector per word, ``embedding_s(v)``. If ``embedding_s`` were the output
vector, the pairs the model was trained on (a word and a neighbour in the same sentence) would get clearly larger
dot products :math:`f(u, t) \\cdot h(v)` than random pairs. This script trains chronogram on SOTU sentences in its
own environment and prints, for sampled true and random pairs, the mean dot product with ``embedding_s`` and with
the neighbour's input vector, and the cosine of each word's input vector with its own ``embedding_s``.

Run (the environment is the held-out benchmark's, created when missing)::

    python benchmarks/chronogram_output_check.py --venv /tmp/qpnlp-bench-venvs/chronogram
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from qpnlp.data import load_sotu
from chronogram_format import ChronogramFile, read_chronogram  # benchmarks/ (this script's folder)
from word2fun_heldout import CHRONOGRAM_PACKAGES, ensure_venv

CHECK = r'''
import json, random, sys, numpy as np, chronogram
cfg = json.load(open(sys.argv[1]))


class Reader:
    def __iter__(self):
        for line in open(cfg["corpus"], encoding="utf-8"):
            time, text = line.rstrip("\n").split("\t", 1)
            yield text.split(), float(time)


model = chronogram.Chronogram(d=cfg["dim"], seed=cfg["seed"])
model.build_vocab(reader=Reader(), min_cnt=cfg["min_count"], workers=1)
model.initialize(reader=Reader(), workers=1, window_len=cfg["window"])
model.train(reader=Reader(), workers=1, window_len=cfg["window"], epochs=cfg["epochs"])
model.save(cfg["model"])                 # version 4 (compressed=False fails in 0.2.0)
rng, vocab = random.Random(cfg["seed"]), list(model.vocabs)
known = set(vocab)
lines = [line.rstrip("\n").split("\t", 1) for line in open(cfg["corpus"], encoding="utf-8")]
pairs = []
while len(pairs) < cfg["pairs"]:
    time, text = rng.choice(lines)
    words = [w for w in text.split() if w in known]
    if len(words) < 2:
        continue
    i = rng.randrange(len(words))
    j = min(len(words) - 1, max(0, i + rng.choice([-2, -1, 1, 2])))
    if i != j:
        pairs.append((words[i], words[j], rng.choice(vocab), float(time)))
json.dump({"pairs": pairs,
           "input": [list(map(float, model.embedding(u, t))) for u, _, _, t in pairs],
           "embedding_s": {w: list(map(float, model.embedding_s(w))) for w in vocab[:50]}}, open(cfg["dump"], "w"))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default="/tmp/qpnlp-bench-venvs/chronogram",
                    help="chronogram's environment (created when missing: pip install 'numpy<2' chronogram==0.2.0)")
    ap.add_argument("--sentences", type=int, default=30000, help="SOTU sentences (a seeded sample) to train on")
    ap.add_argument("--dim", type=int, default=50)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--min-count", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    python = ensure_venv(args.venv, CHRONOGRAM_PACKAGES)
    corpus = load_sotu(unit="sentence")
    order = np.random.default_rng(args.seed).permutation(len(corpus.docs))[: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "c.tsv").write_text("".join(f"{float(corpus.times[i])}\t{' '.join(corpus.docs[i])}\n"
                                              for i in order if corpus.docs[i]), encoding="utf-8")
        cfg = {**vars(args), "corpus": str(Path(tmp, "c.tsv")), "window": 5, "model": str(Path(tmp, "model.bin")),
               "dump": str(Path(tmp, "dump.json"))}
        Path(tmp, "cfg.json").write_text(json.dumps(cfg))
        Path(tmp, "check.py").write_text(CHECK)
        done = subprocess.run([str(python), str(Path(tmp, "check.py")), str(Path(tmp, "cfg.json"))],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"chronogram failed in {args.venv}:\n{done.stderr[-2000:]}")
        saved = read_chronogram(cfg["model"])
        dump = json.loads(Path(cfg["dump"]).read_text())
    print("python benchmarks/chronogram_output_check.py " + " ".join(f"--{k.replace('_', '-')} {v}"
                                                                    for k, v in vars(args).items()))
    print(json.dumps(summary(saved, dump)))


def summary(saved: ChronogramFile, dump: dict) -> dict:
    """Mean dot products of the sampled pairs' input vectors with the saved output vectors and with
    ``embedding_s``; whether ``embedding_s`` equals the saved output vector."""
    row = {w: i for i, w in enumerate(saved.words)}
    f = np.asarray(dump["input"])
    out = lambda k: saved.output[[row[p[k]] for p in dump["pairs"]]]          # noqa: E731
    static = {w: np.asarray(v) for w, v in dump["embedding_s"].items()}
    return {"true_pairs_dot_saved_output": float(np.mean(np.sum(f * out(1), 1))),
            "random_pairs_dot_saved_output": float(np.mean(np.sum(f * out(2), 1))),
            "embedding_s_equals_saved_output": all(np.allclose(v, saved.output[row[w]], atol=1e-6)
                                                   for w, v in static.items()),
            "vocabulary": len(saved.words), "pairs": len(f)}

if __name__ == "__main__":
    main()
