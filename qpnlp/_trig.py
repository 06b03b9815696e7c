"""Cosine and sine of float32 CPU tensors at numpy's SIMD speed, for code that needs no autograd graph.

torch's CPU kernels for float32 ``cos`` and ``sin`` ran at about 1 ns an element on the project's machine (torch
2.13.0, AVX-512: about 14x a multiply), while numpy's own SIMD kernels for float32 (numpy >= 1.22, AVX-512F /
AVX2) take about 0.4 ns, with errors of the same size (under 1 ulp of 1 against a float64 reference:
``tests/test_trig.py``). The hot paths that evaluate them without autograd call these functions:

- the fused phase lookups of QPDN and CNM (:class:`qpnlp.nn.embedding._PolarLookup`),
- the complex-order embedding's forward (:class:`qpnlp.nn.position_functional._Polar`),
- Word2Fun's sinusoidal families and their hand-written gradients (:meth:`qpnlp.word2fun.model.Word2Fun.function`).

Everything else goes to torch unchanged: tensors on other devices, other dtypes (numpy's float64 kernels are
slower than torch's), tensors that need a gradient while autograd records, small tensors (under
:data:`NUMPY_MIN_NUMEL` elements, where the numpy round trip costs more than it saves), and code that
``torch.compile`` traces (a numpy call would break its graph; inductor generates its own loops). ``benchmarks/trig.py``
measures both against each other.

Written here, not taken from a library: torch has no vectorised float32 sine on this build and no ``sincos``;
numpy is already a dependency, and its ufuncs write into the tensors' own memory (no copies).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["NUMPY_MIN_NUMEL", "cos", "sin", "cos_sin"]

#: Smallest tensor (elements) sent to numpy: below it both take a few microseconds (benchmarks/trig.py).
NUMPY_MIN_NUMEL = 4096


def _numpy_path(x: torch.Tensor) -> bool:
    return (x.dtype == torch.float32 and x.device.type == "cpu" and x.numel() >= NUMPY_MIN_NUMEL
            and not (x.requires_grad and torch.is_grad_enabled()) and x.layout == torch.strided
            and not torch.compiler.is_compiling())


def _apply(ufunc, x: torch.Tensor) -> torch.Tensor:
    source = x.detach().contiguous()
    out = torch.empty_like(source)
    with np.errstate(invalid="ignore"):          # cos(inf) is NaN, as torch gives it, without numpy's warning
        ufunc(source.numpy(), out=out.numpy())
    return out


def cos(x: torch.Tensor) -> torch.Tensor:
    """``torch.cos(x)``, elementwise; float32 CPU tensors of :data:`NUMPY_MIN_NUMEL` or more elements via numpy."""
    return _apply(np.cos, x) if _numpy_path(x) else torch.cos(x)


def sin(x: torch.Tensor) -> torch.Tensor:
    """``torch.sin(x)``, elementwise; float32 CPU tensors of :data:`NUMPY_MIN_NUMEL` or more elements via numpy."""
    return _apply(np.sin, x) if _numpy_path(x) else torch.sin(x)


def cos_sin(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos(x), sin(x))`` of a real tensor, each of ``x``'s shape.

    >>> c, s = cos_sin(torch.zeros(2))
    >>> c.tolist(), s.tolist()
    ([1.0, 1.0], [0.0, 0.0])
    """
    return cos(x), sin(x)
