"""Small utilities on modules."""

from __future__ import annotations

from torch import nn

__all__ = ["real_parameter_count"]


def real_parameter_count(module: nn.Module) -> int:
    """Number of real numbers in ``module.parameters()`` (a complex entry counts as 2).

    For the ``"expm"``/``"cayley"`` transitions of :class:`~qpnlp.nn.unitary.StateTransition`
    this counts the stored (n, n) complex parameter, of which only :math:`n^2`
    real degrees of freedom are used (the skew-Hermitian part).

    Examples
    --------
    >>> real_parameter_count(nn.Linear(3, 2))
    8
    """
    return sum(p.numel() * (2 if p.is_complex() else 1) for p in module.parameters())
