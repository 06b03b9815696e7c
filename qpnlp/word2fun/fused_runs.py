"""Many batches of Word2Fun's compiled step in one call: a run of batches of one chunk, on CPU (numba).

A training loop that calls :class:`~qpnlp.word2fun.fused_step.FusedStep` once per batch pays, for every
batch, for Python around the compiled step: the batch's views, the negatives' draw, the per-token step
factors, the stable sort of the batch's words, the arguments' conversion and numba's dispatch.  At ``fit``'s
defaults that was about 0.9 ms a batch beside 1.6 ms of compiled step (a profile on the 2-core host of
``benchmarks/results/word2fun/run-steps/README.md``).  :func:`run_steps` takes a
:class:`~qpnlp.data.skipgram.CentreRun` (up to 16 consecutive batches of one chunk) instead:

* the negatives of all its batches in one draw, ``(n_b, k)``: row ``i`` is what batch ``i`` would have drawn
  (one generator, consumed in the same order);
* the step factors of all its tokens (:func:`~qpnlp.word2fun.step_sizes.row_step_scales` with a learning rate
  per token) in a few vectorised ops, rounded as the per-batch factors are;
* the stable word order of every batch (:math:`\\mathrm{argsort}` of ``(batch, word)``) in one sort;
* one compiled call (:meth:`FusedStep.run_batches <qpnlp.word2fun.fused_step.FusedStep.run_batches>`) that
  takes the batches one after another, each through the compiled step, without the GIL, and adds their losses,
  rounded to the model's dtype, to the running float64 sum as the batch-by-batch loop does.

A :class:`~qpnlp.word2fun.fused_step.FusedStep` called on one batch is a run of that batch through the same
compiled call, the same machine code, so the parameters and the loss equal the batch-by-batch loop's bit for bit
(tests), whatever the process compiled or loaded before.  The loop does this
wherever it trains with a :class:`~qpnlp.word2fun.fused_step.FusedStep` (``fit``'s defaults on CPU).
"""

from __future__ import annotations

import numpy as np
import torch

from qpnlp.data.skipgram import CentreRun, NegativeSampler
from qpnlp.word2fun.fused_step import FusedStep
from qpnlp.word2fun.step_sizes import row_step_scales

__all__ = ["compile_runs", "learning_rates", "run_steps"]


def compile_runs(step: FusedStep, negatives: int) -> None:
    """Compile the kernel :func:`run_steps` calls for ``step``'s argument types (loaded from numba's cache on disk
    after the first run of an install): :meth:`FusedStep.compile <qpnlp.word2fun.fused_step.FusedStep.compile>`,
    since a step and a run are one kernel (:meth:`~qpnlp.word2fun.fused_step.FusedStep.run_batches`).

    Parameters
    ----------
    step : FusedStep
        The prepared step (its tables' dtype and flags); nothing of it is changed.
    negatives : int
        The negatives per batch (the width of the negatives' array; the kernel's types do not depend on it).
    """
    step.compile()


def learning_rates(lr: float, epochs: int, epoch: int, done: float, progress: np.ndarray) -> list[float]:
    """The learning rate of each batch of a run: :math:`\\eta\\,\\max(10^{-4}, 1 - (e + p) / E)` with :math:`p`
    the epoch's progress before the batch (``done`` before the first, then ``progress[i - 1]``).

    Parameters
    ----------
    lr : float
        :math:`\\eta`, the initial learning rate (``TrainConfig.lr``).
    epochs : int
        :math:`E`, the epochs of the training.
    epoch : int
        :math:`e`, the current epoch, counted from 0.
    done : float
        The epoch's progress in [0, 1] (its fraction of tokens) before the run's first batch.
    progress : numpy.ndarray
        (n_b,): the progress after each batch of the run (``run.progress`` of a
        :class:`~qpnlp.data.skipgram.CentreRun`).

    Returns
    -------
    list of float
        n_b learning rates.
    """
    before = [done, *progress[:-1].tolist()]
    return [lr * max(1e-4, 1.0 - (epoch + p) / epochs) for p in before]


def _word_order(words: np.ndarray, rows: np.ndarray, start: int) -> np.ndarray:
    """Within each batch, the stable sort of its words (``torch.sort(words, stable=True).indices``), counted from
    the batch's first token; ``words`` (n,) are the run's tokens from row ``start``, ``rows`` (n_b, 2) the
    batches' ranges of rows.  One stable ``argsort`` of (segment, word), the segments cut at every batch bound."""
    bounds = np.unique(rows) - start
    segment = np.searchsorted(bounds, np.arange(words.shape[0]), side="right")
    first = np.concatenate([[0], bounds])[segment]  # each token's segment starts here
    order = np.argsort(segment * (int(words.max()) + 1) + words, kind="stable")
    return order - first


def _token_scales(step: FusedStep, run: CentreRun, lrs: list[float], weights, start: int, stop: int) -> tuple:
    """``(row_mult, rough, smooth)`` of the run's tokens ``start .. stop - 1``: the per-batch factors of
    ``qpnlp.word2fun.fused_step._row_scales``, each token's from its batch's learning rate."""
    word_penalty, word_lr, penalty = weights
    words = run.words[start:stop]
    batch = np.clip(np.searchsorted(run.rows[:, 1], np.arange(start, stop), side="right"), 0, len(run) - 1)
    lr = torch.from_numpy(np.asarray(lrs, np.float64)[batch])
    lam = penalty if word_penalty is None else word_penalty[words]
    rl = None if word_lr is None else word_lr[words]
    row, rough = row_step_scales(lam, rl, lr, step.dtype)
    rough_arr = np.zeros(stop - start, step.H.dtype) if rough is None else _in_dtype(rough, step)
    return _in_dtype(row, step), rough_arr, rough is not None


def _in_dtype(x: torch.Tensor, step: FusedStep) -> np.ndarray:
    return x.to(step.dtype).contiguous().numpy()


def _check_run(run: CentreRun, negatives: int, lrs: list[float]) -> None:
    """The run on the CPU, one learning rate per batch and at least one negative (the kernel reads them unchecked)."""
    if not isinstance(run, CentreRun) or run.words.device.type != "cpu":
        raise ValueError("run_steps takes a CentreRun on the CPU (the compiled step is for the CPU)")
    if len(lrs) != len(run) or negatives < 1:
        raise ValueError(f"need one learning rate per batch ({len(run)}) and negatives >= 1; got {len(lrs)} "
                         f"learning rates and {negatives} negatives")


def run_steps(step: FusedStep, run: CentreRun, sampler: NegativeSampler, generator: torch.Generator,
              negatives: int, lrs: list[float], weights: tuple, total: float) -> float:
    """Train ``run``'s batches with ``step``: ``total`` plus their losses (float64, as the batch-by-batch loop sums).

    Raises ``IndexError`` naming the ids of the first batch whose ids do not fit their tables (the batches before
    it are trained, as batch by batch).

    Parameters
    ----------
    step : FusedStep
        The prepared step of the model (its tables are updated in place).
    run : qpnlp.data.skipgram.CentreRun
        The n_b consecutive batches of one chunk, on the CPU (ValueError otherwise).
    sampler : qpnlp.data.NegativeSampler
        Draws the negatives of all the batches at once, ``(n_b, negatives)``: row ``i`` is batch ``i``'s.
    generator : torch.Generator
        The sampler's random stream (consumed as the batch-by-batch loop consumes it).
    negatives : int
        k >= 1, the negatives shared by each batch.
    lrs : list of float
        One learning rate per batch (:func:`learning_rates`).
    weights : tuple
        ``(per-word roughness penalty (V,) or None, per-word learning-rate multiplier (V,) or None, the float
        penalty used without the first)`` (:func:`~qpnlp.word2fun.config.word_weights` and
        ``TrainConfig.roughness_penalty``).
    total : float
        The running sum of the epoch's losses before the run.
    """
    _check_run(run, negatives, lrs)
    start, stop = int(run.rows[0, 0]), int(run.rows[-1, 1])
    neg = sampler.sample((len(run), negatives), generator=generator)
    row_mult, rough, smooth = _token_scales(step, run, lrs, weights, start, stop)
    words = run.words[start:stop].numpy()
    rows = np.ascontiguousarray(run.rows - start)
    times = run.time[start:stop].to(step.dtype).contiguous().numpy()
    total, bad = step.run_batches(words, _word_order(words, run.rows, start), times, run.pair_row.numpy(),
                                  run.context.numpy(), rows, np.ascontiguousarray(run.pairs), neg.numpy(),
                                  np.asarray(lrs, step.H.dtype), smooth, row_mult, rough, start, total)
    if bad >= 0:
        b = run.batch(bad)
        step.check_ids(b.words, b.pair_centre, b.context, neg[bad])
    return total
