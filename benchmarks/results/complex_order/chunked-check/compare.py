"""The paired table of this folder: each (variant, seed) trained on chunks and on whole batches.

    python benchmarks/results/complex_order/chunked-check/compare.py [RUN_DIR]   (default: this folder)
"""
import glob
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))        # benchmarks/, for _stats
from _stats import exact_accuracy, signed_rank_p  # noqa: E402

folder = sys.argv[1] if len(sys.argv) > 1 else str(HERE)
rows = {}
for f in glob.glob(f"{folder}/trec-transformer-s*-*/results.json"):
    side = f.split("/")[-2].rsplit("-", 1)[1]
    for r in json.load(open(f))["records"]:
        rows.setdefault((r["variant"], r["seed"]), {})[side] = r
print("| variant | seed | chunked: test / dev / lr / best epoch / run | whole: test / dev / lr / best epoch / run | s/epoch chunked, whole |")
print("|---|---|---|---|---|")
diffs = {}
for (v, s), d in sorted(rows.items()):
    if len(d) < 2: continue
    c, w = d["chunked"], d["whole"]
    f = lambda r: f"{r['test_accuracy']*100:.1f} / {r['dev_accuracy']*100:.2f} / {r['selected']['lr']:g} / {r['best_epoch']} / {r['epochs_run']}"
    print(f"| {v} | {s} | {f(c)} | {f(w)} | {c['seconds_per_epoch']:.1f}, {w['seconds_per_epoch']:.1f} |")
    diffs.setdefault(v, []).append((c['test_accuracy'] - w['test_accuracy']) * 100)
for v, ds in diffs.items():
    print(f"{v}: chunked - whole test, per seed {[round(x, 1) for x in ds]}, mean {statistics.mean(ds):+.2f}")
all_d = [x for ds in diffs.values() for x in ds]
print(f"all: mean {statistics.mean(all_d):+.2f}, chunked higher {sum(x > 0 for x in all_d)}, lower {sum(x < 0 for x in all_d)}, tied {sum(x == 0 for x in all_d)} of {len(all_d)}")
exact = [float(exact_accuracy(rows[k]["chunked"]["test_accuracy"]) - exact_accuracy(rows[k]["whole"]["test_accuracy"]))
         for k in sorted(rows) if len(rows[k]) == 2]
print(f"Wilcoxon signed-rank (two-sided, {len(exact)} pairs): p = {signed_rank_p(exact):.3f}")
