"""How long ``qpnlp --help`` takes to start: the imports every command pays, this tree against another revision.

Each run is a new process (``python -c "from qpnlp.cli import main; main(['--help'])"``, one torch thread) with
this tree's or the other version's ``qpnlp`` first on ``sys.path``; after one uncounted run each (which writes its
``__pycache__``) the two alternate, ``--rounds`` times, and the report gives each one's median wall and CPU seconds
(the CPU time of the process), whether the imports brought in ``torch._dynamo``, and the ratio of the medians.

Run::

    python benchmarks/cli_startup.py --baseline-rev 8071dbd --rounds 5 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _baseline import extract_package  # benchmarks/ (this script's folder)
from word2fun_speed import cpu_model

ROOT = Path(__file__).resolve().parents[1]
CODE = ("import atexit, sys; atexit.register(lambda: sys.stderr.write(f'dynamo {\"torch._dynamo\" in sys.modules}')); "
        "import qpnlp; assert qpnlp.__file__.startswith(sys.argv[1]), qpnlp.__file__; "
        "from qpnlp.cli import main; main(['--help'])")


def one_run(tree: Path) -> dict:
    """``{"wall_s", "cpu_s", "dynamo"}`` of one ``qpnlp --help`` with ``tree``'s ``qpnlp`` (``dynamo``: whether the
    imports brought in ``torch._dynamo``)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CODE, str(tree)], env=env, cwd=tree,  # -c: the cwd comes first
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, f"qpnlp --help failed in {tree}:\n{proc.stderr}"
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "dynamo": proc.stderr.strip().endswith("dynamo True")}


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-rev", default="", help="a git revision of this repository to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default="")
    return ap


def main() -> None:
    args = _parser().parse_args()
    trees = {"this tree": ROOT, **({"baseline": extract_package(args.baseline_rev)} if args.baseline_rev else {})}
    runs: dict = {name: [] for name in trees}
    for tree in trees.values():                 # not counted: writes the trees' __pycache__
        one_run(tree)
    for r in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(one_run(tree))
            last = runs[name][-1]
            print(f"round {r + 1} {name}: {last['wall_s']:.2f} s, {last['cpu_s']:.2f} CPU s, torch._dynamo imported: "
                  f"{last['dynamo']}", flush=True)
    median = {name: {k: statistics.median(x[k] for x in v) for k in ("wall_s", "cpu_s")} for name, v in runs.items()}
    for name, m in median.items():
        print(f"{name}: {m['wall_s']:.2f} s, {m['cpu_s']:.2f} CPU s (median of {args.rounds})")
    if args.baseline_rev:
        print(f"this tree / baseline (median wall): {median['this tree']['wall_s'] / median['baseline']['wall_s']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "cpu": cpu_model(), "runs": runs,
                                               "median": median}, indent=1))


if __name__ == "__main__":
    main()
