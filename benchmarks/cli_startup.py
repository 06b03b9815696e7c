"""How long ``qpnlp --help`` takes to start: the imports every command pays, this tree against another revision.

Each run is a new process (``python -c "from qpnlp.cli import main; main(['--help'])"``, one torch thread) with
this tree's or the other version's ``qpnlp`` first on ``sys.path``; the two alternate, ``--rounds`` times, and
the report gives each one's median wall and CPU seconds (the CPU time of the process, from ``os.wait4``) and
the ratio of the medians.

Run::

    python benchmarks/cli_startup.py --baseline-rev 8071dbd --rounds 5 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _baseline import extract_package  # benchmarks/ (this script's folder)

ROOT = Path(__file__).resolve().parents[1]
CODE = "from qpnlp.cli import main; main(['--help'])"


def one_run(tree: Path) -> dict:
    """``{"wall_s", "cpu_s"}`` of one ``qpnlp --help`` with ``tree``'s ``qpnlp``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CODE], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    assert os.waitstatus_to_exitcode(status) == 0, f"qpnlp --help failed in {tree}"
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-rev", default="", help="a git revision of this repository to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    trees = {"this tree": ROOT, **({"baseline": extract_package(args.baseline_rev)} if args.baseline_rev else {})}
    runs: dict = {name: [] for name in trees}
    for r in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(one_run(tree))
            print(f"round {r + 1} {name}: {runs[name][-1]['wall_s']:.2f} s, {runs[name][-1]['cpu_s']:.2f} CPU s",
                  flush=True)
    median = {name: {k: statistics.median(x[k] for x in v) for k in ("wall_s", "cpu_s")} for name, v in runs.items()}
    for name, m in median.items():
        print(f"{name}: {m['wall_s']:.2f} s, {m['cpu_s']:.2f} CPU s (median of {args.rounds})")
    if args.baseline_rev:
        print(f"this tree / baseline (median wall): {median['this tree']['wall_s'] / median['baseline']['wall_s']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs, "median": median}, indent=1))


if __name__ == "__main__":
    main()
