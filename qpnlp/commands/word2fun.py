"""``qpnlp train word2fun``: train Word2Fun on a timestamped corpus and report drifts.

Examples
--------
``qpnlp train word2fun --corpus sotu --words energy,union --out runs/sotu --report sotu.json``

``qpnlp train word2fun --corpus data.tsv --family IV --epochs 5 --export-npz grid.npz``

The corpus is ``sotu`` (the State of the Union package) or a TSV file with one
document per line: ``YEAR<TAB>space separated tokens``.  The run saves a
checkpoint (``weights.safetensors`` + ``config.json``) in ``--out`` after every
epoch, prints the nearest words of ``--words`` in each era, and writes a JSON
report (``--report``) and the vectors grid (``--export-npz``: arrays ``words``,
``years``, ``E`` of shape years x words x dim).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

__all__ = ["register", "run", "era_bounds"]


def register(subparsers: dict) -> None:
    """Add ``word2fun`` under ``subparsers["train"]``."""
    p = subparsers["train"].add_parser(
        "word2fun", help="dynamic word embeddings as functions of time (Word2Fun)", description=__doc__.splitlines()[0]
    )
    p.add_argument("--corpus", required=True, help="'sotu' or a TSV file: YEAR<TAB>tokens per line")
    p.add_argument("--family", default="IV", choices=["static", "sliced", "linear", "time2fun", "II", "III", "IV"])
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=4096)
    p.add_argument("--lr", type=float, default=0.025)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3, help="subsampling threshold (0 = off)")
    p.add_argument("--negatives", type=int, default=64, help="negatives per pair, or per batch with --shared-negatives")
    p.add_argument("--per-pair-negatives", action="store_true", help="draw --negatives for each pair instead of sharing them in the batch")
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--time-scale", type=float, default=60.0, help="normalised time range [0, S] of the corpus span")
    p.add_argument("--frequency-init", default="harmonic", choices=["fixed", "harmonic"])
    p.add_argument("--max-periods", type=float, default=0.0,
                   help="harmonic init: fastest frequency in periods over the span (0 = the full ladder, D/8 periods)")
    p.add_argument("--roughness-penalty", type=float, default=0.0,
                   help="families II-IV: weight of the mean squared speed of f(u, .) per centre token (0 = off)")
    p.add_argument("--slices", type=int, default=10, help="time slices of the 'sliced' family")
    p.add_argument("--compass", default="trainable", choices=["trainable", "frozen"],
                   help="frozen: first train a static model for --compass-epochs, then freeze its target vectors")
    p.add_argument("--compass-epochs", type=int, default=3)
    p.add_argument("--words", default="", help="comma-separated words to report (nearest words per era)")
    p.add_argument("--eras", type=int, default=4, help="number of equal eras for the report")
    p.add_argument("--topk", type=int, default=8)
    p.add_argument("--out", default=None, help="checkpoint directory (saved after every epoch)")
    p.add_argument("--report", default=None, help="JSON report file")
    p.add_argument("--export-npz", default=None, help="write words, years, E (years x words x dim)")
    p.add_argument("--npz-words", type=int, default=2000, help="most frequent words in the .npz grid")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    p.add_argument("--workers", type=int, default=1,
                   help="hogwild training threads, one torch thread each (word2vec's workers; > 1 is not deterministic)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def era_bounds(start: float, end: float, n: int) -> list[tuple[float, float]]:
    """``n`` equal consecutive eras covering ``[start, end]``.

    >>> era_bounds(1900, 2000, 2)
    [(1900.0, 1950.0), (1950.0, 2000.0)]
    """
    edges = np.linspace(start, end, n + 1)
    return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]


def _load_corpus(spec: str):
    from qpnlp.data.timestamped import load_sotu, read_tsv

    if spec == "sotu":
        return load_sotu()
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"corpus file {spec} does not exist (use 'sotu' or a TSV file)")
    return read_tsv(path)


def run(args: argparse.Namespace) -> int:
    from qpnlp.data.timestamped import Vocabulary
    from qpnlp.models.word2fun import TimeScale, TrainConfig, Word2Fun, Word2FunEmbeddings, train_word2fun

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    corpus = _load_corpus(args.corpus)
    if len(corpus) == 0:
        raise ValueError(f"corpus {args.corpus} is empty")
    vocab = Vocabulary.build(corpus, min_count=args.min_count)
    if len(vocab) < 2:
        raise ValueError(f"vocabulary has {len(vocab)} words with --min-count {args.min_count}")
    enc = corpus.encode(vocab)
    t0, t1 = corpus.span
    if t1 <= t0:
        raise ValueError(f"corpus spans a single time ({t0}); Word2Fun needs at least two")
    ts = TimeScale(t0, t1, args.time_scale)
    cfg = TrainConfig(
        epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, negatives=args.negatives,
        shared_negatives=not args.per_pair_negatives, window=args.window, sample=args.sample, seed=args.seed,
        device=args.device, workers=args.workers, roughness_penalty=args.roughness_penalty,
    )
    model = Word2Fun(len(vocab), args.dim, family=args.family, time_scale=ts, n_slices=args.slices,
                     frequency_init=args.frequency_init, max_periods=args.max_periods or None, seed=args.seed)
    progress = not args.no_progress
    print(f"corpus {args.corpus}: {len(corpus)} documents, {corpus.n_tokens} tokens, {t0:g}-{t1:g}, "
          f"vocabulary {len(vocab)} (min count {args.min_count})", file=sys.stderr)
    compass_stats = None
    if args.compass == "frozen":
        static = Word2Fun(len(vocab), args.dim, family="static", time_scale=ts, seed=args.seed)
        ccfg = TrainConfig(**{**cfg.__dict__, "epochs": args.compass_epochs, "roughness_penalty": 0.0})
        compass_stats = train_word2fun(static, enc.tokens, enc.doc_ids, enc.times, vocab.counts, ccfg, progress=progress)
        model.set_compass(static.compass.weight.detach(), freeze=True)
        with torch.no_grad():  # start the static part from the static model as well
            model.base.weight.copy_(static.base.weight.repeat(model.base.weight.shape[0] // len(vocab), 1))

    out = Path(args.out) if args.out else None

    def checkpoint(epoch, stats):
        if out is not None:
            Word2FunEmbeddings(model, vocab.words, vocab.counts).save(out)

    stats = train_word2fun(model, enc.tokens, enc.doc_ids, enc.times, vocab.counts, cfg, progress=progress, on_epoch=checkpoint)
    emb = Word2FunEmbeddings(model, vocab.words, vocab.counts)

    words = [w for w in args.words.split(",") if w]
    missing = [w for w in words if w not in vocab]
    if missing:
        print(f"warning: not in the vocabulary: {', '.join(missing)}", file=sys.stderr)
    words = [w for w in words if w in vocab]
    eras = era_bounds(t0, t1, args.eras)
    nearest = {}
    for w in words:
        nearest[w] = []
        for a, b in eras:
            mid = (a + b) / 2
            nn_ = emb.nearest(w, mid, k=args.topk, min_count=args.min_count)
            nearest[w].append({"era": [a, b], "year": mid, "nearest": [[x, round(s, 4)] for x, s in nn_]})
    change = {w: emb.change_degree(w, eras[0], eras[-1]) for w in words}
    indicators = emb.indicators(words) if words else {}
    for w in words:
        print(f"\n{w}  (change degree first vs last era: {change[w]:.3f})")
        for e in nearest[w]:
            a, b = e["era"]
            print(f"  {a:.0f}-{b:.0f}: " + ", ".join(x for x, _ in e["nearest"]))
    if args.export_npz:
        top = list(vocab.words[: args.npz_words])
        top += [w for w in words if w not in top]
        emb.export_npz(args.export_npz, top)
    report = {
        "corpus": {"name": args.corpus, "documents": len(corpus), "tokens": corpus.n_tokens, "span": [t0, t1],
                   "vocabulary": len(vocab)},
        "config": {k: v for k, v in vars(args).items() if k != "func"},
        "model": model.config(),
        "training": {"seconds": stats.seconds, "tokens_per_s": stats.tokens_per_s, "pairs": stats.pairs,
                     "epoch_loss": stats.epoch_loss,
                     "compass_pretraining_seconds": compass_stats.seconds if compass_stats else None},
        "eras": eras,
        "nearest": nearest,
        "change_degree": change,
        "indicators": {k: {w: (None if v != v else v) for w, v in d.items()} for k, d in indicators.items()},
        "checkpoint": str(out) if out else None,
        "npz": args.export_npz,
    }
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2))
    return 0
