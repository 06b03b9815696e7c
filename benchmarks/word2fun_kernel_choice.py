"""Word2Fun's kernel choice against its two kernels forced, and gensim, in interleaved rounds, alone and under load.

One worker of ``fit``'s defaults runs its compiled step in torch's thread count (2 on 2 cores, numba's TBB
layer) and chooses, run by run, between the kernel of one thread and the kernel of several
(``qpnlp.word2fun._kernel_choice``). This benchmark trains the same corpus with

* ``choice``: the library's defaults (the choice as it is);
* ``threads``: the kernel of several threads on every run (``KernelChoice.pick`` replaced);
* ``one thread``: the kernel of one thread on every run, in the same step (so the same ``FusedStep``);

and gensim's per-period word2vec (``word2fun_speed.gensim_per_period``, two workers), ``--rounds`` times in
turn, alone and beside ``--busy`` busy processes. For the ``choice`` rows it records every call the choice timed:
per kernel, the median seconds per pair of its trials and of its other calls, and the share of the runs each
kernel took. Run on an older tree (``PYTHONPATH=<tree>``) the same log shows how that tree's trials measured.

Run::

    python benchmarks/word2fun_kernel_choice.py --corpus sotu --epochs 1 --rounds 4 --busy 0,2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import word2fun_speed as speed  # noqa: E402

import qpnlp  # noqa: E402
from qpnlp.word2fun import TrainConfig, _kernel_choice, fit  # noqa: E402

ROWS = ("gensim per-period", "choice", "threads", "one thread")


def _word2fun(corpus, args, forced: int | None, calls: list) -> float:
    """tokens/s of ``fit``'s defaults, one worker, with the kernel ``forced`` (None: chosen); ``calls`` gets the
    choice's timed calls ``(kernel, trial, seconds per pair)``."""
    choice = _kernel_choice.KernelChoice
    pick, record = choice.pick, choice.record

    def logged(self, kernel, seconds, pairs, trial):
        calls.append((kernel, trial, seconds / max(pairs, 1)))
        record(self, kernel, seconds, pairs, trial)

    choice.record = logged
    if forced is not None:
        choice.pick = lambda self: (forced, False)
    try:
        return fit(corpus, TrainConfig(epochs=args.epochs, workers=1, seed=0), dim=args.dim).stats.tokens_per_s
    finally:
        choice.pick, choice.record = pick, record


def _calls_summary(calls: list) -> dict:
    """Per kernel: its share of the calls and the median ns per pair of its trials and of its other calls."""
    out = {}
    for kernel in (0, 1):
        mine = [c for c in calls if c[0] == kernel]
        out[f"kernel {kernel}"] = {"share": round(len(mine) / max(len(calls), 1), 3)} | {
            ("trials" if trial else "runs") + " ns/pair": round(statistics.median(c[2] for c in sub) * 1e9, 1)
            for trial in (True, False) if (sub := [c for c in mine if c[1] == trial])}
    return out


def _rounds(corpus, args, n_busy: int) -> dict:
    """``args.rounds`` interleaved rounds of every row beside ``n_busy`` busy processes."""
    rows = {ROWS[0]: lambda calls: speed.gensim_per_period(corpus, args),
            ROWS[1]: lambda calls: _word2fun(corpus, args, None, calls),
            ROWS[2]: lambda calls: _word2fun(corpus, args, 1, calls),
            ROWS[3]: lambda calls: _word2fun(corpus, args, 0, calls)}
    runs = {k: [] for k in rows}
    with speed.busy_processes(n_busy):
        for _ in range(args.rounds):
            for name, run in rows.items():
                calls = []
                runs[name].append(speed.timed(lambda: run(calls)) | {"calls": _calls_summary(calls)})
                print(n_busy, name, json.dumps(runs[name][-1]), flush=True)
    return runs


def _table(phases: dict) -> list[str]:
    """Markdown: per load and row, the median tokens/s, the median of the per-round ratios to gensim, and for the
    choice the kernels' shares and trial/run costs (medians over the rounds)."""
    lines = ["| busy processes beside | row | median tokens/s | / gensim (median of rounds) | load range |",
             "|---|---|---:|---:|---|"]
    for n_busy, runs in phases.items():
        gensim = [r["tokens_per_s"] for r in runs[ROWS[0]]]
        for name, rs in runs.items():
            ratios = [r["tokens_per_s"] / g for r, g in zip(rs, gensim)]
            loads = [x for r in rs for x in (r["load_before"], r["load_after"])]
            lines.append(f"| {n_busy} | {name} | {statistics.median(r['tokens_per_s'] for r in rs):,.0f} | "
                         f"{statistics.median(ratios):.2f} | {min(loads)}-{max(loads)} |")
    lines += ["", "The choice's timed calls (medians over the rounds of each round's medians; ns per pair):", "",
              "| busy | kernel | share of runs | trials | runs |", "|---|---|---:|---:|---:|"]
    for n_busy, runs in phases.items():
        for kernel in ("kernel 0", "kernel 1"):
            stats = [r["calls"][kernel] for r in runs[ROWS[1]]]
            share, trials, rest = (_median_of(stats, key) for key in ("share", "trials ns/pair", "runs ns/pair"))
            lines.append(f"| {n_busy} | {kernel} | {share:.3f} | {trials:.0f} | {rest:.0f} |")
    return lines


def _median_of(stats: list[dict], key: str) -> float:
    """The median of ``key`` over the rounds' summaries that have it (NaN when none has: a kernel never tried)."""
    values = [s[key] for s in stats if key in s]
    return statistics.median(values) if values else float("nan")


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="sotu", choices=["drift", "sotu"])
    ap.add_argument("--tokens", type=int, default=750_000, help="the planted-drift corpus's size (--corpus drift)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--busy", default="0,2", help="busy processes beside, one phase per number")
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--negatives", type=int, default=5, help="gensim's negatives per pair")
    ap.add_argument("--bins", type=int, default=10, help="gensim's periods")
    ap.add_argument("--workers", type=int, default=2, help="gensim's threads")
    ap.add_argument("--out", default="benchmarks/results/word2fun/kernel-choice")
    ap.add_argument("--tag", default="kernel-choice")
    return ap


def _tree() -> str:
    """The qpnlp this run imported: its directory and that checkout's commit (``PYTHONPATH`` may name another)."""
    root = Path(qpnlp.__file__).resolve().parents[1]
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return f"{root} at {head.stdout.strip() or 'an unknown commit'}"


def main() -> None:
    args = _parser().parse_args()
    corpus = speed.load_sotu() if args.corpus == "sotu" else speed.generate_drift_corpus(
        speed.drift_spec(n_tokens=args.tokens, seed=0))[0]
    _word2fun(corpus, args, None, [])                          # warm-up: numba's cache, its threads
    phases = {n: _rounds(corpus, args, n) for n in (int(x) for x in args.busy.split(","))}
    command = "python benchmarks/word2fun_kernel_choice.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items())
    lines = [f"# Word2Fun's kernel choice, {args.corpus} corpus, {corpus.n_tokens} tokens, {args.epochs} epoch(s)",
             "", f"`{command}`", "", f"qpnlp: {_tree()}. CPU: {speed.cpu_model()['model']}; {args.rounds} interleaved "
             "rounds per load.",
             "", *_table(phases)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.tag}.json").write_text(json.dumps({"command": command, "phases": phases}, indent=2))
    (out / f"{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
