r"""Complex non-linearities and complex-to-real gates of the gated complex RNN.

All definitions follow Wolter & Yao, *Gated Complex Recurrent Neural Networks*
(poster, Bonn University; the full paper is "Complex Gated Recurrent Neural
Networks", NeurIPS 2018), equations (1), (2), (8) and (9):

.. math::

    f_\text{Hirose}(z) &= \tanh\!\left(\frac{|z|}{m^2}\right) \frac{z}{|z|}
        \qquad \text{(eq. 1, bounded)} \\
    f_\text{modReLU}(z) &= \operatorname{ReLU}(|z| + b) \frac{z}{|z|}
        \qquad \text{(eq. 2, unbounded)} \\
    f_{g,\text{sum}}(z) &= \sigma\big(\alpha \Re(z) + (1 - \alpha) \Im(z)\big),
        \quad \alpha \in [0, 1] \qquad \text{(eq. 8)} \\
    f_{g,\text{prod}}(z) &= \sigma(\Re(z))\, \sigma(\Im(z)) \qquad \text{(eq. 9)}

The poster writes the phase factor as :math:`e^{-i\theta_z}` and then as
:math:`z/|z| = e^{+i\theta_z}`; the two differ by a conjugation. We use
:math:`z/|z|` (phase preserving), which is the form used by Arjovsky et al.
(2016) for modReLU and by the authors' reference implementation.

The point :math:`z = 0`, where :math:`z/|z|` is undefined, is handled
explicitly so that values and gradients stay finite:

* Hirose extends continuously, :math:`f(z) \approx z/m^2` near 0; a Taylor
  branch :math:`\tanh(x)/x \approx 1 - x^2/3` is used for tiny :math:`|z|`,
  so the function is smooth (holomorphic to first order) at 0.
* modReLU is discontinuous at 0 when :math:`b > 0`; we define
  :math:`f(0) = 0` and the gradient there is 0 (finite; the unit restarts
  as soon as :math:`z` moves away from 0).
  Where :math:`|z| + b \le 0` the output and the gradient are exactly 0
  (a "dead" unit, like a real ReLU).

Shapes: every function is element-wise, ``(...,) -> (...,)``; parameters
(``b``, ``m``) broadcast against the last dimension.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._linalg import modulus, modulus_checked, none_subnormal, unit_phases

from ._checks import check_int, check_real

__all__ = [
    "COMPLEX_ACTIVATIONS",
    "GATES",
    "hirose",
    "modrelu",
    "gate_sum",
    "gate_prod",
    "Hirose",
    "ModReLU",
    "SumGate",
    "ProdGate",
    "make_activation",
    "make_gate",
]


#: Names accepted by :func:`make_activation` (eq. 2 and eq. 1).
COMPLEX_ACTIVATIONS = ("modrelu", "hirose")
#: Names accepted by :func:`make_gate` (eq. 8 and eq. 9).
GATES = ("sum", "prod")


def _check_complex(z: Tensor, name: str = "z") -> None:
    if not isinstance(z, Tensor):
        raise TypeError(f"{name} must be a complex tensor (complex64 or complex128); got {type(z).__name__}")
    if not z.is_complex():
        raise TypeError(f"{name} must be a complex tensor (complex64 or complex128); got dtype {z.dtype}")


def hirose(z: Tensor, m: float | Tensor = 1.0) -> Tensor:
    r"""Hirose non-linearity (poster eq. 1), bounded in modulus by 1.

    .. math:: f(z) = \tanh\!\left(\frac{|z|}{m^2}\right) \frac{z}{|z|},
              \qquad f(0) = 0.

    Parameters
    ----------
    z : Tensor, complex, shape (...,)
    m : float or real Tensor broadcastable to ``z``
        Scale; the modulus saturates for :math:`|z| \gg m^2`. A number must be finite and non-zero (ValueError);
        a tensor is not checked (that would synchronise with its device at every call).

    Returns
    -------
    Tensor, same shape and dtype as ``z``.

    Examples
    --------
    >>> z = torch.tensor([3 + 4j, 0j], dtype=torch.complex128)
    >>> out = hirose(z, m=1.0)
    >>> torch.allclose(out[0], torch.tanh(torch.tensor(5.0, dtype=torch.float64)) * z[0] / 5)
    True
    >>> out[1].item()
    0j
    """
    _check_complex(z)
    if not isinstance(m, Tensor):               # a fixed scale; a learnable one is a Parameter (not checked: no sync)
        _check_scale(m)
    elif m.device != z.device:                  # never copied to z's device silently (a 0-dim m may be a CPU scalar)
        V.check_same_device(("z", z), ("Hirose scale m", m))
    r = modulus(z)
    m2 = torch.as_tensor(m, dtype=r.dtype, device=r.device) ** 2
    x = r / m2
    # Below this x, tanh(x)/x = 1 - x^2/3 + O(x^4) is exact to machine precision.
    small = x < torch.finfo(r.dtype).eps ** 0.25
    x_safe = torch.where(small, torch.ones_like(x), x)
    ratio = torch.where(small, 1.0 - x * x / 3.0, torch.tanh(x_safe) / x_safe)  # tanh(x)/x
    return z * (ratio / m2)


def modrelu(z: Tensor, b: float | Tensor = 0.0, *, scale_first: bool = False) -> Tensor:
    r"""modReLU non-linearity (poster eq. 2; Arjovsky et al. 2016), unbounded.

    .. math:: f(z) = \operatorname{ReLU}(|z| + b) \frac{z}{|z|}, \qquad f(0) = 0.

    The phase of ``z`` is kept and the modulus is shifted by the (real) bias
    ``b`` and clipped at 0. Where :math:`|z| + b \le 0` the output and its
    gradient are 0, also for a subnormal :math:`|z|` (below ``finfo.tiny``); a live unit there has a
    non-finite gradient (of size :math:`b/|z|`, which overflows; at :math:`b = 0` too, though it is 1 there).

    Parameters
    ----------
    z : Tensor, complex, shape (..., h)
        Real as well with ``scale_first=True`` (then :math:`z/|z| = \operatorname{sign} z`).
    b : float or real Tensor broadcastable to ``z`` (typically shape ``(h,)``)
        A number must be finite (ValueError for NaN or inf); a tensor's values are not checked (no device
        synchronisation), its dtype and shape are: a real one whose broadcast with ``z`` is ``z``'s shape (a
        complex bias is a TypeError, a shape such as ``(h, 1)`` that would enlarge the output a ValueError).
    scale_first : bool
        The order of the rounding. Default: the phase factor :math:`z/|z|`
        first, then its product with :math:`\operatorname{ReLU}(|z| + b)`;
        dividing ``z`` (not the amplitude) by :math:`|z|` keeps the phase
        factor bounded, so a subnormal :math:`|z|` cannot overflow to inf.
        ``True``: the real scale :math:`\operatorname{ReLU}(|z| + b)/|z|`
        first, then ``z`` times it, which is how the uRNN cell
        (:class:`~qpnlp.nn.recurrent.URNNCell`) has always computed it; kept
        so that its results are reproduced to the last bit. Same function,
        same value at 0, results equal up to rounding. Where :math:`|z|` is
        subnormal, both take the phase first and divide it by its own modulus
        as well (the subnormal :math:`|z|` holds few bits; the scale overflowed).

    Returns
    -------
    Tensor, same shape and dtype as ``z``.

    Examples
    --------
    >>> z = torch.tensor([3 + 4j, 0.3 + 0.4j], dtype=torch.complex128)
    >>> modrelu(z, b=-1.0)  # |z| = 5 -> 4, |z| = 0.5 -> 0
    tensor([2.4000+3.2000j, 0.0000+0.0000j], dtype=torch.complex128)
    >>> modrelu(torch.tensor([-2.0, 0.0, 3.0]), b=-1.0, scale_first=True)
    tensor([-1.,  0.,  2.])
    """
    _check_bias(b, z)
    if scale_first:
        V.check_tensor("z", z)
        return _modrelu_scale_first(z, *modulus_checked(z), b)
    _check_complex(z)
    return _modrelu_phase_first(z, *modulus_checked(z), b)


def _modrelu_phase_first(z: Tensor, r: Tensor, ordinary: bool | None, b: float | Tensor) -> Tensor:
    """``relu(r + b) * (z / r)`` for complex ``z`` and its modulus ``r`` (``(...)``), 0 at z = 0; ``ordinary`` is
    :func:`~qpnlp.hilbert._linalg.none_subnormal` of r where :func:`modulus_checked` read it (None: read here).

    Real divisions, since torch's complex division returns NaN for subnormal divisors; where r is subnormal the
    quotient is divided by its own modulus as well (``unit_phases``: r holds few bits there). A dead unit (amplitude
    0) divides by 1: its output is the same 0, and its gradient 0, where 0 times the divisor's gradient, of size
    1/r^2, was NaN for a subnormal r.
    """
    b = torch.as_tensor(b, dtype=r.dtype, device=r.device)
    positive = r > 0
    amplitude = torch.relu(r + b)
    live = positive & (amplitude > 0)
    r_safe = torch.where(live, r, torch.ones_like(r))
    phase = torch.complex(z.real / r_safe, z.imag / r_safe) * positive
    if none_subnormal(r, z) if ordinary is None else ordinary:      # the CPU without a subnormal r: one test
        return amplitude * phase
    return amplitude * unit_phases(phase, live & (r < torch.finfo(r.dtype).tiny))


def _modrelu_scale_first(z: Tensor, r: Tensor, ordinary: bool | None, b: float | Tensor) -> Tensor:
    """``z * (relu(r + b) / r)`` for real or complex ``z`` and its modulus ``r`` (``(...)``), 0 at z = 0; ``ordinary``
    as in :func:`_modrelu_phase_first`.

    Where r is subnormal and the unit live, the quotient overflowed (inf, and NaN at a zero part): there the phase
    comes first (:func:`_modrelu_phase_first`; ``sign(z)`` for real ``z``), elsewhere the same bits.
    """
    positive = r > 0                        # the mask makes the gradient at z = 0 zero; other values: same bits
    scaled = z * (torch.relu(r + b) / torch.where(positive, r, torch.ones_like(r)) * positive)
    if none_subnormal(r, z) if ordinary is None else ordinary:
        return scaled
    first = _modrelu_phase_first(z, r, False, b) if z.is_complex() else torch.sign(z) * torch.relu(r + b)
    return torch.where(positive & (r < torch.finfo(r.dtype).tiny), first, scaled)


def gate_sum(z: Tensor, alpha: float | Tensor = 0.5) -> Tensor:
    r"""Sum gate (poster eq. 8), :math:`\mathbb{C} \to [0, 1]`.

    .. math:: f_g(z) = \sigma\big(\alpha \Re(z) + (1 - \alpha) \Im(z)\big).

    Parameters
    ----------
    z : Tensor, complex, shape (...,)
    alpha : float or real Tensor in [0, 1], broadcastable to ``z``
        A number outside [0, 1] or NaN is a ValueError (as for :class:`SumGate`); a tensor is not checked.

    Returns
    -------
    Tensor, real (float32 for complex64, float64 for complex128), shape of ``z``.

    Examples
    --------
    >>> gate_sum(torch.tensor([2 - 2j]), alpha=0.5)
    tensor([0.5000])
    """
    _check_complex(z)
    if not isinstance(alpha, Tensor):           # SumGate(learnable=True) passes sigmoid(a), in (0, 1) already
        _check_alpha(alpha)
    elif alpha.device != z.device:
        V.check_same_device(("z", z), ("alpha", alpha))
    return torch.sigmoid(alpha * z.real + (1.0 - alpha) * z.imag)


def gate_prod(z: Tensor) -> Tensor:
    r"""Product gate (poster eq. 9), :math:`\mathbb{C} \to [0, 1]`.

    .. math:: f_g(z) = \sigma(\Re(z))\, \sigma(\Im(z)).

    Parameters
    ----------
    z : Tensor, complex, shape (...,)

    Returns
    -------
    Tensor, real, shape of ``z``.

    Examples
    --------
    >>> gate_prod(torch.tensor([0j]))
    tensor([0.2500])
    """
    _check_complex(z)
    return torch.sigmoid(z.real) * torch.sigmoid(z.imag)


def _check_bias(b: float | Tensor, z: Tensor) -> None:
    """A fixed bias: a finite number; a tensor (a learnable bias): real, of a shape that broadcasts to ``z``'s.

    Static checks only (no value of a tensor is read). A bias of shape (h, 1) against ``z`` (h,) broadcast to an
    (h, h) output; a complex one was cast to real with only a warning, or failed inside ``relu``.
    """
    if not isinstance(b, Tensor):               # a fixed bias; a learnable one is a Parameter (values not checked)
        check_real("modReLU bias b", b)
        return
    V.check_tensor("z", z)
    if b.is_complex() or b.dtype == torch.bool:
        raise TypeError(f"modReLU bias b must be a real tensor; got {b.dtype}")
    if not _broadcasts_to(b.shape, z.shape):
        raise ValueError(f"modReLU bias b must broadcast to the shape of z {tuple(z.shape)} (typically shape "
                         f"({z.shape[-1] if z.dim() else 1},), one per feature); got shape {tuple(b.shape)}")
    if b.device != z.device:                    # never copied to z's device silently (a 0-dim b may be a CPU scalar)
        V.check_same_device(("z", z), ("modReLU bias b", b))


def _broadcasts_to(shape: torch.Size, target: torch.Size) -> bool:
    """Whether ``shape`` broadcasts to ``target`` unchanged: no more dims, each trailing one 1 or equal.

    Plain Python on the shapes (about 1 us): ``torch.broadcast_shapes`` costs some 40 us, once per step of a
    recurrent cell.
    """
    tail = target[len(target) - len(shape):] if shape else target[:0]
    return len(shape) <= len(target) and (shape == tail or all(s in (1, t) for s, t in zip(shape, tail)))


def _check_scale(m: float) -> float:
    """A fixed Hirose scale: a finite non-zero number (ValueError, TypeError for a non-number)."""
    m = check_real("Hirose scale m", m, "a finite non-zero number")
    if m == 0:
        raise ValueError("Hirose scale m must be non-zero; got 0")
    return m


def _check_alpha(alpha: float) -> float:
    """A fixed sum-gate weight: a number in [0, 1] (ValueError for NaN or outside, TypeError for a non-number)."""
    alpha = check_real("alpha", alpha, "a number in [0, 1]")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1]; got {alpha}")
    return alpha


class Hirose(ComplexPrecisionMixin, nn.Module):
    r"""Module form of :func:`hirose` with a fixed (or optionally learnable) scale ``m``.

    Parameters
    ----------
    m : float
        Scale, default 1.
    learnable : bool
        If True, ``m`` is a real scalar parameter.
    """

    def __init__(self, m: float = 1.0, learnable: bool = False):
        super().__init__()
        m = _check_scale(m)
        if learnable:
            self.m = nn.Parameter(torch.tensor(float(m)))
        else:
            self.register_buffer("m", torch.tensor(float(m)))

    def forward(self, z: Tensor) -> Tensor:
        return hirose(z, self.m)

    def extra_repr(self) -> str:
        return f"m={float(self.m.detach()):g}, learnable={isinstance(self.m, nn.Parameter)}"


class ModReLU(ComplexPrecisionMixin, nn.Module):
    r"""Module form of :func:`modrelu` with a learnable real bias per feature.

    Parameters
    ----------
    num_features : int
        Size ``h`` of the last dimension; the bias has shape ``(h,)``.
    init_bias : float
        Initial value of every bias entry (default 0, where modReLU starts as
        the identity).
    dtype : torch.dtype, optional
        Real dtype of the bias (float32 for complex64 inputs, float64 for complex128); None: the default dtype.
    device : torch.device or str, optional
        Where the bias lives (default: the default device).
    scale_first : bool
        Rounding order of :func:`modrelu` (``True``: the uRNN cell's; accepts real inputs).

    Shapes: ``(..., h) -> (..., h)``.

    Examples
    --------
    >>> act = ModReLU(2, init_bias=-1.0, dtype=torch.float64)
    >>> act(torch.tensor([3 + 4j, 0.5j], dtype=torch.complex128)).detach()
    tensor([2.4000+3.2000j, 0.0000+0.0000j], dtype=torch.complex128)
    """

    def __init__(self, num_features: int, init_bias: float = 0.0, *, dtype=None, device=None,
                 scale_first: bool = False):
        super().__init__()
        num_features = check_int("num_features", num_features)
        if num_features < 1:
            raise ValueError(f"num_features must be >= 1; got {num_features}")
        init_bias = check_real("init_bias", init_bias)
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"dtype must be a real floating dtype (of the bias: float32 for complex64 inputs, "
                            f"float64 for complex128); got {dtype}")
        self.bias = nn.Parameter(torch.full((num_features,), float(init_bias), dtype=dtype, device=device))
        self.scale_first = scale_first

    def forward(self, z: Tensor) -> Tensor:
        V.check_tensor("z", z)
        if self.bias.dim() != 1:                # only a bias assigned after construction can be another shape
            raise ValueError(f"ModReLU bias must have shape (num_features,); got shape {tuple(self.bias.shape)}")
        if z.shape[-1:] != self.bias.shape:
            raise ValueError(f"z must have last dimension {self.bias.shape[0]} (num_features); "
                             f"got shape {tuple(z.shape)}")
        return modrelu(z, self.bias, scale_first=self.scale_first)

    def extra_repr(self) -> str:
        return f"num_features={self.bias.shape[0]}" + (", scale_first=True" if self.scale_first else "")


class SumGate(ComplexPrecisionMixin, nn.Module):
    r"""Module form of :func:`gate_sum`.

    Parameters
    ----------
    alpha : float in [0, 1]
        Mixing weight of the real part (default 0.5).
    learnable : bool
        If True, :math:`\alpha = \sigma(a)` with a learnable scalar ``a``,
        so it stays in (0, 1) by construction.
    dtype : real torch.dtype, optional
        dtype of the learnable ``a`` (float64 for complex128 models); None: the default dtype.
    device : torch.device or str, optional
        Where the learnable ``a`` lives (default: the default device). Both unused unless ``learnable``.
    """

    def __init__(self, alpha: float = 0.5, learnable: bool = False, *, dtype=None, device=None):
        super().__init__()
        alpha = _check_alpha(alpha)
        self.learnable = learnable
        if learnable:
            a = min(max(alpha, 1e-4), 1 - 1e-4)
            self.logit_alpha = nn.Parameter(torch.logit(torch.tensor(a, dtype=dtype, device=device)))
        else:
            self.alpha_value = float(alpha)

    @property
    def alpha(self) -> Tensor | float:
        return torch.sigmoid(self.logit_alpha) if self.learnable else self.alpha_value

    def forward(self, z: Tensor) -> Tensor:
        alpha = self.alpha
        if isinstance(alpha, Tensor):
            alpha = alpha.to(z.real.dtype)
        return gate_sum(z, alpha)

    def extra_repr(self) -> str:
        alpha = self.alpha.detach() if self.learnable else self.alpha    # float() of a tensor in the graph warns
        return f"alpha={float(alpha):g}, learnable={self.learnable}"


class ProdGate(ComplexPrecisionMixin, nn.Module):
    r"""Module form of :func:`gate_prod`."""

    def forward(self, z: Tensor) -> Tensor:
        return gate_prod(z)


def make_activation(name: str, num_features: int, *, dtype=None, device=None, **kwargs) -> nn.Module:
    """Build ``"modrelu"`` or ``"hirose"`` by name (``dtype`` is the real dtype of the parameters).

    Parameters
    ----------
    name : {"modrelu", "hirose"}
        :class:`ModReLU` or :class:`Hirose`; another name raises ValueError.
    num_features : int
        Size ``h`` of the last input dimension: the bias ``(h,)`` of ``"modrelu"`` (unused by ``"hirose"``).
    dtype : real torch.dtype, optional
        dtype of the parameters (float64 for complex128 models); None: the default dtype.
    device : torch.device or str, optional
        Where the parameters live (default: the default device).
    **kwargs
        Passed to the module: ``init_bias``, ``scale_first`` (``"modrelu"``); ``m``, ``learnable`` (``"hirose"``).
    """
    if name == "modrelu":
        return ModReLU(num_features, dtype=dtype, device=device, **kwargs)
    if name == "hirose":
        return Hirose(**kwargs).to(device=device, dtype=dtype)
    raise ValueError(f"unknown activation {name!r}; expected one of {COMPLEX_ACTIVATIONS}")


def make_gate(name: str, *, dtype=None, device=None, **kwargs) -> nn.Module:
    r"""Build ``"sum"`` (poster eq. 8) or ``"prod"`` (eq. 9) gate by name (``dtype``: real dtype of ``alpha``).

    Parameters
    ----------
    name : {"sum", "prod"}
        :class:`SumGate` or :class:`ProdGate`; another name raises ValueError.
    dtype : real torch.dtype, optional
        dtype of a learnable :math:`\alpha` (float64 for complex128 models); None: the default dtype.
    device : torch.device or str, optional
        Where a learnable :math:`\alpha` lives (default: the default device).
    **kwargs
        Passed to :class:`SumGate` (``alpha``, ``learnable``); ``"prod"`` has no parameters and ignores them.
    """
    if name == "sum":
        return SumGate(**kwargs, dtype=dtype, device=device)
    if name == "prod":
        return ProdGate()
    raise ValueError(f"unknown gate {name!r}; expected one of {GATES}")
