r"""Layer normalisation of the real and imaginary parts separately (Wang et al., ICLR 2020, appendix B).

.. math::

    \operatorname{LN}(z) = \operatorname{LN}_\Re(\Re z) + i\,\operatorname{LN}_\Im(\Im z),

each :math:`\operatorname{LN}` with its own affine map. The paper normalises
the parts separately with batch normalisation; layer normalisation is used
here so that padding in the batch cannot influence any output.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from qpnlp._module_precision import ComplexPrecisionMixin

from ._checks import check_int, check_real
from .linear import _check_dtype, _check_input

__all__ = ["PartLayerNorm"]


class PartLayerNorm(ComplexPrecisionMixin, nn.Module):
    r"""Layer normalisation of the real and imaginary parts separately, each with its own affine map.

    For a real dtype, an ordinary ``nn.LayerNorm``. Inputs follow
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
        if self.norm_im is None:
            return self.norm_re(x)
        return torch.complex(self.norm_re(x.real), self.norm_im(x.imag))
