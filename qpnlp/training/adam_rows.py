"""Adam's update of the rows of a sparse gradient as one compiled loop (numba), on CPU.

For the unique rows :math:`i` of a coalesced gradient :math:`g` (values, shape
(R, D)), with :math:`a_1 = 1 - \\beta_1`, :math:`a_2 = 1 - \\beta_2` and step
size :math:`s_t = \\eta \\sqrt{1 - \\beta_2^t} / (1 - \\beta_1^t)`,

.. math::
    m_i \\leftarrow (g_i - m_i)\\, a_1 + m_i, \\qquad
    v_i \\leftarrow (g_i^2 - v_i)\\, a_2 + v_i, \\qquad
    \\theta_i \\leftarrow \\theta_i + \\frac{m_i}{\\sqrt{v_i} + \\epsilon}\\, (-s_t)

element by element: torch's SparseAdam, operation for operation, in its order
(:class:`~qpnlp.training.sparse_rmsprop.RowSparseAdam`). In torch ops this is
two row gathers, a chain of element-wise passes over (R, D) temporaries and
three row scatters; torch has no fused row-wise optimiser step for sparse
gradients on CPU, so this module writes the loop out once: every row of the
parameter and its two moments is read and written once, nothing (R, D) is
allocated; the rows are checked (in range, strictly increasing) by the same loop before it writes. Without
``fastmath`` the arithmetic is IEEE, in float32 for float32
tables like torch's; the one difference is the square root, correctly rounded
here and within an ulp of it in torch's vectorised kernel, so the parameters
agree with torch's SparseAdam to about 1e-7 relative (tested) rather than bit
for bit.

numba is optional (``pip install "qpnlp[fast]"``): without it, for tensors the
loop does not take (:func:`accepts`), or with ``QPNLP_SPARSE_ADAM_COMPILED=0``,
:class:`~qpnlp.training.sparse_rmsprop.RowSparseAdam` uses torch ops.
"""

from __future__ import annotations

import math

import torch

from qpnlp import _numba

__all__ = ["available", "accepts", "adam_rows"]


def available() -> bool:
    """Whether the compiled loop can run: numba is installed and ``QPNLP_SPARSE_ADAM_COMPILED`` is not ``0``."""
    return _numba.enabled("QPNLP_SPARSE_ADAM_COMPILED")


def accepts(param: torch.Tensor, values: torch.Tensor, *moments: torch.Tensor) -> bool:
    """Whether the loop takes these: :func:`available`, 2-d tables, CPU, one float dtype, contiguous.

    Parameters
    ----------
    param : torch.Tensor
        The table updated, ``(V, d)``.
    values : torch.Tensor
        The gradient's rows, ``(n, d)``.
    *moments : torch.Tensor
        Adam's moment tables, ``(V, d)`` each.
    """
    return available() and param.dim() == 2 and _numba.takes(param, values, *moments)


def _adam_loop(param, exp_avg, exp_avg_sq, rows, values, a1, a2, eps, neg_step):  # pragma: no cover - compiled
    """0 after the update; before any write, 1 at a row outside the table, 2 where the rows do not increase."""
    last = -1
    for r in range(rows.shape[0]):
        if rows[r] < 0 or rows[r] >= param.shape[0]:
            return 1
        if rows[r] <= last:
            return 2
        last = rows[r]
    for r in range(rows.shape[0]):
        i = rows[r]
        for j in range(param.shape[1]):
            g = values[r, j]
            m = (g - exp_avg[i, j]) * a1 + exp_avg[i, j]
            v = (g * g - exp_avg_sq[i, j]) * a2 + exp_avg_sq[i, j]
            exp_avg[i, j] = m
            exp_avg_sq[i, j] = v
            param[i, j] = param[i, j] + (m / (math.sqrt(v) + eps)) * neg_step
    return 0


def adam_rows(param: torch.Tensor, rows: torch.Tensor, values: torch.Tensor, exp_avg: torch.Tensor,
              exp_avg_sq: torch.Tensor, *, step_size: float, beta1: float, beta2: float, eps: float) -> bool:
    """Adam's step on ``param[rows]`` and its moments, in place (the module's formulas), where ``rows`` increase.

    The loop checks the rows before it writes: rows that do not strictly increase (a gradient that is not
    coalesced) leave everything untouched and return False (the caller coalesces and calls again), a row outside
    the table raises ``IndexError``. A coalesced gradient's rows increase whether or not it is marked coalesced
    (autograd's accumulation into ``.grad`` drops the mark): no comparison in torch ops, no sort.

    Parameters
    ----------
    param, exp_avg, exp_avg_sq : torch.Tensor, shape (V, D)
        The table and its first and second moments (updated in place).
    rows : torch.Tensor, shape (R,), int64
        Rows of the gradient.
    values : torch.Tensor, shape (R, D)
        The gradient's rows.
    step_size : float
        :math:`s_t = \\eta \\sqrt{1 - \\beta_2^t} / (1 - \\beta_1^t)`.
    beta1, beta2, eps : float

    Returns
    -------
    bool
        Whether the step was taken (the rows strictly increase).
    """
    if values.shape != (rows.shape[0], param.shape[1]) or rows.dim() != 1:
        raise ValueError(f"values must be (R, D) = ({rows.shape[0]}, {param.shape[1]}) for rows (R,); got "
                         f"{tuple(values.shape)} and {tuple(rows.shape)}")
    if exp_avg.shape != param.shape or exp_avg_sq.shape != param.shape:
        raise ValueError(f"the moments must have the table's shape {tuple(param.shape)}; got "
                         f"{tuple(exp_avg.shape)} and {tuple(exp_avg_sq.shape)}")
    status = _numba.jit(_adam_loop)(param.detach().numpy(), exp_avg.numpy(), exp_avg_sq.numpy(), rows.numpy(),
                                    values.detach().numpy(), *(_numba.scalar(param, x) for x in (
                                        1 - beta1, 1 - beta2, eps, -step_size)))
    if status == 1:
        _numba.check_rows(rows, param.shape[0], "row")     # raises, with the range of the rows
    return status == 0
