"""RMSprop for sparse embedding gradients (updates only the rows in the batch).

torch ships SparseAdam and sparse Adagrad/SGD, but its RMSprop rejects sparse
gradients; the thesis trains QPDN with RMSprop (Table 5.4: lr 0.1, batch 16).
This is the "lazy" sparse variant of TensorFlow's ``ResourceSparseApplyRMSProp``:
for the rows :math:`i` present in the batch,

.. math::
    s_i \\leftarrow \\alpha s_i + (1 - \\alpha) g_i^2, \\qquad
    \\theta_i \\leftarrow \\theta_i - \\eta\\, g_i / (\\sqrt{s_i} + \\epsilon),

and the other rows (parameters and running averages) are left untouched. On a
batch that touches every row it equals ``torch.optim.RMSprop`` (tested).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class SparseRMSprop(torch.optim.Optimizer):
    """Lazy RMSprop for parameters with sparse gradients (e.g. ``nn.Embedding(sparse=True)``).

    Parameters
    ----------
    params : iterable of torch.Tensor
        Parameters whose gradients are sparse COO tensors (dense gradients are
        accepted too and update every row).
    lr : float
        Learning rate :math:`\\eta`.
    alpha : float, default 0.99
        Decay of the running average of squared gradients (torch's default;
        Keras uses 0.9).
    eps : float, default 1e-8
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8) -> None:
        if lr <= 0 or not 0.0 <= alpha < 1.0 or eps <= 0:
            raise ValueError(f"need lr > 0, 0 <= alpha < 1, eps > 0; got {lr}, {alpha}, {eps}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

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
                    grad = p.grad.coalesce()  # repeated rows of a batch summed once
                    rows, values = grad.indices()[0], grad.values()
                    avg = square_avg[rows].mul_(alpha).addcmul_(values, values, value=1 - alpha)
                    square_avg[rows] = avg
                    p.index_add_(0, rows, values / avg.sqrt().add_(eps), alpha=-lr)
                else:
                    square_avg.mul_(alpha).addcmul_(p.grad, p.grad, value=1 - alpha)
                    p.addcdiv_(p.grad, square_avg.sqrt().add_(eps), value=-lr)
        return loss
