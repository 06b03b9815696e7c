r"""Batched qpnlp metrics vs a loop of QuTiP calls: same values, time ratio.

For B pairs of states of dimension d (default B=256, d=300), each metric is
computed once by qpnlp on the whole batch and by a Python loop of QuTiP
calls over the batch; the values are asserted equal and the times compared.
Two kinds of input:

* ``mixed``: full-rank Hilbert-Schmidt random density matrices (dense);
* ``sentences``: mixtures of ``--words`` Haar word states (rank-deficient).
  qpnlp takes them as lazy ``Ensemble`` objects (low-rank formulas, no d x d
  matrix); QuTiP gets the dense matrices.

QuTiP takes square roots of rank-deficient matrices (``sqrtm`` for the
fidelity family, the square roots of the eigenvalues of
:math:`D^\dagger D` for the trace distance), which costs it half the digits
or more: at B=256, d=300 and 20 words its root fidelity was off by up to 7.9e-5 (pair 144: QuTiP
0.1827061, qpnlp 0.1826274, a 40-digit mpmath SVD of the same factors 0.1826274 to 3e-17). So those
metrics on ``sentences`` are compared at ``--loose-atol`` (1e-3); all others at ``--atol``. The bipartite metrics split d as ``--dims`` (default
15 x 20). qpnlp runs in complex128 (QuTiP's precision) and, for the time
only, in complex64. Conversions to QuTiP objects are outside the timings.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/metrics_vs_qutip.py   # B=256, d=300
    python benchmarks/metrics_vs_qutip.py --batch 4 --dim 8 --dims 2 4 --out-dir /tmp/check

Times are CPU times of the process (``time.process_time``), so run it with one thread on both sides (the
environment variables above) to compare like with like; the ratio then holds on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import qutip
import torch

from qpnlp.hilbert import (Ensemble, bures_angle, bures_distance, conditional_entropy, fidelity, hellinger_distance,
                           hilbert_schmidt_distance, linear_entropy, mutual_information, negativity,
                           quantum_jensen_shannon_divergence, random_density_matrix, random_pure_state,
                           trace_distance, von_neumann_entropy)

RESULTS = Path(__file__).resolve().parent / "results"


def _qjsd_qutip(a, b):
    return qutip.entropy_vn((a + b) / 2) - 0.5 * qutip.entropy_vn(a) - 0.5 * qutip.entropy_vn(b)


# name -> (ours(rho, sigma, dims), QuTiP(a, b, dims), input kinds, QuTiP takes a square root of a
# rank-deficient matrix on sentences (compared at --loose-atol there))
METRICS = {
    "fidelity (root)": (lambda r, s, dims: fidelity(r, s, squared=False), lambda a, b, dims: qutip.fidelity(a, b),
                        ("mixed", "sentences"), True),
    "trace_distance": (lambda r, s, dims: trace_distance(r, s), lambda a, b, dims: qutip.tracedist(a, b),
                       ("mixed", "sentences"), True),                # QuTiP: sqrt of eigenvalues of D^dagger D
    "bures_distance": (lambda r, s, dims: bures_distance(r, s), lambda a, b, dims: qutip.bures_dist(a, b),
                       ("mixed", "sentences"), True),
    "bures_angle": (lambda r, s, dims: bures_angle(r, s), lambda a, b, dims: qutip.bures_angle(a, b),
                    ("mixed",), True),
    "hellinger_distance": (lambda r, s, dims: hellinger_distance(r, s), lambda a, b, dims: qutip.hellinger_dist(a, b),
                           ("mixed", "sentences"), True),
    "hilbert_schmidt_distance": (lambda r, s, dims: hilbert_schmidt_distance(r, s),
                                 lambda a, b, dims: math.sqrt(max(qutip.hilbert_dist(a, b).real, 0.0)),
                                 ("mixed",), False),
    "von_neumann_entropy": (lambda r, s, dims: von_neumann_entropy(r), lambda a, b, dims: qutip.entropy_vn(a),
                            ("mixed", "sentences"), False),
    "linear_entropy": (lambda r, s, dims: linear_entropy(r), lambda a, b, dims: qutip.entropy_linear(a),
                       ("mixed", "sentences"), False),
    "quantum_jensen_shannon_divergence": (lambda r, s, dims: quantum_jensen_shannon_divergence(r, s),
                                          lambda a, b, dims: _qjsd_qutip(a, b), ("mixed", "sentences"), False),
    "mutual_information": (lambda r, s, dims: mutual_information(r, dims),
                           lambda a, b, dims: qutip.entropy_mutual(a, 0, 1), ("mixed",), False),
    "conditional_entropy": (lambda r, s, dims: conditional_entropy(r, dims),
                            lambda a, b, dims: qutip.entropy_conditional(a, 1), ("mixed",), False),
    "negativity": (lambda r, s, dims: negativity(r, dims),
                   lambda a, b, dims: qutip.negativity(a, 1, method="eigenvalues"), ("mixed",), False),
}


def make_inputs(kind: str, batch: int, dim: int, words: int, seed: int = 0):
    """Two batches of states (qpnlp objects, complex128) of one kind."""
    gen = torch.Generator().manual_seed(seed)
    if kind == "mixed":
        return tuple(random_density_matrix(dim, batch_shape=(batch,), dtype=torch.complex128, generator=gen)
                     for _ in range(2))
    return tuple(Ensemble(random_pure_state(dim, batch_shape=(batch, words), dtype=torch.complex128, generator=gen),
                          torch.softmax(torch.randn(batch, words, dtype=torch.float64, generator=gen), -1))
                 for _ in range(2))


def to_qutip(obj, dims) -> list:
    data = (obj.dense() if isinstance(obj, Ensemble) else obj).data.numpy()
    return [qutip.Qobj(m, dims=[list(dims), list(dims)]) for m in data]


def best_time(fn, repeats: int) -> tuple[float, object]:
    """Best CPU time of this process over ``repeats`` calls (with one thread each side, the time the work takes on
    a core of its own, so the ratio holds on a shared machine; the wall clock does not)."""
    best, out = math.inf, None
    for _ in range(repeats):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def run(args) -> list[dict]:
    dims = tuple(args.dims)
    if dims[0] * dims[1] != args.dim:
        raise SystemExit(f"--dims {dims} must multiply to --dim {args.dim}")
    rows = []
    for kind in ("mixed", "sentences"):
        rho, sigma = make_inputs(kind, args.batch, args.dim, args.words)
        rho64, sigma64 = rho.to(torch.complex64), sigma.to(torch.complex64)
        q_rho, q_sigma = to_qutip(rho, dims), to_qutip(sigma, dims)
        for name, (ours, theirs, kinds, uses_sqrt) in METRICS.items():
            if kind not in kinds or (args.metrics and name not in args.metrics):
                continue
            t_ours, values = best_time(lambda: ours(rho, sigma, dims), args.repeats)
            t_ours64, _ = best_time(lambda: ours(rho64, sigma64, dims), args.repeats)
            t_qutip, reference = best_time(lambda: [float(np.real(theirs(a, b, dims))) for a, b in zip(q_rho, q_sigma)],
                                           1)
            diff = float((values - torch.tensor(reference, dtype=torch.float64)).abs().max())
            atol = args.loose_atol if (uses_sqrt and kind == "sentences") else args.atol
            if not diff <= atol:
                raise AssertionError(f"{name} on {kind}: qpnlp and QuTiP differ by {diff:.3g} > {atol:.1g}")
            row = dict(metric=name, kind=kind, qpnlp_s=t_ours, qpnlp_complex64_s=t_ours64, qutip_loop_s=t_qutip,
                       qutip_over_qpnlp=t_qutip / t_ours, qutip_over_qpnlp_complex64=t_qutip / t_ours64,
                       max_abs_diff=diff, atol=atol)
            rows.append(row)
            print(f"{name:>34} | {kind:>9} | {t_ours * 1e3:9.1f} | {t_ours64 * 1e3:9.1f} | {t_qutip * 1e3:10.1f} | "
                  f"{row['qutip_over_qpnlp']:8.1f} | {row['qutip_over_qpnlp_complex64']:8.1f} | {diff:9.2e}",
                  flush=True)
    return rows


def markdown(rows: list[dict], header: str) -> str:
    lines = [header, "", "| metric | input | qpnlp c128 ms | qpnlp c64 ms | QuTiP loop ms | QuTiP / qpnlp c128 | "
             "QuTiP / qpnlp c64 | max abs diff |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['metric']} | {r['kind']} | {r['qpnlp_s'] * 1e3:.1f} | {r['qpnlp_complex64_s'] * 1e3:.1f} | "
                     f"{r['qutip_loop_s'] * 1e3:.1f} | {r['qutip_over_qpnlp']:.1f} | "
                     f"{r['qutip_over_qpnlp_complex64']:.1f} | {r['max_abs_diff']:.1e} |")
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--dims", type=int, nargs=2, default=[15, 20], help="bipartite split of --dim")
    parser.add_argument("--words", type=int, default=20, help="words per sentence (input kind 'sentences')")
    parser.add_argument("--repeats", type=int, default=3, help="qpnlp timings: best of this many")
    parser.add_argument("--metrics", nargs="*", help="only these metrics (names as printed)")
    parser.add_argument("--atol", type=float, default=1e-9)
    parser.add_argument("--loose-atol", type=float, default=1e-3,
                        help="square-root metrics on rank-deficient sentences (QuTiP loses digits there)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS, help="where metrics_vs_qutip.{json,md} go")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    header = (f"B={args.batch} d={args.dim} (bipartite {args.dims[0]} x {args.dims[1]}, sentences of {args.words} "
              f"words), torch {torch.__version__} ({torch.get_num_threads()} threads), qutip {qutip.__version__}")
    print(header)
    print(f"{'metric':>34} | {'input':>9} | {'c128 ms':>9} | {'c64 ms':>9} | {'QuTiP ms':>10} | "
          f"{'ratio':>8} | {'ratio64':>8} | {'max diff':>9}")
    rows = run(args)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    (args.out_dir / "metrics_vs_qutip.json").write_text(json.dumps(
        dict(config=config, torch=torch.__version__, qutip=qutip.__version__, threads=torch.get_num_threads(),
             rows=rows), indent=2))
    (args.out_dir / "metrics_vs_qutip.md").write_text(markdown(rows, header))


if __name__ == "__main__":
    main()
