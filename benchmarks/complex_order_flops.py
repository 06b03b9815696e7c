r"""Complex-order classifiers (FastText, CNN, Transformer): floating-point work of one training step against real PE.

A floor under the step-time ratio of ``benchmarks/complex_order_step.py`` (issue 22's 1.2x target): the same
models (D=50, the reproduction's widths, validation off), the same ``--batches`` SST-2 training batches, and for
each step the work counted op by op while it runs (the counts do not depend on the machine or its load):

* ``matmul``: real floating-point operations of the matrix products and convolutions (forward + backward),
  from ``torch.utils.flop_counter.FlopCounterMode``, which counts ``2 m n k`` for an ``(m, k) @ (k, n)``
  product whatever its dtype. A complex multiply-add is four real multiplies and four real adds (8 real
  flops against 2), so every product with a complex operand is counted 4 times over here (:func:`_scaled`);
  a complex layer through a real block product (``ComplexConv1d``) is already a real op of 4x the work.
* ``elements``: real numbers written by every other op (element-wise maths, copies, reductions, gathers;
  views not counted, a complex element counted as two), the memory-bound part of the step;
* ``ops``: aten ops dispatched (each costs a few microseconds of overhead on the CPU at these small shapes);
* ``param MB``: bytes of the parameters a step reads: the dense parameters whole, of each sparse embedding
  table only the rows of the batch (the rows of its sparse gradient).

The optimiser step (SparseAdam on the tables, Adam on the rest) is counted apart (it has no products). ``PE 2D``
is PE with every width doubled (as many real numbers per word and unit as the complex network).

With ``--times`` (the ``--json`` output of ``complex_order_step.py``) the measured step-time ratio
complex-order / PE is printed beside the counted ratios, with a floor under it:
:math:`1 + \Delta F / (R\, T_{PE})`, :math:`\Delta F` the extra matmul flops of complex-order,
:math:`T_{PE}` the measured PE step and :math:`R` the best float32 matmul rate measured here (one thread,
CPU time, :func:`matmul_rate`): the step ratio if the extra products ran at that rate and everything else
cost no more than in PE (the ``elements`` and ``ops`` columns show it costs more). The 1.2x target needs
:math:`R \ge \Delta F / (0.2\, T_{PE})` (the ``GFLOP/s for 1.2x`` column).

Usage::

    QPNLP_DATA=/work/shared/data python benchmarks/complex_order_flops.py
        --times benchmarks/results/speed/complex_order_step_input_checks.json
        --out benchmarks/results/speed/complex_order_flops.txt --json benchmarks/results/speed/complex_order_flops.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import torch
from torch.utils import benchmark
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode, flop_registry

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import clock, order_options, sst2_batches, uptime  # noqa: E402

from qpnlp.hilbert import set_validation  # noqa: E402
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig  # noqa: E402
from qpnlp.training import Optimisers, TrainConfig, train_step  # noqa: E402

VARIANTS = (("PE", "pe", False), ("complex-order", "complex_order", False), ("PE 2D", "pe", True))


def _is_complex(t) -> bool:
    return isinstance(t, torch.Tensor) and t.is_complex()


def _scaled(formula, tally: Counter):
    """``formula`` (a registered flop formula) times 4 when an operand or the result is complex (see above);
    the complex products' real flops are also added to ``tally["complex"]``."""
    def count(*args, out_val=None, **kwargs):
        flops = formula(*args, out_val=out_val, **kwargs)
        if any(_is_complex(t) for t in tree_leaves((args, kwargs, out_val))):
            tally["complex"] += 4 * flops
            return 4 * flops
        return flops
    count._get_raw = True                   # FlopCounterMode passes the tensors, not their shapes
    return count


def flop_counter(tally: Counter) -> FlopCounterMode:
    """``FlopCounterMode`` with every formula counting real flops (complex products 4x, also in ``tally``)."""
    return FlopCounterMode(display=False, custom_mapping={op: _scaled(f, tally) for op, f in flop_registry.items()})


def _numbers(t: torch.Tensor) -> int:
    """Real numbers held by ``t``: a sparse tensor's values only, a complex element as two."""
    n = t._values().numel() if t.is_sparse else t.numel()
    return 2 * n if t.is_complex() else n


class OpCounter(TorchDispatchMode):
    """Counts the aten ops dispatched and the real numbers written by those that are not products."""

    def __init__(self) -> None:
        super().__init__()
        self.ops, self.elements = 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        tensors = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        if tensors:
            self.ops += 1
            writes = all(r.alias_info is None or r.alias_info.is_write for r in func._schema.returns)
            if writes and func._overloadpacket not in flop_registry:
                self.elements += sum(_numbers(t) for t in tensors)
        return out


def _param_bytes(model: torch.nn.Module) -> int:
    """Bytes of the parameters the step read: dense ones whole, sparse tables' rows of the batch (after backward)."""
    total = 0
    for p in model.parameters():
        g = p.grad
        if g is not None and g.is_sparse:
            rows = g.coalesce().indices().shape[1]
            total += rows * p[0].numel() * p.element_size()
        elif p.requires_grad:
            total += p.numel() * p.element_size()
    return total


def _counted(fn) -> dict:
    """Matmul flops (complex ones apart), elements, ops of one call of ``fn``."""
    tally = Counter()
    with flop_counter(tally) as flops, OpCounter() as ops:
        fn()
    return dict(matmul=flops.get_total_flops(), complex_matmul=tally["complex"], ops=ops.ops, elements=ops.elements)


def count_steps(model, optimisers, batches) -> dict:
    """Per-step means over ``batches`` of the forward+backward and optimiser counts, and of the parameter bytes.

    One uncounted step first, as the timings warm up: the optimisers' first step allocates their state."""
    ids, mask, labels = batches[0]
    train_step(model, optimisers, ids, mask, labels)
    totals = Counter()
    for ids, mask, labels in batches:
        optimisers.zero_grad()

        def forward_backward():
            torch.nn.functional.cross_entropy(model(ids, mask), labels).backward()
        for key, value in _counted(forward_backward).items():
            totals[f"step {key}"] += value
        totals["param bytes"] += _param_bytes(model)
        for key, value in _counted(optimisers.step).items():
            totals[f"optimiser {key}"] += value
    return {key: value / len(batches) for key, value in totals.items()}


def count_network(network: str, batches, sizes: dict) -> dict:
    """Counts of every variant of ``network`` (built as ``complex_order_step.py`` builds them)."""
    train = TrainConfig(lr=1e-3, embedding_lr=1e-3, progress=False)
    out = {}
    for name, embedding, twice in VARIANTS:
        options = order_options(network, embedding, twice_width=twice, **sizes)
        model = OrderClassifier(OrderClassifierConfig(**options), generator=torch.Generator().manual_seed(0))
        out[name] = count_steps(model.train(), Optimisers(model, train), batches)
    return out


def matmul_rate(rows: int) -> dict[str, float]:
    """Real flops per second of float32 ``(rows, k) @ (k, n)`` products at the networks' widths (one thread,
    CPU time, median of a ``blocked_autorange``); the best of them is the ``R`` of the floor."""
    torch.set_num_threads(1)
    rates = {}
    for k, n in ((50, 50), (50, 128), (128, 50), (100, 256)):
        a, b = torch.randn(rows, k), torch.randn(k, n)
        timer = benchmark.Timer(stmt="a @ b", globals=dict(a=a, b=b), num_threads=1, timer=clock())
        rates[f"({rows}, {k}) @ ({k}, {n})"] = 2 * rows * k * n / timer.blocked_autorange(min_run_time=0.5).median
    return rates


def floors(counts: dict, times: dict, rate: float) -> list[str]:
    """Lines of the floor table: measured PE step, measured ratio, the floor, the rate 1.2x would need."""
    rows = [f"floor under the step ratio at R = {rate / 1e9:.0f} GFLOP/s (see the module docstring)",
            f"{'network':<12} {'PE step ms':>10} {'extra MFLOP':>11} {'floor':>6} {'measured':>8} "
            f"{'GFLOP/s for 1.2x':>16}"]
    for network, c in counts.items():
        if network not in times:
            continue
        t_pe = times[network]["summary"]["PE"]["median"]
        extra = c["complex-order"]["step matmul"] - c["PE"]["step matmul"]
        rows.append(f"{network:<12} {t_pe * 1e3:10.2f} {extra / 1e6:11.1f} {1 + extra / (rate * t_pe):6.2f} "
                    f"{times[network]['ratios']['complex-order / PE']:8.2f} {extra / (0.2 * t_pe) / 1e9:16.0f}")
    return rows


def table(counts: dict, times: dict | None) -> list[str]:
    """Lines of the result tables (per step; ratios complex-order / PE)."""
    rows = ["per training step (forward + backward), complex-order (CO) against PE; matmul in real MFLOP",
            f"{'network':<12} {'PE':>9} {'CO':>9} {'CO/PE':>6} {'PE 2D':>9} {'CO/PE2D':>7}   "
            f"{'elem PE':>9} {'elem CO':>9} {'CO/PE':>6}   {'ops PE':>6} {'ops CO':>6} {'CO/PE':>6}   "
            f"{'time CO/PE':>10}"]
    for network, c in counts.items():
        pe, co, pe2 = c["PE"], c["complex-order"], c["PE 2D"]
        measured = times.get(network, {}).get("ratios", {}).get("complex-order / PE") if times else None
        rows.append(f"{network:<12} {pe['step matmul'] / 1e6:9.2f} {co['step matmul'] / 1e6:9.2f} "
                    f"{co['step matmul'] / pe['step matmul']:6.2f} {pe2['step matmul'] / 1e6:9.2f} "
                    f"{co['step matmul'] / pe2['step matmul']:7.2f}   "
                    f"{pe['step elements'] / 1e6:8.2f}M {co['step elements'] / 1e6:8.2f}M "
                    f"{co['step elements'] / pe['step elements']:6.2f}   {pe['step ops']:6.0f} {co['step ops']:6.0f} "
                    f"{co['step ops'] / pe['step ops']:6.2f}   "
                    + (f"{measured:9.2f}x" if measured else f"{'-':>10}"))
    rows += ["", "optimiser step and parameters read per step",
             f"{'network':<12} {'opt elem PE':>11} {'opt elem CO':>11} {'opt ops PE':>10} {'opt ops CO':>10}   "
             f"{'param MB PE':>11} {'param MB CO':>11}"]
    for network, c in counts.items():
        pe, co = c["PE"], c["complex-order"]
        rows.append(f"{network:<12} {pe['optimiser elements'] / 1e6:10.3f}M {co['optimiser elements'] / 1e6:10.3f}M "
                    f"{pe['optimiser ops']:10.0f} {co['optimiser ops']:10.0f}   "
                    f"{pe['param bytes'] / 1e6:11.3f} {co['param bytes'] / 1e6:11.3f}")
    return rows


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="SST2")
    parser.add_argument("--networks", nargs="+", default=["fasttext", "cnn", "transformer"])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--times", metavar="JSON", help="complex_order_step.py's --json output: measured ratios")
    parser.add_argument("--out", metavar="TXT")
    parser.add_argument("--json")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    set_validation(False)
    batches, sizes = sst2_batches(args.dataset, args.batch_size, args.batches)
    times = json.loads(Path(args.times).read_text())["results"] if args.times else None
    header = (f"{args.dataset}: V={sizes['num_words']}, B={args.batch_size}, {len(batches)} batches of padded length "
              f"{sum(b[0].shape[1] for b in batches) / len(batches):.1f} on average, D=50, torch {torch.__version__}"
              + (f"; measured times: {args.times}" if args.times else ""))
    counts = {network: count_network(network, batches, sizes) for network in args.networks}
    lines = [header, f"load: {uptime()}", ""] + table(counts, times)
    rates = None
    if times:
        rows = args.batch_size * round(sum(b[0].shape[1] for b in batches) / len(batches))
        rates = matmul_rate(rows)
        lines += ["", "float32 matmul rates (one thread, CPU time): "
                  + ", ".join(f"{k} {r / 1e9:.0f} GFLOP/s" for k, r in rates.items()), ""]
        lines += floors(counts, times, max(rates.values()))
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(config=vars(args), header=header, counts=counts, matmul_rates=rates),
                                                   indent=2))


if __name__ == "__main__":
    main()
