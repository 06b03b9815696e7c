"""Shared helpers of the speed benchmarks: interleaved timing, machine load, profiles.

On a shared machine the load changes from minute to minute, so variants are
never timed one after the other: :func:`interleaved` runs every variant once
per round (``torch.utils.benchmark``, median of a ``blocked_autorange``) and
repeats the rounds, and ratios are taken within a round (the variants ran
seconds apart) before the median over rounds is reported. With one thread the
clock is the process's CPU time (:func:`clock`).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable

import torch
from torch.utils import benchmark
from torch.utils.benchmark.utils.timer import timer as benchmark_timer


def uptime() -> str:
    """The ``uptime`` line (load averages over 1, 5 and 15 minutes)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def clock(device: torch.device | str | None = None) -> Callable[[], float]:
    """The clock of the timings: this process's CPU time with one thread, else wall time.

    With one thread, CPU time is the wall time the work would take on an idle
    core, and it does not count the time the process waits while the shared
    machine's other jobs run (it still pays for what they do to the caches).
    On a GPU (``device`` of type cuda): wall time read after synchronising the
    device (``torch.utils.benchmark``'s own timer), since the work runs asynchronously.
    """
    if device is not None and torch.device(device).type == "cuda":
        return benchmark_timer
    return time.process_time if torch.get_num_threads() == 1 else time.perf_counter


def interleaved(variants: dict[str, Callable[[], object]], *, rounds: int = 5, min_run_time: float = 0.5,
                warmup: int = 2, log=print, device: torch.device | str | None = None) -> dict[str, list[float]]:
    """Seconds per call of each variant, one median per round, variants alternated within each round.

    ``device``: where the variants run (the clock of :func:`clock` for it).
    """
    for fn in variants.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(rounds):
        for name, fn in variants.items():
            measure = benchmark.Timer(stmt="fn()", globals=dict(fn=fn), num_threads=torch.get_num_threads(),
                                      timer=clock(device))
            times[name].append(measure.blocked_autorange(min_run_time=min_run_time).median)
        if log:
            log(f"  round {r + 1}/{rounds}: " + ", ".join(f"{n} {t[-1] * 1e3:.2f} ms" for n, t in times.items()))
    return times


def ratio(times: dict[str, list[float]], num: str, den: str) -> float:
    """Median over rounds of the per-round ratio ``num / den``."""
    return statistics.median(a / b for a, b in zip(times[num], times[den]))


def summary(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Median and minimum over rounds, in seconds."""
    return {name: dict(median=statistics.median(t), min=min(t)) for name, t in times.items()}


def profile_table(fn: Callable[[], object], *, steps: int = 10, top: int = 15, warmup: int = 3) -> str:
    """``torch.profiler`` table of the ``top`` operators by self CPU time over ``steps`` calls of ``fn``."""
    for _ in range(warmup):
        fn()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            fn()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top, max_name_column_width=50)


#: SST-2's training vocabulary: the vocabulary of the complex-order step benchmarks' random batches.
SST2_WORDS = 14792


def order_options(network: str, embedding: str, *, num_words: int = SST2_WORDS, num_classes: int = 2,
                  max_len: int = 60, twice_width: bool = False) -> dict:
    """``OrderClassifierConfig`` options of the step benchmarks: the reproduction's widths (D=50; hidden, filters
    and FFN at their defaults), or with ``twice_width`` every width doubled (D=100, hidden 256, 128 filters, FFN
    256): as many real numbers per word and per unit as the complex network at D=50."""
    options = dict(num_words=num_words, num_classes=num_classes, network=network, embedding=embedding, dim=50,
                   max_len=max_len)
    if twice_width:
        options.update(dim=100, hidden=256, filters=128, ffn_hidden=256)
    return options


def sst2_batches(dataset: str, batch_size: int, count: int):
    """The order-classifier benchmarks' batches: the first ``count`` training batches of epoch 1 (seed 0) of
    ``dataset``'s first split, padded per batch as the trainer pads them, and the model sizes they need
    (``num_words``, ``num_classes``, ``max_len``: :func:`order_options`' keywords)."""
    from qpnlp.data import iterate_batches, load_classification, splits
    from qpnlp.training.classification import prepare

    data = load_classification(dataset)
    prepared = prepare(data, next(iter(splits(data, seed=0))), None)
    batches = list(iterate_batches(prepared.train, batch_size, shuffle=True, seed=0, epoch=1))[:count]
    max_len = max(len(t) for part in (prepared.train, prepared.dev, prepared.test) for t in part.ids) + 1
    return batches, dict(num_words=len(prepared.vocab), num_classes=data.n_classes, max_len=max_len)
