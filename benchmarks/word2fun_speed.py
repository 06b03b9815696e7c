"""Word2Fun vs gensim's per-period word2vec: tokens/s on the same corpus, alone and beside busy processes.

Both train skip-gram on the planted-drift corpus (``--tokens`` tokens, 100
years; ``--corpus sotu``: the State of the Union addresses, 1790-2026, 2.0M tokens) with the same dimension,
window, number of negatives, subsampling and
epochs, on ``--workers`` threads: gensim one ``Word2Vec`` per ``--bins``
period (tokens/s = corpus tokens x epochs / the summed ``train`` wall time),
Word2Fun :func:`~qpnlp.word2fun.fit` (tokens/s of its training loop, pair
generation included) in six settings: ``--negatives`` negatives per pair
(the setting gensim uses) and the library defaults (negatives shared by a
batch) with ``--workers`` hogwild threads, the defaults with one worker (its compiled step in torch's thread
count where numba's threads survive fork, its TBB layer: 2 on 2 cores) and with one worker of one step thread
(``TrainConfig(step_threads=1)``, the default before), with ``--workers`` replicas
(``parallel="replicas"``, deterministic), and the defaults trained by
``--processes`` processes started by ``torchrun`` (one thread each; all
processes' tokens over the slowest one's training time).  With
``--baseline-tree`` the training of ``qpnlp train word2fun`` of another
version (its defaults: one worker, torch's default intra-op threads), and that
version trained by ``--processes`` processes, are timed in the same runs.
After one untimed warm-up run of every Word2Fun row (``--warmup 0`` skips it; without it the first
repeat of a tree counts its numba compilation), the runs are interleaved ``--repeats`` times
(gensim, Word2Fun, gensim, ...) so that both see the same machine, first alone and then (``--busy 2``) beside
two busy processes (a Python loop each), and the load average is recorded
with every timing, with the cores each row used (its CPU seconds, torchrun's
children included, over its wall seconds) and, in the report, the CPU's model
and vector extensions (the compiled step is much slower without AVX-512).
Ratios are taken within one run only.  The report splits each row's slow-down under load into the cores it
got and its tokens per CPU second (:func:`slowdown_parts`); ``parts --json FILE`` prints that split for a saved run.

Run::

    python benchmarks/word2fun_speed.py --workers 2
    python benchmarks/word2fun_speed.py parts --json benchmarks/results/word2fun/speed-runs-2.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from qpnlp.data import load_sotu
from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
from qpnlp.word2fun import TrainConfig, fit


def load() -> float:
    return round(os.getloadavg()[0], 2)


def cpu_seconds() -> float:
    """CPU time (user + system) of this process's threads and of its ended children (the torchrun rows)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cpu_model() -> dict:
    """The CPU's model name and vector extensions (the compiled step's speed depends on them: AVX-512 or not)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {"model": platform.processor(), "simd": []}
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = fields.get("flags", "").split()
    return {"model": fields.get("model name", ""), "simd": sorted(f for f in flags if f.startswith(("avx", "fma")))}


def timed(run) -> dict:
    """Run one row: its tokens/s, the load average before and after, and the cores it used (CPU s / wall s of the
    whole call, setup included; the busy processes run on and are not counted)."""
    before, cpu, wall = load(), cpu_seconds(), time.perf_counter()
    tps = run()
    cores = (cpu_seconds() - cpu) / (time.perf_counter() - wall)
    return {"tokens_per_s": tps, "load_before": before, "load_after": load(), "cores_used": round(cores, 2)}


def busy(stop) -> None:  # a process that keeps one core busy
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


@contextlib.contextmanager
def busy_processes(n: int):
    """``n`` processes running :func:`busy` while the block runs, stopped and joined when it ends (or raises)."""
    stop = mp.Event()
    procs = [mp.Process(target=busy, args=(stop,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        stop.set()
        for p in procs:
            p.join()


def gensim_per_period(corpus, args) -> float:
    from gensim.models import Word2Vec

    y0, y1 = corpus.span
    bins = np.clip(((corpus.times - y0) / (y1 - y0 + 1e-9) * args.bins).astype(int), 0, args.bins - 1)
    seconds = 0.0
    for k in range(args.bins):
        sents = [d for d, b in zip(corpus.docs, bins.tolist()) if b == k]
        m = Word2Vec(vector_size=args.dim, window=5, negative=args.negatives, sample=1e-3, sg=1, min_count=5,
                     workers=args.workers, seed=0)
        m.build_vocab(sents)
        t0 = time.perf_counter()
        m.train(sents, total_examples=len(sents), epochs=args.epochs)
        seconds += time.perf_counter() - t0
    return corpus.n_tokens * args.epochs / seconds


BASELINE = r'''
import sys, torch
from qpnlp.data import read_tsv
from qpnlp.word2fun import TrainConfig, fit
corpus = read_tsv(sys.argv[1])
# the CLI of that tree: workers 1, torch's default intra-op threads, its own defaults (negatives 32 since 2026-11-28;
# this line passed negatives=64 until 2026-11-30)
import qpnlp
print(qpnlp.__file__)
print(fit(corpus, TrainConfig(epochs=int(sys.argv[2]), workers=1), dim=int(sys.argv[3])).stats.tokens_per_s)
'''


def word2fun_baseline(path, args) -> float:
    """``qpnlp train word2fun``'s training as it was in ``--baseline-tree`` (e.g. the last commit), in a subprocess."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": args.baseline_tree}
    env.pop("OMP_NUM_THREADS", None)
    # cwd: ``python -c`` puts the working directory first on sys.path, before PYTHONPATH, so started from the
    # repository root this row imported the tree under test (every "CLI before" row until 2026-12-02)
    out = subprocess.run([sys.executable, "-c", BASELINE, str(path), str(args.epochs), str(args.dim)], env=env,
                         cwd=args.baseline_tree, check=True, capture_output=True, text=True).stdout
    imported, tokens_per_s = out.strip().splitlines()[-2:]
    if not Path(imported).resolve().is_relative_to(Path(args.baseline_tree).resolve()):
        raise RuntimeError(f"the baseline row imported {imported}, not the qpnlp of {args.baseline_tree}")
    return float(tokens_per_s)


def word2fun_processes(path, args, tree: str = "") -> float:
    """Word2Fun trained by ``--processes`` processes started by torchrun (each one thread, its own shard).

    ``tree``: a directory holding another version's ``qpnlp`` package, imported by the processes instead.
    """
    import subprocess
    import sys
    import tempfile

    result = Path(tempfile.mkdtemp()) / "result.json"
    torchrun = str(Path(sys.executable).parent / "torchrun")
    subprocess.run([torchrun, "--nproc-per-node", str(args.processes), "--master-port", "29650", __file__, "worker",
                    "--tsv", str(path), "--epochs", str(args.epochs), "--dim", str(args.dim), "--result", str(result)],
                   check=True, capture_output=True,
                   env={**os.environ, "OMP_NUM_THREADS": "1", **({"PYTHONPATH": tree} if tree else {})})
    return json.loads(result.read_text())["tokens_per_s"]


def worker(args) -> None:
    """Run by torchrun: train on the TSV corpus, rank 0 writes the job's tokens/s."""
    from qpnlp.data import read_tsv
    from qpnlp.word2fun.distributed import is_main_process, shutdown

    torch.set_num_threads(1)
    r = fit(read_tsv(args.tsv), TrainConfig(epochs=args.epochs, seed=0), dim=args.dim)
    main = is_main_process()
    shutdown()
    if main:
        Path(args.result).write_text(json.dumps({"tokens_per_s": r.stats.tokens_per_s, "processes": r.world_size}))


def profile(corpus, args) -> str:
    """torch.profiler table of one epoch of the defaults on one worker (the operators' share of the time)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        st = fit(corpus, TrainConfig(epochs=1, workers=1, seed=0), dim=args.dim).stats
    return (f"one epoch, one worker: {st.tokens_per_s:,.0f} tokens/s under the profiler, load {load()}\n\n"
            + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


def word2fun(corpus, args, shared: bool, workers: int | None = None, parallel: str = "hogwild",
             step_threads: int | None = None) -> float:
    threads = {} if step_threads is None else {"step_threads": step_threads}      # None: the library's default
    cfg = TrainConfig(epochs=args.epochs, workers=workers or args.workers, seed=0, parallel=parallel, **threads,
                      **({} if shared else {"negatives": args.negatives, "shared_negatives": False}))
    return fit(corpus, cfg, dim=args.dim).stats.tokens_per_s


def slowdown_parts(idle: dict, loaded: dict) -> list[str]:
    """Markdown: each row's slow-down under load (median tokens/s alone / beside the busy processes) as the
    product of the cores it got (median cores used, alone / loaded) and its tokens per CPU second (the median
    over runs of tokens/s / cores used, alone / loaded; the product equals the slow-down up to the medians)."""
    lines = ["Slow-down = fewer cores x fewer tokens per CPU second (medians; alone -> beside the busy processes):",
             "", "| model | slow-down | cores used | cores ratio | tokens per CPU s | per-CPU-s ratio |",
             "|---|---:|---|---:|---|---:|"]
    for name in idle:
        median = lambda ph, f: statistics.median(f(r) for r in ph[name]["runs"])  # noqa: E731
        cores = [median(ph, lambda r: r["cores_used"]) for ph in (idle, loaded)]
        rate = [median(ph, lambda r: r["tokens_per_s"] / r["cores_used"]) for ph in (idle, loaded)]
        slow = idle[name]["median_tokens_per_s"] / loaded[name]["median_tokens_per_s"]
        lines.append(f"| {name} | {slow:.2f}x | {cores[0]:.2f} -> {cores[1]:.2f} | {cores[0] / cores[1]:.2f}x | "
                     f"{rate[0] / 1e3:,.0f}k -> {rate[1] / 1e3:,.0f}k | {rate[0] / rate[1]:.2f}x |")
    return lines


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="run", choices=["run", "worker", "profile", "parts"])
    ap.add_argument("--json", help="with parts: the JSON of an earlier run")
    ap.add_argument("--tsv", default="")
    ap.add_argument("--result", default="")
    ap.add_argument("--processes", type=int, default=2, help="a Word2Fun row trained by this many torchrun processes")
    ap.add_argument("--corpus", default="drift", choices=["drift", "sotu"],
                    help="the planted-drift corpus of --tokens tokens, or the State of the Union addresses (load_sotu)")
    ap.add_argument("--tokens", type=int, default=750_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--negatives", type=int, default=5)
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--busy", default="0,2", help="numbers of busy processes to run beside, one phase each")
    ap.add_argument("--baseline-tree", default="",
                    help="a directory holding the qpnlp package of another version (git archive HEAD qpnlp | tar -x "
                         "-C DIR): its `qpnlp train word2fun` training is timed in the same interleaved runs")
    ap.add_argument("--warmup", type=int, default=1, choices=[0, 1],
                    help="train each Word2Fun row once, untimed, first: the first run of a tree compiles its numba "
                         "loops (cached on disk) and each process loads them, which the timed runs should not count")
    ap.add_argument("--out", default="benchmarks/results/word2fun")
    ap.add_argument("--tag", default="speed")
    return ap


def main() -> None:
    args = _parser().parse_args()
    if args.mode == "worker":
        return worker(args)
    if args.mode == "parts":
        phases = json.loads(Path(args.json).read_text())["phases"]
        print("\n".join(slowdown_parts(phases[min(phases, key=int)], phases[max(phases, key=int)])))
        return
    if args.corpus == "sotu":
        corpus = load_sotu()
    else:
        corpus, _ = generate_drift_corpus(drift_spec(n_tokens=args.tokens, seed=0))
    if args.mode == "profile":
        text = profile(corpus, args)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, f"{args.tag}-profile.txt").write_text(
            f"python benchmarks/word2fun_speed.py profile --tokens {args.tokens} --dim {args.dim}\n{text}\n")
        print(text)
        return
    models = {"gensim per-period": lambda: gensim_per_period(corpus, args),
              f"word2fun ({args.negatives} negatives per pair)": lambda: word2fun(corpus, args, False),
              "word2fun (defaults: shared negatives)": lambda: word2fun(corpus, args, True)}
    if args.workers > 1:  # one core's worth: what the threads and the processes multiply
        models["word2fun (defaults, 1 worker)"] = lambda: word2fun(corpus, args, True, workers=1)
        models["word2fun (1 worker, 1 step thread)"] = lambda: word2fun(corpus, args, True, workers=1,
                                                                        step_threads=1)
        models[f"word2fun (defaults, {args.workers} replicas)"] = lambda: word2fun(corpus, args, True,
                                                                                 parallel="replicas")
    import tempfile

    from qpnlp.data import write_tsv

    tsv = Path(tempfile.mkdtemp()) / "corpus.tsv"
    write_tsv(corpus, tsv)
    if args.processes > 1:
        models[f"word2fun ({args.processes} processes, torchrun, defaults)"] = lambda: word2fun_processes(tsv, args)
    if args.baseline_tree:
        models["word2fun CLI before (baseline tree, workers 1, default threads)"] = lambda: word2fun_baseline(tsv, args)
        if args.processes > 1:
            models[f"word2fun before ({args.processes} processes, baseline tree)"] = (
                lambda: word2fun_processes(tsv, args, args.baseline_tree))
    for name, run in models.items() if args.warmup else ():  # compile or load every tree's numba loops
        if name.startswith("word2fun"):
            print("warm-up (not counted)", name, round(run()), flush=True)
    phases = {}
    for n_busy in (int(x) for x in args.busy.split(",")):
        runs: dict = {k: [] for k in models}
        with busy_processes(n_busy):
            for _ in range(args.repeats):
                for name, run in models.items():
                    runs[name].append(timed(run))
                    print(n_busy, name, json.dumps(runs[name][-1]), flush=True)
        phases[n_busy] = {k: {"median_tokens_per_s": statistics.median(r["tokens_per_s"] for r in v), "runs": v}
                          for k, v in runs.items()}
    from qpnlp._numba import threads_fork_safe      # here: the workers also import this file with a baseline tree's
    from qpnlp.word2fun import pair_loop            # qpnlp
    from qpnlp.word2fun.config import step_threads

    meta = {"command": "python benchmarks/word2fun_speed.py " + " ".join(
                f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                if k not in ("mode", "tsv", "result") and v not in ("", None)),
            "corpus_tokens": corpus.n_tokens, "cpu_count": os.cpu_count(), "torch": torch.__version__,
            "platform": platform.platform(), "cpu": cpu_model(), "pair_loop": pair_loop.describe("cpu"),
            "step_threads_default": step_threads(TrainConfig(workers=1)),
            "numba_threads_fork_safe": threads_fork_safe()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.tag}.json").write_text(json.dumps({"meta": meta, "phases": phases}, indent=2))
    names = list(models)
    lines = [f"# Word2Fun vs gensim per-period word2vec, {args.corpus} corpus, {corpus.n_tokens} tokens, "
             f"{args.workers} workers, {args.epochs} epochs, dim {args.dim}, window 5", "", f"`{meta['command']}`", "",
             "Median tokens/s over the interleaved repeats; load = the 1-minute load average before and after "
             f"each run (every run in the JSON). This tree's {meta['pair_loop']}. CPU: {meta['cpu']['model']}, "
             f"{' '.join(meta['cpu']['simd'])}.", "",
             "Cores used: CPU seconds / wall seconds of each row's whole call (setup included), median.", "",
             "| busy processes beside | model | median tokens/s | / gensim per-period | cores used | load range |",
             "|---|---|---|---|---|---|"]
    for n_busy, ph in phases.items():
        gensim = ph[names[0]]["median_tokens_per_s"]
        for k in names:
            loads = [x for r in ph[k]["runs"] for x in (r["load_before"], r["load_after"])]
            cores = statistics.median(r["cores_used"] for r in ph[k]["runs"])
            lines.append(f"| {n_busy} | {k} | {ph[k]['median_tokens_per_s']:,.0f} | "
                         f"{ph[k]['median_tokens_per_s'] / gensim:.2f} | {cores:.2f} | {min(loads)}-{max(loads)} |")
    if len(phases) > 1:
        idle, loaded = phases[min(phases)], phases[max(phases)]
        lines += ["", f"Slow-down beside {max(phases)} busy processes (without / with): " + ", ".join(
            f"{k} {idle[k]['median_tokens_per_s'] / loaded[k]['median_tokens_per_s']:.2f}x" for k in names)]
        lines += ["", *slowdown_parts(idle, loaded)]
    (out / f"{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
