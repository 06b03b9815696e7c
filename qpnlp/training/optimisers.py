"""The trainers' optimisers: sparse-aware Adam or RMSprop, one ``step()`` and ``zero_grad()`` for the whole model.

Embedding tables with sparse gradients (``nn.Embedding(sparse=True)`` or
``nn.EmbeddingBag(sparse=True)``) get a
row-sparse optimiser, the unitary matrices of ``transition="cayley_step"``
their Cayley step, every other parameter the dense one; each parameter goes to
exactly one of them once, also when modules share it (tied tables); an optimiser of
``torch.optim`` that cannot take sparse gradients is refused up front
(:func:`check_optimizer`).
"""

from __future__ import annotations

import torch
from torch import nn

from qpnlp.nn.unitary import CayleyStepSGD, split_cayley_step_parameters

from .config import ConfigError, TrainConfig
from .sparse_rmsprop import RowSparseAdam, SparseRMSprop

__all__ = ["Optimisers", "sparse_tables", "dense_gradients", "check_optimizer", "check_phase_lr", "KERAS_RMSPROP"]

#: RMSprop's settings in Keras (the papers' public code), for ``TrainConfig(optimizer="rmsprop")``.
KERAS_RMSPROP = dict(alpha=0.9, eps=1e-7)

# The table modules whose ``sparse=True`` gives sparse gradients (rows of the batch only).
_TABLE_TYPES = (nn.Embedding, nn.EmbeddingBag)


class Optimisers:
    """SparseAdam for sparse embedding tables, Adam for everything else (one step() and zero_grad() for both).

    ``config.phase_lr`` is the learning rate of the phase tables (sparse embeddings named ``phase``); set for a
    model without one it is refused (:class:`~qpnlp.training.config.ConfigError`), not ignored.

    The SparseAdam is :class:`~qpnlp.training.sparse_rmsprop.RowSparseAdam` (torch's arithmetic on gathered rows).

    With ``config.optimizer == "rmsprop"``: SparseRMSprop and RMSprop.

    The state transitions of ``transition="cayley_step"`` (:class:`~qpnlp.nn.StateTransition`, a plain unitary
    parameter :math:`W`) take :class:`~qpnlp.nn.CayleyStepSGD` with step size ``config.lr`` instead, the
    poster's eq. 3, :math:`W \\leftarrow (I + \\tfrac{\\eta}{2} A)^{-1} (I - \\tfrac{\\eta}{2} A) W` with
    :math:`A = G W^H - W G^H`, which keeps :math:`W` unitary (no weight decay, no moments: a Euclidean
    step would leave the unitary group). They come last in ``optimisers``, only where the model has them.

    Only the rows of a batch are touched in the embedding tables, so a training
    step costs about as much as forward + backward (benchmarks/qpdn_train_step.py).

    Parameters
    ----------
    model : torch.nn.Module
        The model trained: its sparse embedding tables go to SparseAdam (or SparseRMSprop), its unitary state
        transitions to the Cayley step, every other parameter with ``requires_grad`` to Adam (or RMSprop).
    config : ~qpnlp.training.TrainConfig
        ``lr``, ``embedding_lr``, ``phase_lr``, ``weight_decay`` and ``optimizer`` are read.
    """

    def __init__(self, model: nn.Module, config: TrainConfig) -> None:
        check_phase_lr(model, config.phase_lr)
        tables, phases, seen = [], [], set()
        for name, module in _sparse_table_modules(model):
            if id(module.weight) in seen:     # a table tied to an earlier module's: listed twice, it stepped twice
                continue
            seen.add(id(module.weight))
            is_phase = config.phase_lr is not None and _is_phase_table(name)
            (phases if is_phase else tables).append(module.weight)
        stiefel = [w for w in split_cayley_step_parameters(model)[0] if w.requires_grad]
        own_ids = {id(p) for p in tables + phases + stiefel}
        dense = [p for p in model.parameters() if p.requires_grad and id(p) not in own_ids]
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
        if stiefel:
            self.optimisers.append(CayleyStepSGD(stiefel, lr=config.lr))

    def __repr__(self) -> str:
        """Each optimiser's class, parameter count and learning rates (torch prints every setting over lines)."""
        return f"Optimisers({', '.join(_optimiser_text(opt) for opt in self.optimisers)})"

    def zero_grad(self) -> None:
        for opt in self.optimisers:
            opt.zero_grad(set_to_none=True)

    def step(self) -> None:
        for opt in self.optimisers:
            opt.step()


def _optimiser_text(optimiser: torch.optim.Optimizer) -> str:
    """``Adam(params=5, lr=0.01)``: the class, the number of parameter tensors, the learning rate of each group."""
    lrs = [group["lr"] for group in optimiser.param_groups]
    params = sum(len(group["params"]) for group in optimiser.param_groups)
    return f"{type(optimiser).__name__}(params={params}, lr={lrs[0] if len(lrs) == 1 else lrs})"


# Optimisers of torch.optim that accept sparse gradients (the others raise at their first step).
SPARSE_CAPABLE = (torch.optim.SparseAdam, torch.optim.SGD, torch.optim.Adagrad, SparseRMSprop)


def sparse_tables(model: nn.Module) -> list[str]:
    """Names of the trainable embedding tables with sparse gradients (``nn.Embedding`` or ``nn.EmbeddingBag`` with ``sparse=True``).

    Parameters
    ----------
    model : torch.nn.Module
        The model searched, submodules included.
    """
    return [f"{name}.weight" if name else "weight" for name, module in _sparse_table_modules(model)]


def check_phase_lr(model: nn.Module, phase_lr: float | None) -> None:
    """:class:`~qpnlp.training.config.ConfigError` for a ``phase_lr`` set for a model without a trainable phase
    table (a sparse embedding named ``phase``), which :class:`Optimisers` would otherwise ignore. The commands ask
    it of a model built at placeholder sizes before any data is read
    (:func:`~qpnlp.training.classification.check_model_options`).

    Parameters
    ----------
    model : torch.nn.Module
        The model to train.
    phase_lr : float or None
        ``TrainConfig.phase_lr``; None (the phase tables, if any, take ``embedding_lr``) passes.
    """
    if phase_lr is not None and not any(_is_phase_table(name) for name, _ in _sparse_table_modules(model)):
        raise ConfigError(f"phase_lr (--phase-lr) {phase_lr:g} would be ignored: {type(model).__name__} has no "
                          "trainable phase table (a sparse embedding named 'phase'); leave it unset")


def _is_phase_table(name: str) -> bool:
    """Whether the module named ``name`` (``model.named_modules()``) is a phase table."""
    return name.rsplit(".", 1)[-1] == "phase"


def _sparse_table_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` of each ``nn.Embedding`` or ``nn.EmbeddingBag`` of ``model`` with ``sparse=True`` and a trainable
    weight (a weight tied to several modules comes once per module)."""
    return [(name, module) for name, module in model.named_modules()
            if isinstance(module, _TABLE_TYPES) and module.sparse and module.weight.requires_grad]


def dense_gradients(model: nn.Module) -> nn.Module:
    """Give every embedding table dense gradients, so that any ``torch.optim`` optimiser trains ``model``.

    qpnlp's embedding tables produce sparse gradients (only the rows of the
    batch), which :class:`Optimisers` updates with SparseAdam or
    :class:`~qpnlp.training.sparse_rmsprop.SparseRMSprop`. After this call
    plain ``torch.optim.Adam(model.parameters())`` works too, at the cost
    of a dense update of every row per step (slow for large vocabularies).
    Returns ``model`` (changed in place).

    Parameters
    ----------
    model : torch.nn.Module
        The model; every ``nn.Embedding`` and ``nn.EmbeddingBag`` in it is set to ``sparse=False``.
    """
    for module in model.modules():
        if isinstance(module, _TABLE_TYPES):
            module.sparse = False
    return model


def check_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Raise a clear ``TypeError`` if ``optimizer`` cannot update ``model``'s sparse embedding tables.

    ``torch.optim.Adam`` (and RMSprop, AdamW, ...) refuse sparse gradients at
    their first step; call this after building your own optimiser to learn
    it up front, with the two ways out.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose sparse embedding tables (:func:`sparse_tables`) are looked for among ``optimizer``'s
        parameters.
    optimizer : torch.optim.Optimizer
        The optimiser built for ``model``; SparseAdam, qpnlp's sparse optimisers and :class:`Optimisers` pass.
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
