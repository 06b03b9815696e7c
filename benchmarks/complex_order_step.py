"""Complex-order classifiers (FastText, CNN, Transformer): step time against the same network with real PE.

For each network, one process, variants alternated round by round
(``benchmarks/_bench.py``), each timed call running through the same
``--batches`` real training batches (SST-2 by default, padded per batch as the
trainer does; times per step):

* ``PE``                    real word + trainable position embedding, real layers (working tree);
* ``complex-order``         the paper's complex network (working tree);
* ``complex-order before``  the same at ``--baseline-rev`` (state dict copied);
* ``PE 2D``                 PE with every width doubled (D=100, hidden 256, 128 filters, FFN 256): as many
                            real numbers per word and per unit as the complex network (with ``--twice-width``).

A step is the trainer's :func:`~qpnlp.training.trainer.train_step` (forward,
backward, SparseAdam on the tables and Adam on the rest). Settings as
``benchmarks/reproduce_complex_order.py``: D=50, hidden 128, 64 filters of
sizes 3-5, 5 heads, FFN 128, dropout 0.1, modulus readout; random initial
vectors (no GloVe needed; the cost does not depend on them).

Target (issue 22): complex-order step within 1.2x of PE.

Usage::

    QPNLP_DATA=/work/shared/data python benchmarks/complex_order_step.py [--dataset SST2]
        [--networks fasttext cnn transformer] [--profile benchmarks/results/speed/complex_order_step_profile.txt]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _baseline import BASELINE_REV, load_baseline  # noqa: E402
from _bench import interleaved, order_options, profile_table, ratio, sst2_batches, summary, uptime  # noqa: E402

from qpnlp.hilbert import set_validation  # noqa: E402
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig  # noqa: E402
from qpnlp.nn.linear import _block_weight  # noqa: E402
from qpnlp.training import TrainConfig  # noqa: E402
from qpnlp.training import Optimisers, train_step  # noqa: E402


def make_step(model, optimisers, batches):
    def steps():                # every call the same batches: the same work for every variant
        for ids, mask, labels in batches:
            train_step(model, optimisers, ids, mask, labels)
    return steps


def _layer(x, w, fan_out, conv: bool):
    """complex, complex through a real block product, real (for real x, w) forward+backward closures.

    Every variant's loss is the sum of the squares of its output's real numbers (``|y|^2`` summed for a complex
    output): the same cheap element-wise head, so that the times compare the layers (a complex ``abs`` head, with
    its square roots and divisions forward and backward, took about a third of the complex linear layer's time
    in a scratch timing)."""
    f = torch.nn.functional
    if not x.is_complex():
        y = (lambda: f.conv1d(x.transpose(1, 2), w).transpose(1, 2)) if conv else (lambda: f.linear(x, w))
        return lambda: y().square().sum().backward()
    if conv:
        native = lambda: f.conv1d(x.transpose(1, 2), w).transpose(1, 2)  # noqa: E731
        block = lambda: torch.view_as_complex(f.conv1d(  # noqa: E731
            torch.view_as_real(x).flatten(-2).transpose(1, 2), _block_weight(w)).transpose(1, 2).unflatten(-1, (fan_out, 2))
            .contiguous())
    else:
        native = lambda: f.linear(x, w)  # noqa: E731
        block = lambda: torch.view_as_complex(  # noqa: E731
            f.linear(torch.view_as_real(x).flatten(-2), _block_weight(w)).unflatten(-1, (fan_out, 2)))
    return (lambda: torch.view_as_real(native()).square().sum().backward()), \
        (lambda: torch.view_as_real(block()).square().sum().backward())


def layer_variants(rows: int, length: int, gen) -> dict:
    """Forward+backward of one layer at the networks' shapes: complex (torch's kernels), the same through
    one real block product on [Re, Im] pairs (eqs. 10-11), and real layers of the same and of twice the width."""
    out = {}
    for name, fan_in, fan_out, kernel in (("linear 50->50", 50, 50, None), ("linear 50->128", 50, 128, None),
                                          ("conv 50->64 k=4", 50, 64, 4)):
        shape = (rows, fan_in) if kernel is None else (rows // length, length, fan_in)
        ksize = () if kernel is None else (kernel,)
        x = torch.randn(*shape, dtype=torch.complex64, generator=gen).requires_grad_()
        w = torch.randn(fan_out, fan_in, *ksize, dtype=torch.complex64, generator=gen).requires_grad_()
        out[f"{name}: complex"], out[f"{name}: complex as real block"] = _layer(x, w, fan_out, kernel is not None)
        for label, factor in (("real, same width", 1), ("real, twice the width", 2)):
            xr = torch.randn(*shape[:-1], factor * fan_in, generator=gen).requires_grad_()
            wr = torch.randn(factor * fan_out, factor * fan_in, *ksize, generator=gen).requires_grad_()
            out[f"{name}: {label}"] = _layer(xr, wr, factor * fan_out, kernel is not None)
    return out


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="SST2")
    parser.add_argument("--networks", nargs="+", default=["fasttext", "cnn", "transformer"])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=0.5)
    parser.add_argument("--baseline-rev", default=BASELINE_REV)
    parser.add_argument("--layers", action="store_true",
                        help="also time single layers: complex, complex through real block products, real")
    parser.add_argument("--twice-width", action="store_true",
                        help="also time PE at twice the width (D=100), the real network with as many numbers")
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
    batches, sizes = sst2_batches(args.dataset, args.batch_size, args.batches)
    header = (f"{args.dataset}: V={sizes['num_words']}, B={args.batch_size}, {len(batches)} batches of padded "
              f"length {sum(b[0].shape[1] for b in batches) / len(batches):.1f} on average, D=50, validation off, "
              f"{args.threads} thread(s), torch {torch.__version__}, before = qpnlp {args.baseline_rev}")
    print(header)
    print(f"load before: {load_start}")
    train = TrainConfig(lr=1e-3, embedding_lr=1e-3, progress=False)
    results, profiles = {}, [header]
    for network in args.networks:
        steps = {}
        variants = [("PE", "pe", None), ("complex-order", "complex_order", None),
                    ("complex-order before", "complex_order", base)]
        if args.twice_width:
            variants.append(("PE 2D", "pe", None))
        for name, embedding, package in variants:
            options = order_options(network, embedding, twice_width=name == "PE 2D", **sizes)
            if package is None:
                model = OrderClassifier(OrderClassifierConfig(**options), generator=torch.Generator().manual_seed(0))
                optimisers = Optimisers(model, train)
            else:
                model = package.models.OrderClassifier(package.models.OrderClassifierConfig(**options))
                model.load_state_dict(steps["complex-order"][0].state_dict())
                optimisers = package.training.Optimisers(model, train)
            steps[name] = (model.train(), make_step(model, optimisers, batches))
        print(f"{network}:")
        times = interleaved({name: s for name, (_, s) in steps.items()}, rounds=args.rounds,
                            min_run_time=args.min_run_time)
        times = {name: [t / len(batches) for t in ts] for name, ts in times.items()}    # per step
        results[network] = dict(
            seconds=times, summary=summary(times),
            ratios={"complex-order / PE": ratio(times, "complex-order", "PE"),
                    "complex-order before / PE": ratio(times, "complex-order before", "PE"),
                    "complex-order before / complex-order": ratio(times, "complex-order before", "complex-order"),
                    **({"complex-order / PE 2D": ratio(times, "complex-order", "PE 2D"),
                        "PE 2D / PE": ratio(times, "PE 2D", "PE")} if args.twice_width else {})})
        for name, r in results[network]["ratios"].items():
            print(f"  {name:<38} {r:6.2f}x   (median of per-round ratios)")
        if args.profile:
            for name in ("PE", "complex-order", "complex-order before"):
                profiles += [f"\n{network} {name} step, top operators by self CPU time ({len(batches)} steps):",
                             profile_table(steps[name][1], steps=1, warmup=1, top=12)]
    if args.layers:
        rows = args.batch_size * round(sum(b[0].shape[1] for b in batches) / len(batches))
        length = round(rows / args.batch_size)
        print(f"single layers, forward+backward, {args.batch_size} x {length} positions:")
        times = interleaved(layer_variants(rows, length, torch.Generator().manual_seed(0)), rounds=args.rounds,
                            min_run_time=args.min_run_time, log=None)
        results["layers"] = dict(seconds=times, summary=summary(times))
        for name, s in summary(times).items():
            print(f"  {name:<48} median {s['median'] * 1e3:7.3f} ms   min {s['min'] * 1e3:7.3f} ms")
    load_end = uptime()
    print(f"load after: {load_end}")
    if args.profile:
        Path(args.profile).write_text("\n".join(profiles) + f"\nload after: {load_end}\n")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(config=vars(args), header=header, load_start=load_start,
                                                   load_end=load_end, results=results), indent=2))


if __name__ == "__main__":
    main()
