"""A small trainer for classifiers: sparse-aware optimisers, early stopping on dev, progress bars."""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from qpnlp.data.batching import EncodedTexts, iterate_batches

from .sparse_rmsprop import SparseRMSprop


OPTIMIZERS = ("adam", "rmsprop")
KERAS_RMSPROP = dict(alpha=0.9, eps=1e-7)


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
    without improvement.
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

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}; got {self.optimizer!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.patience < 1:
            raise ValueError(f"epochs, batch_size and patience must be >= 1; got {self.epochs}, "
                             f"{self.batch_size}, {self.patience}")
        if self.lr <= 0 or self.embedding_lr <= 0 or (self.phase_lr is not None and self.phase_lr <= 0):
            raise ValueError(f"learning rates must be positive; got {self.lr}, {self.embedding_lr}, {self.phase_lr}")

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
                                   else torch.optim.SparseAdam(groups, lr=config.embedding_lr))
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


def train_step(model: nn.Module, optimisers: Optimisers, ids, mask, labels) -> float:
    """One forward, backward and optimiser step; returns the loss."""
    optimisers.zero_grad()
    loss = nn.functional.cross_entropy(model(ids, mask), labels)
    loss.backward()
    optimisers.step()
    return float(loss.detach())


@torch.no_grad()
def predict(model: nn.Module, data: EncodedTexts, *, batch_size: int = 256, device="cpu",
            max_len: int | None = None) -> torch.Tensor:
    """Logits ``(N, C)`` in the order of ``data``."""
    model.eval()
    out = [model(ids.to(device), mask.to(device)).float().cpu()
           for ids, mask, _ in iterate_batches(data, batch_size, max_len=max_len)]
    return torch.cat(out)


def accuracy(model: nn.Module, data: EncodedTexts, **kwargs) -> float:
    """Fraction of correctly classified items."""
    return float((predict(model, data, **kwargs).argmax(-1) == data.labels).float().mean())


def merge_observation(entry: dict, observed: dict) -> None:
    """Add an epoch observer's values to a history entry; a key the trainer already wrote is an error."""
    clash = sorted(set(observed) & set(entry))
    if clash:
        raise ValueError(f"on_epoch returned keys that the trainer writes itself: {clash}")
    entry.update(observed)


def fit(model: nn.Module, train: EncodedTexts, dev: EncodedTexts, config: TrainConfig,
        on_epoch: Callable[[nn.Module], dict] | None = None) -> FitResult:
    """Train with early stopping on dev accuracy; the model ends with its best-dev parameters.

    ``on_epoch(model)``, if given, is called after each epoch's dev score
    (the model in eval mode) and the dict it returns is merged into that
    epoch's ``history`` entry. It observes only: selection stays on dev
    accuracy (``benchmarks/reproduce_qpdn.py --no-selection --best-test-epoch-diagnostic``
    uses it to measure what reporting the best test epoch would have added).
    Its keys must not collide with the trainer's own (``epoch``,
    ``train_loss``, ``dev_accuracy``, ``seconds``).
    """
    device = torch.device(config.device)
    model.to(device)
    optimisers = Optimisers(model, config)
    best = (-1.0, 0, copy.deepcopy(model.state_dict()))
    history, start, waited = [], time.perf_counter(), 0
    for epoch in range(1, config.epochs + 1):
        model.train()
        batches = iterate_batches(train, config.batch_size, shuffle=True, seed=config.seed, epoch=epoch,
                                  max_len=config.max_len)
        losses = []
        bar = tqdm(batches, total=-(-len(train) // config.batch_size), desc=f"epoch {epoch}",
                   disable=not config.progress, leave=False)
        for ids, mask, labels in bar:
            losses.append(train_step(model, optimisers, ids.to(device), mask.to(device), labels.to(device)))
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
        dev_acc = accuracy(model, dev, device=device, max_len=config.max_len)
        history.append(dict(epoch=epoch, train_loss=float(np.mean(losses)), dev_accuracy=dev_acc,
                            seconds=time.perf_counter() - start))
        if on_epoch is not None:
            merge_observation(history[-1], on_epoch(model))
        if dev_acc > best[0]:
            best, waited = (dev_acc, epoch, copy.deepcopy(model.state_dict())), 0
        else:
            waited += 1
            if waited >= config.patience:
                break
    model.load_state_dict(best[2])
    return FitResult(best_epoch=best[1], best_dev_accuracy=best[0], seconds=time.perf_counter() - start,
                     history=history)
