"""Word2Fun's compiled kernel against another version's, run by run in one process: ratios that host noise spares.

On a shared 2-core host the same kernel measured 301 and 480 ns per pair twenty minutes apart, so two trees timed in
turn, process after process, differ by more than most changes of the kernel do. This benchmark takes the kernel's
arguments of the first ``--runs`` runs of one epoch of ``fit``'s defaults (captured from
:meth:`FusedStep.run_batches <qpnlp.word2fun.fused_step.FusedStep.run_batches>` while ``fit`` trains the corpus,
with the tables as they were at the first of them), loads this tree's ``qpnlp/word2fun/_fused_kernel.py`` and
``--other``'s (a file of the same kernel with the same ``_run`` arguments, e.g. from
``git show REV:qpnlp/word2fun/_fused_kernel.py``; its imports resolve to this tree's ``qpnlp``), and runs every run
through both, one right after the other, the one going first alternating, ``--rounds`` times. Both update the same
tables, so both do the same work. It reports the ratio of the summed times (other / this) and the median and
quartiles of the per-run ratios. Without ``--other`` this tree's kernel is compared with a second copy of itself:
the method's own noise (1.009 summed, 1.001 median on the SOTU runs, 2 threads, 2026-12-03).

Run::

    python benchmarks/word2fun_kernel_ab.py --corpus sotu --parts 2
    git show 6ca9146:qpnlp/word2fun/_fused_kernel.py > /tmp/kernel_before.py
    python benchmarks/word2fun_kernel_ab.py --corpus sotu --parts 2 --other /tmp/kernel_before.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1] / "qpnlp" / "word2fun" / "_fused_kernel.py"


def captured_runs(corpus, runs: int, dim: int) -> tuple[list, dict]:
    """The ``run_batches`` arguments of the first ``runs`` runs of one epoch of ``fit`` (each run's pairs sliced
    out of its chunk's arrays) and the step's arrays (tables copied at the first run; flags, factors, scalars)."""
    from qpnlp.word2fun import TrainConfig, fit
    from qpnlp.word2fun.fused_step import FusedStep

    seen, step_arrays = [], {}
    real = FusedStep.run_batches

    def capture(self, *args):
        if len(seen) < runs:
            if not step_arrays:
                step_arrays.update(tabs=tuple(t.copy() for t in self.tabs), H=self.H.copy(), nums=self.nums,
                                   flags=self.flags, factors=self.factors, present=self.present)
            p0, p1 = int(args[6][0, 0]), int(args[6][-1, 1])       # pair_row, context, pairs: the run's own
            a = [x[p0:p1] if i in (3, 4) else x - p0 if i == 6 else x for i, x in enumerate(args)]
            a = [x.copy() if isinstance(x, np.ndarray) else x for x in a]
            seen.append(tuple(a))
        return real(self, *args)

    FusedStep.run_batches = capture
    try:
        fit(corpus, TrainConfig(epochs=1, seed=0), dim=dim)
    finally:
        FusedStep.run_batches = real
    return seen, step_arrays


def load_kernel(path: Path, name: str, parallel: bool):
    """``_kernel(parallel)`` of the kernel module at ``path``, loaded under its own module name."""
    spec = importlib.util.spec_from_file_location(f"qpnlp.word2fun.{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._kernel(parallel)


def call(kernel, run: tuple, s: dict, parts: int) -> float:
    """One run through ``kernel``: its seconds."""
    words, order, times, pair_row, context, rows, pairs, negatives, lrs, smooth, row_mult, rough, base, _ = run
    t0 = time.perf_counter()
    kernel(s["tabs"], s["H"], words, order, times, pair_row, context, rows, pairs, negatives, lrs, s["nums"].copy(),
           tuple(s["flags"]) + (smooth,), row_mult, rough, s["factors"], tuple(s["present"]), base, 0.0, parts)
    return time.perf_counter() - t0


def interleaved(kernels: dict, runs: list, s: dict, parts: int, rounds: int) -> dict:
    """Seconds per run of each kernel (``{name: (rounds * runs,)}``), the two called back to back, the first
    alternating from run to run and round to round."""
    names, out = list(kernels), {k: [] for k in kernels}
    for k in names:
        call(kernels[k], runs[0], s, parts)        # compiled or loaded from the cache before the clock
    for r in range(rounds):
        for i, run in enumerate(runs):
            for k in names if (i + r) % 2 == 0 else names[::-1]:
                out[k].append(call(kernels[k], run, s, parts))
    return {k: np.array(v) for k, v in out.items()}


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="sotu", choices=["sotu", "drift"],
                    help="the State of the Union addresses (load_sotu) or the planted-drift corpus of --tokens")
    ap.add_argument("--tokens", type=int, default=750_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--runs", type=int, default=120, help="runs of batches captured (16 batches each)")
    ap.add_argument("--parts", type=int, default=2, help="the kernel's threads (1: the kernel of one thread)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--other", default="", help="another version's _fused_kernel.py (default: this tree's again)")
    ap.add_argument("--json", default="")
    return ap


def main() -> None:
    args = _parser().parse_args()
    import numba

    from qpnlp.data import load_sotu
    from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus

    corpus = load_sotu() if args.corpus == "sotu" else generate_drift_corpus(drift_spec(n_tokens=args.tokens,
                                                                                        seed=0))[0]
    runs, s = captured_runs(corpus, args.runs, args.dim)
    other = Path(args.other) if args.other else HERE
    kernels = {"this": load_kernel(HERE, "_fused_kernel_this", args.parts > 1),
               "other": load_kernel(other, "_fused_kernel_other", args.parts > 1)}
    numba.set_num_threads(max(1, args.parts))
    t = interleaved(kernels, runs, s, args.parts, args.rounds)
    pairs = args.rounds * sum(int(r[6][-1, 1]) for r in runs)
    per_run = t["other"] / t["this"]
    result = {"other": str(other), "parts": args.parts, "runs": len(runs), "rounds": args.rounds,
              "ns_per_pair": {k: 1e9 * v.sum() / pairs for k, v in t.items()},
              "summed_ratio": float(t["other"].sum() / t["this"].sum()),
              "median_ratio": float(np.median(per_run)),
              "quartiles": [float(np.percentile(per_run, q)) for q in (25, 75)],
              "threading_layer": numba.threading_layer() if args.parts > 1 else "none"}
    print(f"{len(runs)} runs x {args.rounds} rounds, parts {args.parts}: this {result['ns_per_pair']['this']:.0f}, "
          f"other {result['ns_per_pair']['other']:.0f} ns/pair; other / this: summed {result['summed_ratio']:.3f}, "
          f"median per run {result['median_ratio']:.3f} (quartiles {result['quartiles'][0]:.3f}-"
          f"{result['quartiles'][1]:.3f})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
