"""Word2Fun's time functions: the time scale, the frequency ladders and the families of thesis Table 4.1.

A functional core on plain tensors (the module :class:`~qpnlp.word2fun.model.Word2Fun`
gathers the rows of its tables and calls these functions).

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
the training span extrapolate (the ``sliced`` family holds its first or last
slice there instead; the queries of
:class:`~qpnlp.word2fun.keyed_vectors.KeyedVectors` warn there).  Far from
the span :math:`\\tau` and the angles :math:`\\Omega\\tau` grow: float32 rounds
them to about :math:`2^{-24} |\\Omega\\tau|` rad, so a float32 model's vectors
differ from float64's by about that times :math:`|R|` (1e-7 on the span with
``S = 60``, 1e-4 at 40 spans away, 1e-2 at 4000: measured); the slopes of
``linear`` likewise.  Non-finite times and times beyond :data:`MAX_ABS_TIME`
raise ``ValueError`` while validation is on
(:meth:`~qpnlp.word2fun.model.Word2Fun.normalised_times`).

The loss of thesis Sec. 4.2.2 (:func:`word2fun_loss`), with :math:`f = f(u, t)`
and the compass vectors :math:`h` of the context word and the negatives:

.. math::
    L = -\\log\\sigma(f\\, h(v)^T)
        - \\frac{1}{|\\hat V|} \\sum_{\\hat v \\in \\hat V} \\log\\sigma(-f\\, h(\\hat v)^T)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

__all__ = [
    "FAMILIES",
    "MAX_ABS_TIME",
    "SINUSOIDAL_FAMILIES",
    "TimeScale",
    "fixed_frequencies",
    "harmonic_frequencies",
    "linear_function",
    "logistic_step",
    "step_sigmoid",
    "time2fun_function",
    "sinusoidal_function",
    "word2fun_loss",
]

#: Largest absolute raw time a :class:`TimeScale` accepts (Unix seconds are about 2e9; years 2e3).
MAX_ABS_TIME = 1e12

#: The function families of Word2Fun (``family=``).
FAMILIES = ("static", "sliced", "linear", "time2fun", "II", "III", "IV")
#: The sinusoidal families of thesis Table 4.1 (amplitudes R and frequencies Omega; even dimension).
SINUSOIDAL_FAMILIES = ("II", "III", "IV")


@dataclass(frozen=True)
class TimeScale:
    """Affine map of raw times to normalised time, :math:`\\tau = S (t - t_0)/(t_1 - t_0)`.

    Parameters
    ----------
    start, end : float
        The span :math:`[t_0, t_1]` of the raw times (years, days, seconds): finite, ``end > start``, within
        :data:`MAX_ABS_TIME` (ValueError otherwise).
    scale : float, default 60.0
        The normalised span :math:`S` (positive, finite): :math:`\\tau` runs over :math:`[0, S]`.

    Examples
    --------
    >>> TimeScale(1900, 2000, 60.0).normalise(torch.tensor([1900.0, 1950.0, 2000.0])).tolist()
    [0.0, 30.0, 60.0]
    """

    start: float
    end: float
    scale: float = 60.0

    def __post_init__(self):
        if not (math.isfinite(self.start) and math.isfinite(self.end)):
            raise ValueError(f"the time span must be finite; got [{self.start}, {self.end}]")
        if not self.end > self.start:
            raise ValueError(f"time span must have end > start; got [{self.start}, {self.end}]")
        if max(abs(self.start), abs(self.end)) > MAX_ABS_TIME:
            raise ValueError(f"times must lie within +-{MAX_ABS_TIME:g} (years, days or Unix seconds); got the span "
                             f"[{self.start:g}, {self.end:g}]: rescale them (e.g. Unix milliseconds or nanoseconds "
                             f"to seconds)")
        if not math.isfinite(self.scale) or self.scale <= 0:
            raise ValueError(f"the time scale must be positive and finite; got {self.scale}")

    def check_resolution(self, dtype: torch.dtype = torch.float32, steps: int = 1000) -> None:
        """Raise ``ValueError`` if raw times in ``dtype`` resolve the span into fewer than ``steps`` steps.

        Raw times are cast to the model's dtype before they are normalised;
        float32 has 24 bits, so Unix seconds (about 1.7e9) are rounded to
        128 s, fine for a span of years but not of hours.

        >>> TimeScale(1.7e9, 1.7e9 + 3600).check_resolution()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: ...subtract an origin...
        """
        spacing = float(torch.finfo(dtype).eps) * max(abs(self.start), abs(self.end))
        if spacing * steps > self.end - self.start:
            raise ValueError(f"{dtype} rounds times near {max(abs(self.start), abs(self.end)):g} to steps of "
                             f"{spacing:.3g}, too coarse for the span [{self.start:g}, {self.end:g}]: subtract an "
                             f"origin from the times (e.g. t - {self.start:g}) or use larger units")

    def normalise(self, t: torch.Tensor) -> torch.Tensor:
        return (t - self.start) / (self.end - self.start) * self.scale

    def denormalise(self, tau: torch.Tensor) -> torch.Tensor:
        return tau * ((self.end - self.start) / self.scale) + self.start


def fixed_frequencies(dim: int, base: float = 10000.0, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Family II frequencies :math:`\\Omega_j = base^{-j/(D/2)}`, ``j = 0..D/2-1``, shape (D/2,), computed in
    ``dtype`` (float64 for a double model: float32 ones cast to float64 are off by about 1e-8).

    Parameters
    ----------
    dim : int
        The dimension ``D``, even (ValueError otherwise).
    base : float, default 10000.0
        The base of the geometric ladder (the Transformer's positional encoding's).
    dtype : torch.dtype, default torch.float32
        The dtype computed in and returned.

    Examples
    --------
    >>> fixed_frequencies(4).tolist()
    [1.0, 0.009999999776482582]
    >>> fixed_frequencies(4, dtype=torch.float64).tolist()
    [1.0, 0.01]
    """
    if dim % 2:
        raise ValueError(f"sinusoidal families need an even dimension; got {dim}")
    h = dim // 2
    return base ** (-torch.arange(h, dtype=dtype) / h)


def harmonic_frequencies(dim: int, scale: float, max_periods: float | None = None, *,
                         dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Harmonic ladder :math:`\\Omega_j = \\pi (1 + j \\bmod L) / (2S)`, ``j = 0..D/2-1``, shape (D/2,), in ``dtype``.

    On :math:`\\tau \\in [0, S]` coordinate ``j`` covers ``(1 + j mod L)/4``
    periods: the slowest is a quarter-period ramp, the fastest completes
    ``L/4`` periods (the trigonometric-polynomial basis of thesis Corollary 2
    on the training span).  ``L = 4 * max_periods`` levels, repeated over the
    ``D/2`` coordinates; by default ``L = D/2`` (no repetition, the fastest
    period is ``8S/D``).  An initialisation for the trainable frequencies of
    families III and IV; a smaller ``max_periods`` keeps every coordinate
    smooth on the scale of the changes to be measured.

    Parameters
    ----------
    dim : int
        The dimension ``D``, even (ValueError otherwise).
    scale : float
        The normalised span ``S`` of the model's :class:`TimeScale`.
    max_periods : float or None, default None
        The periods the fastest level completes over the span, ``L / 4`` (at least one level); None: ``L = D/2``.
    dtype : torch.dtype, default torch.float32
        The dtype computed in and returned.

    Examples
    --------
    >>> (harmonic_frequencies(4, 1.0) / math.pi).tolist()
    [0.5, 1.0]
    >>> (harmonic_frequencies(8, 1.0, max_periods=0.5) / math.pi).tolist()
    [0.5, 1.0, 0.5, 1.0]
    """
    if dim % 2:
        raise ValueError(f"sinusoidal families need an even dimension; got {dim}")
    h = dim // 2
    levels = h if max_periods is None else max(1, int(round(4 * max_periods)))
    j = torch.arange(h, dtype=dtype)
    return math.pi * (1.0 + torch.remainder(j, levels)) / (2.0 * scale)


def linear_function(b: torch.Tensor, k: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """:math:`f = b + k\\,\\tau`; ``b, k`` (..., D), ``tau`` (...,) -> (..., D).

    Parameters
    ----------
    b : torch.Tensor
        The base vectors ``(..., D)``.
    k : torch.Tensor
        The slopes ``(..., D)``.
    tau : torch.Tensor
        Normalised times ``(...,)``.
    """
    return b + k * tau.unsqueeze(-1)


def logistic_step(
    amplitude: torch.Tensor, centre: torch.Tensor, log_rate: torch.Tensor, s: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The centred logistic step of a word, :math:`A_u (\\sigma(k_u (s - c_u)) - \\tfrac12)`, and its sigmoid.

    ``s`` is the time as a fraction of the span (:math:`s = \\tau / S`, 0 at
    the start, 1 at the end), :math:`c_u` the centre of the transition in the
    same units and :math:`k_u = e^{\\ell_u}` its rate (a 10-90% rise over
    :math:`4.39 / k_u` of the span).  Every coordinate of :math:`A_u` switches
    at the same time: the S-shaped (Piotrowski) curve of one change of usage,
    which a sum of sinusoids with one frequency per coordinate can only
    approximate with a lag and ringing.  The step goes from :math:`-A_u/2` to
    :math:`+A_u/2` around :math:`B_u`, so :math:`B_u` is the midpoint of the
    two states wherever the switch lies (with :math:`A_u \\sigma` instead,
    :math:`B_u` would have to be the state *before* the switch, the minority
    state of an early switch, and SGD, which first moves :math:`B_u` to the
    majority state, misses early switches).

    Parameters
    ----------
    amplitude : torch.Tensor
        (..., D): :math:`A_u`, the jump of each coordinate.
    centre : torch.Tensor
        (..., 1): :math:`c_u`, the time of the transition as a fraction of the span.
    log_rate : torch.Tensor
        (..., 1): :math:`\\ell_u = \\log k_u`.
    s : torch.Tensor
        (...,): the time as a fraction of the span, :math:`\\tau / S`.

    Returns
    -------
    (term, sig) : (..., D) and (..., 1)

    >>> a = torch.ones(1, 2); c = torch.tensor([[0.5]]); l = torch.tensor([[math.log(4.0)]])
    >>> term, sig = logistic_step(a, c, l, torch.tensor([0.5]))
    >>> term.tolist(), sig.tolist()
    ([[0.0, 0.0]], [[0.5]])
    """
    sig = step_sigmoid(centre, log_rate, s)
    return amplitude * (sig - 0.5), sig


def step_sigmoid(centre: torch.Tensor, log_rate: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """:math:`\\sigma(k_u (s - c_u))`, :math:`k_u = e^{\\ell_u}`, of :func:`logistic_step`, shape (..., 1).

    Parameters
    ----------
    centre, log_rate, s : torch.Tensor
        :math:`c_u` (..., 1), :math:`\\ell_u` (..., 1) and :math:`s` (...,), as in :func:`logistic_step`.
    """
    return torch.sigmoid(torch.exp(log_rate) * (s.unsqueeze(-1) - centre))


def time2fun_function(b: torch.Tensor, omega: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """Time2Fun :math:`f = B + \\sin(\\Omega\\tau)`; ``b`` (..., D), ``omega`` (D,) shared, ``tau`` (...,).

    Parameters
    ----------
    b : torch.Tensor
        The base vectors :math:`B`, ``(..., D)``.
    omega : torch.Tensor
        The shared frequencies :math:`\\Omega`, ``(D,)``.
    tau : torch.Tensor
        Normalised times ``(...,)``.
    """
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


def word2fun_loss(f: torch.Tensor, h_pos: torch.Tensor, h_neg: torch.Tensor, reduction: str = "mean",
                  negative_weight: float = 1.0) -> torch.Tensor:
    """Word2Fun's loss :math:`-\\log\\sigma(f h_+^T) - \\frac{c}{k} \\sum_i \\log\\sigma(-f h_i^T)`.

    :math:`c = 1` is the thesis loss (the mean over the negatives).

    Parameters
    ----------
    f : (B, D) time-specific vectors :math:`f(u, t)`
    h_pos : (B, D) compass vectors of the observed context words
    h_neg : (B, k, D) compass vectors of each pair's negatives, or (N, D) negatives shared by the batch
    reduction : {"mean", "sum", "none"}
    negative_weight : float, default 1.0
        :math:`c`, the weight of the negative term (the loss that
        :class:`~qpnlp.word2fun.config.TrainConfig`'s ``negative_weight`` trains).

    Examples
    --------
    >>> z = torch.zeros(1, 2)
    >>> round(word2fun_loss(z, z, torch.zeros(1, 3, 2)).item(), 4)  # 2 log 2
    1.3863
    """
    pos = (f * h_pos).sum(-1)
    if h_neg.dim() == 2:  # negatives shared by the whole batch: one (B, D) x (D, N) product
        neg = f @ h_neg.T
    else:  # elementwise product + sum: memory-bound, much faster than a bmm of (k, D) x (D, 1) blocks
        neg = (h_neg * f.unsqueeze(-2)).sum(-1)
    loss = -(F.logsigmoid(pos) + negative_weight * F.logsigmoid(-neg).mean(-1))
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
