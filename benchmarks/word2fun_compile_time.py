"""Word2Fun's first run on a fresh install: the seconds numba takes to compile the step, this tree against another.

A fresh install (or a clean clone, as CI and every test worker have) has no numba cache, so the first
``qpnlp train word2fun`` compiles the step before it trains.  Each run here is that first run: a new process
with an empty ``NUMBA_CACHE_DIR`` trains a four-document corpus for one epoch through the CLI (so the time is
almost all compilation), and reports its wall and CPU seconds and the number of functions numba compiled
(``numba.core.event``).  With ``--baseline-rev`` the other version (``git archive REV qpnlp``) runs in each
round at the same time as this tree, one process per core, so that both see the same machine; the report gives
the medians and the per-round ratios of CPU seconds.

Run::

    python benchmarks/word2fun_compile_time.py --baseline-rev 95888ab --rounds 3 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _baseline import extract_package  # benchmarks/ (this script's folder)
from word2fun_speed import cpu_model

ROOT = Path(__file__).resolve().parents[1]
CORPUS = "1900\ta b c\n1950\tb c d\n2000\tc d a\n1950\td a b\n"


def worker(corpus: str) -> dict:
    """The first run in this process: ``{"wall_s", "cpu_s", "compiled"}`` (call with an empty numba cache)."""
    from numba.core import event

    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    event.register("numba:compile", Count())
    from qpnlp.cli import main as cli

    t0, c0 = time.perf_counter(), time.process_time()
    code = cli(["train", "word2fun", "--corpus", corpus, "--dim", "4", "--min-count", "1", "--epochs", "1",
                "--no-progress"])
    assert code == 0, code
    return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "compiled": len(compiled)}


def _start(tree: Path, corpus: Path, cache: Path, torch_threads: int = 1) -> subprocess.Popen:
    """A worker process of ``tree`` with an empty numba cache ``cache`` and ``torch_threads`` torch threads
    (``OMP_NUM_THREADS``: with more than one, a tree whose default step runs in threads compiles that kernel too)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache), "OMP_NUM_THREADS": str(torch_threads)}
    return subprocess.Popen([sys.executable, __file__, "worker", "--corpus", str(corpus)], env=env, cwd=cache,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def run(args) -> dict:
    trees = {"this tree": ROOT}
    runs: dict = {"this tree": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = tmp / "corpus.tsv"
        corpus.write_text(CORPUS)
        if args.baseline_rev:
            trees["baseline"] = extract_package(args.baseline_rev, parent=tmp)   # removed with tmp
            runs["baseline"] = []
        for r in range(args.rounds):
            procs = {}
            for name, tree in trees.items():       # at the same time: one process per core
                cache = tmp / f"cache-{r}-{name.replace(' ', '-')}"
                cache.mkdir()
                procs[name] = _start(tree, corpus, cache, args.torch_threads)
            for name, proc in procs.items():
                out, _ = proc.communicate()
                assert proc.returncode == 0, f"{name}: the run failed ({proc.returncode})"
                runs[name].append({**json.loads(out.strip().splitlines()[-1]), "load": round(os.getloadavg()[0], 2)})
                print(f"round {r + 1} {name}: {json.dumps(runs[name][-1])}", flush=True)
    median = {k: {m: statistics.median(x[m] for x in v) for m in ("wall_s", "cpu_s", "compiled")}
              for k, v in runs.items()}
    out = {"args": vars(args), "cpu": cpu_model(), "runs": runs, "median": median}
    for k, v in median.items():
        print(f"{k}: {v['cpu_s']:.1f} CPU s, {v['wall_s']:.1f} s, {v['compiled']:.0f} functions compiled (median)")
    if "baseline" in runs:
        ratios = [a["cpu_s"] / b["cpu_s"] for a, b in zip(runs["this tree"], runs["baseline"])]
        out["cpu_ratio_per_round"] = ratios
        print("this tree / baseline, CPU seconds per round:", " ".join(f"{x:.2f}" for x in ratios))
    return out


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="run", choices=["run", "worker"])
    ap.add_argument("--baseline-rev", default="", help="a git revision of this repository to compare with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="each run's torch threads (OMP_NUM_THREADS); Word2Fun's default step takes as many threads "
                         "where numba's layer is TBB, and compiles its threaded kernel then (default %(default)s)")
    ap.add_argument("--corpus", default="", help=argparse.SUPPRESS)  # the worker's corpus
    ap.add_argument("--json", default="")
    return ap


def main() -> None:
    args = _parser().parse_args()
    if args.mode == "worker":
        print(json.dumps(worker(args.corpus)))
        return
    result = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
