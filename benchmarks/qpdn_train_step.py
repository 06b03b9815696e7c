"""QPDN training step: sparse embedding updates vs forward+backward alone.

At d=300, B=32, L=50, k=50, V=20000 (defaults) times, in one run:

* ``fwd+bwd``      forward and backward only;
* ``step sparse``  forward, backward and the optimiser step as the trainer does it
                   (SparseAdam on the embedding tables: only the batch's rows change;
                   Adam on the rest);
* ``step dense``   the same with dense embedding gradients and Adam on every row
                   (what a naive implementation does), for contrast.

Target: ``step sparse`` within 2x of ``fwd+bwd``.

Usage::

    python benchmarks/qpdn_train_step.py [--dim 300] [--vocab 20000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json

import torch
from torch.utils import benchmark

from qpnlp.models import QPDN, QPDNConfig
from qpnlp.training import TrainConfig
from qpnlp.training.trainer import Optimisers


def make(args, sparse: bool):
    gen = torch.Generator().manual_seed(0)
    model = QPDN(QPDNConfig(num_words=args.vocab, num_classes=2, dim=args.dim, num_measurements=args.outcomes,
                            weighting="trainable"), generator=gen)
    for module in model.modules():
        if isinstance(module, torch.nn.Embedding):
            module.sparse = sparse
    ids = torch.randint(2, args.vocab, (args.batch, args.length), generator=gen)
    mask = torch.ones_like(ids, dtype=torch.bool)
    labels = torch.randint(0, 2, (args.batch,), generator=gen)
    if sparse:
        optimisers = Optimisers(model, TrainConfig())
    else:
        optimisers = torch.optim.Adam(model.parameters(), lr=1e-2)
    return model, optimisers, ids, mask, labels


def forward_backward(model, optimisers, ids, mask, labels):
    optimisers.zero_grad()
    torch.nn.functional.cross_entropy(model(ids, mask), labels).backward()


def full_step(model, optimisers, ids, mask, labels):
    forward_backward(model, optimisers, ids, mask, labels)
    optimisers.step()


def measure(fn, inputs, min_run_time: float) -> float:
    fn(*inputs)  # warm-up (optimiser state allocation)
    timer = benchmark.Timer(stmt="fn(*inputs)", globals=dict(fn=fn, inputs=inputs),
                            num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--outcomes", type=int, default=50)
    parser.add_argument("--min-run-time", type=float, default=2.0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    sparse, dense = make(args, True), make(args, False)
    times = {
        "fwd+bwd": measure(forward_backward, sparse, args.min_run_time),
        "step sparse": measure(full_step, sparse, args.min_run_time),
        "step dense": measure(full_step, dense, args.min_run_time),
    }
    print(f"QPDN d={args.dim} V={args.vocab} B={args.batch} L={args.length} k={args.outcomes}, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}")
    for name, t in times.items():
        print(f"  {name:<12} {t * 1e3:8.2f} ms   ({t / times['fwd+bwd']:.2f}x fwd+bwd)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(config=vars(args), seconds=times,
                           sparse_step_over_fwd_bwd=times["step sparse"] / times["fwd+bwd"]), fh, indent=2)


if __name__ == "__main__":
    main()
