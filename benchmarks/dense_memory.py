"""Peak memory of a mixture's density matrix: ``Ensemble.dense`` against one product with a weighted copy.

N mixtures of n states in C^d (complex128, softmax weights), under ``torch.no_grad``:

* ``qpnlp``: ``Ensemble.dense`` (:func:`qpnlp.hilbert._mixture.dense`): the members in chunks of
  ``max(32, d // 4)``, each chunk's weighted conjugates ``(N, c, d)`` multiplied into the ``(N, d, d)`` result in
  place;
* ``copy``: ``S^T (conj(S) * p)`` in one product, which holds a weighted copy ``(N, n, d)`` of every state beside
  the result (what qpnlp did before the chunks).

Memory: the peak resident memory one call adds, in a fresh subprocess per (size, path), measured with
``benchmarks/_peak_memory.py`` (/proc/self/clear_refs and VmHWM). The two paths' values are compared (max |diff|
relative to the largest entry). About 25 s on one thread.

Usage::

    python benchmarks/dense_memory.py                       # N,n,d = 200,200,300 and 40,4000,32
    python benchmarks/dense_memory.py --sizes 200,200,300 --json out.json
"""

from __future__ import annotations

import argparse
import json

import torch

from _peak_memory import peak_added_bytes, peak_in_subprocess  # benchmarks/ is on sys.path as a script

from qpnlp.hilbert import Ensemble, random_pure_state

PATHS = ("qpnlp", "copy")
SIZES = ("200,200,300", "40,4000,32")


def make_batch(mixtures: int, members: int, dim: int, seed: int = 0) -> Ensemble:
    gen = torch.Generator().manual_seed(seed)
    states = random_pure_state(dim, batch_shape=(mixtures, members), dtype=torch.complex128, generator=gen)
    weights = torch.softmax(torch.randn(mixtures, members, generator=gen, dtype=torch.float64), -1)
    return Ensemble(states, weights)


def evaluate(path: str, batch: Ensemble) -> torch.Tensor:
    with torch.no_grad():
        if path == "qpnlp":
            return batch.dense().data
        states = batch.states.data
        return states.mT @ (states.conj() * batch.weights.to(states.dtype).unsqueeze(-1))


def peak_memory_child(path: str, size: str) -> None:
    """Runs in a subprocess: prints the peak resident memory (bytes) one call adds."""
    evaluate(path, make_batch(4, 5000, 8))       # warm up kernels (and BLAS's buffers): 2.4 MiB of states, chunked
    batch = make_batch(*map(int, size.split(",")))
    print(peak_added_bytes(lambda: evaluate(path, batch)))


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), metavar="N,n,d",
                        help="mixtures, members per mixture and dimension, comma-separated")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "SIZE"), help=argparse.SUPPRESS)
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    if args.child:
        peak_memory_child(*args.child)
        return
    print(f"complex128, torch {torch.__version__}, one thread; MiB added at the peak")
    header = f"{'N,n,d':>12} | {'states':>6} | {'result':>6} | {'qpnlp':>6} | {'copy':>6} | rel. max |diff|"
    print(header)
    print("-" * len(header))
    rows = []
    for size in args.sizes:
        mixtures, members, dim = map(int, size.split(","))
        peak = {p: peak_in_subprocess(__file__, ["--child", p, size]) for p in PATHS}
        batch = make_batch(mixtures, members, dim)
        values = [evaluate(p, batch) for p in PATHS]
        diff = float((values[0] - values[1]).abs().max() / values[1].abs().max())
        states_mib, result_mib = [mixtures * k * dim * 16 / 2**20 for k in (members, dim)]
        rows.append(dict(mixtures=mixtures, members=members, dim=dim, peak_bytes=peak, states_mib=states_mib,
                         result_mib=result_mib, max_rel_diff=diff))
        print(f"{size:>12} | {states_mib:6.1f} | {result_mib:6.1f} | {peak['qpnlp'] / 2**20:6.1f} | "
              f"{peak['copy'] / 2**20:6.1f} | {diff:.1e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(torch=torch.__version__, rows=rows), fh, indent=2)


if __name__ == "__main__":
    main()
