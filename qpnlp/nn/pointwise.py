r"""Parameter-free element-wise modules: complex dropout and the complex-to-real readout.

* :class:`ComplexDropout` -- one real mask for both parts, :math:`z \mapsto m \odot z / (1 - p)`;
* :class:`Readout` -- :math:`|z|`, :math:`[\Re z, \Im z]` or :math:`|z|^2`.

Both are module forms of functions of :mod:`qpnlp.nn.functional`.
"""

from __future__ import annotations

from torch import Tensor, nn

from qpnlp._module_precision import ComplexPrecisionMixin

from ._checks import check_dropout
from .functional import READOUTS, complex_dropout, readout

__all__ = ["ComplexDropout", "Readout"]


class ComplexDropout(ComplexPrecisionMixin, nn.Module):
    """Module form of :func:`~qpnlp.nn.functional.complex_dropout` (one real mask for both parts).

    A dropped unit is zero in both parts; the phase of the kept units is
    unchanged. Identity in ``eval()`` mode and for ``p = 0``.

    Parameters
    ----------
    p : float in [0, 1)

    Shapes: ``(...,) -> (...,)``.

    Examples
    --------
    >>> drop = ComplexDropout(0.5).eval()
    >>> z = torch.ones(3, dtype=torch.complex64)
    >>> drop(z) is z
    True
    """

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        self.p = check_dropout("p", p)

    def forward(self, z: Tensor) -> Tensor:
        return complex_dropout(z, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Readout(ComplexPrecisionMixin, nn.Module):
    """Module form of :func:`~qpnlp.nn.functional.readout`.

    Parameters
    ----------
    kind : {"modulus", "re_im", "squared_modulus"}

    Shapes: ``(..., D) -> (..., D)`` (``(..., 2D)`` for ``"re_im"``); a real input passes unchanged.

    Examples
    --------
    >>> Readout("squared_modulus")(torch.tensor([3 + 4j]))
    tensor([25.])
    """

    def __init__(self, kind: str = "modulus") -> None:
        super().__init__()
        if kind not in READOUTS:
            raise ValueError(f"unknown readout {kind!r}; choose from {READOUTS}")
        self.kind = kind

    def forward(self, z: Tensor) -> Tensor:
        return readout(z, self.kind)

    def extra_repr(self) -> str:
        return f"{self.kind!r}"
