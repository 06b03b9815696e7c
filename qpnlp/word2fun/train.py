"""Training Word2Fun: :func:`fit` (corpus in, vectors out).

:func:`fit` is the one entry point: it builds the vocabulary (dense ids, no
special tokens) and the model, optionally pre-trains a static model whose
target vectors become the frozen compass (compass-aligned training), trains
by skip-gram with negative sampling (the loop of :mod:`qpnlp.word2fun.loop`),
saves a checkpoint after every epoch if asked (and resumes from it), and
returns the :class:`~qpnlp.word2fun.keyed_vectors.KeyedVectors` with the
training statistics.  The corpus is held in memory
(:class:`~qpnlp.data.timestamped.TimestampedCorpus`) or streamed from disk
(:class:`~qpnlp.data.timestamped.TsvStream`); started by ``torchrun`` every
process trains on its own shard (:mod:`qpnlp.word2fun.distributed`).

Example
-------
>>> from qpnlp.data import TimestampedCorpus
>>> docs = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(200)]
>>> result = fit(TimestampedCorpus.from_pairs(docs), TrainConfig(epochs=1), dim=4, min_count=1)
>>> len(result.vectors), result.vectors.time_span
(5, (1900.0, 1909.0))
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TextIO

import numpy as np
import torch

from qpnlp._atomic import check_replaceable
from qpnlp._checks import checked_copy, is_integer
from qpnlp._device import resolve_device
from qpnlp._repr import record_repr
from qpnlp._stacklevel import outside_qpnlp
from qpnlp.data.timestamped import TimestampedCorpus, TsvStream
from qpnlp.data.vocab import Vocabulary
from qpnlp.models.base import CONFIG_FILE
from qpnlp.word2fun import _run_state as run_state
from qpnlp.word2fun._corpus_checks import (_check_some_token_in_vocabulary, _checked_size, _shard,
                                           _vocabulary_and_corpus_info)
from qpnlp.word2fun import distributed as dist
from qpnlp.word2fun import pair_loop
from qpnlp.word2fun.changepoint import STEP_CENTRE_LR_AT_CHANGE_POINTS, initial_step_centres
from qpnlp.word2fun.functions import SINUSOIDAL_FAMILIES, TimeScale
from qpnlp.word2fun.keyed_vectors import KeyedVectors
from qpnlp.word2fun.config import TrainConfig
from qpnlp.word2fun.loop import COMPASS_PHASE, TrainStats, _train_checked, resolved_defaults, train_source
from qpnlp.word2fun.model import Word2Fun, Word2FunConfig
from qpnlp.word2fun.step_sizes import step_bounds
from qpnlp.word2fun.sources import ArraySource, StreamSource

__all__ = ["COMPASS_MODES", "COMPASS_PRETRAINING", "LOSS_GROWTH_LIMIT", "FitResult", "fit", "loss_growth",
           "loss_growths", "train_word2fun"]
# TrainConfig: .config, TrainStats: .loop

#: Whether the compass (the time-independent part) keeps training (``compass=``).
COMPASS_MODES = ("trainable", "frozen")
#: Where the logistic steps start (fit(step_centres=...)): each word's change point, or mid-span.
STEP_CENTRES = ("changepoint", "middle")
#: A run whose last epoch's mean loss exceeds this many times its first epoch's has diverged (:func:`loss_growth`).
LOSS_GROWTH_LIMIT = 10.0
#: The loss that :func:`loss_growth` names for the static pre-training of ``compass="frozen"`` (:func:`loss_growths`).
COMPASS_PRETRAINING = "the mean loss of the compass pre-training (compass='frozen', a static model)"


def train_word2fun(
    model: Word2Fun,
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    doc_times: np.ndarray,
    counts: np.ndarray,
    config: TrainConfig | None = None,
    progress: bool = False,
    on_epoch=None,
) -> TrainStats:
    """Train ``model`` by skip-gram with negative sampling on an encoded corpus in memory.

    Minibatch SGD (:func:`~qpnlp.word2fun.sgd.centre_sgd_step`) with
    word2vec's learning rate, decayed linearly from ``lr`` to ``1e-4 lr`` with
    the fraction of the training tokens processed.  Batches come from
    :func:`~qpnlp.data.skipgram.iter_centre_batches` (subsampling, dynamic
    windows, shuffled documents and centre tokens, about ``batch_size`` pairs
    each); negatives are drawn on ``config.device``: ``negatives`` per pair
    (word2vec), or, with ``shared_negatives=True``, one sample of
    ``negatives`` words shared by all pairs of the batch.  Because the thesis
    loss takes the *mean* over a pair's negatives, both are unbiased
    estimates of the same expected negative term; sharing turns B x k dot
    products into one (N, D) x (D, k) matrix product over the N centre
    tokens.

    Parameters
    ----------
    tokens, doc_ids : numpy.ndarray, shape (n_tokens,)
    doc_times : numpy.ndarray, shape (n_docs,)
        Raw times.
    counts : numpy.ndarray, shape (V,)
        Word counts (subsampling and the unigram^0.75 negatives).
    config : qpnlp.word2fun.config.TrainConfig
    progress : bool
        Show a tqdm bar over tokens.
    on_epoch : callable(epoch, stats), optional
        Called after each epoch (e.g. to checkpoint); its time is not counted.
    model : Word2Fun
        The model trained in place; its time scale must cover ``doc_times``.

    Returns
    -------
    TrainStats
        ``tokens_per_s`` counts in-vocabulary corpus tokens times epochs over the
        training wall time (pair generation, negatives and updates included).
    """
    return train_source(model, ArraySource(tokens, doc_ids, doc_times), counts, config, progress=progress,
                        on_epoch=on_epoch)


@dataclass(frozen=True)
class FitResult:
    """What :func:`fit` returns.

    Attributes
    ----------
    vectors : KeyedVectors
        The trained model with its vocabulary (queries, ``save_pretrained``).
    stats : TrainStats
        The training run of the model (all processes of a distributed run).
    compass_stats : TrainStats or None
        The static pre-training run of the frozen compass (``compass="frozen"``).
    corpus_info : dict
        ``documents``, ``tokens`` and ``span`` of the whole corpus (all shards).
    world_size : int
        Processes that trained (1 unless started by ``torchrun``).
    epochs_done : int
        Epochs the returned model has been trained for (resumed ones included).
    config : qpnlp.word2fun.config.TrainConfig or None
        The settings it trained with, the model's defaults resolved (as its checkpoint records them).
    warnings : list of str
        The warnings :func:`fit` gave in this process, in order (see its Warns; in a distributed run the loss
        growths and a resume's unrecorded settings are said by the first process only): ``qpnlp train word2fun``
        keeps them in its report.
    """

    vectors: KeyedVectors
    stats: TrainStats
    compass_stats: TrainStats | None = None
    corpus_info: dict = field(default_factory=dict)
    world_size: int = 1
    epochs_done: int = 0
    config: TrainConfig | None = None
    warnings: list[str] = field(default_factory=list)

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut


def fit(
    corpus: TimestampedCorpus | TsvStream,
    config: TrainConfig | None = None,
    *,
    family: str = "IV",
    dim: int = 100,
    time_scale: float | TimeScale = 30.0,
    n_slices: int = 10,
    frequency_init: str = "harmonic",
    max_periods: float | None = 6.0,
    logistic: bool | None = None,
    step_centres: str = "changepoint",
    min_count: int = 5,
    vocabulary: Vocabulary | None = None,
    compass: str = "trainable",
    compass_epochs: int = 3,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
    metadata: Mapping[str, Any] | None = None,
    progress: bool = False,
    on_epoch: Callable[[int, TrainStats], None] | None = None,
    log: TextIO | None = None,
) -> FitResult:
    """Train Word2Fun on a timestamped corpus.

    Parameters
    ----------
    corpus : TimestampedCorpus or TsvStream
        Documents with one time each (at least two distinct times), in memory
        or read from disk on every epoch in chunks of ``config.chunk_tokens``
        tokens (memory bounded by the chunk; one counting pass first).
    config : qpnlp.word2fun.config.TrainConfig, optional
        SGD settings (default ``TrainConfig()``; a checked copy is read); ``config.seed`` also seeds
        the initialisation of the model (and of the static compass model).
    family, dim, n_slices, frequency_init, max_periods
        The model (:class:`~qpnlp.word2fun.model.Word2FunConfig`).  The
        defaults (family IV, dimension 100, the harmonic ladder up to 6
        periods over the span, time scale 30) and those of
        :class:`~qpnlp.word2fun.config.TrainConfig` are the settings selected on
        the planted-drift benchmark (``benchmarks/results/word2fun/NOTES.md``);
        ``qpnlp train word2fun`` reads its defaults from here.
    logistic : bool, optional
        Add the logistic step :math:`A_u (\\sigma(k_u (s - c_u)) - \\tfrac12)` to :math:`f(u, \\cdot)`
        (:class:`~qpnlp.word2fun.model.Word2FunConfig`): one S-shaped change per
        word that every coordinate follows at once.  Default (None): on for
        the sinusoidal families II-IV (selected with family IV on the drift
        benchmark), off for the others; the roughness penalty's default
        follows it (:func:`~qpnlp.word2fun.config.resolve_penalty`).
        ``logistic=False`` gives the model and defaults before the step.
    step_centres : {"changepoint", "middle"}, default "changepoint"
        Where the logistic steps start: each word's change point of its
        contexts (:mod:`qpnlp.word2fun.changepoint`, one extra pass over the
        corpus before training; the steps then start at rate
        :data:`~qpnlp.word2fun.changepoint.STEP_RATE_AT_CHANGE_POINTS` and their
        centres move with ``config.step_centre_lr``, default
        :data:`~qpnlp.word2fun.changepoint.STEP_CENTRE_LR_AT_CHANGE_POINTS`), or
        mid-span for every word (the behaviour before the change-point start).
        Ignored without the logistic step; a resumed run does not repeat the pass.
    time_scale : float or TimeScale, default 30.0
        ``S``, with the corpus span as :math:`[t_0, t_1]`; or a full
        :class:`~qpnlp.word2fun.functions.TimeScale` (another span).
    min_count : int, default 5
        Keep words seen at least this many times (ignored with ``vocabulary``).
    vocabulary : Vocabulary, optional
        A vocabulary without special tokens to use instead of counting the corpus.
    compass : {"trainable", "frozen"}, default "trainable"
        ``"frozen"``: first train a ``static`` model for ``compass_epochs``
        epochs (same settings, no roughness penalty), then copy its target
        vectors into the compass and freeze them, and start every time slice's
        static part :math:`B_u` from its vectors (compass-aligned word2vec).
    compass_epochs : int, default 3
    checkpoint : path, optional
        Save the vectors there (``KeyedVectors.save_pretrained``, atomically,
        by the first process only) after every epoch, with the epochs done and
        the random generators' states (of every process in a distributed run,
        in its ``rng_states.json``).
    resume : bool, default False
        Continue the run saved at ``checkpoint``: its model, vocabulary and
        generators, from the next epoch (a missing checkpoint starts afresh);
        with the same processes and one worker the result equals that of an
        uninterrupted run; a checkpoint that a process killed while replacing
        it left aside (``.NAME.*.old/``) is put back first.  The corpus (its
        numbers of documents and tokens, its span; its words' counts through
        the vocabulary, not the order of its documents nor which time each
        holds), the model options, ``min_count`` (unless
        ``vocabulary`` is given), the vocabulary this call builds or is given
        (its words and their counts: a built one also refuses a corpus of
        other words, a given one cannot) and the other settings must be the
        run's own (refused otherwise, naming each difference);
        ``config.epochs``, ``device``, ``chunk_tokens``,
        ``sync_every`` and ``workers`` may change (the data order continues, the
        workers both runs have keep their negative streams, added ones start
        their own), and so may the number of processes (its shards change;
        processes without a saved state start fresh streams).  Only the same
        ``epochs`` and ``chunk_tokens`` (and ``workers=1``, one process) give
        the uninterrupted run's result: the learning rate decays over
        ``config.epochs`` (so more epochs change the remaining epochs' rates,
        not those already trained), and ``chunk_tokens`` tokens are shuffled
        together.  ``config.epochs`` must not be below the epochs already trained.
        Settings left None (``roughness_penalty``, ``step_centre_lr``: the model's
        defaults) continue with the run's own, never a default changed since.
    metadata : mapping, optional
        Extra JSON metadata for the checkpoint (the corpus size, a
        :class:`~qpnlp.data.timestamped.TsvStream`'s ``lowercase`` and the
        training settings are always recorded).
    progress : bool
        Show tqdm bars.
    on_epoch : callable(epoch, stats), optional
        Called after each epoch (after the checkpoint).
    log : file, optional
        Where to write one line about the corpus and the processes (e.g. ``sys.stderr``).

    Returns
    -------
    FitResult
        ``vectors`` (:class:`KeyedVectors`), ``stats``, ``compass_stats``, ``corpus_info``.

    Raises
    ------
    TypeError
        For a ``config`` that is not a :class:`~qpnlp.word2fun.config.TrainConfig`
        or a ``vocabulary`` that is not a :class:`~qpnlp.data.vocab.Vocabulary`.
    ValueError
        For an empty corpus, a corpus of one time, times the model cannot
        resolve, a vocabulary of fewer than two words, a vocabulary with
        special tokens, a corpus none of whose tokens is in the vocabulary,
        ``min_count`` or ``compass_epochs`` < 1, an unknown ``compass``,
        ``resume`` without ``checkpoint``, a ``checkpoint`` that is a file,
        ``resume`` from a directory that holds no Word2Fun training run, or
        ``resume`` with another corpus, vocabulary or other settings than the
        saved run's, or with fewer ``config.epochs`` than the saved run
        already trained.
    FileExistsError
        For a ``checkpoint`` that is an existing non-empty directory holding
        no saved model (it would be replaced): before any training; and for
        ``resume`` where the checkpoint is missing and several earlier
        versions of it were left aside by processes killed while replacing it.
    qpnlp.word2fun.distributed.ProcessFailed
        In a distributed run, in every other process when one process failed (which raises its own error), naming
        it and its error; processes resuming different checkpoints are a ``ValueError`` in every process.

    Warns
    -----
    RuntimeWarning
        When the last epoch's mean loss is more than :data:`LOSS_GROWTH_LIMIT` (10) times the first's, a divergence
        that raised nothing (:func:`loss_growth`); in a distributed run by the first process only. The static
        pre-training of ``compass="frozen"``, a run of its own, is held to the same rule and warns on its own
        (:func:`loss_growths`).
    UserWarning
        A ``resume`` of a checkpoint that an earlier qpnlp wrote before some training settings existed, which the
        resumed epochs train with other values than the run did (``qpnlp.word2fun._run_state.unrecorded_settings``:
        once, the new checkpoint records them); a ``TimeScale`` that does not cover the corpus.
    """
    _check_fit_arguments(corpus, config, vocabulary, min_count, compass, compass_epochs, step_centres, checkpoint,
                         resume)
    # a field set since the config was made is checked, here only: the loop takes this copy (_train_checked)
    cfg = TrainConfig() if config is None else checked_copy(config)
    dev = resolve_device(cfg.device)           # a device this machine lacks fails here, before any work
    world, rank = dist.setup(cfg.device), dist.rank()
    main_log, said = (log if rank == 0 else None), []                # said: the warnings given (FitResult.warnings)
    local = _shard(corpus, rank, world)
    saved = _saved_run(checkpoint, main_log) if resume else None
    cfg = run_state.with_saved_defaults(cfg, saved)     # settings left to the model's default: the run's own
    options = _model_options(family, dim, time_scale, n_slices, frequency_init, max_periods, logistic)
    vocab, info, span, local_counts = _vocabulary_and_corpus_info(corpus, local, world, vocabulary, min_count)
    built, rng_saved = vocab, None             # a resumed run checks it against its checkpoint's (check_resume)
    with dist.fail_together("preparing its model and its shard"):     # no process left waiting for a failed one
        if saved is not None:
            model, vocab, rng_saved = run_state.saved_model(checkpoint, saved, cfg.device, rank)
        else:
            model = _new_model(_checked_size(vocab, min_count), span, time_scale, cfg.seed, options, said)
        counts = vocab.counts
        source = _token_source(local, vocab, cfg.chunk_tokens, local_counts)
        if saved is None and world == 1:
            _check_some_token_in_vocabulary(source, vocab, isinstance(time_scale, TimeScale))
        if main_log is not None:
            print(_corpus_summary(info, vocab, world, isinstance(corpus, TsvStream), dev), file=main_log)
    compass_stats = None
    if compass == "frozen" and saved is None:
        compass_stats = _pretrain_compass(model, source, counts, dataclasses.replace(cfg, epochs=compass_epochs),
                                          rank, world, dev, progress)
    cfg = _start_steps_at_change_points(model, source, vocab, cfg, step_centres, saved is None, world, main_log)
    cfg = resolved_defaults(cfg, model.family, model.logistic)     # recorded so in the checkpoint
    run = _run_settings(compass, compass_epochs, step_centres if model.logistic else None, min_count)
    if saved is not None:
        _check_resumed_run(checkpoint, saved, options, model, cfg, info, run, vocabulary is not None, (vocab, built))
        if rank == 0 and int(saved.get("epochs_done", 0)) < cfg.epochs:      # said once, where epochs are left
            _warn(said, [run_state.unrecorded_settings(checkpoint, saved, cfg)], UserWarning)
    vectors = KeyedVectors(model, vocab)
    run_info = run_state.run_info(info, cfg, run, world, metadata)
    start, stats = _train_model(vectors, source, cfg, saved, rng_saved, run_info, checkpoint, on_epoch, rank, world,
                                dev, progress)
    result = FitResult(vectors, stats, compass_stats, info, world, max(start, cfg.epochs), cfg)
    _warn(said, loss_growths(result) if rank == 0 else [], RuntimeWarning)    # said once, not by every process
    return dataclasses.replace(result, warnings=said)


def _saved_run(checkpoint: str | os.PathLike, log: TextIO | None) -> dict | None:
    """What the run saved at ``checkpoint`` recorded (``qpnlp.word2fun._run_state.saved_run_of_every_process``;
    None: nothing saved there), once a checkpoint that a process killed while replacing it left aside is put back
    (said on ``log``)."""
    run_state.restore_interrupted_checkpoint(checkpoint, log)
    return run_state.saved_run_of_every_process(checkpoint)


def _check_resumed_run(checkpoint, saved: dict, options: dict, model: Word2Fun, cfg: TrainConfig, info: dict,
                       run: dict, vocabulary_given: bool, vocabs: tuple[Vocabulary, Vocabulary]) -> None:
    """Refuse to resume the run ``saved`` at ``checkpoint`` with other settings (``ValueError`` in every process,
    naming each difference: ``qpnlp.word2fun._run_state.check_resume``); ``min_count`` does nothing beside a given
    vocabulary, whose words are compared instead."""
    compared = {k: v for k, v in run.items() if k != "min_count" or not vocabulary_given}
    with dist.fail_together("checking the run it resumes"):    # a process given other settings: all raise
        run_state.check_resume(checkpoint, saved, options, {k: getattr(model.config, k) for k in options},
                               cfg, info, compared, vocabs)


def _train_model(vectors: KeyedVectors, source, cfg: TrainConfig, saved: dict | None, rng_saved: dict | None,
                 run_info: dict, checkpoint, on_epoch, rank: int, world: int, dev,
                 progress: bool) -> tuple[int, TrainStats]:
    """``(epochs done before, stats)``: the model of ``vectors`` trained from the epoch after those ``saved`` (with
    their generators' states ``rng_saved``; a fresh run from epoch 0), saved at ``checkpoint`` with ``run_info``
    after every epoch, by process ``rank`` of ``world`` on the device ``dev``; left in eval mode."""
    model = vectors.model
    model.train()
    start, stats = run_state.epochs_done_and_losses(saved)
    rng, gens = run_state.training_generators(cfg, rank, dev, rng_saved, start)
    end_of_epoch = run_state.end_of_epoch(checkpoint, vectors, run_info, rng, gens, world, on_epoch)
    sync = dist.ParameterSync(model.to(dev), bounds=step_bounds(model)) if world > 1 else None
    stats = _train_checked(model, source, vectors.vocabulary.counts, cfg, progress=progress and dist.is_main_process(),
                           on_epoch=end_of_epoch, start_epoch=start, rng=rng, generators=gens, sync=sync, stats=stats)
    model.eval()
    return start, stats


def _warn(said: list[str], messages: list[str | None], category: type[Warning]) -> None:
    """Give each message of ``messages`` but None as a warning of ``category`` at the caller's line, and add it to
    ``said`` (``FitResult.warnings``)."""
    for message in filter(None, messages):
        warnings.warn(message, category, stacklevel=outside_qpnlp())
        said.append(message)


def loss_growths(result: FitResult) -> list[str]:
    """The :func:`loss_growth` warnings of the training runs of a :func:`fit`: the static pre-training of the frozen
    compass (``compass="frozen"``, a run of its own with its own losses, ``FitResult.compass_stats``), then the
    model's; empty when neither grew.

    Parameters
    ----------
    result : FitResult
        What :func:`fit` returned (its ``compass_stats``, ``stats`` and ``config``).
    """
    runs = [(result.compass_stats, COMPASS_PRETRAINING), (result.stats, "Word2Fun's mean loss")]
    found = [loss_growth(stats, result.config or TrainConfig(), what=what) for stats, what in runs
             if stats is not None]
    return [warning for warning in found if warning is not None]


def loss_growth(stats: TrainStats, cfg: TrainConfig, *, what: str = "Word2Fun's mean loss") -> str | None:
    r"""The warning for a run whose loss ran away below the divergence checks of the loop, else None.

    The loop stops a run whose loss becomes NaN or infinite or whose parameters pass the run-away limit
    (:func:`~qpnlp.word2fun.loop.train_source`); a learning rate too large may instead leave the loss growing
    a thousandfold, finite, and the run ending with meaningless vectors. :func:`fit` warns (``RuntimeWarning``;
    ``qpnlp train word2fun``: a stderr line and the report's ``warnings``) when the last epoch's mean loss
    :math:`\bar L_E` is above :data:`LOSS_GROWTH_LIMIT` times the first epoch's (resumed epochs included):

    .. math:: \bar L_E > 10\, \bar L_1.

    Measured (the last epoch's mean loss over the first's, 7 epochs unless said): normal runs end at 0.66-0.73
    (the default settings on a planted-drift corpus of 120k tokens, seeds 0-2, dimensions 4, 16 and 100) and
    0.995-1.0 (300 documents of 8 words, whose loss stays near its initial :math:`6 \log 2`). At 10 times the
    default learning rate the drift corpus raises (NaN in epoch 1) or, with 256 pairs per batch, still falls
    (0.61), and the small corpus grows 257-5230 times (its parameters to 20-1100, below the limit); at 100 and
    1000 times every 7-epoch run raises, and 2-epoch runs of the small corpus end at 0.91 and 1.17, too soon to
    tell.

    Parameters
    ----------
    stats : qpnlp.word2fun.loop.TrainStats
        The run's statistics (its ``epoch_loss``, one mean per epoch).
    cfg : qpnlp.word2fun.config.TrainConfig
        The settings it trained with (named in the warning).
    what : str, default "Word2Fun's mean loss"
        The loss the warning names (:data:`COMPASS_PRETRAINING` for the frozen compass's pre-training).

    Examples
    --------
    >>> loss_growth(TrainStats(epoch_loss=[4.16, 3.9, 3.8]), TrainConfig()) is None
    True
    >>> loss_growth(TrainStats(epoch_loss=[4.16, 795.1, 21730.0]), TrainConfig(lr=0.1)).split(":")[0]
    "Word2Fun's mean loss grew from 4.16 in epoch 1 to 2.173e+04 in epoch 3, more than 10 times"
    """
    losses = stats.epoch_loss
    if len(losses) < 2 or not losses[0] > 0 or not losses[-1] > LOSS_GROWTH_LIMIT * losses[0]:
        return None
    return (f"{what} grew from {losses[0]:.4g} in epoch 1 to {losses[-1]:.4g} in epoch "
            f"{len(losses)}, more than {LOSS_GROWTH_LIMIT:g} times: the training diverged (without a NaN or a "
            f"parameter past the run-away limit, which stop it) and its vectors are likely meaningless; lower lr "
            f"({cfg.lr:g}; default {TrainConfig.lr:g}) or batch_size ({cfg.batch_size}; default "
            f"{TrainConfig.batch_size})")


def _check_fit_arguments(corpus, config, vocabulary, min_count, compass, compass_epochs, step_centres, checkpoint,
                         resume) -> None:
    """Refuse the arguments of :func:`fit` it cannot train with, before any work (the corpus is not read here):
    also a ``checkpoint`` that ``save_pretrained`` would refuse after the first epoch."""
    if config is not None and not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig; got {type(config).__name__}")
    if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
        raise TypeError(f"vocabulary must be a Vocabulary (Vocabulary.build(..., specials=False)); got "
                        f"{type(vocabulary).__name__}")
    if not is_integer(min_count) or min_count < 1:
        raise ValueError(f"min_count must be an int >= 1; got {min_count!r}")
    if compass not in COMPASS_MODES:
        raise ValueError(f"compass must be one of {COMPASS_MODES}; got {compass!r}")
    if compass == "frozen" and (not is_integer(compass_epochs) or compass_epochs < 1):  # else 'epochs' is named
        raise ValueError(f"compass_epochs must be an int >= 1 with compass='frozen'; got {compass_epochs!r}")
    if step_centres not in STEP_CENTRES:
        raise ValueError(f"step_centres must be one of {STEP_CENTRES}; got {step_centres!r}")
    if not isinstance(corpus, (TimestampedCorpus, TsvStream)):
        raise TypeError(f"corpus must be a TimestampedCorpus or a TsvStream; got {type(corpus).__name__}")
    if vocabulary is not None and vocabulary.specials:
        raise ValueError("Word2Fun needs a vocabulary without special tokens (Vocabulary.build(..., specials=False))")
    if resume and checkpoint is None:
        raise ValueError("resume=True needs the checkpoint directory to continue from")
    if checkpoint is not None:
        check_replaceable(checkpoint, replaces=CONFIG_FILE)


def _model_options(family: str, dim: int, time_scale: float | TimeScale, n_slices: int, frequency_init: str,
                   max_periods: float | None, logistic: bool | None) -> dict:
    """:func:`fit`'s model options as fields of :class:`~qpnlp.word2fun.model.Word2FunConfig`: ``logistic=None``
    resolved (the logistic step for the sinusoidal families only), a :class:`~qpnlp.word2fun.functions.TimeScale`
    as its span and scale (a number is the scale over the corpus's span)."""
    options = dict(family=family, dim=dim, n_slices=n_slices, frequency_init=frequency_init, max_periods=max_periods,
                   logistic=family in SINUSOIDAL_FAMILIES if logistic is None else bool(logistic))
    if isinstance(time_scale, TimeScale):
        return {**options, "span_start": time_scale.start, "span_end": time_scale.end, "time_scale": time_scale.scale}
    return {**options, "time_scale": time_scale}


def _run_settings(compass: str, compass_epochs: int, step_centres: str | None, min_count: int) -> dict:
    """What else a checkpoint records of the run, for ``qpnlp.word2fun._run_state.check_resume`` (None where
    a setting had no effect: the compass's epochs unless it is frozen, the step centres without the logistic
    step), and ``min_count``: always recorded (the command line builds the vocabulary it gives with it), compared
    unless the resuming call gives a vocabulary (whose words are compared instead)."""
    return {"compass": compass, "compass_epochs": compass_epochs if compass == "frozen" else None,
            "step_centres": step_centres, "min_count": min_count}


def _new_model(vocab: Vocabulary, span, time_scale: float | TimeScale, seed: int, options: dict,
               said: list[str]) -> Word2Fun:
    """A freshly initialised Word2Fun model of ``vocab`` over the corpus ``span`` with the model ``options``
    (``_model_options``); a time scale that does not cover the span is a warning (:func:`_warn`, into ``said``).

    ``time_scale`` is ``S`` over ``span = (t0, t1)`` (refused when ``t1 <= t0``) or a full
    :class:`~qpnlp.word2fun.functions.TimeScale`, checked to resolve the times in float32.
    """
    if isinstance(time_scale, TimeScale):
        ts = time_scale
        if span[0] < ts.start or span[1] > ts.end:      # trained silently where the queries warn
            _warn(said, [f"the corpus spans [{span[0]:g}, {span[1]:g}], beyond the time scale's [{ts.start:g}, "
                         f"{ts.end:g}]: its times outside train the functions where they extrapolate; pass "
                         f"TimeScale({span[0]:g}, {span[1]:g}, {ts.scale:g}) or time_scale={ts.scale:g} to cover "
                         f"the corpus"], UserWarning)
    else:
        t0, t1 = span
        if t1 <= t0:
            raise ValueError(f"the corpus spans a single time ({t0}); Word2Fun needs at least two")
        ts = TimeScale(t0, t1, time_scale)
    ts.check_resolution(torch.float32)
    config = {**options, "span_start": ts.start, "span_end": ts.end, "time_scale": ts.scale}
    return Word2Fun(Word2FunConfig(vocab_size=len(vocab), **config), seed=seed)


def _token_source(local, vocab: Vocabulary, chunk_tokens: int, local_counts: Counter | None):
    """This shard's tokens encoded with ``vocab``: in memory (:class:`ArraySource`) or streamed (:class:`StreamSource`).

    A stream's in-vocabulary tokens are summed from this shard's word counts ``local_counts`` (None when
    resuming: counted on the first pass instead).
    """
    if isinstance(local, TsvStream):
        in_vocab = sum(local_counts.get(w, 0) for w in vocab.words) if local_counts is not None else None
        return StreamSource(local, vocab, chunk_tokens, n_tokens=in_vocab)
    enc = local.encode(vocab)
    return ArraySource(enc.tokens, enc.doc_ids, enc.times)


def _corpus_summary(info: dict, vocab: Vocabulary, world: int, streamed: bool, dev) -> str:
    """The line :func:`fit` logs about the corpus, the vocabulary, the processes and the pair loop."""
    return (f"corpus: {info['documents']} documents, {info['tokens']} tokens, {info['span'][0]:g}-"
            f"{info['span'][1]:g}; vocabulary {len(vocab)} words; {world} process(es)"
            + ("; streamed from disk" if streamed else "") + f"; {pair_loop.describe(dev)}")


def _start_steps_at_change_points(model: Word2Fun, source, vocab: Vocabulary, cfg: TrainConfig, step_centres: str,
                                  fresh: bool, world: int, log: TextIO | None) -> TrainConfig:
    """``cfg`` for a model whose logistic steps start at their words' change points (``step_centres``).

    With the logistic step and ``step_centres="changepoint"``, a fresh model's step centres are moved to the
    change points of their contexts (one pass over ``source``, summed over the processes; reported on
    ``log``) and the centres' learning rate defaults to
    :data:`~qpnlp.word2fun.changepoint.STEP_CENTRE_LR_AT_CHANGE_POINTS`; a resumed run keeps its steps.
    """
    if not (model.logistic and step_centres == "changepoint"):
        return cfg
    if cfg.step_centre_lr is None:
        cfg = dataclasses.replace(cfg, step_centre_lr=STEP_CENTRE_LR_AT_CHANGE_POINTS)
    if fresh:
        moved = initial_step_centres(model, source, vocab.counts, window=cfg.window, sample=cfg.sample,
                                     seed=cfg.seed, reduce=dist.all_reduce_sum if world > 1 else None)
        if log is not None:
            print(f"logistic steps: {moved} of {len(vocab)} words start at their contexts' change point", file=log)
    return cfg


def _pretrain_compass(model: Word2Fun, source, counts: np.ndarray, cfg: TrainConfig, rank: int, world: int, dev,
                      progress: bool) -> TrainStats:
    """Train a ``static`` model for ``cfg.epochs`` epochs, freeze its target vectors as ``model``'s compass and
    start ``model``'s static part from its vectors; returns its training statistics.

    Like the model's training, each process draws its pairs and its negatives from its own generators
    (``data_rng`` and ``negative_generators`` of ``qpnlp.word2fun._run_state``: those of one process for
    the first), and the processes keep one static model (:class:`~qpnlp.word2fun.distributed.ParameterSync`),
    hence one compass.
    """
    V = model.compass.weight.shape[0]
    static = Word2Fun(Word2FunConfig(vocab_size=V, dim=model.compass.weight.shape[1], family="static",
                                     span_start=model.time_scale.start, span_end=model.time_scale.end,
                                     time_scale=model.time_scale.scale), seed=cfg.seed)
    gens = run_state.negative_generators(cfg.seed, rank, cfg.workers, dev)  # before: all drew from cfg.seed
    stats = _train_checked(static, source, counts, dataclasses.replace(cfg, roughness_penalty=0.0),
                           progress=progress, sync=dist.ParameterSync(static.to(dev)) if world > 1 else None,
                           rng=run_state.data_rng(cfg.seed, rank, 0), generators=gens, phase=COMPASS_PHASE)
    model.set_compass(static.compass.weight.detach(), freeze=True)
    with torch.no_grad():  # start the static part (every slice of it) from the static model as well
        model.base.weight.copy_(static.base.weight.repeat(model.base.weight.shape[0] // V, 1))
    return stats


