r"""Layer normalisation of the real and imaginary parts separately (Wang et al., ICLR 2020, appendix B).

.. math::

    \operatorname{LN}(z) = \operatorname{LN}_\Re(\Re z) + i\,\operatorname{LN}_\Im(\Im z),

each :math:`\operatorname{LN}` with its own affine map. The paper normalises
the parts separately with batch normalisation; layer normalisation is used
here so that padding in the batch cannot influence any output.

Each part is normalised as ``scale_free_layer_norm`` computes it: a row of very large entries is divided by a
power of two first, so that its variance cannot overflow (``nn.LayerNorm`` gave NaN for float32 rows near 1e30).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp.hilbert._linalg import none_above
from qpnlp.hilbert._validation import real_dtype_of

from ._checks import check_int, check_real
from .linear import _check_dtype, _check_input

__all__ = ["PartLayerNorm"]


class PartLayerNorm(ComplexPrecisionMixin, nn.Module):
    r"""Layer normalisation of the real and imaginary parts separately, each with its own affine map.

    For a real dtype, one part. Each part is ``nn.LayerNorm``'s normalisation, kept finite for very large entries
    (``scale_free_layer_norm``). Inputs follow
    :func:`~qpnlp.nn.functional.as_complex_input` with ``upcast=False``, as
    in :class:`~qpnlp.nn.linear.ComplexLinear`.

    Parameters
    ----------
    dim : int
    eps : float
        Added to the variance, :math:`(x - \mu) / \sqrt{\sigma^2 + \epsilon}`: a finite number >= 0 (a negative
        one or NaN would give NaN outputs; ValueError).
    dtype : torch.dtype
        complex64/complex128, or float32/float64 for the real layer.

    Shapes: ``(..., dim) -> (..., dim)``.

    Examples
    --------
    >>> norm = PartLayerNorm(4)
    >>> norm(torch.randn(2, 4, dtype=torch.complex64)).real.mean(-1).abs().max() < 1e-6
    tensor(True)
    """

    def __init__(self, dim: int, *, eps: float = 1e-5, dtype: torch.dtype = torch.complex64) -> None:
        super().__init__()
        self.dtype = _check_dtype(dtype)
        dim = check_int("dim", dim)
        if dim < 1:
            raise ValueError(f"dim must be >= 1; got {dim}")
        eps = check_real("eps", eps, "a finite number >= 0")
        if eps < 0:
            raise ValueError(f"eps must be a finite number >= 0; got {eps!r}")
        real = dtype.to_real()
        self.norm_re = nn.LayerNorm(dim, eps=eps, dtype=real)
        self.norm_im = nn.LayerNorm(dim, eps=eps, dtype=real) if dtype.is_complex else None

    def forward(self, x: Tensor) -> Tensor:
        x = _check_input(x, self.dtype, self.norm_re.normalized_shape[0])   # the layers' input rule, as ComplexLinear
        # one aminmax over both parts (their strided views would each be copied for it)
        ordinary = none_above(torch.view_as_real(x) if x.is_complex() else x, 2.0 ** _shrink_bound(x.dtype))
        if self.norm_im is None:
            return scale_free_layer_norm(x, self.norm_re, ordinary=ordinary)
        return torch.complex(scale_free_layer_norm(x.real, self.norm_re, ordinary=ordinary),
                             scale_free_layer_norm(x.imag, self.norm_im, ordinary=ordinary))


def _shrink_bound(dtype: torch.dtype) -> int:
    """:math:`b` of ``scale_free_layer_norm``: half the exponent range of (the real part of) ``dtype``, less 20."""
    return int(math.log2(torch.finfo(real_dtype_of(dtype)).max)) // 2 - 20       # not to_real: dynamo breaks there


def scale_free_layer_norm(x: Tensor, norm: nn.LayerNorm, *, ordinary: bool | None = None) -> Tensor:
    r"""``norm(x)`` for real ``x`` ``(..., dim)``, finite for every finite ``x``: torch's layer normalisation
    :math:`(x - \mu) / \sqrt{\sigma^2 + \epsilon}` (with ``norm``'s affine map) of :math:`x / 2^k`, the power of
    two :math:`2^k` bringing a row's largest modulus below :math:`2^{b+1}` (:math:`k = 0` for rows already there).

    ``nn.LayerNorm`` squares :math:`x - \mu`: its variance overflows from :math:`|x| \approx 10^{19}` in float32
    (NaN outputs for rows near 1e30) and :math:`10^{154}` in float64. :math:`b` is half the dtype's exponent range
    less 20 (float32: :math:`2^{44} \approx 2 \cdot 10^{13}`, float64: :math:`2^{492}`), so the squares of a shrunk
    row, and their sum over up to :math:`2^{30}` entries, stay finite. Rows below :math:`2^b`, every ordinary input,
    are not touched: values and gradients are torch's, bit for bit.

    How :math:`\epsilon` enters: a power of two divides exactly, and layer normalisation is scale invariant except
    for :math:`\epsilon`, :math:`\operatorname{LN}_\epsilon(x / 2^k) = \operatorname{LN}_{4^k \epsilon}(x)`, so a
    shrunk row is normalised with a larger :math:`\epsilon`. That moves the output by about
    :math:`\epsilon / (2 \sigma^2_{x/2^k})` relative, and a shrunk row that is not constant has an entry at least one
    unit in the last place of its largest (:math:`\ge 2^b`) away from the others:
    :math:`\sigma^2_{x/2^k} \ge 4^{b - 24} / \text{dim}`, so :math:`\epsilon / \sigma^2 \le 2 \cdot 10^{-18}\,
    \text{dim}` in float32 for the default :math:`\epsilon = 10^{-5}`, far below its round-off (float64: nothing); a
    constant row gives 0 either way. :math:`k` is held fixed (detached) in the backward pass: the gradient is that
    of :math:`\operatorname{LN}_{4^k \epsilon}(x)`, equal to that round-off. NaN and infinite entries give NaN
    rows, as before.

    ``ordinary``: whether every entry of ``x`` is known to be below :math:`2^b` (the caller checked, as
    :class:`PartLayerNorm` does once for both parts); None checks here, where reading it is free (one ``aminmax`` on
    the CPU, ``none_above``). Then ``x`` goes to torch as it is: the per-row scales (six ops over ``x``, four calls
    per complex-order Transformer step) only for an input with a large entry, and under torch.compile, vmap or on
    a GPU.
    """
    bound = _shrink_bound(x.dtype)
    if none_above(x, 2.0 ** bound) if ordinary is None else ordinary:      # every entry below 2^b: torch's, as is
        return nn.functional.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
    exponent = torch.log2(x.detach().abs().amax(-1, keepdim=True)).floor()           # -inf for a zero row
    shrink = torch.exp2(bound - exponent.clamp_min(bound))                                     # 2^-k, 1 below 2^b
    return nn.functional.layer_norm(x * shrink, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
