"""A small trainer for classifiers: training steps, prediction and accuracy, progress bars.

:func:`fit` trains a classifier with the settings of a
:class:`~qpnlp.training.config.TrainConfig` and the sparse-aware
:class:`~qpnlp.training.optimisers.Optimisers`, through
:func:`qpnlp.training.loop.early_stopping`, the one epoch loop of every qpnlp
trainer (early stopping on dev, resuming, clean stops on divergence and Ctrl-C).
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from qpnlp._checks import check_seed, checked_copy
from qpnlp._checks import is_integer as _is_integer
from qpnlp._device import resolve_device
from qpnlp._modes import eval_mode
from qpnlp._repr import record_repr
from qpnlp.data.batching import EncodedTexts, iterate_batches
from qpnlp.hilbert import _validation as V

from .compiled import compiled_steps, training_forward, training_pad_multiple
from .config import TrainConfig
from .length_chunks import DEFAULT_OVERHEAD, chunked, chunks_in_training
from .loop import check_loss, early_stopping, epoch_bar
from .optimisers import Optimisers
from .state import _capture_rng, _restore_rng


@dataclass
class FitResult:
    """What :func:`fit` returns: the best epoch, its dev accuracy, the time taken and the history.

    Parameters
    ----------
    best_epoch : int
        The epoch (1-based) whose parameters the model holds after :func:`fit`: the best dev accuracy.
    best_dev_accuracy : float
        The dev accuracy of ``best_epoch``.
    seconds : float
        Wall time of the training, in seconds.
    history : list of dict, default []
        One entry per finished epoch: ``epoch``, ``train_loss``, ``dev_accuracy``, ``seconds`` and what ``on_epoch``
        added.
    """

    best_epoch: int
    best_dev_accuracy: float
    seconds: float
    history: list[dict] = field(default_factory=list)

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA); ``seed`` an integer in [0, 2**32) (else ValueError).

    These RNGs are the process's, one for all its threads: seeding them in one thread seeds them for every other.

    Parameters
    ----------
    seed : int
        An integer in [0, 2**32) (ValueError otherwise).
    """
    seed = check_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """:func:`seed_everything` for the block only: the global RNGs it seeds (Python's, NumPy's, torch's CPU one and
    the CUDA ones already in use) are put back as they were when the block ends, however it ends.

    A library call that seeds for its own reproducibility (:func:`~qpnlp.training.classification.train_prepared`,
    :func:`~qpnlp.training.matching.run_matching`) leaves its caller's random streams where they were: the draws a
    notebook makes after it are the ones it would have made without it. CUDA devices first used inside the block
    keep the seeded state (saving theirs beforehand would start CUDA for a run on the CPU).

    Not per thread: the RNGs are the process's, as torch's are (``torch.manual_seed``, ``torch.random.fork_rng``).
    Two blocks running at once in two threads (two trainings in a thread pool) draw from each other's streams
    (dropout masks, shuffles, initial parameters), so neither run is reproducible, and each block's end puts back
    the states it found, undoing the other's draws. Train in separate processes, or one after the other. A model
    in eval mode only queried (forward, :func:`predict`, the :mod:`qpnlp.interpret` functions) draws nothing and
    changes nothing: several threads may query one model at once.
    """
    tensors, values = _capture_rng()
    seed_everything(seed)
    try:
        yield
    finally:
        _restore_rng(tensors, values)


def train_step(model: Callable[..., torch.Tensor], optimisers: Optimisers, ids, mask, labels, *,
               length_chunks: int | None = None, pad_to_multiple_of: int | None = None) -> float:
    """One forward, backward and optimiser step (cross-entropy of the logits); returns the loss.

    Parameters
    ----------
    model : callable
        The classifier, ``model(ids, mask) -> (B, C)`` logits, or what calls it
        (:func:`~qpnlp.training.compiled.training_forward`).
    optimisers : Optimisers
        Zeroed before the forward, stepped after the backward.
    ids, mask : torch.Tensor
        The padded batch, ``(B, L)`` each (:func:`~qpnlp.data.batching.pad_batch`).
    labels : torch.Tensor
        ``(B,)`` integer class ids on the device of ``ids`` (int32 and uint8 are read as int64); a float or bool
        tensor, another shape or another device is refused before the forward.
    length_chunks : int or None, default None
        The forward on length-sorted chunks of the batch, this the cost of one more chunk in padded positions
        (:func:`~qpnlp.training.length_chunks.chunked`); None: one pass.
    pad_to_multiple_of : int or None, default None
        Round each chunk's width up to a multiple of it; None: no rounding.
    """
    labels = _batch_labels(labels, ids)
    optimisers.zero_grad()
    logits = chunked(_checked_logits(model), [(ids, mask)], length_chunks, pad_to_multiple_of)
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()
    optimisers.step()
    return float(loss.detach())


def _batch_labels(labels, ids) -> torch.Tensor:
    """``labels`` as the int64 ``(B,)`` targets of a batch of ``ids`` (B, L); static checks, no host sync.

    cross_entropy's own errors named no argument ("expected target dtype to be Long or Byte, but got Float").
    """
    V.check_tensor("labels", labels)
    if labels.dtype == torch.bool or labels.is_floating_point() or labels.is_complex():
        raise TypeError(f"labels must be integer class ids (a LongTensor); got {labels.dtype}")
    if isinstance(ids, torch.Tensor) and ids.dim() == 2:     # the model names ids that are not (B, L)
        if labels.shape != ids.shape[:1]:
            raise ValueError(f"labels must have shape ({ids.shape[0]},), one class per row of ids; got "
                             f"{tuple(labels.shape)}")
        V.check_same_device(("ids", ids), ("labels", labels))
    return labels.long()


@torch.no_grad()
def predict(model: nn.Module, data: EncodedTexts, *, batch_size: int = 256, device="cpu",
            max_len: int | None = None, length_chunks: int | None = DEFAULT_OVERHEAD) -> torch.Tensor:
    """Logits ``(N, C)`` in the order of ``data`` (each batch in length-sorted chunks, see
    :class:`~qpnlp.training.config.TrainConfig`).

    Refused with the argument named: a model that is not a classifier (a matching model: TypeError naming its
    trainer), ``data`` that is not a non-empty :class:`~qpnlp.data.batching.EncodedTexts`, a device this machine
    lacks (``device`` below), a ``length_chunks`` that is not an integer >= 0 or None.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier, ``model(ids, mask) -> (B, C)`` logits; scored in eval mode, then back in the train/eval
        modes it had (each submodule's), also when a batch raises.
    data : EncodedTexts
        The encoded texts (non-empty).
    batch_size : int, default 256
        Texts per forward.
    device : str or torch.device, default "cpu"
        Where the batches are put (the model must be there already): ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"``, present on this machine.
    max_len : int or None, default None
        Truncate texts to this many tokens; None: no truncation.
    length_chunks : int or None, default DEFAULT_OVERHEAD
        The cost of one more chunk, in padded positions (:func:`~qpnlp.training.length_chunks.chunked`); None:
        each batch whole.
    """
    _check_classifier(model, "predict")
    _check_texts("data", data)
    device = resolve_device(device)
    if length_chunks is not None and (not _is_integer(length_chunks) or length_chunks < 0):
        raise (ValueError if _is_integer(length_chunks) else TypeError)(
            f"length_chunks must be an integer >= 0 or None; got {length_chunks!r}")
    with eval_mode(model):
        forward = _checked_logits(model)
        out = [_at_least_float32(chunked(forward, [(ids.to(device), mask.to(device))], length_chunks)).cpu()
               for ids, mask, _ in iterate_batches(data, batch_size, max_len=max_len)]
    return torch.cat(out)


def _check_classifier(model: nn.Module, entry: str) -> None:
    """TypeError unless ``model`` is an ``nn.Module`` whose task is classification (``forward(ids, mask)``).

    A matching model (``task = "matching"``, ``forward(q_ids, q_mask, a_ids, a_mask)``) is named with the entry
    points of its trainer, instead of failing inside the first batch with "forward() missing 2 required
    positional arguments".
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"{entry}() needs a classifier (a torch.nn.Module); got {type(model).__name__}")
    task = getattr(model, "task", "classification")
    if task == "matching":
        raise TypeError(f"{type(model).__name__} is a matching model (task 'matching': it scores question / answer "
                        f"pairs); {entry}() takes classifiers. Train it with qpnlp.training.matching.fit_matching "
                        f"(or run_matching), score it with qpnlp.training.matching.evaluate_ranking")
    if task != "classification":
        trainer = " (Word2Fun trains with qpnlp.word2fun.fit)" if task == "temporal" else ""
        raise TypeError(f"{type(model).__name__} is a {task!r} model; {entry}() takes classifiers "
                        f"(task 'classification'){trainer}")


def _checked_logits(model: Callable[..., torch.Tensor]) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``model(ids, mask)`` with its output checked against the classification contract (metadata only, no sync).

    The logits must be one real floating-point tensor ``(B, C)``, B the rows of ``ids`` and C the config's
    ``num_classes`` where the model declares one (:func:`model_classes`); otherwise TypeError or ValueError naming
    the model and the shapes. Without the check a model of one's own that returned ``(B,)``, complex or integer
    values failed inside ``cross_entropy`` naming none of them, and one with an extra column trained a class that
    does not exist.

    Parameters
    ----------
    model : callable
        The classifier, or ``torch.compile`` of it (its ``_orig_mod`` names it).
    """
    owner = getattr(model, "_orig_mod", model)
    classes = model_classes(owner) if isinstance(owner, nn.Module) else None
    where = f"{type(owner).__name__}.forward(ids, mask)"

    def forward(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits = _real_output(model(ids, mask), where, "logits", "(B, C)")
        expected = (ids.shape[0], "C" if classes is None else classes)
        if logits.dim() != 2 or logits.shape[0] != ids.shape[0] or classes not in (None, logits.shape[1]):
            declared = "" if classes is None else f", C the num_classes={classes} of its config"
            raise ValueError(f"{where} must return logits of shape (B, C) = ({expected[0]}, {expected[1]}) for ids "
                             f"of shape {tuple(ids.shape)}{declared}; got shape {tuple(logits.shape)}")
        return logits

    return forward


def _check_matcher(model: nn.Module, entry: str) -> None:
    """TypeError unless ``model`` is an ``nn.Module`` that scores question / answer pairs (``task`` "matching", or
    no ``task``: a user's own module), ``forward(q_ids, q_mask, a_ids, a_mask) -> (B,)``.

    A classifier is named with its trainer, instead of failing inside the first batch with "forward() takes 3
    positional arguments but 5 were given".
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"{entry}() needs a matching model (a torch.nn.Module); got {type(model).__name__}")
    task = getattr(model, "task", "matching")
    if task != "matching":
        trainer = {"classification": "qpnlp.training.fit, scored with predict / accuracy",
                   "temporal": "qpnlp.word2fun.fit"}.get(task, "its own trainer")
        raise TypeError(f"{type(model).__name__} is a {task!r} model; {entry}() takes matching models (task "
                        f"'matching': forward(q_ids, q_mask, a_ids, a_mask)). Train it with {trainer}")


def checked_scores(model: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``model(q_ids, q_mask, a_ids, a_mask)`` with its output checked against the matching contract (metadata
    only, no sync), as ``_checked_logits`` checks a classifier's.

    The scores must be one real floating-point tensor ``(B,)``, B the rows of ``q_ids`` (and of ``a_ids``): one
    score per question / answer pair; otherwise TypeError or ValueError naming the model and the shapes. Without
    the check a model of one's own that returned ``(B, 1)`` made the pointwise loss compare every score with every
    label (a ``(B, B)`` broadcast), and complex or integer scores failed inside the loss naming none of them.

    Parameters
    ----------
    model : callable
        The matching model, or ``torch.compile`` of it (its ``_orig_mod`` names it).
    """
    where = f"{type(getattr(model, '_orig_mod', model)).__name__}.forward(q_ids, q_mask, a_ids, a_mask)"

    def forward(q_ids: torch.Tensor, q_mask: torch.Tensor, a_ids: torch.Tensor, a_mask: torch.Tensor) -> torch.Tensor:
        scores = _real_output(model(q_ids, q_mask, a_ids, a_mask), where, "scores", "(B,)")
        if scores.shape != q_ids.shape[:1]:
            raise ValueError(f"{where} must return scores of shape (B,) = ({q_ids.shape[0]},), one per question / "
                             f"answer pair, for q_ids of shape {tuple(q_ids.shape)} and a_ids of shape "
                             f"{tuple(a_ids.shape)}; got shape {tuple(scores.shape)}")
        return scores

    return forward


def _real_output(out, where: str, what: str, shape: str) -> torch.Tensor:
    """``out`` if it is one real floating-point tensor; else TypeError naming ``where`` (the model's forward),
    ``what`` it returns (``"logits"``, ``"scores"``) and their ``shape`` (e.g. ``"(B, C)"``)."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{where} must return the {what} as one tensor {shape}; got {type(out).__name__}")
    if not out.is_floating_point():
        hint = " (a complex model ends with a real read-out: Born probabilities, |z|^2, torch.view_as_real)" \
            if out.is_complex() else ""
        raise TypeError(f"{where} must return real floating-point {what}; got {out.dtype}{hint}")
    return out


def _check_encoded(name: str, data) -> None:
    """TypeError unless ``data`` is an :class:`~qpnlp.data.batching.EncodedTexts`."""
    if not isinstance(data, EncodedTexts):
        raise TypeError(f"{name} must be an EncodedTexts (qpnlp.data.EncodedTexts(ids, labels)); "
                        f"got {type(data).__name__}")


def _check_texts(name: str, data) -> None:
    """TypeError unless ``data`` is an :class:`~qpnlp.data.batching.EncodedTexts`; ValueError if it is empty."""
    _check_encoded(name, data)
    if len(data) == 0:
        raise ValueError(f"{name} is empty (0 texts); nothing to score")


def _at_least_float32(logits: torch.Tensor) -> torch.Tensor:
    """Half-precision logits widened to float32; float64 ones kept (dtypes widen, never narrow)."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


def training_chunks(model: nn.Module, config: TrainConfig) -> int | None:
    """The ``length_chunks`` of the training steps: the config's for a model that asks for chunked training
    batches (:func:`~qpnlp.training.length_chunks.chunks_in_training`), else ``None``."""
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
    """Fraction of correctly classified items: the prediction is the class of the largest logit, the lowest class
    index among equal ones (``torch.argmax``). Labels outside the model's classes and NaN logits are a
    ``ValueError`` (``argmax`` takes a NaN for the largest value: a NaN model would score the share of one class).

    Parameters
    ----------
    model : torch.nn.Module
        A classifier: ``model(ids, mask)`` gives logits ``(B, C)`` (TypeError for a matching model).
    data : EncodedTexts
        The encoded texts and their labels ``(N,)``, each in ``0..C-1``.
    **kwargs
        Passed to :func:`predict`: ``batch_size``, ``device``, ``max_len``, ``length_chunks``.
    """
    _check_classifier(model, "accuracy")
    logits = predict(model, data, **kwargs)
    check_labels(data.labels, logits.shape[-1], "scored")
    nan = torch.isnan(logits).any(-1)
    if bool(nan.any()):
        raise ValueError(f"the model gives NaN logits for {int(nan.sum())} of {len(nan)} texts (first: text "
                         f"{int(nan.nonzero()[0])}); their predicted class is undefined")
    return float((logits.argmax(-1) == data.labels).float().mean())


def fit(model: nn.Module, train: EncodedTexts, dev: EncodedTexts, config: TrainConfig,
        on_epoch: Callable[[nn.Module], dict] | None = None, *, log: Callable[[dict], None] | None = None,
        checkpoint_dir: str | os.PathLike | None = None, resume: bool = False) -> FitResult:
    """Train with early stopping on dev accuracy; the model ends with its best-dev parameters.

    The loop is :func:`~qpnlp.training.loop.early_stopping`: ``log`` gets each epoch's history
    entry, ``checkpoint_dir`` keeps the training state of the last epoch and
    ``resume=True`` continues from it (same result as an uninterrupted run);
    a NaN or infinite loss raises :class:`~qpnlp.training.TrainingDiverged` and Ctrl-C
    :class:`~qpnlp.training.loop.TrainingInterrupted`, the model holding its best parameters so far.

    ``on_epoch(model)``, if given, is called after each epoch's dev score
    (the model in eval mode) and the dict it returns is merged into that
    epoch's ``history`` entry. It observes only: selection stays on dev
    accuracy (``benchmarks/reproduce_qpdn.py --no-selection --best-test-epoch-diagnostic``
    uses it to measure what reporting the best test epoch would have added).
    Its keys must not collide with the trainer's own (``epoch``,
    ``train_loss``, ``dev_accuracy``, ``seconds``).

    Randomness: ``config.seed`` seeds each epoch's batch order (:func:`~qpnlp.data.batching.iterate_batches`);
    dropout draws from torch's global generator, which ``fit`` neither seeds nor puts back. To repeat a run bit
    for bit, seed it before each call (:func:`seed_everything`) and build the model from a seeded ``generator``,
    as :func:`~qpnlp.training.classification.train_prepared` does for one run (:func:`seeded`), with the same
    torch thread count and the same ``QPNLP_*_COMPILED`` switches (both change float rounding).

    A matching model (TypeError naming :func:`~qpnlp.training.matching.fit_matching`), ``train`` or ``dev``
    that is not an ``EncodedTexts`` and a ``config`` that is not a ``TrainConfig`` are refused first (TypeError).
    ``config`` is read once, through a copy made by its constructor: a field set after it was made
    (``config.epochs = 0``) is checked as the constructor checks it (``ConfigError``), and later changes to it do
    not reach the run.

    Calling ``fit`` again on the same model continues from the parameters it holds (its best epoch) with fresh
    optimiser state (Adam's or RMSprop's running averages start from zero), the epochs counted from 1 again (the
    batch orders of the first call repeat) and the best epoch chosen among the new epochs only: a result that
    differs from one longer run. To continue a run as if uninterrupted, train with ``checkpoint_dir`` and call
    again with ``resume=True`` and more ``epochs``.

    Parameters
    ----------
    model : torch.nn.Module
        A classification model: ``model(ids, mask)`` returns ``(B, num_classes)`` logits.
    train, dev : EncodedTexts
        The training texts and the texts the epoch is selected on.
    config : qpnlp.training.TrainConfig
        Epochs, batch size, learning rates, patience, device and the seed of the batch order (above).
    on_epoch : callable, optional
        ``on_epoch(model) -> dict``, merged into each epoch's ``history`` entry (above).
    log : callable, optional
        Called with each epoch's ``history`` entry.
    checkpoint_dir : str or os.PathLike, optional
        Where the training state of the last epoch is kept.
    resume : bool, optional
        Continue from the training state in ``checkpoint_dir``.
    """
    _check_classifier(model, "fit")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig (qpnlp.training.TrainConfig(...)); got {type(config).__name__}")
    config = checked_copy(config)          # a field set since the config was made is checked now
    for name, argument, part in (("training", "train", train), ("dev", "dev", dev)):
        _check_encoded(argument, part)
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
        with compiled_steps(config.compile), epoch_bar(batches, epoch, config.progress,
                                                       total=-(-len(train) // config.batch_size)) as bar:
            for batch, (ids, mask, labels) in enumerate(bar, start=1):
                losses.append(train_step(forward, optimisers, ids.to(device), mask.to(device), labels.to(device),
                                         length_chunks=chunks, pad_to_multiple_of=multiple))
                check_loss(losses[-1], epoch, batch, config)
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
        return float(np.mean(losses))

    def evaluate() -> tuple[float, dict]:
        model.eval()                                     # on_epoch sees it, and the model ends, in eval mode
        dev_acc = accuracy(model, dev, device=device, max_len=config.max_len, length_chunks=config.length_chunks)
        return dev_acc, dict(dev_accuracy=dev_acc)

    out = early_stopping(model, config, optimisers, train_epoch=train_epoch, evaluate=evaluate, on_epoch=on_epoch,
                         log=log, checkpoint_dir=checkpoint_dir, resume=resume,
                         data=(train.ids, train.labels, dev.ids, dev.labels))
    return FitResult(best_epoch=out.best_epoch, best_dev_accuracy=out.best_score, seconds=out.seconds,
                     history=out.history)
