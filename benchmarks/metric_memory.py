"""Peak memory of quantum metrics of one state against a batch: qpnlp against the per-pair concatenation.

One state (a pure state, or an ensemble of n words) against N ensembles of m words of dimension d
(complex128), under ``torch.no_grad``:

* ``qjsd``: :func:`qpnlp.hilbert.quantum_jensen_shannon_divergence`. qpnlp builds the (n + m) x (n + m) Gram
  matrix of the average from the blocks ``A^H A``, ``A^H B``, ``B^H B``, overlaps of the member states scaled by
  the roots of the weights (no factor built); the baseline concatenates the two member lists per pair,
  ``(N, d, n + m)`` (what qpnlp did before 0.2.0, and what a direct implementation of "the average is the ensemble
  of both member lists" does), and takes the eigenvalues of its Gram matrix.
* ``infidelity``: :func:`qpnlp.hilbert.infidelity` of a pure state (``1 - F`` from the component of the batch's
  states orthogonal to it, free of cancellation, slice by slice of the batch). The baseline is the same formula on
  the factor with ``@`` products and the product tensor ``psi (psi^H B)`` before the subtraction.
* ``trace``: :func:`qpnlp.hilbert.trace_distance` of an ensemble against the batch (the eigenvalues of ``R J R^H``
  from the QR of ``F = [A, B]``, written once from the states and taken slice by slice of the batch). The baseline
  concatenates the factors per pair, ``(N, d, n + m)``, and QR copies it (what qpnlp did before).
* ``purity``: ``Ensemble.purity`` of the batch (the Frobenius norm of its Gram matrix, from the overlaps of its
  states). The baseline is the Gram matrix ``A^H A`` of the factor ``A`` (a scaled copy of the states; torch's CPU
  ``bmm`` copies the conjugate operand too), what qpnlp did before.

Memory: the peak resident memory one call adds, in a fresh subprocess per (metric, side, path), measured with
``benchmarks/_peak_memory.py`` (/proc/self/clear_refs and VmHWM). The two paths' values are compared (max |diff|).

Usage::

    python benchmarks/metric_memory.py                      # d=300 N=2000 m=20 n=5
    python benchmarks/metric_memory.py --json benchmarks/results/metric_memory/results.json
"""

from __future__ import annotations

import argparse
import json

import torch

from _peak_memory import peak_added_bytes, peak_in_subprocess  # benchmarks/ is on sys.path as a script

from qpnlp.hilbert import Ensemble, infidelity, quantum_jensen_shannon_divergence, random_pure_state, trace_distance
from qpnlp.hilbert._entropy import _xlogx

CASES = (("qjsd", "pure"), ("qjsd", "ensemble"), ("infidelity", "pure"), ("trace", "ensemble"), ("purity", "none"))
PATHS = ("qpnlp", "concatenated")


def make_inputs(side: str, dim: int, batch: int, members: int, own: int, seed: int = 0):
    """``(one, batch)``: a pure state or an ensemble of ``own`` words, and N ensembles of ``members`` words."""
    gen = torch.Generator().manual_seed(seed)
    states = random_pure_state(dim, batch_shape=(batch, members), dtype=torch.complex128, generator=gen)
    weights = torch.softmax(torch.randn(batch, members, generator=gen, dtype=torch.float64), -1)
    if side in ("pure", "none"):                     # "none": a metric of the batch alone (the state is unused)
        one = random_pure_state(dim, dtype=torch.complex128, generator=gen)
    else:
        one = Ensemble(random_pure_state(dim, batch_shape=(own,), dtype=torch.complex128, generator=gen))
    return one, Ensemble(states, weights)


def _factor(state) -> torch.Tensor:
    """``(..., d, n)``: the columns sqrt(w_i) |psi_i> (a pure state: its own column)."""
    return state.factor() if isinstance(state, Ensemble) else state.data.unsqueeze(-1)


def _entropy_of_gram(gram: torch.Tensor) -> torch.Tensor:
    return -_xlogx(torch.linalg.eigvalsh(gram).clamp_min(0)).sum(-1)


def concatenated_qjsd(one, batch: Ensemble) -> torch.Tensor:
    """QJSD with the average's factor ``[A, B] / sqrt 2`` concatenated per pair: ``(N, d, n + m)``."""
    a, b = _factor(one), _factor(batch)
    both = torch.cat([a.expand(b.shape[0], *a.shape[-2:]), b], -1) / 2 ** 0.5
    mixed = _entropy_of_gram(both.mH @ both)
    return mixed - 0.5 * (_entropy_of_gram(a.mH @ a) + _entropy_of_gram(b.mH @ b))


def concatenated_infidelity(one, batch: Ensemble) -> torch.Tensor:
    """``||P_perp B||^2 / ||B||^2`` with ``@`` products and the product tensor ``psi (psi^H B)``."""
    psi, b = _factor(one), _factor(batch)
    residual = b - psi @ (psi.mH @ b)
    return residual.abs().square().sum((-2, -1)) / b.abs().square().sum((-2, -1))


def concatenated_trace_distance(one, batch: Ensemble) -> torch.Tensor:
    """``T`` from ``R J R^H`` of the QR of ``[A, B]`` concatenated per pair, ``(N, d, n + m)``."""
    a, b = _factor(one), _factor(batch)
    r = torch.linalg.qr(torch.cat([a.expand(b.shape[0], *a.shape[-2:]), b], -1), mode="r").R
    signs = torch.cat((r.new_ones(a.shape[-1]), -r.new_ones(b.shape[-1])))
    return 0.5 * torch.linalg.eigvalsh((r * signs) @ r.mH).abs().sum(-1)


def factor_purity(_one, batch: Ensemble) -> torch.Tensor:
    """``||A^H A||_F^2`` of the batch's factor ``A``."""
    a = batch.factor()
    return (a.mH @ a).abs().square().sum((-2, -1))


METRICS = {"qjsd": (quantum_jensen_shannon_divergence, concatenated_qjsd),
           "infidelity": (infidelity, concatenated_infidelity),
           "trace": (trace_distance, concatenated_trace_distance),
           "purity": (lambda _one, batch: batch.purity(), factor_purity)}


def evaluate(metric: str, path: str, one, batch: Ensemble) -> torch.Tensor:
    with torch.no_grad():
        return METRICS[metric][PATHS.index(path)](one, batch)


def peak_memory_child(metric: str, side: str, path: str, args) -> None:
    """Runs in a subprocess: prints the peak resident memory (bytes) one call adds."""
    evaluate(metric, path, *make_inputs(side, 8, 3, 2, 2))          # warm up kernels
    one, batch = make_inputs(side, args.dim, args.batch, args.members, args.own)
    print(peak_added_bytes(lambda: evaluate(metric, path, one, batch)))


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--batch", type=int, default=2000, help="N, ensembles in the batch")
    parser.add_argument("--members", type=int, default=20, help="m, words per ensemble of the batch")
    parser.add_argument("--own", type=int, default=5, help="n, words of the single ensemble")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", nargs=3, metavar=("METRIC", "SIDE", "PATH"), help=argparse.SUPPRESS)
    return parser


def _sizes(args) -> list[str]:
    return ["--dim", str(args.dim), "--batch", str(args.batch), "--members", str(args.members), "--own",
            str(args.own)]


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    if args.child:
        peak_memory_child(*args.child, args)
        return
    batch_mib = args.batch * args.members * args.dim * 16 / 2**20
    print(f"d={args.dim} N={args.batch} m={args.members} n={args.own}, complex128 (the batch's states: "
          f"{batch_mib:.0f} MiB), torch {torch.__version__}, one thread")
    header = f"{'metric':>10} | {'one side':>8} | {'qpnlp MiB':>9} | {'concat MiB':>10} | {'ratio':>5} | max |diff|"
    print(header)
    print("-" * len(header))
    rows = []
    for metric, side in CASES:
        peak = {p: peak_in_subprocess(__file__, ["--child", metric, side, p, *_sizes(args)]) for p in PATHS}
        values = [evaluate(metric, p, *make_inputs(side, args.dim, args.batch, args.members, args.own))
                  for p in PATHS]
        diff = float((values[0] - values[1]).abs().max())
        rows.append(dict(metric=metric, side=side, peak_bytes=peak, ratio=peak["concatenated"] / peak["qpnlp"],
                         max_abs_diff=diff))
        print(f"{metric:>10} | {side:>8} | {peak['qpnlp'] / 2**20:9.0f} | {peak['concatenated'] / 2**20:10.0f} | "
              f"{rows[-1]['ratio']:5.2f} | {diff:.1e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(config={k: v for k, v in vars(args).items() if k != "child"}, torch=torch.__version__,
                           batch_mib=batch_mib, rows=rows), fh, indent=2)


if __name__ == "__main__":
    main()
