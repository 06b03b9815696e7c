"""Word2Fun's whole SGD step as one compiled function (numba), on CPU: families II-IV, shared negatives.

:func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor` in torch ops is a chain of
about a hundred small operations per batch, each of which takes the GIL (two
hogwild threads then scale 1.2x).  For the configuration :func:`~qpnlp.word2fun.train.fit`
trains by default (family IV, the logistic step, negatives shared by the
batch) this module runs the same step as one compiled call that releases the
GIL from start to end.  Shapes: ``N`` centre tokens (``words``, ``times``),
``B`` pairs (``pair_centre``, ``context``), ``k`` shared negatives, ``D``
coordinates, ``h = D / 2``, ``V`` words.  In the order the step runs:

1. per centre token :math:`n` (word :math:`u`, normalised time :math:`\\tau_n`, :math:`s_n = \\tau_n / S`):
   :math:`a^{(1)} = \\Omega^{(1)}_u \\tau_n + \\Theta^{(1)}_u`,
   :math:`a^{(2)} = \\Omega^{(2)}_u \\tau_n + \\Theta^{(2)}_u`
   (:math:`\\Theta = 0` for III; the fixed :math:`\\Omega` of II),
   :math:`f_n = B_u + R_u \\odot [\\sin a^{(1)}; \\cos a^{(2)}] + A_u (\\sigma(z_n) - \\tfrac12)`,
   :math:`z_n = k_u (s_n - c_u)`, :math:`k_u = e^{\\ell_u}` (the last term with the logistic step), (N, D);
2. positive pairs :math:`b`: :math:`p_b = f_{n(b)} \\cdot h_{c(b)}`, loss :math:`\\log(1 + e^{-p_b})`,
   :math:`g_b = \\sigma(p_b) - 1`, :math:`\\partial L/\\partial f_{n(b)} \\mathrel{+}= g_b h_{c(b)}`;
3. shared negatives :math:`i`: :math:`q_{ni} = f_n \\cdot h_{v_i}`, :math:`w_n = m_n c / k` (:math:`m_n` pairs of
   token :math:`n`, :math:`c` = ``negative_weight``), loss :math:`w_n \\log(1 + e^{q_{ni}})`,
   :math:`\\gamma_{ni} = w_n \\sigma(q_{ni})`,
   :math:`\\partial L/\\partial f_n \\mathrel{+}= \\sum_i \\gamma_{ni} h_{v_i}`,
   :math:`G_i = \\sum_n \\gamma_{ni} f_n` (k, D);
4. the compass (unless frozen): :math:`h_{v_i} \\mathrel{+}= -\\eta G_i`, then pair after pair
   :math:`h_{c(b)} \\mathrel{+}= -\\eta g_b f_{n(b)}`;
5. word by word (the tokens grouped by word), from its rows before the step: the sums over the word's tokens
   of :math:`g_n`, :math:`g_n \\odot sc_n`, :math:`g_n \\odot dc_n`, :math:`\\tau_n g_n \\odot dc_n` and
   :math:`(\\sigma(z_n) - \\tfrac12) g_n` (:math:`g_n = -\\eta r_n \\partial L/\\partial f_n`, :math:`r_n` =
   ``row_lr``; :math:`sc_n`, :math:`dc_n` the basis and its derivative in the angles), of the logistic step's
   centre and log-rate gradients and of the roughness weights :math:`\\eta \\lambda_n r_n`: the VJP
   (:meth:`~qpnlp.word2fun.model.Word2Fun.function_vjp`) is linear in :math:`g`, so these sums give the word's
   steps, one pass over the coordinates per token;
6. the word's rows' steps from them, minus the summed roughness weight times :math:`\\partial\\rho/\\partial`
   rows (:func:`~qpnlp.word2fun.sgd.roughness`), each table's step times its multiplier
   (:func:`~qpnlp.word2fun.step_sizes.table_lr_factor`), added once (the torch ops' ``index_add_`` adds the
   tokens' steps one after another: the same sum in another order);
7. the word's step centre and log-rate projected onto their ranges (:func:`~qpnlp.word2fun.step_sizes.step_bounds`).

Steps 5-7 touch only the word's own rows, so taking the words one after another is the torch ops'
gather, steps, ``index_add_`` and projection, with each row read and written while it is in cache.

Every gradient is taken at the parameters before the step, as in torch ops, and the values agree
with them to float rounding: sums in another order, float32 sines and cosines from a vectorised
polynomial (float64 ones from libm), and :math:`\\sigma` and :math:`\\log(1 + e^y)` from one
vectorised :math:`e^{-|y|}` per logit (the logs summed as the log of a product).  The loss is summed in
float64 and returned in the model's dtype.  NaN propagates as in torch ops (no ``nnan`` fast-math flag;
the projection keeps a NaN).  CPU time per step of ``fit``'s defaults: about 0.8x that of the torch ops
with the compiled pair loop (``benchmarks/word2fun_step.py``, on a loaded machine).

The kernel (the loops above, compiled: ``qpnlp.word2fun._fused_kernel``) checks every id against its table
before it writes anything.  It takes a run of batches (:meth:`FusedStep.run_batches`): a call of
:class:`FusedStep` is a run of one batch, :func:`~qpnlp.word2fun.fused_runs.run_steps` a run of several, through
the same machine code, so that the two agree bit for bit (the module docstring of ``_fused_kernel`` says why two
compiled loops did not).  :class:`FusedStep` holds what
does not change between batches (the tables as arrays, the flags, step factors and bounds), so that a
training loop (:func:`~qpnlp.word2fun.sgd.batch_step`) pays per batch only for the batch;
:func:`fused_sgd_step` builds one for a single step.

Not compiled here (:func:`accepts` is False; the step runs in torch ops): other families, negatives
per pair, tensors not on the CPU, not float32/float64 or not contiguous, numba missing, or
``QPNLP_WORD2FUN_COMPILED=0`` / ``QPNLP_COMPILED=0`` (which also turn off
:mod:`~qpnlp.word2fun.pair_loop`).  :data:`ENABLED` (tests) turns off this step alone.
"""

from __future__ import annotations

import time
import weakref

import numpy as np
import torch

from qpnlp import _numba
from qpnlp._checks import check_lr
from qpnlp._numba import check_rows
from qpnlp.word2fun import pair_loop
from qpnlp.word2fun._fused_kernel import _kernel
from qpnlp.word2fun._kernel_choice import KernelChoice
from qpnlp.word2fun.model import Word2Fun
from qpnlp.word2fun.step_sizes import STEP_CENTRE_LR, row_step_scales, step_bounds, table_lr_factor

__all__ = ["ENABLED", "FAMILIES", "FusedStep", "accepts", "fused_sgd_step", "takes_model"]

#: Each model's choice of kernel (:class:`~qpnlp.word2fun._kernel_choice.KernelChoice`), kept from one
#: :class:`FusedStep` of the model to the next (a training builds one per epoch).
_CHOICES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: Whether :func:`accepts` may take the step (tests set it False to compare with the torch ops and pair loop).
ENABLED = True
#: The families this step compiles.
FAMILIES = ("II", "III", "IV")
#: The parameter tables in the order the kernel takes them (absent ones are empty arrays).
TABLES = ("base", "amplitude", "omega1", "omega2", "theta1", "theta2", "step_amplitude", "step_centre", "step_rate")


def _weights(model: Word2Fun) -> list:
    """The tables of :data:`TABLES` (None where the model has none; II's fixed frequencies as one row)."""
    out = []
    for name in TABLES:
        if name in ("omega1", "omega2") and model.family == "II":
            out.append(model.omega_fixed.view(1, -1))
        else:
            module = getattr(model, name, None)
            out.append(None if module is None else module.weight)
    return out


def takes_model(model: Word2Fun) -> bool:
    """Whether :class:`FusedStep` takes ``model``: :data:`ENABLED`, the compiled loops available
    (:func:`~qpnlp.word2fun.pair_loop.available`), a family of :data:`FAMILIES`, contiguous CPU tables of one
    float dtype.

    Parameters
    ----------
    model : Word2Fun
        The model whose parameter tables and compass the step would read and write in place.
    """
    if not (ENABLED and model.family in FAMILIES and pair_loop.available()):
        return False
    return _numba.takes(*[w for w in _weights(model) if w is not None], model.compass.weight)


def accepts(model: Word2Fun, negatives: torch.Tensor, *tensors: torch.Tensor | float | None) -> bool:
    """Whether :func:`fused_sgd_step` takes this step: :func:`takes_model`, ``k >= 1`` negatives shared by the
    batch, and every tensor on the CPU.

    Parameters
    ----------
    model : Word2Fun
        The model of the step (:func:`takes_model`).
    negatives : torch.Tensor
        The step's negatives: taken when shared by the batch, shape (k,) with k >= 1 (not per pair, (B, k)).
    *tensors : torch.Tensor, float or None
        The step's other arguments (the batch, ``roughness_penalty``, ``row_lr``): each tensor must be on the CPU;
        floats and None are skipped.
    """
    if not (negatives.dim() == 1 and negatives.numel() > 0 and takes_model(model)):
        return False
    return all(t.device.type == "cpu" for t in (negatives, *tensors) if isinstance(t, torch.Tensor))


def _array(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def _index(t: torch.Tensor, what: str) -> np.ndarray:
    """``t`` as a contiguous int64 array (its range is checked by the kernel, before it writes)."""
    if t.dim() != 1 or t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{what} ids must be a 1-D integer tensor; got {t.dtype} of shape {tuple(t.shape)}")
    return _array(t.to(torch.int64).contiguous())


def _row_scales(roughness_penalty, row_lr, lr: float, n: int, dtype: torch.dtype, np_dtype) -> tuple:
    """``(row_mult, rough, smooth)``: :func:`~qpnlp.word2fun.step_sizes.row_step_scales` as arrays of 1 or N
    values in the model's dtype (``dtype``, ``np_dtype`` as numpy's; per-token values checked to be N), and whether
    roughness steps are taken."""
    for t, what in ((row_lr, "row_lr"), (roughness_penalty, "roughness_penalty")):
        if isinstance(t, torch.Tensor) and tuple(t.shape) != (n,):
            raise ValueError(f"{what} must have one value per centre token, shape ({n},); got {tuple(t.shape)}")
    row, rough = row_step_scales(roughness_penalty, row_lr, lr, dtype)
    arrays = (_array(x.contiguous()) if isinstance(x, torch.Tensor) else np.array([x], np_dtype)
              for x in (row, 0.0 if rough is None else rough))
    return (*arrays, rough is not None)


class FusedStep:
    """:func:`fused_sgd_step` bound to one model and its step settings: what does not change between batches
    (the tables as arrays, read and written in place, the flags, the tables' step factors and bounds) is
    read once, so that a training loop pays per batch only for the batch.

    Build it again if the model's parameters are replaced or moved (in-place updates are seen). Raises
    ``ValueError`` unless :func:`takes_model`.

    Parameters
    ----------
    model : Word2Fun
        The model whose tables the step updates in place (:func:`takes_model`).
    negative_weight : float, default 1.0
        Weight :math:`c` of the negative term, as in :func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`.
    centre_lr : float, default STEP_CENTRE_LR
        Step multiplier of the logistic steps' centres (:func:`~qpnlp.word2fun.step_sizes.table_lr_factor`).
    threads : int, default 1
        The kernel's threads (at most numba's, ``NUMBA_NUM_THREADS``): each stage of a step is cut into as many
        parts, run in parallel, that write apart and compute every number as one part would, in the same order
        (``qpnlp.word2fun._fused_kernel``): the same updates, bit for bit, whatever the number. With more than
        one, each run of batches takes the kernel of one thread or the one of several, whichever is faster at
        the time (``qpnlp.word2fun._kernel_choice``: beside busy processes the threads can be much slower).
    """

    def __init__(self, model: Word2Fun, negative_weight: float = 1.0, centre_lr: float = STEP_CENTRE_LR,
                 threads: int = 1):
        if not takes_model(model):
            raise ValueError("the fused step needs numba, family II, III or IV and contiguous CPU tables of one "
                             f"float dtype (fused_step.takes_model); got family {model.family!r}")
        weights, H = _weights(model), model.compass.weight
        self.model, self.dtype, self.H = model, H.dtype, _array(H)
        np_dtype = self.H.dtype
        empty = np.empty((0, 0), np_dtype)
        self.tabs = tuple(empty if w is None else _array(w) for w in weights)
        self.present = tuple(w is not None and not (model.family == "II" and name.startswith("omega"))
                             for name, w in zip(TABLES, weights))
        ts, S = model.time_scale, model.time_scale.scale
        self.factors = np.array([table_lr_factor(name, S, centre_lr) for name in TABLES], np_dtype)
        bounds = step_bounds(model)
        (c_lo, c_hi), (l_lo, l_hi) = bounds.get("step_centre.weight", (0, 1)), bounds.get("step_rate.weight", (0, 1))
        self.nums = np.array([0.0, ts.start, ts.end - ts.start, S, negative_weight, c_lo, c_hi, l_lo, l_hi], np_dtype)
        self.flags = (model.family != "II", model.family == "IV", model.logistic, H.dtype == torch.float32,
                      not model.freeze_compass)
        self.threads = _numba.threads_at_most(threads)
        self.kernel = _kernel()
        self.parallel_kernel = _kernel(parallel=True) if self.threads > 1 else None
        self.choice = _CHOICES.setdefault(model, KernelChoice()) if self.threads > 1 else None

    def compile(self) -> None:
        """Compile the kernel for the argument types of this step's calls and runs (one kernel,
        :meth:`run_batches`), without running it: loaded from numba's cache on disk, or compiled (about half a
        minute) on the first run after an install.  A training loop calls this before it starts its clock
        (:func:`~qpnlp.word2fun.loop.train_source`); a call compiles if this was not done.  Nothing to do under
        ``NUMBA_DISABLE_JIT=1`` (numba's debugging switch: the kernel is the Python function)."""
        if not hasattr(self.kernel, "compile"):
            return
        import numba

        ids, values, ranges = np.empty(0, np.int64), np.empty(0, self.H.dtype), np.empty((0, 2), np.int64)
        args = self._kernel_args(ids, ids, values, ids, ids, ranges, ranges, ranges, values, False, values, values,
                                 0, 0.0, 1)
        for kernel in filter(None, (self.kernel, self.parallel_kernel)):
            kernel.compile(tuple(numba.typeof(a) for a in args))

    def _kernel_args(self, words, order, times, pair_row, context, rows, pairs, negatives, lrs, smooth, row_mult,
                     rough, base, total, parts) -> tuple:
        """The kernel's arguments in ``_run``'s order: the batches' arrays with what this step holds, the stages cut
        into ``parts`` (the threads of the threaded kernel; 1 for the one-thread kernel, which would otherwise scan
        the pairs once per part: the result does not depend on the parts)."""
        return (self.tabs, self.H, words, order, times, pair_row, context, rows, pairs, negatives, lrs,
                self.nums.copy(), self.flags + (smooth,), row_mult, rough, self.factors, self.present, base, total,
                parts)

    def run_batches(self, words: np.ndarray, order: np.ndarray, times: np.ndarray, pair_row: np.ndarray,
                    context: np.ndarray, rows: np.ndarray, pairs: np.ndarray, negatives: np.ndarray,
                    lrs: np.ndarray, smooth: bool, row_mult: np.ndarray, rough: np.ndarray, base: int,
                    total: float) -> tuple[float, int]:
        """Step ``n_b`` batches one after another in one compiled call (the kernel that every step of this
        :class:`FusedStep` runs, one batch or a run: the same machine code, so the same rounding): ``(total + their
        losses, each rounded to the model's dtype, -1)``, or ``(total + the losses before it, i)`` when batch ``i``'s
        ids do not fit their tables (it is not applied, nor those after it).  With several ``threads`` the whole run
        goes to the threaded kernel or to the one-thread kernel, as ``choice`` says (a trial of the other kernel is
        a whole run too): they compute every number alike.  Nothing is checked here:
        a call of this step and :func:`~qpnlp.word2fun.fused_runs.run_steps` check and convert their arguments.

        Parameters
        ----------
        words, order, times, row_mult, rough : numpy.ndarray
            (n,) over the batches' tokens: word ids and times, each batch's stable word order counted from its
            first token (int64), the row step factors and roughness weights (``_row_scales``; of one value: that
            value for every token) in the model's dtype.
        pair_row, context : numpy.ndarray
            (P,) int64: each pair's centre token, as a row counted from ``base``, and its context word.
        rows, pairs : numpy.ndarray
            (n_b, 2) int64: batch ``i``'s tokens ``rows[i, 0]:rows[i, 1]`` (counted from ``base``) and pairs.
        negatives : numpy.ndarray
            (n_b, k) int64: each batch's shared negatives.
        lrs : numpy.ndarray
            (n_b,) each batch's learning rate, in the model's dtype.
        smooth : bool
            Whether roughness steps are taken.
        base : int
            The row of the first token.
        total : float
            The running sum the losses are added to.
        """
        run = (words, order, times, pair_row, context)
        if self.choice is None:
            return self.kernel(*self._kernel_args(*run, rows, pairs, negatives, lrs, smooth, row_mult, rough, base,
                                                  total, 1))
        which, trial = self.choice.pick()          # a trial of the other kernel: a whole run, as the chosen one's
        return self._timed(which, trial, run, rows, pairs, negatives, lrs, smooth, row_mult, rough, base, total)

    def _timed(self, which: int, trial: bool, run: tuple, rows, pairs, negatives, lrs, smooth, row_mult, rough,
               base, total) -> tuple[float, int]:
        """The kernel ``which`` (0: one thread, 1: ``threads``) on these batches, timed for ``choice``."""
        import numba

        kernel = self.parallel_kernel if which else self.kernel
        if which:
            numba.set_num_threads(self.threads)
        t0 = time.perf_counter()
        out = kernel(*self._kernel_args(*run, rows, pairs, negatives, lrs, smooth, row_mult, rough, base, total,
                                        self.threads if which else 1))
        self.choice.record(which, time.perf_counter() - t0, int(pairs[-1, 1] - pairs[0, 0]) if len(pairs) else 0,
                           trial)
        return out

    def __call__(self, words: torch.Tensor, times: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor,
                 negatives: torch.Tensor, lr: float, roughness_penalty: float | torch.Tensor = 0.0,
                 row_lr: torch.Tensor | None = None) -> torch.Tensor:
        """One step on a batch: the arguments of :func:`fused_sgd_step` after the model's."""
        N, B = words.shape[0], context.shape[0]
        if tuple(times.shape) != (N,) or tuple(pair_centre.shape) != (B,):
            raise ValueError(f"times (N,) and pair_centre (B,) must match words ({N},) and context ({B},); got "
                             f"{tuple(times.shape)} and {tuple(pair_centre.shape)}")
        ids = (_index(words, "word"), _index(pair_centre, "centre token"), _index(context, "context word"),
               _index(negatives, "negative"))
        row_mult, rough, smooth = _row_scales(roughness_penalty, row_lr, lr, N, self.dtype, self.H.dtype)
        order = _array(torch.sort(words, stable=True).indices)  # sorted here: numba's argsort compiles for seconds
        bounds = np.array([[0, N], [0, B]], np.int64)             # a run of one batch: its tokens, its pairs
        loss, bad = self.run_batches(ids[0], order, _array(times.to(self.dtype).contiguous()), ids[1], ids[2],
                                     bounds[:1], bounds[1:], ids[3].reshape(1, -1), np.array([lr], self.H.dtype),
                                     smooth, row_mult, rough, 0, 0.0)
        if bad >= 0:  # nothing was written: name the ids
            self.check_ids(words, pair_centre, context, negatives)
        return torch.tensor(loss, dtype=self.dtype)

    def check_ids(self, words: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor,
                  negatives: torch.Tensor) -> None:
        """Raise ``IndexError`` naming the first of a batch's id tensors with an id outside its table."""
        V = self.model.vocab_size
        for t, rows, what in ((words, V, "word"), (pair_centre, words.shape[0], "centre token"),
                              (context, V, "context word"), (negatives, V, "negative")):
            check_rows(t, rows, what)


def fused_sgd_step(model: Word2Fun, words: torch.Tensor, times: torch.Tensor, pair_centre: torch.Tensor,
                   context: torch.Tensor, negatives: torch.Tensor, lr: float,
                   roughness_penalty: float | torch.Tensor, row_lr: torch.Tensor | None, negative_weight: float,
                   centre_lr: float) -> torch.Tensor:
    """:func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor` as one compiled call (see :func:`accepts`).

    Same parameters and result (the summed loss before the step, a tensor of the model's dtype), with the
    step sizes and bounds of :mod:`~qpnlp.word2fun.step_sizes`, as in the torch ops.  Raises ``IndexError``
    for ids out of range and ``ValueError`` for shapes that do not match or a bad ``lr``
    (``qpnlp._checks.check_lr``), before anything is written.
    A training loop builds one :class:`FusedStep` instead (the same step, prepared once).

    Parameters
    ----------
    model, words, times, pair_centre, context, negatives, lr : see centre_sgd_step_tensor
        As in :func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`, for a step :func:`accepts` (a CPU model of
        families II-IV, negatives ``(k,)`` shared by the batch).
    roughness_penalty, row_lr, negative_weight, centre_lr : see centre_sgd_step_tensor
        As in :func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`.
    """
    lr = check_lr(lr)  # a bad rate wrote NaN or inf into the tables (the loop's FusedStep takes checked rates)
    return FusedStep(model, negative_weight, centre_lr)(words, times, pair_centre, context, negatives, lr,
                                                         roughness_penalty, row_lr)
