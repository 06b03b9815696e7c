r"""Functional core of :mod:`qpnlp.nn`: plain functions on real or complex tensors.

The layers of the complex-order paper (Wang et al., ICLR 2020, appendix B)
are written once for a ``dtype`` that is either complex (complex64/complex128:
the paper's complex network) or real (float32/float64: the same function
reduces to its ordinary real counterpart, used by the real-valued baselines).
So every function here accepts both.

* :func:`split_activation` -- :math:`f(z) = \sigma(\Re z) + i\sigma(\Im z)`
  (the paper's activation, eq. 10 and 12).
* :func:`part_mul` -- the per-part product of the complex LSTM gates.
* :func:`complex_dropout` -- one real mask for both parts.
* :func:`readout` -- complex-to-real maps: modulus, [Re, Im], squared modulus.
* :func:`masked_mean`, :func:`masked_max` -- pooling over the real tokens.
* :func:`unit_rows` -- :math:`z / \max(\|z\|, \epsilon)` over the last dim (zero rows stay zero).
* :func:`hermitian_attention_scores` -- scores from the modulus of the
  Hermitian product, paper eq. 14.
* :func:`as_complex_input` -- the one input-promotion rule of the layers.

Shapes follow ``(B, L, D)`` for sequences, ``(..., D)`` for element-wise functions.

The per-part functions work on the real view ``(..., D, 2)`` of a complex
tensor (``torch.view_as_real``, no copy): one pass over the [Re, Im] pairs
instead of one per part plus a ``torch.complex`` to put them back together.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._linalg import modulus, squared_norms
from qpnlp.hilbert._validation import real_dtype_of

from ._checks import check_dropout

__all__ = [
    "READOUTS",
    "SPLIT_ACTIVATIONS",
    "as_complex_input",
    "split_activation",
    "part_mul",
    "complex_dropout",
    "dropout_keep",
    "readout",
    "readout_dim",
    "masked_mean",
    "masked_max",
    "unit_rows",
    "hermitian_attention_scores",
]

#: The readouts of a complex feature (``kind`` of :func:`readout`): ``|z|``, ``(Re z, Im z)`` or ``|z|^2``.
READOUTS = ("modulus", "re_im", "squared_modulus")
#: The real activations a split activation applies to the real and imaginary parts, by name.
SPLIT_ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "identity": lambda x: x}


def _parts(z: Tensor) -> Tensor:
    """The real view ``(..., 2)`` ([Re, Im] pairs) of a complex tensor, without a copy (a copy when compiled)."""
    if torch.compiler.is_compiling():
        return torch.stack((z.real, z.imag), -1)  # see _from_parts
    return torch.view_as_real(z.resolve_conj())


def _from_parts(t: Tensor) -> Tensor:
    """The complex tensor of a real ``(..., 2)`` tensor of [Re, Im] pairs (a view when the layout allows it).

    Inside torch.compile, both directions copy instead of viewing: dynamo cannot trace the layout test
    (``storage_offset``), and inductor (torch 2.13) lays out the gradients of the views with strides that
    ``view_as_complex`` rejects in the backward pass.
    """
    if torch.compiler.is_compiling():
        return torch.complex(t[..., 0], t[..., 1])
    if t.stride(-1) != 1 or t.storage_offset() % 2 or any(s % 2 for s in t.stride()[:-1]):
        t = t.contiguous()
    return torch.view_as_complex(t)


def as_complex_input(x: Tensor, dtype: torch.dtype, name: str = "x", *, upcast: bool = True) -> Tensor:
    r"""The layers' input rule: convert ``x`` to the layer's ``dtype`` only when this loses nothing.

    A real floating input becomes complex with zero imaginary part. With
    ``upcast=True`` (the gated complex RNN) any lossless conversion is made:
    float32 -> complex64 or complex128, float64 -> complex128, complex64 ->
    complex128. With ``upcast=False`` (the complex-order layers) only a real
    input of the layer's own precision is accepted besides ``dtype`` itself,
    and, inside ``torch.autocast``, a real input in the autocast dtype (what
    the layer before made of it; widening it is lossless).
    Anything that would lose precision (e.g. complex128 into a complex64
    layer) or drop an imaginary part raises ``TypeError``; nothing is ever
    downcast silently. Integer inputs raise ``TypeError``.

    Parameters
    ----------
    x : Tensor, real floating or complex, any shape
    dtype : torch.dtype
        The layer's dtype (complex, or real for the real baselines).
    name : str
        Argument name for the error message.
    upcast : bool
        Accept lower-precision inputs too (default True).

    Returns
    -------
    Tensor, same shape, dtype ``dtype``.

    Examples
    --------
    >>> as_complex_input(torch.ones(2), torch.complex64)
    tensor([1.+0.j, 1.+0.j])
    >>> as_complex_input(torch.ones(2), torch.complex128, upcast=False)
    Traceback (most recent call last):
    ...
    TypeError: x has dtype torch.float32; the layer expects torch.complex128 (or torch.float64)
    """
    V.check_tensor(name, x)
    if not (x.is_complex() or x.is_floating_point()):
        raise TypeError(f"{name} must be a real floating or complex tensor; got dtype {x.dtype}")
    if x.dtype == dtype:
        return x
    real = real_dtype_of(dtype)
    if not upcast:
        if (x.is_complex() or x.dtype != real) and not _autocast_lowered(x, real):
            also = f" (or {real})" if dtype.is_complex else ""
            raise TypeError(f"{name} has dtype {x.dtype}; the layer expects {dtype}{also}")
        return x.to(dtype)  # real input into a complex layer: zero imaginary part
    if torch.finfo(x.dtype).bits > torch.finfo(real).bits or (x.is_complex() and not dtype.is_complex):
        raise TypeError(
            f"{name} has dtype {x.dtype} but the layer is {dtype}; refusing to downcast silently "
            f"(convert the input or build the layer with a wider dtype)"
        )
    return x.to(dtype)


def _autocast_lowered(x: Tensor, real: torch.dtype) -> bool:
    """Whether ``x`` is real in the lower dtype of an autocast region active on its device (a layer before it ran
    under ``torch.autocast``): widening it to ``real`` loses nothing, and the layer's own ops run under autocast."""
    kind = x.device.type
    return (not x.is_complex() and torch.is_autocast_enabled(kind) and x.dtype == torch.get_autocast_dtype(kind)
            and torch.finfo(x.dtype).bits < torch.finfo(real).bits)


def split_activation(z: Tensor, fn="relu") -> Tensor:
    r"""Per-part activation :math:`f(z) = \sigma(\Re z) + i\,\sigma(\Im z)`; :math:`\sigma(z)` for real ``z``.

    Parameters
    ----------
    z : Tensor, real or complex, shape (...,)
    fn : str or callable
        One of ``"relu"``, ``"tanh"``, ``"sigmoid"``, ``"identity"`` or a real function.

    Examples
    --------
    >>> split_activation(torch.tensor([1 - 2j]), "relu")
    tensor([1.+0.j])
    """
    V.check_tensor("z", z)
    if isinstance(fn, str):
        if fn not in SPLIT_ACTIVATIONS:
            raise ValueError(f"unknown activation {fn!r}; choose from {sorted(SPLIT_ACTIVATIONS)}")
        fn = SPLIT_ACTIVATIONS[fn]
    if not z.is_complex():
        return fn(z)
    return _from_parts(fn(_parts(z)))            # one pass over the [Re, Im] pairs


def part_mul(a: Tensor, b: Tensor) -> Tensor:
    r"""Per-part (Hadamard on the real and imaginary parts) product :math:`\Re a \Re b + i \Im a \Im b`.

    Used for the LSTM gates: a gate in :math:`[0,1] + i[0,1]` scales each part
    of the state independently, so the gated state stays bounded. Plain product for real tensors.
    ``a`` and ``b`` broadcast (ValueError naming both shapes where they do not).

    Parameters
    ----------
    a, b : Tensor
        Complex or real, broadcastable shapes, one device; a real factor counts as imaginary part 0.

    Examples
    --------
    >>> part_mul(torch.tensor([1 + 2j]), torch.tensor([3 + 4j]))
    tensor([3.+8.j])
    """
    if a.shape != b.shape:                        # one comparison on the LSTM's path, where they always match
        V.check_broadcast("a", a.shape, "b", b.shape, what="shape")
    if a.device != b.device:
        V.check_same_device(("a", a), ("b", b))
    if not (a.is_complex() or b.is_complex()):
        return a * b
    if a.is_complex() and b.is_complex():
        return _from_parts(_parts(a) * _parts(b))
    z, x = (a, b) if a.is_complex() else (b, a)       # a real factor has imaginary part 0
    re = z.real * x
    return torch.complex(re, torch.zeros_like(re))


def complex_dropout(z: Tensor, p: float, training: bool = True, generator: torch.Generator | None = None) -> Tensor:
    r"""Dropout with one real mask :math:`m` for both parts: :math:`z \mapsto m \odot z / (1 - p)`.

    A dropped unit is zero in both its real and imaginary part (the phase of
    the kept units is unchanged). For real ``z`` this is ordinary dropout.

    Parameters
    ----------
    z : Tensor, real floating or complex, shape (...,) (TypeError for another dtype, even in eval mode)
    p : float in [0, 1)
    training : bool
        Identity when False.
    generator : torch.Generator, optional
        Source of the mask (default: the global generator).

    Returns
    -------
    Tensor, shape and dtype of ``z``.
    """
    p = check_dropout("p", p)
    V.check_tensor("z", z)
    if not (z.is_floating_point() or z.is_complex()):    # torch.rand would fail on an integer dtype
        raise TypeError(f"z must be a real floating or complex tensor; got {z.dtype}")
    if not training or p == 0:
        return z
    real = real_dtype_of(z.dtype)
    scale = dropout_keep(z.shape, p, real, z.device, generator).div_(1 - p)
    return z * scale  # complex times real: torch's mixed-dtype kernel, faster than a product on the [Re, Im] view


def dropout_keep(shape, p: float, dtype: torch.dtype, device=None,
                 generator: torch.Generator | None = None) -> Tensor:
    """The keep mask of :func:`complex_dropout`: ``rand(shape) >= p`` as 1 or 0 in the real ``dtype``, ``shape``.

    One function for the dropout and the fused FastText pooling (:func:`qpnlp.nn.position_mean.complex_order_mean`),
    so that both draw the same random numbers. The comparison writes into the drawn numbers (``ge_``): one pass
    less than a bool mask converted to ``dtype``, the same 1s and 0s.

    Parameters
    ----------
    shape : tuple of int or torch.Size
        Shape of the mask (that of the input to drop).
    p : float
        Drop probability in [0, 1) (not checked here; :func:`complex_dropout` checks it).
    dtype : torch.dtype
        Real floating dtype of the drawn numbers and of the mask.
    device : torch.device or str, optional
        Where the mask is drawn (default: the default device).
    generator : torch.Generator, optional
        Source of the random numbers; None: the global generator.
    """
    # Without a generator, torch.rand is called without the keyword: under torch.compile with dynamic shapes,
    # rand(..., generator=None) fails on symbolic sizes (torch 2.13), the plain call does not.
    drawn = {} if generator is None else {"generator": generator}
    return torch.rand(shape, dtype=dtype, device=device, **drawn).ge_(p)


def readout(z: Tensor, kind: str = "modulus") -> Tensor:
    r"""Complex-to-real readout of the last dimension.

    ``"modulus"``: :math:`|z|` (D); ``"re_im"``: :math:`[\Re z, \Im z]` (2D);
    ``"squared_modulus"``: :math:`|z|^2` (D). A real ``z`` is returned unchanged
    (the real baselines need no readout).

    Parameters
    ----------
    z : Tensor, shape (..., D)
    kind : {"modulus", "re_im", "squared_modulus"}

    Returns
    -------
    Tensor, real, shape (..., D) or (..., 2D)

    Examples
    --------
    >>> readout(torch.tensor([3 + 4j]), "re_im")
    tensor([3., 4.])
    """
    if kind not in READOUTS:
        raise ValueError(f"unknown readout {kind!r}; choose from {READOUTS}")
    V.check_tensor("z", z)
    if not z.is_complex():
        return z
    if kind == "modulus":
        return modulus(z)
    if kind == "squared_modulus":
        return _parts(z).square().sum(-1)
    return torch.cat([z.real, z.imag], dim=-1)


def readout_dim(kind: str, dim: int, is_complex: bool) -> int:
    """Width of :func:`readout` for ``dim`` inputs.

    Parameters
    ----------
    kind : {"modulus", "re_im", "squared_modulus"}
        The readout; another name raises ValueError.
    dim : int
        Width D of the readout's input.
    is_complex : bool
        Whether the input is complex: only a complex ``"re_im"`` doubles the width (a real input is passed through).

    Examples
    --------
    >>> readout_dim("re_im", 3, True), readout_dim("modulus", 3, True)
    (6, 3)
    """
    if kind not in READOUTS:
        raise ValueError(f"unknown readout {kind!r}; choose from {READOUTS}")
    return 2 * dim if (is_complex and kind == "re_im") else dim


#: The dtype :func:`unit_rows` normalises 16-bit rows in.
_WIDER = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.complex32: torch.complex64}


def unit_rows(z: Tensor, eps: float = 1e-12) -> Tensor:
    r""":math:`z / \max(\|z\|_2, \epsilon)` over the last dim: ``torch.nn.functional.normalize(z, dim=-1)``.

    Same values and gradients (zero rows stay zero and get zero gradient), but for complex ``z`` the norm is
    taken on the real view ``(..., D, 2)``: torch's complex ``vector_norm`` is slow in its forward and backward
    (CNM's training step with dropout, which renormalises this way: 1.09x faster, benchmarks/cnm_train_step.py).
    :math:`\max(\|z\|, \epsilon)` is computed as :math:`\sqrt{\max(\|z\|^2, \epsilon^2)}`, whose gradient
    is finite at zero rows. 16-bit ``z`` (float16, bfloat16, complex32) is normalised in 32 bits and rounded
    back: in float16 :math:`\epsilon^2` rounds to 0 (a zero row gave NaN, as torch's ``normalize`` does) and
    :math:`\|z\|^2` overflows from :math:`\|z\| = 256` (such rows gave 0).

    Parameters
    ----------
    z : Tensor, real or complex, shape (..., D)
    eps : float
        Smallest divisor (``normalize``'s default 1e-12).

    Returns
    -------
    Tensor, shape and dtype of ``z``.
    """
    V.check_tensor("z", z)
    V.check_min_ndim("z", z, 1, "(..., D)")               # a 0-d z was an IndexError of squared_norms
    if z.dtype in _WIDER:
        return unit_rows(z.to(_WIDER[z.dtype]), eps).to(z.dtype)
    return z / squared_norms(z).clamp_min(eps * eps).sqrt()


def _check_steps(x: Tensor, steps: Tensor, name: str) -> None:
    """Pooling inputs (static checks, always on): real floating or complex ``x`` (..., L, D) and a bool step mask
    of shape (..., L) on its device. Bool only: a count (2 for a repeated step) would weight a step in the mean."""
    V.check_tensor("x", x)
    V.check_tensor(name, steps)
    if not (x.is_floating_point() or x.is_complex()):
        raise TypeError(f"x must be a real floating or complex tensor; got {x.dtype}")
    if steps.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True at the steps that count); got {steps.dtype}")
    V.check_same_device(("x", x), (name, steps))
    if x.dim() < 2 or steps.shape != x.shape[:-1]:
        raise ValueError(f"{name} must have the shape of x without its last dim, {tuple(x.shape[:-1])}; "
                         f"got {tuple(steps.shape)} for x of shape {tuple(x.shape)}")


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    r"""Mean over the valid steps: :math:`\frac{1}{n}\sum_{t:\,m_t} x_t`.

    Parameters
    ----------
    x : Tensor, real or complex, shape (..., L, D)
    mask : bool Tensor, shape (..., L)
        True at the steps that count.

    Returns
    -------
    Tensor, shape (..., D): zero for a row without a valid step.

    Notes
    -----
    The padded steps are multiplied by 0, so they must be finite (NaN or inf there gives NaN, loudly); qpnlp's
    embeddings put exact zeros there. A selection (``torch.where``) would ignore any value but cost 1.3-2x the
    forward and backward of the product (one thread, (32, 53, 300)), and this mean is on the training path of
    every FastText and Transformer classifier. :func:`masked_max` selects, and ignores anything at padding.

    Examples
    --------
    >>> masked_mean(torch.tensor([[[1.0], [3.0], [9.0]]]), torch.tensor([[True, True, False]]))
    tensor([[2.]])
    """
    _check_steps(x, mask, "mask")
    m = mask.to(real_dtype_of(x.dtype)).unsqueeze(-1)
    count = m.sum(-2).clamp_min(1)
    return (x * m).sum(-2) / count              # complex x: a complex-times-real product, no complex copy of m


class _MaskedMax(torch.autograd.Function):
    """Max of ``x`` over ``dim`` where ``valid`` (broadcast to ``x``), 0 where no step is valid.

    The backward scatters the gradient to the maximal step (the first at ties, as ``torch.max`` and max-pooling
    layers do) from the saved indices: one pass over ``x``'s shape, where the graph of ``masked_fill`` + ``amax``
    needs four (a comparison, a division, a product and the mask), and it saves only the indices. CNM pools
    local mixtures of shape ``(B, 4, L, 300)`` this way (its training step: benchmarks/cnm_train_step.py).
    """

    @staticmethod
    def forward(ctx, x, valid, dim):
        values, index = x.masked_fill(~valid, torch.finfo(x.dtype).min).max(dim, keepdim=True)
        none = ~valid.any(dim, keepdim=True)
        ctx.save_for_backward(index, none)
        ctx.shape, ctx.dim = x.shape, dim
        return values.masked_fill_(none, 0).squeeze(dim)

    @staticmethod
    def backward(ctx, g):
        index, none = ctx.saved_tensors
        g = g.unsqueeze(ctx.dim).masked_fill(none, 0)
        return g.new_zeros(ctx.shape).scatter_(ctx.dim, index, g), None, None


def masked_max(x: Tensor, valid: Tensor) -> Tensor:
    r"""Per-part max over the valid steps.

    Real and imaginary parts are max-pooled separately (the paper's split
    activations act per part). The gradient goes to the maximal step of each
    part (the first one at ties; under a :mod:`torch.func` transform, which runs
    ``torch.amax``, it is split evenly between tied steps). Anything at a padded step (NaN, inf) is
    ignored; NaN at a valid step gives NaN in that part of the result, as
    ``torch.amax`` does: values are not checked here (that would cost a host
    synchronisation in every forward pass of the models that pool with it).

    Parameters
    ----------
    x : Tensor, real or complex, shape (..., L, D)
    valid : bool Tensor, shape (..., L)

    Returns
    -------
    Tensor, shape (..., D): zero for a row without a valid step.

    Examples
    --------
    >>> masked_max(torch.tensor([[[1 + 5j], [3 - 1j], [9 + 9j]]]), torch.tensor([[True, True, False]]))
    tensor([[3.+5.j]])
    """
    _check_steps(x, valid, "valid")
    if x.shape[-2] == 0:                        # no step at all: zero (max has no identity to start from)
        return x.sum(-2)
    if x.is_complex():                          # both parts in one pass over the [Re, Im] pairs
        return _from_parts(_masked_max(_parts(x), valid.reshape(valid.shape + (1, 1)), -3))
    return _masked_max(x, valid.unsqueeze(-1), -2)


def _masked_max(x: Tensor, valid: Tensor, dim: int) -> Tensor:
    """``_MaskedMax`` where a gradient is needed; without one, ``amax``: on the CPU, ``max`` over a middle dim
    is much slower when it also finds the indices, which only the backward needs. Under a torch.func transform
    (which refuses ``_MaskedMax``'s ``ctx`` forward) ``amax`` too: its gradient splits evenly between ties."""
    differentiable = torch.is_grad_enabled() and x.requires_grad
    if differentiable and not V.in_transform():
        return _MaskedMax.apply(x, valid, dim)
    out = x.masked_fill(~valid, torch.finfo(x.dtype).min).amax(dim, keepdim=True)
    none = ~valid.any(dim, keepdim=True)          # amax's backward keeps its output: in place only without one
    return (out.masked_fill(none, 0) if differentiable else out.masked_fill_(none, 0)).squeeze(dim)


def hermitian_attention_scores(q: Tensor, k: Tensor) -> Tensor:
    r"""Paper eq. 14: :math:`e_{ij} = \sqrt{(\Re(z)^2 + \Im(z)^2)/n} = |z_{ij}|/\sqrt{n}`, :math:`z = q_i k_j^\dagger`.

    :math:`n` is the head dimension (the role of :math:`\sqrt{d_k}` in Vaswani
    et al.); :math:`q_i k_j^\dagger = \sum_d q_{id} \overline{k_{jd}}`.
    For real ``q, k`` the ordinary scaled dot product :math:`q_i \cdot k_j / \sqrt{n}`.

    Parameters
    ----------
    q, k : Tensor, shape (..., Lq, n), (..., Lk, n)
        One dtype (both complex or both real), one ``n``, broadcastable batch dims (else TypeError or ValueError).

    Returns
    -------
    Tensor, real, shape (..., Lq, Lk)

    Examples
    --------
    >>> hermitian_attention_scores(torch.tensor([[1j, 0]]), torch.tensor([[1 + 0j, 0]]))
    tensor([[0.7071]])
    """
    V.check_tensor("q", q)
    V.check_tensor("k", k)
    if q.dim() < 2 or k.dim() < 2 or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have shapes (..., Lq, n) and (..., Lk, n) with one n; got "
                         f"{tuple(q.shape)} and {tuple(k.shape)}")
    if q.dtype != k.dtype:
        raise TypeError(f"q and k must have one dtype; got {q.dtype} and {k.dtype}")
    V.check_same_device(("q", q), ("k", k))
    V.check_broadcast("q", q.shape[:-2], "k", k.shape[:-2])
    n = q.shape[-1]
    z = q @ k.conj().transpose(-1, -2) if q.is_complex() else q @ k.transpose(-1, -2)
    return (modulus(z) if z.is_complex() else z) / math.sqrt(n)
