"""How far Word2Fun's SGD step moves each parameter table, and the ranges it keeps the logistic step in.

One home for the step sizes that both implementations of the step use, the torch ops
(:func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`) and the compiled step
(:mod:`~qpnlp.word2fun.fused_step`), so that they cannot drift apart:

* :func:`table_lr_factor`: the multiplier of the learning rate :math:`\\eta` per table (the frequencies step
  :math:`\\eta / S`, the logistic step's centre :math:`\\eta \\cdot` ``centre_lr``, its log-rate
  :math:`\\eta \\cdot` :data:`STEP_RATE_LR`);
* :func:`row_step_scales`: the per-token factors of the rows' steps, :math:`-\\eta r_n` on the loss gradient
  and :math:`\\eta \\lambda_n r_n` on the roughness gradient (``row_lr`` :math:`r_n`, ``roughness_penalty``
  :math:`\\lambda_n`);
* :func:`step_bounds`: the ranges :math:`c_u \\in [0, 1]`, :math:`\\ell_u \\in [\\log k_{min}, \\log k_{max}]`
  that projected SGD keeps the logistic step in.
"""

from __future__ import annotations

import math

import torch

from qpnlp.word2fun.model import STEP_RATE_MAX, STEP_RATE_MIN, Word2Fun

__all__ = ["STEP_CENTRE_LR", "STEP_RATE_LR", "table_lr_factor", "row_step_scales", "step_bounds"]

#: Step multiplier of the centre :math:`c_u` of the logistic step (fraction of the span) for steps that start
#: mid-span, selected on the drift benchmark (``TrainConfig.step_centre_lr``; steps that start at their change
#: points use :data:`qpnlp.word2fun.changepoint.STEP_CENTRE_LR_AT_CHANGE_POINTS`).
STEP_CENTRE_LR = 0.03
#: Step multiplier of the log-rate :math:`\\ell_u = \\log k_u` of the logistic step.
STEP_RATE_LR = 10.0


def table_lr_factor(name: str, scale: float, centre_lr: float = STEP_CENTRE_LR) -> float:
    """The learning-rate multiplier of parameter table ``name`` (a key of :meth:`Word2Fun.tables
    <qpnlp.word2fun.model.Word2Fun.tables>`), for time scale :math:`S` = ``scale``.

    :math:`\\partial f/\\partial\\Omega \\propto \\tau` (step / S), :math:`\\partial f/\\partial K = \\tau`
    (step / S^2, i.e. SGD on the slope per unit of the whole span), the logistic step's centre ``centre_lr``
    and log-rate :data:`STEP_RATE_LR`; every other table 1.

    Parameters
    ----------
    name : str
        The table: ``"omega1"``, ``"omega2"``, ``"slope"``, ``"step_centre"``, ``"step_rate"`` have their own
        factor; any other name (``"base"``, ``"amplitude"``, ...) gets 1.
    scale : float
        :math:`S`, the model's ``time_scale.scale`` (:class:`~qpnlp.word2fun.functions.TimeScale`).
    centre_lr : float, default STEP_CENTRE_LR
        The factor of the logistic step's centres (``TrainConfig.step_centre_lr`` once resolved).
    """
    if name in ("omega1", "omega2"):
        return 1.0 / scale
    if name == "slope":
        return 1.0 / scale**2
    if name == "step_centre":
        return centre_lr
    if name == "step_rate":
        return STEP_RATE_LR
    return 1.0


def _times_lr(x: torch.Tensor, lr: float | torch.Tensor) -> torch.Tensor:
    """``x * lr`` in ``x``'s dtype: a float ``lr`` is rounded to it by the product, a tensor one first, the same."""
    return x * (lr.to(x.dtype) if isinstance(lr, torch.Tensor) else lr)


def row_step_scales(roughness_penalty: float | torch.Tensor, row_lr: torch.Tensor | None,
                    lr: float | torch.Tensor, dtype: torch.dtype) -> tuple:
    """``(row, rough)``: the factors of the rows' steps, rounded as the step rounds them.

    ``row`` = :math:`-\\eta r_n` multiplies :math:`\\partial L/\\partial f_n` before its pull-back: the float
    ``-lr`` without ``row_lr``, else a tensor of shape (N,) in ``dtype``.  ``rough`` = :math:`\\eta \\lambda_n
    r_n` multiplies the roughness gradient: a float or a tensor of shape (N,) in ``dtype``, or None when no
    roughness step is taken (a float penalty <= 0).  A tensor ``roughness_penalty`` always gives a tensor
    (zero rows step nothing), so the choice is made on the host without reading device values.

    ``lr`` may be a float64 tensor (N,), a learning rate per token (:mod:`~qpnlp.word2fun.fused_runs` takes
    tokens of several batches at once): each factor is then the one its float learning rate gives, and the
    floats above are float64 tensors (N,).

    Parameters
    ----------
    roughness_penalty : float or torch.Tensor
        :math:`\\lambda_n`: one float for every token, or a tensor (N,) per centre token.
    row_lr : torch.Tensor or None
        :math:`r_n`, (N,), the learning-rate multiplier per centre token; None: 1 for every token.
    lr : float or torch.Tensor
        :math:`\\eta`, the learning rate: a float, or a float64 tensor (N,) per token (above).
    dtype : torch.dtype
        The model's dtype, of the tensors returned.
    """
    row = -lr if row_lr is None else _times_lr(row_lr.to(dtype), -lr)
    if isinstance(roughness_penalty, torch.Tensor):
        lam = roughness_penalty if row_lr is None else roughness_penalty * row_lr
        return row, _times_lr(lam.to(dtype), lr)
    if roughness_penalty <= 0:
        return row, None
    if row_lr is None:
        return row, lr * roughness_penalty
    return row, _times_lr((row_lr * float(roughness_penalty)).to(dtype), lr)


def step_bounds(model: Word2Fun) -> dict:
    """The ranges projected SGD keeps the logistic step in, ``{parameter name: (lo, hi)}`` (empty without the step).

    :math:`c_u \\in [0, 1]` and :math:`\\ell_u = \\log k_u \\in [\\log k_{min}, \\log k_{max}]`
    (:data:`~qpnlp.word2fun.model.STEP_RATE_MIN`, :data:`~qpnlp.word2fun.model.STEP_RATE_MAX`). A centre outside
    the span or a rate below the minimum would make the step a constant (absorbed by :math:`B_u`) or a slope:
    the logistic term stays an S-shaped change inside the span, at most as slow as it starts. A distributed run
    projects the merged updates again (:class:`~qpnlp.word2fun.distributed.ParameterSync`).

    Parameters
    ----------
    model : Word2Fun
        The model; the keys are the names of its logistic step's weights (``step_centre.weight``,
        ``step_rate.weight``), the bounds its :math:`c_u` and :math:`\\ell_u`.
    """
    if not model.logistic:
        return {}
    return {"step_centre.weight": (0.0, 1.0), "step_rate.weight": (math.log(STEP_RATE_MIN), math.log(STEP_RATE_MAX))}
