r"""Complex-order word embeddings (Wang et al., ICLR 2020) and the baselines they are compared with.

The general complex-order embedding (paper eq. 5; thesis ch. 4.1) maps a word
index :math:`j` and a position :math:`\mathrm{pos}` to :math:`\mathbb{C}^D`:

.. math::

    f(j, \mathrm{pos})_d = r_{j,d}\, e^{i(\omega_{j,d}\,\mathrm{pos} + \theta_{j,d})}
    = \underbrace{r_{j,d}}_{g_{we}(j)_d}\;
      \underbrace{e^{i(\omega_{j,d}\mathrm{pos} + \theta_{j,d})}}_{g_{pe}(j, \mathrm{pos})_d}

with amplitudes :math:`r`, frequencies :math:`\omega` (period
:math:`2\pi/\omega`) and optional initial phases :math:`\theta` (paper eq. 6:
an element-wise product of a word embedding and a "pure" position embedding).
Properties (tested with hypothesis in ``tests/nn/test_position.py``):

* position-free offset transformation:
  :math:`f(j, \mathrm{pos} + n) = w_j(n) \odot f(j, \mathrm{pos})` with
  :math:`w_j(n) = e^{i\omega_j n}` independent of :math:`\mathrm{pos}`;
* boundedness: :math:`|f(j, \mathrm{pos})_d| = |r_{j,d}|` for every position;
* :math:`\langle g_{pe}(j, p), g_{pe}(j, q)\rangle = \sum_d e^{i\omega_{j,d}(q - p)}`
  depends only on the distance :math:`q - p`;
* appendix A: the sinusoidal encoding of Vaswani et al. (TPE) is the pair
  (Im, Re) of the word-sharing position code with
  :math:`\omega_{\cdot,k} = 10000^{-2k/d_\text{model}}`.

Sharing schemes (paper Table 4), for frequencies and, separately, amplitudes:

===============  ===============================  ==========================
scheme           frequency                        amplitude
===============  ===============================  ==========================
``"none"``       :math:`\omega_{j,d}` (V, D)      :math:`r_{j,d}` (V, D)
``"word"``       :math:`\omega_{\cdot,d}` (D,)    :math:`r_{\cdot,d}` (D,)
``"dimension"``  :math:`\omega_{j,\cdot}` (V, 1)  :math:`r_{j,\cdot}` (V, 1)
===============  ===============================  ==========================

Frequency initialisation (``frequency_init``):

* ``"sinusoidal"`` (default): :math:`\omega_{\cdot, k} = 10000^{-2k/(2D)}` (the TPE
  frequencies of a real model of width :math:`2D`, appendix A), the same for
  every word; with dimension sharing, word :math:`j` gets :math:`10000^{-1/2}`
  (the median TPE frequency). Chosen as the default on dev accuracy: on MR
  fold 1 and TREC (seed 0) it beat ``"normal"`` for FastText and CNN
  (dev 0.767 vs 0.665 and 0.811 vs 0.782 for FastText), because most
  frequencies start slow and pooled phases do not cancel before training
  (``benchmarks/results/complex_order/README.md``).
* ``"normal"``: :math:`\omega \sim \mathcal{N}(0, s^2)` with
  ``frequency_scale`` :math:`s = 1`; this is what the authors' appendix C code
  does (a default ``torch.nn.Embedding``): with :math:`|\omega| \approx 1`
  rad/token the phases of a sentence are scrambled from the start. Negative
  frequencies are allowed (the paper's :math:`\delta_j` uses :math:`|\omega|`
  for that reason).
* ``"uniform"``: :math:`\omega \sim U(-s, s)`.
* ``"zero"``: :math:`\omega = 0` (starts as complex-vanilla without phase).

Positions default to :math:`0, 1, \dots, L-1` counted over real tokens
(``cumsum(mask) - 1``), so padding anywhere never shifts positions. The
authors' code counts from 1; by the offset property this is the per-word phase
:math:`e^{i\omega_j}`, absorbed by :math:`\theta`. Explicit positions may be
non-integer (the thesis' inserted tokens): every variant except the lookup
table ``"pe"`` accepts them.

The five variants of the paper's Table 2 share one interface (:func:`make_embedding`):

``"none"``
    real word embedding, no position information;
``"pe"``
    real word embedding + trainable position embedding (Gehring et al., 2017);
``"tpe"``
    real word embedding + fixed sinusoidal encoding (Vaswani et al., 2017, eq. 7);
``"complex_vanilla"``
    :math:`r_{j,d} e^{i\theta_{j,d}}`, :math:`\theta \sim U(-\pi, \pi)`, no position (Wang et al., 2019);
``"complex_order"``
    :math:`r_{j,d} e^{i(\omega_{j,d}\mathrm{pos} + \theta_{j,d})}` (phases optional, off by default as in the paper's
    Table 2 setting).

Every module has ``forward(ids (B, L), mask (B, L), positions=None) -> (B, L, D)``
(real for the first three, complex for the last two; ``mask`` is a required bool
tensor, True at words, as for every model), an ``is_complex`` flag, a ``dim``,
and returns exact zeros at padded positions.

The functions on plain tensors (:func:`complex_order_embedding`, the sinusoidal encoding, the default positions)
live in :mod:`qpnlp.nn.position_functional`; this module re-exports them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from qpnlp._checks import check_flag
from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp.data.vocab import PAD_ID
from qpnlp.hilbert import _validation as V

from ._checks import check_dropout, check_ids, check_int, check_mask, check_table_dtype
from ._embedding_options import FREQUENCY_INITS, SHARING_SCHEMES, check_embedding_options, check_frequency_scale
from ._tables import lookup_table
from .embedding import _initial_amplitude, _run, _sparse_backward
from .functional import complex_dropout, dropout_keep, masked_mean
from .position_functional import (TPE_BASE, complex_order_embedding, default_positions,  # noqa: F401
                                  sinusoidal_frequencies, sinusoidal_position_encoding)
from .position_mean import complex_order_mean

__all__ = [
    "EMBEDDING_KINDS",
    "SHARING_SCHEMES",
    "FREQUENCY_INITS",
    "complex_order_embedding",
    "sinusoidal_frequencies",
    "sinusoidal_position_encoding",
    "default_positions",
    "ComplexOrderEmbedding",
    "RealPositionalEmbedding",
    "make_embedding",
]

#: The position encodings of :func:`make_embedding` (``kind=``).
EMBEDDING_KINDS = ("none", "pe", "tpe", "complex_vanilla", "complex_order")


# ----------------------------------------------------------------------------------------------- helpers

def _check_ids_mask(ids: Tensor, mask: Tensor, num_words: int) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.shape != getattr(ids, "shape", None):
        got = f"{mask.dtype} {tuple(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a bool tensor of shape {tuple(getattr(ids, 'shape', ()))} (True at words); "
                         f"got {got}")
    check_ids(ids, num_words)            # ValueError naming the max id and the vocabulary size
    check_mask(mask, ids)
    return mask


def _rows(ids: Tensor, *tables: nn.Embedding | Tensor | None) -> tuple[Tensor | None, ...]:
    """The rows ``ids`` of each table: an embedding's rows, a shared parameter as it is, None for no table.

    Where they record a sparse backward, the lookups run outside torch.compile's graph
    (``qpnlp.nn.embedding._run``), as the word embeddings' do: AOT autograd cannot trace it.
    """
    if _sparse_backward(*(t for t in tables if isinstance(t, nn.Embedding))):
        return _run(_each_table_rows, ids, tables)
    return _each_table_rows(ids, tables)


def _each_table_rows(ids: Tensor, tables) -> tuple[Tensor | None, ...]:
    return tuple(t(ids) if isinstance(t, nn.Embedding) else t for t in tables)


def _resolve_positions(ids: Tensor, mask: Tensor, positions: Tensor | None, dtype) -> Tensor:
    if positions is None:
        return default_positions(ids, mask, dtype)
    if isinstance(positions, Tensor):           # never copied to the ids' device silently
        V.check_same_device(("ids", ids), ("positions", positions))
    positions = torch.as_tensor(positions, device=ids.device)
    if positions.dtype == torch.bool or positions.is_complex():     # read as 0/1, or the imaginary part dropped
        raise TypeError(f"positions must be real numbers; got {positions.dtype}")
    if positions.ndim == 1 and positions.shape[0] == ids.shape[-1]:
        positions = positions.expand(ids.shape)
    if positions.shape != ids.shape:
        raise ValueError(f"positions must have shape (L,) or {tuple(ids.shape)}; got {tuple(positions.shape)}")
    if V.enabled() and not bool(torch.isfinite(positions.to(dtype)).all()):
        raise ValueError(f"positions contain NaN or inf (shape {tuple(positions.shape)})")
    return positions.to(dtype)


def _amplitude_table(num_words: int, dim: int, sharing: str, pretrained: Tensor | None, sparse: bool, freeze: bool,
                     dtype: torch.dtype, generator: torch.Generator | None) -> nn.Embedding | nn.Parameter:
    r"""The amplitudes :math:`r` of a Table 4 ``sharing`` scheme: a (V, D) table (``pretrained`` or
    :math:`\mathcal{N}(0, 1/D)`), a shared (D,) vector of :math:`1/\sqrt{D}`, or a (V, 1) table of ones; the
    tables' padding row is zero. ``freeze`` keeps them at these values."""
    if sharing == "none":
        amp = _initial_amplitude(num_words, dim, pretrained, dtype, generator)
        amp[PAD_ID] = 0
        return lookup_table(num_words, dim, padding_idx=PAD_ID, sparse=sparse, _weight=amp, _freeze=freeze)
    if sharing == "word":
        return nn.Parameter(torch.full((dim,), 1 / math.sqrt(dim), dtype=dtype), requires_grad=not freeze)
    amp = torch.ones(num_words, 1, dtype=dtype)
    amp[PAD_ID] = 0
    return lookup_table(num_words, 1, padding_idx=PAD_ID, sparse=sparse, _weight=amp, _freeze=freeze)


# ----------------------------------------------------------------------------------------------- modules

class ComplexOrderEmbedding(ComplexPrecisionMixin, nn.Module):
    r"""General complex-order embedding :math:`f(j, \mathrm{pos}) = r_j e^{i(\omega_j \mathrm{pos} + \theta_j)}`.

    Parameters
    ----------
    num_words : int
        Vocabulary size V (PAD id 0 and UNK id 1 included).
    dim : int
        Complex dimension D.
    pretrained : Tensor, optional
        Real (V, D) initial amplitudes (``amplitude_sharing="none"`` only);
        otherwise :math:`\mathcal{N}(0, 1/D)`.
    frequency_sharing : {"none", "word", "dimension", None}
        Table 4 scheme for :math:`\omega` (see the module docstring). ``None``
        drops the position term: complex-vanilla :math:`r e^{i\theta}`.
    amplitude_sharing : {"none", "word", "dimension"}
        Table 4 scheme for :math:`r`. Shared amplitudes start at
        :math:`1/\sqrt{D}` (word) or 1 (dimension) in absolute value.
    initial_phase : bool
        Train per-word phases :math:`\theta_{j,d}` (uniform in :math:`[-\pi, \pi)`);
        ``False`` fixes them at zero (the paper's main setting).
    frequency_init : {"sinusoidal", "normal", "uniform", "zero"}
        Initial frequencies (default ``"sinusoidal"``; see the module docstring).
    frequency_scale : float
        :math:`s` of the normal/uniform initialisations.
    sparse : bool
        Sparse gradients for the (V, ·) tables (the trainer then uses SparseAdam).
    freeze_amplitude : bool
        Keep the amplitudes (table or shared vector) at their initial values.
    dtype : torch.dtype
        float32 (complex64 output) or float64 (complex128).
    generator : torch.Generator, optional
        Seeds the initial values (the global random state is untouched), in this order: the amplitude table
        (``amplitude_sharing="none"`` without ``pretrained``), the ``"normal"``/``"uniform"`` frequencies, the
        phases :math:`\theta`. None: the global generator.

    Examples
    --------
    >>> emb = ComplexOrderEmbedding(10, 4, generator=torch.Generator().manual_seed(0))
    >>> ids = torch.tensor([[2, 3, 0]])
    >>> z = emb(ids, ids != 0)
    >>> z.shape, z.dtype, bool((z[0, 2] == 0).all())
    (torch.Size([1, 3, 4]), torch.complex64, True)
    """

    is_complex = True

    def __init__(self, num_words: int, dim: int, *, pretrained: Tensor | None = None,
                 frequency_sharing: str | None = "none", amplitude_sharing: str = "none",
                 initial_phase: bool = False, frequency_init: str = "sinusoidal", frequency_scale: float = 1.0,
                 sparse: bool = True, freeze_amplitude: bool = False, dtype: torch.dtype = torch.float32,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        num_words, dim = check_int("num_words", num_words), check_int("dim", dim)
        if num_words < 2 or dim < 1:
            raise ValueError(f"need num_words >= 2 (padding and unknown) and dim >= 1; got {num_words}, {dim}")
        if frequency_sharing is not None and frequency_sharing not in SHARING_SCHEMES:
            raise ValueError(f"frequency_sharing must be one of {SHARING_SCHEMES} or None; got {frequency_sharing!r}")
        if amplitude_sharing not in SHARING_SCHEMES:
            raise ValueError(f"amplitude_sharing must be one of {SHARING_SCHEMES}; got {amplitude_sharing!r}")
        if frequency_init not in FREQUENCY_INITS:
            raise ValueError(f"frequency_init must be one of {FREQUENCY_INITS}; got {frequency_init!r}")
        frequency_scale = check_frequency_scale("frequency_scale", frequency_scale)
        initial_phase, sparse, freeze_amplitude = (check_flag(n, v) for n, v in (
            ("initial_phase", initial_phase), ("sparse", sparse), ("freeze_amplitude", freeze_amplitude)))
        check_table_dtype(dtype)
        if pretrained is not None and amplitude_sharing != "none":
            raise ValueError("pretrained amplitudes need amplitude_sharing='none' (one vector per word); "
                             f"got {amplitude_sharing!r}")
        self.num_words, self.dim = num_words, dim
        self.frequency_sharing, self.amplitude_sharing = frequency_sharing, amplitude_sharing
        self.frequency_init, self.has_initial_phase = frequency_init, initial_phase
        # the random draws in the documented order: amplitudes, frequencies, phases
        self.amplitude = _amplitude_table(num_words, dim, amplitude_sharing, pretrained, sparse, freeze_amplitude,
                                          dtype, generator)
        self.frequency = None if frequency_sharing is None else self._frequency_table(
            num_words, dim, frequency_sharing, frequency_init, frequency_scale, sparse, dtype, generator)
        self.phase = None
        if initial_phase or frequency_sharing is None:  # complex-vanilla always has phases: it is r e^{i theta}
            theta = (torch.rand(num_words, dim, dtype=dtype, generator=generator) * 2 - 1) * math.pi
            theta[PAD_ID] = 0
            self.phase = lookup_table(num_words, dim, padding_idx=PAD_ID, sparse=sparse, _weight=theta)

    @classmethod
    def _frequency_table(cls, num_words: int, dim: int, sharing: str, init: str, scale: float, sparse: bool,
                         dtype: torch.dtype, generator: torch.Generator | None) -> nn.Embedding | nn.Parameter:
        r"""The trainable :math:`\omega` of a Table 4 ``sharing`` scheme: a shared (D,) parameter (``"word"``), or a
        (V, D) or (V, 1) table with a zero padding row; ValueError where ``scale`` overflows ``dtype``."""
        shape = {"none": (num_words, dim), "word": (dim,), "dimension": (num_words, 1)}[sharing]
        omega = cls._initial_frequency(shape, sharing, init, scale, dtype, generator)
        if not bool(torch.isfinite(omega).all()):       # once, at construction
            raise ValueError(f"frequency_scale {scale:g} overflows {dtype} (initial frequencies are infinite); use "
                             f"a smaller scale")
        if sharing == "word":
            return nn.Parameter(omega)
        omega[PAD_ID] = 0
        return lookup_table(*shape, padding_idx=PAD_ID, sparse=sparse, _weight=omega)

    @staticmethod
    def _initial_frequency(shape, sharing, init, scale, dtype, generator) -> Tensor:
        if init == "normal":
            return torch.randn(shape, dtype=dtype, generator=generator) * scale
        if init == "uniform":
            return (torch.rand(shape, dtype=dtype, generator=generator) * 2 - 1) * scale
        if init == "zero":
            return torch.zeros(shape, dtype=dtype)
        if sharing == "dimension":  # one frequency per word
            return torch.full(shape, TPE_BASE ** -0.5, dtype=dtype)
        return sinusoidal_frequencies(shape[-1], dtype=dtype).expand(shape).clone()

    @property
    def encodes_positions(self) -> bool:
        return self.frequency is not None

    @property
    def dtype(self) -> torch.dtype:
        a = self.amplitude
        return (a.weight if isinstance(a, nn.Embedding) else a).dtype

    def frequencies(self, ids: Tensor) -> Tensor:
        r"""Frequencies :math:`\omega_j` broadcastable to (..., D); zero for complex-vanilla."""
        if self.frequency is None:
            return torch.zeros((), dtype=self.dtype, device=ids.device)
        return _rows(ids, self.frequency)[0]

    def frequency_table(self) -> Tensor:
        r"""Dense :math:`\omega` of the whole vocabulary, real (V, D) (for interpretation; detached)."""
        ids = torch.arange(self.num_words, device=self.amplitude_table().device)
        return self.frequencies(ids).detach().expand(self.num_words, self.dim).clone()

    def amplitude_table(self) -> Tensor:
        """Dense amplitudes of the whole vocabulary, real (V, D) (detached)."""
        a = self.amplitude
        w = a.weight if isinstance(a, nn.Embedding) else a
        return w.detach().expand(self.num_words, self.dim).clone()

    def offset_transform(self, ids: Tensor, n: float | Tensor) -> Tensor:
        r"""The position-free offset :math:`w_j(n) = e^{i\omega_j n}`, complex (..., D).

        :math:`f(j, \mathrm{pos} + n) = w_j(n) \odot f(j, \mathrm{pos})` for every ``pos``.
        """
        omega = self.frequencies(ids)
        n = torch.as_tensor(n, dtype=self.dtype, device=ids.device)
        shape = torch.broadcast_shapes(ids.shape + (self.dim,), omega.shape)
        return torch.polar(torch.ones(shape, dtype=self.dtype, device=ids.device),
                           (omega * n.unsqueeze(-1) if n.ndim else omega * n).expand(shape))

    def position_code(self, ids: Tensor, positions: Tensor) -> Tensor:
        r"""The "pure" position embedding :math:`g_{pe}(j, \mathrm{pos}) = e^{i(\omega_j \mathrm{pos} + \theta_j)}`.

        ids (...,), positions (...,) -> complex (..., D).
        """
        omega = self.frequencies(ids)
        theta = None if self.phase is None else self.phase(ids)
        ones = torch.ones(ids.shape + (self.dim,), dtype=self.dtype, device=ids.device)
        return complex_order_embedding(ones, omega if self.encodes_positions else None,
                                       positions.to(self.dtype), theta)

    def forward(self, ids: Tensor, mask: Tensor, positions: Tensor | None = None) -> Tensor:
        r"""Embed a batch.

        Parameters
        ----------
        ids : LongTensor, shape (B, L)
        mask : BoolTensor, shape (B, L)
            True at real tokens (explicit, as for every model). Masked entries are exactly 0.
        positions : Tensor, shape (L,) or (B, L), optional
            Real positions (non-integer allowed); default ``cumsum(mask) - 1``.

        Returns
        -------
        Tensor, complex, shape (B, L, D)
        """
        mask = _check_ids_mask(ids, mask, self.num_words)
        r, omega, theta = _rows(ids, self.amplitude, self.frequency, self.phase)
        pos = None
        if self.encodes_positions:
            pos = _resolve_positions(ids, mask, positions, self.dtype)
        z = complex_order_embedding(r, omega, pos, theta, mask)
        return z.expand(ids.shape + (self.dim,))

    def dropped_mean(self, ids: Tensor, mask: Tensor, positions: Tensor | None = None, *,
                     dropout: float = 0.0) -> Tensor:
        r"""``masked_mean(complex_dropout(self(ids, mask, positions), dropout), mask)``: complex (B, D).

        The FastText classifier's first steps. With per-word tables of width D (no sharing) and outside
        torch.compile, one fused autograd function (:func:`qpnlp.nn.position_mean.complex_order_mean`: no complex
        (B, L, D) tensor, coalesced table gradients); otherwise the three steps. The dropout's keep mask is drawn
        by the same call either way (:func:`~qpnlp.nn.functional.dropout_keep`); ``dropout=0`` is no dropout.
        """
        dropout = check_dropout("dropout", dropout)     # named as here on both paths
        if not self.fuses_mean() or getattr(ids, "ndim", None) != 2 or (
                torch.is_grad_enabled() and isinstance(positions, Tensor) and positions.requires_grad):
            # also ids of another shape than (B, L), and positions that need a gradient (the fused function
            # differentiates the tables only)
            return masked_mean(complex_dropout(self(ids, mask, positions), dropout), mask)
        mask = _check_ids_mask(ids, mask, self.num_words)
        pos = _resolve_positions(ids, mask, positions, self.dtype) if self.encodes_positions else None
        keep = dropout_keep(ids.shape + (self.dim,), dropout, self.dtype, ids.device) if dropout else None
        weights = [None if t is None else t.weight for t in (self.amplitude, self.frequency, self.phase)]
        return complex_order_mean(ids, mask, pos, *weights, keep=keep, p=dropout,
                                  padding_idx=self.amplitude.padding_idx, sparse=self.amplitude.sparse)

    def fuses_mean(self) -> bool:
        """Whether :meth:`dropped_mean` runs fused: in eager mode (not while torch.compile traces), with every table
        a plain (V, D) ``nn.Embedding`` (no sharing scheme), one padding row and one gradient layout; not under a
        torch.func transform (it refuses the fused function's ``ctx`` forward)."""
        tables = [t for t in (self.amplitude, self.frequency, self.phase) if t is not None]
        return (not torch.compiler.is_compiling() and not V.in_transform() and len(tables) > 1
                and all(isinstance(t, nn.Embedding) and t.weight.shape == (self.num_words, self.dim)
                        and t.max_norm is None and not t.scale_grad_by_freq and t.sparse == tables[0].sparse
                        and t.padding_idx == tables[0].padding_idx for t in tables))

    def extra_repr(self) -> str:
        return (f"{self.num_words}, {self.dim}, frequency_sharing={self.frequency_sharing!r}, "
                f"amplitude_sharing={self.amplitude_sharing!r}, initial_phase={self.has_initial_phase}, "
                f"frequency_init={self.frequency_init!r}")


class RealPositionalEmbedding(ComplexPrecisionMixin, nn.Module):
    r"""Real baselines: word embedding plus an optional additive position embedding.

    .. math::

        E(j, \mathrm{pos}) = WE_j + PE(\mathrm{pos})

    ``position="none"``: :math:`PE = 0`; ``"pe"``: a trainable (max_len, D)
    table, :math:`\mathcal{N}(0, 1/D)` at start (Gehring et al., 2017);
    ``"tpe"``: the fixed sinusoidal encoding (Vaswani et al., 2017, eq. 7; the
    paper reports that a trainable TPE gives nearly identical results).

    Parameters
    ----------
    num_words, dim : int
    position : {"none", "pe", "tpe"}
    max_len : int
        Rows of the ``"pe"`` table; a real token at position >= max_len raises an error (padding is not looked up).
    pretrained : Tensor, optional
        Real (V, D) initial word vectors; otherwise :math:`\mathcal{N}(0, 1/D)`.
    sparse : bool
        Sparse gradients for the word table (the ``"pe"`` table's are dense).
    dtype : torch.dtype
        float32 or float64, the dtype of the tables and of the output.
    generator : torch.Generator, optional
        Seeds the word table (unless ``pretrained``), then the ``"pe"`` table; None: the global generator.

    Examples
    --------
    >>> emb = RealPositionalEmbedding(10, 4, position="tpe")
    >>> ids = torch.tensor([[2, 0]])
    >>> emb(ids, ids != 0).shape
    torch.Size([1, 2, 4])
    """

    is_complex = False

    def __init__(self, num_words: int, dim: int, *, position: str = "none", max_len: int = 512,
                 pretrained: Tensor | None = None, sparse: bool = True, dtype: torch.dtype = torch.float32,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if position not in ("none", "pe", "tpe"):
            raise ValueError(f"position must be 'none', 'pe' or 'tpe'; got {position!r}")
        num_words, dim, max_len = (check_int(n, v) for n, v in (("num_words", num_words), ("dim", dim),
                                                                ("max_len", max_len)))
        sparse = check_flag("sparse", sparse)
        if num_words < 2 or dim < 1 or max_len < 1:
            raise ValueError(f"need num_words >= 2, dim >= 1, max_len >= 1; got {num_words}, {dim}, {max_len}")
        check_table_dtype(dtype)
        self.num_words, self.dim, self.position, self.max_len = num_words, dim, position, max_len
        w = _initial_amplitude(num_words, dim, pretrained, dtype, generator)
        w[PAD_ID] = 0
        self.word = lookup_table(num_words, dim, padding_idx=PAD_ID, sparse=sparse, _weight=w)
        self.pe = None
        if position == "pe":
            self.pe = nn.Embedding(max_len, dim, _weight=torch.randn(max_len, dim, dtype=dtype,
                                                                     generator=generator) / math.sqrt(dim))

    @property
    def dtype(self) -> torch.dtype:
        return self.word.weight.dtype

    def forward(self, ids: Tensor, mask: Tensor, positions: Tensor | None = None) -> Tensor:
        r"""Embed a batch: ids (B, L), mask (B, L), positions (L,) or (B, L) -> real (B, L, D), 0 at padding."""
        mask = _check_ids_mask(ids, mask, self.num_words)
        x, = _rows(ids, self.word)
        if self.position != "none":
            pos = _resolve_positions(ids, mask, positions, self.dtype).masked_fill(~mask, 0)  # real tokens only
            if self.position == "tpe":
                x = x + sinusoidal_position_encoding(pos, self.dim, dtype=self.dtype)
            else:
                if V.enabled() and not torch.equal(pos, pos.round()):
                    raise ValueError("the trainable position table ('pe') needs integer positions; "
                                     "use 'tpe' or 'complex_order' for non-integer positions")
                if V.enabled() and pos.numel() and bool((pos.min() < 0) | (pos.max() >= self.max_len)):
                    self._raise_position_range(pos, mask, explicit=positions is not None)
                x = x + self.pe(pos.long())
        return x * mask.unsqueeze(-1)

    def _raise_position_range(self, pos: Tensor, mask: Tensor, *, explicit: bool) -> None:
        """The ValueError of a real token's position outside the ``"pe"`` table ``[0, max_len)``.

        The range reported is that of the real tokens' positions (padded slots hold 0 by then); the advice to
        truncate the texts applies to the default positions only (explicit ones are the caller's).
        """
        real = pos[mask]
        where = f"got range [{float(real.min()):g}, {float(real.max()):g}] over the real tokens"
        advice = "pass positions in that range or raise the model's max_len" if explicit else \
            (f"raise the model's max_len, --model-max-len of `qpnlp train`, or truncate the texts to "
             f"{self.max_len} tokens: TrainConfig.max_len, --max-len of `qpnlp train`")
        raise ValueError(f"{'explicit ' if explicit else ''}positions must lie in [0, {self.max_len}) for 'pe'; "
                         f"{where} ({advice})")

    def extra_repr(self) -> str:
        return f"{self.num_words}, {self.dim}, position={self.position!r}"


def make_embedding(kind: str, num_words: int, dim: int, *, pretrained: Tensor | None = None,
                   max_len: int = 512, dtype: torch.dtype = torch.float32,
                   generator: torch.Generator | None = None, **options) -> nn.Module:
    r"""One of the five embedding variants of the paper's Table 2 behind one interface.

    Parameters
    ----------
    kind : {"none", "pe", "tpe", "complex_vanilla", "complex_order"}
    num_words, dim : int
    pretrained : Tensor, optional
        Real (V, D) word vectors: word embedding (real kinds) or amplitudes (complex kinds).
    max_len : int
        Size of the ``"pe"`` table.
    dtype : torch.dtype
        Real dtype of the tables (float32 / float64); complex outputs are complex64 / complex128.
    generator : torch.Generator, optional
        Seeds every initial table of the module (in the order of :class:`RealPositionalEmbedding` or
        :class:`ComplexOrderEmbedding`); None: the global generator.
    **options
        ``"complex_order"`` only: ``frequency_sharing``, ``amplitude_sharing``,
        ``initial_phase``, ``frequency_init``, ``frequency_scale``; all kinds: ``sparse``.
        Checked first (``qpnlp.nn._embedding_options.check_embedding_options``): TypeError for an
        unknown name, an option of another kind or a non-bool flag, ValueError for a bad value.

    Returns
    -------
    nn.Module
        ``forward(ids (B, L), mask (B, L), positions=None) -> (B, L, D)`` (``mask`` required, bool).

    Examples
    --------
    >>> make_embedding("complex_order", 10, 4).is_complex, make_embedding("pe", 10, 4).is_complex
    (True, False)
    """
    if kind not in EMBEDDING_KINDS:
        raise ValueError(f"unknown embedding kind {kind!r}; choose from {EMBEDDING_KINDS}")
    check_embedding_options(kind, options)
    sparse = options.pop("sparse", True)
    if kind in ("none", "pe", "tpe"):
        return RealPositionalEmbedding(num_words, dim, position=kind, max_len=max_len, pretrained=pretrained,
                                       sparse=sparse, dtype=dtype, generator=generator)
    if kind == "complex_vanilla":
        return ComplexOrderEmbedding(num_words, dim, pretrained=pretrained, frequency_sharing=None, sparse=sparse,
                                     dtype=dtype, generator=generator)
    return ComplexOrderEmbedding(num_words, dim, pretrained=pretrained, sparse=sparse, dtype=dtype,
                                 generator=generator, **options)
