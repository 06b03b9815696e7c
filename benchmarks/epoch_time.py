"""Epoch time of the QPDN MR and CNM TREC-QA reproductions, before and after the speed work (issue 22).

Each tree trains through its own command line (``qpnlp train qpdn|cnm``) in a
subprocess with the same explicit settings, so the two runs differ only in
the library code. The baseline is ``qpnlp/`` at ``--baseline-rev`` (default:
the commit before the speed work) extracted to a temporary directory and put
first on ``PYTHONPATH``; the runner checks which package it imported.

The clock is the child process's CPU time (``getrusage``; one thread, so it
is the time the run would take on a core of its own), and the epoch time is
the difference between a run of ``--epochs`` epochs and a run of one epoch,
divided by ``--epochs - 1``: start-up, data loading and the final test cancel,
and what is left is an epoch's training plus its dev evaluation, whatever
each tree's report calls "seconds" (the two trees' reports time different
parts of an epoch). The trees alternate within each round (order swapped
every round), the ratio before / after is taken within a round, and the
median over rounds is reported (``benchmarks/_bench.py``'s convention).

The baseline reads TREC-QA's ``train.tsv`` only, so both trees get a data root
of symbolic links in which ``qa/trecqa/train.tsv`` is TRAIN-ALL (and the
current tree is told ``--train-split train``): the same 1,227 questions.

    QPNLP_DATA=... python benchmarks/epoch_time.py --rounds 3 --json benchmarks/results/speed/epoch_time.json

Before the timed rounds, each tree trains each case once for one epoch, untimed: a tree's first run pays
one-off costs that later runs find on disk (the bytecode of a freshly extracted tree, numba's cache of the
compiled loops of ``qpnlp._numba``, inductor's compile cache). In a timed run of one epoch they would be
subtracted from the epoch (a baseline with compiled loops showed a first-round epoch of half its later ones).

``--compare-flags "--compile default"`` compares the working tree with itself instead: "before" without
those flags, "after" with them (e.g. torch.compile's training steps). The untimed runs then find inductor's
compile cache warm for both timed runs, and its compile time cancels in the difference; the runs of one
epoch (start-up, compile, one epoch) are reported too.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _baseline import BASELINE_REV, extract_package  # noqa: E402
from _bench import uptime  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

# The reproductions' settings, spelled with flags both trees have.
QPDN_MR = ["train", "qpdn", "--dataset", "MR", "--max-splits", "1", "--phase-init", "sign", "--embedding-lr", "0.001",
           "--weighting", "trainable", "--dropout", "0", "--pretrained-fallback", "0"]
CASES = {
    "qpdn-mr-50d": QPDN_MR + ["--vectors", "glove-6b-50d"],
    "qpdn-mr-300d": QPDN_MR + ["--vectors", "spacy-md-300d"],
    "cnm-trecqa": ["train", "cnm", "--dataset", "trecqa", "--num-measurements", "300", "--measurement-init", "random",
                   "--phase-init", "sign", "--dropout", "0", "--lr", "0.003", "--embedding-lr", "0.003",
                   "--pretrained-fallback", "400000"],
}
# Flags that trees before them lack (those behave this way without them); given to every tree that has them.
CURRENT_ONLY = {"qpdn": ["--no-select"], "cnm": ["--train-split", "train"]}


def has_flags(root: Path, flags: list[str]) -> bool:
    """Whether the package under ``root`` mentions each option of ``flags`` (its command line has them)."""
    sources = package_sources(root)
    return all(f'"{flag}"' in sources for flag in flags if flag.startswith("--"))


@functools.cache
def package_sources(root: Path) -> str:
    """The Python sources of the package under ``root``, read once per tree (every run of a round asks)."""
    return " ".join(path.read_text() for path in (root / "qpnlp").rglob("*.py"))


RUNNER = ("import sys, qpnlp; root = sys.argv.pop(1); "
          "assert qpnlp.__file__.startswith(root), (qpnlp.__file__, root); "
          "from qpnlp.cli import main; sys.argv[0] = 'qpnlp'; main()")


def train_all_data_root(data: Path) -> Path:
    """A data root of symbolic links to ``data`` in which TREC-QA's ``train.tsv`` is TRAIN-ALL."""
    root = Path(tempfile.mkdtemp(prefix="qpnlp_epoch_data_"))
    for entry in data.iterdir():
        if entry.name != "qa":
            (root / entry.name).symlink_to(entry)
    for corpus in (data / "qa").iterdir():
        target = root / "qa" / corpus.name
        if corpus.name != "trecqa":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(corpus)
            continue
        target.mkdir(parents=True)
        for file in corpus.iterdir():
            if file.name != "train.tsv":
                (target / file.name).symlink_to(file)
        (target / "train.tsv").symlink_to(corpus / "train-all.tsv")
    return root


def trained_epochs(report: dict) -> int:
    """How many epochs a run trained (either tree's report layout)."""
    return len(report.get("history") or report["splits"][0]["history"])


def run_once(tree: str, root: Path, args: list[str], data: Path, threads: int) -> float:
    """Train once in a child process; its CPU seconds (user + system)."""
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        command = [sys.executable, "-c", RUNNER, str(root), *args, "--data", str(data), "--no-progress",
                   "--report", str(report_path)]
        env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode:
            raise RuntimeError(f"{tree}: {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        epochs = trained_epochs(json.loads(report_path.read_text()))
    expected = int(args[args.index("--epochs") + 1])
    if epochs != expected:
        raise RuntimeError(f"{tree}: trained {epochs} epochs instead of {expected}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def epoch_cpu_seconds(tree: str, root: Path, args: list[str], data: Path, threads: int,
                      epochs: int) -> tuple[float, float]:
    """CPU seconds of one epoch, (run of ``epochs`` epochs - run of one epoch) / (epochs - 1), and of the one-epoch run."""
    runs = [run_once(tree, root, args + ["--epochs", str(n), "--patience", str(n)], data, threads) for n in (1, epochs)]
    return (runs[1] - runs[0]) / (epochs - 1), runs[0]


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-rev", default=BASELINE_REV)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the long run (>= 2; --patience = epochs)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", type=Path, default=os.environ.get("QPNLP_DATA"))
    parser.add_argument("--compare-flags", metavar="FLAGS",
                        help="compare the working tree without and with these flags (e.g. '--compile default') "
                             "instead of two trees")
    parser.add_argument("--json", type=Path)
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.data is None:
        parser.error("set QPNLP_DATA or pass --data")
    if args.epochs < 2:
        parser.error("--epochs must be at least 2")
    extra = args.compare_flags.split() if args.compare_flags else []
    if extra:
        trees = {"before": REPO, "after": REPO}
        what = f"before = working tree, after = working tree with {args.compare_flags}"
    else:
        trees = {"before": extract_package(args.baseline_rev, "qpnlp_epoch_baseline_"), "after": REPO}
        what = f"before = qpnlp {args.baseline_rev}, after = working tree"
    data = train_all_data_root(args.data)
    print(f"{what}; {args.threads} thread(s), {args.epochs} epochs per run, {args.rounds} rounds\n"
          f"load before: {uptime()}", flush=True)

    def flags_of(case: str, tree: str) -> list[str]:
        newer = CURRENT_ONLY[CASES[case][1]]
        current = tree == "after" or extra or has_flags(trees[tree], newer)
        return CASES[case] + (newer if current else []) + (extra if tree == "after" else [])

    for case in args.cases:               # untimed: bytecode, numba's and inductor's caches (module docstring)
        for tree in trees:
            run_once(tree, trees[tree], flags_of(case, tree) + ["--epochs", "1"], data, args.threads)
    results: dict = {case: {tree: [] for tree in trees} for case in args.cases}
    one_epoch_runs: dict = {case: {tree: [] for tree in trees} for case in args.cases}
    for r in range(args.rounds):
        for case in args.cases:
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for tree in order:
                seconds, one_epoch = epoch_cpu_seconds(tree, trees[tree], flags_of(case, tree), data, args.threads,
                                                       args.epochs)
                results[case][tree].append(seconds)
                one_epoch_runs[case][tree].append(one_epoch)
                print(f"  round {r + 1}: {case} {tree}: {seconds:.2f} s per epoch (a run of one epoch: "
                      f"{one_epoch:.1f} s)", flush=True)
    print(f"load after: {uptime()}")
    summary = {}
    for case, runs in results.items():
        summary[case] = dict(before=statistics.median(runs["before"]), after=statistics.median(runs["after"]),
                             ratio=statistics.median(b / a for b, a in zip(runs["before"], runs["after"])),
                             one_epoch_run={t: statistics.median(v) for t, v in one_epoch_runs[case].items()})
        s = summary[case]
        print(f"{case:14s} epoch before {s['before']:.2f} s, after {s['after']:.2f} s: before / after "
              f"{s['ratio']:.2f}x (median of per-round ratios)")
    if args.json:
        args.json.write_text(json.dumps(dict(baseline_rev=None if extra else args.baseline_rev,
                                             compare_flags=args.compare_flags, threads=args.threads, epochs=args.epochs,
                                             cases={c: CASES[c] for c in args.cases}, runs=results, summary=summary),
                                        indent=1) + "\n")


if __name__ == "__main__":
    main()
