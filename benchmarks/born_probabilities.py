"""Born probabilities of sentence mixtures: lazy vs dense, time and peak memory.

For a batch of B sentences of L words (complex64 states of dimension d), k
rank-1 measurements and softmax word weights, one *forward + backward* pass of

* ``lazy``:  p_k = sum_i p_i |<v_k|w_i>|^2 (qpnlp.measurement.born_probabilities);
* ``dense``: rho = sum_i p_i |w_i><w_i| built from every word's d x d projector,
  then p_k = <v_k|rho|v_k> (what the earlier public implementations did);
* ``matmul``: a float32 matmul (B L, 2d) @ (2d, 2k), forward + backward - the
  same number of flops as the lazy path's complex matmul (the practical limit).

Time: median of ``torch.utils.benchmark`` runs. Memory: peak resident memory
added by one pass, measured in a fresh subprocess per (path, d) after the
inputs are allocated and the kernels warmed up on a small size.

Usage::

    python benchmarks/born_probabilities.py                    # d in 50 100 200 300
    python benchmarks/born_probabilities.py --json out.json
"""

from __future__ import annotations

import argparse
import json

import torch
from torch.utils import benchmark

from _peak_memory import peak_added_bytes, peak_in_subprocess  # benchmarks/ is on sys.path as a script

from qpnlp.hilbert import outer
from qpnlp.measurement import born_probabilities, born_probabilities_dense

PATHS = ("lazy", "dense", "matmul")


def make_inputs(path: str, batch: int, length: int, outcomes: int, dim: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    if path == "matmul":
        x = torch.randn(batch * length, 2 * dim, generator=gen, requires_grad=True)
        w = torch.randn(2 * dim, 2 * outcomes, generator=gen, requires_grad=True)
        return (x, w)
    states = torch.nn.functional.normalize(torch.randn(batch, length, dim, dtype=torch.complex64, generator=gen), dim=-1)
    logits = torch.randn(batch, length, generator=gen)
    vectors = torch.nn.functional.normalize(torch.randn(outcomes, dim, dtype=torch.complex64, generator=gen), dim=-1)
    return tuple(t.requires_grad_() for t in (states, logits, vectors))


def step(path: str, inputs) -> None:
    """One forward + backward pass."""
    if path == "matmul":
        x, w = inputs
        (x @ w).sum().backward()
        return
    states, logits, vectors = inputs
    weights = torch.softmax(logits, dim=-1)
    if path == "lazy":
        p = born_probabilities(states, weights, vectors)
    else:
        words = outer(states)                                               # (B, L, d, d)
        rho = (weights.to(words.dtype)[..., None, None] * words).sum(-3)    # (B, d, d)
        p = born_probabilities_dense(rho, vectors)
    p.sum().backward()


def time_path(path: str, dim: int, args) -> float:
    inputs = make_inputs(path, args.batch, args.length, args.outcomes, dim)
    timer = benchmark.Timer(stmt="step(path, inputs)", globals=dict(step=step, path=path, inputs=inputs),
                            num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=args.min_run_time).median


def peak_memory_child(path: str, dim: int, batch: int, length: int, outcomes: int) -> None:
    """Runs in a subprocess: prints the peak resident memory (bytes) one pass adds."""
    step(path, make_inputs(path, 2, 2, 2, 4))                  # warm up kernels and autograd
    inputs = make_inputs(path, batch, length, outcomes, dim)
    print(peak_added_bytes(lambda: step(path, inputs)))


def peak_memory(path: str, dim: int, args) -> int:
    return peak_in_subprocess(__file__, ["--child", path, str(dim), "--batch", str(args.batch),
                                         "--length", str(args.length), "--outcomes", str(args.outcomes)])


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[50, 100, 200, 300])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--outcomes", type=int, default=50)
    parser.add_argument("--min-run-time", type=float, default=1.0, help="seconds per timing")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "DIM"), help=argparse.SUPPRESS)
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    if args.child:
        peak_memory_child(args.child[0], int(args.child[1]), args.batch, args.length, args.outcomes)
        return
    print(f"B={args.batch} L={args.length} k={args.outcomes}, complex64, forward+backward, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}")
    header = (f"{'d':>4} | {'lazy ms':>8} | {'dense ms':>9} | {'matmul ms':>9} | {'dense/lazy time':>15} | "
              f"{'lazy/matmul time':>16} | {'lazy MiB':>8} | {'dense MiB':>9} | {'dense/lazy mem':>14}")
    print(header)
    print("-" * len(header))
    rows = []
    for dim in args.dims:
        t = {p: time_path(p, dim, args) for p in PATHS}
        m = {p: peak_memory(p, dim, args) for p in ("lazy", "dense")}
        row = dict(d=dim, time_s=t, peak_bytes=m, dense_over_lazy_time=t["dense"] / t["lazy"],
                   lazy_over_matmul_time=t["lazy"] / t["matmul"], dense_over_lazy_memory=m["dense"] / m["lazy"])
        rows.append(row)
        print(f"{dim:>4} | {t['lazy'] * 1e3:8.3f} | {t['dense'] * 1e3:9.1f} | {t['matmul'] * 1e3:9.3f} | "
              f"{row['dense_over_lazy_time']:15.0f} | {row['lazy_over_matmul_time']:16.2f} | "
              f"{m['lazy'] / 2**20:8.2f} | {m['dense'] / 2**20:9.1f} | {row['dense_over_lazy_memory']:14.0f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(config=vars(args), torch=torch.__version__, threads=torch.get_num_threads(), rows=rows),
                      fh, indent=2)


if __name__ == "__main__":
    main()
