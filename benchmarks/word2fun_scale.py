"""Word2Fun beyond one process: peak memory when streaming, and 1 vs 2 processes (torchrun, gloo).

``memory``: writes the planted-drift corpus as gzip TSV once (1x) and as ten
shards (10x, each a copy with its own seed's corpus), and trains one epoch on
each in a fresh subprocess, streamed (``TsvStream``, chunks of
``--chunk-tokens``) and, for 1x, in memory; reports the peak resident memory
of each subprocess (``ru_maxrss``).

``processes``: trains the drift benchmark (library defaults, ``--epochs``)
with ``torchrun --nproc-per-node N`` for N in ``--nprocs`` (one thread each,
interleaved ``--repeats`` times), scores rank 0's model with
:func:`qpnlp.evaluation.drift.evaluate_grid`, and reports accuracy and
tokens/s (all processes' tokens over the slowest process's time) with the
load average.

Run::

    python benchmarks/word2fun_scale.py memory
    python benchmarks/word2fun_scale.py processes --nprocs 1,2 --repeats 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from qpnlp.data import TsvStream, read_tsv, write_tsv
from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
from qpnlp.evaluation.drift import DriftGrid, evaluate_grid
from qpnlp.word2fun import TrainConfig, fit


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def write_gz(corpus, path: Path) -> None:
    plain = path.with_suffix("")
    write_tsv(corpus, plain)
    with open(plain, "rb") as src, gzip.open(path, "wb", compresslevel=1) as dst:
        dst.write(src.read())
    plain.unlink()


def child(args) -> None:
    """One epoch on the files, then print the peak resident memory in bytes."""
    torch.set_num_threads(1)
    paths = args.files.split(",")
    corpus = TsvStream(paths) if args.stream else read_tsv(paths[0])
    t0 = time.perf_counter()
    r = fit(corpus, TrainConfig(epochs=1, chunk_tokens=args.chunk_tokens))
    print(json.dumps({"tokens": r.corpus_info["tokens"], "seconds": time.perf_counter() - t0,
                      "tokens_per_s": r.stats.tokens_per_s}))
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def memory(args) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for k in range(10):
            corpus, _ = generate_drift_corpus(drift_spec(n_tokens=args.tokens, seed=100 + k))
            files.append(Path(tmp, f"part{k}.tsv.gz"))
            write_gz(corpus, files[-1])
        for label, fs, stream in (("1x in memory", files[:1], False), ("1x streamed", files[:1], True),
                                  ("10x streamed", files, True)):
            cmd = [sys.executable, __file__, "child", "--files", ",".join(map(str, fs)),
                   "--chunk-tokens", str(args.chunk_tokens)] + (["--stream"] if stream else [])
            before = load()
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()
            row = {"corpus": label, **json.loads(out[-2]), "peak_rss_mib": int(out[-1]) / 2**20,
                   "load_before": before, "load_after": load()}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {"chunk_tokens": args.chunk_tokens, "rows": rows}


def worker(args) -> None:
    """Run under torchrun: train the drift benchmark, rank 0 scores and writes ``--result``."""
    from qpnlp.word2fun.distributed import is_main_process, shutdown

    torch.set_num_threads(1)
    corpus, truth = generate_drift_corpus(drift_spec(args.variant, seed=args.seed))
    r = fit(corpus, TrainConfig(epochs=args.epochs, seed=args.seed, sync_every=args.sync_every))
    main = is_main_process()
    shutdown()
    if not main:
        return
    v = r.vectors
    topic = [w for tw in truth.topic_words for w in tw]
    words = list(truth.words) + topic
    m = evaluate_grid(DriftGrid(v.grid(words, truth.years), words, truth.years, context=v.compass_vectors(topic)[None],
                                context_words=topic), truth)
    Path(args.result).write_text(json.dumps({"processes": r.world_size, "tokens_per_s": r.stats.tokens_per_s,
                                             "train_seconds": r.stats.seconds, **{k: m[k] for k in (
                                                 "spearman", "auc", "acc_after", "change_year_mae")}}))


def processes(args) -> dict:
    torchrun = str(Path(sys.executable).parent / "torchrun")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for n in (int(x) for x in args.nprocs.split(",")):
                res = Path(tmp, f"r{rep}-{n}.json")
                before = load()
                subprocess.run([torchrun, "--nproc-per-node", str(n), "--master-port", str(29600 + rep * 10 + n),
                                __file__, "worker", "--variant", args.variant, "--seed", str(args.seed),
                                "--epochs", str(args.epochs), "--sync-every", str(args.sync_every),
                                "--result", str(res)], check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
                row = {**json.loads(res.read_text()), "repeat": rep, "load_before": before, "load_after": load()}
                rows.append(row)
                print(json.dumps(row), flush=True)
    return {"variant": args.variant, "seed": args.seed, "epochs": args.epochs, "sync_every": args.sync_every,
            "rows": rows}


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["memory", "processes", "child", "worker"])
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--chunk-tokens", type=int, default=500_000)
    ap.add_argument("--files", default="")
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--variant", default="standard")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=TrainConfig().epochs)
    ap.add_argument("--sync-every", type=int, default=TrainConfig().sync_every)
    ap.add_argument("--nprocs", default="1,2")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--result", default="")
    ap.add_argument("--out", default="benchmarks/results/word2fun")
    return ap


def main() -> None:
    args = _parser().parse_args()
    if args.mode == "child":
        return child(args)
    if args.mode == "worker":
        return worker(args)
    result = memory(args) if args.mode == "memory" else processes(args)
    result["command"] = "python benchmarks/word2fun_scale.py " + " ".join(sys.argv[1:])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"scale-{args.mode}.json").write_text(json.dumps(result, indent=2))
    if args.mode == "memory":
        lines = [f"# Peak memory of one epoch, streamed vs in memory (chunks of {args.chunk_tokens} tokens)", "",
                 f"`{result['command']}`", "", "| corpus | tokens | peak RSS (MiB) | tokens/s | load before | load after |",
                 "|---|---|---|---|---|---|"]
        lines += [f"| {r['corpus']} | {r['tokens']} | {r['peak_rss_mib']:.0f} | {r['tokens_per_s']:.0f} | "
                  f"{r['load_before']} | {r['load_after']} |" for r in result["rows"]]
    else:
        lines = [f"# Drift benchmark ({args.variant}, seed {args.seed}, {args.epochs} epochs) with 1 and 2 processes "
                 f"(torchrun, gloo, one thread each, sync every {args.sync_every} batches)", "",
                 f"`{result['command']}`", "",
                 "| processes | repeat | Spearman | acc after | change-year MAE | tokens/s | train s | load before | load after |",
                 "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['processes']} | {r['repeat']} | {r['spearman']:.3f} | {r['acc_after']:.3f} | "
                  f"{r['change_year_mae']:.2f} | {r['tokens_per_s']:.0f} | {r['train_seconds']:.1f} | {r['load_before']} | "
                  f"{r['load_after']} |" for r in result["rows"]]
    (out / f"scale-{args.mode}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
