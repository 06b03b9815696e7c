"""Word2Fun beside busy processes: does its rate per CPU second fall because it moves between cores?

``word2fun_speed.py`` splits Word2Fun's slow-down under load into the cores it gets and its tokens per CPU
second (``parts``): in two runs one worker got 1.21-1.23x fewer tokens per CPU second beside two busy processes,
two processes only 1.02-1.05x, and gensim none. One untested explanation: three runnable tasks on two cores (the
worker and two busy loops) make the scheduler move the worker between the cores, and each move leaves its
tables' rows in the other core's cache. This script times ``fit`` with its defaults and one worker, alone and
beside ``--busy`` busy processes (Python loops, as in ``word2fun_speed.py``), free to run on every core or pinned
to core 0 (``os.sched_setaffinity``; the busy processes are not pinned), rounds interleaved, and reports the
median tokens/s, cores used and tokens per CPU second of each setting. If pinning brings the loaded rate per
CPU second back to the rate alone, the moves are the cost.

Run (Linux; a quiet machine)::

    python benchmarks/word2fun_pinning.py --rounds 3 --out benchmarks/results/word2fun/pinning
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import word2fun_speed as speed  # noqa: E402

from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus  # noqa: E402


def timed_run(corpus, args, pinned: bool) -> dict:
    """One ``fit`` (defaults, one worker): tokens/s, cores used and tokens per CPU second, pinned to core 0 or not."""
    every = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(every)} if pinned else every)
    try:
        row = speed.timed(lambda: speed.word2fun(corpus, args, True, workers=1))
    finally:
        os.sched_setaffinity(0, every)
    return {**row, "tokens_per_cpu_s": row["tokens_per_s"] / row["cores_used"]}


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=750_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/word2fun/pinning")
    return ap


def main() -> None:
    args = _parser().parse_args()
    args.negatives, args.workers = 5, 1                      # what speed.word2fun reads (shared negatives: unused)
    corpus, _ = generate_drift_corpus(drift_spec(n_tokens=args.tokens, seed=0))
    print("warm-up (not counted)", round(speed.word2fun(corpus, args, True, workers=1)), flush=True)
    rows: dict[str, list] = {}
    for n_busy in (0, args.busy):
        with speed.busy_processes(n_busy):
            for _ in range(args.rounds):
                for pinned in (False, True):
                    name = f"{n_busy} busy, {'pinned to one core' if pinned else 'free'}"
                    rows.setdefault(name, []).append(timed_run(corpus, args, pinned))
                    print(name, json.dumps(rows[name][-1]), flush=True)
    command = "python benchmarks/word2fun_pinning.py " + " ".join(f"--{k} {v}" for k, v in vars(args).items()
                                                                    if k not in ("negatives", "workers"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pinning.json").write_text(json.dumps({"command": command, "cpu": speed.cpu_model(), "rows": rows},
                                                 indent=2))
    med = lambda name, key: statistics.median(r[key] for r in rows[name])  # noqa: E731
    lines = [f"# Word2Fun (defaults, one worker) alone and beside {args.busy} busy processes, free or pinned", "",
             f"`{command}`", "", f"CPU: {speed.cpu_model()['model']}; medians over {args.rounds} interleaved rounds.",
             "", "| setting | tokens/s | cores used | tokens per CPU s | load range |", "|---|---:|---:|---:|---|"]
    for name in rows:
        loads = [x for r in rows[name] for x in (r["load_before"], r["load_after"])]
        lines.append(f"| {name} | {med(name, 'tokens_per_s'):,.0f} | {med(name, 'cores_used'):.2f} | "
                     f"{med(name, 'tokens_per_cpu_s'):,.0f} | {min(loads)}-{max(loads)} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
