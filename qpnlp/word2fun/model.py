"""The Word2Fun module: dynamic context vectors :math:`f(u, t)` and a static compass :math:`h(v)`.

Each word ``u`` has a time-dependent context vector :math:`f(u, t) \\in
\\mathbb{R}^D` (one of the families of :mod:`qpnlp.word2fun.functions`); each
word ``v`` has a static target ("compass") vector :math:`h(v)`.

**Initialisation.**  Static parts :math:`B_u` (and the slices) as word2vec's
input vectors, :math:`U(-0.5/D, 0.5/D)`, drawn in the model's precision (a
``precision="double"`` model draws float64 values, so one seed gives a float64
start that is not the float32 one; ``model.double()`` of a float32 model keeps
its float32 start); amplitudes :math:`R_u`, slopes
:math:`K_u` and phases zero (every word starts static and acquires time
dependence only when the data ask for it); per-word frequencies start at the
fixed frequencies of family II (``frequency_init="fixed"``) or at the
harmonic ladder :math:`\\Omega_j = \\pi (j+1) / (2S)` (``"harmonic"``, every
coordinate then varies within the span, which is what lets III/IV follow
changes; the default of :func:`~qpnlp.word2fun.train.fit`, the CLI and the
benchmarks); the compass starts at zero as word2vec's output vectors (or is
set from a trained static model and frozen, :meth:`Word2Fun.set_compass`).
With ``logistic`` the step :math:`A_u (\\sigma(k_u(s - c_u)) - 1/2)` starts
with :math:`A_u = 0`, :math:`c_u = 1/2`, :math:`k_u = 10` (:class:`Word2FunConfig`).
``max_periods`` caps the harmonic ladder
(:func:`~qpnlp.word2fun.functions.harmonic_frequencies`): the levels go from
a quarter period up to ``max_periods`` periods over the span and repeat over
the coordinates.  The full ladder reaches ``D/8`` periods (8 years on a
100-year span with ``D = 100``); such fast coordinates fit year-to-year
sampling noise, whose amount depends on how mixed a word's contexts are, and
that noise leaks into change measures.  A cap of 2.5 periods (40 years)
removes that leak but smooths abrupt switches over about 20 years; the
roughness penalty (:func:`~qpnlp.word2fun.sgd.roughness`) lets a faster
ladder follow abrupt switches while damping the noise.

**Saving.**  :class:`Word2Fun` is a :class:`~qpnlp.models.base.Model`
registered as ``"word2fun"`` (task ``"temporal"``): ``save_pretrained`` /
``from_pretrained`` write and read the format of every qpnlp model, its
config is :class:`Word2FunConfig`.  Usually saved together with its
vocabulary through :class:`~qpnlp.word2fun.keyed_vectors.KeyedVectors`.

Example
-------
>>> import torch
>>> m = Word2Fun(Word2FunConfig(vocab_size=10, dim=8, family="II", span_start=1900, span_end=2000))
>>> m.vectors(torch.tensor([1, 2]), torch.tensor([1900.0, 1950.0])).shape
torch.Size([2, 8])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch
from torch import nn

from qpnlp import _trig as trig
from qpnlp._checks import is_real, time_values
from qpnlp.hilbert import get_validation
from qpnlp.models.base import Model, ModelConfig, register_model
from qpnlp.word2fun.functions import (
    FAMILIES,
    MAX_ABS_TIME,
    SINUSOIDAL_FAMILIES,
    TimeScale,
    fixed_frequencies,
    harmonic_frequencies,
    linear_function,
    logistic_step,
    sinusoidal_function,
    step_sigmoid,
    time2fun_function,
    word2fun_loss,
)

__all__ = ["Word2FunConfig", "Word2Fun", "STEP_RATE_INIT", "STEP_RATE_MIN", "STEP_RATE_MAX"]

FREQUENCY_INITS = ("fixed", "harmonic")
#: Initial rate :math:`k_u` of the logistic step: a 10-90% rise over 0.44 of the span (selected on the drift benchmark).
STEP_RATE_INIT = 10.0
#: Smallest rate of the logistic step (the SGD step projects :math:`k_u` onto [STEP_RATE_MIN, STEP_RATE_MAX]).
STEP_RATE_MIN = STEP_RATE_INIT
#: Largest rate of the logistic step: a 10-90% rise over 2.2% of the span (two years of a century).
STEP_RATE_MAX = 200.0
#: Most entries of one (T, W, D) grid :meth:`Word2Fun.indicators` holds at once (16 MB in float32): the words of a
#: larger query go in chunks, so its memory does not grow with the number of words.
INDICATOR_GRID_VALUES = 1 << 22
#: Most entries of one (t, W, D) block of times that :meth:`Word2Fun.grid` evaluates at once (4 MB in float32): the
#: intermediates of the families stay in cache; larger grids go in blocks of times (at least one time a block).
GRID_CHUNK_VALUES = 1 << 20


@dataclasses.dataclass
class Word2FunConfig(ModelConfig):
    """What :class:`Word2Fun` is built from (JSON-serialisable; strict ``from_dict``).

    Parameters
    ----------
    vocab_size : int
        ``V``, dense word ids ``0 .. V-1`` (a vocabulary without special tokens).
    dim : int
        ``D`` (even for the sinusoidal families).
    family : str, default "II"
        One of :data:`~qpnlp.word2fun.functions.FAMILIES`.
    span_start, span_end : float, default 0.0, 1.0
        The raw-time span :math:`[t_0, t_1]` mapped to :math:`[0, S]`
        (usually the corpus span; :class:`~qpnlp.word2fun.functions.TimeScale`).
    time_scale : float, default 60.0
        ``S``.
    n_slices : int, default 10
        Number of equal-width time slices of the ``sliced`` family.
    freeze_compass : bool, default False
        If True the compass :math:`h` is not trained (set it with
        :meth:`Word2Fun.set_compass`, e.g. from a static model, as in
        compass-aligned word2vec).
    frequency_init : {"fixed", "harmonic"}, default "fixed"
        Initial per-word frequencies of families III and IV (module docstring).
    max_periods : float, optional
        Cap of the harmonic ladder, in periods over the span; ``None`` for the
        full ladder.
    precision : {"single", "double"}, default "single"
        float32 or float64 parameters (``model.double()`` switches and records
        it); raw times are normalised in the same precision.
    logistic : bool, default False
        Add a centred logistic step to :math:`f(u, \\cdot)` (not for ``sliced``):
        :math:`f(u, \\tau) = f_{family}(u, \\tau) + A_u (\\sigma(k_u (\\tau/S - c_u)) - \\tfrac12)`
        with per-word :math:`A_u \\in \\mathbb{R}^D` (starts at 0), centre
        :math:`c_u \\in [0, 1]` (a fraction of the span; starts at 1/2) and
        rate :math:`k_u = e^{\\ell_u} \\in [10, 200]` (:data:`STEP_RATE_MIN`,
        :data:`STEP_RATE_MAX`; starts at 10, a rise over 0.44 of the span):
        one S-shaped change of usage that every coordinate follows at once
        (:func:`~qpnlp.word2fun.functions.logistic_step`); ``D + 2`` numbers
        per word.  :func:`~qpnlp.word2fun.train.fit` turns it on for families
        II-IV; False here, so checkpoints saved before the option load as they were.

    Examples
    --------
    >>> c = Word2FunConfig(vocab_size=5, dim=4, family="IV", span_start=1900, span_end=2000)
    >>> c.timescale
    TimeScale(start=1900.0, end=2000.0, scale=60.0)
    >>> Word2FunConfig.from_dict(c.to_dict()) == c
    True
    """

    vocab_size: int
    dim: int
    family: str = "II"
    span_start: float = 0.0
    span_end: float = 1.0
    time_scale: float = 60.0
    n_slices: int = 10
    freeze_compass: bool = False
    frequency_init: str = "fixed"
    max_periods: float | None = None
    precision: str = "single"
    logistic: bool = False

    def __post_init__(self) -> None:
        self.span_start, self.span_end, self.time_scale = (float(self.span_start), float(self.span_end),
                                                           float(self.time_scale))
        if self.max_periods is not None:
            self.max_periods = float(self.max_periods)
        self._require([
            (self.vocab_size >= 1, f"vocab_size must be >= 1; got {self.vocab_size}"),
            (self.dim >= 1, f"dim must be >= 1; got {self.dim}"),
            (self.family in FAMILIES, f"family must be one of {FAMILIES}; got {self.family!r}"),
            (self.family not in SINUSOIDAL_FAMILIES or self.dim % 2 == 0,
             f"family {self.family} needs an even dim; got {self.dim}"),
            (self.n_slices >= 1, f"n_slices must be >= 1; got {self.n_slices}"),
            (self.frequency_init in FREQUENCY_INITS,
             f"frequency_init must be 'fixed' or 'harmonic'; got {self.frequency_init!r}"),
            (self.time_scale > 0, f"time_scale must be positive; got {self.time_scale}"),
            (self.max_periods is None or self.max_periods > 0,
             f"max_periods must be positive or None; got {self.max_periods}"),
            (not (self.logistic and self.family == "sliced"),
             "the sliced family has no logistic step (its slices already step)"),
            (self.precision in ("single", "double"),
             f"precision must be 'single' (float32) or 'double' (float64); got {self.precision!r}"),
        ])
        self.timescale  # noqa: B018 -- checks span_end > span_start

    @property
    def timescale(self) -> TimeScale:
        """The :class:`~qpnlp.word2fun.functions.TimeScale` of ``span_start``, ``span_end``, ``time_scale``."""
        return TimeScale(self.span_start, self.span_end, self.time_scale)


@register_model("word2fun")
class Word2Fun(Model):
    """Dynamic context vectors :math:`f(u, t)` and a static compass :math:`h(v)`.

    Parameters
    ----------
    config : Word2FunConfig
    seed : int, default 0
        Seeds the initialisation of the static parts (a fresh CPU generator).
    generator : torch.Generator, optional
        Used instead of ``seed`` when given.

    Attributes
    ----------
    time_scale : TimeScale
        The normalisation of raw times (``config.timescale``).
    """

    config_class = Word2FunConfig
    task = "temporal"

    def __init__(self, config: Word2FunConfig, *, seed: int = 0, generator: torch.Generator | None = None):
        super().__init__(config)
        self.time_scale = config.timescale
        g = generator if generator is not None else torch.Generator().manual_seed(seed)
        # the tables are made in the model's dtype, so the constants below (frequencies, the step's initial rate)
        # are computed in it: float32 ones cast to float64 were off by about 1e-8
        real = torch.float64 if config.precision == "double" else torch.float32
        self._add_static_tables(config, g, real)
        omega = fixed_frequencies(config.dim, dtype=real) if config.dim % 2 == 0 else None
        self._add_family_tables(config, omega, real)
        if config.logistic:  # A_u (sigma(k_u (s - c_u)) - 1/2): zero amplitude, centre mid-span, a slow rate
            V = config.vocab_size
            self.step_amplitude = _table(V, config.dim, real)
            self.step_centre, self.step_rate = _table(V, 1, real), _table(V, 1, real)
            with torch.no_grad():
                self.step_centre.weight.fill_(0.5)
                self.step_rate.weight.fill_(math.log(STEP_RATE_INIT))

    def _add_static_tables(self, config: Word2FunConfig, g: torch.Generator, real: torch.dtype) -> None:
        """``base`` (:math:`B_u`, one row per word and slice, drawn from ``g``) and the ``compass`` (zero)."""
        V, D = config.vocab_size, config.dim
        self.base = _table(V * config.n_slices if config.family == "sliced" else V, D, real, generator=g)
        if config.family == "sliced":
            # every slice starts from the same vector so slices are comparable from the start
            with torch.no_grad():
                w0 = self.base.weight[:V].clone()
                self.base.weight.copy_(w0.repeat(config.n_slices, 1))
        self.compass = _table(V, D, real)
        self.compass.weight.requires_grad_(not config.freeze_compass)

    def _add_family_tables(self, config: Word2FunConfig, omega: torch.Tensor | None, real: torch.dtype) -> None:
        """The tables of the family's time dependence (zero, but the frequencies), ``omega`` the fixed frequencies
        (:func:`~qpnlp.word2fun.functions.fixed_frequencies`, None for an odd dimension)."""
        family, V, D, h = config.family, config.vocab_size, config.dim, config.dim // 2
        if family == "linear":
            self.slope = _table(V, D, real)
        if family == "time2fun":
            # shared frequencies, sin(Omega tau) starts at 0 for tau = 0
            full = torch.cat([omega, omega]) if omega is not None else torch.ones(D, dtype=real)
            self.omega = nn.Parameter(full.clone())
        if family in SINUSOIDAL_FAMILIES:
            self.amplitude = _table(V, D, real)
            self.register_buffer("omega_fixed", omega)
        if family in ("III", "IV"):
            self.omega1, self.omega2 = _table(V, h, real), _table(V, h, real)
            init = omega if config.frequency_init == "fixed" else harmonic_frequencies(D, self.time_scale.scale,
                                                                                      config.max_periods, dtype=real)
            with torch.no_grad():
                self.omega1.weight.copy_(init.expand(V, h))
                self.omega2.weight.copy_(init.expand(V, h))
        if family == "IV":
            self.theta1, self.theta2 = _table(V, h, real), _table(V, h, real)

    @classmethod
    def build(cls, config, *, vocabulary=None, pretrained=None, generator=None) -> Word2Fun:
        """A freshly initialised model (the model contract's constructor; no pretrained vectors)."""
        if pretrained is not None:
            raise ValueError("Word2Fun takes no pretrained vectors; set the compass with set_compass()")
        return cls(config, generator=generator)

    # ---- the config, read-only
    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    @property
    def dim(self) -> int:
        return self.config.dim

    @property
    def family(self) -> str:
        return self.config.family

    @property
    def n_slices(self) -> int:
        return self.config.n_slices

    @property
    def freeze_compass(self) -> bool:
        return self.config.freeze_compass

    @property
    def frequency_init(self) -> str:
        return self.config.frequency_init

    @property
    def max_periods(self) -> float | None:
        return self.config.max_periods

    @property
    def logistic(self) -> bool:
        return self.config.logistic

    def extra_repr(self) -> str:
        c = self.config
        return f"{c.vocab_size}, {c.dim}, family={c.family!r}, span=({c.span_start:g}, {c.span_end:g})"

    def set_compass(self, h: torch.Tensor, freeze: bool = True) -> None:
        """Copy ``h`` (V, D) into the compass; optionally freeze it (recorded in ``config.freeze_compass``)."""
        if tuple(h.shape) != (self.vocab_size, self.dim):
            raise ValueError(f"compass must have shape {(self.vocab_size, self.dim)}; got {tuple(h.shape)}")
        with torch.no_grad():
            self.compass.weight.copy_(h)
        self.config = dataclasses.replace(self.config, freeze_compass=bool(freeze))
        self.compass.weight.requires_grad_(not freeze)

    # ---- the function f(u, t)
    def slice_of(self, tau: torch.Tensor) -> torch.Tensor:
        """Slice index of normalised times for the ``sliced`` family, (...,) int64; a time outside the span takes
        the first or the last slice (no extrapolation: a slice is a constant). Clamped before the cast to int64: a
        float beyond its range (a span of 1e-6 and a time of 1e12, tau 6e19) cast to the smallest int64."""
        s = torch.floor(tau / self.time_scale.scale * self.n_slices).clamp_(0, self.n_slices - 1)
        return s.long().clamp_(0, self.n_slices - 1)                 # NaN (validation off): as before, slice 0

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
        if self.config.logistic:
            out["step_amplitude"] = (self.step_amplitude.weight, words)
            out["step_centre"] = (self.step_centre.weight, words)
            out["step_rate"] = (self.step_rate.weight, words)
        return out

    def function(self, rows: dict, tau: torch.Tensor) -> torch.Tensor:
        """:math:`f` from gathered rows ``{name: (..., n)}`` (see :meth:`tables`) at normalised ``tau`` (...,) -> (..., D).

        With ``config.logistic`` the family's function plus the logistic step
        :math:`A_u (\\sigma(k_u (\\tau / S - c_u)) - \\tfrac12)` (:meth:`step_term`).
        """
        f = self._family_function(rows, tau)
        if self.config.logistic:
            f = f + self.step_term(rows, tau)[0]
        return f

    def step_log_rate(self, rows: dict) -> torch.Tensor:
        """:math:`\\ell_u = \\log k_u` of gathered rows, shape (..., 1) (kept in ``[log STEP_RATE_MIN, log STEP_RATE_MAX]`` by the SGD step)."""
        return rows["step_rate"]

    def step_term(self, rows: dict, tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The logistic step :math:`A_u (\\sigma(k_u (s - c_u)) - \\tfrac12)`, :math:`s = \\tau / S`, and its sigmoid (:func:`~qpnlp.word2fun.functions.logistic_step`)."""
        s = tau / self.time_scale.scale
        return logistic_step(rows["step_amplitude"], rows["step_centre"], self.step_log_rate(rows), s)

    def _family_function(self, rows: dict, tau: torch.Tensor) -> torch.Tensor:
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
        """:math:`f` and its vector-Jacobian product (``_family_vjp``), the logistic step included.

        For the step :math:`A (\\sigma(z) - \\tfrac12)`, :math:`z = k (s - c)`, :math:`k = e^{\\ell}`,
        with :math:`\\gamma = g \\cdot A\\, \\sigma(z)(1 - \\sigma(z))`:
        :math:`\\partial_A = g\\, (\\sigma(z) - \\tfrac12)`, :math:`\\partial_c = -k \\gamma`,
        :math:`\\partial_\\ell = z \\gamma`.
        """
        f, vjp = self._family_vjp(rows, tau)
        if not self.config.logistic:
            return f, vjp
        s = tau / self.time_scale.scale
        sig = step_sigmoid(rows["step_centre"], self.step_log_rate(rows), s)
        k = torch.exp(self.step_log_rate(rows))
        s = s.unsqueeze(-1)
        A = rows["step_amplitude"]

        def vjp_step(g):
            out, shared = vjp(g)
            gam = (g * A).sum(-1, keepdim=True).mul_(sig * (1.0 - sig))
            out["step_amplitude"] = g * (sig - 0.5)
            out["step_centre"] = -k * gam
            out["step_rate"] = k * (s - rows["step_centre"]) * gam
            return out, shared

        return torch.addcmul(f, A, sig - 0.5), vjp_step  # f + A (sigma - 1/2)

    def _family_vjp(self, rows: dict, tau: torch.Tensor):
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
            return b + trig.sin(a), lambda g: ({"base": g}, {"omega": (g * trig.cos(a) * tt).sum(0)})
        r = rows["amplitude"]
        h = self.dim // 2
        if fam == "II":
            a = self.omega_fixed * tt
            s = torch.cat([trig.sin(a), trig.cos(a)], -1)
            return torch.addcmul(b, r, s), lambda g: ({"base": g, "amplitude": g * s}, {})
        a1 = torch.addcmul(rows["theta1"], rows["omega1"], tt) if fam == "IV" else rows["omega1"] * tt
        a2 = torch.addcmul(rows["theta2"], rows["omega2"], tt) if fam == "IV" else rows["omega2"] * tt
        sin1, cos2 = trig.sin(a1), trig.cos(a2)
        s = torch.cat([sin1, cos2], -1)

        def vjp(g):
            gr = g * r
            d1 = gr[:, :h] * trig.cos(a1)
            d2 = -gr[:, h:] * trig.sin(a2)
            out = {"base": g, "amplitude": g * s, "omega1": d1 * tt, "omega2": d2 * tt}
            if fam == "IV":
                out["theta1"], out["theta2"] = d1, d2
            return out, {}

        return torch.addcmul(b, r, s), vjp

    def vectors_normalised(self, words: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        """:math:`f(u, \\tau)` for word ids ``words`` (...,) at normalised times ``tau`` (...,) -> (..., D)."""
        rows = {k: w[i] for k, (w, i) in self.tables(words, tau).items()}
        return self.function(rows, tau)

    @property
    def dtype(self) -> torch.dtype:
        """The floating dtype of the parameters (times are normalised in it, never narrower)."""
        return self.compass.weight.dtype

    def normalised_times(self, times: torch.Tensor) -> torch.Tensor:
        r"""Raw times (...,) to normalised :math:`\tau` in the model's dtype (float64 times stay float64 in a float64 model).

        Raises ``ValueError`` for times that are not finite (NaN, inf) or lie
        beyond :data:`~qpnlp.word2fun.functions.MAX_ABS_TIME` (where float
        rounding leaves no meaningful vector), with the first offending
        value, when validation is on (:func:`qpnlp.hilbert.set_validation`).
        """
        times = torch.as_tensor(times)
        if get_validation() and times.numel():
            wide = times.double() if times.is_floating_point() else times
            bad = ~torch.isfinite(wide) | (wide.abs() > MAX_ABS_TIME)
            if bool(bad.any()):
                first = times[bad].reshape(-1)[0].item()
                raise ValueError(f"times must be finite and within +-{MAX_ABS_TIME:g} (the units of the training "
                                 f"span [{self.time_scale.start:g}, {self.time_scale.end:g}]); got {first} among "
                                 f"{tuple(times.shape)} times")
        return self.time_scale.normalise(times.to(self.dtype))

    def vectors(self, words: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """:math:`f(u, t)` at raw times ``times`` (...,) (e.g. years) -> (..., D), in the model's dtype."""
        return self.vectors_normalised(words, self.normalised_times(times))

    def forward(self, centre: torch.Tensor, context: torch.Tensor, negatives: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """Mean thesis loss of a batch: ``centre``, ``context`` (B,), ``negatives`` (B, k), raw ``times`` (B,)."""
        f = self.vectors(centre, times)
        return word2fun_loss(f, self.compass(context), self.compass(negatives))

    @torch.no_grad()
    def grid(self, words: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        r"""Vectors of many words at many raw times in one call: ``words`` (W,), raw ``times`` (T,) -> (T, W, D).

        :math:`f(u_w, \tau_t)` for every pair, equal bit for bit to :meth:`vectors` at the (T, W) pairs: each
        word's rows (:meth:`tables`) are gathered once, (W, n), and broadcast against the normalised times
        :math:`\tau` (T, 1) (the "sliced" family gathers its (T, W) slice rows, the grid itself).  The family's
        function goes in blocks of times of at most ``GRID_CHUNK_VALUES`` entries, so that the intermediates
        of a (t, W, D) block stay small however large the grid; the logistic step's sigmoid
        :math:`\sigma(k_u (\tau_t / S - c_u))` (T, W, 1) is taken in one piece, as :meth:`vectors` takes it
        (torch rounds the vectorised body and the tail of its sigmoid differently).
        """
        tau = self.normalised_times(times).unsqueeze(-1)                                   # (T, 1)
        T, W, D = tau.shape[0], words.shape[0], self.dim
        rows = {k: w[i] for k, (w, i) in self.tables(words, tau).items()}                  # (W, n); sliced (T, W, D)
        step = max(1, GRID_CHUNK_VALUES // max(W * D, 1))                                  # times per block
        if self.family == "sliced" or step >= T:
            return self.function(rows, tau).expand(T, W, D).contiguous()
        if self.config.logistic:
            sig = step_sigmoid(rows["step_centre"], self.step_log_rate(rows), tau / self.time_scale.scale)
        out = tau.new_empty(T, W, D)
        for start in range(0, T, step):
            f = self._family_function(rows, tau[start:start + step])
            if self.config.logistic:  # + A_u (sigma - 1/2), as logistic_step
                f = f + rows["step_amplitude"] * (sig[start:start + step] - 0.5)
            out[start:start + step] = f
        return out

    # ---- thesis Table 5.27 indicators
    @torch.no_grad()
    def indicators(self, words: torch.Tensor, span: tuple[float, float] | None = None, steps: int = 101, *,
                   p: float = 1.0, times: Sequence[float] | torch.Tensor | None = None) -> dict:
        """Parameter indicators of semantic change (thesis Table 5.27 and 5.28).

        Returns a dict of (W,) tensors:

        * ``amplitude_bias_ratio`` -- :math:`\\mathrm{AVG}|R_u| / \\mathrm{AVG}|B_u|`
          (for ``linear`` the slope plays the role of R; NaN where undefined);
        * ``mean_frequency`` -- :math:`\\mathrm{AVG}|\\Omega_u|` (families II-IV, time2fun);
        * ``mean_abs_derivative`` -- :math:`\\mathrm{mean}_t\\, D^{-1/p} \\lVert \\partial_t f(u, t)\\rVert_p`
          per raw time unit, by central differences, over ``steps`` points of the span (``span=(t, t)``: the
          derivative at ``t``) or at the given raw ``times``: the power mean of :math:`|\\partial_t f_d|` over the
          D coordinates (p = 1: the mean absolute derivative). Table 5.28's indicator, the mean over the decades
          ``times=(1810, 1820, ..., 2000)`` of :math:`\\lVert f'(u, t)\\rVert_p` for p = 1 or 2, is this one
          times the constant :math:`D^{1/p}` (the same ranking of words). With the logistic step on, its
          derivative counts too (the thesis' family III has none).
        """
        if isinstance(p, bool) or not (isinstance(p, (int, float)) and math.isfinite(p) and p > 0):
            raise ValueError(f"p must be a positive finite number; got {p!r}")
        b = self.base(words)  # the static part; slice 0 for the "sliced" family
        nan = torch.full((words.shape[0],), float("nan"), dtype=b.dtype, device=b.device)    # model's dtype
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
        width = e - a if e != a and times is None else self.time_scale.end - self.time_scale.start
        eps = width / (steps - 1) / 2 if steps > 1 else 1.0  # given times or one time: the model's spacing
        ts = torch.linspace(a, e, steps, dtype=torch.float64) if times is None else _indicator_times(times)
        shifted = [(ts + sign * eps).to(device=b.device, dtype=self.dtype) for sign in (1.0, -1.0)]
        chunk = max(1, INDICATOR_GRID_VALUES // (ts.numel() * self.dim))     # words per (T, chunk, D) grid
        deriv = torch.cat([self._mean_abs_derivative(words[i:i + chunk], shifted, eps, p)
                           for i in range(0, max(words.shape[0], 1), chunk)])
        return {"amplitude_bias_ratio": ratio, "mean_frequency": freq, "mean_abs_derivative": deriv}

    def _mean_abs_derivative(self, words: torch.Tensor, shifted: list[torch.Tensor], eps: float,
                             p: float) -> torch.Tensor:
        r""":math:`\mathrm{mean}_t\, D^{-1/p} \lVert \partial_t f(u, t)\rVert_p` of ``words`` (W,) -> (W,), by central
        differences :math:`(f(u, t + \epsilon) - f(u, t - \epsilon)) / 2\epsilon`, ``shifted`` the (T,) times t +- eps."""
        d = (self.grid(words, shifted[0]) - self.grid(words, shifted[1])) / (2 * eps)     # (T, W, D)
        return (d.abs().mean(-1) if p == 1 else d.abs().pow(p).mean(-1).pow(1 / p)).mean(0)


def _indicator_times(times) -> torch.Tensor:
    """``times`` of :meth:`Word2Fun.indicators` as a float64 (T,) tensor: one or more finite raw times (one number
    is one time), ``ValueError`` otherwise (complex times: ``TypeError``)."""
    one = is_real(times) or getattr(times, "ndim", None) == 0
    return torch.from_numpy(time_values([times] if one else times, "times", not_a_sequence=ValueError,
                                        not_numbers=ValueError, allow_empty=False))


def _table(rows: int, cols: int, dtype: torch.dtype, generator: torch.Generator | None = None) -> nn.Embedding:
    """A (rows, cols) table of ``dtype``: zero, or uniform in [-1/2, 1/2) / cols drawn from ``generator`` in ``dtype``
    (as torch.nn.init draws a float64 parameter: float32 draws cast to float64 had float32 resolution); ``_weight``
    skips nn.Embedding's default init, which would draw from the global RNG."""
    if generator is None:
        return nn.Embedding(rows, cols, _weight=torch.zeros(rows, cols, dtype=dtype))
    return nn.Embedding(rows, cols, _weight=(torch.rand(rows, cols, generator=generator, dtype=dtype) - 0.5) / cols)
