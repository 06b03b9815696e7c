"""Word2Fun's SGD step alone: CPU milliseconds per step of the defaults, this tree against another version.

The step the loop runs (:func:`qpnlp.word2fun.sgd.batch_step`, prepared once per pass; before it,
:func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`, ``centre_sgd_step`` in older trees) is timed over the
batches of one epoch of :func:`qpnlp.word2fun.fit`'s defaults on the planted-drift corpus (family IV with the
logistic step, dim 100, 32 shared negatives, batches of 2048 pairs), from the model as ``fit`` initialises it,
in one torch thread.  The time is the thread's CPU time (``time.thread_time``),
so that jobs running beside it stretch it less than the wall clock; each
worker takes the best of ``--reps`` passes over ``--steps`` batches.  With
``--baseline-tree`` (a directory holding another version's ``qpnlp``, e.g.
``git archive HEAD qpnlp | tar -x -C DIR``) both versions run in turn,
``--rounds`` times, each in its own process, and the report gives the ratio of
the medians.  ``--pair-chunks`` times this tree with each of the given values
of :data:`qpnlp.word2fun.sgd.PAIR_CHUNK` instead.  Both start from the same parameters and batches; the summed loss
of the timed steps is printed to show that they train alike.

``threads`` times two threads that step their own copies of the model
against one thread (:func:`threads`).

Run::

    python benchmarks/word2fun_step.py --baseline-tree /tmp/qpnlp-before
    python benchmarks/word2fun_step.py threads --reps 3
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _setup(args) -> tuple:
    """``fit``'s model (as initialised), the first ``--steps`` batches of its first epoch and a step function."""
    import numpy as np
    import torch

    import qpnlp.word2fun.loop as loop
    try:
        import qpnlp.word2fun.config as config
    except ImportError:          # a --baseline-tree from before the settings had their own module
        config = loop
    import qpnlp.word2fun.train as train
    from qpnlp.data.skipgram import NegativeSampler, keep_probabilities
    from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
    from qpnlp.word2fun import TrainConfig, fit
    import qpnlp.word2fun.sgd as sgd
    from qpnlp.word2fun.sgd import STEP_CENTRE_LR

    torch.set_num_threads(1)
    if args.pair_chunk:
        sgd.PAIR_CHUNK = args.pair_chunk
    # the step the loop runs: prepared once per run by batch_step where the tree has that; before, called with
    # the model at every batch, its loss left on the device where the tree has that (a float before)
    prepare = getattr(sgd, "batch_step", None)
    step = getattr(sgd, "centre_sgd_step_tensor", sgd.centre_sgd_step)
    corpus, _ = generate_drift_corpus(drift_spec(n_tokens=args.tokens, seed=0))
    seen = {}
    entry = "_train_checked" if hasattr(train, "_train_checked") else "train_source"   # what fit calls
    real = getattr(train, entry)

    def capture(model, source, counts, cfg, **kw):  # fit's model, corpus and settings, as it trains them
        seen.update(model=model, source=source, counts=counts, cfg=cfg)
        seen.setdefault("state", copy.deepcopy(model.state_dict()))
        return real(model, source, counts, cfg, **kw)

    setattr(train, entry, capture)
    fit(corpus, TrainConfig(epochs=1, workers=1, seed=0), dim=args.dim)
    model = seen["model"]
    model.load_state_dict(seen["state"])
    cfg = config.resolve_penalty(seen["cfg"], model.family, model.logistic)
    keep = keep_probabilities(seen["counts"], cfg.sample)
    if hasattr(loop, "_epoch_batches"):
        batches = list(loop._epoch_batches(seen["source"], cfg, np.random.default_rng(0), keep, torch.device("cpu")))
    else:                       # the loop's runs of batches (CentreRun), batch by batch
        runs = loop._epoch_runs(seen["source"], cfg, np.random.default_rng(0), keep, torch.device("cpu"))
        batches = [b for run in runs for b in run.batches()]
    batches = batches[:args.steps]
    gen = torch.Generator().manual_seed(0)
    negatives = [NegativeSampler(seen["counts"], 0.75).sample((cfg.negatives,), generator=gen) for _ in batches]
    word_penalty, word_lr = config.word_weights(seen["counts"], cfg, torch.device("cpu"))
    centre_lr = STEP_CENTRE_LR if cfg.step_centre_lr is None else cfg.step_centre_lr   # as the loop does

    def steps(m) -> float:  # the timed steps on model m (and the step's preparation); their summed loss
        if prepare is not None:
            one = prepare(m, cfg.shared_negatives, cfg.negative_weight, centre_lr)
        else:
            def one(*a):
                return step(m, *a, cfg.negative_weight, centre_lr)
        loss = torch.zeros((), dtype=torch.float64)     # as the loop adds them up
        for b, neg in zip(batches, negatives):
            lam = cfg.roughness_penalty if word_penalty is None else word_penalty[b.words]
            rl = None if word_lr is None else word_lr[b.words]
            loss = loss + one(b.words, b.time, b.pair_centre, b.context, neg, cfg.lr, lam, rl)
        return float(loss)

    return model, seen["state"], batches, steps


def worker(args) -> dict:
    """Time the step in this process (the ``qpnlp`` on ``sys.path``): ``{"ms_per_step", "loss"}``."""
    model, state, batches, steps = _setup(args)
    best, loss = float("inf"), 0.0
    for _ in range(args.reps):
        model.load_state_dict(state)
        t0 = time.thread_time()
        loss = steps(model)
        best = min(best, time.thread_time() - t0)
    return {"ms_per_step": best * 1000 / len(batches), "loss": loss, "steps": len(batches)}


def threads(args) -> dict:
    """Two threads, each stepping its own copy of the model, against one thread: wall-clock speed-up.

    No rows are shared, so what keeps two threads from twice the steps per
    second is the interpreter (the GIL between torch's operations), not
    hogwild's row contention; with the pair loop compiled and with torch ops
    (``QPNLP_WORD2FUN_COMPILED``).  Needs two idle cores.
    """
    import threading

    model, state, batches, steps = _setup(args)
    other = copy.deepcopy(model)
    out = {}
    for name, flag in (("compiled", "1"), ("torch ops", "0")):
        os.environ["QPNLP_WORD2FUN_COMPILED"] = flag
        one, two = float("inf"), float("inf")
        for _ in range(args.reps):
            model.load_state_dict(state)
            t0 = time.perf_counter()
            steps(model)
            one = min(one, time.perf_counter() - t0)
            pair = [threading.Thread(target=steps, args=(m,)) for m in (model, other)]
            t0 = time.perf_counter()
            for t in pair:
                t.start()
            for t in pair:
                t.join()
            two = min(two, time.perf_counter() - t0)
        out[name] = {"one_thread_s": one, "two_threads_s": two, "speed_up": 2 * one / two, "load": os.getloadavg()[0]}
        print(f"{name}: 1 thread {one:.3f} s, 2 threads {two:.3f} s for twice the steps: speed-up {2 * one / two:.2f}",
              flush=True)
    return out


def run_tree(tree: str, args, pair_chunk: int = 0) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", **({"PYTHONPATH": tree} if tree else {})}
    cmd = [sys.executable, __file__, "worker", "--tokens", str(args.tokens), "--dim", str(args.dim),
           "--steps", str(args.steps), "--reps", str(args.reps), "--pair-chunk", str(pair_chunk)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="run", choices=["run", "worker", "threads"])
    ap.add_argument("--baseline-tree", default="", help="a directory holding another version's qpnlp package")
    ap.add_argument("--tokens", type=int, default=750_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pair-chunks", type=int, nargs="+", default=[],
                    help="time this tree with each of these pairs per pass of the positive term instead")
    ap.add_argument("--pair-chunk", type=int, default=0, help=argparse.SUPPRESS)  # the worker's one value
    ap.add_argument("--json", default="")
    return ap


def main() -> None:
    args = _parser().parse_args()
    if args.mode == "worker":
        print(json.dumps(worker(args)))
        return
    if args.mode == "threads":
        result = threads(args)
        if args.json:
            Path(args.json).write_text(json.dumps({"args": vars(args), "threads": result}, indent=1))
        return
    here = str(Path(__file__).resolve().parents[1])
    if args.pair_chunks:
        trees = {f"PAIR_CHUNK {c}": (here, c) for c in args.pair_chunks}
    else:
        trees = {"this tree": (here, 0), **({"baseline": (args.baseline_tree, 0)} if args.baseline_tree else {})}
    runs: dict = {k: [] for k in trees}
    for _ in range(args.rounds):
        for name, (tree, chunk) in trees.items():
            runs[name].append({**run_tree(tree, args, chunk), "load": round(os.getloadavg()[0], 2)})
            print(name, json.dumps(runs[name][-1]), flush=True)
    median = {k: statistics.median(r["ms_per_step"] for r in v) for k, v in runs.items()}
    for k, v in median.items():
        print(f"{k}: {v:.2f} CPU ms per step (median of {args.rounds})")
    if args.baseline_tree and not args.pair_chunks:
        print(f"this tree / baseline: {median['this tree'] / median['baseline']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs, "median_ms": median}, indent=1))


if __name__ == "__main__":
    main()
