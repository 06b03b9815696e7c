r"""Functional core of :mod:`qpnlp.nn.position`: the position encodings as functions on plain tensors.

* :func:`~qpnlp.nn.position.complex_order_embedding` -- :math:`r\, e^{i(\omega\,\mathrm{pos} + \theta)}` element-wise
  (Wang et al., ICLR 2020, eq. 5), with a fused autograd function for :math:`r e^{i\alpha}`;
* :func:`~qpnlp.nn.position.sinusoidal_frequencies`, :func:`~qpnlp.nn.position.sinusoidal_position_encoding` -- the
  TPE of Vaswani et al. (2017, eq. 7), :math:`\omega_k = 10000^{-2k/d_\text{model}}`;
* :func:`~qpnlp.nn.position.default_positions` -- :math:`0..L-1` counted over the real tokens.

The embedding modules that look up :math:`r`, :math:`\omega` and :math:`\theta` per word, and the properties of
the encoding (offset transformation, boundedness, TPE as the word-sharing complex code), are in
:mod:`qpnlp.nn.position`, which re-exports every public name of this module (import them from there).

Shape checks of the arguments are static and always on; no value is checked here (no host synchronisation:
these functions run in every forward pass of the complex-order models).
"""

from __future__ import annotations

import torch
from torch import Tensor

from qpnlp._checks import check_real
from qpnlp._trig import cos_sin
from qpnlp.hilbert import _validation as V

from ._checks import check_int

__all__ = [
    "TPE_BASE",
    "complex_order_embedding",
    "sinusoidal_frequencies",
    "sinusoidal_position_encoding",
    "default_positions",
]

#: The base of the sinusoidal frequencies (Vaswani et al., 2017).
TPE_BASE = 10000.0


#: The complex dtype of :func:`complex_order_embedding` for a 16-bit amplitude (computed in float32).
_FROM_16_BIT = {torch.float16: torch.complex32, torch.bfloat16: torch.complex64}


class _Polar(torch.autograd.Function):
    r""":math:`z = r e^{i\alpha}` from real ``r`` and ``alpha`` (broadcast), with the exact derivative for every sign
    of ``r``: :math:`\partial_r = \Re(\bar e^{i\alpha} g)`, :math:`\partial_\alpha = r \Im(\bar e^{i\alpha} g)`.

    The autograd graph of ``torch.complex(r cos a, r sin a)`` evaluates the sine and cosine again in its backward
    and keeps four real products; this keeps cos and sin from the forward (complex-order FastText step,
    benchmarks/complex_order_step.py). torch.polar's own gradient is wrong for negative ``r`` (see
    :data:`qpnlp.nn.embedding.TORCH_POLAR_GRADIENT`). The backward is of torch ops: with ``create_graph=True``
    (a Hessian, a gradient penalty) autograd differentiates it, cos and sin then carrying the graph of the
    angle (``_on_graph``).
    """

    @staticmethod
    def forward(ctx, r, angle):
        cos, sin = cos_sin(angle)                   # qpnlp._trig: one compiled loop for float32 CPU tensors
        ctx.save_for_backward(r, cos, sin, angle if angle.requires_grad else None)
        return torch.complex(r * cos, r * sin)

    @staticmethod
    def backward(ctx, g):
        r, cos, sin, angle = ctx.saved_tensors
        if torch.is_grad_enabled() and angle is not None:       # create_graph=True: d cos = -sin d angle, ...
            cos, sin = _on_graph(cos, torch.cos(angle)), _on_graph(sin, torch.sin(angle))
        g_re, g_im = torch.view_as_real(g.resolve_conj()).unbind(-1)
        g_r = g_angle = None
        if ctx.needs_input_grad[0]:
            g_r = (g_re * cos + g_im * sin).sum_to_size(r.shape)
        if ctx.needs_input_grad[1]:
            g_angle = (r * (g_im * cos - g_re * sin)).sum_to_size(cos.shape)
        return g_r, g_angle


def _on_graph(value: Tensor, recomputed: Tensor) -> Tensor:
    """``value`` exactly, with the autograd graph of ``recomputed`` (the same function, evaluated again by torch):
    a first derivative keeps the forward's values, a second one sees their dependence on the input."""
    return value + (recomputed - recomputed.detach())


def complex_order_embedding(amplitude: Tensor, frequency: Tensor | None, positions: Tensor | None,
                            phase: Tensor | None = None, mask: Tensor | None = None) -> Tensor:
    r"""Evaluate :math:`r \, e^{i(\omega\,\mathrm{pos} + \theta)}` element-wise.

    Parameters
    ----------
    amplitude : Tensor, real, shape (..., D) (or broadcastable)
    frequency : Tensor or None, real, shape broadcastable to (..., D)
        ``None`` means no position term (complex-vanilla).
    positions : Tensor or None, real, shape (...,)
        Required when ``frequency`` is given; broadcast over the last dim.
    phase : Tensor, real, shape broadcastable to (..., D), optional
        Initial phases :math:`\theta` (zero when omitted).
    mask : BoolTensor, shape (...,), optional
        False entries give exactly 0 (applied to the real amplitude, before the complex value exists).

    Returns
    -------
    Tensor, complex, shape (..., D) (the broadcast shape)
        complex64 for float32 inputs, complex128 for float64. A 16-bit amplitude is computed in float32 (the
        angles :math:`\omega\,\mathrm{pos}` of 16-bit positions were off by several ulp, and bfloat16 has no
        complex type: torch.complex refused it) and gives complex32 (float16) or complex64 (bfloat16).

    Notes
    -----
    Long documents: the angle :math:`\alpha = \omega\,\mathrm{pos} + \theta` is rounded to the working dtype
    before its cosine and sine are taken, and those are within about one ulp of 1 of the exact values of the
    rounded angle for every :math:`|\alpha|` (torch's kernels and ``qpnlp._trig``'s compiled loop alike,
    ``tests/test_trig.py``). In float32 the two roundings move the angle by up to :math:`2^{-24}
    (|\omega\,\mathrm{pos}| + |\alpha|)` rad: 1e-4 rad at :math:`|\omega\,\mathrm{pos}| = 10^3`, 0.01 at
    :math:`10^5`, 0.1 at :math:`10^6`, so ``z`` is then within :math:`|r|` times that of the float64 value
    (:math:`|z| = |r|` holds whatever the angle). float64 arguments keep float64's accuracy (torch's float64
    kernels; libm in the compiled FastText pooling): use a float64 model where positions of :math:`10^4`-:math:`10^6`
    words and their phases matter.

    Raises
    ------
    TypeError
        A non-tensor, a complex or integer amplitude, frequency or phase, complex positions, a mask that is not bool.
    ValueError
        Frequencies without positions, arguments on different devices, or shapes that do not broadcast to one
        ``(..., D)`` (``positions`` and ``mask`` count as ``(..., 1)``).

    Examples
    --------
    >>> import math
    >>> z = complex_order_embedding(torch.ones(1, 2), torch.tensor([0.0, math.pi / 2]), torch.tensor([1.0]))
    >>> torch.allclose(z, torch.tensor([[1 + 0j, 1j]]), atol=1e-6)
    True
    """
    _check_core(amplitude, frequency, positions, phase, mask)
    result = _FROM_16_BIT.get(amplitude.dtype)
    if result is not None:
        amplitude, frequency, phase = (None if t is None else t.float() for t in (amplitude, frequency, phase))
    angle = amplitude.new_zeros(())
    if frequency is not None:
        angle = frequency * positions.to(amplitude.dtype).unsqueeze(-1)
    if phase is not None:
        angle = angle + phase
    if mask is not None:
        amplitude = amplitude * mask.unsqueeze(-1).to(amplitude.dtype)
    shape = torch.broadcast_shapes(amplitude.shape, angle.shape)
    if V.in_transform():                        # torch.func refuses _Polar's ctx forward: the plain graph, same maths
        z = torch.complex(amplitude * torch.cos(angle), amplitude * torch.sin(angle)).expand(shape)
    else:
        z = _Polar.apply(amplitude.expand(shape), angle.expand(shape))
    return z if result is None else z.to(result)


def _check_core(amplitude, frequency, positions, phase, mask) -> None:
    """Static checks of :func:`complex_order_embedding`'s arguments: types, one device, one broadcast shape."""
    tables = [(n, t) for n, t in (("amplitude", amplitude), ("frequency", frequency), ("phase", phase))
              if n == "amplitude" or t is not None]
    for name, t in tables:
        V.check_tensor(name, t)
        V.check_real(name, t)
    per_position = []                                       # (...,) arguments, broadcast over the last dim D
    if frequency is not None:
        if positions is None:
            raise ValueError("positions are required when frequencies are given")
        V.check_tensor("positions", positions)
        if positions.is_complex() or positions.dtype == torch.bool:
            raise TypeError(f"positions must be real numbers (integer or floating); got {positions.dtype}")
        per_position.append(("positions", positions))
    if mask is not None:
        V.check_tensor("mask", mask)
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True at words); got {mask.dtype}")
        per_position.append(("mask", mask))
    V.check_same_device(*tables, *per_position)
    shapes = [(n, tuple(t.shape)) for n, t in tables] + [(n, tuple(t.shape) + (1,)) for n, t in per_position]
    if _broadcast([s for _, s in shapes]) is None:
        got = ", ".join(f"{n} {s[:-1] if n in ('positions', 'mask') else s}" for n, s in shapes)
        raise ValueError(f"the arguments must broadcast to one shape (..., D), positions and mask as (..., 1); "
                         f"got shapes {got}")


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The broadcast of ``shapes``, or None where two sizes of one dim differ.

    Plain loops, no exception and no ``max(default=)``: torch.compile (dynamo) traces them without a graph break.
    """
    ndim = 0
    for shape in shapes:
        ndim = max(ndim, len(shape))
    out = []
    for i in range(1, ndim + 1):                  # dims counted from the right; a missing dim is 1
        size = 1
        for shape in shapes:
            if i <= len(shape) and shape[-i] != 1:
                if size != 1 and shape[-i] != size:
                    return None
                size = shape[-i]
        out.append(size)
    return tuple(reversed(out))


def sinusoidal_frequencies(n: int, d_model: int | None = None, *, base: float = TPE_BASE,
                           dtype: torch.dtype = torch.float32, device=None) -> Tensor:
    r"""The TPE angular frequencies :math:`\omega_k = \text{base}^{-2k/d_\text{model}}`, :math:`k = 0..n-1`.

    Parameters
    ----------
    n : int
        Number of frequencies (complex dimension).
    d_model : int, optional
        Width of the real encoding they come from (default ``2 n``).
    base : float
        Positive, finite (ValueError; TypeError for a string, a bool or a tensor); default
        :data:`~qpnlp.nn.position_functional.TPE_BASE` (10000, the Transformer's).
    dtype : torch.dtype
        A real floating dtype of the result (default float32).
    device : torch.device or str, optional
        Where the result lives (default: the default device).

    Returns
    -------
    Tensor, real, shape (n,)
    """
    n = check_int("n", n)
    d_model = 2 * n if d_model is None else check_int("d_model", d_model)
    if n < 0 or d_model < 1:
        raise ValueError(f"need n >= 0 and d_model >= 1; got n={n}, d_model={d_model}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):   # torch.arange failed for complex dtypes
        raise TypeError(f"dtype must be a real floating dtype; got {dtype!r}")
    # 0 gave inf frequencies, a negative base NaN, 10**400 an OverflowError naming no argument
    if check_real("base", base, "a positive finite number", tensors=False) <= 0:
        raise ValueError(f"base must be a positive finite number; got {base!r}")
    k = torch.arange(n, dtype=dtype, device=device)
    return base ** (-2.0 * k / d_model)


def sinusoidal_position_encoding(positions: Tensor, dim: int, *, base: float = TPE_BASE,
                                 dtype: torch.dtype | None = None) -> Tensor:
    r"""Vaswani et al. (2017) eq. 7: :math:`PE_{2k} = \sin(\omega_k \mathrm{pos})`, :math:`PE_{2k+1} = \cos(\omega_k
    \mathrm{pos})`.

    :math:`\omega_k = \text{base}^{-2k/\text{dim}}`. Odd ``dim`` drops the last cosine. The angles are
    computed in float32 at least and only the result is cast to a 16-bit ``dtype``: float16 holds the
    integers exactly only up to 2048 and bfloat16 up to 256 (positions 256 and 257 got one encoding), and
    an angle of 5000 rad has an ulp of 4 in float16.

    Parameters
    ----------
    positions : Tensor, real or integer, shape (...,)
        May be non-integer.
    dim : int
        Width of the encoding, >= 1.
    base : float
        Positive, finite; default :data:`~qpnlp.nn.position_functional.TPE_BASE` (10000, the Transformer's).
    dtype : torch.dtype, optional
        Real dtype of the result; None: that of floating ``positions``, else the default dtype.

    Returns
    -------
    Tensor, real, shape (..., dim)

    Examples
    --------
    >>> sinusoidal_position_encoding(torch.tensor([0.0]), 4)
    tensor([[0., 1., 0., 1.]])
    """
    dim = check_int("dim", dim)
    if dim < 1:
        raise ValueError(f"dim must be >= 1; got {dim}")
    V.check_tensor("positions", positions)
    if positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"positions must be real numbers (integer or floating); got {positions.dtype}")
    dtype = dtype or (positions.dtype if positions.is_floating_point() else torch.get_default_dtype())
    work = torch.promote_types(dtype, torch.float32) if getattr(dtype, "is_floating_point", False) else dtype
    omega = sinusoidal_frequencies((dim + 1) // 2, dim, base=base, dtype=work, device=positions.device)
    angle = positions.to(work).unsqueeze(-1) * omega
    out = torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten(-2)
    return out[..., :dim].to(dtype)


def default_positions(ids: Tensor, mask: Tensor | None = None, dtype: torch.dtype = torch.float32) -> Tensor:
    r"""Positions :math:`0..L-1` of the real tokens: ``cumsum(mask) - 1`` (0 at padding), shape (B, L).

    Without a mask, ``arange(L)`` broadcast to ``ids.shape``.

    Parameters
    ----------
    ids : Tensor, shape (B, L)
        Word ids; only the shape and the device are read.
    mask : bool Tensor, shape (B, L), optional
        True at real tokens: padding anywhere does not count. None: every token is real.
    dtype : torch.dtype
        dtype of the positions (default float32).
    """
    V.check_tensor("ids", ids)
    if mask is None:
        return torch.arange(ids.shape[-1], dtype=dtype, device=ids.device).expand(ids.shape)
    V.check_tensor("mask", mask)
    if mask.dtype != torch.bool:                  # a count of 2 would skip a position
        raise TypeError(f"mask must be a bool tensor (True at words); got {mask.dtype}")
    if mask.shape != ids.shape:                   # the positions of another batch, silently
        raise ValueError(f"mask must have the shape of ids {tuple(ids.shape)}; got {tuple(mask.shape)}")
    return (mask.cumsum(-1) - 1).clamp_min(0).to(dtype) * mask
