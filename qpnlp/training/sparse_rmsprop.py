"""Optimisers for sparse embedding gradients (they update only the rows in the batch).

:class:`RowSparseAdam` is ``torch.optim.SparseAdam`` computed on the gathered rows
(same state, same arithmetic, several times faster); :class:`SparseRMSprop` is
RMSprop for sparse gradients.

torch ships SparseAdam and sparse Adagrad/SGD, but its RMSprop rejects sparse
gradients; the thesis trains QPDN with RMSprop (Table 5.4: lr 0.1, batch 16).
This is the "lazy" sparse variant of TensorFlow's ``ResourceSparseApplyRMSProp``:
for the rows :math:`i` present in the batch,

.. math::
    s_i \\leftarrow \\alpha s_i + (1 - \\alpha) g_i^2, \\qquad
    \\theta_i \\leftarrow \\theta_i - \\eta\\, g_i / (\\sqrt{s_i} + \\epsilon),

and the other rows (parameters and running averages) are left untouched. On a
batch that touches every row it equals ``torch.optim.RMSprop`` (tested).

Non-finite gradients are not checked, as in torch's optimisers (``SparseAdam``, ``RMSprop``): a NaN or an
infinity in a gradient row makes that row of the table and of the running averages (moments) NaN, and the
moments stay NaN however finite the later gradients are. A check here would read the gradient on the host at
every step (a synchronisation on CUDA). qpnlp's trainers stop instead: a non-finite batch loss raises
:class:`~qpnlp.training.TrainingDiverged` on that batch, after its step (:func:`~qpnlp.training.loop.check_loss`),
and a NaN or infinite parameter (a NaN gradient under a finite loss) at the end of its epoch
(:func:`~qpnlp.training.loop.runaway_parameter`). A training loop of one's own checks its loss likewise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from qpnlp._checks import add_param_group_fitting, is_real
from qpnlp._sparse import coalesced_coo

from . import adam_rows


def coalesced(grad: torch.Tensor) -> torch.Tensor:
    """``grad.coalesce()``, free when the rows are already sorted and unique.

    qpnlp's lookups produce such gradients, but autograd's accumulation into
    ``.grad`` drops their coalesced flag; one comparison over the row indices
    restores it instead of a sort.
    """
    if grad.is_coalesced():
        return grad
    if grad.sparse_dim() == 1:
        rows = grad._indices()[0]
        if rows.numel() < 2 or bool((rows[1:] > rows[:-1]).all()):
            return coalesced_coo(grad._indices(), grad._values(), grad.shape)
    return grad.coalesce()


def _row_sparse(grad: torch.Tensor) -> torch.Tensor:
    """``grad`` (sparse COO, any ``sparse_dim`` >= 1) coalesced, as a row-sparse gradient: ``sparse_dim`` 1, values
    ``(R, *grad.shape[1:])`` for the ``R`` distinct rows of its entries, zeros where a row has no entry.

    A gradient of ``sparse_dim`` k > 1 (``dense.to_sparse()`` on a table) has ``nnz`` entries of shape
    ``grad.shape[k:]``, not rows. torch converts no sparse tensor to another ``sparse_dim`` (``to_sparse(1)``
    refuses), and ``to_dense`` would allocate the whole table: the entries are scattered into the rows instead,
    whose indices are sorted in a coalesced gradient (``unique_consecutive``). ``sparse_dim`` 1 is returned as
    :func:`coalesced` gives it.
    """
    grad = coalesced(grad)
    if grad.sparse_dim() == 1:
        return grad
    indices, entries = grad._indices(), grad._values()
    rows, row_of_entry = torch.unique_consecutive(indices[0], return_inverse=True)
    values = entries.new_zeros((rows.numel(), *grad.shape[1:]))
    values[(row_of_entry, *indices[1:])] = entries      # entries of a coalesced gradient are unique: no sum needed
    return coalesced_coo(rows.unsqueeze(0), values, grad.shape)


#: RMSprop's :math:`|g| / \sqrt{s}` is at most :math:`1 / \sqrt{1 - \alpha}` (:math:`s \ge (1 - \alpha) g^2`), and a
#: few float32 ulps more: the limit of the rate keeps this margin (a rate at the bound itself stepped rows to inf).
_RMSPROP_ROUNDING = 1 + 1e-6


class SparseRMSprop(torch.optim.Optimizer):
    """Lazy RMSprop for parameters with sparse gradients (e.g. ``nn.Embedding(sparse=True)``).

    Parameters
    ----------
    params : iterable of torch.Tensor
        Parameters whose gradients are sparse COO tensors (dense gradients are
        accepted too and update every row). A gradient of more than one sparse
        dimension (``dense.to_sparse()``) updates the rows of its entries.
    lr : float
        Learning rate :math:`\\eta`.
    alpha : float, default 0.99
        Decay of the running average of squared gradients (torch's default;
        Keras uses 0.9).
    eps : float, default 1e-8

    A NaN or infinite gradient row is not refused: it makes the row and its running average NaN (module
    docstring; qpnlp's trainers raise ``TrainingDiverged``).
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (torch's rule), its ``lr``, ``alpha`` and ``eps`` (its own or the defaults) checked first:
        finite numbers with lr > 0, 0 <= alpha < 1, eps > 0, and the largest step lr / sqrt(1 - alpha) no larger
        than the parameters' dtype holds (``qpnlp._checks.add_param_group_fitting``; ``ValueError``)."""
        lr, alpha, eps = (param_group.get(key, self.defaults[key]) for key in ("lr", "alpha", "eps"))
        if not (_finite_numbers(lr, alpha, eps) and lr > 0 and 0.0 <= alpha < 1.0 and eps > 0):
            raise ValueError(f"need finite lr > 0, 0 <= alpha < 1, eps > 0; got lr={lr!r}, alpha={alpha!r}, "
                             f"eps={eps!r}")
        add_param_group_fitting(self, param_group, _RMSPROP_ROUNDING / math.sqrt(1 - alpha),
                                f"SparseRMSprop's step multiplies lr by up to 1 / sqrt(1 - alpha), alpha={alpha:g}")

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's, then :func:`check_state_shapes` (a state of other parameters is a ``ValueError``)."""
        _load_checked(self, state_dict)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.zeros_like(p)
                square_avg = state["square_avg"]
                if p.grad.is_sparse:
                    grad = _row_sparse(p.grad)  # repeated rows of a batch summed once; entries to rows
                    rows, values = grad.indices()[0], grad.values()
                    avg = square_avg.index_select(0, rows).mul_(alpha).addcmul_(values, values, value=1 - alpha)
                    square_avg.index_copy_(0, rows, avg)
                    p.index_add_(0, rows, values / avg.sqrt().add_(eps), alpha=-lr)
                else:
                    square_avg.mul_(alpha).addcmul_(p.grad, p.grad, value=1 - alpha)
                    p.add_(p.grad / square_avg.sqrt().add_(eps), alpha=-lr)  # addcdiv_: lr * g overflowed
        return loss


def _finite_numbers(*values) -> bool:
    """Whether every one of ``values`` is a finite real number, a Python or a NumPy one (a bool, a string or a
    tensor is not): the check of the optimisers' hyper-parameters, where NaN passes every comparison
    (``nan <= 0`` is False) and an infinite rate steps every row of the batch to -inf or NaN."""
    return all(is_real(v) and math.isfinite(v) for v in values)


def check_state_shapes(optimiser: torch.optim.Optimizer) -> None:
    """Raise ``ValueError`` if a tensor of ``optimiser``'s state (a moment, a running average) does not have its
    parameter's shape: a state loaded from other parameters, which a step would fail on inside torch, or (a
    larger table) read rows of without a word."""
    params = [p for group in optimiser.param_groups for p in group["params"]]
    for index, param in enumerate(params):
        for key, value in optimiser.state.get(param, {}).items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != param.shape:
                raise ValueError(f"{type(optimiser).__name__}: the state {key!r} of parameter {index} has shape "
                                 f"{tuple(value.shape)} but the parameter has shape {tuple(param.shape)}; the state "
                                 f"belongs to other parameters")


def _load_checked(optimiser: torch.optim.Optimizer, state_dict: dict) -> None:
    """``torch.optim.Optimizer.load_state_dict``, then :func:`check_state_shapes`; the old state is kept on failure."""
    before = dict(state=optimiser.state, param_groups=optimiser.param_groups)
    torch.optim.Optimizer.load_state_dict(optimiser, state_dict)
    try:
        check_state_shapes(optimiser)
    except ValueError:
        optimiser.__setstate__(before)
        raise


class RowSparseAdam(torch.optim.SparseAdam):
    """``torch.optim.SparseAdam`` on the gathered rows of each table (``index_select`` / ``index_copy_``).

    The same state (``step``, ``exp_avg``, ``exp_avg_sq``), hyper-parameters
    and arithmetic, operation for operation, as torch's implementation, which
    reads the moments through ``sparse_mask`` and writes them back as sparse
    additions; this one gathers the batch's rows once per moment and copies
    the new moments back (the rows of a coalesced gradient are unique). With these
    torch ops, results equal ``torch.optim.SparseAdam`` bit for bit (tested).
    Gradients with more than one sparse dimension use torch's implementation.

    On CPU, with numba installed (the extra ``fast``), the rows of float32/float64
    tables are updated by one compiled loop instead (:mod:`qpnlp.training.adam_rows`:
    the same arithmetic in the same order, each row read and written once; moments
    bit for bit, parameters to an ulp of the square root; 4.55x faster for a
    20000 x 300 table, benchmarks/results/speed/row_sparse_adam_loop.txt).

    As torch's SparseAdam, a NaN or infinite gradient row is not refused: it makes the row and its moments NaN
    (module docstring; qpnlp's trainers raise ``TrainingDiverged``).
    """

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (torch's rule), its ``lr``, ``betas`` and ``eps`` (its own or the defaults) checked first, as
        :class:`SparseRMSprop` checks its own: finite numbers with lr > 0, two betas in [0, 1), eps > 0
        (``ValueError``), and lr no larger than the parameters' dtype holds (1e39 on float32 tables stepped them to
        inf or NaN). torch's SparseAdam checks the constructor's values only, and lets an infinite rate pass."""
        lr, betas, eps = (param_group.get(key, self.defaults[key]) for key in ("lr", "betas", "eps"))
        pair = isinstance(betas, (tuple, list)) and len(betas) == 2
        if not (pair and _finite_numbers(lr, eps, *betas) and lr > 0 and eps > 0 and all(0 <= b < 1 for b in betas)):
            raise ValueError(f"need finite lr > 0, betas (two numbers in [0, 1)), eps > 0; got lr={lr!r}, "
                             f"betas={betas!r}, eps={eps!r}")
        add_param_group_fitting(self, param_group)

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's, then :func:`check_state_shapes` (a state of other parameters is a ``ValueError``)."""
        _load_checked(self, state_dict)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                grad = -p.grad if group.get("maximize", False) else p.grad
                if grad._values().numel() == 0:
                    continue
                self._rows_step(p, grad, state, group["lr"], beta1, beta2, group["eps"])
        return loss

    @staticmethod
    def _rows_step(p, grad, state, lr, beta1, beta2, eps) -> None:
        """One table's step: the compiled loop on the gradient's rows where they increase (a coalesced gradient's,
        marked or not: no check in torch ops), else on the coalesced gradient, torch ops where the loop does not
        apply, torch's own step for more than one sparse dimension."""
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        step = state["step"]
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        if grad.sparse_dim() == 1 and adam_rows.accepts(p, grad._values(), exp_avg, exp_avg_sq):
            options = dict(step_size=step_size, beta1=beta1, beta2=beta2, eps=eps)
            if not adam_rows.adam_rows(p, grad._indices()[0], grad._values(), exp_avg, exp_avg_sq, **options):
                grad = coalesced(grad)                      # rows repeated or out of order: summed once, sorted
                adam_rows.adam_rows(p, grad._indices()[0], grad._values(), exp_avg, exp_avg_sq, **options)
            return
        grad = coalesced(grad)
        if grad.sparse_dim() != 1:
            torch.optim._functional.sparse_adam([p], [grad], [exp_avg], [exp_avg_sq], [step], eps=eps, beta1=beta1,
                                                beta2=beta2, lr=lr, maximize=False)
            return
        rows, values = grad._indices()[0], grad._values()
        new_exp_avg, new_exp_avg_sq = _adam_moments(values, exp_avg.index_select(0, rows),
                                                    exp_avg_sq.index_select(0, rows), beta1, beta2)
        exp_avg.index_copy_(0, rows, new_exp_avg)       # rows are unique: a copy, not a read-modify-write
        exp_avg_sq.index_copy_(0, rows, new_exp_avg_sq)
        p.index_add_(0, rows, new_exp_avg.div_(new_exp_avg_sq.sqrt_().add_(eps)).mul_(-step_size))


def _adam_moments(values, old_exp_avg, old_exp_avg_sq, beta1, beta2):
    """Adam's new moments of the gathered rows, computed in place of temporaries.

    old <- b * old + (1 - b) * new, written old + (1 - b) * (new - old) as torch's SparseAdam does (it adds
    the update (1 - b) * (new - old) to the old moment), so the results are bit for bit torch's; the new
    moments are written back with one ``index_copy_`` each instead of torch's sparse additions (the step of
    one 20000 x 300 table 1.6x faster, benchmarks/row_sparse_adam.py; no measurable change in the whole QPDN
    step, benchmarks/results/SPEED.md).
    Compiling this chain (inductor) made the whole step of the tables only about 15% faster: not worth a
    compile in every training process.
    """
    new_exp_avg = values.sub(old_exp_avg).mul_(1 - beta1).add_(old_exp_avg)
    new_exp_avg_sq = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2).add_(old_exp_avg_sq)
    return new_exp_avg, new_exp_avg_sq
