"""Small utilities on modules."""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["real_parameter_count", "seeded_linear"]


def seeded_linear(in_features: int, out_features: int, *, bias: bool = True, dtype: torch.dtype | None = None,
                  device=None, generator: torch.Generator | None = None) -> nn.Linear:
    r"""An ``nn.Linear`` with torch's default initialisation, drawn from ``generator``.

    Weight and bias uniform in :math:`(-1/\sqrt{\text{in}}, 1/\sqrt{\text{in}})`, as
    ``nn.Linear.reset_parameters`` gives them, drawn in that order from
    ``generator`` (on its device, then moved); the global random state is
    not touched. ``generator=None`` is a plain ``nn.Linear`` (global RNG).

    Parameters
    ----------
    in_features, out_features : int
        Input and output widths, as ``nn.Linear``'s.
    bias : bool
        Whether the layer has a bias (drawn after the weight).
    dtype : torch.dtype, optional
        dtype of the parameters; None: the default dtype.
    device : torch.device or str, optional
        Where the parameters live (default: the default device without ``generator``, the CPU with one).
    generator : torch.Generator, optional
        Source of the initial values; None: the global generator.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> a = seeded_linear(3, 2, generator=g); b = seeded_linear(3, 2, generator=torch.Generator().manual_seed(0))
    >>> torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
    True
    """
    if generator is None:
        return nn.Linear(in_features, out_features, bias=bias, dtype=dtype, device=device)
    layer = nn.utils.skip_init(nn.Linear, in_features, out_features, bias=bias, dtype=dtype,
                               device="cpu" if device is None else device)
    bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
    with torch.no_grad():
        for param in (layer.weight, layer.bias) if bias else (layer.weight,):
            draw = torch.rand(param.shape, dtype=param.dtype, device=generator.device, generator=generator)
            param.copy_((draw * 2 - 1) * bound)
    return layer


def real_parameter_count(module: nn.Module) -> int:
    """Number of real numbers in ``module.parameters()`` (a complex entry counts as 2).

    For the ``"expm"``/``"cayley"`` transitions of :class:`~qpnlp.nn.unitary.StateTransition`
    this counts the stored (n, n) complex parameter, of which only :math:`n^2`
    real degrees of freedom are used (the skew-Hermitian part).

    Parameters
    ----------
    module : torch.nn.Module
        Any module; its parameters (shared ones once, frozen ones included) are counted.

    Examples
    --------
    >>> real_parameter_count(nn.Linear(3, 2))
    8
    """
    return sum(p.numel() * (2 if p.is_complex() else 1) for p in module.parameters())
