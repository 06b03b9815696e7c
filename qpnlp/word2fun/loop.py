"""Word2Fun's SGD loop: :func:`train_source`, what it records (:class:`TrainStats`) and its helpers.

The loop is minibatch SGD without autograd: batches hold whole centre tokens
with all their pairs, and come in runs of consecutive batches of one chunk
(:func:`~qpnlp.data.skipgram.iter_centre_runs`; the compiled step trains a
whole run in one call, :mod:`~qpnlp.word2fun.fused_runs`),
:math:`f(u, t)` is computed once per centre token and its gradient written
out (:func:`~qpnlp.word2fun.sgd.centre_sgd_step`), and only the rows a batch
reads are updated.  Its settings are a
:class:`~qpnlp.word2fun.config.TrainConfig`; its tokens come from a source of
:mod:`qpnlp.word2fun.sources` (in memory, or streamed from disk in chunks),
one pass per epoch.  The learning rate of a batch decays linearly with the
fraction of the training tokens done before it,

.. math:: \\eta = \\eta_0 \\max\\bigl(10^{-4}, 1 - (e + x) / E\\bigr)

in epoch :math:`e` (from 0) of :math:`E`, :math:`x` the fraction of the
epoch's tokens done, whichever the source.  An epoch whose mean loss is NaN or
infinite, or after which a parameter is, or is past the classifiers' run-away
limit (``qpnlp._checks.runaway_limit``, 1.8e16 in float32; the loss of a batch is
computed before its update, so the last update of an epoch shows in no loss), raises
:class:`~qpnlp.word2fun.TrainingDiverged`; an epoch that drew no skip-gram pair
at all (``no_pairs``) raises ``ValueError``: it would leave the vectors as
initialised.

**The loss.**  The batches' summed losses are added up where they are computed, in a
float64 tensor on the model's device (float32 on MPS; ``_loss_sum``), and read on the
host once per epoch, for its mean loss and the divergence check: no step waits for the
device to tell it its loss.

**Threads.**  On the CPU every worker runs with one torch (OpenMP) thread
(and its compiled step with ``TrainConfig.step_threads``, the same updates on any number):
intra-op threads of tiny operations only add barriers, and when the machine
is shared a descheduled OpenMP thread leaves the others spinning at every
operation (the collapse under load); the count is put back after the training
(``qpnlp._threads.torch_threads``, also when trainings of several threads
overlap).  The pairs are drawn by a thread of their own
(``qpnlp.word2fun._hogwild.prefetch``), up to an epoch ahead of the
training, from a copy of the pair generator whose state the caller's generator
takes at each epoch's end (``_one_epoch``; a checkpoint saves it): the
same batches in the same order as drawn in the training thread, so one worker
trains as deterministically as before, while the draws (about a tenth of its
time) run on another core.  ``workers`` > 1 trains with that many hogwild
threads fed by that stream or, with ``parallel="replicas"``, with as many
threads on copies of the model that train their parts of each segment of
the stream and merge their updates (``qpnlp.word2fun._replicas``): the same
model in every run.

**Several processes.**  With a :class:`~qpnlp.word2fun.distributed.ParameterSync`
the updates of all processes are merged every ``sync_every`` batches
(:mod:`qpnlp.word2fun.distributed`).
"""

from __future__ import annotations

import copy
import math
import threading
import time as _time
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from qpnlp._checks import FLOAT32_MAX, checked_copy, runaway_limit
from qpnlp._device import resolve_device, with_current_index
from qpnlp._errors import TrainingDiverged
from qpnlp._threads import torch_threads
from qpnlp.data.skipgram import CentreRun, NegativeSampler, iter_centre_runs, keep_probabilities
from qpnlp.word2fun._hogwild import prefetch, run_workers
from qpnlp.word2fun._replicas import Replicas
from qpnlp.word2fun._segments import Segments, split_runs
from qpnlp.word2fun.config import TrainConfig, check_penalty_family, resolve_penalty, step_threads, word_weights
from qpnlp.word2fun.distributed import fail_together
from qpnlp.word2fun.fused_runs import learning_rates, run_steps
from qpnlp.word2fun.fused_step import FusedStep
from qpnlp.word2fun.sgd import batch_step
from qpnlp.word2fun.step_sizes import STEP_CENTRE_LR, step_bounds
from qpnlp.word2fun.sources import ArraySource

__all__ = ["TrainStats", "train_source"]


@dataclass
class TrainStats:
    """What a training run did: pairs, tokens, wall time, tokens/s and mean loss per epoch.

    In a distributed run ``tokens`` and ``pairs`` count all processes and
    ``seconds`` is the slowest process's time, so ``tokens_per_s`` is the
    throughput of the whole job.

    Parameters
    ----------
    tokens : int, default 0
        Corpus tokens processed (those in the vocabulary: words below ``min_count`` are not read), times the epochs
        (all processes).
    pairs : int, default 0
        (centre, context) pairs trained on (all processes).
    seconds : float, default 0.0
        Wall time of the epochs (the slowest process's), ``on_epoch`` calls and compilation left out.
    epoch_loss : list of float, default []
        The mean loss per pair of each epoch.
    compile_seconds : float, default 0.0
        Seconds spent before the first epoch compiling the step (numba's first run after an install; loading it
        from the cache otherwise); not in ``seconds``.
    """

    tokens: int = 0
    pairs: int = 0
    seconds: float = 0.0
    epoch_loss: list = field(default_factory=list)
    compile_seconds: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


#: The ``phase`` of :func:`train_source` that pre-trains the static model of ``compass="frozen"``.
COMPASS_PHASE = "compass pretraining"


def diverged(epoch: int, loss: float, cfg: TrainConfig, parameters: bool = False,
             phase: str = "training") -> TrainingDiverged:
    """The error for an epoch whose mean loss became NaN or infinite, or (``parameters``) after which a parameter
    is NaN, infinite or run away (``_all_finite``) while its mean loss was finite (``epoch`` counts from 1);
    ``phase`` names the run (:data:`COMPASS_PHASE`: the compass's, of ``cfg.epochs = compass_epochs``)."""
    what = (f"a parameter became NaN or infinite, or so large that a product of two nears overflow (above "
            f"{runaway_limit(FLOAT32_MAX):.2g} in float32); the mean loss before the epoch's last update was {loss}"
            if parameters else f"mean loss {loss}")
    return TrainingDiverged(
        f"Word2Fun {phase} diverged in epoch {epoch} of {cfg.epochs} ({what}): the summed updates "
        f"of a batch are too large for lr {cfg.lr} with {cfg.batch_size} pairs per batch and negative_weight "
        f"{cfg.negative_weight}; lower lr or batch_size (defaults {TrainConfig.lr} and {TrainConfig.batch_size}, "
        f"with negative_weight {TrainConfig.negative_weight}: the negative steps grow with it)", epoch=epoch, loss=loss)


def no_pairs(epoch: int, tokens: int, cfg: TrainConfig) -> ValueError:
    """The error for an epoch that drew no skip-gram pair (over all processes; ``epoch`` counts from 1).

    A pair is two kept tokens of one document at most ``window`` apart. Subsampling keeps a token of a word of
    relative frequency :math:`f \\gg s` (``sample``) with probability about :math:`\\sqrt{s / f}`
    (:func:`~qpnlp.data.skipgram.keep_probabilities`): in a corpus of a few words, each frequent, it keeps almost
    none (10 documents of the same 6 words: :math:`f = 1/6`, about 8% kept at the default ``s = 10^{-3}``).
    """
    one_token = "the documents hold at most one token of the vocabulary each (a pair is two tokens of one document)"
    if cfg.sample > 0:
        cause = (f"subsampling (sample {cfg.sample:g}) dropped almost every token, as it does in a small corpus, "
                 f"where every word is frequent (train with sample=0, --sample 0 on the command line, or on a larger "
                 f"corpus), or {one_token}")
    else:
        cause = one_token
    return ValueError(f"Word2Fun drew no skip-gram pairs in epoch {epoch} of {cfg.epochs} from {tokens} tokens, so "
                      f"training would leave the vectors as initialised: {cause}")


def _all_finite(model) -> bool:
    """Whether every parameter of ``model`` is finite and not run away (at most
    ``qpnlp._checks.runaway_limit`` of its dtype in magnitude, the classifiers' rule: 1.8e16 in float32,
    where a dot product of two overflows): one pass over the parameters, one read on the host."""
    flags = [p.abs().amax() <= runaway_limit(torch.finfo(p.dtype).max) for p in model.parameters() if p.numel()]
    return bool(torch.stack(flags).all()) if flags else True


def _loss_sum(model) -> torch.Tensor:
    """A zero to add the batches' losses to, on the model's device: float64 (the sum of the losses as Python
    floats, bit for bit), float32 on MPS, which has no float64."""
    device = model.compass.weight.device
    return torch.zeros((), dtype=torch.float32 if device.type == "mps" else torch.float64, device=device)


def _train_batches(model, runs, sampler, gen, cfg, epoch, lock=None, weights=(None, None),
                   progress=None) -> tuple[torch.Tensor, int]:
    """Run the SGD step (:func:`~qpnlp.word2fun.sgd.batch_step`) over the batches of ``runs`` (an iterator of
    :class:`~qpnlp.data.skipgram.CentreRun`, shared under ``lock`` by hogwild workers): the sum of the batches'
    losses (a tensor on the model's device, ``_loss_sum``) and their pairs.

    The learning rate of a batch decays with the epoch's progress before it;
    ``progress`` (a one-element list) carries it across calls on the same
    epoch (the segments between two synchronisations of a distributed run).
    A compiled step (:class:`~qpnlp.word2fun.fused_step.FusedStep`) trains each
    run in one call (:func:`~qpnlp.word2fun.fused_runs.run_steps`), the torch
    ops batch after batch: the same updates.
    """
    total, nb = _loss_sum(model), 0
    done = progress[0] if progress is not None else 0.0
    step = _run_step(model, cfg)
    while True:
        if lock is None:
            run = next(runs, None)
        else:
            with lock:
                run = next(runs, None)
        if run is None:
            return total, nb
        lrs = learning_rates(cfg.lr, cfg.epochs, epoch, done, run.progress)
        if isinstance(step, FusedStep):
            total = torch.tensor(run_steps(step, run, sampler, gen, cfg.negatives, lrs,
                                           (*weights, cfg.roughness_penalty), float(total)), dtype=total.dtype)
        else:
            total = _train_run(step, run, sampler, gen, cfg, lrs, weights, total)
        nb += int((run.pairs[:, 1] - run.pairs[:, 0]).sum())
        done = float(run.progress[-1])
        if progress is not None:
            progress[0] = done


def _train_run(step, run: CentreRun, sampler, gen, cfg, lrs: list[float], weights, total) -> torch.Tensor:
    """The batches of ``run`` one after another with ``step`` (torch ops) at their learning rates ``lrs``
    (:func:`~qpnlp.word2fun.fused_runs.learning_rates`); ``total`` plus their losses."""
    word_penalty, word_lr = weights
    for batch, lr in zip(run.batches(), lrs):
        B = batch.context.shape[0]
        shape = (cfg.negatives,) if cfg.shared_negatives else (B, cfg.negatives)
        neg = sampler.sample(shape, generator=gen)
        lam = cfg.roughness_penalty if word_penalty is None else word_penalty[batch.words]
        rl = None if word_lr is None else word_lr[batch.words]
        total += step(batch.words, batch.time, batch.pair_centre, batch.context, neg, lr, lam, rl)  # on the device
    return total


def _train_batches_threaded(model, runs, sampler, gens, cfg, epoch, weights=(None, None),
                            progress=None) -> tuple[torch.Tensor, int]:
    """Hogwild: ``len(gens)`` threads share the model and the stream ``runs`` (taken under a lock; drawn ahead by
    the thread that ``_train_checked`` starts), started and awaited by
    :func:`~qpnlp.word2fun._hogwild.run_workers`; once a worker has failed the others take no more runs.

    Like word2vec's threads, concurrent updates of the same rows are not
    synchronised (an update may occasionally be lost), so results vary from
    run to run.
    """
    lock, stop = threading.Lock(), threading.Event()
    last = [0.0 if progress is None else progress[0]]
    stream = _noting_progress(_until(stop, runs), last)

    def train(w):
        return _train_batches(model, stream, sampler, gens[w], cfg, epoch, lock, weights,
                              None if progress is None else [progress[0]])

    out = run_workers(train, len(gens), stop)
    for r in out:
        if isinstance(r, BaseException):
            raise r
    if progress is not None:
        progress[0] = max(progress[0], last[0])
    return sum((t for t, _ in out), _loss_sum(model)), sum(n for _, n in out)


def _until(stop: threading.Event, runs):
    """``runs`` until ``stop`` is set."""
    for run in runs:
        if stop.is_set():
            return
        yield run


def _noting_progress(runs, last: list[float]):
    """``runs``, each noting in ``last[0]`` the fraction of the epoch done at its end as it goes by."""
    for run in runs:
        last[0] = float(run.progress[-1])
        yield run


def _epoch_runs(source, cfg, rng, keep, dev):
    """The epoch's runs of batches over all chunks of ``source``, ``progress`` as a fraction of the epoch's tokens."""
    total = max(source.n_tokens, 1)
    offset = 0
    for tokens, doc_ids, doc_times in source.chunks(rng):
        runs = iter_centre_runs(tokens, doc_ids, doc_times, keep_prob=keep, window=cfg.window,
                                batch_size=cfg.batch_size, rng=rng, chunk_tokens=cfg.chunk_tokens, device=dev)
        n = int(tokens.shape[0])
        if isinstance(source, ArraySource):  # one chunk: progress as iter_centre_runs counts it
            yield from runs
        else:
            for run in runs:
                yield run.with_progress((offset + run.progress * n) / total)
        offset += n


def train_source(model, source, counts: np.ndarray, config: TrainConfig | None = None, *, progress: bool = False,
                 on_epoch=None, start_epoch: int = 0, rng: np.random.Generator | None = None,
                 generators: list | None = None, sync=None, stats: TrainStats | None = None,
                 phase: str = "training") -> TrainStats:
    """Train ``model`` by skip-gram with negative sampling on the chunks of ``source``, epochs ``start_epoch..``.

    See :func:`~qpnlp.word2fun.train.train_word2fun` for the schedule and the
    negatives.

    Parameters
    ----------
    model : Word2Fun
        The model, trained in place (moved to ``config.device``); its time scale must cover the source's times.
    source : ArraySource or StreamSource
        The tokens of one epoch, in chunks (:mod:`~qpnlp.word2fun.sources`; this process's shard in a distributed
        run).
    counts : numpy.ndarray
        (V,) word counts: subsampling, the unigram^0.75 negatives and the per-word weights
        (:func:`~qpnlp.word2fun.config.word_weights`).
    config : qpnlp.word2fun.config.TrainConfig, optional
        The settings; None: ``TrainConfig()``. A ``roughness_penalty`` of None becomes the model's default
        (:func:`~qpnlp.word2fun.config.resolve_penalty`; a positive one needs families II-IV, ValueError).
    progress : bool, default False
        Show a tqdm bar over the tokens of the epochs left.
    on_epoch : callable, optional
        ``on_epoch(epoch, stats)``, called after each epoch (after the synchronisation; its time is not
        counted), ``epoch`` counted from 0.
    start_epoch : int, default 0
        The first epoch to train (a resumed run's); the learning rate decays as if the earlier ones were trained.
    rng : numpy.random.Generator, optional
        Draws the pairs and the subsampling; None: seeded with ``config.seed``. A copy draws them, on the drawing
        thread, up to an epoch ahead; ``rng`` takes the copy's state at each epoch's end (before ``on_epoch``), so
        what an ``on_epoch`` draws from it does not reach later epochs.
    generators : list of torch.Generator, optional
        Draw the negatives, one per hogwild worker, on the training device; None: seeded from ``config.seed``
        (``negative_seeds`` of the first process).
    sync : qpnlp.word2fun.distributed.ParameterSync, optional
        Sums the processes' updates in a distributed run (:class:`~qpnlp.word2fun.distributed.ParameterSync`);
        None: a single process.
    stats : TrainStats, optional
        The statistics to add the epochs to (a resumed run's); None: new ones.
    phase : str, default "training"
        What the run is, named by a divergence error (``diverged``): ``COMPASS_PHASE`` for the static
        pre-training of ``compass="frozen"``.

    Returns
    -------
    TrainStats
        ``stats``, with the epochs trained here added.
    """
    checked = TrainConfig() if config is None else checked_copy(config)   # a field set since it was made: checked
    return _train_checked(model, source, counts, checked, progress=progress, on_epoch=on_epoch,
                          start_epoch=start_epoch, rng=rng, generators=generators, sync=sync, stats=stats, phase=phase)


def _train_checked(model, source, counts: np.ndarray, config: TrainConfig, *, progress: bool = False, on_epoch=None,
                   start_epoch: int = 0, rng: np.random.Generator | None = None, generators: list | None = None,
                   sync=None, stats: TrainStats | None = None, phase: str = "training") -> TrainStats:
    """:func:`train_source` for a ``config`` checked and copied already (``fit``'s own copy: checked once)."""
    with fail_together("preparing its training", together=sync is not None):
        cfg = _resolved_config(config, model)
        _check_frozen(model)
        dev = with_current_index(resolve_device(cfg.device))   # "cuda" is cuda:0 in the threads it starts
        model.to(dev)
        rng = rng if rng is not None else np.random.default_rng(cfg.seed)
        gens = generators or _default_generators(cfg, dev)
        keep = keep_probabilities(counts, cfg.sample)
        sampler = NegativeSampler(counts, 0.75, device=dev)
        weights = word_weights(counts, cfg, dev, model.dtype)
        stats = stats if stats is not None else TrainStats()
        stats.compile_seconds += _compile_step(model, cfg)  # before the progress bar's clock and the epochs' clock
        replicas = Replicas(model, _worker_count(cfg), step_bounds(model)) if _replicated(cfg) else None
    bar = _progress_bar((cfg.epochs - start_epoch) * source.n_tokens, model.family) if progress else None
    stop = threading.Event()
    stream, produced = prefetch(_epochs_ahead(source, cfg, rng, keep, dev, start_epoch), stop)
    try:
        with torch_threads(1 if dev.type == "cpu" else 0):  # one OpenMP thread per worker (module docstring)
            for epoch in range(start_epoch, cfg.epochs):
                t0 = _time.perf_counter()
                total, nb = _train_epoch(model, _one_epoch(stream, rng), sampler, gens, cfg, epoch, weights, sync,
                                         replicas)
                seconds = _time.perf_counter() - t0
                _record_epoch(stats, source.n_tokens, nb, total, seconds, sync, epoch, cfg, _all_finite(model),
                              phase)
                _show_epoch(bar, source, stats)
                if on_epoch is not None:
                    on_epoch(epoch, stats)
    finally:
        stop.set()
        produced.wait()         # no thread draws pairs once the call has returned or raised
        if bar is not None:
            bar.close()
    return stats


@dataclass(frozen=True)
class _EpochEnd:
    """The mark :func:`_epochs_ahead` puts after an epoch's runs: the pair generator's state at that point."""

    rng_state: dict


def _epochs_ahead(source, cfg, rng, keep, dev, start_epoch: int):
    """The runs of epochs ``start_epoch..``, each epoch's followed by an :class:`_EpochEnd`, drawn from a copy of
    ``rng`` (the caller's generator is left to :func:`_one_epoch`)."""
    ahead = copy.deepcopy(rng)
    for _ in range(start_epoch, cfg.epochs):
        yield from _epoch_runs(source, cfg, ahead, keep, dev)
        yield _EpochEnd(ahead.bit_generator.state)


def _one_epoch(stream, rng: np.random.Generator):
    """The runs of ``stream`` (:func:`_epochs_ahead`) up to the next epoch's end; there ``rng`` takes the state
    the copy had after drawing them, as if it had drawn them itself (a checkpoint saves it)."""
    for item in stream:
        if isinstance(item, _EpochEnd):
            rng.bit_generator.state = item.rng_state
            return
        yield item


def _run_step(model, cfg: TrainConfig):
    """The step of ``cfg``'s batches (:func:`~qpnlp.word2fun.sgd.batch_step`, the centre's step size defaulting to
    :data:`~qpnlp.word2fun.step_sizes.STEP_CENTRE_LR`)."""
    centre_lr = STEP_CENTRE_LR if cfg.step_centre_lr is None else cfg.step_centre_lr
    return batch_step(model, cfg.shared_negatives, cfg.negative_weight, centre_lr, cfg.step_threads)


def _compile_step(model, cfg: TrainConfig) -> float:
    """Compile the step the epochs will take (:meth:`~qpnlp.word2fun.fused_step.FusedStep.compile`, where it is
    the compiled one: its batches and runs are one kernel), so that the epochs' clock does not count it; its
    seconds."""
    t0 = _time.perf_counter()
    step = _run_step(model, cfg)
    if isinstance(step, FusedStep):
        step.compile()
    return _time.perf_counter() - t0


def resolved_defaults(cfg: TrainConfig, family: str, logistic: bool) -> TrainConfig:
    """``cfg`` with the model's defaults in place of None, as the loop trains with them: the roughness penalty of
    ``family`` (:func:`~qpnlp.word2fun.config.resolve_penalty`) and, with the logistic step,
    :data:`~qpnlp.word2fun.step_sizes.STEP_CENTRE_LR` (``fit`` records them so in its checkpoint)."""
    cfg = resolve_penalty(cfg, family, logistic)
    if logistic and cfg.step_centre_lr is None:
        cfg = replace(cfg, step_centre_lr=STEP_CENTRE_LR)
    return cfg


def _resolved_config(config: TrainConfig, model) -> TrainConfig:
    """The checked ``config`` with the model's defaults (:func:`resolved_defaults`); a roughness penalty needs a
    sinusoidal family: refused for the others."""
    cfg = resolved_defaults(config, model.family, model.logistic)
    check_penalty_family(cfg, model.family)
    return replace(cfg, step_threads=step_threads(cfg))   # torch's count now: the loop runs with one


def _check_frozen(model) -> None:
    """ValueError for a parameter whose ``requires_grad`` says other than what the step does with it.

    The SGD step is written by hand: it trains every table but a compass the config freezes
    (``freeze_compass``, :meth:`~qpnlp.word2fun.model.Word2Fun.set_compass`) and reads no ``requires_grad``, which
    a distributed run reads to choose the tables it sums. ``requires_grad_(False)`` froze nothing, without a word.
    """
    for name, param in model.named_parameters():
        trained = not (name == "compass.weight" and model.freeze_compass)
        if param.requires_grad == trained:
            continue
        if name != "compass.weight":
            raise ValueError(f"parameter {name} has requires_grad=False, but Word2Fun's SGD step trains every table: "
                             f"only the compass can be frozen (model.set_compass(h, freeze=True))")
        raise ValueError(f"the compass has requires_grad={param.requires_grad} but the model's config says "
                         f"freeze_compass={model.freeze_compass}, which the SGD step follows; set both with "
                         f"model.set_compass(model.compass.weight.detach(), freeze={not param.requires_grad})")


def _worker_count(cfg: TrainConfig) -> int:
    """The workers of ``cfg`` (at least one)."""
    return max(1, int(cfg.workers))


def _replicated(cfg: TrainConfig) -> bool:
    """Whether ``cfg``'s workers train replicas whose updates are merged (``parallel="replicas"``, more than one)."""
    return _worker_count(cfg) > 1 and cfg.parallel == "replicas"


def negative_seeds(seed: int, rank: int, workers: int) -> list[int]:
    """The seeds of the negatives' generators of a fresh run: ``seed + 7919 w + 104729 rank`` for worker ``w`` of
    process ``rank``."""
    return [seed + 7919 * w + 104729 * rank for w in range(workers)]


def _default_generators(cfg: TrainConfig, dev) -> list[torch.Generator]:
    """The negatives' generators when none are given: those of the first process (:func:`negative_seeds`)."""
    return [torch.Generator(device=dev).manual_seed(s) for s in negative_seeds(cfg.seed, 0, _worker_count(cfg))]


def _progress_bar(total_tokens: int, family: str):
    """A tqdm bar over the ``total_tokens`` tokens of the epochs to train."""
    from tqdm.auto import tqdm

    return tqdm(total=total_tokens, unit="tok", unit_scale=True, desc=f"word2fun {family}")


def _run_batches(model, runs, sampler, gens, cfg, epoch, weights, progress=None,
                 replicas=None) -> tuple[torch.Tensor, int]:
    """The loss sum (on the model's device) and the pairs of the batches of ``runs``: trained by one worker, by
    ``len(gens)`` hogwild threads, or, with ``replicas``, by as many threads on their own copies of the model
    (:func:`_train_replicas`).

    ``progress`` carries the epoch's progress across calls (see ``_train_batches``).
    """
    if replicas is not None:
        return _train_replicas(replicas, runs, sampler, gens, cfg, epoch, weights, progress)
    if _worker_count(cfg) == 1:
        return _train_batches(model, runs, sampler, gens[0], cfg, epoch, weights=weights, progress=progress)
    return _train_batches_threaded(model, runs, sampler, gens, cfg, epoch, weights, progress)


def _train_replicas(replicas: Replicas, runs, sampler, gens, cfg, epoch, weights,
                    progress=None) -> tuple[torch.Tensor, int]:
    """The batches of ``runs`` in segments of ``workers x replica_sync_every`` batches, each cut into one part per
    worker (``split_runs``), part ``w`` trained on replica ``w`` with generator ``gens[w]`` and the updates merged
    (``qpnlp.word2fun._replicas.Replicas``): the loss sum and the pairs, added up in worker order.

    Each part's learning rates decay from the epoch's progress before its first batch, as one worker's would.
    """
    total, nb, done = _loss_sum(replicas.models[0]), 0, 0.0 if progress is None else progress[0]
    segments = Segments(runs, len(gens) * cfg.replica_sync_every)
    replicas.reload()                               # the model may have changed since the last run (e.g. a sync)
    while seg := segments.next_segment()[0]:
        parts, starts = split_runs(seg, len(gens)), []
        for part in parts:
            starts.append(done)
            done = float(part[-1].progress[-1]) if part else done
        out = replicas.train(parts, lambda model, part, w: _train_batches(
            model, iter(part), sampler, gens[w], cfg, epoch, weights=weights, progress=[starts[w]]))
        total, nb = total + sum(t for t, _ in out), nb + sum(n for _, n in out)
    if progress is not None:
        progress[0] = done
    return total, nb


def _train_epoch(model, runs, sampler, gens, cfg, epoch, weights, sync,
                 replicas=None) -> tuple[torch.Tensor, int]:
    """The loss sum (on the model's device) and the pairs of one epoch's ``runs`` of batches, synchronised with
    the other processes by ``sync``.

    Without ``sync`` the batches run in one go; with it, in segments of ``cfg.sync_every`` batches, each
    followed by ``sync.step``; a process that has run out of batches keeps joining the synchronisations
    until every process has (``sync.step`` returns False).  A segment that raises (its shard unreadable, out of
    memory) is passed to ``sync.step``, which raises in every process.  ``replicas`` train the batches, or each
    segment's, in segments of their own (:func:`_train_replicas`).
    """
    if sync is None:
        return _run_batches(model, runs, sampler, gens, cfg, epoch, weights, replicas=replicas)
    return _train_segments(model, runs, sampler, gens, cfg, epoch, weights, sync, replicas)


def _train_segments(model, runs, sampler, gens, cfg, epoch, weights, sync,
                    replicas=None) -> tuple[torch.Tensor, int]:
    """:func:`_train_epoch` of a distributed run: segments of ``cfg.sync_every`` batches, each followed by
    ``sync.step``."""
    total, nb, more, done = _loss_sum(model), 0, True, [0.0]
    segments = Segments(runs, cfg.sync_every)
    while True:
        error = None
        if more:
            try:
                seg, n_batches = segments.next_segment()
                t, n = _run_batches(model, iter(seg), sampler, gens, cfg, epoch, weights, done, replicas)
                total, nb, more = total + t, nb + n, n_batches == cfg.sync_every
            except BaseException as failure:       # the others would wait for it in sync.step: all raise there
                error, more = failure, False
        if not sync.step(more, error):
            return total, nb


def _record_epoch(stats: TrainStats, tokens: int, pairs: int, loss_sum: torch.Tensor, seconds: float, sync,
                  epoch: int, cfg: TrainConfig, finite: bool = True, phase: str = "training") -> None:
    """Add an epoch's tokens, pairs, time and mean loss ``loss_sum / pairs`` to ``stats``; raise if it diverged.

    ``loss_sum`` is read on the host here, once per epoch (a tensor on the model's device, ``_loss_sum``);
    ``finite`` says whether this process's parameters are all finite and not run away after the epoch
    (``_all_finite``); ``phase`` is named by :func:`diverged`.
    With ``sync`` the counts, the loss and the processes with a non-finite parameter are summed over the
    processes and the time is the slowest one's, so every process raises, or none: :func:`diverged` for a
    NaN or infinite mean loss or a non-finite parameter, :func:`no_pairs`
    (``ValueError``) for an epoch without any pair.
    """
    from qpnlp.word2fun.distributed import all_sum

    loss_sum, bad = float(loss_sum), 0 if finite else 1
    slowest = seconds
    if sync is not None:
        tokens, pairs, loss_sum, bad = all_sum([tokens, pairs, loss_sum, bad])
        tokens, pairs, slowest = int(tokens), int(pairs), _max_over_processes(seconds)
    if pairs == 0:                                   # the loss would read 0 and the vectors stay as initialised
        raise no_pairs(epoch + 1, tokens, cfg)
    stats.seconds += slowest
    stats.pairs += pairs
    stats.tokens += tokens
    stats.epoch_loss.append(loss_sum / pairs)
    if not math.isfinite(stats.epoch_loss[-1]):      # the same sums in every process: all raise
        raise diverged(epoch + 1, stats.epoch_loss[-1], cfg, phase=phase)
    if bad:
        raise diverged(epoch + 1, stats.epoch_loss[-1], cfg, parameters=True, phase=phase)


def _show_epoch(bar, source, stats: TrainStats) -> None:
    """Advance the progress ``bar`` (if any) by the epoch's tokens of ``source`` and show its mean loss."""
    if bar is not None:
        bar.update(source.n_tokens)
        bar.set_postfix(loss=f"{stats.epoch_loss[-1]:.4f}")


def _max_over_processes(value: float) -> float:
    """The largest ``value`` over the processes of a distributed run."""
    from qpnlp.word2fun.distributed import all_min_max

    return all_min_max(value, value)[1]
