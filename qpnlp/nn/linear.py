r"""Dense and convolutional complex layers (Wang et al., ICLR 2020, appendix B; Trabelsi et al., 2017).

* :class:`ComplexLinear` -- paper eq. 10/11 without :math:`\sigma`:
  :math:`z = W x + b`, :math:`W = A + iB`, :math:`b = c + id`, i.e.
  :math:`\Re z = Ax - By + c`, :math:`\Im z = Bx + Ay + d`. With
  ``share_parts=True`` the paper's parameter-saving option :math:`A = B`,
  :math:`c = d` (so :math:`W = (1 + i)A`).
* :class:`ComplexConv1d` -- narrow convolution with complex kernels.
* :class:`ComplexFeedForward` -- the position-wise block :math:`W_2 f(W_1 z + b_1) + b_2`.

Every layer takes a ``dtype`` that is either complex (complex64/complex128)
or real (float32/float64: the ordinary real layer, for the real baselines).
Inputs follow :func:`~qpnlp.nn.functional.as_complex_input` with
``upcast=False``: the layer's dtype, or a real tensor of the same precision
(zero imaginary part).

Cost: a complex dense layer runs through torch's complex GEMM, which costs
about a real layer of twice the width; writing it as one real block product
on the [Re, Im] pairs (eqs. 10-11) was measured no faster. A complex
convolution is one real convolution of the interleaved [Re, Im] channels with
the block kernel (``_block_weight``): its channels-last result makes the
activation and pooling after it cheap (``benchmarks/results/SPEED.md``).

Initialisation: every weight entry is uniform in
:math:`(-1/\sqrt{\text{fan-in}}, 1/\sqrt{\text{fan-in}})`, each part scaled by
:math:`1/\sqrt 2` for complex weights (so :math:`E|w|^2` matches the real
layer); biases start at zero.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp.hilbert import _validation as V

from ._checks import check_int
from .pointwise import ComplexDropout
from .functional import SPLIT_ACTIVATIONS, as_complex_input, split_activation

__all__ = ["LAYER_DTYPES", "ComplexLinear", "ComplexConv1d", "ComplexFeedForward"]

#: dtypes a complex-or-real layer can be built in.
LAYER_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def _check_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype not in LAYER_DTYPES:
        raise TypeError(f"dtype must be one of {LAYER_DTYPES}; got {dtype}")
    return dtype


def _check_input(x: Tensor, dtype: torch.dtype, last: int, name: str = "x") -> Tensor:
    """Check that ``x`` is a tensor with the last dim ``last``, then apply the input rule without upcasting."""
    V.check_tensor(name, x)
    if x.shape[-1:] != (last,):
        raise ValueError(f"{name} must have last dimension {last}; got shape {tuple(x.shape)}")
    return as_complex_input(x, dtype, name, upcast=False)


def _init_weight(shape, fan_in: int, dtype: torch.dtype, generator=None) -> Tensor:
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) per entry; each part scaled by 1/sqrt(2) for complex."""
    real = dtype.to_real()
    bound = 1 / math.sqrt(max(fan_in, 1))
    draw = lambda: (torch.rand(shape, dtype=real, generator=generator) * 2 - 1) * bound  # noqa: E731
    if dtype.is_complex:
        return torch.complex(draw(), draw()) / math.sqrt(2)
    return draw()


def _shared_parts(weight: Tensor, bias: Tensor | None, dtype: torch.dtype) -> tuple[Tensor, Tensor | None]:
    r""":math:`W = (1 + i) A`, :math:`b = (1 + i) c` from the real ``A`` and ``c`` of ``share_parts=True``."""
    one_i = torch.tensor(1 + 1j, dtype=dtype, device=weight.device)
    return weight * one_i, None if bias is None else bias * one_i


class ComplexLinear(ComplexPrecisionMixin, nn.Module):
    r"""Dense layer :math:`z = W x + b` (paper eq. 10 before :math:`\sigma`).

    Parameters
    ----------
    in_features, out_features : int
    bias : bool
    share_parts : bool
        The paper's option :math:`\Re W = \Im W` (:math:`A = B`, :math:`c = d`):
        one real matrix :math:`A`, :math:`W = (1 + i) A`. Complex dtypes only.
    dtype : torch.dtype
        complex64/complex128 (complex layer) or float32/float64 (ordinary ``nn.Linear``).
    generator : torch.Generator, optional
        Source of the initial weights.

    Shapes: ``(..., in_features) -> (..., out_features)``.

    Examples
    --------
    >>> lin = ComplexLinear(3, 2, dtype=torch.complex128)
    >>> lin(torch.randn(4, 3, dtype=torch.complex128)).shape
    torch.Size([4, 2])
    """

    def __init__(self, in_features: int, out_features: int, *, bias: bool = True, share_parts: bool = False,
                 dtype: torch.dtype = torch.complex64, generator: torch.Generator | None = None) -> None:
        super().__init__()
        _check_dtype(dtype)
        in_features, out_features = check_int("in_features", in_features), check_int("out_features", out_features)
        if in_features < 1 or out_features < 1:
            raise ValueError(f"features must be >= 1; got {in_features}, {out_features}")
        if share_parts and not dtype.is_complex:
            raise ValueError("share_parts=True needs a complex dtype")
        self.in_features, self.out_features, self.share_parts, self.dtype = in_features, out_features, \
            share_parts, dtype
        pdtype = dtype.to_real() if share_parts else dtype
        self.weight = nn.Parameter(_init_weight((out_features, in_features), in_features, pdtype, generator))
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=pdtype)) if bias else None

    def effective_weight(self) -> tuple[Tensor, Tensor | None]:
        """The complex (or real) weight (out, in) and bias (out,) actually applied."""
        if not self.share_parts:
            return self.weight, self.bias
        return _shared_parts(self.weight, self.bias, self.dtype)

    def forward(self, x: Tensor) -> Tensor:
        x = _check_input(x, self.dtype, self.in_features)
        w, b = self.effective_weight()
        return F.linear(x, w, b)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, share_parts={self.share_parts}, dtype={self.dtype}"


def _block_weight(w: Tensor) -> Tensor:
    r"""The real weight ``(2 O, 2 C, ...)`` of a complex one ``(O, C, ...)`` on interleaved [Re, Im] channels.

    Output channel :math:`2o` (real part) reads :math:`[\Re W_{oc}, -\Im W_{oc}]` from input channels
    :math:`2c, 2c + 1`; output channel :math:`2o + 1` (imaginary part) reads :math:`[\Im W_{oc}, \Re W_{oc}]`
    (eq. 11 for every tap).
    """
    re, im = w.real, w.imag
    return torch.stack([torch.stack([re, -im], 2), torch.stack([im, re], 2)], 1).reshape(
        2 * w.shape[0], 2 * w.shape[1], *w.shape[2:])


def _block_conv1d(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """Complex ``conv1d`` over channels-last ``x`` (..., L, C) as one real convolution of the [Re, Im] channels.

    Same values as ``F.conv1d(x.mT, w, b).mT`` to rounding (tested), but one real kernel call (4x the real
    multiply-adds, where torch's complex convolution makes three real ones) and a contiguous channels-last
    result, on which the per-part activation and pooling that follow in a CNN run several times faster
    (the CNN's features 1.47x faster forward and backward; ``benchmarks/results/SPEED.md``).
    """
    parts = torch.view_as_real(x.resolve_conj()).flatten(-2)                  # (..., L, 2C), [Re, Im] interleaved
    y = F.conv1d(parts.transpose(-1, -2), _block_weight(w), torch.view_as_real(b).flatten())  # (..., 2O, L')
    return torch.view_as_complex(y.transpose(-1, -2).contiguous().unflatten(-1, (w.shape[0], 2)))


class ComplexConv1d(ComplexPrecisionMixin, nn.Module):
    r"""Narrow 1-d convolution over a sequence with complex kernels (Trabelsi et al., 2017; paper app. B).

    :math:`y_t = \sum_{s=0}^{k-1} W_s x_{t+s} + b`, :math:`t = 0..L-k`.

    Shapes: ``(B, L, in_channels) -> (B, L - k + 1, out_channels)`` (channels last, like the rest of the package);
    an unbatched ``(L, in_channels)`` gives ``(L - k + 1, out_channels)``; other ranks are a ValueError.

    Parameters
    ----------
    in_channels, out_channels, kernel_size : int
    share_parts : bool
        :math:`\Re W = \Im W` as in :class:`ComplexLinear`.
    dtype : torch.dtype
    generator : torch.Generator, optional

    Examples
    --------
    >>> conv = ComplexConv1d(3, 2, kernel_size=2)
    >>> conv(torch.randn(4, 5, 3, dtype=torch.complex64)).shape
    torch.Size([4, 4, 2])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, share_parts: bool = False,
                 dtype: torch.dtype = torch.complex64, generator: torch.Generator | None = None) -> None:
        super().__init__()
        _check_dtype(dtype)
        in_channels, out_channels, kernel_size = (check_int(n, v) for n, v in (
            ("in_channels", in_channels), ("out_channels", out_channels), ("kernel_size", kernel_size)))
        if min(in_channels, out_channels, kernel_size) < 1:
            raise ValueError(f"channels and kernel_size must be >= 1; got {in_channels}, {out_channels}, {kernel_size}")
        if share_parts and not dtype.is_complex:
            raise ValueError("share_parts=True needs a complex dtype")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.share_parts, self.dtype = share_parts, dtype
        pdtype = dtype.to_real() if share_parts else dtype
        self.weight = nn.Parameter(_init_weight((out_channels, in_channels, kernel_size), in_channels * kernel_size,
                                                pdtype, generator))
        self.bias = nn.Parameter(torch.zeros(out_channels, dtype=pdtype))

    def forward(self, x: Tensor) -> Tensor:
        x = _check_input(x, self.dtype, self.in_channels)
        if x.ndim not in (2, 3):                   # conv1d's own error named (B, 2C, L), the transposed layout
            raise ValueError(f"x must have shape (B, L, {self.in_channels}) or (L, {self.in_channels}); got "
                             f"{tuple(x.shape)}")
        if x.shape[-2] < self.kernel_size:
            raise ValueError(f"sequence length {x.shape[-2]} is shorter than the kernel ({self.kernel_size})")
        w, b = self.weight, self.bias
        if self.share_parts:
            w, b = _shared_parts(w, b, self.dtype)
        if not self.dtype.is_complex:
            return F.conv1d(x.transpose(-1, -2), w, b).transpose(-1, -2)
        return _block_conv1d(x, w, b)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, dtype={self.dtype}"


class ComplexFeedForward(ComplexPrecisionMixin, nn.Module):
    r"""Position-wise feed-forward block :math:`W_2\, f(W_1 z + b_1) + b_2` with the per-part activation :math:`f`.

    Parameters
    ----------
    dim, hidden : int
    activation : {"relu", "tanh", "sigmoid", "identity"}
        :func:`~qpnlp.nn.functional.split_activation` between the two layers.
    dropout : float
        :class:`~qpnlp.nn.pointwise.ComplexDropout` after the activation.
    share_parts : bool
    dtype : torch.dtype
    generator : torch.Generator, optional

    Shapes: ``(..., dim) -> (..., dim)``.
    """

    def __init__(self, dim: int, hidden: int, *, activation: str = "relu", dropout: float = 0.0,
                 share_parts: bool = False, dtype: torch.dtype = torch.complex64,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        dim, hidden = check_int("dim", dim), check_int("hidden", hidden)
        if activation not in SPLIT_ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {sorted(SPLIT_ACTIVATIONS)}")
        self.activation = activation
        self.lin1 = ComplexLinear(dim, hidden, dtype=dtype, share_parts=share_parts, generator=generator)
        self.lin2 = ComplexLinear(hidden, dim, dtype=dtype, share_parts=share_parts, generator=generator)
        self.dropout = ComplexDropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.lin2(self.dropout(split_activation(self.lin1(x), self.activation)))

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"
