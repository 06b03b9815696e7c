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
infinity in a gradient makes that entry of the table NaN (the other entries of its row step as usual), and that
entry's running averages (moments) NaN for a NaN, inf for an infinity (SparseRMSprop's average stays inf;
RowSparseAdam's moments turn NaN at the entry's next step, :math:`\\infty + (1 - \\beta)(g - \\infty)`); the
entry stays NaN, its moments not finite, however finite the later gradients are. qpnlp's trainers stop instead:
a non-finite batch loss raises :class:`~qpnlp.training.TrainingDiverged` on that batch, after its step
(:func:`~qpnlp.training.loop.check_loss`), and a NaN or infinite parameter (a NaN gradient under a finite loss) at
the end of its epoch (:func:`~qpnlp.training.loop.runaway_parameter`). A training loop of one's own checks its loss
likewise.

A finite gradient is different: one whose square overflows SparseRMSprop's running average (above 1.8e20 in
float32 at alpha 0.99) left no NaN to find, only an entry that stopped training, so its step refuses it
(``ValueError``; ``_check_square``, which reads one number per parameter and step on the host, a
synchronisation on CUDA). Both optimisers' steps also check the rates of ``param_groups`` again, as their
constructors do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

from qpnlp._checks import add_param_group_fitting, check_rate_fits, is_real
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
#: Adam's limit (``_adam_step_gain``) keeps it too.
_ROUNDING = 1 + 1e-6


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

    A NaN or infinite gradient entry is not refused: it makes that entry of the parameter NaN and its running
    average NaN or inf (module docstring; qpnlp's trainers raise ``TrainingDiverged``).
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (torch's rule), its ``lr``, ``alpha`` and ``eps`` (its own or the defaults) checked first:
        finite numbers with lr > 0, 0 <= alpha < 1, eps > 0, and the largest step lr / sqrt(1 - alpha) no larger
        than the parameters' dtype holds (``qpnlp._checks.add_param_group_fitting``; ``ValueError``)."""
        lr, alpha, eps = (param_group.get(key, self.defaults[key]) for key in ("lr", "alpha", "eps"))
        _check_hyper_parameters(lr, alpha, eps)
        add_param_group_fitting(self, param_group, *_step_gain(alpha))

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's, then :func:`check_state_shapes` (a state of other parameters is a ``ValueError``)."""
        _load_checked(self, state_dict)

    @torch.no_grad()
    def step(self, closure=None):
        """One step of every parameter with a gradient (the update of the module docstring).

        First every group's ``lr``, ``alpha`` and ``eps`` are checked again as :meth:`add_param_group` checks them,
        with the same ``ValueError``: a rate set in ``param_groups`` afterwards (a scheduler's, one's own) is not
        seen by the constructor, and one past the limit stepped rows to inf without a word. A few float comparisons
        per group, no tensor read; nothing is stepped when a group fails.

        A finite gradient entry whose square does not fit the running average (``_check_square``) is a
        ``ValueError`` naming the parameter, raised before that parameter or its running average is written (the
        parameters before it in ``param_groups`` have taken their step).
        """
        loss = None if closure is None else closure()
        for index, group in enumerate(self.param_groups):
            _check_hyper_parameters(group["lr"], group["alpha"], group["eps"])
            check_rate_fits(group, *_step_gain(group["alpha"]), where=f"param_groups[{index}]")
        for index, group in enumerate(self.param_groups):
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            for number, p in enumerate(group["params"]):
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.zeros_like(p)
                square_avg = state["square_avg"]
                def where(number=number, index=index, p=p):     # the message's words, built only for an error
                    return f"parameter {number} of param_groups[{index}], shape {tuple(p.shape)}"
                if p.grad.is_sparse:
                    grad = _row_sparse(p.grad)  # repeated rows of a batch summed once; entries to rows
                    rows, values = grad.indices()[0], grad.values()
                    avg = square_avg.index_select(0, rows).mul_(alpha).addcmul_(values, values, value=1 - alpha)
                    _check_square(avg, values, lambda: square_avg.index_select(0, rows), alpha, where)
                    square_avg.index_copy_(0, rows, avg)
                    p.index_add_(0, rows, values / avg.sqrt().add_(eps), alpha=-lr)
                else:
                    if _square_fits(p.grad, alpha):
                        square_avg.mul_(alpha).addcmul_(p.grad, p.grad, value=1 - alpha)
                    else:           # checked before written: a new table-sized average, then copied
                        avg = square_avg.mul(alpha).addcmul_(p.grad, p.grad, value=1 - alpha)
                        _check_square(avg, p.grad, lambda: square_avg, alpha, where)
                        square_avg.copy_(avg)
                    p.add_(p.grad / square_avg.sqrt().add_(eps), alpha=-lr)  # addcdiv_: lr * g overflowed
        return loss


def _check_hyper_parameters(lr, alpha, eps) -> None:
    """ValueError unless ``lr``, ``alpha`` and ``eps`` are finite numbers with lr > 0, 0 <= alpha < 1, eps > 0."""
    if not (_finite_numbers(lr, alpha, eps) and lr > 0 and 0.0 <= alpha < 1.0 and eps > 0):
        raise ValueError(f"need finite lr > 0, 0 <= alpha < 1, eps > 0; got lr={lr!r}, alpha={alpha!r}, "
                         f"eps={eps!r}")


def _step_gain(alpha: float) -> tuple[float, str]:
    """The largest factor RMSprop's step multiplies lr by, :math:`1 / \\sqrt{1 - \\alpha}` with the rounding margin
    ``_ROUNDING``, and the words that say so: the ``gain`` and ``why`` of
    ``qpnlp._checks.check_rate_fits``."""
    return (_ROUNDING / math.sqrt(1 - alpha),
            f"SparseRMSprop's step multiplies lr by up to 1 / sqrt(1 - alpha), alpha={alpha:g}")


def _square_fits(grad: torch.Tensor, alpha: float) -> bool:
    r"""Whether no entry of a dense ``grad`` can overflow a finite running average (``_check_square``), so that
    the table's average is updated in place, unchecked: :math:`|g| \le \sqrt{\text{max}} / 2` everywhere and
    :math:`\alpha \le 1 - 2^{-20}` (a complex or an empty ``grad`` too, as before these checks).

    Then :math:`\alpha s + (1 - \alpha) g^2 \le \text{max}\,(1 - \tfrac34 (1 - \alpha))` for any
    :math:`s \le \text{max}`, below the largest float by more than the rounding of its two products and its sum
    (:math:`3 \cdot 2^{-24}` relative in float32). Two reductions of the gradient and one number read on the host
    (60 us on a 2000 x 300 float32 table, one thread, where the step takes about 1 ms; ``aminmax`` took 110 us)
    instead of a checked copy of the table's average.
    """
    if grad.is_complex() or grad.numel() == 0:
        return True
    bound = math.sqrt(torch.finfo(grad.dtype).max) / 2
    largest = torch.maximum(grad.amax(), grad.amin().neg())    # |g| without a temporary; NaN if any is
    return alpha <= 1 - 2 ** -20 and float(largest) <= bound


def _check_square(avg: torch.Tensor, grad: torch.Tensor, old_avg: Callable[[], torch.Tensor], alpha: float,
                  where: Callable[[], str]) -> None:
    r"""ValueError when a finite entry of ``grad`` made its new running average ``avg`` (same shape, :math:`\alpha
    s + (1 - \alpha) g^2`) infinite from a finite old one (``old_avg()``, read only then); ``where()`` names the
    parameter in the message.

    In float32 that is any :math:`|g| > \sqrt{\text{max} / (1 - \alpha)}` (1.8e20 at alpha 0.99, so 1e36 or
    3e38 too). The average held inf, the entry's step :math:`g / \infty` was 0 then and at every later step (inf
    never decays): the entry stopped training without a word, where RMSprop's step is :math:`\eta / \sqrt{1 -
    \alpha}` in size. torch's RMSprop does the same. The step could be computed right only with a wider average
    (float64 or a scaled copy of every average, twice the state, no longer torch's arithmetic bit for bit), so this
    refuses it instead, before anything is written.

    The check reads one number on the host per parameter and step, the largest new average (``amax``, one pass
    over the batch's rows, 20 us for 800 x 300 rows, one thread; a dense gradient comes here only when
    ``_square_fits`` cannot rule an overflow out); only when it is not finite are the entries looked at. A NaN or
    infinite gradient, or an average that was not finite already, is left as before (module docstring): it is not
    an overflow of a finite square.
    """
    if avg.is_complex() or avg.numel() == 0 or math.isfinite(float(avg.amax())):
        return
    overflowed = avg.isinf() & grad.isfinite() & old_avg().isfinite()
    if bool(overflowed.any()):
        largest = float(grad[overflowed].abs().amax())
        limit = torch.finfo(avg.dtype).max
        raise ValueError(f"SparseRMSprop: a gradient entry of {where()}, is {largest:.3g}: "
                         f"(1 - alpha) g^2 (alpha={alpha:g}) exceeds the largest {avg.dtype} ({limit:.4g}), and the "
                         f"entry would stop training (step 0 from now on); nothing of this parameter was written. "
                         f"The gradients ran away: try a smaller learning rate, clip the gradients, or a float64 "
                         f"table")


def _finite_numbers(*values) -> bool:
    """Whether every one of ``values`` is a finite real number, a Python or a NumPy one (a bool, a string or a
    tensor is not): the check of the optimisers' hyper-parameters, where NaN passes every comparison
    (``nan <= 0`` is False) and an infinite rate steps every row of the batch to -inf or NaN."""
    return all((type(v) is float or is_real(v)) and math.isfinite(v) for v in values)  # a float: no ABC check


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

    As torch's SparseAdam, a NaN or infinite gradient entry is not refused: it makes that entry of the table NaN
    and its moments NaN or inf (module docstring; qpnlp's trainers raise ``TrainingDiverged``). Its step checks the
    rates of ``param_groups`` again, as the constructor does.
    """

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (torch's rule), its ``lr``, ``betas`` and ``eps`` (its own or the defaults) checked first, as
        :class:`SparseRMSprop` checks its own: finite numbers with lr > 0, two betas in [0, 1), eps > 0
        (``ValueError``), and Adam's largest step, lr times ``_adam_step_gain(betas)`` (7.27 at the defaults), no
        larger than the parameters' dtype holds (1e39 on float32 tables stepped them to inf or NaN, and so did 3e38
        after a run of zero gradients). torch's SparseAdam checks the constructor's values only, and lets an infinite
        rate pass."""
        lr, betas, eps = (param_group.get(key, self.defaults[key]) for key in ("lr", "betas", "eps"))
        _check_adam_hyper_parameters(lr, betas, eps)
        add_param_group_fitting(self, param_group, *_adam_step_gain(betas))

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's, then :func:`check_state_shapes` (a state of other parameters is a ``ValueError``)."""
        _load_checked(self, state_dict)

    @torch.no_grad()
    def step(self, closure=None):
        """torch's SparseAdam step, by rows (the class docstring).

        First every group's ``lr``, ``betas`` and ``eps`` are checked again as :meth:`add_param_group` checks them,
        with the same ``ValueError`` (the rate's limit naming ``param_groups[i]``): a rate set in ``param_groups``
        afterwards (a scheduler's, one's own) is not seen by the constructor, and 1e39 stepped a float32 table's
        rows to -inf, NaN wrote NaN, without a word. A few float comparisons per group, no tensor read; nothing is
        stepped (no parameter, moment or step count) when a group fails.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for index, group in enumerate(self.param_groups):
            _check_adam_hyper_parameters(group["lr"], group["betas"], group["eps"])
            check_rate_fits(group, *_adam_step_gain(group["betas"]), where=f"param_groups[{index}]")
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


def _check_adam_hyper_parameters(lr, betas, eps) -> None:
    """ValueError unless ``lr`` and ``eps`` are finite numbers > 0 and ``betas`` two finite numbers in [0, 1): the
    check of :class:`RowSparseAdam`'s groups, when added and at each step."""
    pair = isinstance(betas, (tuple, list)) and len(betas) == 2
    if not (pair and _finite_numbers(lr, eps, *betas) and lr > 0 and eps > 0 and all(0 <= b < 1 for b in betas)):
        raise ValueError(f"need finite lr > 0, betas (two numbers in [0, 1)), eps > 0; got lr={lr!r}, "
                         f"betas={betas!r}, eps={eps!r}")


def _adam_step_gain(betas) -> tuple[float, str]:
    r"""The largest factor Adam's step multiplies lr by, and the words that say so: the ``gain`` and ``why`` of
    ``qpnlp._checks.check_rate_fits`` for :class:`RowSparseAdam` (``betas``: checked ones).

    The step of an entry is :math:`\eta\, \hat m_t / \sqrt{\hat v_t}` (:math:`\epsilon` only shrinks it), with
    :math:`\hat m_t = \sum_{k<t} a_k g_{t-k}`, :math:`a_k = (1 - \beta_1) \beta_1^k / (1 - \beta_1^t)` and
    :math:`\hat v_t = \sum_{k<t} c_k g_{t-k}^2`, :math:`c_k = (1 - \beta_2) \beta_2^k / (1 - \beta_2^t)`. By
    Cauchy-Schwarz :math:`|\hat m_t| / \sqrt{\hat v_t} \le \sqrt{\sum_k a_k^2 / c_k}`, reached by gradients
    :math:`g_{t-k} \propto (\beta_1 / \beta_2)^k` (growing by :math:`\beta_2 / \beta_1` a step), and with
    :math:`q = \beta_1^2 / \beta_2 < 1` this is at most its limit for :math:`t \to \infty`,

    .. math::
        G = \frac{1 - \beta_1}{\sqrt{(1 - \beta_2)(1 - q)}}

    (:math:`(1 - \beta_2^t)(1 - q^t) \le (1 - \beta_1^t)^2`: the difference is a square), 7.27 at the defaults
    (0.9, 0.999), at least 1 (the first step's). Kingma & Ba's :math:`(1 - \beta_1) / \sqrt{1 - \beta_2}` (3.16,
    their section 2.1) is one gradient after zeros, and a table stepped past it: lr = max / 3.16 after 10000 zero
    gradients and 300 growing ones stepped a float32 entry to inf. ``_ROUNDING`` is kept as for RMSprop. With
    :math:`\beta_1 \ge \sqrt{\beta_2}` the ratio has no bound (it grows with the step count): the gain is then
    1, the first step's, and a long crafted run of gradients can still overflow.
    """
    beta1, beta2 = betas
    if beta1 ** 2 >= beta2:
        return 1.0, ""
    gain = (1 - beta1) / math.sqrt((1 - beta2) * (1 - beta1 ** 2 / beta2))
    return (_ROUNDING * gain,
            f"Adam's step multiplies lr by up to (1 - beta1) / sqrt((1 - beta2)(1 - beta1^2 / beta2)), "
            f"betas=({beta1:g}, {beta2:g})")


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
