"""What keeping a training state costs a CLI run: bytes on disk, wall time and peak memory, this tree against another.

Each run is a new process running ``qpnlp train qpdn --dataset trec --epochs E --save DIR`` (the defaults otherwise:
GloVe 6B 50d with its 400k-word fallback vocabulary, four candidates selected on dev, one torch thread) with this
tree's or the other revision's ``qpnlp`` first on ``sys.path``, and once more with this tree and
``--no-training-state`` (the floor). The three alternate, ``--rounds`` times; the report gives each one's median wall
seconds and peak resident memory, the bytes of ``DIR.training`` when the run ends, and the test accuracy (equal in
all three: the state does not change the run).

Run (repository root, ``QPNLP_DATA`` set)::

    python benchmarks/training_state_size.py --baseline-rev 7df25d6 --rounds 2 --json OUT.json
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

ROOT = Path(__file__).resolve().parents[1]
CODE = ("import atexit, resource, sys; atexit.register(lambda: sys.stderr.write("
        "f'\\nmaxrss_kb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')); "
        "import qpnlp; assert qpnlp.__file__.startswith(sys.argv[1]), qpnlp.__file__; "
        "from qpnlp.cli import main; main(sys.argv[2:])")


def one_run(tree: Path, out: Path, epochs: int, keep_state: bool) -> dict:
    """``{"wall_s", "maxrss_mb", "state_bytes", "test_accuracy"}`` of one CLI run with ``tree``'s ``qpnlp``."""
    args = ["train", "qpdn", "--dataset", "trec", "--epochs", str(epochs), "--save", str(out / "model"),
            "--no-progress", "--threads", "1", "--report", str(out / "report.json")]
    if not keep_state:
        args.append("--no-training-state")
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CODE, str(tree), *args], env=env, cwd=tree,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"{tree}: qpnlp {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    maxrss = int(proc.stderr.rsplit("maxrss_kb ", 1)[1].split()[0])
    state = out / "model.training"
    state_bytes = sum(p.stat().st_size for p in state.rglob("*") if p.is_file()) if state.exists() else 0
    report = json.loads((out / "report.json").read_text())
    return dict(wall_s=wall, maxrss_mb=maxrss / 1024, state_bytes=state_bytes,
                test_accuracy=report["metrics"]["accuracy_mean"])


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-rev", required=True, help="the revision to compare with (e.g. 7df25d6)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the runs and medians here")
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if not os.environ.get("QPNLP_DATA"):
        parser.error("set QPNLP_DATA to the benchmark data (the TREC question classification set)")
    with tempfile.TemporaryDirectory(prefix="qpnlp_state_size_") as tmp:
        trees = {"baseline": extract_package(args.baseline_rev, parent=Path(tmp)), "this tree": ROOT}
        cases = {f"{args.baseline_rev}, state kept": ("baseline", True), "this tree, state kept": ("this tree", True),
                 "this tree, --no-training-state": ("this tree", False)}
        runs: dict[str, list[dict]] = {name: [] for name in cases}
        for round_ in range(args.rounds):
            for name, (tree, keep) in cases.items():
                out = Path(tempfile.mkdtemp(dir=tmp))
                runs[name].append(one_run(trees[tree], out, args.epochs, keep))
                print(f"round {round_ + 1} {name}: {runs[name][-1]}", flush=True)
    medians = {name: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for name, rs in runs.items()}
    print(f"\n| run (qpnlp train qpdn --dataset trec --epochs {args.epochs} --save DIR) | wall s | peak RSS MB "
          "| DIR.training bytes | test accuracy |\n|---|---|---|---|---|")
    for name, m in medians.items():
        print(f"| {name} | {m['wall_s']:.1f} | {m['maxrss_mb']:.0f} | {m['state_bytes']:,.0f} | "
              f"{m['test_accuracy']:.4f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(dict(baseline_rev=args.baseline_rev, epochs=args.epochs, runs=runs,
                                             medians=medians, load=os.getloadavg()), indent=2))


if __name__ == "__main__":
    main()
