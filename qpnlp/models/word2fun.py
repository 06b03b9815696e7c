"""Word2Fun: words as functions of time (thesis Sec. 4.2, Table 4.1).

Each word ``u`` has a time-dependent context vector :math:`f(u, t) \\in
\\mathbb{R}^D`; each word ``v`` has a static target ("compass") vector
:math:`h(v)`.  Skip-gram with negative sampling is trained with the loss of
thesis Sec. 4.2.2 (positive term plus the *mean* over the negatives):

.. math::
    L = -\\sum_{(u, v, \\hat V, t)} \\Bigl( \\log\\sigma(f(u,t)\\, h(v)^T)
        + \\frac{1}{|\\hat V|} \\sum_{\\hat v \\in \\hat V} \\log\\sigma(-f(u,t)\\, h(\\hat v)^T) \\Bigr)

Function families (``family=``), with :math:`\\tau` the *normalised* time:

===========  =====================================================================  ===========
family       :math:`f(u, \\tau)`                                                       parameters
===========  =====================================================================  ===========
static       :math:`B_u`                                                             VD
sliced       :math:`B_{u, s(\\tau)}` (one vector per time slice, a baseline)          SVD
linear       :math:`B_u + K_u \\tau`                                                  2VD
time2fun     :math:`B_u + \\sin(\\Omega \\tau)`, :math:`\\Omega \\in \\mathbb{R}^D` shared   VD + D
II           :math:`B_u + R_u [\\sin(\\Omega\\tau); \\cos(\\Omega\\tau)]`, fixed
             :math:`\\Omega_j = 10000^{-j/(D/2)}`                                     2VD
III          :math:`B_u + R_u [\\sin(\\Omega^{(1)}_u\\tau); \\cos(\\Omega^{(2)}_u\\tau)]`      3VD
IV           :math:`B_u + R_u [\\sin(\\Omega^{(1)}_u\\tau + \\Theta^{(1)}_u); \\cos(\\Omega^{(2)}_u\\tau + \\Theta^{(2)}_u)]`  4VD
===========  =====================================================================  ===========

``[a; b]`` concatenates the ``D/2`` sine and the ``D/2`` cosine coordinates.

**Time normalisation.**  Raw times (years) are mapped affinely from the corpus
span :math:`[t_0, t_1]` to :math:`[0, S]` (:class:`TimeScale`):
:math:`\\tau = S (t - t_0) / (t_1 - t_0)`, default ``S = 60``.  With the fixed
frequencies of family II the fastest coordinate (:math:`\\Omega_0 = 1`) then
completes :math:`S / 2\\pi \\approx 10` periods over the span and the slowest
are constant, so the basis resolves changes of about a tenth of the span.
The mapping is fixed at construction (stored in checkpoints), so times outside
the training span extrapolate.

**Initialisation.**  Static parts :math:`B_u` (and the slices) as word2vec's
input vectors, :math:`U(-0.5/D, 0.5/D)`; amplitudes :math:`R_u`, slopes
:math:`K_u` and phases zero (every word starts static and acquires time
dependence only when the data ask for it); per-word frequencies start at the
fixed frequencies of family II (``frequency_init="fixed"``) or at the
harmonic ladder :math:`\\Omega_j = \\pi (j+1) / (2S)` (``"harmonic"``, every
coordinate then varies within the span, which is what lets III/IV follow
changes; the default of the CLI and benchmarks); the compass starts at zero as word2vec's
output vectors (or is set from a trained static model and frozen).

Example
-------
>>> import torch
>>> m = Word2Fun(10, 8, family="II", time_scale=TimeScale(1900, 2000))
>>> m.vectors(torch.tensor([1, 2]), torch.tensor([1900.0, 1950.0])).shape
torch.Size([2, 8])
"""

from __future__ import annotations

import json
import math
import time as _time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from qpnlp.models.skipgram import NegativeSampler, iter_pair_batches, keep_probabilities

__all__ = [
    "FAMILIES",
    "TimeScale",
    "fixed_frequencies",
    "harmonic_frequencies",
    "linear_function",
    "time2fun_function",
    "sinusoidal_function",
    "word2fun_loss",
    "Word2Fun",
    "TrainConfig",
    "TrainStats",
    "train_word2fun",
    "sgd_step",
    "Word2FunEmbeddings",
]

FAMILIES = ("static", "sliced", "linear", "time2fun", "II", "III", "IV")


@dataclass(frozen=True)
class TimeScale:
    """Affine map of raw times to normalised time, :math:`\\tau = S (t - t_0)/(t_1 - t_0)`.

    >>> TimeScale(1900, 2000, 60.0).normalise(torch.tensor([1900.0, 1950.0, 2000.0])).tolist()
    [0.0, 30.0, 60.0]
    """

    start: float
    end: float
    scale: float = 60.0

    def __post_init__(self):
        if not self.end > self.start:
            raise ValueError(f"time span must have end > start; got [{self.start}, {self.end}]")

    def normalise(self, t: torch.Tensor) -> torch.Tensor:
        return (t - self.start) / (self.end - self.start) * self.scale

    def denormalise(self, tau: torch.Tensor) -> torch.Tensor:
        return tau * ((self.end - self.start) / self.scale) + self.start


def fixed_frequencies(dim: int, base: float = 10000.0) -> torch.Tensor:
    """Family II frequencies :math:`\\Omega_j = base^{-j/(D/2)}`, ``j = 0..D/2-1``, shape (D/2,).

    >>> fixed_frequencies(4).tolist()
    [1.0, 0.009999999776482582]
    """
    if dim % 2:
        raise ValueError(f"sinusoidal families need an even dimension; got {dim}")
    h = dim // 2
    return base ** (-torch.arange(h, dtype=torch.float32) / h)


def harmonic_frequencies(dim: int, scale: float) -> torch.Tensor:
    """Harmonic ladder :math:`\\Omega_j = \\pi (j + 1) / (2S)`, ``j = 0..D/2-1``, shape (D/2,).

    On :math:`\\tau \\in [0, S]` coordinate ``j`` covers ``(j + 1)/4`` periods: the
    slowest is a quarter-period ramp, the fastest has period ``4S/D`` (the
    trigonometric-polynomial basis of thesis Corollary 2 on the training span).
    An initialisation for the trainable frequencies of families III and IV.

    >>> (harmonic_frequencies(4, 1.0) / math.pi).tolist()
    [0.5, 1.0]
    """
    if dim % 2:
        raise ValueError(f"sinusoidal families need an even dimension; got {dim}")
    return math.pi * torch.arange(1, dim // 2 + 1, dtype=torch.float32) / (2.0 * scale)


# --------------------------------------------------------------------------- functional core


def linear_function(b: torch.Tensor, k: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """:math:`f = b + k\\,\\tau`; ``b, k`` (..., D), ``tau`` (...,) -> (..., D)."""
    return b + k * tau.unsqueeze(-1)


def time2fun_function(b: torch.Tensor, omega: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """Time2Fun :math:`f = B + \\sin(\\Omega\\tau)`; ``b`` (..., D), ``omega`` (D,) shared, ``tau`` (...,)."""
    return b + torch.sin(omega * tau.unsqueeze(-1))


def sinusoidal_function(
    b: torch.Tensor,
    r: torch.Tensor,
    omega1: torch.Tensor,
    omega2: torch.Tensor,
    tau: torch.Tensor,
    theta1: torch.Tensor | None = None,
    theta2: torch.Tensor | None = None,
) -> torch.Tensor:
    """Families II-IV: :math:`f = B + R \\odot [\\sin(\\Omega^{(1)}\\tau + \\Theta^{(1)}); \\cos(\\Omega^{(2)}\\tau + \\Theta^{(2)})]`.

    Parameters
    ----------
    b, r : torch.Tensor, shape (..., D)
    omega1, omega2 : torch.Tensor, shape (..., D/2) or (D/2,)
    tau : torch.Tensor, shape (...,)
    theta1, theta2 : torch.Tensor, shape like ``omega1``, optional (zero phases)

    Returns
    -------
    torch.Tensor, shape (..., D)

    >>> b = torch.zeros(2); r = torch.ones(2); w = torch.tensor([1.0])
    >>> sinusoidal_function(b, r, w, w, torch.tensor(math.pi / 2)).tolist()  # doctest: +ELLIPSIS
    [1.0, -4.3...e-08]
    """
    tt = tau.unsqueeze(-1)
    a1 = omega1 * tt
    a2 = omega2 * tt
    if theta1 is not None:
        a1 = a1 + theta1
    if theta2 is not None:
        a2 = a2 + theta2
    return b + r * torch.cat([torch.sin(a1), torch.cos(a2)], dim=-1)


def word2fun_loss(f: torch.Tensor, h_pos: torch.Tensor, h_neg: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Thesis loss: :math:`-\\log\\sigma(f h_+^T) - \\frac1k \\sum_i \\log\\sigma(-f h_i^T)`.

    Parameters
    ----------
    f : (B, D) time-specific vectors :math:`f(u, t)`
    h_pos : (B, D) compass vectors of the observed context words
    h_neg : (B, k, D) compass vectors of each pair's negatives, or (N, D) negatives shared by the batch
    reduction : {"mean", "sum", "none"}

    >>> z = torch.zeros(1, 2)
    >>> round(word2fun_loss(z, z, torch.zeros(1, 3, 2)).item(), 4)  # 2 log 2
    1.3863
    """
    pos = (f * h_pos).sum(-1)
    if h_neg.dim() == 2:  # negatives shared by the whole batch: one (B, D) x (D, N) product
        neg = f @ h_neg.T
    else:  # elementwise product + sum: memory-bound, much faster than a bmm of (k, D) x (D, 1) blocks
        neg = (h_neg * f.unsqueeze(-2)).sum(-1)
    loss = -(F.logsigmoid(pos) + F.logsigmoid(-neg).mean(-1))
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# --------------------------------------------------------------------------- module


class Word2Fun(nn.Module):
    """Dynamic context vectors :math:`f(u, t)` and a static compass :math:`h(v)`.

    Parameters
    ----------
    vocab_size : int
    dim : int
        ``D`` (even for the sinusoidal families).
    family : str
        One of :data:`FAMILIES`.
    time_scale : TimeScale
        Normalisation of raw times (usually the corpus span).
    n_slices : int
        Number of equal-width time slices of the ``sliced`` family.
    freeze_compass : bool
        If True the compass :math:`h` is not trained (set it with
        :meth:`set_compass`, e.g. from a static model, as in compass-aligned
        word2vec).
    seed : int
    """

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        family: str = "II",
        time_scale: TimeScale | None = None,
        n_slices: int = 10,
        freeze_compass: bool = False,
        frequency_init: str = "fixed",
        seed: int = 0,
    ):
        super().__init__()
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}; got {family!r}")
        if family in ("II", "III", "IV") and dim % 2:
            raise ValueError(f"family {family} needs an even dim; got {dim}")
        self.vocab_size, self.dim, self.family = int(vocab_size), int(dim), family
        self.time_scale = time_scale or TimeScale(0.0, 1.0)
        self.n_slices = int(n_slices)
        self.freeze_compass = bool(freeze_compass)
        if frequency_init not in ("fixed", "harmonic"):
            raise ValueError(f"frequency_init must be 'fixed' or 'harmonic'; got {frequency_init!r}")
        self.frequency_init = frequency_init
        g = torch.Generator().manual_seed(seed)
        V, D, h = self.vocab_size, self.dim, self.dim // 2

        def emb(rows, cols, init="zero"):
            e = nn.Embedding(rows, cols)
            with torch.no_grad():
                if init == "uniform":
                    e.weight.copy_((torch.rand(rows, cols, generator=g) - 0.5) / D)
                else:
                    e.weight.zero_()
            return e

        rows = V * self.n_slices if family == "sliced" else V
        self.base = emb(rows, D, "uniform")
        if family == "sliced":
            # every slice starts from the same vector so slices are comparable from the start
            with torch.no_grad():
                w0 = self.base.weight[:V].clone()
                self.base.weight.copy_(w0.repeat(self.n_slices, 1))
        self.compass = emb(V, D, "zero")
        self.compass.weight.requires_grad_(not self.freeze_compass)
        omega = fixed_frequencies(D) if D % 2 == 0 else None
        if family == "linear":
            self.slope = emb(V, D)
        if family == "time2fun":
            # shared frequencies, sin(Omega tau) starts at 0 for tau = 0
            full = torch.cat([omega, omega]) if omega is not None else torch.ones(D)
            self.omega = nn.Parameter(full.clone())
        if family in ("II", "III", "IV"):
            self.amplitude = emb(V, D)
            self.register_buffer("omega_fixed", omega)
        if family in ("III", "IV"):
            self.omega1 = emb(V, h)
            self.omega2 = emb(V, h)
            init = omega if frequency_init == "fixed" else harmonic_frequencies(D, self.time_scale.scale)
            with torch.no_grad():
                self.omega1.weight.copy_(init.expand(V, h))
                self.omega2.weight.copy_(init.expand(V, h))
        if family == "IV":
            self.theta1 = emb(V, h)
            self.theta2 = emb(V, h)

    # ---- configuration / persistence
    def config(self) -> dict:
        return {
            "vocab_size": self.vocab_size,
            "dim": self.dim,
            "family": self.family,
            "time_scale": asdict(self.time_scale),
            "n_slices": self.n_slices,
            "freeze_compass": self.freeze_compass,
            "frequency_init": self.frequency_init,
        }

    @classmethod
    def from_config(cls, cfg: dict) -> "Word2Fun":
        cfg = dict(cfg)
        ts = TimeScale(**cfg.pop("time_scale"))
        return cls(time_scale=ts, **cfg)

    def set_compass(self, h: torch.Tensor, freeze: bool = True) -> None:
        """Copy ``h`` (V, D) into the compass; optionally freeze it."""
        if tuple(h.shape) != (self.vocab_size, self.dim):
            raise ValueError(f"compass must have shape {(self.vocab_size, self.dim)}; got {tuple(h.shape)}")
        with torch.no_grad():
            self.compass.weight.copy_(h)
        self.freeze_compass = freeze
        self.compass.weight.requires_grad_(not freeze)

    # ---- the function f(u, t)
    def slice_of(self, tau: torch.Tensor) -> torch.Tensor:
        """Slice index of normalised times for the ``sliced`` family, (...,) int64."""
        s = torch.floor(tau / self.time_scale.scale * self.n_slices).long()
        return s.clamp_(0, self.n_slices - 1)

    def tables(self, words: torch.Tensor, tau: torch.Tensor) -> dict:
        """The per-word parameter tables that :math:`f(u, \\tau)` reads: ``{name: (weight (rows, n), row ids (...,))}``."""
        fam = self.family
        if fam == "sliced":
            return {"base": (self.base.weight, words + self.vocab_size * self.slice_of(tau))}
        out = {"base": (self.base.weight, words)}
        if fam == "linear":
            out["slope"] = (self.slope.weight, words)
        if fam in ("II", "III", "IV"):
            out["amplitude"] = (self.amplitude.weight, words)
        if fam in ("III", "IV"):
            out["omega1"] = (self.omega1.weight, words)
            out["omega2"] = (self.omega2.weight, words)
        if fam == "IV":
            out["theta1"] = (self.theta1.weight, words)
            out["theta2"] = (self.theta2.weight, words)
        return out

    def function(self, rows: dict, tau: torch.Tensor) -> torch.Tensor:
        """:math:`f` from gathered rows ``{name: (..., n)}`` (see :meth:`tables`) at normalised ``tau`` (...,) -> (..., D)."""
        fam, b = self.family, rows["base"]
        if fam in ("static", "sliced"):
            return b
        if fam == "linear":
            return linear_function(b, rows["slope"], tau)
        if fam == "time2fun":
            return time2fun_function(b, self.omega, tau)
        r = rows["amplitude"]
        if fam == "II":
            return sinusoidal_function(b, r, self.omega_fixed, self.omega_fixed, tau)
        if fam == "III":
            return sinusoidal_function(b, r, rows["omega1"], rows["omega2"], tau)
        return sinusoidal_function(b, r, rows["omega1"], rows["omega2"], tau, rows["theta1"], rows["theta2"])

    def vectors_normalised(self, words: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        """:math:`f(u, \\tau)` for word ids ``words`` (...,) at normalised times ``tau`` (...,) -> (..., D)."""
        rows = {k: w[i] for k, (w, i) in self.tables(words, tau).items()}
        return self.function(rows, tau)

    def vectors(self, words: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """:math:`f(u, t)` at raw times ``times`` (...,) (e.g. years) -> (..., D)."""
        return self.vectors_normalised(words, self.time_scale.normalise(times.to(torch.float32)))

    def forward(self, centre: torch.Tensor, context: torch.Tensor, negatives: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """Mean thesis loss of a batch: ``centre``, ``context`` (B,), ``negatives`` (B, k), raw ``times`` (B,)."""
        f = self.vectors(centre, times)
        return word2fun_loss(f, self.compass(context), self.compass(negatives))

    @torch.no_grad()
    def grid(self, words: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """Vectors of many words at many raw times in one call: (T,) x (W,) -> (T, W, D)."""
        T, W = times.shape[0], words.shape[0]
        return self.vectors(words.unsqueeze(0).expand(T, W), times.to(torch.float32).unsqueeze(1).expand(T, W))

    # ---- thesis Table 5.27 indicators
    @torch.no_grad()
    def indicators(self, words: torch.Tensor, span: tuple[float, float] | None = None, steps: int = 101) -> dict:
        """Parameter indicators of semantic change (thesis Table 5.27 and 5.28).

        Returns a dict of (W,) tensors:

        * ``amplitude_bias_ratio`` -- :math:`\\mathrm{AVG}|R_u| / \\mathrm{AVG}|B_u|`
          (for ``linear`` the slope plays the role of R; NaN where undefined);
        * ``mean_frequency`` -- :math:`\\mathrm{AVG}|\\Omega_u|` (families II-IV, time2fun);
        * ``mean_abs_derivative`` -- :math:`\\frac{1}{D}\\,\\mathrm{mean}_{t\\in[a,b]} \\lVert \\partial_t f(u, t)\\rVert_1`
          per raw time unit, by central differences on ``steps`` points of the span.
        """
        b = self.base(words)  # the static part; slice 0 for the "sliced" family
        nan = torch.full((words.shape[0],), float("nan"))
        if self.family in ("II", "III", "IV"):
            ratio = self.amplitude(words).abs().mean(-1) / b.abs().mean(-1)
        elif self.family == "linear":
            ratio = self.slope(words).abs().mean(-1) / b.abs().mean(-1)
        else:
            ratio = nan
        if self.family == "II":
            freq = self.omega_fixed.abs().mean().expand(words.shape[0]).clone()
        elif self.family in ("III", "IV"):
            freq = torch.cat([self.omega1(words), self.omega2(words)], -1).abs().mean(-1)
        elif self.family == "time2fun":
            freq = self.omega.abs().mean().expand(words.shape[0]).clone()
        else:
            freq = nan
        a, e = span or (self.time_scale.start, self.time_scale.end)
        ts = torch.linspace(a, e, steps)
        eps = (e - a) / (steps - 1) / 2 if steps > 1 else 1.0
        d = (self.grid(words, ts + eps) - self.grid(words, ts - eps)) / (2 * eps)
        deriv = d.abs().mean(-1).mean(0)
        return {"amplitude_bias_ratio": ratio, "mean_frequency": freq, "mean_abs_derivative": deriv}


# --------------------------------------------------------------------------- training


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train_word2fun` (word2vec defaults where they exist)."""

    epochs: int = 5
    batch_size: int = 4096
    lr: float = 0.025
    negatives: int = 5
    shared_negatives: bool = False
    window: int = 5
    sample: float = 1e-3
    seed: int = 0
    chunk_tokens: int = 500_000
    device: str = "cpu"


@dataclass
class TrainStats:
    """What a training run did: pairs, tokens, wall time, tokens/s and mean loss per epoch."""

    tokens: int = 0
    pairs: int = 0
    seconds: float = 0.0
    epoch_loss: list = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


def _lr_factor(name: str, scale: float) -> float:
    """Step multiplier per table: :math:`\\partial f/\\partial\\Omega \\propto \\tau` (step / S) and
    :math:`\\partial f/\\partial K = \\tau` (step / S^2, i.e. SGD on the slope per unit of the whole span)."""
    if name in ("omega1", "omega2"):
        return 1.0 / scale
    if name == "slope":
        return 1.0 / scale**2
    return 1.0


def sgd_step(
    model: Word2Fun,
    centre: torch.Tensor,
    context: torch.Tensor,
    negatives: torch.Tensor,
    times: torch.Tensor,
    lr: float,
) -> float:
    """One SGD step on the *summed* thesis loss of a batch, touching only the rows it reads.

    The rows of every parameter table that :math:`f(u, t)` and the compass
    read are gathered, the loss is differentiated with respect to those rows
    (autograd on (B, n) tensors, no (V, n) gradient), and each gradient row is
    scattered back with ``index_add_`` (rows repeated in the batch add their
    gradients, as consecutive word2vec updates would).  Frequency rows step
    with ``lr / S`` and slopes with ``lr / S^2``; shared parameters (Time2Fun's :math:`\\Omega`) with
    ``lr / B``.  The compass is skipped when frozen.

    Shapes: ``centre``, ``context``, ``times`` (B,), ``negatives`` (B, k).
    Returns the summed loss.
    """
    tau = model.time_scale.normalise(times.to(torch.float32))
    tabs = model.tables(centre, tau)
    with torch.no_grad():
        rows = {k: w[i] for k, (w, i) in tabs.items()}
        H = model.compass.weight
        hp, hn = H[context], H[negatives]
    leaves = []
    for r in rows.values():
        r.requires_grad_(True)
        leaves.append(r)
    train_h = not model.freeze_compass
    if train_h:
        hp.requires_grad_(True)
        hn.requires_grad_(True)
        leaves += [hp, hn]
    shared = [p for n, p in model.named_parameters() if p.requires_grad and not n.endswith(".weight")]
    leaves += shared
    f = model.function(rows, tau)
    loss = word2fun_loss(f, hp, hn, reduction="sum")
    grads = torch.autograd.grad(loss, leaves)
    with torch.no_grad():
        gi = iter(grads)
        for name, (w, i) in tabs.items():
            step = lr * _lr_factor(name, model.time_scale.scale)
            w.index_add_(0, i, next(gi), alpha=-step)
        if train_h:
            H.index_add_(0, context, next(gi), alpha=-lr)
            H.index_add_(0, negatives.reshape(-1), next(gi).reshape(-1, H.shape[1]), alpha=-lr)
        for p in shared:
            p.add_(next(gi), alpha=-lr / centre.shape[0])
    return float(loss.detach())


def train_word2fun(
    model: Word2Fun,
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    doc_times: np.ndarray,
    counts: np.ndarray,
    config: TrainConfig | None = None,
    progress: bool = False,
    on_epoch=None,
) -> TrainStats:
    """Train ``model`` by skip-gram with negative sampling on an encoded corpus.

    Minibatch SGD (:func:`sgd_step`) with word2vec's learning rate, decayed
    linearly from ``lr`` to ``1e-4 lr`` over the expected number of batches.
    Pairs come from :func:`~qpnlp.models.skipgram.iter_pair_batches`
    (subsampling, dynamic windows, shuffled documents); negatives are drawn
    on ``config.device``: ``negatives`` per pair (word2vec), or, with
    ``shared_negatives=True``, one sample of ``negatives`` words shared by all
    pairs of the batch.  Because the thesis loss takes the *mean* over a
    pair's negatives, both are unbiased estimates of the same expected
    negative term; sharing turns B x k dot products into one (B, D) x (D, N)
    matrix product.

    Parameters
    ----------
    tokens, doc_ids : numpy.ndarray, shape (n_tokens,)
    doc_times : numpy.ndarray, shape (n_docs,)
        Raw times.
    counts : numpy.ndarray, shape (V,)
        Word counts (subsampling and the unigram^0.75 negatives).
    config : TrainConfig
    progress : bool
        Show a tqdm bar over tokens.
    on_epoch : callable(epoch, stats), optional
        Called after each epoch (e.g. to checkpoint).

    Returns
    -------
    TrainStats
        ``tokens_per_s`` counts corpus tokens times epochs over the training wall time.
    """
    cfg = config or TrainConfig()
    dev = torch.device(cfg.device)
    model.to(dev)
    rng = np.random.default_rng(cfg.seed)
    tgen = torch.Generator(device=dev).manual_seed(cfg.seed)
    keep = keep_probabilities(counts, cfg.sample)
    sampler = NegativeSampler(counts, 0.75, device=dev)
    kept = float(keep[tokens].sum())
    # dynamic windows give on average (W + 1) pairs per kept token
    est_batches = max(1, int(cfg.epochs * kept * (cfg.window + 1) / cfg.batch_size))
    stats = TrainStats()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.epochs * int(tokens.shape[0]), unit="tok", unit_scale=True, desc=f"word2fun {model.family}")
    step = 0
    t0 = _time.perf_counter()
    for epoch in range(cfg.epochs):
        total, nb = 0.0, 0
        for batch in iter_pair_batches(
            tokens, doc_ids, doc_times, keep_prob=keep, window=cfg.window, batch_size=cfg.batch_size,
            rng=rng, chunk_tokens=cfg.chunk_tokens, device=dev,
        ):
            lr = cfg.lr * max(1e-4, 1.0 - step / est_batches)
            shape = (cfg.negatives,) if cfg.shared_negatives else (batch.centre.shape[0], cfg.negatives)
            neg = sampler.sample(shape, generator=tgen)
            total += sgd_step(model, batch.centre, batch.context, neg, batch.time, lr)
            nb += batch.centre.shape[0]
            step += 1
        stats.pairs += nb
        stats.tokens += int(tokens.shape[0])
        stats.epoch_loss.append(total / max(nb, 1))
        if bar is not None:
            bar.update(int(tokens.shape[0]))
            bar.set_postfix(loss=f"{stats.epoch_loss[-1]:.4f}")
        if on_epoch is not None:
            on_epoch(epoch, stats)
    stats.seconds = _time.perf_counter() - t0
    if bar is not None:
        bar.close()
    return stats


# --------------------------------------------------------------------------- trained model + queries


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class Word2FunEmbeddings:
    """A trained :class:`Word2Fun` with its vocabulary: the query interface.

    Parameters
    ----------
    model : Word2Fun
    words : sequence of str, length V
        Word of each id.
    counts : array, shape (V,), optional
    """

    def __init__(self, model: Word2Fun, words: Sequence[str], counts=None):
        if len(words) != model.vocab_size:
            raise ValueError(f"{len(words)} words for a model of vocabulary {model.vocab_size}")
        self.model = model.eval()
        self.words = tuple(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.counts = np.zeros(len(words), np.int64) if counts is None else np.asarray(counts, np.int64)

    def _ids(self, words) -> torch.Tensor:
        if isinstance(words, str):
            words = [words]
        bad = [w for w in words if w not in self.index]
        if bad:
            raise KeyError(f"word {bad[0]!r} is not in the vocabulary ({len(self.words)} words)")
        return torch.tensor([self.index[w] for w in words], dtype=torch.long)

    def vector(self, word: str, time: float) -> torch.Tensor:
        """:math:`f(u, t)`, shape (D,)."""
        return self.grid([word], [time])[0, 0]

    def grid(self, words: Sequence[str], times: Sequence[float]) -> torch.Tensor:
        """Vectors of ``words`` at ``times`` in one call, shape (T, W, D)."""
        return self.model.grid(self._ids(list(words)), torch.as_tensor(list(times), dtype=torch.float32))

    def nearest(self, word: str, time: float, k: int = 10, min_count: int = 0) -> list[tuple[str, float]]:
        """``k`` nearest words to ``word`` at ``time`` by cosine of :math:`f(\\cdot, t)` (excluding itself)."""
        with torch.no_grad():
            all_ids = torch.arange(len(self.words))
            E = _unit(self.model.grid(all_ids, torch.tensor([float(time)]))[0])
            q = E[self.index[word]] if word in self.index else None
            if q is None:
                raise KeyError(f"word {word!r} is not in the vocabulary ({len(self.words)} words)")
            sims = E @ q
            sims[self.index[word]] = -float("inf")
            if min_count > 0:
                sims[torch.from_numpy(self.counts < min_count)] = -float("inf")
            top = torch.topk(sims, min(k, len(self.words) - 1))
        return [(self.words[i], float(s)) for s, i in zip(top.values.tolist(), top.indices.tolist())]

    def similarity_over_time(self, word_a: str, word_b: str, times: Sequence[float]) -> torch.Tensor:
        """Cosine of :math:`f(a, t)` and :math:`f(b, t)` for each time, shape (T,)."""
        G = _unit(self.grid([word_a, word_b], times))
        return (G[:, 0] * G[:, 1]).sum(-1)

    def change_degree(
        self, word: str, period_a: tuple[float, float], period_b: tuple[float, float], step: float = 1.0,
        measure: str = "cosine",
    ) -> float:
        """Degree of change of ``word`` between two periods (inclusive ranges sampled every ``step``).

        ``measure="cosine"`` -- cosine distance of the mean vectors (thesis Sec. 5.3.2.3):

        .. math:: 1 - \\cos\\Bigl(\\overline{f(u, t)}_{t \\in A}, \\overline{f(u, t)}_{t \\in B}\\Bigr)

        ``measure="context"`` -- mean absolute change of the period-averaged
        skip-gram probability :math:`\\sigma(f(u, t) h(v)^T)` (thesis Sec. 4.2.2)
        over all words ``v`` of the vocabulary:

        .. math:: \\frac1V \\sum_v \\Bigl| \\overline{\\sigma(f(u,t) h(v)^T)}_{t \\in A} - \\overline{\\sigma(f(u,t) h(v)^T)}_{t \\in B} \\Bigr|
        """
        ta = np.arange(period_a[0], period_a[1] + 1e-9, step)
        tb = np.arange(period_b[0], period_b[1] + 1e-9, step)
        a = self.grid([word], ta)[:, 0]
        b = self.grid([word], tb)[:, 0]
        if measure == "cosine":
            return float(1.0 - F.cosine_similarity(a.mean(0), b.mean(0), dim=0))
        if measure == "context":
            H = self.model.compass.weight.detach()
            return float((torch.sigmoid(a @ H.T).mean(0) - torch.sigmoid(b @ H.T).mean(0)).abs().mean())
        raise ValueError(f"measure must be 'cosine' or 'context'; got {measure!r}")

    def indicators(self, words: Sequence[str], span: tuple[float, float] | None = None) -> dict:
        """Thesis Table 5.27 indicators as ``{name: {word: value}}`` (see :meth:`Word2Fun.indicators`)."""
        ind = self.model.indicators(self._ids(list(words)), span)
        return {k: dict(zip(words, v.tolist())) for k, v in ind.items()}

    def export_npz(self, path: str | Path, words: Sequence[str] | None = None, years: Sequence[float] | None = None) -> None:
        """Write ``words`` (W,), ``years`` (T,) and ``E`` (T, W, D) float32 to an .npz file."""
        words = list(words) if words is not None else list(self.words)
        ts = self.model.time_scale
        years = list(years) if years is not None else list(np.arange(math.floor(ts.start), math.floor(ts.end) + 1))
        E = self.grid(words, years).numpy().astype(np.float32)
        np.savez(path, words=np.asarray(words), years=np.asarray(years, dtype=np.float64), E=E)

    # ---- checkpoints: safetensors weights + JSON config/vocabulary, no pickle
    def save(self, path: str | Path) -> None:
        """Save to ``path`` (a directory): ``weights.safetensors`` and ``config.json``."""
        from safetensors.torch import save_file

        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        save_file(state, str(p / "weights.safetensors"))
        meta = {"model": self.model.config(), "words": list(self.words), "counts": self.counts.tolist()}
        (p / "config.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path: str | Path) -> "Word2FunEmbeddings":
        """Inverse of :meth:`save`; executes no code from the files."""
        from safetensors.torch import load_file

        p = Path(path)
        meta = json.loads((p / "config.json").read_text())
        model = Word2Fun.from_config(meta["model"])
        model.load_state_dict(load_file(str(p / "weights.safetensors")))
        return cls(model, meta["words"], meta["counts"])
