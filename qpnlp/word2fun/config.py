"""Word2Fun's training settings: :class:`TrainConfig`, its defaults and what they mean per word.

:class:`TrainConfig` holds the hyper-parameters of the SGD loop
(:func:`~qpnlp.word2fun.loop.train_source`), checked when it is built.  Two of
them become per-word weights once the corpus is counted
(:func:`word_weights`): for a word :math:`u` seen :math:`n_u` times per
million tokens and the reference frequency :math:`n_{ref}`
(``frequency_reference``),

.. math::
    \\lambda_u = \\lambda \\Bigl(\\frac{n_{ref}}{n_u}\\Bigr)^{p},
    \\qquad
    \\eta_u = \\min\\Bigl(m, \\max\\Bigl(1, \\Bigl(\\frac{n_{ref}}{n_u}\\Bigr)^{q}\\Bigr)\\Bigr),

the weight :math:`\\lambda_u` of the roughness penalty
(:func:`~qpnlp.word2fun.sgd.roughness`) in the loss of every centre token of
:math:`u` (``roughness_penalty`` :math:`\\lambda`, ``roughness_power``
:math:`p`) and the multiplier :math:`\\eta_u` of the learning rate of the rows
of :math:`f(u, \\cdot)` (``rare_lr_power`` :math:`q`, ``rare_lr_max``
:math:`m`).  ``roughness_penalty=None`` stands for the model's default
(:func:`resolve_penalty`: :data:`DEFAULT_ROUGHNESS_PENALTY` for families II-IV
with the logistic step, :data:`DEFAULT_ROUGHNESS_PENALTY_NO_STEP` without it, 0
for the other families).

Example
-------
>>> import numpy as np
>>> cfg = resolve_penalty(TrainConfig(), "IV")
>>> cfg.roughness_penalty
0.0001
>>> penalty, lr = word_weights(np.array([4000, 1]), cfg, "cpu")  # a frequent word and a rare one
>>> lr.tolist()
[1.0, 4.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from qpnlp import _numba
from qpnlp._checks import FLOAT32_MAX, check_seed, is_integer
from qpnlp._device import resolve_device
from qpnlp.word2fun import pair_loop
from qpnlp.word2fun.functions import SINUSOIDAL_FAMILIES

__all__ = ["DEFAULT_ROUGHNESS_PENALTY", "DEFAULT_ROUGHNESS_PENALTY_NO_STEP", "PARALLEL_MODES", "TrainConfig",
           "check_penalty_family", "resolve_penalty", "step_threads", "word_weights"]


#: The roughness penalty of families II-IV when ``TrainConfig.roughness_penalty`` is None (selected on the drift
#: benchmark with the logistic step, the default of :func:`~qpnlp.word2fun.train.fit` for these families).
DEFAULT_ROUGHNESS_PENALTY = 1e-4
#: The same for a model without the logistic step (``fit(logistic=False)``; the default before the step).
DEFAULT_ROUGHNESS_PENALTY_NO_STEP = 2e-5


#: How several workers share the training (``TrainConfig.parallel``): one model (hogwild) or merged replicas.
PARALLEL_MODES = ("hogwild", "replicas")


@dataclass
class TrainConfig:
    """Hyper-parameters of the SGD loop (word2vec's where they exist; the defaults are the benchmark's choice).

    ``batch_size`` counts pairs (batches end at centre-token boundaries);
    ``negatives`` are drawn per pair, or once per batch and shared by its
    pairs with ``shared_negatives`` (an unbiased estimate of the same mean
    over negatives, one matrix product).  ``workers`` > 1 trains with that
    many threads of one torch thread each, fed by a background thread that
    generates the pairs: with ``parallel="hogwild"`` they share the model, as
    word2vec's threads do (faster on several cores, not deterministic); with
    ``parallel="replicas"`` each trains its own copy on its part of every
    ``workers x replica_sync_every`` batches, all from the same parameters
    :math:`\\theta_s`, and the model continues from their merged updates (row
    by row, the sum of the updates :math:`\\theta_w - \\theta_s` of a row that one
    or two copies changed, ``2 / k`` of it for a row that ``k`` > 2 changed), as
    the processes of a distributed run do (:mod:`qpnlp.word2fun.distributed`):
    the same model bit for bit in every run with the same ``workers``.

    ``roughness_penalty`` :math:`\\lambda \\ge 0` (families II-IV) adds
    :math:`\\lambda_u\\, \\rho(u)` (:func:`~qpnlp.word2fun.sgd.roughness`, the
    mean squared speed of :math:`f(u, \\cdot)` over the span) to the loss of
    every centre token of word ``u``: a smoothing-spline prior, so that fast
    coordinates follow abrupt changes the data support but damp year-to-year
    sampling noise (default None: :func:`resolve_penalty`, 1e-4 for families
    II-IV with the logistic step, 2e-5 without).  With ``roughness_power`` :math:`p`,
    :math:`\\lambda_u = \\lambda\\,(n_{ref} / n_u)^p` for a word seen
    :math:`n_u` times per million tokens (``n_ref = frequency_reference``):
    ``p = 0`` smooths every occurrence alike, ``p = 1`` gives every word the
    same prior whatever its frequency (rare words are smoothed more, relative
    to their data); the default ``p = 1/2``, with 7 epochs, was chosen on the
    planted-drift benchmark (``benchmarks/results/word2fun/epochs-roughness/``):
    more epochs sharpen the switches, the rare words' stronger prior keeps
    their noise out of the measured change.  ``rare_lr_power`` :math:`q` multiplies the learning rate
    of the rows of :math:`f(u, \\cdot)` by
    :math:`\\min(m, \\max(1, (n_{ref}/n_u)^q))` (``m = rare_lr_max``): words
    rarer than ``n_ref`` per million take larger steps, as if they had been
    seen more often (the default, ``q = 1/2`` below 4000 per million, at most
    4 times: a word seen 4 times a year in the 10 000 tokens of a year of the
    drift benchmark steps about 3 times further).  Frequencies are relative,
    so a small corpus does not make every word rare; a rare word occurs less
    than once per batch, so the larger step is not multiplied by repetitions
    within a batch.

    ``negative_weight`` :math:`c` weighs the negative term against the positive one:
    1 is the thesis loss (the *mean* over the negatives), ``k`` word2vec's sum
    over ``k`` negatives (a model then scores :math:`\\mathrm{PMI} - \\log k`,
    as word2vec does).  The default, 5 over 32 shared negatives, is word2vec's
    objective with its 5 negatives (the shared mean is an unbiased, lower-variance
    estimate of the sum over 5), and goes with ``lr`` 0.01 and batches of 2048
    pairs (its summed negative steps are 5 times the thesis loss's: at lr 0.01
    with 8192 pairs training diverged on SOTU).  It was taken from the held-out
    likelihood on the State of the Union addresses, where it makes Word2Fun the
    best model, and checked
    once on the sixteen planted-drift corpora, where against the previous
    defaults (1.5, 0.025, 8192) it halved the change-year error, raised the
    rare-word Spearman correlation on seven of eight corpora and missed 2 of 64
    targets instead of 6 (``benchmarks/results/word2fun/w2v-calibration/``).

    ``step_centre_lr`` multiplies the learning rate of the logistic steps'
    centres :math:`c_u` (None: :data:`~qpnlp.word2fun.step_sizes.STEP_CENTRE_LR`,
    0.03, for steps that start mid-span; :func:`~qpnlp.word2fun.train.fit`
    uses :data:`~qpnlp.word2fun.changepoint.STEP_CENTRE_LR_AT_CHANGE_POINTS`
    when the steps start at their change points).

    ``chunk_tokens`` tokens are shuffled together (and, when streaming, held
    in memory); ``sync_every`` batches pass between two synchronisations of
    the processes of a distributed run (128 batches of 2048 pairs: the pairs
    that 32 batches of 8192 held before the batches shrank; at 32 the
    synchronisations took 12-17% of a 2-process run's time,
    ``benchmarks/results/word2fun/sync-every/``). ``seed`` is an integer in
    [0, 2**32 - 1], the seeds of every qpnlp trainer.

    Every setting is checked here (``ValueError`` naming it): counts are
    positive integers, ``lr`` is positive and at most the largest float32
    (about :math:`3.4 \\times 10^{38}`; the step computes in float32).

    Parameters
    ----------
    epochs : int, default 7
        Passes over the corpus.
    batch_size : int, default 2048
        About this many (centre, context) pairs per SGD step.
    lr : float, default 0.01
        The initial learning rate, decayed linearly to ``1e-4 lr`` over the training tokens.
    negatives : int, default 32
        Negative words drawn per pair, or per batch with ``shared_negatives``.
    shared_negatives : bool, default True
        Draw one sample of ``negatives`` words per batch, shared by its pairs; False: ``negatives`` per pair.
    window : int, default 5
        The maximum window size (each centre draws its own from ``1..window``).
    sample : float, default 1e-3
        word2vec's subsampling threshold (>= 0; 0 keeps every token).
    seed : int, default 0
        Seeds the subsampling, windows, shuffles and negatives.
    chunk_tokens : int, default 500_000
        Tokens shuffled together.
    device : str, default "cpu"
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    workers : int, default 1
        Threads training at once.
    roughness_penalty : float or None, default None
        :math:`\\lambda \\ge 0` of the roughness prior; None: :func:`resolve_penalty`.
    roughness_power : float, default 0.5
        :math:`p`, the frequency exponent of the per-word penalty :math:`\\lambda_u`.
    frequency_reference : float, default 4000.0
        :math:`n_{ref}`, in occurrences per million tokens.
    rare_lr_power : float, default 0.5
        :math:`q`, the frequency exponent of the rare words' learning-rate factor.
    rare_lr_max : float, default 4.0
        :math:`m \\ge 1`, the largest such factor.
    sync_every : int, default 128
        Batches between two synchronisations of a distributed run's processes.
    negative_weight : float, default 5.0
        :math:`c > 0`, the weight of the negative term.
    step_centre_lr : float or None, default None
        The factor of the logistic steps' centres' learning rate (>= 0); None: ``STEP_CENTRE_LR``, 0.03, for
        steps that start mid-span, and ``STEP_CENTRE_LR_AT_CHANGE_POINTS``, 0.01, for steps that :func:`fit
        <qpnlp.word2fun.train.fit>` starts at their change points (its default).
    parallel : {"hogwild", "replicas"}, default "hogwild"
        How ``workers`` > 1 share the training: one model updated by all (not deterministic), or a copy each,
        their updates merged every ``replica_sync_every`` batches of each (deterministic).
    replica_sync_every : int, default 32
        With ``parallel="replicas"``: the batches each replica trains between two merges of their updates (in a
        distributed run, within each process's ``sync_every`` batches).
    step_threads : int, default 0
        Threads of each worker's compiled step (its stages cut into as many parts, :mod:`~qpnlp.word2fun.fused_step`):
        the same updates bit for bit whatever their number. 0: :func:`step_threads`, torch's thread count when
        training starts (``torch.set_num_threads``, ``OMP_NUM_THREADS``) for one worker where numba's threads
        survive ``fork`` (its TBB threading layer, installed with the extra ``fast`` on Linux x86-64), else 1. A
        count given runs that many on any layer: under GNU OpenMP (numba's layer without TBB) a child process
        forked after the threads ran can hang (``docs/word2fun-at-scale.md``).
    """

    epochs: int = 7
    batch_size: int = 2048
    lr: float = 0.01
    negatives: int = 32
    shared_negatives: bool = True
    window: int = 5
    sample: float = 1e-3
    seed: int = 0
    chunk_tokens: int = 500_000
    device: str = "cpu"
    workers: int = 1
    roughness_penalty: float | None = None
    roughness_power: float = 0.5
    frequency_reference: float = 4000.0
    rare_lr_power: float = 0.5
    rare_lr_max: float = 4.0
    sync_every: int = 128
    negative_weight: float = 5.0
    step_centre_lr: float | None = None
    parallel: str = "hogwild"
    replica_sync_every: int = 32
    step_threads: int = 0

    def __post_init__(self) -> None:
        positive = dict(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, negatives=self.negatives,
                        window=self.window, chunk_tokens=self.chunk_tokens, workers=self.workers,
                        frequency_reference=self.frequency_reference, sync_every=self.sync_every,
                        replica_sync_every=self.replica_sync_every)
        bad = {k: v for k, v in positive.items() if not 0 < v < math.inf}
        if bad:
            raise ValueError(f"these training settings must be positive and finite: {bad}")
        counts = {k: v for k, v in positive.items() if k not in ("lr", "frequency_reference")}    # the rest count
        bad = {k: v for k, v in counts.items() if not is_integer(v)}
        if bad:  # epochs=2.5 failed only once the corpus had been read and counted
            raise ValueError(f"these training settings must be integers: {bad}")
        if not self.lr <= FLOAT32_MAX:     # inf in the float32 step: NaN parameters, and no loss to show it
            raise ValueError(f"lr must be at most {FLOAT32_MAX:.4g}, the largest float32 (the training step "
                             f"computes in float32); got lr {self.lr:g}")
        if not 0 < self.negative_weight < math.inf:
            raise ValueError(f"negative_weight must be positive and finite; got {self.negative_weight}")
        if self.step_centre_lr is not None and not 0 <= self.step_centre_lr < math.inf:
            raise ValueError(f"step_centre_lr must be finite and >= 0 (or None); got {self.step_centre_lr}")
        resolve_device(self.device, available=False)          # the name; fit() checks this machine has it
        if self.parallel not in PARALLEL_MODES:
            raise ValueError(f"parallel must be one of {PARALLEL_MODES}; got {self.parallel!r}")
        penalty = 0.0 if self.roughness_penalty is None else self.roughness_penalty
        # written so that NaN fails each comparison (inf fails the isfinite ones)
        if not (0 <= self.sample < math.inf and 0 <= penalty < math.inf and 1 <= self.rare_lr_max < math.inf):
            raise ValueError(f"sample and roughness_penalty must be finite and >= 0 and rare_lr_max finite and "
                             f">= 1; got {self.sample}, {self.roughness_penalty}, {self.rare_lr_max}")
        if not (math.isfinite(self.roughness_power) and math.isfinite(self.rare_lr_power)):
            raise ValueError(f"roughness_power and rare_lr_power must be finite; got {self.roughness_power}, "
                             f"{self.rare_lr_power}")
        check_seed(self.seed)            # [0, 2**32); 2**64 and more failed in torch once the corpus was read
        if not (is_integer(self.step_threads) and self.step_threads >= 0):
            raise ValueError(f"step_threads must be an integer >= 0 (0: step_threads()); got {self.step_threads!r}")


def step_threads(cfg: TrainConfig) -> int:
    """The threads of each worker's compiled step: ``cfg.step_threads``, or for 0 ``torch.get_num_threads()`` with
    one worker (what the user gives torch: the cores, ``OMP_NUM_THREADS``, a CLI's ``--threads``; one per process
    under ``torchrun`` and ``--processes``) where the threads survive ``fork``, and 1 with several workers (each
    takes a core) or where they would not (``qpnlp._numba.threads_fork_safe``: numba's TBB threading layer; a
    child forked after GNU OpenMP's threads ran can hang) or the compiled step is off (``QPNLP_COMPILED=0``,
    ``QPNLP_WORD2FUN_COMPILED=0``).

    Parameters
    ----------
    cfg : TrainConfig
        The settings: ``step_threads`` and ``workers``.
    """
    if cfg.step_threads:
        return int(cfg.step_threads)
    threads = torch.get_num_threads() if cfg.workers == 1 else 1
    if threads > 1 and pair_loop.available() and _numba.threads_fork_safe():
        return threads
    return 1


def resolve_penalty(cfg: TrainConfig, family: str, logistic: bool = True) -> TrainConfig:
    """``cfg`` with ``roughness_penalty=None`` replaced by the model's default.

    Families II-IV: :data:`DEFAULT_ROUGHNESS_PENALTY` with the logistic step
    (``logistic``), :data:`DEFAULT_ROUGHNESS_PENALTY_NO_STEP` without it; 0 for
    the other families.

    Parameters
    ----------
    cfg : TrainConfig
        The settings; returned itself when its ``roughness_penalty`` is set (not None), else a copy.
    family : str
        The model's function family, one of :data:`~qpnlp.word2fun.functions.FAMILIES`.
    logistic : bool, default True
        Whether the model has the logistic step (``Word2FunConfig.logistic``; families II-IV only).
    """
    if cfg.roughness_penalty is not None:
        return cfg
    if family not in SINUSOIDAL_FAMILIES:
        return replace(cfg, roughness_penalty=0.0)
    return replace(cfg, roughness_penalty=DEFAULT_ROUGHNESS_PENALTY if logistic else DEFAULT_ROUGHNESS_PENALTY_NO_STEP)


def check_penalty_family(cfg: TrainConfig, family: str) -> None:
    """ValueError for a roughness penalty :math:`\\lambda > 0` on a family without one.

    The penalty :math:`\\rho(u)`, the mean squared speed of :math:`f(u, \\cdot)`, is that of the sinusoidal
    families II-IV (:data:`~qpnlp.word2fun.functions.SINUSOIDAL_FAMILIES`). ``fit`` checks it, ``qpnlp train
    word2fun`` before it reads the corpus (a usage error; it was a failure once the corpus was read), and the SGD
    step for a penalty given to it directly (``check_penalty``, the same message).

    Parameters
    ----------
    cfg : TrainConfig
        The settings; ``roughness_penalty`` None (the family's default, :func:`resolve_penalty`) and 0 pass.
    family : str
        The model's function family, one of :data:`~qpnlp.word2fun.functions.FAMILIES`.
    """
    check_penalty(cfg.roughness_penalty, family)


def check_penalty(penalty: float | None, family: str) -> None:
    """:func:`check_penalty_family` for a penalty value: the SGD step's check of a penalty given to it directly
    (:func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`), with the same message.

    Parameters
    ----------
    penalty : float or None
        :math:`\\lambda`; None and 0 pass for every family.
    family : str
        The model's function family, one of :data:`~qpnlp.word2fun.functions.FAMILIES`.
    """
    if penalty and family not in SINUSOIDAL_FAMILIES:
        raise ValueError(f"roughness_penalty (--roughness-penalty) {penalty:g} needs a sinusoidal "
                         f"family (II, III, IV); got {family!r} (leave it unset, or 0, for the other families)")


def word_weights(counts: np.ndarray, cfg: TrainConfig, device,
                 dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Per-word roughness weights and learning-rate multipliers (None where they are uniform), shape (V,).

    ``cfg.roughness_penalty`` should be resolved (:func:`resolve_penalty`); None counts as 0.  Computed in
    float64 and returned in ``dtype``, the model's (the training loop passes it: float32 factors rounded a float64
    model's steps to float32).

    Parameters
    ----------
    counts : numpy.ndarray
        (V,) training occurrences of each word (a count below 1 counts as 1).
    cfg : TrainConfig
        ``roughness_penalty`` :math:`\\lambda`, ``roughness_power`` :math:`p`, ``frequency_reference``
        :math:`n_{ref}`, ``rare_lr_power`` :math:`q` and ``rare_lr_max`` :math:`m` (module docstring).
    device : torch.device or str
        Where the two tensors are made (the model's).
    dtype : torch.dtype, default torch.float32
        Their dtype (the model's).

    Returns
    -------
    penalty : torch.Tensor or None
        (V,) :math:`\\lambda_u`; None when no roughness step is taken (a penalty of 0 or None) or ``roughness_power``
        is 0 (the float penalty applies to every word).
    lr : torch.Tensor or None
        (V,) :math:`\\eta_u`; None when ``rare_lr_power`` is 0 (every factor 1).
    """
    counts = np.asarray(counts, np.float64)
    per_million = np.maximum(counts, 1.0) * 1e6 / max(counts.sum(), 1.0)
    ratio = cfg.frequency_reference / per_million
    lam = lr = None
    if (cfg.roughness_penalty or 0.0) > 0 and cfg.roughness_power != 0:
        lam = torch.as_tensor(cfg.roughness_penalty * ratio ** cfg.roughness_power, dtype=dtype, device=device)
    if cfg.rare_lr_power != 0:
        lr = torch.as_tensor(np.clip(ratio ** cfg.rare_lr_power, 1.0, cfg.rare_lr_max), dtype=dtype, device=device)
    return lam, lr
