"""Where Word2Fun's training time goes on a device: ``fit()`` with the library's defaults under torch.profiler.

One epoch on the planted-drift corpus (standard variant, generator seed 0), profiled with the CPU and, on a GPU,
the CUDA activities; prints the top operators by self CPU time and by self device time, and tokens/s of the
profiled run. For the GPU path, which was slower than one CPU thread on an H200 (``results/cuda/README.md``).

Usage::

    python benchmarks/word2fun_profile.py --device cuda [--tokens 200000] [--out FILE.txt]

On an H200 (2026-11-30) a run of 1,000,000 tokens did not finish in 100 s, the profiler's cost included: keep the
corpus small on a GPU. The un-profiled warm-up's tokens/s is printed first, so that a cut run still says something.
"""

from __future__ import annotations

import argparse
import dataclasses

import torch
from torch.profiler import ProfilerActivity, profile

from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
from qpnlp.word2fun import TrainConfig, fit


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tokens", type=int, default=200_000)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--out")
    return ap


def main() -> None:
    args = _parser().parse_args()
    torch.set_num_threads(1)
    corpus, _ = generate_drift_corpus(drift_spec(seed=0, n_tokens=args.tokens))
    config = dataclasses.replace(TrainConfig(device=args.device, seed=0), epochs=1)
    warm = fit(corpus, config)                                  # warm-up: compiled loops, CUDA context
    print(f"warm-up, not profiled: {warm.stats.tokens_per_s:,.0f} tokens/s, {warm.stats.seconds:.1f} s", flush=True)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device.startswith("cuda") else [])
    with profile(activities=activities) as prof:
        result = fit(corpus, config)
    lines = [f"device {args.device}, torch {torch.__version__}, {corpus.n_tokens} tokens, 1 epoch: "
             f"{result.stats.tokens_per_s:,.0f} tokens/s, {result.stats.seconds:.1f} s"]
    table = prof.key_averages()
    lines.append(table.table(sort_by="self_cpu_time_total", row_limit=args.top))
    if args.device.startswith("cuda"):
        lines.append(table.table(sort_by="self_cuda_time_total", row_limit=args.top))
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
