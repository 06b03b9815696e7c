"""The one epoch loop of every qpnlp trainer, and its clean stops.

:func:`early_stopping` runs the epochs of :func:`qpnlp.training.trainer.fit`
and :func:`qpnlp.training.matching.fit_matching`: early stopping on a dev
score, the best-dev parameters restored at the end, a per-epoch ``log``, the
per-epoch training state for resuming (:mod:`qpnlp.training.state`), a clean
stop on divergence (:class:`~qpnlp.training.TrainingDiverged`: a non-finite loss,
parameter or dev score, :func:`check_loss`, :func:`runaway_parameter`) and on Ctrl-C
(:class:`TrainingInterrupted`, a ``KeyboardInterrupt`` that carries the model
restored to its best epoch so far).
"""

from __future__ import annotations

import copy
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
import torch
from torch import nn

from qpnlp._atomic import check_replaceable, restore_replaced_directory
from qpnlp._checks import runaway_limit
from qpnlp._errors import TrainingDiverged
from qpnlp._repr import record_repr
from qpnlp._stacklevel import outside_qpnlp

from .config import TrainConfig
from .optimisers import Optimisers
from .state import (JSON_FILE, InitialParameters, has_training_state, load_training_state, non_finite_value,
                    run_identity, save_training_state)

__all__ = ["TrainingInterrupted", "LoopResult", "early_stopping", "check_loss", "runaway_parameter",
           "merge_observation", "epoch_bar"]


def epoch_bar(batches, epoch: int, progress: bool, total: int | None = None):
    """The batches of ``epoch`` behind a tqdm bar on stderr (``total`` of them), or, with ``progress`` off, behind
    ``_NoBar``: the loops call ``set_postfix`` and ``close`` either way. No tqdm object at all when off: even
    a disabled one starts tqdm's monitor thread (``tqdm.__new__``), left running after the training.

    Parameters
    ----------
    batches : iterable
        The epoch's batches.
    epoch : int
        The epoch, shown in the bar's description.
    progress : bool
        Draw the bar; False: no bar, no tqdm object.
    total : int or None, default None
        The number of batches the bar counts to; None: ``len(batches)`` if it has one.
    """
    if not progress:
        return _NoBar(batches)
    from tqdm.auto import tqdm

    return tqdm(batches, total=total, desc=f"epoch {epoch}", leave=False)


class _NoBar:
    """The batches, with the bar methods of :func:`epoch_bar` doing nothing."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def set_postfix(self, **postfix) -> None:
        pass

    def close(self) -> None:
        pass


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training: a ``KeyboardInterrupt`` carrying the model restored to its best epoch so far.

    Each parameter below is an attribute of the same name; ``context`` is a dict, empty, where callers add what a
    command needs to save the model (e.g. the vocabulary).

    Parameters
    ----------
    model : torch.nn.Module
        The model, its parameters restored to those of ``best_epoch``.
    epoch : int
        The last finished epoch, 0 if none; with ``checkpoint_dir``, the last whose training state was written
        whole, the one ``resume`` continues from (an epoch interrupted while its state was written is not
        finished: ``resume`` trains it again).
    best_epoch : int
        The epoch of the parameters ``model`` holds (it may be the epoch after ``epoch``, when Ctrl-C came while
        the state of that epoch, the best so far, was written).
    best_score : float
        The dev score of ``best_epoch``.
    history : list of dict
        One entry per finished epoch, as in the trainer's result.
    checkpoint_dir : path-like or None
        Where the last finished epoch's training state is (for ``--resume``); None when none was kept.
    """

    def __init__(self, *, model: nn.Module, epoch: int, best_epoch: int, best_score: float, history: list[dict],
                 checkpoint_dir: str | os.PathLike | None) -> None:
        super().__init__(f"training interrupted after epoch {epoch}")
        self.model, self.epoch, self.best_epoch, self.best_score = model, epoch, best_epoch, best_score
        self.history, self.checkpoint_dir = history, checkpoint_dir
        self.context: dict = {}


def check_loss(loss: float, epoch: int, batch: int, config: TrainConfig) -> None:
    """Raise :class:`TrainingDiverged` for a NaN or infinite batch loss.

    Parameters
    ----------
    loss : float
        The batch's loss.
    epoch, batch : int
        Where it happened (1-based), named in the error; in the first batch of the first epoch the error blames the
        model rather than the learning rates.
    config : ~qpnlp.training.TrainConfig
        Its learning rates are named in the error.
    """
    if not math.isfinite(loss):
        if epoch == 1 and batch == 1:               # no optimiser step yet: the learning rates are not the cause
            hint = ("before any optimiser step, so the model's initial parameters or its forward on this batch "
                    "give it, not the learning rates; check the model's output on this batch")
        else:
            hint = f"(lr {config.lr:g}, embedding_lr {config.embedding_lr:g}); try smaller learning rates"
        raise TrainingDiverged(f"training diverged in epoch {epoch}, batch {batch}: the loss is {loss} {hint}",
                               epoch=epoch, batch=batch, loss=loss)


def _check_score(score: float, epoch: int, config: TrainConfig) -> None:
    """Raise :class:`TrainingDiverged` for a dev score that is NaN or infinite.

    Such a score cannot rank the epoch: NaN is neither better nor worse than any other (``nan > best`` is False, so
    it would be passed over without a word, and an epoch of a NaN score would never count as the first), and
    ``+inf`` would win over every later epoch. The loop stops there, naming the epoch, before the epoch's
    training state is written.

    Parameters
    ----------
    score : float
        The epoch's dev score (higher is better).
    epoch : int
        The epoch (1-based), named in the error.
    config : ~qpnlp.training.TrainConfig
        Its learning rates are named in the error.
    """
    if not math.isfinite(score):
        raise TrainingDiverged(f"training diverged in epoch {epoch}: the dev score is {score}, which ranks no epoch; "
                               f"check the model's output on the dev data, or try smaller learning rates "
                               f"(lr {config.lr:g}, embedding_lr {config.embedding_lr:g})", epoch=epoch)


def runaway_parameter(model: nn.Module) -> str | None:
    r"""What is wrong with the first parameter that holds a NaN or an infinity, or values so large that a product
    of two overflows (above :math:`10^{-3}\sqrt{\text{max}}` of its dtype, e.g. 1.8e16 in float32); else None.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose real and complex floating-point parameters are looked at.
    """
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not (param.is_floating_point() or param.is_complex()) or param.numel() == 0:
                continue
            largest = float(param.abs().max())
            if not math.isfinite(largest):
                return f"parameter {name} holds NaN or infinite values"
            if largest > runaway_limit(torch.finfo(param.dtype).max):
                return f"parameter {name} reached {largest:.3g} in magnitude (overflow is near)"
    return None


def _diverged(model: nn.Module, epoch: int, config: TrainConfig, cause: BaseException | None = None) -> None:
    """Raise :class:`TrainingDiverged` if a parameter ran away (``cause``: the error that revealed it)."""
    problem = runaway_parameter(model)
    if problem is not None:
        detail = "" if cause is None else f" (then: {' '.join(str(cause).split())})"
        raise TrainingDiverged(f"training diverged in epoch {epoch}: {problem}{detail}; try smaller learning rates "
                               f"(lr {config.lr:g}, embedding_lr {config.embedding_lr:g})", epoch=epoch) from cause


@dataclass
class LoopResult:
    """What :func:`early_stopping` returns: the best epoch, its dev score and details, the history.

    Parameters
    ----------
    best_epoch : int
        The epoch whose parameters the model holds at the end (every dev score is finite: one that is not stops
        the loop with :class:`TrainingDiverged`).
    best_score : float
        The dev score of ``best_epoch`` (higher is better).
    best_details : dict or None
        The history fields ``evaluate`` returned with that score; None when no epoch was best.
    seconds : float
        Wall time of the training, in seconds (a resumed run's included).
    history : list of dict
        One entry per finished epoch: ``epoch``, ``train_loss``, the evaluation's fields, ``seconds``.
    """

    best_epoch: int
    best_score: float
    best_details: dict | None
    seconds: float
    history: list[dict]

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut


def early_stopping(model: nn.Module, config: TrainConfig, optimisers: Optimisers, *,
                   train_epoch: Callable[[int], float], evaluate: Callable[[], tuple[float, dict]],
                   on_epoch: Callable[[nn.Module], dict] | None = None, log: Callable[[dict], None] | None = None,
                   checkpoint_dir: str | os.PathLike | None = None, resume: bool = False,
                   data: Sequence = ()) -> LoopResult:
    """The epoch loop of every trainer: train, score dev, keep the best, stop after ``patience`` epochs without gain.

    Parameters
    ----------
    model, config, optimisers
        The model (on its device), its settings and its optimisers.
    train_epoch : callable
        ``train_epoch(epoch) -> mean loss``; raises :class:`TrainingDiverged`
        on a non-finite batch loss (:func:`check_loss`).
    evaluate : callable
        ``evaluate() -> (dev score, history fields)``; a higher score is better. A score that is NaN or infinite
        raises :class:`TrainingDiverged` naming the epoch (it ranks no epoch), the model at its best epoch so far.
    on_epoch : callable, optional
        An observer ``on_epoch(model) -> dict`` merged into each epoch's history. With ``checkpoint_dir``, a NaN
        or infinite value in it is a ``ValueError`` naming its key and the epoch (the state is strict JSON), raised
        before the epoch's state is written, the model at its best epoch so far.
    log : callable, optional
        Called with each epoch's history entry (after ``on_epoch`` and after
        the training state is saved); on resume first with each restored
        entry, marked ``"restored": True``.
    checkpoint_dir : path-like, optional
        Write the training state there after every epoch (:mod:`qpnlp.training.state`). An existing non-empty
        directory must hold one (FileExistsError before any training: its files would be deleted, or a damaged
        state would be started afresh).
    resume : bool, default False
        Continue from the state in ``checkpoint_dir`` if there is one: the
        result equals that of an uninterrupted run. Needs ``checkpoint_dir``;
        a state of more epochs than ``config.epochs`` is refused. A state that a process killed while replacing
        it left aside (``checkpoint_dir`` missing) is put back first, with a RuntimeWarning; several such
        leftovers are refused (FileExistsError naming them).
    data : sequence
        The training and dev data, fingerprinted so that a state is only
        resumed on the same data.

    Notes
    -----
    The model ends with its best-dev parameters, also when the loop stops on
    divergence (:class:`TrainingDiverged`) or Ctrl-C (:class:`TrainingInterrupted`).
    """
    progress, best_state, identity, initial = _starting_point(model, config, optimisers, checkpoint_dir, resume,
                                                              data, log)
    history = progress["history"]
    start = time.perf_counter() - progress["elapsed"]
    saved = progress["epoch"]                        # the last epoch whose training state is written whole
    try:
        while progress["epoch"] < config.epochs and progress["waited"] < config.patience:
            epoch = progress["epoch"] + 1
            loss, score, fields = _train_and_score(model, config, epoch, train_epoch, evaluate)
            entry = dict(epoch=epoch, train_loss=loss, **fields, seconds=time.perf_counter() - start)
            if on_epoch is not None:
                _observe(model, entry, on_epoch(model), best_state, checkpoint_dir)
            best_state = _keep_best(model, progress, epoch, score, fields, best_state)
            history.append(entry)
            if checkpoint_dir is not None:
                _save_epoch(checkpoint_dir, model, best_state, optimisers, progress, identity, start, initial)
                saved = epoch
            if log is not None:                       # after the state is saved: a logged epoch is never lost
                log(entry)
        if checkpoint_dir is not None and progress["waited"] >= config.patience and not progress.get("final"):
            # stopped early: keep the best only (Ctrl-C meanwhile leaves the last epoch's state, as in an epoch)
            save_training_state(checkpoint_dir, model=model, best_state=best_state, optimisers=optimisers.optimisers,
                                progress=progress, identity=identity, final=True, initial=initial)
    except KeyboardInterrupt:
        _end_at_best(model, best_state)
        # Ctrl-C while epoch k's state is written leaves k - 1's on disk: --resume redoes k, so k is not finished
        finished = progress["epoch"] if checkpoint_dir is None else saved
        raise TrainingInterrupted(model=model, epoch=finished, best_epoch=progress["best_epoch"],
                                  best_score=progress["best_score"], history=history,
                                  checkpoint_dir=checkpoint_dir) from None
    except TrainingDiverged as err:
        _end_at_best(model, best_state)
        err.history = history
        raise
    _end_at_best(model, best_state)
    return LoopResult(progress["best_epoch"], progress["best_score"], progress["best_details"],
                      time.perf_counter() - start, history)


def _end_at_best(model: nn.Module, best_state: dict) -> None:
    """``model`` with its best epoch's parameters and no gradients: the last batch's ``.grad`` belongs to the last
    epoch's parameters, not these, and holds a model-sized copy in memory (set to None, as ``zero_grad`` does)."""
    model.load_state_dict(best_state)
    model.zero_grad(set_to_none=True)


def _starting_point(model: nn.Module, config: TrainConfig, optimisers: Optimisers,
                    checkpoint_dir: str | os.PathLike | None, resume: bool, data: Sequence,
                    log: Callable[[dict], None] | None) -> tuple[dict, dict, dict | None, InitialParameters | None]:
    """Where :func:`early_stopping` starts: ``(progress, best parameters, run identity, initial parameters)``,
    before epoch 1 with the model's parameters as the best, or as resumed from ``checkpoint_dir``
    (:func:`_resumed`); the identity and the initial parameters only where a state is kept."""
    progress = dict(epoch=0, best_score=-1.0, best_epoch=0, best_details=None, waited=0, history=[], elapsed=0.0)
    identity = _checked_identity(model, config, checkpoint_dir, resume, data)
    # a kept state stores the large parameters as the rows that differ from the initial ones
    initial = None if checkpoint_dir is None else InitialParameters.of(model)
    best_state = copy.deepcopy(model.state_dict()) if initial is None else initial.state
    if resume and has_training_state(checkpoint_dir):
        progress, best_state = _resumed(model, config, optimisers, checkpoint_dir, identity, initial, log)
    return progress, best_state, identity, initial


def _checked_identity(model: nn.Module, config: TrainConfig, checkpoint_dir: str | os.PathLike | None, resume: bool,
                      data: Sequence) -> dict | None:
    """The run's identity (:func:`~qpnlp.training.state.run_identity`) if a state is kept, else None.

    ``resume`` first puts back the state that a process killed between the two renames of its replacement left
    aside (``.NAME.*.old/NAME``, ``checkpoint_dir`` missing; :func:`~qpnlp._atomic.restore_replaced_directory`),
    with a RuntimeWarning naming both paths: without it the run started afresh and the state stayed aside."""
    from .state import data_fingerprint
    if resume and checkpoint_dir is None:
        raise ValueError("resume=True needs checkpoint_dir (the directory of the training state to continue from)")
    if checkpoint_dir is None:
        return None
    restored = restore_replaced_directory(checkpoint_dir) if resume else None
    if restored is not None:
        warnings.warn(f"{checkpoint_dir}: put back the training state of the last epoch saved, from {restored}, where "
                      f"a process killed while replacing it had left it", RuntimeWarning, stacklevel=outside_qpnlp())
    check_replaceable(checkpoint_dir, replaces=JSON_FILE)     # a user's own directory, or a state without its JSON
    return run_identity(model, config, data_fingerprint(*data))


def _resumed(model: nn.Module, config: TrainConfig, optimisers: Optimisers, checkpoint_dir: str | os.PathLike,
             identity: dict, initial: InitialParameters, log: Callable[[dict], None] | None) -> tuple[dict, dict]:
    """Progress and best parameters restored from ``checkpoint_dir``; ``log`` gets the restored history.

    ValueError for a state of more epochs than ``config.epochs`` (model back at ``initial.state``) or an early stop."""
    progress, saved_best = load_training_state(checkpoint_dir, model=model, optimisers=optimisers.optimisers,
                                               identity=identity, initial=initial, config=config)
    if progress["epoch"] > config.epochs:
        model.load_state_dict(initial.state)          # the caller's model as it was given
        raise ValueError(f"cannot resume from {checkpoint_dir}: that run already trained {progress['epoch']} epochs, "
                         f"more than epochs={config.epochs}; its result would not be that of a run of "
                         f"{config.epochs} epochs (resume with epochs >= {progress['epoch']}, or start afresh)")
    best_state = copy.deepcopy(model.state_dict()) if saved_best is None else saved_best
    if progress.get("final") and progress["waited"] < config.patience and progress["epoch"] < config.epochs:
        raise ValueError(f"cannot resume from {checkpoint_dir}: that run stopped early after epoch "
                         f"{progress['epoch']} ({progress['waited']} epochs without a better dev score) and "
                         f"kept only its best parameters; it cannot continue with patience {config.patience}")
    for entry in progress["history"] if log is not None else ():
        log({**entry, "restored": True})
    return progress, best_state


def _train_and_score(model: nn.Module, config: TrainConfig, epoch: int, train_epoch: Callable[[int], float],
                     evaluate: Callable[[], tuple[float, dict]]) -> tuple[float, float, dict]:
    """``(mean loss, dev score, history fields)`` of one epoch; a run-away parameter or a dev score that is not
    finite (:func:`_check_score`) makes it TrainingDiverged."""
    try:
        loss = train_epoch(epoch)
        _diverged(model, epoch, config)
        score, fields = evaluate()
        _check_score(score, epoch, config)
    except (ValueError, RuntimeError) as err:
        if isinstance(err, TrainingDiverged):
            raise
        _diverged(model, epoch, config, err)     # a model's own check may be the first to see the NaN
        raise
    return loss, score, fields


def _keep_best(model: nn.Module, progress: dict, epoch: int, score: float, fields: dict, best_state: dict) -> dict:
    """Advance ``progress`` to ``epoch`` (in place); returns the best parameters so far."""
    # the first score (finite: _check_score) is the best so far whatever its sign: the initial best_score (-1) is a
    # placeholder that a negative score (a negative dev loss, a log-likelihood) would never beat
    if score > progress["best_score"] or progress["best_epoch"] == 0:
        best_state = copy.deepcopy(model.state_dict())
        progress.update(epoch=epoch, best_score=score, best_epoch=epoch, best_details=fields, waited=0)
    else:
        progress.update(epoch=epoch, waited=progress["waited"] + 1)
    return best_state


def _save_epoch(checkpoint_dir: str | os.PathLike, model: nn.Module, best_state: dict, optimisers: Optimisers,
                progress: dict, identity: dict, start: float, initial: InitialParameters) -> None:
    """Write the training state of the epoch just finished (the best parameters only when not the current ones)."""
    progress["elapsed"] = time.perf_counter() - start
    save_training_state(checkpoint_dir, model=model,
                        best_state=None if progress["best_epoch"] == progress["epoch"] else best_state,
                        optimisers=optimisers.optimisers, progress=progress, identity=identity, initial=initial)


def _observe(model: nn.Module, entry: dict, observed: dict, best_state: dict,
             checkpoint_dir: str | os.PathLike | None) -> None:
    """Merge the observer's values into ``entry`` (:func:`merge_observation`); a ``ValueError`` (a key the trainer
    writes, or, with ``checkpoint_dir``, a value that the state's strict JSON cannot hold: NaN or infinite) is
    raised before the epoch's state is written, the model restored to its best epoch so far, as for a non-finite
    dev score (:func:`_check_score`)."""
    try:
        bad = None if checkpoint_dir is None else non_finite_value(observed)
        if bad is not None:
            raise ValueError(f"on_epoch returned {bad[1]} for {bad[0]!r} in epoch {entry['epoch']}: the training "
                             f"state in {checkpoint_dir} is written as strict JSON, which has no NaN or infinity; "
                             f"return a finite number or None there")
        merge_observation(entry, observed)
    except ValueError:
        _end_at_best(model, best_state)
        raise


def merge_observation(entry: dict, observed: dict) -> None:
    """Add an epoch observer's values to a history entry; a key the trainer already wrote is an error.

    Parameters
    ----------
    entry : dict
        An epoch's history entry, updated in place.
    observed : dict
        What the observer returned; a key already in ``entry`` raises ``ValueError``.
    """
    clash = sorted(set(observed) & set(entry))
    if clash:
        raise ValueError(f"on_epoch returned keys that the trainer writes itself: {clash}")
    entry.update(observed)
