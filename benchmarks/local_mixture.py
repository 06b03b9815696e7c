"""CNM local mixtures: lazy windowed sums vs dense window density matrices, time and peak memory.

For B sentences of L words (complex64 states of dimension d), k rank-1
measurements, window sizes 1..4 and softmax word weights, one *forward +
backward* pass of

* ``lazy``:  |<v_k|w_i>|^2 once (qpnlp.measurement.word_probabilities), then for
  each window size a weighted sum of l shifted copies
  (qpnlp.nn.mixture.local_mixture); no d x d matrix;
* ``dense``: each window's density matrix rho_t = sum_j p_tj |w_{t+j}><w_{t+j}|
  materialised, (B, L, d, d) per window size
  (qpnlp.nn.mixture.local_mixture_density, one optimised einsum over
  the window members), then Tr(rho_t |v><v|) (what the earlier public
  implementations did, there with a d x d outer product per word first).

Both produce the (B, 4, L, k) probabilities that CNM max-pools. Time: median
of ``torch.utils.benchmark`` runs. Memory: peak resident memory added by one
pass, in a fresh subprocess per path, measured with the helper of
``benchmarks/_peak_memory.py`` (/proc/self/clear_refs and VmHWM).

Usage::

    python benchmarks/local_mixture.py                          # B=32 L=50 k=50 d=200
    python benchmarks/local_mixture.py --dims 50 200 --json out.json
"""

from __future__ import annotations

import argparse
import json

import torch
from torch.utils import benchmark

from _peak_memory import peak_added_bytes, peak_in_subprocess  # benchmarks/ is on sys.path as a script

from qpnlp.measurement import born_probabilities_dense, word_probabilities
from qpnlp.nn import local_mixture, local_mixture_density

PATHS = ("lazy", "dense")
WINDOWS = (1, 2, 3, 4)


def make_inputs(batch: int, length: int, outcomes: int, dim: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    states = torch.nn.functional.normalize(torch.randn(batch, length, dim, dtype=torch.complex64, generator=gen), dim=-1)
    scores = torch.randn(batch, length, generator=gen)
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=gen)
    mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    vectors = torch.nn.functional.normalize(torch.randn(outcomes, dim, dtype=torch.complex64, generator=gen), dim=-1)
    return states.requires_grad_(), scores.requires_grad_(), mask, vectors.requires_grad_()


def forward(path: str, inputs) -> torch.Tensor:
    states, scores, mask, vectors = inputs
    if path == "lazy":
        return local_mixture(word_probabilities(states, vectors), scores, mask, WINDOWS)
    # window by window: one (B, L, d, d) stack of window density matrices per size, measured at once. Padded
    # positions hold the zero matrix (no window), which the density-matrix checks (unit trace) refuse, and the
    # checks' eigendecompositions are not what is timed: validate=False
    return torch.stack([born_probabilities_dense(local_mixture_density(states, scores, mask, (l,))[..., 0, :, :, :],
                                                 vectors, validate=False) for l in WINDOWS], dim=-3)


def step(path: str, inputs) -> None:
    """One forward + backward pass."""
    forward(path, inputs).sum().backward()


def time_path(path: str, dim: int, args) -> float:
    inputs = make_inputs(args.batch, args.length, args.outcomes, dim)
    timer = benchmark.Timer(stmt="step(path, inputs)", globals=dict(step=step, path=path, inputs=inputs),
                            num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=args.min_run_time).median


def peak_memory_child(path: str, dim: int, batch: int, length: int, outcomes: int) -> None:
    """Runs in a subprocess: prints the peak resident memory (bytes) one pass adds."""
    step(path, make_inputs(2, 4, 2, 4))                          # warm up kernels and autograd
    inputs = make_inputs(batch, length, outcomes, dim)
    print(peak_added_bytes(lambda: step(path, inputs)))


def peak_memory(path: str, dim: int, args) -> int:
    return peak_in_subprocess(__file__, ["--child", path, str(dim), "--batch", str(args.batch),
                                         "--length", str(args.length), "--outcomes", str(args.outcomes),
                                         "--threads", str(torch.get_num_threads())])


def check_agreement(dim: int, args) -> float:
    """Largest |lazy - dense| on the benchmark inputs (a sanity check of what is timed)."""
    inputs = make_inputs(args.batch, args.length, args.outcomes, dim)
    with torch.no_grad():
        return float((forward("lazy", inputs) - forward("dense", inputs)).abs().max())


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[200])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--outcomes", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--min-run-time", type=float, default=2.0, help="seconds per timing")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "DIM"), help=argparse.SUPPRESS)
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.child:
        peak_memory_child(args.child[0], int(args.child[1]), args.batch, args.length, args.outcomes)
        return
    with open("/proc/loadavg") as fh:
        load = " ".join(fh.read().split()[:3])
    print(f"B={args.batch} L={args.length} k={args.outcomes} windows={WINDOWS}, complex64, forward+backward, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}, load average {load}")
    header = (f"{'d':>4} | {'lazy ms':>8} | {'dense ms':>9} | {'dense/lazy time':>15} | {'lazy MiB':>8} | "
              f"{'dense MiB':>9} | {'dense/lazy mem':>14} | {'max |diff|':>10}")
    print(header)
    print("-" * len(header))
    rows = []
    for dim in args.dims:
        t = {p: time_path(p, dim, args) for p in PATHS}
        m = {p: peak_memory(p, dim, args) for p in PATHS}
        diff = check_agreement(dim, args)
        row = dict(d=dim, time_s=t, peak_bytes=m, dense_over_lazy_time=t["dense"] / t["lazy"],
                   dense_over_lazy_memory=m["dense"] / m["lazy"], max_abs_diff=diff)
        rows.append(row)
        print(f"{dim:>4} | {t['lazy'] * 1e3:8.3f} | {t['dense'] * 1e3:9.1f} | {row['dense_over_lazy_time']:15.0f} | "
              f"{m['lazy'] / 2**20:8.2f} | {m['dense'] / 2**20:9.1f} | {row['dense_over_lazy_memory']:14.0f} | "
              f"{diff:10.2e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(config=vars(args), torch=torch.__version__, threads=torch.get_num_threads(),
                           load_average=load, rows=rows), fh, indent=2)


if __name__ == "__main__":
    main()
