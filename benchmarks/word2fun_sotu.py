"""Word2Fun on the State of the Union addresses (1790-2026): known drifts vs stable controls.

Trains Word2Fun (family IV by default) on :func:`qpnlp.data.sotu.load_sotu`
and, for words with a known change of usage and for stable controls, reports
the change degree between the first and the last era (prediction-space and
cosine measures, see :meth:`qpnlp.word2fun.KeyedVectors.change_degree`), the rank of
that change among all words seen at least ``--min-count`` times in every era,
and the nearest words in each era.  Writes ``sotu.json`` and ``sotu.md``.

Model and training settings default to the library's (``qpnlp.word2fun.fit`` and
``TrainConfig``, what ``qpnlp train word2fun`` uses).

Run::

    python benchmarks/word2fun_sotu.py --out benchmarks/results/word2fun/sotu-defaults
    # the settings of results/word2fun/sotu.md (before the defaults came from the library):
    python benchmarks/word2fun_sotu.py --epochs 5 --min-count 10 --max-periods 0 --negatives 64 --time-scale 60
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from qpnlp.data import load_sotu
from qpnlp.word2fun import TrainConfig, fit

DRIFTS = ["energy", "economy", "union", "welfare", "security", "relief", "communications", "program"]
# The library's defaults (qpnlp.word2fun.fit, TrainConfig): what `qpnlp train word2fun` does with no flags.
TRAIN = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
FIT = {k: p.default for k, p in inspect.signature(fit).parameters.items() if p.default is not inspect.Parameter.empty}
STABLE = ["president", "congress", "year", "war", "law", "money", "constitution", "treaty"]


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default=FIT["family"])
    ap.add_argument("--dim", type=int, default=FIT["dim"])
    ap.add_argument("--epochs", type=int, default=TRAIN["epochs"])
    ap.add_argument("--negatives", type=int, default=TRAIN["negatives"], help="negatives shared by a batch")
    ap.add_argument("--time-scale", type=float, default=FIT["time_scale"])
    ap.add_argument("--min-count", type=int, default=FIT["min_count"])
    ap.add_argument("--eras", type=int, default=4)
    ap.add_argument("--threads", type=int, default=TRAIN["workers"],
                    help="training threads (TrainConfig.workers: hogwild workers when > 1) and torch threads")
    ap.add_argument("--max-periods", type=float, default=FIT["max_periods"] or 0.0, help="harmonic init, fastest periods over the span (0 = full ladder)")
    ap.add_argument("--topk", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/word2fun")
    return ap


def main() -> None:
    args = _parser().parse_args()
    torch.set_num_threads(args.threads)
    corpus = load_sotu()
    t0, t1 = corpus.span
    load_before = os.getloadavg()
    result = fit(corpus, TrainConfig(epochs=args.epochs, negatives=args.negatives, seed=args.seed,
                                     workers=args.threads),
                 family=args.family, dim=args.dim, time_scale=args.time_scale,
                 max_periods=args.max_periods or None, min_count=args.min_count)
    emb, st = result.vectors, result.stats
    model, vocab = emb.model, emb.vocabulary
    enc = corpus.encode(vocab)
    edges = np.linspace(t0, t1, args.eras + 1)
    eras = list(zip(edges[:-1], edges[1:]))
    # words frequent enough in every era, as the reference population for ranks
    era_of = np.clip(np.searchsorted(edges, enc.times[enc.doc_ids], side="right") - 1, 0, args.eras - 1)
    per_era = np.stack([np.bincount(enc.tokens[era_of == k], minlength=len(vocab)) for k in range(args.eras)])
    pop = [vocab.words[i] for i in np.flatnonzero((per_era >= args.min_count).all(0))]
    ids = torch.tensor(vocab.ids(pop))
    H = model.compass.weight.detach()
    def era_profile(a, b):  # mean over the era's years of sigma(f(u, t) h(v)^T), one year at a time (memory)
        with torch.no_grad():
            ys = torch.arange(a, b + 1e-9)
            return sum(torch.sigmoid(model.grid(ids, y[None])[0] @ H.T) for y in ys) / len(ys)

    ya, yb = era_profile(*eras[0]), era_profile(*eras[-1])
    ctx_change = (ya - yb).abs().mean(-1).numpy()
    order = (-ctx_change).argsort()
    rank = {pop[i]: r + 1 for r, i in enumerate(order)}
    rows = []
    for kind, words in (("drift", DRIFTS), ("stable", STABLE)):
        for w in words:
            if w not in vocab:
                continue
            row = {"word": w, "kind": kind, "count": int(vocab.counts[vocab.index[w]]),
                   "change_context": emb.change_degree(w, eras[0], eras[-1], measure="context"),
                   "change_cosine": emb.change_degree(w, eras[0], eras[-1], measure="cosine"),
                   "rank": rank.get(w), "population": len(pop),
                   "nearest": [[x for x, _ in emb.most_similar(w, topn=args.topk, year=(a + b) / 2, min_count=args.min_count)]
                               for a, b in eras]}
            rows.append(row)
    d = [r["change_context"] for r in rows if r["kind"] == "drift"]
    s = [r["change_context"] for r in rows if r["kind"] == "stable"]
    auc = float(np.mean([(x > y) + 0.5 * (x == y) for x in d for y in s]))
    dc = [r["change_cosine"] for r in rows if r["kind"] == "drift"]
    sc = [r["change_cosine"] for r in rows if r["kind"] == "stable"]
    auc_cos = float(np.mean([(x > y) + 0.5 * (x == y) for x in dc for y in sc]))
    meta = {"command": "python benchmarks/word2fun_sotu.py " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
            "tokens": corpus.n_tokens, "documents": len(corpus), "vocabulary": len(vocab), "span": [t0, t1],
            "train_seconds": st.seconds, "tokens_per_s": st.tokens_per_s, "load_before": load_before,
            "load_after": os.getloadavg(), "eras": [[float(a), float(b)] for a, b in eras], "auc_drift_vs_stable": auc,
            "auc_drift_vs_stable_cosine": auc_cos}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sotu.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    era_names = [f"{a:.0f}-{b:.0f}" for a, b in eras]
    lines = [f"# Word2Fun {args.family} on SOTU ({corpus.n_tokens} tokens, {t0:.0f}-{t1:.0f}, vocabulary {len(vocab)})", "",
             f"`{meta['command']}`; {st.seconds:.0f} s, {st.tokens_per_s:.0f} tokens/s, load {meta['load_before']}", "",
             f"Change = first vs last era; rank among {len(pop)} words frequent in every era (1 = most changed). "
             f"AUC drift vs stable: context change {auc:.2f}, cosine change {auc_cos:.2f}", "",
             "| word | kind | change (context) | rank | change (cosine) | " + " | ".join(era_names) + " |",
             "|---" * (5 + len(eras)) + "|"]
    for r in rows:
        lines.append(f"| {r['word']} | {r['kind']} | {r['change_context']:.4f} | {r['rank']} | {r['change_cosine']:.3f} | "
                     + " | ".join(", ".join(n) for n in r["nearest"]) + " |")
    (out / "sotu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
