"""A small trainer for classifiers: sparse-aware optimisers, early stopping on dev, progress bars.

:func:`early_stopping` is the one epoch loop of every qpnlp trainer
(:func:`fit` here, :func:`qpnlp.training.matching.fit_matching`): early
stopping on a dev score, the best-dev parameters restored at the end, a
per-epoch ``log``, the per-epoch training state for resuming
(:mod:`qpnlp.training.state`), a clean stop on divergence
(:class:`TrainingDiverged`: a non-finite loss or parameter) and on Ctrl-C
(:class:`TrainingInterrupted`, a ``KeyboardInterrupt`` that carries the
model restored to its best epoch so far).
"""

from __future__ import annotations

import copy
import math
import numbers
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from qpnlp import _checks
from qpnlp._checks import is_integer as _is_integer
from qpnlp._device import resolve_device
from qpnlp._errors import TrainingDiverged
from qpnlp.data.batching import EncodedTexts, iterate_batches

from .compiled import check_compile_mode, compiled_steps, training_forward, training_pad_multiple
from .length_chunks import DEFAULT_OVERHEAD, chunked, chunks_in_training
from .sparse_rmsprop import RowSparseAdam, SparseRMSprop
from .state import has_training_state, load_training_state, run_identity, save_training_state


OPTIMIZERS = ("adam", "rmsprop")
KERAS_RMSPROP = dict(alpha=0.9, eps=1e-7)
#: Seeds are in [0, SEEDS): what ``np.random.seed`` (and so :func:`seed_everything`) accepts; the rule of every
#: qpnlp trainer, Word2Fun's included (``qpnlp._checks``).
SEEDS = _checks.SEEDS


class ConfigError(ValueError):
    """A setting that a training config or a model config refuses (a usage error on the command line)."""


def check_seed(seed) -> int:
    """``seed`` if it is an integer in [0, 2**32) (:func:`seed_everything` takes it), else :class:`ConfigError`."""
    try:
        return _checks.check_seed(seed)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def check_integers(config, names: Sequence[str], *, optional: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` naming the first field of ``names`` that is not an integer (a bool is not;
    None is allowed for the ``optional`` ones), e.g. ``batch_size=1.5`` from a selection grid."""
    for name in names:
        value = getattr(config, name)
        if not (_is_integer(value) or (value is None and name in optional)):
            raise ConfigError(f"{name} must be an integer{' (or None)' if name in optional else ''}; "
                              f"got {type(value).__name__} {value!r}")


def check_reals(config, names: Sequence[str], *, optional: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` naming the first field of ``names`` that is not a real number (a bool is not;
    None is allowed for the ``optional`` ones), e.g. ``lr="0.1"`` from a hand-written config."""
    for name in names:
        value = getattr(config, name)
        if not ((isinstance(value, numbers.Real) and not isinstance(value, bool)) or
                (value is None and name in optional)):
            raise ConfigError(f"{name} must be a number{' (or None)' if name in optional else ''}; "
                              f"got {type(value).__name__} {value!r}")


@dataclass
class TrainConfig:
    """Optimisation settings.

    ``lr`` applies to dense parameters (Adam with ``weight_decay``),
    ``embedding_lr`` to sparse embedding tables (SparseAdam, which only
    touches the rows of the batch); ``phase_lr``, if set, replaces
    ``embedding_lr`` for the phase tables (embeddings registered as
    ``phase``, e.g. in :class:`~qpnlp.models.ComplexWordEmbedding`), whose
    entries are angles rather than amplitudes. ``optimizer="rmsprop"`` uses RMSprop
    instead (the thesis' QPDN optimiser, Table 5.4), with
    :class:`~qpnlp.training.sparse_rmsprop.SparseRMSprop` on the tables and
    Keras' constants (rho 0.9, eps 1e-7). Early stopping keeps the parameters of the
    epoch with the best dev accuracy and stops after ``patience`` epochs
    without improvement. ``length_chunks`` cuts each batch into chunks of rows
    of similar length, each padded only to its own longest row
    (:mod:`qpnlp.training.length_chunks`; the value is the cost of one more
    chunk in padded positions): the same outputs and gradients to rounding,
    for less padding; ``None`` passes every batch whole. Evaluation batches
    are chunked; training batches only for models that ask for it and have no
    active dropout (chunks would draw its masks in another order).
    ``compile`` runs the training steps' forward through ``torch.compile`` in
    that mode (``"default"``, ``"reduce-overhead"``, ...; ``None``: eager), for
    the models it speeds up (CNM; :mod:`qpnlp.training.compiled`).
    ``pad_to_multiple_of`` rounds the padded length of the training batches
    (and of their chunks) up to a multiple of it, so that they come in a few
    lengths; ``None`` is 8 under a mode with CUDA graphs (``"reduce-overhead"``,
    ``"max-autotune"``) on a GPU (they record one graph per length) and no
    rounding otherwise
    (:func:`~qpnlp.training.compiled.training_pad_multiple`).
    """

    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-2
    embedding_lr: float = 1e-2
    phase_lr: float | None = None
    weight_decay: float = 0.0
    patience: int = 5
    seed: int = 0
    device: str = "cpu"
    max_len: int | None = None
    progress: bool = True
    optimizer: str = "adam"
    length_chunks: int | None = DEFAULT_OVERHEAD
    compile: str | None = None
    pad_to_multiple_of: int | None = None

    def __post_init__(self) -> None:
        check_integers(self, ("epochs", "batch_size", "patience", "max_len", "length_chunks", "pad_to_multiple_of"),
                       optional=("max_len", "length_chunks", "pad_to_multiple_of"))
        check_reals(self, ("lr", "embedding_lr", "phase_lr", "weight_decay"), optional=("phase_lr",))
        check_seed(self.seed)
        try:
            check_compile_mode(self.compile)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {OPTIMIZERS}; got {self.optimizer!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.patience < 1:
            raise ConfigError(f"epochs, batch_size and patience must be >= 1; got {self.epochs}, "
                              f"{self.batch_size}, {self.patience}")
        rates = [self.lr, self.embedding_lr] + ([] if self.phase_lr is None else [self.phase_lr])
        if not all(math.isfinite(r) and r > 0 for r in rates):
            raise ConfigError(f"learning rates must be positive and finite; got {self.lr}, {self.embedding_lr}, "
                              f"{self.phase_lr}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ConfigError(f"weight_decay must be >= 0 and finite; got {self.weight_decay}")
        if self.max_len is not None and self.max_len < 1:
            raise ConfigError(f"max_len must be >= 1 (or None); got {self.max_len}")
        if self.pad_to_multiple_of is not None and self.pad_to_multiple_of < 1:
            raise ConfigError(f"pad_to_multiple_of must be >= 1 (or None); got {self.pad_to_multiple_of}")
        if self.length_chunks is not None and self.length_chunks < 0:
            raise ConfigError(f"length_chunks must be >= 0 (or None); got {self.length_chunks}")
        try:
            resolve_device(self.device, available=False)     # the name; fit() checks this machine has it
        except ValueError as error:
            raise ConfigError(str(error)) from None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class FitResult:
    best_epoch: int
    best_dev_accuracy: float
    seconds: float
    history: list[dict] = field(default_factory=list)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Optimisers:
    """SparseAdam for sparse embedding tables, Adam for everything else (one step() and zero_grad() for both).

    The SparseAdam is :class:`~qpnlp.training.sparse_rmsprop.RowSparseAdam` (torch's arithmetic on gathered rows).

    With ``config.optimizer == "rmsprop"``: SparseRMSprop and RMSprop.

    Only the rows of a batch are touched in the embedding tables, so a training
    step costs about as much as forward + backward (benchmarks/qpdn_train_step.py).
    """

    def __init__(self, model: nn.Module, config: TrainConfig) -> None:
        tables, phases = [], []
        for name, module in model.named_modules():
            if isinstance(module, nn.Embedding) and module.sparse and module.weight.requires_grad:
                is_phase = config.phase_lr is not None and name.rsplit(".", 1)[-1] == "phase"
                (phases if is_phase else tables).append(module.weight)
        sparse_ids = {id(p) for p in tables + phases}
        dense = [p for p in model.parameters() if p.requires_grad and id(p) not in sparse_ids]
        groups = [dict(params=params, lr=lr) for params, lr in ((tables, config.embedding_lr),
                                                                (phases, config.phase_lr)) if params]
        self.optimisers = []
        rmsprop = config.optimizer == "rmsprop"
        if groups:
            self.optimisers.append(SparseRMSprop(groups, lr=config.embedding_lr, **KERAS_RMSPROP) if rmsprop
                                   else RowSparseAdam(groups, lr=config.embedding_lr))
        if dense:
            dense_type = torch.optim.RMSprop if rmsprop else torch.optim.Adam
            extra = KERAS_RMSPROP if rmsprop else {}
            self.optimisers.append(dense_type(dense, lr=config.lr, weight_decay=config.weight_decay, **extra))

    def zero_grad(self) -> None:
        for opt in self.optimisers:
            opt.zero_grad(set_to_none=True)

    def step(self) -> None:
        for opt in self.optimisers:
            opt.step()


# Optimisers of torch.optim that accept sparse gradients (the others raise at their first step).
SPARSE_CAPABLE = (torch.optim.SparseAdam, torch.optim.SGD, torch.optim.Adagrad, SparseRMSprop)


def sparse_tables(model: nn.Module) -> list[str]:
    """Names of the trainable embedding tables with sparse gradients (``nn.Embedding(sparse=True)``)."""
    return [f"{name}.weight" if name else "weight" for name, module in model.named_modules()
            if isinstance(module, nn.Embedding) and module.sparse and module.weight.requires_grad]


def dense_gradients(model: nn.Module) -> nn.Module:
    """Give every embedding table dense gradients, so that any ``torch.optim`` optimiser trains ``model``.

    qpnlp's embedding tables produce sparse gradients (only the rows of the
    batch), which :class:`Optimisers` updates with SparseAdam or
    :class:`~qpnlp.training.sparse_rmsprop.SparseRMSprop`. After this call
    plain ``torch.optim.Adam(model.parameters())`` works too, at the cost
    of a dense update of every row per step (slow for large vocabularies).
    Returns ``model`` (changed in place).
    """
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            module.sparse = False
    return model


def check_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Raise a clear ``TypeError`` if ``optimizer`` cannot update ``model``'s sparse embedding tables.

    ``torch.optim.Adam`` (and RMSprop, AdamW, ...) refuse sparse gradients at
    their first step; call this after building your own optimiser to learn
    it up front, with the two ways out.
    """
    if isinstance(optimizer, SPARSE_CAPABLE):
        return
    owned = {id(p) for group in optimizer.param_groups for p in group["params"]}
    params = dict(model.named_parameters())
    tables = [name for name in sparse_tables(model) if id(params.get(name)) in owned]
    if tables:
        kind = type(optimizer).__name__
        raise TypeError(f"torch.optim.{kind} cannot update the sparse embedding tables {tables} (their gradients "
                        f"are sparse). Use qpnlp.training.Optimisers(model, TrainConfig(...)) (SparseAdam or "
                        f"SparseRMSprop on the tables, Adam or RMSprop on the rest), or call "
                        f"qpnlp.training.dense_gradients(model) first to train every parameter with {kind}")


# --------------------------------------------------------------------------- stopping cleanly
class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training: a ``KeyboardInterrupt`` carrying the model restored to its best epoch so far.

    Attributes: ``model``, ``epoch`` (the last finished epoch, 0 if none),
    ``best_epoch``, ``best_score`` (the dev score of ``best_epoch``),
    ``history``, ``checkpoint_dir`` (where the last epoch's training state
    is, if one was kept) and ``context`` (callers add what a command needs to
    save the model, e.g. the vocabulary).
    """

    def __init__(self, *, model: nn.Module, epoch: int, best_epoch: int, best_score: float, history: list[dict],
                 checkpoint_dir: str | os.PathLike | None) -> None:
        super().__init__(f"training interrupted after epoch {epoch}")
        self.model, self.epoch, self.best_epoch, self.best_score = model, epoch, best_epoch, best_score
        self.history, self.checkpoint_dir = history, checkpoint_dir
        self.context: dict = {}


def check_loss(loss: float, epoch: int, batch: int, config: TrainConfig) -> None:
    """Raise :class:`TrainingDiverged` for a NaN or infinite batch loss."""
    if not math.isfinite(loss):
        if epoch == 1 and batch == 1:               # no optimiser step yet: the learning rates are not the cause
            hint = ("before any optimiser step, so the model's initial parameters or its forward on this batch "
                    "give it, not the learning rates; check the model's output on this batch")
        else:
            hint = f"(lr {config.lr:g}, embedding_lr {config.embedding_lr:g}); try smaller learning rates"
        raise TrainingDiverged(f"training diverged in epoch {epoch}, batch {batch}: the loss is {loss} {hint}",
                               epoch=epoch, batch=batch, loss=loss)


def runaway_parameter(model: nn.Module) -> str | None:
    r"""What is wrong with the first parameter that holds a NaN or an infinity, or values so large that a product
    of two overflows (above :math:`10^{-3}\sqrt{\text{max}}` of its dtype, e.g. 1.8e16 in float32); else None."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not (param.is_floating_point() or param.is_complex()) or param.numel() == 0:
                continue
            largest = float(param.abs().max())
            if not math.isfinite(largest):
                return f"parameter {name} holds NaN or infinite values"
            if largest > 1e-3 * math.sqrt(torch.finfo(param.dtype).max):
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
    """What :func:`early_stopping` returns: the best epoch, its dev score and details, the history."""

    best_epoch: int
    best_score: float
    best_details: dict | None
    seconds: float
    history: list[dict]


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
        ``evaluate() -> (dev score, history fields)``; a higher score is better.
    on_epoch : callable, optional
        An observer ``on_epoch(model) -> dict`` merged into each epoch's history.
    log : callable, optional
        Called with each epoch's history entry (after ``on_epoch`` and after
        the training state is saved); on resume first with each restored
        entry, marked ``"restored": True``.
    checkpoint_dir : path-like, optional
        Write the training state there after every epoch (:mod:`qpnlp.training.state`).
    resume : bool, default False
        Continue from the state in ``checkpoint_dir`` if there is one: the
        result equals that of an uninterrupted run. Needs ``checkpoint_dir``;
        a state of more epochs than ``config.epochs`` is refused.
    data : sequence
        The training and dev data, fingerprinted so that a state is only
        resumed on the same data.

    Notes
    -----
    The model ends with its best-dev parameters, also when the loop stops on
    divergence (:class:`TrainingDiverged`) or Ctrl-C (:class:`TrainingInterrupted`).
    """
    progress = dict(epoch=0, best_score=-1.0, best_epoch=0, best_details=None, waited=0, history=[], elapsed=0.0)
    best_state = copy.deepcopy(model.state_dict())
    identity = _checked_identity(model, config, checkpoint_dir, resume, data)
    if resume and has_training_state(checkpoint_dir):
        progress, best_state = _resumed(model, config, optimisers, checkpoint_dir, identity, best_state, log)
    history = progress["history"]
    start = time.perf_counter() - progress["elapsed"]
    try:
        while progress["epoch"] < config.epochs and progress["waited"] < config.patience:
            epoch = progress["epoch"] + 1
            loss, score, fields = _train_and_score(model, config, epoch, train_epoch, evaluate)
            entry = dict(epoch=epoch, train_loss=loss, **fields, seconds=time.perf_counter() - start)
            if on_epoch is not None:
                merge_observation(entry, on_epoch(model))
            best_state = _keep_best(model, progress, epoch, score, fields, best_state)
            history.append(entry)
            if checkpoint_dir is not None:
                _save_epoch(checkpoint_dir, model, best_state, optimisers, progress, identity, start)
            if log is not None:                       # after the state is saved: a logged epoch is never lost
                log(entry)
    except KeyboardInterrupt:
        model.load_state_dict(best_state)
        raise TrainingInterrupted(model=model, epoch=progress["epoch"], best_epoch=progress["best_epoch"],
                                  best_score=progress["best_score"], history=history,
                                  checkpoint_dir=checkpoint_dir) from None
    except TrainingDiverged as err:
        model.load_state_dict(best_state)
        err.history = history
        raise
    if checkpoint_dir is not None and progress["waited"] >= config.patience and not progress.get("final"):
        save_training_state(checkpoint_dir, model=model, best_state=best_state, optimisers=optimisers.optimisers,
                            progress=progress, identity=identity, final=True)   # stopped early: keep the best only
    model.load_state_dict(best_state)
    return LoopResult(progress["best_epoch"], progress["best_score"], progress["best_details"],
                      time.perf_counter() - start, history)


def _checked_identity(model: nn.Module, config: TrainConfig, checkpoint_dir: str | os.PathLike | None, resume: bool,
                      data: Sequence) -> dict | None:
    """The run's identity (:func:`~qpnlp.training.state.run_identity`) if a state is kept, else None."""
    from .state import data_fingerprint
    if resume and checkpoint_dir is None:
        raise ValueError("resume=True needs checkpoint_dir (the directory of the training state to continue from)")
    return None if checkpoint_dir is None else run_identity(model, config, data_fingerprint(*data))


def _resumed(model: nn.Module, config: TrainConfig, optimisers: Optimisers, checkpoint_dir: str | os.PathLike,
             identity: dict, initial_state: dict, log: Callable[[dict], None] | None) -> tuple[dict, dict]:
    """Progress and best parameters restored from ``checkpoint_dir``; ``log`` gets the restored history.

    ValueError for a state of more epochs than ``config.epochs`` (model back at ``initial_state``) or an early stop."""
    progress, saved_best = load_training_state(checkpoint_dir, model=model,
                                               optimisers=optimisers.optimisers, identity=identity)
    if progress["epoch"] > config.epochs:
        model.load_state_dict(initial_state)          # the caller's model as it was given
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
    """``(mean loss, dev score, history fields)`` of one epoch; a run-away parameter makes it TrainingDiverged."""
    try:
        loss = train_epoch(epoch)
        _diverged(model, epoch, config)
        score, fields = evaluate()
    except (ValueError, RuntimeError) as err:
        if isinstance(err, TrainingDiverged):
            raise
        _diverged(model, epoch, config, err)     # a model's own check may be the first to see the NaN
        raise
    return loss, score, fields


def _keep_best(model: nn.Module, progress: dict, epoch: int, score: float, fields: dict, best_state: dict) -> dict:
    """Advance ``progress`` to ``epoch`` (in place); returns the best parameters so far."""
    # the first finite score is the best so far whatever its sign: the initial best_score (-1) is a
    # placeholder that a negative score (a negative dev loss, a log-likelihood) would never beat
    if score > progress["best_score"] or (progress["best_epoch"] == 0 and math.isfinite(score)):
        best_state = copy.deepcopy(model.state_dict())
        progress.update(epoch=epoch, best_score=score, best_epoch=epoch, best_details=fields, waited=0)
    else:
        progress.update(epoch=epoch, waited=progress["waited"] + 1)
    return best_state


def _save_epoch(checkpoint_dir: str | os.PathLike, model: nn.Module, best_state: dict, optimisers: Optimisers,
                progress: dict, identity: dict, start: float) -> None:
    """Write the training state of the epoch just finished (the best parameters only when not the current ones)."""
    progress["elapsed"] = time.perf_counter() - start
    save_training_state(checkpoint_dir, model=model,
                        best_state=None if progress["best_epoch"] == progress["epoch"] else best_state,
                        optimisers=optimisers.optimisers, progress=progress, identity=identity)

def train_step(model: Callable[..., torch.Tensor], optimisers: Optimisers, ids, mask, labels, *,
               length_chunks: int | None = None, pad_to_multiple_of: int | None = None) -> float:
    """One forward, backward and optimiser step; returns the loss.

    ``model``: the model, or what calls it (:func:`~qpnlp.training.compiled.training_forward`).

    ``length_chunks``: the forward on length-sorted chunks of the batch
    (:func:`~qpnlp.training.length_chunks.chunked`; ``None``: one pass), each
    chunk's width rounded up to ``pad_to_multiple_of``.
    """
    optimisers.zero_grad()
    loss = nn.functional.cross_entropy(chunked(model, [(ids, mask)], length_chunks, pad_to_multiple_of), labels)
    loss.backward()
    optimisers.step()
    return float(loss.detach())


@torch.no_grad()
def predict(model: nn.Module, data: EncodedTexts, *, batch_size: int = 256, device="cpu",
            max_len: int | None = None, length_chunks: int | None = DEFAULT_OVERHEAD) -> torch.Tensor:
    """Logits ``(N, C)`` in the order of ``data`` (each batch in length-sorted chunks, see :class:`TrainConfig`)."""
    model.eval()
    out = [_at_least_float32(chunked(model, [(ids.to(device), mask.to(device))], length_chunks)).cpu()
           for ids, mask, _ in iterate_batches(data, batch_size, max_len=max_len)]
    return torch.cat(out)


def _at_least_float32(logits: torch.Tensor) -> torch.Tensor:
    """Half-precision logits widened to float32; float64 ones kept (dtypes widen, never narrow)."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


def training_chunks(model: nn.Module, config: TrainConfig) -> int | None:
    """The ``length_chunks`` of the training steps: the config's for a model that asks for chunked training
    batches and has no active dropout (:func:`~qpnlp.training.length_chunks.chunks_in_training`), else ``None``."""
    return config.length_chunks if chunks_in_training(model) else None


def check_labels(labels: torch.Tensor, num_classes: int | None, what: str) -> None:
    """Raise ``ValueError`` unless every label of ``what`` is a class of the model, in [0, ``num_classes``).

    A label past the model's classes would fail inside the loss (or, at -100,
    be ignored by it) and count as an error in every accuracy without a word.
    ``num_classes`` None (a model that does not say) checks only for negatives.
    """
    if len(labels) == 0:
        return
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or (num_classes is not None and high >= num_classes):
        expected = "class indices >= 0" if num_classes is None else \
            f"class indices in [0, {num_classes}) for this model of {num_classes} classes"
        raise ValueError(f"the {what} labels must be {expected}; got label {low if low < 0 else high}")


def model_classes(model: nn.Module) -> int | None:
    """The number of classes a classifier's config declares (None if it has no ``config.num_classes``)."""
    classes = getattr(getattr(model, "config", None), "num_classes", None)
    return classes if _is_integer(classes) else None


def accuracy(model: nn.Module, data: EncodedTexts, **kwargs) -> float:
    """Fraction of correctly classified items (labels outside the model's classes are a ``ValueError``)."""
    logits = predict(model, data, **kwargs)
    check_labels(data.labels, logits.shape[-1], "scored")
    return float((logits.argmax(-1) == data.labels).float().mean())


def merge_observation(entry: dict, observed: dict) -> None:
    """Add an epoch observer's values to a history entry; a key the trainer already wrote is an error."""
    clash = sorted(set(observed) & set(entry))
    if clash:
        raise ValueError(f"on_epoch returned keys that the trainer writes itself: {clash}")
    entry.update(observed)


def fit(model: nn.Module, train: EncodedTexts, dev: EncodedTexts, config: TrainConfig,
        on_epoch: Callable[[nn.Module], dict] | None = None, *, log: Callable[[dict], None] | None = None,
        checkpoint_dir: str | os.PathLike | None = None, resume: bool = False) -> FitResult:
    """Train with early stopping on dev accuracy; the model ends with its best-dev parameters.

    The loop is :func:`early_stopping`: ``log`` gets each epoch's history
    entry, ``checkpoint_dir`` keeps the training state of the last epoch and
    ``resume=True`` continues from it (same result as an uninterrupted run);
    a NaN or infinite loss raises :class:`TrainingDiverged` and Ctrl-C
    :class:`TrainingInterrupted`, the model holding its best parameters so far.

    ``on_epoch(model)``, if given, is called after each epoch's dev score
    (the model in eval mode) and the dict it returns is merged into that
    epoch's ``history`` entry. It observes only: selection stays on dev
    accuracy (``benchmarks/reproduce_qpdn.py --no-selection --best-test-epoch-diagnostic``
    uses it to measure what reporting the best test epoch would have added).
    Its keys must not collide with the trainer's own (``epoch``,
    ``train_loss``, ``dev_accuracy``, ``seconds``).
    """
    for name, part in (("training", train), ("dev", dev)):
        if len(part) == 0:
            raise ValueError(f"the {name} set is empty; nothing to {'train on' if name == 'training' else 'select on'}")
        check_labels(part.labels, model_classes(model), name)
    device = resolve_device(config.device)
    model.to(device)
    optimisers = Optimisers(model, config)
    forward = training_forward(model, config.compile)

    def train_epoch(epoch: int) -> float:
        model.train()
        chunks = training_chunks(model, config)
        multiple = training_pad_multiple(config.pad_to_multiple_of, config.compile, device)
        batches = iterate_batches(train, config.batch_size, shuffle=True, seed=config.seed, epoch=epoch,
                                  max_len=config.max_len, multiple_of=multiple)
        losses = []
        with compiled_steps(config.compile), tqdm(batches, total=-(-len(train) // config.batch_size),
                                                  desc=f"epoch {epoch}", disable=not config.progress,
                                                  leave=False) as bar:
            for batch, (ids, mask, labels) in enumerate(bar, start=1):
                losses.append(train_step(forward, optimisers, ids.to(device), mask.to(device), labels.to(device),
                                         length_chunks=chunks, pad_to_multiple_of=multiple))
                check_loss(losses[-1], epoch, batch, config)
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
        return float(np.mean(losses))

    def evaluate() -> tuple[float, dict]:
        dev_acc = accuracy(model, dev, device=device, max_len=config.max_len, length_chunks=config.length_chunks)
        return dev_acc, dict(dev_accuracy=dev_acc)

    out = early_stopping(model, config, optimisers, train_epoch=train_epoch, evaluate=evaluate, on_epoch=on_epoch,
                         log=log, checkpoint_dir=checkpoint_dir, resume=resume,
                         data=(train.ids, train.labels, dev.ids, dev.labels))
    return FitResult(best_epoch=out.best_epoch, best_dev_accuracy=out.best_score, seconds=out.seconds,
                     history=out.history)
