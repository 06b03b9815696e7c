r"""Complex-valued layers of the complex-order paper (Wang et al., ICLR 2020, appendix B) on native complex tensors.

Every layer is written once for a ``dtype`` that is either complex
(complex64/complex128: the paper's complex network) or real (float32/float64:
the same layer reduces to its ordinary real counterpart, used by the
real-valued baselines ``none``/``pe``/``tpe``). So one classifier definition
serves the five embedding variants.

* :class:`ComplexLinear` -- paper eq. 10/11 without :math:`\sigma`:
  :math:`z = W x + b`, :math:`W = A + iB`, :math:`b = c + id`, i.e.
  :math:`\Re z = Ax - By + c`, :math:`\Im z = Bx + Ay + d`. With
  ``share_parts=True`` the paper's parameter-saving option :math:`A = B`,
  :math:`c = d` (so :math:`W = (1 + i)A`).
* :func:`split_activation` -- :math:`f(z) = \sigma(\Re z) + i\sigma(\Im z)`
  (the paper's activation, eq. 10 and 12).
* :class:`ComplexConv1d` -- narrow convolution with complex kernels (Trabelsi et al., 2017).
* :class:`ComplexLSTMCell` and :class:`URNNCell`, run over masked sequences by
  :class:`ComplexRNN`.
* :class:`ComplexMultiheadSelfAttention` -- scores from the modulus of the
  Hermitian product, paper eq. 14.
* :class:`ComplexFeedForward`, :class:`PartLayerNorm` (per-part normalisation),
  :class:`ComplexDropout` (one real mask for both parts), :func:`readout`
  (modulus, [Re, Im], squared modulus).

Shapes follow ``(B, L, D)`` for sequences, ``(..., D)`` for element-wise layers.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "READOUTS",
    "ACTIVATIONS",
    "real_dtype_of",
    "split_activation",
    "part_mul",
    "complex_dropout",
    "readout",
    "readout_dim",
    "masked_mean",
    "masked_max",
    "hermitian_attention_scores",
    "ComplexLinear",
    "ComplexConv1d",
    "ComplexLSTMCell",
    "URNNCell",
    "ComplexRNN",
    "ComplexMultiheadSelfAttention",
    "ComplexFeedForward",
    "PartLayerNorm",
    "ComplexDropout",
    "Readout",
]

READOUTS = ("modulus", "re_im", "squared_modulus")
ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "identity": lambda x: x}
_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def _check_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype not in _DTYPES:
        raise TypeError(f"dtype must be one of {_DTYPES}; got {dtype}")
    return dtype


def real_dtype_of(dtype: torch.dtype) -> torch.dtype:
    """float32 for complex64/float32, float64 for complex128/float64."""
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)


def _check_input(x: Tensor, dtype: torch.dtype, last: int, name: str = "x") -> Tensor:
    """Check the last dim; promote a real input of the matching precision to the complex dtype; never downcast."""
    if x.shape[-1:] != (last,):
        raise ValueError(f"{name} must have last dimension {last}; got shape {tuple(x.shape)}")
    if x.dtype == dtype:
        return x
    if not x.is_complex() and x.dtype == real_dtype_of(dtype):
        return x.to(dtype)  # real input into a complex layer: zero imaginary part
    raise TypeError(f"{name} has dtype {x.dtype}; the layer expects {dtype} (or {real_dtype_of(dtype)})")


# ----------------------------------------------------------------------------------------------- functional core

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
    if isinstance(fn, str):
        if fn not in ACTIVATIONS:
            raise ValueError(f"unknown activation {fn!r}; choose from {sorted(ACTIVATIONS)}")
        fn = ACTIVATIONS[fn]
    if not z.is_complex():
        return fn(z)
    return torch.complex(fn(z.real), fn(z.imag))


def part_mul(a: Tensor, b: Tensor) -> Tensor:
    r"""Per-part (Hadamard on the real and imaginary parts) product :math:`\Re a \Re b + i \Im a \Im b`.

    Used for the LSTM gates: a gate in :math:`[0,1] + i[0,1]` scales each part
    of the state independently, so the gated state stays bounded. Plain product for real tensors.
    """
    if not (a.is_complex() or b.is_complex()):
        return a * b
    return torch.complex(a.real * b.real, a.imag * b.imag)


def complex_dropout(z: Tensor, p: float, training: bool = True, generator: torch.Generator | None = None) -> Tensor:
    r"""Dropout with one real mask :math:`m` for both parts: :math:`z \mapsto m \odot z / (1 - p)`.

    A dropped unit is zero in both its real and imaginary part (the phase of
    the kept units is unchanged). For real ``z`` this is ordinary dropout.

    Parameters
    ----------
    z : Tensor, real or complex, shape (...,)
    p : float in [0, 1)
    """
    if not 0 <= p < 1:
        raise ValueError(f"dropout probability must be in [0, 1); got {p}")
    if not training or p == 0:
        return z
    real = real_dtype_of(z.dtype)
    keep = torch.rand(z.shape, dtype=real, device=z.device, generator=generator) >= p
    return z * (keep.to(real) / (1 - p))


def readout(z: Tensor, kind: str = "modulus") -> Tensor:
    r"""Complex-to-real readout of the last dimension.

    ``"modulus"``: :math:`|z|` (D); ``"re_im"``: :math:`[\Re z, \Im z]` (2D);
    ``"squared_modulus"``: :math:`|z|^2` (D). A real ``z`` is returned unchanged
    (the real baselines need no readout).

    Parameters
    ----------
    z : Tensor, shape (..., D)

    Returns
    -------
    Tensor, real, shape (..., D) or (..., 2D)
    """
    if kind not in READOUTS:
        raise ValueError(f"unknown readout {kind!r}; choose from {READOUTS}")
    if not z.is_complex():
        return z
    if kind == "modulus":
        return z.abs()
    if kind == "squared_modulus":
        return z.real ** 2 + z.imag ** 2
    return torch.cat([z.real, z.imag], dim=-1)


def readout_dim(kind: str, dim: int, is_complex: bool) -> int:
    """Width of :func:`readout` for ``dim`` inputs."""
    if kind not in READOUTS:
        raise ValueError(f"unknown readout {kind!r}; choose from {READOUTS}")
    return 2 * dim if (is_complex and kind == "re_im") else dim


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    r"""Mean over the real tokens: (B, L, D), bool (B, L) -> (B, D) (zero for an empty row)."""
    m = mask.to(real_dtype_of(x.dtype)).unsqueeze(-1)
    return (x * m).sum(-2) / m.sum(-2).clamp_min(1)


def masked_max(x: Tensor, valid: Tensor) -> Tensor:
    r"""Per-part max over the valid steps: (B, T, D), bool (B, T) -> (B, D).

    Real and imaginary parts are max-pooled separately (the paper's split
    activations act per part). Rows without a valid step give 0.
    """
    def pool(t):
        neg = torch.finfo(t.dtype).min
        out = t.masked_fill(~valid.unsqueeze(-1), neg).amax(-2)
        return torch.where(valid.any(-1, keepdim=True), out, torch.zeros_like(out))
    if x.is_complex():
        return torch.complex(pool(x.real), pool(x.imag))
    return pool(x)


def hermitian_attention_scores(q: Tensor, k: Tensor) -> Tensor:
    r"""Paper eq. 14: :math:`e_{ij} = \sqrt{(\Re(z)^2 + \Im(z)^2)/n} = |z_{ij}|/\sqrt{n}`, :math:`z = q_i k_j^\dagger`.

    :math:`n` is the head dimension (the role of :math:`\sqrt{d_k}` in Vaswani
    et al.); :math:`q_i k_j^\dagger = \sum_d q_{id} \overline{k_{jd}}`.
    For real ``q, k`` the ordinary scaled dot product :math:`q_i \cdot k_j / \sqrt{n}`.

    Parameters
    ----------
    q, k : Tensor, shape (..., Lq, n), (..., Lk, n)

    Returns
    -------
    Tensor, real, shape (..., Lq, Lk)
    """
    n = q.shape[-1]
    z = q @ k.conj().transpose(-1, -2) if q.is_complex() else q @ k.transpose(-1, -2)
    return (z.abs() if z.is_complex() else z) / math.sqrt(n)


# ----------------------------------------------------------------------------------------------- layers

def _init_weight(shape, fan_in: int, dtype: torch.dtype, generator=None) -> Tensor:
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) per entry; each part scaled by 1/sqrt(2) for complex."""
    real = real_dtype_of(dtype)
    bound = 1 / math.sqrt(max(fan_in, 1))
    draw = lambda: (torch.rand(shape, dtype=real, generator=generator) * 2 - 1) * bound  # noqa: E731
    if dtype.is_complex:
        return torch.complex(draw(), draw()) / math.sqrt(2)
    return draw()


class ComplexLinear(nn.Module):
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
        if in_features < 1 or out_features < 1:
            raise ValueError(f"features must be >= 1; got {in_features}, {out_features}")
        if share_parts and not dtype.is_complex:
            raise ValueError("share_parts=True needs a complex dtype")
        self.in_features, self.out_features, self.share_parts, self.dtype = in_features, out_features, \
            share_parts, dtype
        pdtype = real_dtype_of(dtype) if share_parts else dtype
        self.weight = nn.Parameter(_init_weight((out_features, in_features), in_features, pdtype, generator))
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=pdtype)) if bias else None

    def effective_weight(self) -> tuple[Tensor, Tensor | None]:
        """The complex (or real) weight (out, in) and bias (out,) actually applied."""
        if not self.share_parts:
            return self.weight, self.bias
        one_i = torch.tensor(1 + 1j, dtype=self.dtype, device=self.weight.device)
        return self.weight * one_i, None if self.bias is None else self.bias * one_i

    def forward(self, x: Tensor) -> Tensor:
        x = _check_input(x, self.dtype, self.in_features)
        w, b = self.effective_weight()
        return F.linear(x, w, b)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, share_parts={self.share_parts}, dtype={self.dtype}"


class ComplexConv1d(nn.Module):
    r"""Narrow 1-d convolution over a sequence with complex kernels (Trabelsi et al., 2017; paper app. B).

    :math:`y_t = \sum_{s=0}^{k-1} W_s x_{t+s} + b`, :math:`t = 0..L-k`.

    Parameters
    ----------
    in_channels, out_channels, kernel_size : int
    share_parts : bool
        :math:`\Re W = \Im W` as in :class:`ComplexLinear`.
    dtype : torch.dtype

    Shapes: ``(B, L, in_channels) -> (B, L - k + 1, out_channels)`` (channels last, like the rest of the package).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, share_parts: bool = False,
                 dtype: torch.dtype = torch.complex64, generator: torch.Generator | None = None) -> None:
        super().__init__()
        _check_dtype(dtype)
        if min(in_channels, out_channels, kernel_size) < 1:
            raise ValueError(f"channels and kernel_size must be >= 1; got {in_channels}, {out_channels}, {kernel_size}")
        if share_parts and not dtype.is_complex:
            raise ValueError("share_parts=True needs a complex dtype")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.share_parts, self.dtype = share_parts, dtype
        pdtype = real_dtype_of(dtype) if share_parts else dtype
        self.weight = nn.Parameter(_init_weight((out_channels, in_channels, kernel_size), in_channels * kernel_size,
                                                pdtype, generator))
        self.bias = nn.Parameter(torch.zeros(out_channels, dtype=pdtype))

    def forward(self, x: Tensor) -> Tensor:
        x = _check_input(x, self.dtype, self.in_channels)
        if x.shape[-2] < self.kernel_size:
            raise ValueError(f"sequence length {x.shape[-2]} is shorter than the kernel ({self.kernel_size})")
        w, b = self.weight, self.bias
        if self.share_parts:
            one_i = torch.tensor(1 + 1j, dtype=self.dtype, device=w.device)
            w, b = w * one_i, b * one_i
        return F.conv1d(x.transpose(-1, -2), w, b).transpose(-1, -2)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, dtype={self.dtype}"


class ComplexLSTMCell(nn.Module):
    r"""Complex LSTM cell with the paper's split gates (app. B, "complex-valued gates ... as in (12)").

    .. math::

        [a_i, a_f, a_o, a_g] &= W_x x_t + W_h h_{t-1} + b \\
        i, f, o &= \sigma(\Re a) + i\,\sigma(\Im a), \qquad g = \tanh(\Re a_g) + i \tanh(\Im a_g) \\
        c_t &= f \circ c_{t-1} + i \circ g, \qquad h_t = o \circ \tanh_\text{split}(c_t)

    where :math:`\circ` is the per-part product (:func:`part_mul`), so each
    part of the state is gated like a real LSTM while the complex matmuls mix
    the parts. With a real dtype this is the standard LSTM cell.

    Shapes: ``x (B, in), (h, c) (B, hidden) -> (h, c)``.
    """

    def __init__(self, input_size: int, hidden_size: int, *, dtype: torch.dtype = torch.complex64,
                 share_parts: bool = False, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.dtype = input_size, hidden_size, _check_dtype(dtype)
        self.input_proj = ComplexLinear(input_size, 4 * hidden_size, dtype=dtype, share_parts=share_parts,
                                        generator=generator)
        self.hidden_proj = ComplexLinear(hidden_size, 4 * hidden_size, bias=False, dtype=dtype,
                                         share_parts=share_parts, generator=generator)

    def step(self, xp: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """One step from the projected input ``xp = input_proj(x)`` (B, 4 hidden)."""
        h, c = state
        a_i, a_f, a_o, a_g = (xp + self.hidden_proj(h)).chunk(4, dim=-1)
        i, f, o = (split_activation(a, "sigmoid") for a in (a_i, a_f, a_o))
        c = part_mul(f, c) + part_mul(i, split_activation(a_g, "tanh"))
        return part_mul(o, split_activation(c, "tanh")), c

    def initial_state(self, batch: int, like: Tensor) -> tuple[Tensor, Tensor]:
        z = like.new_zeros(batch, self.hidden_size)
        return z, z

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        xp = self.input_proj(x)
        state = self.initial_state(x.shape[0], xp) if state is None else state
        return self.step(xp, state)


class URNNCell(nn.Module):
    r"""uRNN-style cell (Arjovsky et al., 2016): :math:`h_t = \operatorname{modReLU}(W h_{t-1} + V x_t + b)`.

    :math:`W = \exp(S - S^\dagger)` is unitary by construction (orthogonal for
    a real dtype); :math:`\operatorname{modReLU}(z) = \operatorname{ReLU}(|z| + \beta)\, z/|z|`
    with a trainable real bias :math:`\beta` (0 at :math:`z = 0`).

    Shapes: ``x (B, in), h (B, hidden) -> h (B, hidden)``.
    """

    def __init__(self, input_size: int, hidden_size: int, *, dtype: torch.dtype = torch.complex64,
                 share_parts: bool = False, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.dtype = input_size, hidden_size, _check_dtype(dtype)
        self.input_proj = ComplexLinear(input_size, hidden_size, dtype=dtype, share_parts=share_parts,
                                        generator=generator)
        self.skew = nn.Parameter(_init_weight((hidden_size, hidden_size), hidden_size, dtype, generator))
        self.modrelu_bias = nn.Parameter(torch.full((hidden_size,), -0.01, dtype=real_dtype_of(dtype)))

    def transition(self) -> Tensor:
        """The unitary (orthogonal) :math:`W = \\exp(S - S^\\dagger)`, (hidden, hidden)."""
        return torch.linalg.matrix_exp(self.skew - self.skew.mH)

    def _modrelu(self, z: Tensor) -> Tensor:
        mod = z.abs()
        scale = torch.relu(mod + self.modrelu_bias) / torch.where(mod > 0, mod, torch.ones_like(mod))
        return z * scale

    def step(self, xp: Tensor, h: Tensor, w: Tensor | None = None) -> Tensor:
        w = self.transition() if w is None else w
        return self._modrelu(h @ w.transpose(-1, -2) + xp)

    def initial_state(self, batch: int, like: Tensor) -> Tensor:
        return like.new_zeros(batch, self.hidden_size)

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        xp = self.input_proj(x)
        h = self.initial_state(x.shape[0], xp) if h is None else h
        return self.step(xp, h)


class ComplexRNN(nn.Module):
    r"""A :class:`ComplexLSTMCell` (``cell="lstm"``) or :class:`URNNCell` (``cell="urnn"``) over masked sequences.

    At a padded step the state is carried over unchanged, so padding anywhere
    never changes ``h_last``.

    Shapes: ``x (B, T, in), mask (B, T) -> outputs (B, T, hidden), h_last (B, hidden)``.
    """

    CELLS = ("lstm", "urnn")

    def __init__(self, input_size: int, hidden_size: int, *, cell: str = "lstm",
                 dtype: torch.dtype = torch.complex64, share_parts: bool = False,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if cell not in self.CELLS:
            raise ValueError(f"cell must be one of {self.CELLS}; got {cell!r}")
        self.kind = cell
        cls = ComplexLSTMCell if cell == "lstm" else URNNCell
        self.cell = cls(input_size, hidden_size, dtype=dtype, share_parts=share_parts, generator=generator)
        self.hidden_size, self.dtype = hidden_size, dtype

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        if x.ndim != 3:
            raise ValueError(f"x must have shape (B, T, {self.cell.input_size}); got {tuple(x.shape)}")
        bsz, steps = x.shape[:2]
        if mask is not None and (mask.dtype != torch.bool or mask.shape != (bsz, steps)):
            raise ValueError(f"mask must be a bool tensor of shape {(bsz, steps)}; "
                             f"got {mask.dtype} {tuple(mask.shape)}")
        xp = self.cell.input_proj(x)
        state = self.cell.initial_state(bsz, xp)
        w = self.cell.transition() if self.kind == "urnn" else None
        outputs = []
        for t in range(steps):
            new = self.cell.step(xp[:, t], state, w) if w is not None else self.cell.step(xp[:, t], state)
            if mask is not None:
                m = mask[:, t].unsqueeze(-1)
                new = torch.where(m, new, state) if w is not None else \
                    tuple(torch.where(m, a, b) for a, b in zip(new, state))
            state = new
            outputs.append(state if w is not None else state[0])
        h_last = state if w is not None else state[0]
        out = torch.stack(outputs, 1) if outputs else xp.new_zeros(bsz, 0, self.hidden_size)
        return out, h_last


class ComplexMultiheadSelfAttention(nn.Module):
    r"""Multi-head self-attention with the paper's eq. 13-14.

    .. math::

        e_{ij} = \frac{|q_i k_j^\dagger|}{\sqrt{n}}, \quad
        a_{ij} = \operatorname{softmax}_j(e_{ij}), \quad
        \mathrm{out}_i = \sum_j a_{ij}\, v_j

    per head (:math:`q = x W^Q`, :math:`k = x W^K`, :math:`v = x W^V`
    complex, :math:`n` the head dimension), heads concatenated and mixed by a
    complex :math:`W^O`. Padded keys get zero weight. For a real dtype, the
    standard scaled dot-product attention.

    The paper writes :math:`a_{ij} = \mathrm{softmax}\, e_{ij} / \sum_i e_{ij}`;
    we read it as the usual softmax of :math:`e_{ij}` over the keys :math:`j`
    (an extra division by a sum of moduli would only rescale the logits per
    key and is not a normalisation over :math:`j`). The scores are real and
    non-negative, and invariant under a global phase of the input when the
    query/key biases vanish (tested).

    Parameters
    ----------
    dim, heads : int
        ``dim`` divisible by ``heads``.
    share_parts : bool
        :math:`\Re W^{Q/K/V} = \Im W^{Q/K/V}` (paper Table 4).
    dropout : float
        On the attention weights.

    Shapes: ``x (B, L, dim), mask (B, L) -> (B, L, dim)``.
    """

    def __init__(self, dim: int, heads: int, *, share_parts: bool = False, dropout: float = 0.0,
                 dtype: torch.dtype = torch.complex64, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if heads < 1 or dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1); got {dropout}")
        self.dim, self.heads, self.dropout, self.dtype = dim, heads, dropout, _check_dtype(dtype)
        make = lambda: ComplexLinear(dim, dim, dtype=dtype, share_parts=share_parts, generator=generator)  # noqa
        self.q, self.k, self.v, self.out = make(), make(), make(), make()

    def attention_weights(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Attention weights (B, heads, L, L), rows summing to one over the unmasked keys."""
        return self._attend(x, mask)

    def _split(self, t: Tensor) -> Tensor:
        b, l, _ = t.shape
        return t.view(b, l, self.heads, self.dim // self.heads).transpose(1, 2)

    def _attend(self, x: Tensor, mask: Tensor | None) -> Tensor:
        q, k = (self._split(lin(x)) for lin in (self.q, self.k))
        scores = hermitian_attention_scores(q, k)  # (B, H, L, L), real
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, None, :], torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        if x.ndim != 3:
            raise ValueError(f"x must have shape (B, L, {self.dim}); got {tuple(x.shape)}")
        v = self._split(self.v(x))
        a = self._attend(x, mask)
        a = F.dropout(a, self.dropout, self.training)
        out = a.to(v.dtype) @ v  # (B, H, L, n)
        b, _, l, _ = out.shape
        return self.out(out.transpose(1, 2).reshape(b, l, self.dim))


class ComplexFeedForward(nn.Module):
    r"""Position-wise feed-forward block :math:`W_2\, f(W_1 z + b_1) + b_2` with the per-part activation :math:`f`.

    Shapes: ``(..., dim) -> (..., dim)``.
    """

    def __init__(self, dim: int, hidden: int, *, activation: str = "relu", dropout: float = 0.0,
                 share_parts: bool = False, dtype: torch.dtype = torch.complex64,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {sorted(ACTIVATIONS)}")
        self.activation = activation
        self.lin1 = ComplexLinear(dim, hidden, dtype=dtype, share_parts=share_parts, generator=generator)
        self.lin2 = ComplexLinear(hidden, dim, dtype=dtype, share_parts=share_parts, generator=generator)
        self.dropout = ComplexDropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.lin2(self.dropout(split_activation(self.lin1(x), self.activation)))


class PartLayerNorm(nn.Module):
    r"""Layer normalisation of the real and imaginary parts separately, each with its own affine map.

    The paper normalises the parts separately (it uses batch normalisation;
    layer normalisation is used here so that padding in the batch cannot
    influence any output). For a real dtype, an ordinary ``nn.LayerNorm``.

    Shapes: ``(..., dim) -> (..., dim)``.
    """

    def __init__(self, dim: int, *, eps: float = 1e-5, dtype: torch.dtype = torch.complex64) -> None:
        super().__init__()
        self.dtype = _check_dtype(dtype)
        real = real_dtype_of(dtype)
        self.norm_re = nn.LayerNorm(dim, eps=eps, dtype=real)
        self.norm_im = nn.LayerNorm(dim, eps=eps, dtype=real) if dtype.is_complex else None

    def forward(self, x: Tensor) -> Tensor:
        if self.norm_im is None:
            return self.norm_re(x)
        return torch.complex(self.norm_re(x.real), self.norm_im(x.imag))


class ComplexDropout(nn.Module):
    """Module form of :func:`complex_dropout` (one real mask for both parts)."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"dropout probability must be in [0, 1); got {p}")
        self.p = p

    def forward(self, z: Tensor) -> Tensor:
        return complex_dropout(z, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Readout(nn.Module):
    """Module form of :func:`readout`."""

    def __init__(self, kind: str = "modulus") -> None:
        super().__init__()
        if kind not in READOUTS:
            raise ValueError(f"unknown readout {kind!r}; choose from {READOUTS}")
        self.kind = kind

    def forward(self, z: Tensor) -> Tensor:
        return readout(z, self.kind)

    def extra_repr(self) -> str:
        return f"{self.kind!r}"
