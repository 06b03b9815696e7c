"""Word2Fun: words as functions of time (thesis Sec. 4.2, Table 4.1).

Each word ``u`` has a time-dependent context vector :math:`f(u, t) \\in
\\mathbb{R}^D`; each word ``v`` has a static target ("compass") vector
:math:`h(v)`.  Skip-gram with negative sampling is trained with the loss of
thesis Sec. 4.2.2 (positive term plus the *mean* over the negatives):

.. math::
    L = -\\sum_{(u, v, \\hat V, t)} \\Bigl( \\log\\sigma(f(u,t)\\, h(v)^T)
        + \\frac{1}{|\\hat V|} \\sum_{\\hat v \\in \\hat V} \\log\\sigma(-f(u,t)\\, h(\\hat v)^T) \\Bigr)

Function families (``family=``), with :math:`\\tau` the *normalised* time:

========  ========================================================================================================  ==========
family    :math:`f(u, \\tau)`                                                                                        parameters
========  ========================================================================================================  ==========
static    :math:`B_u`                                                                                               VD
sliced    :math:`B_{u, s(\\tau)}` (one vector per time slice, a baseline)                                            SVD
linear    :math:`B_u + K_u \\tau`                                                                                    2VD
time2fun  :math:`B_u + \\sin(\\Omega \\tau)`, :math:`\\Omega \\in \\mathbb{R}^D` shared                                   VD + D
II        :math:`B_u + R_u [\\sin(\\Omega\\tau); \\cos(\\Omega\\tau)]`, fixed
          :math:`\\Omega_j = 10000^{-j/(D/2)}`                                                                       2VD
III       :math:`B_u + R_u [\\sin(\\Omega^{(1)}_u\\tau); \\cos(\\Omega^{(2)}_u\\tau)]`                                    3VD
IV        :math:`B_u + R_u [\\sin(\\Omega^{(1)}_u\\tau + \\Theta^{(1)}_u); \\cos(\\Omega^{(2)}_u\\tau + \\Theta^{(2)}_u)]`  4VD
========  ========================================================================================================  ==========

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
``max_periods`` caps the harmonic ladder (:func:`harmonic_frequencies`): the
levels go from a quarter period up to ``max_periods`` periods over the span and
repeat over the coordinates.  The full ladder reaches ``D/8`` periods (8 years
on a 100-year span with ``D = 100``); such fast coordinates fit year-to-year
sampling noise, whose amount depends on how mixed a word's contexts are, and
that noise leaks into change measures.  A cap of 2.5 periods (40 years)
removes that leak but smooths abrupt switches over about 20 years; the
*roughness penalty* (``TrainConfig.roughness_penalty``, :func:`roughness`:
the mean squared speed of :math:`f(u, \\cdot)`, a smoothing-spline prior that
costs an amplitude in proportion to its frequency squared) lets a faster
ladder follow abrupt switches while damping the noise: the planted-drift
benchmark uses ``max_periods=6`` with :math:`\\lambda = 2 \\cdot 10^{-5}`
(``benchmarks/word2fun_drift.py``).

**Training** (:func:`train_word2fun`) is minibatch SGD without autograd:
batches hold whole centre tokens with all their pairs
(:func:`~qpnlp.models.skipgram.iter_centre_batches`), :math:`f(u, t)` is
computed once per centre token and its gradient written out
(:meth:`Word2Fun.function_vjp`, :func:`centre_sgd_step`), only the rows a
batch reads are updated, and several hogwild threads can share the model
(``TrainConfig.workers``).

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

from qpnlp.models.skipgram import NegativeSampler, iter_centre_batches, keep_probabilities

__all__ = [
    "FAMILIES",
    "SINUSOIDAL_FAMILIES",
    "TimeScale",
    "fixed_frequencies",
    "harmonic_frequencies",
    "linear_function",
    "time2fun_function",
    "sinusoidal_function",
    "roughness",
    "word2fun_loss",
    "Word2Fun",
    "TrainConfig",
    "TrainStats",
    "train_word2fun",
    "sgd_step",
    "centre_sgd_step",
    "Word2FunEmbeddings",
]

FAMILIES = ("static", "sliced", "linear", "time2fun", "II", "III", "IV")
#: The sinusoidal families of thesis Table 4.1 (amplitudes R and frequencies Omega; even dimension).
SINUSOIDAL_FAMILIES = ("II", "III", "IV")


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


def harmonic_frequencies(dim: int, scale: float, max_periods: float | None = None) -> torch.Tensor:
    """Harmonic ladder :math:`\\Omega_j = \\pi (1 + j \\bmod L) / (2S)`, ``j = 0..D/2-1``, shape (D/2,).

    On :math:`\\tau \\in [0, S]` coordinate ``j`` covers ``(1 + j mod L)/4``
    periods: the slowest is a quarter-period ramp, the fastest completes
    ``L/4`` periods (the trigonometric-polynomial basis of thesis Corollary 2
    on the training span).  ``L = 4 * max_periods`` levels, repeated over the
    ``D/2`` coordinates; by default ``L = D/2`` (no repetition, the fastest
    period is ``4S/D``).  An initialisation for the trainable frequencies of
    families III and IV; a smaller ``max_periods`` keeps every coordinate
    smooth on the scale of the changes to be measured.

    >>> (harmonic_frequencies(4, 1.0) / math.pi).tolist()
    [0.5, 1.0]
    >>> (harmonic_frequencies(8, 1.0, max_periods=0.5) / math.pi).tolist()
    [0.5, 1.0, 0.5, 1.0]
    """
    if dim % 2:
        raise ValueError(f"sinusoidal families need an even dimension; got {dim}")
    h = dim // 2
    levels = h if max_periods is None else max(1, int(round(4 * max_periods)))
    j = torch.arange(h, dtype=torch.float32)
    return math.pi * (1.0 + torch.remainder(j, levels)) / (2.0 * scale)


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
    frequency_init : {"fixed", "harmonic"}
        Initial per-word frequencies of families III and IV (see the module
        docstring).
    max_periods : float, optional
        Cap of the harmonic ladder, in periods over the span
        (:func:`harmonic_frequencies`); ``None`` for the full ladder.
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
        max_periods: float | None = None,
        seed: int = 0,
    ):
        super().__init__()
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}; got {family!r}")
        if family in SINUSOIDAL_FAMILIES and dim % 2:
            raise ValueError(f"family {family} needs an even dim; got {dim}")
        self.vocab_size, self.dim, self.family = int(vocab_size), int(dim), family
        self.time_scale = time_scale or TimeScale(0.0, 1.0)
        self.n_slices = int(n_slices)
        self.freeze_compass = bool(freeze_compass)
        if frequency_init not in ("fixed", "harmonic"):
            raise ValueError(f"frequency_init must be 'fixed' or 'harmonic'; got {frequency_init!r}")
        self.frequency_init = frequency_init
        self.max_periods = None if max_periods is None else float(max_periods)
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
        if family in SINUSOIDAL_FAMILIES:
            self.amplitude = emb(V, D)
            self.register_buffer("omega_fixed", omega)
        if family in ("III", "IV"):
            self.omega1 = emb(V, h)
            self.omega2 = emb(V, h)
            init = omega if frequency_init == "fixed" else harmonic_frequencies(D, self.time_scale.scale, self.max_periods)
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
            "max_periods": self.max_periods,
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
        if fam in SINUSOIDAL_FAMILIES:
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

    def function_vjp(self, rows: dict, tau: torch.Tensor):
        """:math:`f` and its vector-Jacobian product, for training without autograd.

        Parameters
        ----------
        rows : dict
            Gathered rows ``{name: (N, n)}`` (see :meth:`tables`).
        tau : torch.Tensor, shape (N,)
            Normalised times.

        Returns
        -------
        f : torch.Tensor, shape (N, D)
            As :meth:`function`.
        vjp : callable
            ``vjp(g)`` with ``g`` = :math:`\\partial L / \\partial f` (N, D) returns
            ``(row_grads, shared_grads)``: :math:`\\partial L / \\partial` each
            gathered row ``{name: (N, n)}`` and of each shared parameter
            ``{name: tensor}`` (Time2Fun's :math:`\\Omega`).  The sines and
            cosines of the forward pass are reused.  For the sinusoidal
            families, with :math:`a^{(1)} = \\Omega^{(1)}\\tau + \\Theta^{(1)}`,
            :math:`a^{(2)} = \\Omega^{(2)}\\tau + \\Theta^{(2)}` and ``g = [g1; g2]``:
            :math:`\\partial_B = g`, :math:`\\partial_R = g \\odot [\\sin a^{(1)}; \\cos a^{(2)}]`,
            :math:`\\partial_{\\Theta^{(1)}} = g_1 R_1 \\cos a^{(1)}`,
            :math:`\\partial_{\\Theta^{(2)}} = -g_2 R_2 \\sin a^{(2)}` and
            :math:`\\partial_{\\Omega^{(i)}} = \\tau\\, \\partial_{\\Theta^{(i)}}`.
        """
        fam, b = self.family, rows["base"]
        tt = tau.unsqueeze(-1)
        if fam in ("static", "sliced"):
            return b, lambda g: ({"base": g}, {})
        if fam == "linear":
            k = rows["slope"]
            return linear_function(b, k, tau), lambda g: ({"base": g, "slope": g * tt}, {})
        if fam == "time2fun":
            a = self.omega * tt
            return b + torch.sin(a), lambda g: ({"base": g}, {"omega": (g * torch.cos(a) * tt).sum(0)})
        r = rows["amplitude"]
        h = self.dim // 2
        if fam == "II":
            a = self.omega_fixed * tt
            s = torch.cat([torch.sin(a), torch.cos(a)], -1)
            return torch.addcmul(b, r, s), lambda g: ({"base": g, "amplitude": g * s}, {})
        a1 = torch.addcmul(rows["theta1"], rows["omega1"], tt) if fam == "IV" else rows["omega1"] * tt
        a2 = torch.addcmul(rows["theta2"], rows["omega2"], tt) if fam == "IV" else rows["omega2"] * tt
        sin1, cos2 = torch.sin(a1), torch.cos(a2)
        s = torch.cat([sin1, cos2], -1)

        def vjp(g):
            gr = g * r
            d1 = gr[:, :h] * torch.cos(a1)
            d2 = -gr[:, h:] * torch.sin(a2)
            out = {"base": g, "amplitude": g * s, "omega1": d1 * tt, "omega2": d2 * tt}
            if fam == "IV":
                out["theta1"], out["theta2"] = d1, d2
            return out, {}

        return torch.addcmul(b, r, s), vjp

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
        if self.family in SINUSOIDAL_FAMILIES:
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
    """Hyper-parameters of :func:`train_word2fun` (word2vec defaults where they exist).

    ``batch_size`` counts pairs (batches end at centre-token boundaries);
    ``workers`` > 1 trains with that many hogwild threads of one torch thread
    each, fed by a background thread that generates the pairs (faster on
    several cores, not deterministic); ``workers=1`` runs in the calling
    thread with the torch thread setting of the caller.

    ``roughness_penalty`` :math:`\\lambda \\ge 0` (families II-IV) adds
    :math:`\\lambda\\, \\rho(u)` (:func:`roughness`, the mean squared speed of
    :math:`f(u, \\cdot)` over the span) to the loss of every centre token of
    word ``u``: a smoothing-spline prior, so that fast coordinates follow
    abrupt changes the data support but damp year-to-year sampling noise.
    Per token, so rare and frequent words are smoothed alike relative to
    their data.
    """

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
    workers: int = 1
    roughness_penalty: float = 0.0

    def __post_init__(self) -> None:
        positive = dict(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, negatives=self.negatives,
                        window=self.window, chunk_tokens=self.chunk_tokens, workers=self.workers)
        bad = {k: v for k, v in positive.items() if not v > 0}
        if bad:
            raise ValueError(f"these training settings must be positive: {bad}")
        if self.sample < 0 or self.roughness_penalty < 0:
            raise ValueError(f"sample and roughness_penalty must be >= 0; got {self.sample}, {self.roughness_penalty}")


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


def _span_frequencies(model: "Word2Fun", rows: dict) -> torch.Tensor:
    """:math:`w = S\\,\\Omega` of the ``D`` amplitude coordinates: (N, D) from gathered rows (III, IV), or (D,) (II)."""
    S = model.time_scale.scale
    if model.family not in SINUSOIDAL_FAMILIES:
        raise ValueError(f"the roughness penalty needs a sinusoidal family (II, III, IV); got {model.family!r}")
    if model.family == "II":
        return torch.cat([model.omega_fixed, model.omega_fixed]) * S
    return torch.cat([rows["omega1"], rows["omega2"]], -1) * S


def roughness(model: "Word2Fun", rows: dict) -> torch.Tensor:
    """Roughness of :math:`f(u, \\cdot)` for gathered rows (see :meth:`Word2Fun.tables`), families II-IV, shape (N,).

    .. math:: \\rho(u) = \\tfrac12 \\sum_{j=1}^{D} (S\\,\\Omega_{u,j} R_{u,j})^2

    with :math:`\\Omega_u = [\\Omega^{(1)}_u; \\Omega^{(2)}_u]`: the mean of
    :math:`\\lVert \\partial f(u, t) / \\partial s \\rVert^2` over the span, with
    :math:`s = (t - t_0) / (t_1 - t_0)`, for coordinates completing whole
    half-periods (otherwise approximately): the first-order Sobolev
    (smoothing-spline) roughness.  It does not depend on the time scale ``S``
    and weighs an amplitude by its frequency squared, so slow drift is almost
    free while fast wiggles are costly.  Differentiable (autograd) in the rows.
    """
    return 0.5 * (_span_frequencies(model, rows) * rows["amplitude"]).square().sum(-1)


def _add_roughness_steps(model: "Word2Fun", rows: dict, steps: dict, step: float) -> None:
    """``steps[name] -= step * d rho / d rows[name]`` for the amplitudes and (III, IV) the frequencies.

    :math:`\\partial\\rho/\\partial R_j = w_j^2 R_j` and
    :math:`\\partial\\rho/\\partial\\Omega_j = S^2 \\Omega_j R_j^2` with :math:`w = S\\Omega`.
    """
    r, w = rows["amplitude"], _span_frequencies(model, rows)
    steps["amplitude"].addcmul_(w.square(), r, value=-step)
    if model.family in ("III", "IV"):
        g = (w * r.square()).mul_(-step * model.time_scale.scale)  # -step * S^2 Omega R^2
        h = model.dim // 2
        steps["omega1"].add_(g[:, :h])
        steps["omega2"].add_(g[:, h:])


def _scatter_rows(weight: torch.Tensor, index: torch.Tensor, src: torch.Tensor, alpha: float, inplace: bool = False) -> None:
    """``weight[index[i]] += alpha * src[i]``, repeated rows accumulating; ``inplace`` scales ``src`` in place.

    ``scatter_add_`` with the index expanded over the columns: on CPU several
    times faster than ``index_add_`` for unsorted indices.
    """
    if alpha != 1.0:
        src = src.mul_(alpha) if inplace else src * alpha
    weight.scatter_add_(0, index.unsqueeze(-1).expand_as(src), src)


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
    """
    idx = torch.arange(centre.shape[0], device=centre.device)
    return centre_sgd_step(model, centre, times, idx, context, negatives, lr)


@torch.no_grad()
def centre_sgd_step(
    model: Word2Fun,
    words: torch.Tensor,
    times: torch.Tensor,
    pair_centre: torch.Tensor,
    context: torch.Tensor,
    negatives: torch.Tensor,
    lr: float,
    roughness_penalty: float = 0.0,
) -> float:
    """One SGD step on the summed thesis loss of the pairs of ``N`` centre tokens.

    :math:`f(u_n, t_n)` is computed once per centre token ``n``, the pairs
    read it through ``pair_centre``.  The gradient is written out (no
    autograd): with :math:`p = f\\,h_+^T` and :math:`q_i = f\\,h_i^T`,

    .. math::
        \\frac{\\partial L}{\\partial p} = \\sigma(p) - 1, \\qquad
        \\frac{\\partial L}{\\partial q_i} = \\frac{\\sigma(q_i)}{k},

    accumulated into :math:`\\partial L / \\partial f` per centre token and
    into the compass rows, then pulled back to the rows of the parameter
    tables by :meth:`Word2Fun.function_vjp`.  Every gradient row is scattered
    with ``scatter_add_`` (rows repeated in the batch add their gradients, as
    consecutive word2vec updates would); all gradients are taken at the
    parameters before the step.  Frequency rows step with ``lr / S``, slopes
    with ``lr / S^2``, shared parameters (Time2Fun's :math:`\\Omega`) with
    ``lr / B``; the compass is skipped when frozen.

    With negatives shared by the batch the negative term of a pair depends
    on its centre token only, so it is computed once per centre token and
    weighted by the token's number of pairs: the loss is exactly that of
    :func:`word2fun_loss` over the pairs.

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
    roughness_penalty : float
        :math:`\\lambda`: adds :math:`\\lambda\\,\\rho(u_n)` (:func:`roughness`) per centre
        token to the loss (families II-IV); its gradient joins the rows' steps.

    Returns
    -------
    float
        The summed loss of the batch (before the step).
    """
    N, B, D = words.shape[0], context.shape[0], model.dim
    tau = model.time_scale.normalise(times.to(torch.float32))
    tabs = model.tables(words, tau)
    rows = {k: w.index_select(0, i) for k, (w, i) in tabs.items()}
    f, vjp = model.function_vjp(rows, tau)
    H = model.compass.weight
    train_h = not model.freeze_compass
    hp = H.index_select(0, context)
    fp = f.index_select(0, pair_centre)
    pos = (fp * hp).sum(-1)
    gp = torch.sigmoid(pos).sub_(1.0)  # dL/dpos
    loss = -F.logsigmoid(pos).sum()
    g_f = torch.zeros_like(f).index_add_(0, pair_centre, hp.mul_(gp[:, None]))
    if negatives.dim() == 1:
        k = negatives.shape[0]
        hn = H.index_select(0, negatives)  # (k, D)
        q = f @ hn.T  # (N, k)
        w = torch.bincount(pair_centre, minlength=N).to(f.dtype) / k  # pairs per centre / k
        loss -= (F.logsigmoid(-q).sum(-1) * w).sum()
        gn = torch.sigmoid(q).mul_(w[:, None])  # dL/dq
        g_f.addmm_(gn, hn)
        if train_h:
            _scatter_rows(H, negatives, gn.T @ f, -lr, inplace=True)
    else:
        k = negatives.shape[1]
        neg_idx = negatives.reshape(-1)
        hn = H.index_select(0, neg_idx).view(B, k, D)
        q = torch.bmm(hn, fp.unsqueeze(-1)).squeeze(-1)  # (B, k)
        loss -= F.logsigmoid(-q).sum() / k
        gn = torch.sigmoid(q).div_(k)
        g_f.index_add_(0, pair_centre, torch.bmm(gn.unsqueeze(1), hn).squeeze(1))
        if train_h:
            _scatter_rows(H, neg_idx, (gn.unsqueeze(-1) * fp.unsqueeze(1)).reshape(-1, D), -lr, inplace=True)
    if train_h:  # positives last: fp is overwritten by its gradient
        _scatter_rows(H, context, fp.mul_(gp.mul_(-lr)[:, None]), 1.0, inplace=True)
    row_steps, shared = vjp(g_f.mul_(-lr))  # the VJP is linear: pull back -lr dL/df
    if roughness_penalty > 0:
        _add_roughness_steps(model, rows, row_steps, lr * roughness_penalty)
    scale = model.time_scale.scale
    for name, (w_, i) in tabs.items():
        _scatter_rows(w_, i, row_steps[name], _lr_factor(name, scale), inplace=True)
    for name, g in shared.items():
        getattr(model, name).add_(g, alpha=1.0 / B)
    return float(loss)


def _train_batches(model, batches, sampler, gen, cfg, epoch, lock=None) -> tuple[float, int]:
    """Run :func:`centre_sgd_step` over ``batches`` (an iterator, shared under ``lock`` by hogwild workers)."""
    total, nb, done = 0.0, 0, 0.0
    while True:
        if lock is None:
            batch = next(batches, None)
        else:
            with lock:
                batch = next(batches, None)
        if batch is None:
            return total, nb
        lr = cfg.lr * max(1e-4, 1.0 - (epoch + done) / cfg.epochs)
        B = batch.context.shape[0]
        shape = (cfg.negatives,) if cfg.shared_negatives else (B, cfg.negatives)
        neg = sampler.sample(shape, generator=gen)
        total += centre_sgd_step(model, batch.words, batch.time, batch.pair_centre, batch.context, neg, lr,
                                 cfg.roughness_penalty)
        nb += B
        done = batch.progress


def _prefetch(batches, stop, depth: int = 16):
    """Iterate ``batches`` in a background thread (numpy and torch release the GIL), ``depth`` ahead.

    The producer gives up when the ``stop`` event is set (the consumers failed).
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    end = object()

    def produce():
        try:
            for b in batches:
                while not stop.is_set():
                    try:
                        q.put(b, timeout=0.1)
                        break
                    except queue.Full:
                        pass
                if stop.is_set():
                    return
        except BaseException as e:  # handed to the consumers
            q.put(e)
        q.put(end)

    threading.Thread(target=produce, daemon=True).start()
    while (b := q.get()) is not end:
        if isinstance(b, BaseException):
            raise b
        yield b


def _train_batches_threaded(model, batches, sampler, gens, cfg, epoch) -> tuple[float, int]:
    """Hogwild: ``len(gens)`` threads (one torch thread each) share the model and a prefetched batch stream.

    Like word2vec's threads, concurrent updates of the same rows are not
    synchronised (an update may occasionally be lost), so results vary from
    run to run.
    """
    import threading

    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    lock, stop = threading.Lock(), threading.Event()
    stream = _prefetch(batches, stop)
    out: list = [None] * len(gens)

    def work(w):
        try:
            out[w] = _train_batches(model, stream, sampler, gens[w], cfg, epoch, lock)
        except BaseException as e:
            stop.set()
            out[w] = e

    try:
        threads = [threading.Thread(target=work, args=(w,)) for w in range(len(gens))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop.set()
        torch.set_num_threads(prev)
    for r in out:
        if isinstance(r, BaseException):
            raise r
    return sum(t for t, _ in out), sum(n for _, n in out)


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

    Minibatch SGD (:func:`centre_sgd_step`) with word2vec's learning rate,
    decayed linearly from ``lr`` to ``1e-4 lr`` with the fraction of the
    training tokens processed.  Batches come from
    :func:`~qpnlp.models.skipgram.iter_centre_batches` (subsampling, dynamic
    windows, shuffled documents and centre tokens, about ``batch_size`` pairs
    each); negatives are drawn on ``config.device``: ``negatives`` per pair
    (word2vec), or, with ``shared_negatives=True``, one sample of
    ``negatives`` words shared by all pairs of the batch.  Because the thesis
    loss takes the *mean* over a pair's negatives, both are unbiased
    estimates of the same expected negative term; sharing turns B x k dot
    products into one (N, D) x (D, k) matrix product over the N centre
    tokens.

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
        Called after each epoch (e.g. to checkpoint); its time is not counted.

    Returns
    -------
    TrainStats
        ``tokens_per_s`` counts corpus tokens times epochs over the training
        wall time (pair generation, negatives and updates included).
    """
    cfg = config or TrainConfig()
    if cfg.roughness_penalty > 0 and model.family not in SINUSOIDAL_FAMILIES:
        raise ValueError(f"roughness_penalty needs a sinusoidal family (II, III, IV); got {model.family!r}")
    dev = torch.device(cfg.device)
    model.to(dev)
    rng = np.random.default_rng(cfg.seed)
    tgen = torch.Generator(device=dev).manual_seed(cfg.seed)
    keep = keep_probabilities(counts, cfg.sample)
    sampler = NegativeSampler(counts, 0.75, device=dev)
    stats = TrainStats()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.epochs * int(tokens.shape[0]), unit="tok", unit_scale=True, desc=f"word2fun {model.family}")
    seconds = 0.0
    workers = max(1, int(cfg.workers))
    gens = [tgen] + [torch.Generator(device=dev).manual_seed(cfg.seed + 7919 * w) for w in range(1, workers)]
    for epoch in range(cfg.epochs):
        t0 = _time.perf_counter()
        batches = iter_centre_batches(
            tokens, doc_ids, doc_times, keep_prob=keep, window=cfg.window, batch_size=cfg.batch_size,
            rng=rng, chunk_tokens=cfg.chunk_tokens, device=dev,
        )
        if workers == 1:
            total, nb = _train_batches(model, batches, sampler, tgen, cfg, epoch)
        else:
            total, nb = _train_batches_threaded(model, batches, sampler, gens, cfg, epoch)
        seconds += _time.perf_counter() - t0
        stats.pairs += nb
        stats.tokens += int(tokens.shape[0])
        stats.epoch_loss.append(total / max(nb, 1))
        stats.seconds = seconds
        if bar is not None:
            bar.update(int(tokens.shape[0]))
            bar.set_postfix(loss=f"{stats.epoch_loss[-1]:.4f}")
        if on_epoch is not None:
            on_epoch(epoch, stats)
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
