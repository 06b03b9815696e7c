"""Training steps with length-sorted chunks of the batch, for several per-chunk overheads (issue 22).

Chooses ``qpnlp.training.length_chunks.DEFAULT_OVERHEAD`` and which models
chunk their training batches (``Model.chunk_training``). Real batches:

* ``cnm``: TREC-QA TRAIN-ALL triplets (question, correct, wrong) of 32, as
  ``benchmarks/cnm_train_step.py`` samples them; CNM d=50, k=300, windows
  1-4, no dropout (the ``qpnlp train cnm --dataset trecqa`` defaults);
* ``qpdn-50``, ``qpdn-300``: MR sentences in shuffled batches of 32; QPDN
  d=50 or 300, k=50, trainable weighting, no dropout;
* ``order-NETWORK-EMBEDDING-D`` (e.g. ``order-transformer-complex_order-300``): SST-2 phrases in shuffled
  batches of 32 (29% of the padded positions are words); the order classifier as
  ``benchmarks/reproduce_complex_order.py`` trains it (its defaults, dropout 0.1, random vectors of dimension D).

Each timed call runs the same ``--batches`` batches (forward, backward,
optimiser step); variants alternate within each round
(``benchmarks/_bench.py``), times are per batch, one thread, CPU time.

    QPNLP_DATA=... python benchmarks/length_chunks.py --overheads off 0 64 128 256 512 1024
    QPNLP_DATA=... python benchmarks/length_chunks.py --cases order-transformer-pe-300 \
        order-transformer-complex_order-300 --overheads off 256
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import interleaved, order_options, ratio, sst2_batches, summary, uptime  # noqa: E402
from cnm_train_step import batches as trecqa_batches  # noqa: E402

from qpnlp.commands._types import chunk_overhead_type  # noqa: E402
from qpnlp.data import EncodedTexts, Vocabulary, load_classification  # noqa: E402
from qpnlp.data.batching import iterate_batches  # noqa: E402
from qpnlp.hilbert import set_validation  # noqa: E402
from qpnlp.models import CNM, QPDN, CNMConfig, QPDNConfig  # noqa: E402
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig  # noqa: E402
from qpnlp.training import Optimisers, TrainConfig, chunked  # noqa: E402
from qpnlp.training.matching import MatchingConfig, triplet_loss  # noqa: E402


def cnm_steps(args):
    """A function per overhead: one pass over the TRAIN-ALL batches with that overhead."""
    num_words, data = trecqa_batches(argparse.Namespace(batch=32, batches=args.batches))
    model = CNM(CNMConfig(num_words=num_words, dim=50, num_measurements=300, windows=[1, 2, 3, 4],
                          measurement_init="random", phase_init="sign", dropout=0.0),
                generator=torch.Generator().manual_seed(0)).train()
    optimisers = Optimisers(model, MatchingConfig(lr=3e-3, embedding_lr=3e-3))

    def run(overhead):
        for q, pos, neg in data:
            optimisers.zero_grad()
            triplet_loss(chunked(model, [q, pos], overhead), chunked(model, [q, neg], overhead), 0.1).backward()
            optimisers.step()
    return run, len(data)


def classifier_run(model, optimisers, data):
    """A function of the overhead: one pass of training steps over the classification batches ``data``."""
    def run(overhead):
        for ids, mask, labels in data:
            optimisers.zero_grad()
            torch.nn.functional.cross_entropy(chunked(model, [(ids, mask)], overhead), labels).backward()
            optimisers.step()
    return run


def qpdn_steps(args, dim: int):
    dataset = load_classification("MR")
    texts = [list(t) for t in dataset.texts]
    vocab = Vocabulary.build(texts)
    data = list(iterate_batches(EncodedTexts(vocab.encode_many(texts), dataset.labels), 32, shuffle=True))
    data = data[:args.batches]
    model = QPDN(QPDNConfig(num_words=len(vocab), num_classes=2, dim=dim, num_measurements=50,
                            weighting="trainable"), generator=torch.Generator().manual_seed(0)).train()
    optimisers = Optimisers(model, TrainConfig(embedding_lr=1e-3))
    return classifier_run(model, optimisers, data), len(data)


ORDER_CASES = [f"order-{n}-{e}-{d}" for n in ("fasttext", "cnn", "rnn", "transformer")
               for e in ("none", "pe", "tpe", "complex_order", "complex_vanilla") for d in (50, 300)]


def order_steps(args, case: str):
    """The order classifier of ``case`` on SST-2 training batches of 32 (the reproduction's first epoch)."""
    _, network, embedding, dim = case.split("-")
    data, sizes = sst2_batches("SST2", 32, args.batches)
    config = OrderClassifierConfig(**{**order_options(network, embedding, **sizes), "dim": int(dim)})
    model = OrderClassifier(config, generator=torch.Generator().manual_seed(0)).train()
    defaults = {k: v for k, v in OrderClassifier.training_defaults.items() if k != "select"}
    optimisers = Optimisers(model, TrainConfig(**defaults))
    return classifier_run(model, optimisers, data), len(data)


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["cnm", "qpdn-50", "qpdn-300"],
                        choices=["cnm", "qpdn-50", "qpdn-300", *ORDER_CASES], metavar="CASE")
    parser.add_argument("--overheads", nargs="+", type=chunk_overhead_type, default=[None, 64, 128, 256, 512, 1024])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    return parser


def main() -> None:
    args = _parser().parse_args()
    torch.set_num_threads(1)
    set_validation(False)
    print(f"load before: {uptime()}", flush=True)
    out = {}
    for case in args.cases:
        if case.startswith("order-"):
            run, n = order_steps(args, case)
        else:
            run, n = cnm_steps(args) if case == "cnm" else qpdn_steps(args, int(case.split("-")[1]))
        name = {o: "whole" if o is None else f"overhead {o}" for o in args.overheads}
        print(f"{case}: {n} batches per call", flush=True)
        times = interleaved({name[o]: (lambda o=o: run(o)) for o in args.overheads}, rounds=args.rounds,
                            min_run_time=0.0, warmup=1)
        times = {k: [t / n for t in v] for k, v in times.items()}
        stats = summary(times)
        baseline = name[None] if None in args.overheads else None
        for key, s in stats.items():
            speed = f"   whole / this {ratio(times, baseline, key):.2f}x" if baseline else ""
            print(f"  {key:<16} median {s['median'] * 1e3:8.2f} ms per batch{speed}", flush=True)
        out[case] = dict(seconds=times, summary=stats)
    print(f"load after: {uptime()}")
    if args.json:
        args.json.write_text(json.dumps(dict(config={k: str(v) for k, v in vars(args).items()}, results=out), indent=1))


if __name__ == "__main__":
    main()
