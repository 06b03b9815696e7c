"""``qpnlp train word2fun``: train Word2Fun on a timestamped corpus and report drifts.

Examples
--------
``qpnlp train word2fun --corpus sotu --words energy,union --out runs/sotu --report sotu.json``

``qpnlp train word2fun --corpus data.tsv --family IV --epochs 5 --export-npz grid.npz``

The corpus is ``sotu`` (the State of the Union package) or a TSV file with one
document per line: ``YEAR<TAB>space separated tokens``.  Training is
:func:`qpnlp.word2fun.fit` (vocabulary, optional frozen-compass pre-training,
SGD); with ``--out`` the vectors are saved there after every epoch in the
format of every qpnlp model (``config.json`` + ``model.safetensors`` +
``vocabulary.json``; load with ``qpnlp.word2fun.KeyedVectors.from_pretrained``).
The command prints the nearest words of ``--words`` in each era, and writes a
JSON report (``--report``) and the vectors grid (``--export-npz``: arrays
``words``, ``years``, ``E`` of shape years x words x dim).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

__all__ = ["register", "run"]

# the choices, as the library defines them (importing qpnlp.word2fun here would slow every qpnlp command)
FAMILIES = ["static", "sliced", "linear", "time2fun", "II", "III", "IV"]
FREQUENCY_INITS = ["fixed", "harmonic"]
COMPASS_MODES = ["trainable", "frozen"]


def register(subparsers: dict) -> None:
    """Add ``word2fun`` under ``subparsers["train"]``."""
    p = subparsers["train"].add_parser(
        "word2fun", help="dynamic word embeddings as functions of time (Word2Fun)", description=__doc__.splitlines()[0]
    )
    p.add_argument("--corpus", required=True, help="'sotu' or a TSV file: YEAR<TAB>tokens per line")
    p.add_argument("--family", default="IV", choices=FAMILIES)
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
    p.add_argument("--frequency-init", default="harmonic", choices=FREQUENCY_INITS)
    p.add_argument("--max-periods", type=float, default=0.0,
                   help="harmonic init: fastest frequency in periods over the span (0 = the full ladder, D/8 periods)")
    p.add_argument("--roughness-penalty", type=float, default=0.0,
                   help="families II-IV: weight of the mean squared speed of f(u, .) per centre token (0 = off)")
    p.add_argument("--slices", type=int, default=10, help="time slices of the 'sliced' family")
    p.add_argument("--compass", default="trainable", choices=COMPASS_MODES,
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


def _load_corpus(spec: str):
    from qpnlp.data import load_sotu, read_tsv

    if spec == "sotu":
        return load_sotu()
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"corpus file {spec} does not exist (use 'sotu' or a TSV file)")
    return read_tsv(path)


def run(args: argparse.Namespace) -> int:
    from qpnlp.interpret.temporal import equal_eras
    from qpnlp.word2fun import TrainConfig, fit

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    corpus = _load_corpus(args.corpus)
    cfg = TrainConfig(
        epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, negatives=args.negatives,
        shared_negatives=not args.per_pair_negatives, window=args.window, sample=args.sample, seed=args.seed,
        device=args.device, workers=args.workers, roughness_penalty=args.roughness_penalty,
    )
    if len(corpus):
        print(f"corpus {args.corpus}: {len(corpus)} documents, {corpus.n_tokens} tokens, "
              f"{corpus.span[0]:g}-{corpus.span[1]:g}", file=sys.stderr)
    result = fit(corpus, cfg, family=args.family, dim=args.dim, time_scale=args.time_scale, n_slices=args.slices,
                 frequency_init=args.frequency_init, max_periods=args.max_periods or None, min_count=args.min_count,
                 compass=args.compass, compass_epochs=args.compass_epochs, checkpoint=args.out,
                 metadata={"corpus_name": args.corpus}, progress=not args.no_progress)
    vectors, stats = result.vectors, result.stats
    print(f"vocabulary {len(vectors)} words (min count {args.min_count})", file=sys.stderr)

    words = [w for w in args.words.split(",") if w]
    missing = [w for w in words if w not in vectors]
    if missing:
        print(f"warning: not in the vocabulary: {', '.join(missing)}", file=sys.stderr)
    words = [w for w in words if w in vectors]
    eras = equal_eras(*vectors.time_span, args.eras)
    nearest = {}
    for w in words:
        nearest[w] = []
        for a, b in eras:
            mid = (a + b) / 2
            found = vectors.most_similar(w, topn=args.topk, year=mid, min_count=args.min_count)
            nearest[w].append({"era": [a, b], "year": mid, "nearest": [[x, round(s, 4)] for x, s in found]})
    change = {w: vectors.change_degree(w, eras[0], eras[-1]) for w in words}
    indicators = vectors.indicators(words) if words else {}
    for w in words:
        print(f"\n{w}  (change degree first vs last era: {change[w]:.3f})")
        for e in nearest[w]:
            a, b = e["era"]
            print(f"  {a:.0f}-{b:.0f}: " + ", ".join(x for x, _ in e["nearest"]))
    if args.export_npz:
        top = list(vectors.index_to_key[: args.npz_words])
        top += [w for w in words if w not in top]
        vectors.export_npz(args.export_npz, top)
    report = {
        "corpus": {"name": args.corpus, "documents": len(corpus), "tokens": corpus.n_tokens,
                   "span": list(vectors.time_span), "vocabulary": len(vectors)},
        "config": {k: v for k, v in vars(args).items() if k != "func"},
        "model": vectors.model.config.to_dict(),
        "training": {"seconds": stats.seconds, "tokens_per_s": stats.tokens_per_s, "pairs": stats.pairs,
                     "epoch_loss": stats.epoch_loss,
                     "compass_pretraining_seconds": result.compass_stats.seconds if result.compass_stats else None},
        "eras": eras,
        "nearest": nearest,
        "change_degree": change,
        "indicators": {k: {w: (None if v != v else v) for w, v in d.items()} for k, d in indicators.items()},
        "checkpoint": args.out,
        "npz": args.export_npz,
    }
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2))
    return 0
