"""Cosine and sine of float32 CPU tensors at SIMD speed, for code that needs no autograd graph.

torch's CPU kernels for float32 ``cos`` and ``sin`` are not vectorised on this build: about 1 ns an element on
an AVX-512 machine and 3.5 ns on an AVX2 one (torch 2.13.0, about 14x a multiply). Two faster routes, in order:

- with numba (the extra ``fast``), one compiled loop (``qpnlp._elementary.sincos``: a vectorised
  polynomial after a Cody-Waite reduction, libm beyond :math:`|x| > 8192`) gives both at once, about 0.6 ns an
  element for the pair on the AVX2 machine (4.6-7.8x torch's two calls, ``benchmarks/trig.py``);
- else, on a CPU with AVX-512 (:data:`NUMPY_SIMD_TRIG`), numpy's own SIMD kernels for float32 (numpy >= 1.22),
  about 0.4 ns an element; on AVX2 they took 1.1-1.9x torch's time (``benchmarks/results/speed/trig_compiled*``),
  so there torch's kernels are kept.

Both agree with a float64 reference to under 1 ulp of 1, as torch does (``tests/test_trig.py``). The hot paths
that evaluate them without autograd call these functions:

- the fused phase lookups of QPDN and CNM (``qpnlp.nn.embedding._PolarLookup``),
- the complex-order embedding's forward (``qpnlp.nn.position_functional._Polar``),
- Word2Fun's sinusoidal families and their hand-written gradients (:meth:`qpnlp.word2fun.model.Word2Fun.function`).

Everything else goes to torch unchanged: tensors on other devices, other dtypes (numpy's float64 kernels are
slower than torch's), tensors that need a gradient while autograd records, small tensors (under
:data:`NUMPY_MIN_NUMEL` elements, where the round trip costs more than it saves), and code that
``torch.compile`` traces (a numpy call would break its graph; inductor generates its own loops).
``QPNLP_TRIG_COMPILED=0`` (or ``QPNLP_COMPILED=0``) turns the compiled loop off.

Written here, not taken from a library: torch has no vectorised float32 sine on this build and no ``sincos``;
numpy is already a dependency, and its ufuncs write into the tensors' own memory (no copies).
"""

from __future__ import annotations

import numpy as np
import torch

from qpnlp import _elementary, _numba

__all__ = ["NUMPY_MIN_NUMEL", "cos", "sin", "cos_sin"]

#: Smallest tensor (elements) sent to numpy: below it both take a few microseconds (benchmarks/trig.py).
NUMPY_MIN_NUMEL = 4096


def _has_avx512() -> bool:
    """Whether numpy dispatches its AVX-512 kernels here (numpy's CPU feature table; False if it cannot be read)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        try:                                      # numpy 1.x (numpy.core, renamed numpy._core in numpy 2)
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return False
    return bool(__cpu_features__.get("AVX512F", False))


#: Whether numpy's float32 cos and sin beat torch's here: on AVX-512 (2.5x), not on AVX2 (0.5-0.9x).
NUMPY_SIMD_TRIG = _has_avx512()


def _large_float32(x: torch.Tensor) -> bool:
    """A float32 CPU tensor of :data:`NUMPY_MIN_NUMEL` elements or more that needs no graph, outside a trace."""
    return (x.dtype == torch.float32 and x.device.type == "cpu" and x.numel() >= NUMPY_MIN_NUMEL
            and not (x.requires_grad and torch.is_grad_enabled()) and x.layout == torch.strided
            and not torch.compiler.is_compiling())


def _apply(ufunc, x: torch.Tensor) -> torch.Tensor:
    source = x.detach().contiguous()
    out = torch.empty_like(source)
    with np.errstate(invalid="ignore"):          # cos(inf) is NaN, as torch gives it, without numpy's warning
        ufunc(source.numpy(), out=out.numpy())
    return out


def _compiled(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos(x), sin(x))`` by the compiled loop (``qpnlp._elementary.sincos``), into new tensors."""
    source = x.detach().contiguous()
    c, s = torch.empty_like(source), torch.empty_like(source)
    _numba.jit(_elementary.sincos)(source.numpy().reshape(-1), s.numpy().reshape(-1), c.numpy().reshape(-1), True)
    return c, s


def _compiled_path(x: torch.Tensor) -> bool:
    return _large_float32(x) and _numba.enabled("QPNLP_TRIG_COMPILED")


def _numpy_path(x: torch.Tensor) -> bool:
    return NUMPY_SIMD_TRIG and _large_float32(x)


def cos(x: torch.Tensor) -> torch.Tensor:
    """``torch.cos(x)``, elementwise; float32 CPU tensors of :data:`NUMPY_MIN_NUMEL` or more elements by the
    compiled loop (numba), or numpy's kernels on AVX-512 (:data:`NUMPY_SIMD_TRIG`)."""
    if _compiled_path(x):
        return _compiled(x)[0]
    return _apply(np.cos, x) if _numpy_path(x) else torch.cos(x)


def sin(x: torch.Tensor) -> torch.Tensor:
    """``torch.sin(x)``, elementwise; float32 CPU tensors of :data:`NUMPY_MIN_NUMEL` or more elements by the
    compiled loop (numba), or numpy's kernels on AVX-512 (:data:`NUMPY_SIMD_TRIG`)."""
    if _compiled_path(x):
        return _compiled(x)[1]
    return _apply(np.sin, x) if _numpy_path(x) else torch.sin(x)


def cos_sin(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos(x), sin(x))`` of a real tensor, each of ``x``'s shape: one pass of the compiled loop where it applies.

    >>> c, s = cos_sin(torch.zeros(2))
    >>> c.tolist(), s.tolist()
    ([1.0, 1.0], [0.0, 0.0])
    """
    return _compiled(x) if _compiled_path(x) else (cos(x), sin(x))
