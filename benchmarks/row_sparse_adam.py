"""The row-wise sparse Adam step of one embedding table: before/after a change to ``RowSparseAdam``.

One ``(V, d)`` table, coalesced sparse gradients on the unique rows of ``B x L`` random ids (the QPDN step's
shapes by default: 20000 x 300, 32 x 50 ids, about 1540 rows; 16 gradients taken in turn), and ``RowSparseAdam.step`` of the working tree
against the same class at ``--baseline-rev`` (``benchmarks/_baseline.py``), variants interleaved round by round,
1 thread, CPU time. Both start from equal parameters and moments; their updated parameters are compared after
the first 16 steps (bit for bit with torch ops in both; with the compiled loop of ``qpnlp.training.adam_rows``,
to an ulp of the square root per step).

Usage::

    python benchmarks/row_sparse_adam.py [--baseline-rev b116a5e] [--rounds 10]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _baseline import load_baseline  # noqa: E402
from _bench import interleaved, ratio, summary, uptime  # noqa: E402

from qpnlp.training.sparse_rmsprop import RowSparseAdam  # noqa: E402


def make_step(optimiser_class, table: torch.Tensor, grads: list[torch.Tensor]):
    """A parameter copied from ``table``, its optimiser, and a closure that steps with the next of ``grads``."""
    param = torch.nn.Parameter(table.clone())
    optimiser = optimiser_class([param], lr=1e-3)
    turn = [0]

    def step():
        param.grad = grads[turn[0] % len(grads)]
        turn[0] += 1
        optimiser.step()
    return param, step


def sparse_gradients(n: int, vocab: int, dim: int, ids: int, gen: torch.Generator) -> list[torch.Tensor]:
    """``n`` coalesced gradients, each on the unique rows of ``ids`` random ids (fresh rows and values each)."""
    grads = []
    for _ in range(n):
        rows = torch.unique(torch.randint(2, vocab, (ids,), generator=gen))
        values = torch.randn(rows.numel(), dim, generator=gen)
        grads.append(torch.sparse_coo_tensor(rows.unsqueeze(0), values, (vocab, dim), is_coalesced=True,
                                             check_invariants=False))
    return grads


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--ids", type=int, default=32 * 50)
    parser.add_argument("--baseline-rev", default="b116a5e")
    parser.add_argument("--rounds", type=int, default=10)
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    grads = sparse_gradients(16, args.vocab, args.dim, args.ids, gen)
    table = torch.randn(args.vocab, args.dim, generator=gen)
    base = load_baseline(args.baseline_rev).training.sparse_rmsprop.RowSparseAdam
    (before, step_before), (after, step_after) = make_step(base, table, grads), make_step(RowSparseAdam, table, grads)
    for _ in range(len(grads)):
        step_before(), step_after()
    rows = sum(g._nnz() for g in grads) / len(grads)
    print(f"{rows:.0f} rows on average of {args.dim} in a {args.vocab} x {args.dim} table, {len(grads)} gradients "
          f"in turn, 1 thread (CPU time); before = qpnlp {args.baseline_rev}, after = working tree")
    print(f"parameters after {len(grads)} steps equal bit for bit: {torch.equal(before, after)}, "
          f"max |before - after| = {float((before - after).detach().abs().max()):.2e}")
    print("load before:", uptime())
    times = interleaved({"before": step_before, "after": step_after}, rounds=args.rounds)
    print("load after:", uptime())
    for name, s in summary(times).items():
        print(f"  {name:<7} median {s['median'] * 1e3:7.3f} ms   min {s['min'] * 1e3:7.3f} ms")
    print(f"  before / after  {ratio(times, 'before', 'after'):.2f}x   (median of per-round ratios)")


if __name__ == "__main__":
    main()
