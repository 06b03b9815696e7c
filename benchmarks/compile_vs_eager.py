"""torch.compile against eager for QPDN, CNM, complex-order and the measurement: graph breaks, compile and step time.

Validation off (``qpnlp.hilbert.set_validation(False)``), 1 thread, on ``--device`` (CPU by default;
on CUDA the clock synchronises the device, and ``--mode reduce-overhead`` adds CUDA graphs). For each
case, ``torch._dynamo.explain`` counts the graphs and graph breaks of the
forward; then the eager and the compiled (``torch.compile``, inductor, default
mode) versions are timed interleaved round by round (``benchmarks/_bench.py``):

* ``measurement``  ``born_probabilities`` forward+backward, B=32, L=50, d=300, k=50;
* ``QPDN``         a training step (forward, backward, the trainer's optimisers; the model compiled);
                   d=300, V=20000, B=32, L=50, k=50;
* ``CNM``          a training step on a synthetic triplet batch (questions 16, answers 64 tokens),
                   d=50, k=300, windows 1-4;
* ``order-NET``    a training step of the complex-order classifier (NET: fasttext, cnn, rnn, transformer),
                   SST-2 shapes: V=14792, D=50, B=32, padded length 33, dropout on.

``--lengths L1 L2 ...`` (default: each case's one length above) gives the batches several padded lengths, as real batches have
(each timed step takes the next length in turn; CNM's answers take them, its questions stay at 16 tokens):
the compiled function is then specialised or made dynamic by dynamo, and the report adds how many graphs it
compiled and how often it recompiled. Each timed call then runs one step at every length, in turn, and the times
are reported per step: both variants time the same mix of lengths (one step per call would leave
``blocked_autorange``'s median to whichever lengths a round's blocks happened to cover, a different mix for the
faster variant, which fits more blocks in a round).

Usage::

    python benchmarks/compile_vs_eager.py [--cases measurement qpdn cnm] [--json out.json]
    python benchmarks/compile_vs_eager.py --cases qpdn --lengths 12 23 37 50   # batches of several lengths
    python benchmarks/compile_vs_eager.py --cases order-fasttext order-cnn order-transformer --lengths 12 23 37 50
    python benchmarks/compile_vs_eager.py --device cuda --mode default reduce-overhead   # on a GPU
    python benchmarks/compile_vs_eager.py --device cuda --mode reduce-overhead --cases order-transformer \
        --lengths 24 40 --training-settings      # under the settings the trainers compile with
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import torch
import torch._dynamo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import SST2_WORDS, interleaved, order_options, ratio, summary, uptime  # noqa: E402

from qpnlp.hilbert import set_validation  # noqa: E402
from qpnlp.measurement import born_probabilities  # noqa: E402
from qpnlp.models import CNM, QPDN, CNMConfig, QPDNConfig  # noqa: E402
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig  # noqa: E402
from qpnlp.training import TrainConfig  # noqa: E402
from qpnlp.training.compiled import compiled_steps  # noqa: E402
from qpnlp.training.matching import MatchingConfig, triplet_loss  # noqa: E402
from qpnlp.training import Optimisers  # noqa: E402


def in_turn(batches):
    """The next batch of ``batches`` at each call, round and round (one per length of ``--lengths``)."""
    turn = itertools.cycle(batches)
    return lambda: next(turn)


def every_length(step, count: int):
    """``count`` calls of ``step`` (one per length: ``step`` takes its batches in turn) as one timed call."""
    def run():
        for _ in range(count):
            step()
    return run


def measurement_case(gen, device, lengths):
    unit = lambda *shape: torch.nn.functional.normalize(  # noqa: E731
        torch.randn(*shape, dtype=torch.complex64, generator=gen), dim=-1).to(device).requires_grad_()
    vectors = unit(50, 300)
    batches = [(unit(32, n, 300), torch.softmax(torch.randn(32, n, generator=gen), -1).to(device).requires_grad_())
               for n in lengths]
    grad = torch.randn(32, 50, generator=gen).to(device)

    def make(fn):
        batch = in_turn(batches)

        def run():
            states, weights = batch()
            states.grad = weights.grad = vectors.grad = None
            fn(states, weights, vectors).backward(grad)
        return run
    return born_probabilities, (*batches[0], vectors), make


def qpdn_case(gen, device, lengths):
    model = QPDN(QPDNConfig(num_words=20000, num_classes=2, dim=300, num_measurements=50), generator=gen).to(device)
    return classifier_case(model, 20000, gen, device, lengths)


def classifier_case(model, num_words: int, gen, device, lengths):
    """A classifier's training step (the trainer's optimisers) on random ids, B=32, one batch per length."""
    batches = [torch.randint(2, num_words, (32, n), generator=gen).to(device) for n in lengths]
    batches = [(ids, torch.ones_like(ids, dtype=torch.bool)) for ids in batches]
    labels = torch.randint(0, 2, (32,), generator=gen).to(device)
    optimisers = Optimisers(model, TrainConfig())

    def make(fn):
        batch = in_turn(batches)

        def run():
            optimisers.zero_grad()
            torch.nn.functional.cross_entropy(fn(*batch()), labels).backward()
            optimisers.step()
        return run
    return model, batches[0], make


def cnm_case(gen, device, lengths):
    model = CNM(CNMConfig(num_words=20000, dim=50, num_measurements=300, measurement_init="orthogonal"),
                generator=gen).to(device).train()
    q = torch.randint(2, 20000, (32, 16), generator=gen).to(device)
    q_mask = torch.ones_like(q, dtype=torch.bool)
    answers = [[torch.randint(2, 20000, (32, n), generator=gen).to(device) for _ in range(2)] for n in lengths]
    batches = [[(t, torch.ones_like(t, dtype=torch.bool)) for t in pair] for pair in answers]
    optimisers = Optimisers(model, MatchingConfig())

    def make(fn):
        batch = in_turn(batches)

        def run():
            (a, a_mask), (n, n_mask) = batch()
            optimisers.zero_grad()
            triplet_loss(fn(q, q_mask, a, a_mask), fn(q, q_mask, n, n_mask)).backward()
            optimisers.step()
        return run
    return model, (q, q_mask, *batches[0][0]), make


def order_case(network):
    """The complex-order classifier's training step for one network, SST-2's vocabulary size, dropout on."""
    def case(gen, device, lengths):
        config = OrderClassifierConfig(**order_options(network, "complex_order", max_len=max(lengths) + 1))
        model = OrderClassifier(config, generator=gen).to(device).train()
        return classifier_case(model, SST2_WORDS, gen, device, lengths)
    return case


#: The complex-order classifier's networks, one case each (``order-NET``).
ORDER_NETWORKS = ("fasttext", "cnn", "rnn", "transformer")
CASES = {"measurement": measurement_case, "qpdn": qpdn_case, "cnm": cnm_case,
         **{f"order-{net}": order_case(net) for net in ORDER_NETWORKS}}
#: Each case's padded length when ``--lengths`` is not given (CNM: its answers').
DEFAULT_LENGTHS = {"measurement": [50], "qpdn": [50], "cnm": [64], **{f"order-{net}": [33] for net in ORDER_NETWORKS}}


def explain(fn, inputs) -> tuple[int | None, int | None, list[str]]:
    """Dynamo's graphs and graph breaks of ``fn(*inputs)`` and the breaks' reasons; ``None`` counts where the
    explanation itself fails (its fake-tensor pass rejected a ``view_as_complex`` of the complex-order CNN that
    compiling ran through, until the [Re, Im] helpers stopped viewing inside compiled code)."""
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(fn)(*inputs)
    except Exception as error:  # noqa: BLE001 -- any failure of the explanation is reported, not raised
        return None, None, [f"explain failed: {str(error).splitlines()[0][:160]}"]
    return (explained.graph_count, explained.graph_break_count,
            sorted({str(b.reason).splitlines()[0] for b in explained.break_reasons}))


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--mode", nargs="+", default=["default"], help="torch.compile modes, each timed against eager")
    parser.add_argument("--lengths", type=int, nargs="+",
                        help="padded batch lengths, taken in turn by the timed steps (CNM: the answers' lengths; "
                             "default: 50, CNM's answers 64)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=0.5)
    parser.add_argument("--training-settings", action="store_true",
                        help="compile and time under the trainers' settings of a compiled epoch "
                             "(qpnlp.training.compiled.compiled_steps: inductor's fallback_random on)")
    parser.add_argument("--json")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    set_validation(False)
    load_start = uptime()
    device = torch.device(args.device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"torch.compile (inductor, modes {args.mode}) vs eager, validation off, {args.threads} thread(s), {where}, "
          f"torch {torch.__version__}\nload before: {load_start}")
    results = {}
    for name, mode in [(n, m) for n in args.cases for m in args.mode]:
        lengths = args.lengths or DEFAULT_LENGTHS[name]
        fn, inputs, make = CASES[name](torch.Generator().manual_seed(0), device, lengths)
        graphs, breaks, reasons = explain(fn, inputs)
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        compiled = torch.compile(fn, mode=mode)
        name = name if len(args.mode) == 1 else f"{name} ({mode})"
        # every timed call: one step per length, so both variants time the same steps
        eager_step, compiled_step = every_length(make(fn), len(lengths)), every_length(make(compiled), len(lengths))
        # --training-settings: compile and time under the trainers' own settings of a compiled epoch
        settings = compiled_steps(mode) if args.training_settings else contextlib.nullcontext()
        with settings:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                compiled_step()                  # the first pass over the lengths compiles what they need
                if device.type == "cuda":
                    torch.cuda.synchronize()
                compile_seconds = time.perf_counter() - start
            times = interleaved({"eager": eager_step, "compiled": compiled_step}, rounds=args.rounds,
                                min_run_time=args.min_run_time, log=None, device=device)
        times = {variant: [t / len(lengths) for t in ts] for variant, ts in times.items()}   # per step
        compiled_graphs = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
        results[name] = dict(graphs=graphs, graph_breaks=breaks,
                             break_reasons=reasons, lengths=lengths, compiled_graphs=compiled_graphs,
                             compile_seconds=compile_seconds, seconds=times,
                             summary=summary(times), compiled_over_eager=ratio(times, "compiled", "eager"),
                             compile_warnings=sorted({str(w.message).splitlines()[0][:160] for w in caught}))
        r = results[name]
        print(f"{name}: dynamo graphs {r['graphs']}, graph breaks {r['graph_breaks']} {reasons or ''}; lengths "
              f"{lengths}: {compiled_graphs} graphs compiled, first pass {compile_seconds:.1f} s; eager "
              f"{r['summary']['eager']['median'] * 1e3:.2f} ms, compiled {r['summary']['compiled']['median'] * 1e3:.2f} "
              f"ms: compiled/eager {r['compiled_over_eager']:.2f}x")
        for message in r["compile_warnings"]:
            print(f"  warning while compiling: {message}")
    load_end = uptime()
    print(f"load after: {load_end}")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(config=vars(args), load_start=load_start, load_end=load_end,
                                                   results=results), indent=2))


if __name__ == "__main__":
    main()
