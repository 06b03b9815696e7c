"""Training steps on a GPU: QPDN, CNM, complex-order against PE, the largest QPDN batch, Word2Fun tokens/s.

The CUDA counterpart of ``qpdn_train_step.py``, ``cnm_train_step.py``,
``complex_order_step.py`` and ``word2fun_speed.py``, self-contained so that it
runs on a machine without the benchmark data or the git history: the inputs
are random token ids of the shapes those benchmarks read from the real data
sets (stated in the output). Times are wall clock with the device
synchronised (``torch.utils.benchmark``), variants interleaved round by round
(``benchmarks/_bench.py``), ratios taken within a round.

* QPDN at d=300, V=20000, B=32, L=50, k=50: full step, forward+backward, the essential
  contraction (``born_probabilities`` forward+backward) and its three matrix products;
* CNM on TREC-QA TRAIN-ALL shapes (V=55226, d=50, k=300, windows 1-4, B=32 triplets,
  question / correct / wrong padded to 18 / 93 / 59 tokens);
* complex-order FastText, CNN, Transformer against PE and PE at twice the width, SST-2 shapes
  (V=14792, B=32, padded length 33);
* the largest QPDN batch that trains at each d of ``--fit-dims`` (batch doubled until the step
  runs out of memory), with sentences/s and peak memory;
* Word2Fun :func:`~qpnlp.word2fun.fit` with the library's defaults on the planted-drift corpus,
  on the GPU and on one CPU thread of the same machine, and on the GPU with larger batches
  (``--word2fun-batches``): tokens/s and the drift metrics.

Usage::

    python benchmarks/cuda_steps.py --json benchmarks/results/cuda/cuda_steps.json
    python benchmarks/cuda_steps.py --device cpu --quick      # a check of the script itself
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import SST2_WORDS, interleaved, order_options, ratio, summary, uptime  # noqa: E402
from qpdn_train_step import make_contraction  # noqa: E402

from qpnlp.hilbert import set_validation  # noqa: E402
from qpnlp.models import CNM, QPDN, CNMConfig, QPDNConfig  # noqa: E402
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig  # noqa: E402
from qpnlp.training import TrainConfig  # noqa: E402
from qpnlp.training.matching import MatchingConfig, triplet_loss  # noqa: E402
from qpnlp.training import Optimisers, train_step  # noqa: E402


def padded_batch(batch: int, length: int, vocab: int, gen, device, *, full: bool = False):
    """Random ids ``(B, L)`` in ``[2, vocab)`` and a mask of lengths drawn in ``[L/3, L]`` (the longest = L)."""
    ids = torch.randint(2, vocab, (batch, length), generator=gen)
    lengths = torch.randint(max(1, length // 3), length + 1, (batch,), generator=gen)
    lengths[0] = length
    mask = torch.ones_like(ids, dtype=torch.bool) if full else torch.arange(length) < lengths[:, None]
    return ids.masked_fill(~mask, 0).to(device), mask.to(device)


def qpdn_steps(args, dim: int, batch: int, device):
    """Step and forward+backward closures of QPDN (trainable weighting, uniform phases) at ``dim``, ``batch``."""
    gen = torch.Generator().manual_seed(0)
    model = QPDN(QPDNConfig(num_words=args.vocab, num_classes=2, dim=dim, num_measurements=args.outcomes,
                            weighting="trainable", phase_init="uniform"), generator=gen).to(device)
    optimisers = Optimisers(model, TrainConfig())
    ids, mask = padded_batch(batch, args.length, args.vocab, gen, device, full=True)
    labels = torch.randint(0, 2, (batch,), generator=gen).to(device)

    def fwd_bwd():
        optimisers.zero_grad()
        torch.nn.functional.cross_entropy(model(ids, mask), labels).backward()

    return (lambda: train_step(model, optimisers, ids, mask, labels)), fwd_bwd


def cnm_step(args, device):
    gen = torch.Generator().manual_seed(0)
    model = CNM(CNMConfig(num_words=55226, dim=50, num_measurements=300, windows=[1, 2, 3, 4],
                          measurement_init="orthogonal", dropout=0.1), generator=gen).to(device).train()
    optimisers = Optimisers(model, MatchingConfig(lr=0.01, embedding_lr=0.01))
    q, pos, neg = (padded_batch(args.batch, length, 55226, gen, device) for length in (18, 93, 59))

    def step():
        optimisers.zero_grad()
        triplet_loss(model(*q, *pos), model(*q, *neg), 0.1).backward()
        optimisers.step()
    return step


def order_steps(args, network: str, device) -> dict:
    """Steps of PE, complex-order and PE at twice the width (every width doubled) for one network."""
    gen = torch.Generator().manual_seed(0)
    ids, mask = padded_batch(args.batch, 33, SST2_WORDS, gen, device)
    labels = torch.randint(0, 2, (args.batch,), generator=gen).to(device)
    steps = {}
    for name, embedding, wide in (("PE", "pe", False), ("complex-order", "complex_order", False),
                                  ("PE 2D", "pe", True)):
        model = OrderClassifier(OrderClassifierConfig(**order_options(network, embedding, twice_width=wide)),
                                generator=torch.Generator().manual_seed(0))
        model = model.to(device).train()
        optimisers = Optimisers(model, TrainConfig(lr=1e-3, embedding_lr=1e-3, progress=False))
        steps[name] = lambda model=model, optimisers=optimisers: train_step(model, optimisers, ids, mask, labels)
    return steps


def _seconds_per_step(step, repeats: int = 3) -> float:
    """Wall seconds of one call of ``step`` after a warm-up call, the device synchronised."""
    step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


def largest_batch(args, dim: int, device) -> dict:
    """Double the QPDN batch from ``args.batch`` until a training step runs out of memory (or ``--max-batch``)."""
    best, batch = None, args.batch
    while batch <= args.max_batch:
        torch.cuda.empty_cache()            # the previous batch's model and tensors are gone with its closures
        torch.cuda.reset_peak_memory_stats()
        try:
            seconds = _seconds_per_step(qpdn_steps(args, dim, batch, device)[0])
        except torch.OutOfMemoryError:
            break
        best = dict(dim=dim, batch=batch, step_ms=seconds * 1e3, sentences_per_s=batch / seconds,
                    peak_gib=torch.cuda.max_memory_allocated() / 2**30)
        batch *= 2
    if best is not None:
        best["stopped"] = "out of memory" if batch <= args.max_batch else f"--max-batch {args.max_batch}"
    return best


def word2fun_run(args, device: str, batch_size: int | None = None) -> dict:
    """Word2Fun with the library's defaults (``batch_size`` pairs per step if given) on the planted-drift
    corpus: tokens/s and the drift metrics."""
    from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
    from qpnlp.evaluation.drift import DriftGrid, evaluate_grid
    from qpnlp.word2fun import TrainConfig as Word2FunConfig
    from qpnlp.word2fun import TrainingDiverged, fit

    corpus, truth = generate_drift_corpus(drift_spec(seed=0, n_tokens=args.word2fun_tokens))
    torch.set_num_threads(1)
    config = Word2FunConfig(device=device, seed=0)
    if batch_size is not None:     # the summed updates of a batch grow with it: lr scaled to keep their size
        config = dataclasses.replace(config, batch_size=batch_size,
                                     lr=config.lr * min(1.0, config.batch_size / batch_size))
    try:
        result = fit(corpus, config)
    except TrainingDiverged as err:
        return dict(device=device, batch_size=config.batch_size, lr=config.lr, diverged=str(err))
    topic = [w for tw in truth.topic_words for w in tw]
    words = list(truth.words) + topic
    v = result.vectors
    grid = DriftGrid(v.grid(words, truth.years), words, truth.years,
                     context=v.compass_vectors(topic)[None], context_words=topic)
    metrics = evaluate_grid(grid, truth)
    return dict(device=device, batch_size=config.batch_size, lr=config.lr, tokens=corpus.n_tokens, tokens_per_s=result.stats.tokens_per_s,
                seconds=result.stats.seconds, **{k: metrics[k] for k in ("spearman", "acc_after", "change_year_mae")})


def time_group(name: str, variants: dict, args, device, results: dict, pairs=()) -> None:
    print(f"{name}:", flush=True)
    times = interleaved(variants, rounds=args.rounds, min_run_time=args.min_run_time,
                        device=device)
    results[name] = dict(summary=summary(times), ratios={f"{a} / {b}": ratio(times, a, b) for a, b in pairs})
    for label, s in results[name]["summary"].items():
        print(f"  {label:<16} median {s['median'] * 1e3:8.3f} ms", flush=True)
    for label, r in results[name]["ratios"].items():
        print(f"  {label:<32} {r:6.2f}x", flush=True)


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--outcomes", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=0.3)
    parser.add_argument("--fit-dims", type=int, nargs="*", default=[300, 1000, 3000])
    parser.add_argument("--max-batch", type=int, default=2**16)
    parser.add_argument("--word2fun-tokens", type=int, default=1_000_000)
    parser.add_argument("--word2fun-batches", type=int, nargs="*", default=[65536],
                        help="also train Word2Fun on --device with these batch sizes (pairs per step; lr scaled by "
                             "8192 / batch so that a batch's summed update keeps its size)")
    parser.add_argument("--parts", nargs="+", default=["qpdn", "cnm", "order", "fit", "word2fun"])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round: a check of the script")
    parser.add_argument("--json")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    if args.quick:
        args.dim, args.vocab, args.rounds, args.min_run_time, args.word2fun_tokens = 32, 2000, 1, 0.05, 400_000
        args.fit_dims = []
    device = torch.device(args.device)
    set_validation(False)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    header = dict(device=name, torch=torch.__version__, python=platform.python_version(), load=uptime())
    print(header, flush=True)
    results: dict = dict(header=header, config=vars(args))
    if "qpdn" in args.parts:
        step, fwd_bwd = qpdn_steps(args, args.dim, args.batch, device)
        born, gemm = make_contraction(args, device)
        time_group("QPDN d=300 V=20000 B=32 L=50 k=50", {"step": step, "fwd+bwd": fwd_bwd, "born fwd+bwd": born,
                                                         "gemm": gemm}, args, device, results,
                   pairs=[("step", "fwd+bwd"), ("step", "born fwd+bwd"), ("step", "gemm")])
    if "cnm" in args.parts:
        time_group("CNM TRAIN-ALL shapes", {"step": cnm_step(args, device)}, args, device, results)
    if "order" in args.parts:
        for network in ("fasttext", "cnn", "transformer"):
            time_group(f"complex-order {network}", order_steps(args, network, device), args, device, results,
                       pairs=[("complex-order", "PE"), ("complex-order", "PE 2D")])
    if "fit" in args.parts and device.type == "cuda":
        results["largest_qpdn_batch"] = []
        for dim in args.fit_dims:
            results["largest_qpdn_batch"].append(largest_batch(args, dim, device))
            print("largest batch:", results["largest_qpdn_batch"][-1], flush=True)
    if "word2fun" in args.parts:
        results["word2fun"] = [word2fun_run(args, args.device)] + ([word2fun_run(args, "cpu")]
                                                                   if device.type == "cuda" else [])
        results["word2fun"] += [word2fun_run(args, args.device, b) for b in args.word2fun_batches]
        for row in results["word2fun"]:
            print("word2fun:", row, flush=True)
    results["load_end"] = uptime()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
