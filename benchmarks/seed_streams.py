"""Where qpnlp's random streams of one run coincide with those of another run or of another part of the same run.

Each finding is printed with the measurement that shows it (no benchmark data needed; CPU, a few seconds):

1. ``splits``: the dev of the k-th fold is carved with seed ``seed + k - 1``, so fold k+1 of seed s and fold k of
   seed s + 1 carve with one seed; their dev parts share more items than chance.
2. ``default_rng((seed, 0))`` is ``default_rng(seed)`` (numpy pads a short entropy with zeros): the first epoch's
   batch order (and a matching model's first triplets) draws on the stream of the random vectors of
   out-of-vocabulary words.
3. A classifier's initial parameters (``torch.Generator().manual_seed(seed)``) and its dropout masks (torch's
   global generator, ``torch.manual_seed(seed)`` for the run) are one MT19937 stream.
4. Word2Fun: worker 0's negatives replay the initial vectors' draws (on the CPU); worker ``w`` of seed ``s`` is
   worker 0 of seed ``s + 7919 w``.
5. Word2Fun with ``compass="frozen"``: the training replays the pre-training's pairs and negatives.

Usage::

    python benchmarks/seed_streams.py
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from qpnlp.data import TimestampedCorpus
from qpnlp.data.classification import ClassificationDataset
from qpnlp.data.protocols import splits
from qpnlp.models import OrderClassifier, OrderClassifierConfig
from qpnlp.nn.functional import dropout_keep
from qpnlp.training.trainer import seeded
from qpnlp.word2fun import TrainConfig, Word2Fun, Word2FunConfig, fit
from qpnlp.word2fun import train as w2f_train
from qpnlp.word2fun.loop import negative_seeds


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10662, help="items of the cross-validated data set (MR's)")
    parser.add_argument("--seeds", type=int, default=5, help="adjacent seeds compared in finding 1")
    return parser


def fold_dev_overlap(items: int, seeds: int) -> str:
    """Finding 1: mean share of dev items in common, same carving seed against the same fold of the next seed."""
    labels = np.array([0, 1] * (items // 2))
    data = ClassificationDataset("mr-like", [["w"]] * len(labels), labels, ("a", "b"))
    dev = {s: [split.dev for split in splits(data, seed=s)] for s in range(seeds + 1)}
    share = lambda a, b: len(np.intersect1d(a, b)) / len(a)   # noqa: E731
    same = [share(dev[s][k + 1], dev[s + 1][k]) for s in range(seeds) for k in range(len(dev[s]) - 1)]
    other = [share(dev[s][k], dev[s + 1][k]) for s in range(seeds) for k in range(len(dev[s]))]
    return (f"1. dev items shared by fold k+1 of seed s and fold k of seed s+1 (one carving seed): "
            f"{100 * np.mean(same):.1f}% (min {100 * min(same):.1f}%); fold k of s and of s+1: "
            f"{100 * np.mean(other):.1f}%")


def numpy_zero_padding() -> str:
    """Finding 2: ``default_rng((s, 0))`` and ``default_rng(s)`` are one stream."""
    equal = all(np.array_equal(np.random.default_rng((s, 0)).random(4), np.random.default_rng(s).random(4))
                for s in range(100))
    return f"2. default_rng((seed, 0)) == default_rng(seed) for seeds 0..99: {equal}"


def init_and_dropout(seed: int = 3) -> str:
    """Finding 3: the first dropout mask of a seeded run is the initial parameters' uniforms thresholded."""
    config = OrderClassifierConfig(num_words=50, num_classes=2, dim=8, dropout=0.5)
    with seeded(seed):
        OrderClassifier(config, generator=torch.Generator().manual_seed(seed))
        keep = dropout_keep((4, 10, 8), 0.5, torch.float32)
    drawn = torch.rand(keep.numel(), generator=torch.Generator().manual_seed(seed))
    return (f"3. first dropout keep mask == (initialisation's first uniforms >= p): "
            f"{torch.equal(keep.flatten().bool(), drawn >= 0.5)}")


def word2fun_negatives(seed: int = 3) -> str:
    """Finding 4: the uniforms behind worker 0's first negatives are the initial base vectors' (double precision)."""
    V, D = 40, 6
    model = Word2Fun(Word2FunConfig(vocab_size=V, dim=D, family="II", precision="double"), seed=seed)
    worker0 = torch.Generator().manual_seed(negative_seeds(seed, 0, 1)[0])
    u = torch.rand(V * D, generator=worker0, dtype=torch.float64)    # what NegativeSampler.sample draws first
    replay = torch.equal((u - 0.5) / D, model.base.weight.detach().flatten())
    cross = negative_seeds(seed, 0, 2)[1] == negative_seeds(seed + 7919, 0, 1)[0]
    return (f"4. Word2Fun worker 0's first {V * D} negatives' uniforms are the initial base vectors' "
            f"(base = (u - 0.5) / D): {replay}; worker 1 of seed s is worker 0 of seed s + 7919: {cross}")


def compass_replay(seed: int = 4) -> str:
    """Finding 5: the states the pre-training and the training start their draws from."""
    starts, real = [], w2f_train.train_source

    def recording(model, source, counts, cfg, **kw):
        starts.append((kw["rng"].bit_generator.state["state"], [g.get_state() for g in kw["generators"]]))
        return real(model, source, counts, cfg, **kw)

    w2f_train.train_source = recording
    try:
        rng = np.random.default_rng(0)
        words = ["war", "peace", "trade", "army", "navy", "tax", "bank", "union"]
        corpus = TimestampedCorpus.from_pairs((1900 + i % 20, list(rng.choice(words, 8))) for i in range(200))
        fit(corpus, TrainConfig(epochs=1, seed=seed), family="IV", dim=6, min_count=1, compass="frozen",
            compass_epochs=1)
    finally:
        w2f_train.train_source = real
    (pre_rng, pre_gens), (rng_state, gens) = starts
    same = pre_rng == rng_state and all(torch.equal(a, b) for a, b in zip(pre_gens, gens))
    return f"5. compass='frozen': the training starts from the pre-training's pair and negative streams: {same}"


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    for line in (fold_dev_overlap(args.items, args.seeds), numpy_zero_padding(), init_and_dropout(),
                 word2fun_negatives(), compass_replay()):
        print(line)


if __name__ == "__main__":
    main()
