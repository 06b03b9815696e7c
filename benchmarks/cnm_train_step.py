"""CNM training step on TREC-QA TRAIN-ALL batches: before/after the speed work, interleaved.

The batches are real: triplets (question, correct, wrong candidate) sampled as
:func:`qpnlp.training.matching.fit_matching` does from ``train-all.tsv``
(53k rows, questions 8 tokens on average, candidates 29, up to 261), padded
per batch. Model: d=50, windows 1-4, k=300 measurements (``--outcomes``; the
largest of the thesis' grid {50, 100, 300, 500} that the machine trains in
reasonable time), random initial amplitudes (no GloVe needed), triplet loss.

Variants, one process, alternated round by round (``benchmarks/_bench.py``),
each timed call running through the same ``--batches`` batches (times per batch):

* ``before step``  qpnlp at ``--baseline-rev`` (same parameters: state dict copied);
* ``after step``   the working tree;
* ``after fwd+bwd`` the working tree without the optimiser step.

Usage::

    QPNLP_DATA=/work/shared/data python benchmarks/cnm_train_step.py [--outcomes 300] [--rounds 5]
        [--profile benchmarks/results/speed/cnm_train_step_profile.txt] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _baseline import BASELINE_REV, load_baseline  # noqa: E402
from _bench import interleaved, profile_table, ratio, summary, uptime  # noqa: E402

from qpnlp.data import load_qa  # noqa: E402
from qpnlp.hilbert import set_validation  # noqa: E402
from qpnlp.models import CNM, CNMConfig  # noqa: E402
from qpnlp.training.matching import MatchingConfig, _batch, prepare_qa, sample_triplets, triplet_loss  # noqa: E402
from qpnlp.training import Optimisers  # noqa: E402


def batches(args) -> tuple[int, list]:
    train = load_qa("trecqa", "train-all")
    vocab, encoded, _, _ = prepare_qa(train, {}, None)
    data = encoded["train"]
    rng = np.random.default_rng(0)
    triplets = sample_triplets(data, rng)
    triplets = triplets[rng.permutation(len(triplets))]
    out = []
    for i in range(args.batches):
        b = triplets[i * args.batch:(i + 1) * args.batch]
        out.append((_batch(data.questions, b[:, 0], "cpu", None), _batch(data.candidates, b[:, 1], "cpu", None),
                    _batch(data.candidates, b[:, 2], "cpu", None)))
    return len(vocab), out


def make_steps(args, base, num_words, data):
    options = dict(num_words=num_words, dim=args.dim, num_measurements=args.outcomes, windows=[1, 2, 3, 4],
                   measurement_init="orthogonal", dropout=0.1)
    after = CNM(CNMConfig(**options), generator=torch.Generator().manual_seed(0))
    before = base.models.CNM(base.models.CNMConfig(**options))
    before.load_state_dict(after.state_dict())
    config = MatchingConfig(lr=0.01, embedding_lr=0.01)
    out = {}
    for name, model, opts in (("before", before, base.training.Optimisers(before, config)),
                              ("after", after, Optimisers(after, config))):
        model.train()

        def fwd_bwd(model=model, opts=opts, step=False):
            for q, pos, neg in data:      # every call the same batches: the same work for every variant
                opts.zero_grad()
                triplet_loss(model(*q, *pos), model(*q, *neg), 0.1).backward()
                if step:
                    opts.step()

        out[name] = (fwd_bwd, functools.partial(fwd_bwd, step=True))
    before.eval(), after.eval()
    with torch.no_grad():
        q, pos, _ = data[0]
        gap = float((before(*q, *pos) - after(*q, *pos)).abs().max())
    before.train(), after.train()
    return out, gap


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--outcomes", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--batches", type=int, default=10,
                        help="TRAIN-ALL batches per timed call (times are reported per batch)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=1.0)
    parser.add_argument("--baseline-rev", default=BASELINE_REV)
    parser.add_argument("--profile", metavar="TXT")
    parser.add_argument("--json")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    load_start = uptime()
    base = load_baseline(args.baseline_rev)
    base.hilbert.set_validation(False)
    set_validation(False)
    num_words, data = batches(args)
    steps, gap = make_steps(args, base, num_words, data)
    lengths = [(q[0].shape[1], p[0].shape[1], n[0].shape[1]) for q, p, n in data]
    header = (f"CNM TREC-QA TRAIN-ALL triplets, V={num_words} d={args.dim} k={args.outcomes} windows 1-4, "
              f"B={args.batch}, padded lengths (question, correct, wrong) mean "
              f"{np.mean(lengths, 0).round(1).tolist()} max {np.max(lengths, 0).tolist()}, validation off, "
              f"{args.threads} thread(s), torch {torch.__version__}, before = qpnlp {args.baseline_rev}")
    print(header)
    print(f"load before: {load_start}")
    print(f"max |score before - score after| (eval mode) = {gap:.2e}")
    times = interleaved({"before step": steps["before"][1], "after step": steps["after"][1],
                         "after fwd+bwd": steps["after"][0]}, rounds=args.rounds, min_run_time=args.min_run_time)
    times = {name: [t / len(data) for t in ts] for name, ts in times.items()}          # per batch
    load_end = uptime()
    stats = summary(times)
    ratios = {"before step / after step": ratio(times, "before step", "after step"),
              "after step / after fwd+bwd": ratio(times, "after step", "after fwd+bwd")}
    for name, s in stats.items():
        print(f"  {name:<14} median {s['median'] * 1e3:8.2f} ms   min {s['min'] * 1e3:8.2f} ms")
    for name, r in ratios.items():
        print(f"  {name:<28} {r:6.2f}x   (median of per-round ratios)")
    print(f"load after: {load_end}")
    if args.profile:
        text = [header, f"load: {uptime()}"]
        for name in ("before", "after"):
            text += [f"\n{name} step, top operators by self CPU time ({2 * len(data)} steps):",
                     profile_table(steps[name][1], steps=2, warmup=1)]
        Path(args.profile).write_text("\n".join(text) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(config=vars(args), load_start=load_start, load_end=load_end,
                                                   seconds=times, summary=stats, ratios=ratios,
                                                   max_score_gap=gap), indent=2))


if __name__ == "__main__":
    main()
