"""Held-out skip-gram log-likelihood on the State of the Union addresses (the protocol of Bamler & Mandt, 2017).

A fixed random ``--heldout`` fraction of each year's sentences is held out
(seeded), every model trains on the rest, and every model is scored with the
same function on the same held-out (centre, context) pairs and the same
negatives (:mod:`qpnlp.word2fun.evaluate`): the mean over pairs of
:math:`\\log\\sigma(f(u, t) \\cdot h(v)) + \\sum_{i=1}^{k} \\log\\sigma(-f(u, t) \\cdot h(\\hat v_i))`
with the vectors at each pair's year (higher is better).  All models share one
vocabulary (words seen ``--min-count`` times in the training part) and train
``--epochs`` epochs of skip-gram with ``--dim`` dimensions and a window of 5.

Models: Word2Fun families II, III, IV (the library defaults of ``fit``: the
thesis loss, whose negative term is the *mean* over the negatives) and the
same with word2vec's objective (``--negatives`` negatives per pair, summed:
``negative_weight`` = ``--negatives``; the objective the score and gensim
use: a model trained with the mean scores PMI where the score expects
PMI - log k);
static skip-gram (gensim ``Word2Vec``, input vectors against output vectors);
per-period skip-gram (one gensim model per ``--bin-years`` years, each bin
rotated onto the last by orthogonal Procrustes so that a word missing from a
bin can take its vector from the nearest bin that has it); compass-aligned
per-period vectors (CADE's algorithm run by qpnlp: Word2Fun's ``sliced``
family, one vector per period, against the frozen output vectors of a static
model); the PyPI ``cade`` package itself (1.2.0, in its own virtual
environment ``--cade-venv``: it trains with its authors' gensim 3.6 fork,
which is not on PyPI; ``benchmarks/cade_env.sh`` builds that environment from
a checkout of the fork); chronogram (PyPI 0.2.0, in its own environment
``--chronogram-venv`` with numpy < 2), trained by its ``initialize`` (one
epoch of static skip-gram, as its example does) and ``train``, scored with
its time-dependent input vectors ``embedding(word, year)`` and its output
vectors ``embedding_s(word)``, which are the output vectors of its likelihood
(``benchmarks/chronogram_output_check.py`` reads them from its save file).

Run::

    python benchmarks/word2fun_heldout.py --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from qpnlp.data import TimestampedCorpus, Vocabulary, load_sotu
from qpnlp.word2fun import TrainConfig, fit
from qpnlp.word2fun.config import PARALLEL_MODES
from qpnlp.word2fun.evaluate import heldout_pairs, pair_log_likelihood, word2fun_log_likelihood


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def split_by_year(corpus: TimestampedCorpus, fraction: float, seed: int) -> tuple[TimestampedCorpus, TimestampedCorpus]:
    """Hold out ``fraction`` of the documents of every time (at least one where a time has two or more)."""
    rng = np.random.default_rng(seed)
    held = np.zeros(len(corpus), dtype=bool)
    for t in np.unique(corpus.times):
        idx = np.flatnonzero(corpus.times == t)
        n = int(round(fraction * idx.size)) if idx.size > 1 else 0
        held[rng.choice(idx, size=max(n, 1 if idx.size > 1 else 0), replace=False)] = True
    pick = lambda mask: TimestampedCorpus(corpus.times[mask], tuple(d for d, m in zip(corpus.docs, mask) if m))
    return pick(~held), pick(held)


def gensim_model(sentences, args, seed):
    from gensim.models import Word2Vec

    m = Word2Vec(vector_size=args.dim, window=5, negative=5, sample=1e-3, sg=1, min_count=1, workers=args.threads,
                 seed=seed)
    m.build_vocab(sentences)
    t0 = time.perf_counter()
    m.train(sentences, total_examples=len(sentences), epochs=args.epochs)
    return m, time.perf_counter() - t0


def filtered(corpus: TimestampedCorpus, vocab: Vocabulary) -> list[list[str]]:
    index = vocab.index
    return [[w for w in d if w in index] for d in corpus.docs]


def tables(model, vocab: Vocabulary, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input and output vectors of ``vocab``'s words in a gensim model (zeros where absent) and a presence mask."""
    kv = model.wv
    W, C, have = np.zeros((len(vocab), dim), np.float32), np.zeros((len(vocab), dim), np.float32), np.zeros(len(vocab), bool)
    for i, w in enumerate(vocab.words):
        j = kv.key_to_index.get(w)
        if j is not None:
            W[i], C[i], have[i] = kv.vectors[j], model.syn1neg[j], True
    return W, C, have


def score_static(train, vocab, pairs, args):
    m, secs = gensim_model(filtered(train, vocab), args, args.seed)
    W, C, _ = tables(m, vocab, args.dim)
    W, C = torch.from_numpy(W), torch.from_numpy(C)
    return pair_log_likelihood(pairs, lambda w, t: W[w], lambda v: C[v]), secs, train.n_tokens * args.epochs / secs


def bins_of(times: np.ndarray, t0: float, width: float) -> np.ndarray:
    return ((np.asarray(times) - t0) // width).astype(np.int64)


def score_per_period(train, vocab, pairs, args):
    from scipy.linalg import orthogonal_procrustes

    t0 = float(train.times.min())
    b = bins_of(train.times, t0, args.bin_years)
    n_bins = int(b.max()) + 1
    Ws, Cs, haves, secs = [], [], [], 0.0
    sentences = filtered(train, vocab)
    for k in range(n_bins):
        m, s = gensim_model([d for d, bk in zip(sentences, b.tolist()) if bk == k], args, args.seed)
        W, C, have = tables(m, vocab, args.dim)
        Ws.append(W), Cs.append(C), haves.append(have)
        secs += s
    ref = n_bins - 1
    for k in range(n_bins):  # rotate bin k onto the last bin (words both have); inputs and outputs by the same Q
        both = haves[k] & haves[ref]
        unit = lambda X: X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        Q, _ = orthogonal_procrustes(unit(Ws[k][both]), unit(Ws[ref][both]))
        Ws[k], Cs[k] = Ws[k] @ Q, Cs[k] @ Q
    W, C, H = np.stack(Ws), np.stack(Cs), np.stack(haves)  # (bins, V, D), (bins, V)
    for i in range(W.shape[1]):  # a word missing from a bin takes the (aligned) vectors of the nearest bin with it
        have = np.flatnonzero(H[:, i])
        for k in np.flatnonzero(~H[:, i]):
            if have.size:
                j = have[np.abs(have - k).argmin()]
                W[k, i], C[k, i] = W[j, i], C[j, i]
    return score_binned(torch.from_numpy(W), torch.from_numpy(C), pairs, t0, args.bin_years), secs, \
        train.n_tokens * args.epochs / secs


def score_binned(W: torch.Tensor, C: torch.Tensor, pairs, t0: float, width: float) -> float:
    """The score of per-period tables ``W``, ``C`` (bins, V, D): each pair with the tables of its year's bin."""
    n_bins = W.shape[0]
    bins = torch.from_numpy(np.clip(bins_of(pairs.times.numpy(), t0, width), 0, n_bins - 1))
    total = 0.0
    for k in range(n_bins):
        sel = torch.nonzero(bins == k).flatten()
        if sel.numel() == 0:
            continue
        sub = type(pairs)(pairs.centre[sel], pairs.context[sel], pairs.times[sel], pairs.negatives[sel])
        total += pair_log_likelihood(sub, lambda w, t, k=k: W[k][w], lambda v, k=k: C[k][v]) * len(sub)
    return total / len(pairs)


CADE_SCRIPT = r'''
import json, sys, numpy as np, os
from cade.cade import CADE
cfg = json.load(open(sys.argv[1]))
os.chdir(cfg["workdir"])
aligner = CADE(size=cfg["dim"], siter=cfg["epochs"], diter=cfg["epochs"], workers=cfg["threads"], sg=1, ns=5, window=5, min_count=1)
aligner.train_compass(cfg["all"], overwrite=True)
vocab = cfg["vocab"]
out = {}
for k, path in cfg["slices"].items():
    m = aligner.train_slice(path, save=False)
    W = np.zeros((len(vocab), cfg["dim"]), np.float32); C = np.zeros_like(W); have = np.zeros(len(vocab), bool)
    for i, w in enumerate(vocab):
        if w in m.wv.vocab:
            j = m.wv.vocab[w].index; W[i] = m.wv.vectors[j]; C[i] = m.trainables.syn1neg[j]; have[i] = True
    out[f"W{k}"], out[f"C{k}"], out[f"H{k}"] = W, C, have
np.savez(cfg["out"], **out)
'''


def ensure_venv(path: str, packages: list[str]) -> Path:
    """A virtual environment at ``path`` (created with pip installs of ``packages`` when missing); its python."""
    python = Path(path) / "bin" / "python"
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", path], check=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(packages)} failed in {path}: "
                               f"{(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return python


def run_script(python: Path, script: str, cfg: dict, tmp: str, what: str) -> subprocess.CompletedProcess:
    """Run ``script`` with another environment's ``python`` (``cfg`` given as a JSON file, both written to
    ``tmp``); RuntimeError naming ``what`` with the end of its stderr when it fails."""
    Path(tmp, "cfg.json").write_text(json.dumps(cfg))
    Path(tmp, "run.py").write_text(script)
    done = subprocess.run([str(python), str(Path(tmp, "run.py")), str(Path(tmp, "cfg.json"))], capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed in {Path(python).parent.parent}: {done.stderr.strip()[-2000:]}")
    return done


CHRONOGRAM_TRAINING = r'''
import json, sys, time, numpy as np, chronogram
cfg = json.load(open(sys.argv[1]))


class Reader:
    """The sentences of cfg["corpus"], one "time<TAB>words" line each, as chronogram's readers yield them."""

    def __iter__(self):
        for line in open(cfg["corpus"], encoding="utf-8"):
            when, text = line.rstrip("\n").split("\t", 1)
            yield text.split(), float(when)


def trained(min_count, workers, window, epochs):
    """Chronogram trained as its example does (build_vocab, one initialize epoch, train), and its seconds."""
    start = time.perf_counter()
    model = chronogram.Chronogram(d=cfg["dim"], seed=cfg["seed"])
    model.build_vocab(reader=Reader(), min_cnt=min_count, workers=workers)
    model.initialize(reader=Reader(), workers=workers, window_len=window)
    model.train(reader=Reader(), workers=workers, window_len=window, epochs=epochs)
    return model, time.perf_counter() - start
'''

CHRONOGRAM_SCRIPT = CHRONOGRAM_TRAINING + r'''
model, seconds = trained(1, cfg["threads"], 5, cfg["epochs"])
known = set(model.vocabs)
queries = json.load(open(cfg["queries"]))                                       # [[word, year], ...]
inputs = np.zeros((len(queries), cfg["dim"]), np.float32)
for i, (word, when) in enumerate(queries):
    if word in known:
        inputs[i] = model.embedding(word, float(when))
outputs = np.zeros((len(cfg["vocab"]), cfg["dim"]), np.float32)
for i, word in enumerate(cfg["vocab"]):
    if word in known:
        outputs[i] = model.embedding_s(word)                                    # its output vector out.col(word)
np.savez(cfg["vectors"], inputs=inputs, outputs=outputs)
print(json.dumps({"seconds": seconds}))
'''


#: chronogram's environment: its 0.2.0 wheel needs numpy < 2
CHRONOGRAM_PACKAGES = ["numpy<2", "chronogram==0.2.0"]


def score_chronogram(train, vocab, pairs, args):
    """Chronogram trained in its own environment: the input vector of each held-out (centre, year) from its
    ``embedding(word, year)``, the output vectors from ``embedding_s(word)`` (its ``out.col(word)``, equal to the
    output vectors of its save file: ``chronogram_output_check.py``); a word it does not have (none here: it
    keeps every word of the filtered sentences) gets zeros."""
    python = ensure_venv(args.chronogram_venv, CHRONOGRAM_PACKAGES)
    centre, years = pairs.centre.numpy(), pairs.times.numpy()
    keys = np.unique(np.stack([centre, years]), axis=1)        # the (centre, year) pairs, as floats
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "c.tsv").write_text("".join(f"{float(t)}\t{' '.join(d)}\n" for t, d in
                                              zip(train.times, filtered(train, vocab)) if d), encoding="utf-8")
        Path(tmp, "queries.json").write_text(json.dumps([[vocab.words[int(w)], float(t)] for w, t in keys.T]))
        cfg = {"corpus": str(Path(tmp, "c.tsv")), "queries": str(Path(tmp, "queries.json")), "dim": args.dim,
               "epochs": args.epochs, "threads": args.threads, "seed": args.seed, "vocab": list(vocab.words),
               "vectors": str(Path(tmp, "vectors.npz"))}
        done = run_script(python, CHRONOGRAM_SCRIPT, cfg, tmp, "chronogram")
        secs = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
        vectors = np.load(cfg["vectors"])
        inputs, C = torch.from_numpy(vectors["inputs"]), torch.from_numpy(vectors["outputs"])
    slot = {(int(w), float(t)): i for i, (w, t) in enumerate(keys.T)}

    def context(words, times):
        return inputs[[slot[(w, t)] for w, t in zip(words.tolist(), times.tolist())]]

    return pair_log_likelihood(pairs, context, lambda v: C[v]), secs, train.n_tokens * args.epochs / secs


def score_cade(train, vocab, pairs, args):
    python = Path(args.cade_venv) / "bin" / "python"
    if not python.is_file():  # `pip install cade` alone gives a CADE without the gensim fork it trains with
        raise RuntimeError(f"no CADE environment at {args.cade_venv}: build it with benchmarks/cade_env.sh "
                           f"<checkout of github.com/valedica/gensim> {args.cade_venv}")
    t0 = float(train.times.min())
    b = bins_of(train.times, t0, args.bin_years)
    with tempfile.TemporaryDirectory() as tmp:
        sentences = filtered(train, vocab)
        Path(tmp, "all.txt").write_text("\n".join(" ".join(d) for d in sentences))
        slices = {}
        for k in range(int(b.max()) + 1):
            path = Path(tmp, f"slice{k}.txt")
            path.write_text("\n".join(" ".join(d) for d, bk in zip(sentences, b.tolist()) if bk == k))
            slices[k] = str(path)
        cfg = {"workdir": tmp, "dim": args.dim, "epochs": args.epochs, "threads": args.threads,
               "all": str(Path(tmp, "all.txt")), "slices": slices, "vocab": list(vocab.words),
               "out": str(Path(tmp, "cade.npz"))}
        t = time.perf_counter()
        run_script(python, CADE_SCRIPT, cfg, tmp, "cade")
        secs = time.perf_counter() - t
        z = np.load(cfg["out"])
        n_bins = len(slices)
        W = torch.from_numpy(np.stack([z[f"W{k}"] for k in range(n_bins)]))
        C = torch.from_numpy(np.stack([z[f"C{k}"] for k in range(n_bins)]))
    return score_binned(W, C, pairs, t0, args.bin_years), secs, train.n_tokens * args.epochs / secs


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heldout", type=float, default=0.1, help="fraction of each year's sentences held out")
    ap.add_argument("--min-count", type=int, default=10)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--negatives", type=int, default=5, help="negatives per held-out pair in the score")
    ap.add_argument("--max-pairs", type=int, default=500_000, help="held-out pairs scored (a seeded subset)")
    ap.add_argument("--bin-years", type=float, default=10.0, help="years per period of the per-period models")
    ap.add_argument("--w2v-loss-lr", type=float, default=0.01,
                    help="learning rate of the word2fun-*-w2v-loss rows (the summed negatives of a batch step further)")
    ap.add_argument("--batch-size", type=int, default=TrainConfig.batch_size,
                    help="batch (pairs) of the Word2Fun rows with the library's loss (default: the library's)")
    ap.add_argument("--w2v-loss-batch", type=int, default=2048, help="batch (pairs) of the word2fun-*-w2v-loss rows")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", choices=PARALLEL_MODES, default=TrainConfig.parallel,
                    help="how the Word2Fun rows' --threads workers share the training (TrainConfig.parallel)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", default="word2fun-II,word2fun-III,word2fun-IV,word2fun-II-w2v-loss,"
                                        "word2fun-III-w2v-loss,word2fun-IV-w2v-loss,static,per_period,"
                                        "compass_aligned_periods,cade,chronogram")
    ap.add_argument("--cade-venv", default="/tmp/qpnlp-bench-venvs/cade",
                    help="the environment in which cade runs (benchmarks/cade_env.sh builds it)")
    ap.add_argument("--chronogram-venv", default="/tmp/qpnlp-bench-venvs/chronogram",
                    help="created when missing (pip install 'numpy<2' chronogram==0.2.0)")
    ap.add_argument("--out", default="benchmarks/results/word2fun")
    ap.add_argument("--tag", default="heldout")
    return ap


def main() -> None:
    args = _parser().parse_args()
    torch.set_num_threads(1)
    corpus = load_sotu(unit="sentence")
    train, held = split_by_year(corpus, args.heldout, args.seed)
    vocab = Vocabulary.build(train.docs, min_freq=args.min_count, specials=False)
    pairs = heldout_pairs(held, vocab, window=5, negatives=args.negatives, max_pairs=args.max_pairs, seed=args.seed)
    print(f"train {len(train)} sentences / {train.n_tokens} tokens, held out {len(held)} / {held.n_tokens}; "
          f"vocabulary {len(vocab)}; {len(pairs)} pairs", flush=True)

    def word2fun(family, **kw):
        def run(train, vocab, pairs, args):
            w2v = kw.pop("w2v_loss", False)  # word2vec's objective: args.negatives per pair, summed
            cfg = TrainConfig(epochs=args.epochs, seed=args.seed, workers=args.threads, parallel=args.parallel,
                              **(dict(negatives=args.negatives, shared_negatives=False, lr=args.w2v_loss_lr,
                                      batch_size=args.w2v_loss_batch, negative_weight=float(args.negatives))
                                 if w2v else dict(batch_size=args.batch_size)))
            r = fit(train, cfg, family=family, dim=args.dim, vocabulary=vocab, **kw)
            secs = r.stats.seconds + (r.compass_stats.seconds if r.compass_stats else 0.0)
            return word2fun_log_likelihood(r.vectors.model, pairs), secs, r.stats.tokens_per_s
        return run

    span = corpus.span
    n_slices = int(np.ceil((span[1] - span[0] + 1) / args.bin_years))
    builders = {"word2fun-II": word2fun("II"), "word2fun-III": word2fun("III"), "word2fun-IV": word2fun("IV"),
                "word2fun-II-w2v-loss": word2fun("II", w2v_loss=True),
                "word2fun-III-w2v-loss": word2fun("III", w2v_loss=True),
                "word2fun-IV-w2v-loss": word2fun("IV", w2v_loss=True),
                "static": score_static, "per_period": score_per_period, "cade": score_cade,
                "chronogram": score_chronogram,
                # CADE's algorithm (compass-aligned per-period vectors) inside qpnlp: a static model's output
                # vectors frozen as the compass, one vector per period and word trained against it
                "compass_aligned_periods": word2fun("sliced", n_slices=n_slices, compass="frozen",
                                                    compass_epochs=args.epochs)}
    results = {}
    for name in args.models.split(","):
        row = {"load_before": load()}
        try:
            ll, secs, tps = builders[name](train, vocab, pairs, args)
            row.update(log_likelihood=ll, train_seconds=secs, tokens_per_s=tps)
        except Exception as err:  # an optional baseline that does not install or run is reported, not fatal
            if name not in ("cade", "chronogram"):
                raise
            row["not_scored"] = f"{type(err).__name__}: {err}"
        row["load_after"] = load()
        results[name] = row
        print(name, json.dumps(row), flush=True)
    meta = {"command": "python benchmarks/word2fun_heldout.py " + " ".join(
                f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()),
            "train_sentences": len(train), "train_tokens": train.n_tokens, "heldout_sentences": len(held),
            "vocabulary": len(vocab), "pairs": len(pairs), "cpu_count": os.cpu_count(), "torch": torch.__version__,
            "platform": platform.platform(), "python": sys.version.split()[0]}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.tag}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    scored = {k: v["log_likelihood"] for k, v in results.items() if "log_likelihood" in v}
    best = max(scored, key=scored.get) if scored else None
    lines = [f"# Held-out skip-gram log-likelihood, SOTU sentences ({args.heldout:.0%} of each year held out)", "",
             f"`{meta['command']}`", "",
             f"Train {len(train)} sentences ({train.n_tokens} tokens), held out {len(held)}; vocabulary {len(vocab)} "
             f"(min count {args.min_count}); {len(pairs)} held-out pairs (window 5) with {args.negatives} fixed "
             f"negatives each. Higher is better; best: {best}.", "",
             "| model | log-likelihood per pair | train s | tokens/s | load before | load after |", "|---|---|---|---|---|---|"]
    for name, r in results.items():
        if "log_likelihood" in r:
            lines.append(f"| {name} | {r['log_likelihood']:.4f} | {r['train_seconds']:.1f} | {r['tokens_per_s']:.0f} | "
                         f"{r['load_before']} | {r['load_after']} |")
        else:
            lines.append(f"| {name} | not scored: {r['not_scored']} | | | | |")
    (out / f"{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
