"""The stable top-k of the nearest-word searches against :func:`torch.topk`, with and without ties at the cut.

:func:`qpnlp._top_k.top_k` ranks equal scores by increasing column (a stable sort's order), which
:func:`torch.topk` leaves unspecified. Rows whose cut falls inside a tie take an extra path; this benchmark times it
where it is worst, every score of every row equal (a query orthogonal to the whole vocabulary), and on distinct
scores (no tie: one ``topk`` and a sort of the k kept), each against a plain ``topk`` of the same scores in the
same round (:func:`_bench.interleaved`, 1 thread, process CPU time).

Usage::

    python benchmarks/top_k_ties.py                      # 160 queries x 100,000 words, k = 10
    python benchmarks/top_k_ties.py --rows 32 --columns 20000 --k 50
"""

from __future__ import annotations

import argparse

import torch

from _bench import interleaved, ratio, summary, uptime  # benchmarks/ is on sys.path as a script

from qpnlp._top_k import top_k


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=160)
    ap.add_argument("--columns", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    return ap


def main() -> None:
    args = _parser().parse_args()
    torch.set_num_threads(1)
    print(uptime())
    shape = (args.rows, args.columns)
    for name, scores in (("all tied", torch.zeros(shape)), ("distinct", torch.randn(shape, generator=torch.Generator().manual_seed(0)))):
        times = interleaved({"stable top_k": lambda: top_k(scores, args.k),
                             "torch.topk": lambda: scores.topk(args.k, dim=-1)}, rounds=args.rounds)
        ms = {n: f"{s['median'] * 1e3:.1f} ms" for n, s in summary(times).items()}
        print(f"{name} {shape}, k={args.k}: {ms}; stable top_k / torch.topk = {ratio(times, 'stable top_k', 'torch.topk'):.2f}x")
    print(uptime())


if __name__ == "__main__":
    main()
