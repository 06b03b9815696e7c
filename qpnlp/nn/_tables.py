r"""The lookup tables of :mod:`qpnlp.nn`, known as qpnlp's: a dense-only torch optimiser meeting their sparse
gradients is told qpnlp's ways out; every other optimiser step is left to torch.

The tables (``nn.Embedding`` of ``(V, d)`` rows) give sparse gradients (only the rows of the batch). Without the
step pre-hook below, ``torch.optim.Adam(model.parameters())`` fails inside its step with torch's hint to use
SparseAdam, which cannot update the dense parameters either. The hook is global (torch has no per-parameter
step hook), so it acts only where a sparse gradient belongs to one of qpnlp's tables: a user's own
``nn.Embedding(sparse=True)`` with Adam still gets torch's ``RuntimeError`` and message, untouched.

How a table is recognised: each table made by :func:`lookup_table` is kept in a weak set of modules, and the
hook compares the sparse parameters with the *current* ``weight`` of those modules. A mark on the parameter
itself would be lost: ``Parameter.__deepcopy__`` copies the data only (not the attributes), and ``module.to``
under ``torch.__future__.set_overwrite_module_params_on_conversion``, ``load_state_dict(assign=True)`` and
``torch.nn.utils.swap_tensors`` put another parameter in the module. The module survives all of these; a deep
copy or an unpickled model holds new modules, which the :class:`_Registration` kept in each table's
``__dict__`` adds to the set when it is itself copied or unpickled (no ``Tensor`` or ``Module`` subclass).
"""

from __future__ import annotations

import weakref

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

__all__ = ["lookup_table"]

# the modules made by lookup_table (and their copies); a table leaves the set when it is garbage collected
_TABLES: weakref.WeakSet[nn.Embedding] = weakref.WeakSet()


class _Registration:
    """Adds ``table`` to the set of qpnlp's tables now and wherever it is rebuilt: kept in the table's
    ``__dict__``, it is deep-copied and pickled with the table and rebuilt by ``_Registration(new table)``.
    It holds the table by a weak reference (no reference cycle: a dropped model is freed at once)."""

    __slots__ = ("_table",)

    def __init__(self, table: nn.Embedding) -> None:
        self._table = weakref.ref(table)
        _TABLES.add(table)

    def __reduce__(self):
        return _Registration, (self._table(),)


def lookup_table(*args, **kwargs) -> nn.Embedding:
    """``nn.Embedding(*args, **kwargs)``, known to the optimiser step hook of this module as one of qpnlp's
    tables (the same module, state dict and ``repr`` as a plain ``nn.Embedding``)."""
    table = nn.Embedding(*args, **kwargs)
    table._qpnlp_table = _Registration(table)
    return table


class SparseGradientsError(TypeError, RuntimeError):
    """A dense-only torch optimiser met the sparse gradients of qpnlp's tables. A ``TypeError`` (the wrong
    optimiser for these parameters) and a ``RuntimeError`` (what torch raises without qpnlp, so an
    ``except RuntimeError`` written for torch still catches it)."""


# torch.optim classes that raise on a sparse gradient at their first step (exact types: a subclass may cope).
_DENSE_ONLY_OPTIMIZERS = tuple(getattr(torch.optim, name) for name in (
    "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD", "Adadelta", "LBFGS")
    if hasattr(torch.optim, name))


def _table_weights() -> set[int]:
    """``id`` of the current ``weight`` of each live table of qpnlp."""
    return {id(table.weight) for table in list(_TABLES) if isinstance(getattr(table, "weight", None), torch.Tensor)}


def _refuse_sparse_gradients(optimizer: torch.optim.Optimizer, args, kwargs) -> None:
    """Global ``Optimizer.step`` pre-hook: a dense-only optimiser meeting sparse gradients of qpnlp's tables gets
    :class:`SparseGradientsError` with qpnlp's ways out, before any parameter is updated. Any other step (another
    optimiser, no sparse gradient, sparse gradients of parameters that are not qpnlp's tables) is torch's alone.
    Cost: one pass over the parameters' ``grad`` attributes per step, for the dense-only optimisers only."""
    if type(optimizer) not in _DENSE_ONLY_OPTIMIZERS:
        return
    sparse = [p for group in optimizer.param_groups for p in group["params"]
              if p.grad is not None and p.grad.is_sparse]
    if not sparse:
        return
    tables = _table_weights()
    shapes = [tuple(p.shape) for p in sparse if id(p) in tables]
    if shapes:
        kind = type(optimizer).__name__
        raise SparseGradientsError(
            f"torch.optim.{kind} cannot update parameters with sparse gradients (embedding tables of shapes "
            f"{shapes}). Use qpnlp.training.Optimisers(model, TrainConfig(...)) (SparseAdam on the tables, Adam on "
            f"the rest), or call qpnlp.training.dense_gradients(model) before the first step to train every "
            f"parameter with {kind}")


register_optimizer_step_pre_hook(_refuse_sparse_gradients)
