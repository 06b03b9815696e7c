"""Word2Fun's hand-written sparse SGD step, its roughness penalty and the row scatter.

Training runs without autograd: :func:`centre_sgd_step` computes
:math:`f(u, t)` once per centre token, writes out the gradient of the
summed thesis loss (:func:`~qpnlp.word2fun.functions.word2fun_loss`), pulls it
back to the rows of the parameter tables with
:meth:`Word2Fun.function_vjp <qpnlp.word2fun.model.Word2Fun.function_vjp>` and
scatters the steps into only the rows the batch read (several hogwild threads
can share the model).

**Roughness penalty** (:func:`roughness`, ``TrainConfig.roughness_penalty``):
the mean squared speed of :math:`f(u, \\cdot)`, a smoothing-spline prior that
costs an amplitude in proportion to its frequency squared; it lets a fast
frequency ladder follow abrupt switches while damping year-to-year sampling
noise: the defaults of :func:`~qpnlp.word2fun.train.fit` use ``max_periods=6``
with :math:`\\lambda = 10^{-4}` and the logistic step (:math:`2 \\cdot 10^{-5}`
without it; selected on the planted-drift benchmark,
``benchmarks/word2fun_drift.py``).  With the logistic step the penalty also
costs the step's speed, :math:`k_u \\lVert A_u\\rVert^2 / 12`, and after each
step the step's centre and rate are projected onto their ranges
(``_project_step``).  ``row_lr`` gives the rows of
rare words a larger step (``TrainConfig.rare_lr_power``).

**Compiled.**  On CPU with numba, the default configuration (families II-IV, negatives shared by the batch)
runs the whole step as one compiled call (:mod:`~qpnlp.word2fun.fused_step`, without the GIL); otherwise the
torch ops below run, with the pairs in a compiled loop where they can (:mod:`~qpnlp.word2fun.pair_loop`).
``QPNLP_WORD2FUN_COMPILED=0`` turns both off; ``fused_step.ENABLED = False`` the first alone (tests).
A training loop takes its step from :func:`batch_step`, which prepares the compiled step once per run.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from qpnlp._checks import check_lr
from qpnlp.word2fun import fused_step, pair_loop
from qpnlp.word2fun.config import check_penalty
from qpnlp.word2fun.functions import SINUSOIDAL_FAMILIES
from qpnlp.word2fun.model import Word2Fun
from qpnlp.word2fun.step_sizes import STEP_CENTRE_LR, row_step_scales, step_bounds, table_lr_factor

__all__ = ["roughness", "sgd_step", "centre_sgd_step", "centre_sgd_step_tensor", "batch_step"]


def _check_sinusoidal(model: Word2Fun) -> None:
    if model.family not in SINUSOIDAL_FAMILIES:
        raise ValueError(f"the roughness penalty needs a sinusoidal family (II, III, IV); got {model.family!r}")


def _check_penalty(model: Word2Fun, roughness_penalty: float | torch.Tensor) -> None:
    """A positive penalty on a family without a roughness term refused before the step writes anything, as ``fit``
    refuses it (:func:`~qpnlp.word2fun.config.check_penalty_family`'s message); zero penalties pass.  A tensor is
    read (its largest value, a device read) only for those families.  A float penalty that is negative, infinite
    or NaN is refused, as ``TrainConfig`` refuses it (a negative one used to be taken as 0: no roughness step)."""
    if not isinstance(roughness_penalty, torch.Tensor) and not 0 <= roughness_penalty < math.inf:
        raise ValueError(f"roughness_penalty must be finite and >= 0; got {roughness_penalty!r}")
    if model.family in SINUSOIDAL_FAMILIES:
        return
    if isinstance(roughness_penalty, torch.Tensor):
        roughness_penalty = float(roughness_penalty.max()) if roughness_penalty.numel() else 0.0
    if roughness_penalty > 0:
        check_penalty(roughness_penalty, model.family)


def _span_frequencies(model: Word2Fun, rows: dict) -> torch.Tensor:
    """:math:`w = S\\,\\Omega` of the ``D`` amplitude coordinates: (N, D) from gathered rows (III, IV), or (D,) (II)."""
    S = model.time_scale.scale
    _check_sinusoidal(model)
    if model.family == "II":
        return torch.cat([model.omega_fixed, model.omega_fixed]) * S
    return torch.cat([rows["omega1"], rows["omega2"]], -1) * S


def roughness(model: Word2Fun, rows: dict) -> torch.Tensor:
    """Roughness of :math:`f(u, \\cdot)` for gathered rows (see :meth:`~qpnlp.word2fun.model.Word2Fun.tables`), families II-IV, shape (N,).

    .. math:: \\rho(u) = \\tfrac12 \\sum_{j=1}^{D} (S\\,\\Omega_{u,j} R_{u,j})^2

    with :math:`\\Omega_u = [\\Omega^{(1)}_u; \\Omega^{(2)}_u]`: the mean of
    :math:`\\lVert \\partial f(u, t) / \\partial s \\rVert^2` over the span, with
    :math:`s = (t - t_0) / (t_1 - t_0)`, for coordinates completing whole
    half-periods (otherwise approximately): the first-order Sobolev
    (smoothing-spline) roughness.  It does not depend on the time scale ``S``
    and weighs an amplitude by its frequency squared, so slow drift is almost
    free while fast wiggles are costly.  Differentiable (autograd) in the rows.

    With the logistic step (``model.logistic``) its own roughness
    :math:`k_u \\lVert A_u \\rVert^2 / 12` (``_step_roughness``) is added
    (the cross terms between the step and the sinusoids are left out: each
    part is smoothed on its own).

    Parameters
    ----------
    model : Word2Fun
        A model of family II, III or IV (its time scale and logistic step are read).
    rows : dict of str to torch.Tensor
        The rows of the model's tables gathered for ``N`` words, ``(N, n)`` each: ``amplitude``; ``omega1`` and
        ``omega2`` for families III and IV (II reads its fixed frequencies); ``step_amplitude`` and ``step_rate``
        with the logistic step.
    """
    rho = 0.5 * (_span_frequencies(model, rows) * rows["amplitude"]).square().sum(-1)
    if model.logistic:
        rho = rho + _step_roughness(model, rows)
    return rho


def _step_roughness(model: Word2Fun, rows: dict) -> torch.Tensor:
    """Roughness of the logistic step, :math:`\\tfrac{1}{12} k_u \\lVert A_u \\rVert^2`, shape (N,).

    :math:`\\tfrac12 \\int (\\partial_s A\\sigma(k(s - c)))^2 ds = \\tfrac12 \\lVert A\\rVert^2 k \\int
    \\sigma'(z)^2 dz` and :math:`\\int_{-\\infty}^{\\infty} \\sigma'(z)^2 dz = 1/6` (exact for a
    transition inside the span, an upper bound otherwise): a sharp step costs in
    proportion to its rate, a ramp over the span almost nothing.
    """
    k = torch.exp(model.step_log_rate(rows)).squeeze(-1)
    return rows["step_amplitude"].square().sum(-1) * k / 12.0


def _add_roughness_steps(model: Word2Fun, rows: dict, steps: dict, step: float | torch.Tensor) -> None:
    """``steps[name] -= step * d rho / d rows[name]`` for the amplitudes and (III, IV) the frequencies.

    With :math:`w = S\\Omega`: :math:`\\partial\\rho/\\partial R_j = w_j^2 R_j` and
    :math:`\\partial\\rho/\\partial\\Omega_j = S^2 \\Omega_j R_j^2 = S\\,(w_j R_j) R_j`, both from
    :math:`w_j R_j`, one half of the coordinates at a time.  ``step`` is a float or one weight per
    centre token, shape (N,).
    """
    _check_sinusoidal(model)
    st = step[:, None] if isinstance(step, torch.Tensor) else step
    if model.logistic:  # d/dA = k A / 6, d/dl = k |A|^2 / 12 (k = e^l)
        A = rows["step_amplitude"]
        k_st = torch.exp(model.step_log_rate(rows)).mul_(st)
        steps["step_amplitude"].addcmul_(A, k_st, value=-1.0 / 6.0)
        steps["step_rate"].addcmul_(A.square().sum(-1, keepdim=True), k_st, value=-1.0 / 12.0)
    r, S = rows["amplitude"], model.time_scale.scale
    if model.family == "II":
        w = _span_frequencies(model, rows)
        _sub_scaled(steps["amplitude"], (w * r).mul_(w), st)
        return
    h, st_S = model.dim // 2, st * S
    for name, half in (("omega1", slice(None, h)), ("omega2", slice(h, None))):
        w, r_half = rows[name] * S, r[:, half]
        wr = w.mul_(r_half)
        _sub_scaled(steps["amplitude"][:, half], wr * rows[name], st_S)  # w^2 R = (w R) Omega S
        _sub_scaled(steps[name], wr.mul_(r_half), st_S)


def _sub_scaled(out: torch.Tensor, x: torch.Tensor, scale: float | torch.Tensor) -> None:
    """``out -= scale * x`` in place, ``scale`` a float or a column (N, 1) broadcast over ``x``'s columns."""
    if isinstance(scale, torch.Tensor):
        out.addcmul_(x, scale, value=-1.0)
    else:
        out.add_(x, alpha=-scale)


def _scatter_rows(weight: torch.Tensor, index: torch.Tensor, src: torch.Tensor, alpha: float = 1.0) -> None:
    """``weight[index[i]] += alpha * src[i]``, repeated rows accumulating; ``src`` (a temporary) is scaled in place.

    ``index_add_``: on CPU (torch 2.13) as fast as ``scatter_add_`` with an
    expanded index; its own ``alpha`` argument is not used, it costs more than
    the multiplication in place (about 70 us even for a (1719, 1) update).
    """
    if alpha != 1.0:
        src = src.mul_(alpha)
    weight.index_add_(0, index, src)


#: Pairs per pass of the positive term on CPU: the (chunk, D) temporaries of a pass stay in the
#: core's L2 cache, where one pass over a whole batch (8192 x 100 floats, 3.3 MB per array) streams
#: every array through memory.  CPU ms per step of batches of 8192 pairs, the default then
#: (``benchmarks/word2fun_step.py --pair-chunks``): 512: 5.07, 1024: 4.98, 2048: 5.24, one pass:
#: 5.39.  The passes run in pair order, so the accumulated gradients equal those of one pass.
PAIR_CHUNK = 1024


def _pair_chunk(n_pairs: int, device: torch.device) -> int:
    """Pairs per pass of the positive term: :data:`PAIR_CHUNK` on CPU, all of them on an accelerator."""
    return PAIR_CHUNK if device.type == "cpu" else max(n_pairs, 1)


def _positive_term(f: torch.Tensor, H: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor,
                   chunk: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The positive pairs' loss :math:`-\\sum_b \\log\\sigma(p_b)`, :math:`p_b = f_{n(b)} \\cdot h_{c(b)}`.

    Returns ``(dL/df (N, D), dL/dp (B, 1), loss)`` with :math:`\\partial L/\\partial p = \\sigma(p) - 1`,
    computed ``chunk`` pairs at a time (few operations per pass: the pass's views come from ``split``
    and its results are written into slices of ``p`` and ``dL/dp``), or in one compiled loop
    (:mod:`qpnlp.word2fun.pair_loop`) where numba is installed.
    """
    if pair_loop.accepts(f, H):
        return pair_loop.logistic_pairs(f, H, pair_centre, context)
    B = context.shape[0]
    g_f = torch.zeros_like(f)
    pos = torch.empty(B, 1, dtype=f.dtype, device=f.device)
    gp = torch.empty_like(pos)
    for c, n, p, g in zip(context.split(chunk), pair_centre.split(chunk), pos.split(chunk), gp.split(chunk)):
        hp = H.index_select(0, c)
        torch.sum(f.index_select(0, n).mul_(hp), -1, keepdim=True, out=p)
        torch.sigmoid(p, out=g).sub_(1.0)
        g_f.index_add_(0, n, hp.mul_(g))
    return g_f, gp, -F.logsigmoid(pos).sum()


def _per_pair_negatives(f: torch.Tensor, H: torch.Tensor, g_f: torch.Tensor, pair_centre: torch.Tensor,
                        negatives: torch.Tensor, weight: float, lr: float) -> torch.Tensor:
    """The negative term with ``k`` negatives drawn per pair: :math:`-\\frac{c}{k}\\sum_{b,i}\\log\\sigma(-q_{bi})`.

    Adds :math:`\\partial L/\\partial f` into ``g_f`` (N, D) and, when ``lr`` > 0,
    steps the negatives' compass rows by :math:`-\\eta\\,\\partial L/\\partial h`
    (gradients at the compass before this step).  ``negatives`` is (B, k).
    Returns the term's loss.
    """
    B, k = negatives.shape
    neg_idx = negatives.reshape(-1)
    if pair_loop.accepts(f, H, g_f):
        neg_centre = pair_centre.repeat_interleave(k)
        _, gn, loss = pair_loop.logistic_pairs(f, H, neg_centre, neg_idx, positive=False, weight=weight / k, g_f=g_f)
        if lr > 0:
            pair_loop.add_compass_steps(H, f, neg_centre, neg_idx, gn.mul_(-lr))
        return loss
    fp = f.index_select(0, pair_centre)
    hn = H.index_select(0, neg_idx).view(B, k, -1)
    q = torch.bmm(hn, fp.unsqueeze(-1)).squeeze(-1)  # (B, k)
    gn = torch.sigmoid(q).div_(k)
    if weight != 1.0:
        gn.mul_(weight)
    g_f.index_add_(0, pair_centre, torch.bmm(gn.unsqueeze(1), hn).squeeze(1))
    if lr > 0:
        _scatter_rows(H, neg_idx, (gn.unsqueeze(-1) * fp.unsqueeze(1)).reshape(B * k, -1), -lr)
    return -F.logsigmoid(-q).sum() / k * weight


def _add_positive_compass(H: torch.Tensor, f: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor,
                          step: torch.Tensor, chunk: int) -> None:
    """``H[context[b]] += step[b] * f[pair_centre[b]]`` for the pairs ``b``, ``chunk`` pairs at a time or compiled."""
    if pair_loop.accepts(H, f, step):
        pair_loop.add_compass_steps(H, f, pair_centre, context, step)
        return
    for c, n, g in zip(context.split(chunk), pair_centre.split(chunk), step.split(chunk)):
        _scatter_rows(H, c, f.index_select(0, n).mul_(g))


def sgd_step(
    model: Word2Fun,
    centre: torch.Tensor,
    context: torch.Tensor,
    negatives: torch.Tensor,
    times: torch.Tensor,
    lr: float,
) -> float:
    """One SGD step on the *summed* thesis loss of a batch of pairs, touching only the rows it reads.

    :func:`centre_sgd_step` with one centre token per pair.  Shapes:
    ``centre``, ``context``, ``times`` (B,), ``negatives`` (B, k) per pair or
    (k,) shared by the batch.  Returns the summed loss.

    Parameters
    ----------
    model : Word2Fun
        The model stepped in place.
    centre, context : torch.Tensor
        Word ids ``(B,)`` of each pair's centre and context.
    negatives : torch.Tensor
        Negative word ids: ``(B, k)`` per pair, or ``(k,)`` shared by the batch.
    times : torch.Tensor
        Raw time ``(B,)`` of each pair's centre token.
    lr : float
        The learning rate.
    """
    idx = torch.arange(centre.shape[0], device=centre.device)
    return centre_sgd_step(model, centre, times, idx, context, negatives, lr)


def centre_sgd_step(
    model: Word2Fun,
    words: torch.Tensor,
    times: torch.Tensor,
    pair_centre: torch.Tensor,
    context: torch.Tensor,
    negatives: torch.Tensor,
    lr: float,
    roughness_penalty: float | torch.Tensor = 0.0,
    row_lr: torch.Tensor | None = None,
    negative_weight: float = 1.0,
    centre_lr: float = STEP_CENTRE_LR,
) -> float:
    """:func:`centre_sgd_step_tensor` with the summed loss read on the host, as a float.

    Reading it waits for the step on an accelerator (a device synchronisation): the training
    loop takes the tensor instead and reads only the epoch's sum.

    Parameters
    ----------
    model, words, times, pair_centre, context, negatives, lr : see centre_sgd_step_tensor
        As in :func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`, which describes each.
    roughness_penalty, row_lr, negative_weight, centre_lr : see centre_sgd_step_tensor
        As in :func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`, with the same defaults.
    """
    return float(centre_sgd_step_tensor(model, words, times, pair_centre, context, negatives, lr, roughness_penalty,
                                        row_lr, negative_weight, centre_lr))


def batch_step(model: Word2Fun, shared_negatives: bool, negative_weight: float = 1.0,
               centre_lr: float = STEP_CENTRE_LR, threads: int = 1):
    """:func:`centre_sgd_step_tensor` for the batches of one training run, ``step(words, times, pair_centre,
    context, negatives, lr, roughness_penalty, row_lr) -> loss``, with ``model``, ``negative_weight`` and
    ``centre_lr`` bound.

    Where the compiled step takes every batch of the run (negatives shared by the batch, and
    :func:`~qpnlp.word2fun.fused_step.takes_model`, which asks for CPU tables) it is a
    :class:`~qpnlp.word2fun.fused_step.FusedStep`, prepared once, where :func:`centre_sgd_step_tensor` checks and
    prepares the same at every call (about 5% of a step's CPU time at ``fit``'s defaults,
    ``benchmarks/word2fun_step.py``).  The batches must then be on the CPU, like the model.

    Parameters
    ----------
    model : Word2Fun
        The model the steps update in place.
    shared_negatives : bool
        Whether every batch's negatives are shared by the batch, ``(k,)`` (``TrainConfig.shared_negatives``);
        False: per pair, ``(B, k)``, and the torch ops.
    negative_weight, centre_lr : see centre_sgd_step_tensor
        As in :func:`centre_sgd_step_tensor`, with its defaults.
    threads : int, default 1
        Threads of the compiled step (:class:`~qpnlp.word2fun.fused_step.FusedStep`; the same updates whatever
        their number); the torch ops take torch's.
    """
    if shared_negatives and fused_step.takes_model(model):
        return fused_step.FusedStep(model, negative_weight, centre_lr, threads)

    def step(words, times, pair_centre, context, negatives, lr, roughness_penalty=0.0, row_lr=None):
        return _step_tensor(model, words, times, pair_centre, context, negatives, lr, roughness_penalty, row_lr,
                            negative_weight, centre_lr)

    return step


def centre_sgd_step_tensor(
    model: Word2Fun,
    words: torch.Tensor,
    times: torch.Tensor,
    pair_centre: torch.Tensor,
    context: torch.Tensor,
    negatives: torch.Tensor,
    lr: float,
    roughness_penalty: float | torch.Tensor = 0.0,
    row_lr: torch.Tensor | None = None,
    negative_weight: float = 1.0,
    centre_lr: float = STEP_CENTRE_LR,
) -> torch.Tensor:
    """One SGD step on the summed thesis loss of the pairs of ``N`` centre tokens; the loss as a tensor.

    :math:`f(u_n, t_n)` is computed once per centre token ``n``, the pairs
    read it through ``pair_centre``.  The gradient is written out (no
    autograd): with :math:`p = f\\,h_+^T` and :math:`q_i = f\\,h_i^T`,

    .. math::
        \\frac{\\partial L}{\\partial p} = \\sigma(p) - 1, \\qquad
        \\frac{\\partial L}{\\partial q_i} = \\frac{\\sigma(q_i)}{k},

    accumulated into :math:`\\partial L / \\partial f` per centre token and
    into the compass rows, then pulled back to the rows of the parameter
    tables by :meth:`~qpnlp.word2fun.model.Word2Fun.function_vjp`.  Every gradient row is scattered
    with ``index_add_`` (rows repeated in the batch add their gradients, as
    consecutive word2vec updates would); all gradients are taken at the
    parameters before the step.  Frequency rows step with ``lr / S``, slopes
    with ``lr / S^2``, shared parameters (Time2Fun's :math:`\\Omega`) with
    ``lr / B``; the compass is skipped when frozen.

    With negatives shared by the batch the negative term of a pair depends
    on its centre token only, so it is computed once per centre token and
    weighted by the token's number of pairs: the loss is exactly that of
    :func:`~qpnlp.word2fun.functions.word2fun_loss` over the pairs.

    Where :func:`qpnlp.word2fun.fused_step.accepts` the step (CPU, numba, families II-IV, shared
    negatives) it runs as one compiled call with the same result (to float rounding).

    Parameters
    ----------
    model : Word2Fun
    words, times : torch.Tensor, shape (N,)
        Word id and raw time of each centre token.
    pair_centre, context : torch.Tensor, shape (B,)
        Centre token (index into ``words``) and context word id of each pair.
    negatives : torch.Tensor, shape (k,) or (B, k)
        Negatives shared by the batch, or per pair.
    lr : float
    roughness_penalty : float or torch.Tensor of shape (N,)
        :math:`\\lambda`: adds :math:`\\lambda\\,\\rho(u_n)` (:func:`roughness`) per centre
        token to the loss (families II-IV); its gradient joins the rows' steps.
        A tensor gives each centre token its own weight :math:`\\lambda_n`.  A positive one on another
        family is a ``ValueError`` (``fit``'s, :func:`~qpnlp.word2fun.config.check_penalty_family`), raised
        before anything is written.
    negative_weight : float, default 1.0
        Weight :math:`c` of the negative term, :math:`-c \\cdot \\frac1k \\sum_i \\log\\sigma(-q_i)`:
        1 is the thesis loss (the mean over the negatives), ``c = k`` word2vec's
        sum over ``k`` negatives (whose optimum is :math:`f h^T = \\mathrm{PMI} - \\log k`).
    row_lr : torch.Tensor, shape (N,), optional
        A learning-rate multiplier per centre token for the rows of
        :math:`f(u_n, \\cdot)` (not the compass): rare words step further.
    centre_lr : float, default :data:`~qpnlp.word2fun.step_sizes.STEP_CENTRE_LR`
        Step multiplier of the logistic steps' centres.

    Returns
    -------
    torch.Tensor, shape ()
        The summed loss of the batch (before the step), in the model's dtype on its
        device: nothing waits for the step to finish until the caller reads it
        (:func:`centre_sgd_step` reads it at once).

    Raises
    ------
    ValueError
        For an ``lr`` that is not positive and finite or is larger than the largest float32
        (``qpnlp._checks.check_lr``), before anything is written.
    """
    check_lr(lr)
    return _step_tensor(model, words, times, pair_centre, context, negatives, lr, roughness_penalty, row_lr,
                        negative_weight, centre_lr)


@torch.no_grad()
def _step_tensor(model: Word2Fun, words: torch.Tensor, times: torch.Tensor, pair_centre: torch.Tensor,
                 context: torch.Tensor, negatives: torch.Tensor, lr: float, roughness_penalty: float | torch.Tensor,
                 row_lr: torch.Tensor | None, negative_weight: float, centre_lr: float) -> torch.Tensor:
    """:func:`centre_sgd_step_tensor` for an ``lr`` checked already: the step of :func:`batch_step`, whose rates
    the training loop computes from a checked ``TrainConfig`` (no check per batch)."""
    _check_penalty(model, roughness_penalty)
    if fused_step.accepts(model, negatives, words, times, pair_centre, context, roughness_penalty, row_lr):
        return fused_step.fused_sgd_step(model, words, times, pair_centre, context, negatives, lr, roughness_penalty,
                                         row_lr, negative_weight, centre_lr)
    N, B = words.shape[0], context.shape[0]
    tau = model.time_scale.normalise(times.to(model.dtype))  # float64 times stay float64 in a float64 model
    tabs = model.tables(words, tau)
    rows = {k: w.index_select(0, i) for k, (w, i) in tabs.items()}
    f, vjp = model.function_vjp(rows, tau)
    H = model.compass.weight
    train_h = not model.freeze_compass
    chunk = _pair_chunk(B, f.device)
    g_f, gp, loss = _positive_term(f, H, pair_centre, context, chunk)
    if negatives.dim() == 1:
        loss -= _shared_negatives(f, H, g_f, pair_centre, (N, B), negatives, negative_weight, lr, train_h)
    else:
        loss += _per_pair_negatives(f, H, g_f, pair_centre, negatives, negative_weight, lr if train_h else 0.0)
    if train_h:  # positives last
        _add_positive_compass(H, f, pair_centre, context, gp.mul_(-lr), chunk)
    _step_function_rows(model, tabs, rows, vjp, g_f, lr, roughness_penalty, row_lr, centre_lr, B)
    return loss


def _shared_negatives(f: torch.Tensor, H: torch.Tensor, g_f: torch.Tensor, pair_centre: torch.Tensor,
                      sizes: tuple[int, int], negatives: torch.Tensor, weight: float, lr: float, step_compass: bool) -> torch.Tensor:
    """The negative term with ``k`` negatives shared by the batch, once per centre token weighted by its pairs:
    returns :math:`\\sum_n \\frac{c\\,m_n}{k}\\sum_i \\log\\sigma(-q_{ni})`, minus the term's loss.

    Adds :math:`\\partial L/\\partial f` into ``g_f`` (N, D) and, with ``step_compass``, steps the negatives'
    compass rows by :math:`-\\eta\\,\\partial L/\\partial h` (gradients at the compass before this step).
    ``negatives`` is (k,), :math:`m_n` the number of the ``B`` pairs (``pair_centre``) of centre token ``n``,
    :math:`c` the ``weight``; ``sizes`` is ``(N, B)``, the centre tokens and the pairs of the batch.
    """
    (N, B), k = sizes, negatives.shape[0]
    hn = H.index_select(0, negatives)  # (k, D)
    q = f @ hn.T  # (N, k)
    # pairs per centre / k; counted by index_add_, not bincount, which reads its size on the host (a GPU sync)
    w = f.new_zeros(N).index_add_(0, pair_centre, f.new_ones(B)) / k
    if weight != 1.0:
        w = w * weight
    summed = (F.logsigmoid(-q).sum(-1) * w).sum()
    gn = torch.sigmoid(q).mul_(w[:, None])  # dL/dq
    g_f.addmm_(gn, hn)
    if step_compass:
        _scatter_rows(H, negatives, gn.T @ f, -lr)
    return summed


def _step_function_rows(model: Word2Fun, tabs: dict, rows: dict, vjp, g_f: torch.Tensor, lr: float,
                        roughness_penalty: float | torch.Tensor, row_lr: torch.Tensor | None, centre_lr: float,
                        B: int) -> None:
    """Step the rows of :math:`f(u_n, \\cdot)` that the batch read (``tabs``, gathered as ``rows``) by
    :math:`-\\eta\\,\\partial L/\\partial f` (``g_f`` (N, D), scaled per row by ``row_lr``; overwritten) pulled back
    by ``vjp``, with the roughness penalty's steps, each table at its own rate; shared parameters step by their
    mean over the ``B`` pairs, and the logistic steps are projected onto their ranges.
    """
    row, rough = row_step_scales(roughness_penalty, row_lr, lr, g_f.dtype)
    row_steps, shared = vjp(g_f.mul_(row if row_lr is None else row[:, None]))  # the VJP is linear: pull back -lr dL/df
    if rough is not None and model.family in SINUSOIDAL_FAMILIES:  # other families: zero penalties (_check_penalty)
        _add_roughness_steps(model, rows, row_steps, rough)
    scale = model.time_scale.scale
    for name, (w_, i) in tabs.items():
        _scatter_rows(w_, i, row_steps[name], table_lr_factor(name, scale, centre_lr))
    for name, g in shared.items():
        getattr(model, name).add_(g, alpha=1.0 / B)
    if model.logistic:
        _project_step(model, tabs)


def _project_step(model: Word2Fun, tabs: dict) -> None:
    """Projected SGD: the rows just updated are clipped to :func:`~qpnlp.word2fun.step_sizes.step_bounds`."""
    for param, (lo, hi) in step_bounds(model).items():
        w, i = tabs[param.split(".")[0]]
        w.index_copy_(0, i, w.index_select(0, i).clamp_(lo, hi))
