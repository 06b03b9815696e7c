r"""Complex word embeddings and the word weights of a sentence mixture.

A word is the pure state :math:`|w\rangle = \frac{r}{\|r\|} e^{i\phi}`
(:class:`ComplexWordEmbedding`, thesis eq. 3.2); a sentence is the mixture
:math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` with the weights
:math:`p_i` of :class:`WordWeighting`.

Padding: id :data:`qpnlp.data.PAD_ID` has a zero row that is never trained;
padded positions must be masked explicitly by the caller.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp._sparse import coalesced_coo
from qpnlp._trig import cos_sin
from qpnlp.data.vocab import PAD_ID
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._linalg import rescaled_norms
from qpnlp.hilbert._operands import first_order_backward
from qpnlp.hilbert import masked_softmax

from . import polar_rows
from ._checks import check_ids, check_int, check_mask, check_table_dtype
from ._tables import lookup_table

__all__ = ["PHASE_INITS", "WEIGHTINGS", "ComplexWordEmbedding", "WordWeighting"]

#: Initialisations of the word phases (``phase_init=``).
PHASE_INITS = ("uniform", "zero", "sign")
#: The word weightings of a mixture (``weighting=``).
WEIGHTINGS = ("amplitude_norm", "trainable", "idf", "uniform")
#: Id of the padding token in every embedding table of :mod:`qpnlp.nn`.


def _initial_amplitude(num_words: int, dim: int, pretrained: torch.Tensor | None, dtype: torch.dtype,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """A fresh real ``(V, d)`` table: a copy of ``pretrained`` (checked), else N(0, 1/d) entries (norms about 1)."""
    if pretrained is None:
        return torch.randn(num_words, dim, dtype=dtype, generator=generator) / math.sqrt(dim)
    V.check_tensor("pretrained", pretrained)        # an array failed in isfinite, naming no argument
    if pretrained.is_complex():                     # the cast below dropped the imaginary part with a warning
        raise TypeError(f"pretrained must hold real amplitudes (the phases are a table of their own); got "
                        f"{pretrained.dtype}")
    if tuple(pretrained.shape) != (num_words, dim):
        raise ValueError(f"pretrained must have shape ({num_words}, {dim}); got {tuple(pretrained.shape)}")
    if not torch.isfinite(pretrained).all():
        raise ValueError("pretrained vectors contain NaN or inf")
    return pretrained.detach().to(dtype).clone()


def _real_word_table(num_words: int, dim: int, pretrained: torch.Tensor | None, dtype: torch.dtype,
                     generator: torch.Generator | None = None) -> nn.Embedding:
    """The real ``(V, 2d)`` sparse word table of the real baselines and ablations (real BoW, CNM-Real,
    FastText-MaxPool): N(0, 1/d) entries, ``pretrained`` (checked as ``_initial_amplitude`` checks it) in the
    first d columns, a zero padding row."""
    table = torch.randn(num_words, 2 * dim, dtype=dtype, generator=generator) / math.sqrt(dim)
    if pretrained is not None:
        table[:, :dim] = _initial_amplitude(num_words, dim, pretrained, dtype)
    table[PAD_ID] = 0
    return lookup_table(num_words, 2 * dim, padding_idx=PAD_ID, sparse=True, _weight=table)


#: Use torch.polar's gradient with respect to the modulus, :math:`\Re(\bar g \operatorname{sgn} z)`, instead of
#: the derivative: it is the derivative only where the amplitude is positive; it is 0 at a zero amplitude and has
#: the wrong sign at a negative one (signed amplitudes, e.g. ``phase_init="uniform"``, where gradient descent then
#: climbs in those coordinates). False (the default since 0.2): the exact derivative of :math:`r_j e^{i\phi_j}`
#: for every sign. True reproduces the training of qpnlp <= 0.2.0.dev0 (which built the states with
#: ``torch.polar``); on TREC (seed 0, dev-selected grid) the exact derivative gave the same dev accuracy with sign
#: phases and +1.3 points of dev accuracy with uniform phases (benchmarks/results/qpdn/polar-gradient/).
TORCH_POLAR_GRADIENT = False


def _table_gradient(values: torch.Tensor, rows: torch.Tensor, shape: torch.Size, padding_idx: int | None,
                    sparse: bool) -> torch.Tensor:
    """Gradient of a lookup table from the summed gradients ``values`` ``(U, ...)`` of its distinct ``rows``.

    As ``nn.Embedding`` gives it, but coalesced: sparse COO with sorted unique rows and the padding row left
    out (so an optimiser's ``coalesce()`` is free), or dense with a zero padding row.
    """
    if sparse:
        if padding_idx is not None and rows.numel():
            at = int(torch.searchsorted(rows, padding_idx))         # rows are sorted and unique
            if at < rows.numel() and int(rows[at]) == padding_idx:
                rows, values = torch.cat((rows[:at], rows[at + 1:])), torch.cat((values[:at], values[at + 1:]))
        return coalesced_coo(rows.unsqueeze(0), values, shape)
    dense = values.new_zeros(shape).index_copy_(0, rows, values)
    if padding_idx is not None:
        dense[padding_idx] = 0
    return dense


#: The second derivatives refused by the fused functions of qpnlp.nn in eager mode, and the way to them.
FUSED_ROUTES = "torch.autograd.functional.hessian, a gradient of a create_graph=True gradient"
FUSED_HINT = ("under torch.func the modules run the plain torch graph of the same maths: take torch.func.hessian or "
              "jacrev(jacrev(f)) of torch.func.functional_call(module, params, args), with dense tables "
              "(qpnlp.training.dense_gradients(model))")


def _sum_repeated(grad: torch.Tensor, inverse: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """``(n, ...)`` gradients of the looked-up rows summed per distinct row -> ``shape`` ``(rows, ...)``.

    The row width comes from ``shape``, not from ``grad``: an empty batch (n = 0) has no width to infer."""
    flat = grad.reshape(inverse.numel(), math.prod(shape[1:]))
    return flat.new_zeros(shape[0], flat.shape[1]).index_add_(0, inverse, flat).view(shape)


def _unit_rows(r, phi):
    """``(U, d)`` amplitudes and phases -> [Re, Im] pairs ``(U, d, 2)`` of the unit states, and what the
    backward needs: the unit amplitudes, cos, sin, the norms and the clamped norms.

    Eager on purpose: compiled (inductor), this formula and its backward together ran slower than here
    (trigonometry not vectorised in the fused loop; benchmarks/results/SPEED.md). cos and sin come from
    ``qpnlp._trig`` (one compiled loop for float32 CPU tensors, with numba).
    """
    # squares that underflow (weight decay) or overflow: rescaled (on the CPU only where a row needs it)
    norms = rescaled_norms(r, torch.linalg.vector_norm(r, dim=-1, keepdim=True)).squeeze(-1)
    scale = norms.clamp_min(torch.finfo(r.dtype).tiny)
    unit = r / scale.unsqueeze(-1)
    cos, sin = cos_sin(phi)
    parts = torch.view_as_real(torch.complex(cos, sin) * unit)                  # one interleaving pass
    return parts, unit, cos, sin, norms, scale


def _unit_rows_backward(g, unit, cos, sin, norms, scale, polar_sign: bool):
    """Summed gradients ``(U, d, 2)`` of the [Re, Im] pairs -> gradients of the amplitudes (through
    ``r / max(||r||, tiny)``: the radial part only where the clamp passes the norm's gradient) and phases."""
    # conj(e^{i phi}) g = (g_re cos + g_im sin) + i (g_im cos - g_re sin): d/d unit and d/d phi / unit
    rotated = torch.complex(cos, -sin) * torch.view_as_complex(g)
    g_unit = rotated.real * torch.sign(unit) if polar_sign else rotated.real
    radial = (g_unit * unit).sum(-1, keepdim=True) * (norms >= torch.finfo(unit.dtype).tiny).unsqueeze(-1)
    return (g_unit - unit * radial) / scale.unsqueeze(-1), unit * rotated.imag


class _PolarLookup(torch.autograd.Function):
    r"""States :math:`\frac{r}{\|r\|} e^{i\phi}` and norms :math:`\|r\|` of rows ``ids`` of two tables, fused.

    Every distinct id is computed once (one sort of the ids); the backward sums the gradients of repeated
    ids first, applies the chain rule per distinct row and returns coalesced table gradients
    (``_table_gradient``). Same values and gradients as the autograd graph of
    ``torch.polar(r / ||r||.clamp_min(tiny), phi)`` (tested), including its conventions at
    ``||r|| = 0`` (clamped scale, zero norm gradient) and, with :data:`TORCH_POLAR_GRADIENT`,
    torch.polar's modulus gradient; faster than that graph (its ``polar`` kernel is not vectorised), and the
    coalesced gradients save the optimiser a sort per table (benchmarks/qpdn_train_step.py). With numba (the
    extra ``fast``), the arithmetic after the row gathers runs as the compiled loops of
    :mod:`qpnlp.nn.polar_rows` (the same values to float rounding).

    With ``distinct=True`` it returns the ``(U, d)`` states and ``(U,)`` norms of the distinct ids (sorted)
    and the ``ids``-shaped index of each position's row among them, instead of copying the states to the
    positions (:meth:`ComplexWordEmbedding.distinct_states`).
    """

    @staticmethod
    def forward(ctx, ids, amplitude, phase, padding_idx, sparse_amplitude, sparse_phase, distinct=False):
        rows, inverse = torch.unique(ids.reshape(-1), sorted=True, return_inverse=True)
        r = amplitude.index_select(0, rows)                                       # (U, d)
        phi = phase.index_select(0, rows)
        # the positions that receive a state: every id's, or each distinct row once
        targets = torch.arange(rows.numel(), device=rows.device) if distinct else inverse
        ctx.compiled = polar_rows.accepts(r, phi)
        if ctx.compiled:                                                          # one pass per state (numba)
            cos, sin = cos_sin(phi)
            parts, target_norms, unit, norms, scale = polar_rows.unit_states(r, cos, sin, targets)
        else:
            parts, unit, cos, sin, norms, scale = _unit_rows(r, phi)
            parts = parts.view(rows.numel(), 2 * r.shape[1])
            if not distinct:
                parts = parts.index_select(0, inverse)
            target_norms = norms if distinct else norms.index_select(0, inverse)
        ctx.save_for_backward(rows, targets, r, unit, cos, sin, norms, scale, amplitude, phase)  # tables: ties
        ctx.table_shapes = (amplitude.shape, phase.shape)
        ctx.options = (padding_idx, sparse_amplitude, sparse_phase, distinct)
        shape = (rows.numel(),) if distinct else tuple(ids.shape)
        states = torch.view_as_complex(parts.view(*shape, r.shape[1], 2))
        if not distinct:
            return states, target_norms.view(shape)
        index = inverse.view(ids.shape)
        ctx.mark_non_differentiable(index)
        return states, target_norms.view(shape), index

    @staticmethod
    @first_order_backward("the fused lookup of ComplexWordEmbedding", FUSED_HINT, FUSED_ROUTES)
    def backward(ctx, g_states, g_norms, _g_index=None):
        rows, targets, r, unit, cos, sin, norms, scale = ctx.saved_tensors[:8]
        padding_idx, sparse_amplitude, sparse_phase, distinct = ctx.options
        need_amplitude, need_phase = ctx.needs_input_grad[1], ctx.needs_input_grad[2]
        g_r = g_phi = None
        if ctx.compiled and g_states is not None and (need_amplitude or need_phase):
            g = torch.view_as_real(g_states.resolve_conj()).reshape(targets.numel(), r.shape[1], 2)
            g_n = g_norms.reshape(-1) if g_norms is not None and need_amplitude else None
            g_r, g_phi = polar_rows.unit_states_backward(g, g_n, None if distinct else targets, r, unit, cos, sin,
                                                         norms, scale, TORCH_POLAR_GRADIENT)
            g_norms = None                                                        # included in g_r
        elif g_states is not None:
            g = torch.view_as_real(g_states.resolve_conj())
            g = g.reshape(unit.shape + (2,)) if distinct else _sum_repeated(g, targets, unit.shape + (2,))
            g_r, g_phi = _unit_rows_backward(g, unit, cos, sin, norms, scale, TORCH_POLAR_GRADIENT)
        if g_norms is not None and need_amplitude:
            g_n = g_norms.reshape(-1) if distinct else _sum_repeated(g_norms, targets, norms.shape)
            # r / ||r||; below tiny as unit * (scale / norms), where g_n / norms overflows (bit for bit as before above)
            normal = (norms >= torch.finfo(norms.dtype).tiny).unsqueeze(-1)
            radial = torch.where(normal, r * (g_n / norms).unsqueeze(-1), unit * (scale / norms * g_n).unsqueeze(-1))
            radial = radial.masked_fill((norms == 0).unsqueeze(-1), 0)                 # vector_norm's 0 at 0
            g_r = radial if g_r is None else g_r + radial
        amplitude_shape, phase_shape = ctx.table_shapes
        if need_amplitude and g_r is None:
            g_r = r.new_zeros(r.shape)
        if need_phase and g_phi is None:
            g_phi = r.new_zeros(r.shape)
        g_amplitude = _table_gradient(g_r, rows, amplitude_shape, padding_idx, sparse_amplitude) \
            if need_amplitude else None
        g_phase = _table_gradient(g_phi, rows, phase_shape, padding_idx, sparse_phase) if need_phase else None
        return None, g_amplitude, g_phase, None, None, None, None


class _RowLookup(torch.autograd.Function):
    """``weight[ids]`` with the coalesced table gradient of ``_table_gradient`` (one sort of the ids)."""

    @staticmethod
    def forward(ctx, ids, weight, padding_idx, sparse):
        rows, inverse = torch.unique(ids.reshape(-1), sorted=True, return_inverse=True)
        ctx.save_for_backward(rows, inverse)
        ctx.shape, ctx.options = weight.shape, (padding_idx, sparse)
        return weight.index_select(0, rows).index_select(0, inverse).view(*ids.shape, *weight.shape[1:])

    @staticmethod
    def backward(ctx, grad):               # linear in grad, of torch ops: autograd differentiates it (create_graph)
        if not ctx.needs_input_grad[1]:
            return None, None, None, None
        rows, inverse = ctx.saved_tensors
        values = _sum_repeated(grad, inverse, (rows.numel(), *ctx.shape[1:]))
        return None, _table_gradient(values, rows, ctx.shape, *ctx.options), None, None


def _sparse_backward(*tables: nn.Embedding) -> bool:
    """Whether looking up rows of ``tables`` records embedding's sparse backward (a sparse table that trains)."""
    return torch.is_grad_enabled() and any(t.sparse and t.weight.requires_grad for t in tables)


def _fused(*tables: nn.Embedding) -> bool:
    """Use the fused lookups: in eager mode, and under torch.compile where they record a sparse backward, run
    outside the graph (``_run``): AOT autograd cannot trace embedding's sparse backward (``aten.nonzero`` has a
    data-dependent size), and a failed attempt costs a compile and breaks the graph anyway. Otherwise (no gradient,
    or dense tables) torch.compile traces the plain ``nn.Embedding`` graph; so do torch.func transforms (the fused
    functions take ``ctx`` in their forward, which ``torch.func`` refuses, and sort the ids: no ``vmap`` rule)."""
    if V.in_transform():
        return False
    return not torch.compiler.is_compiling() or _sparse_backward(*tables)


def _run(function, *args):
    """``function(*args)``; under torch.compile outside the graph, which then starts at its outputs."""
    return _outside_graph(function, *args) if torch.compiler.is_compiling() else function(*args)


# torch's lazy form of torch.compiler.disable (it imports torch._dynamo at the first call, under torch.compile):
# torch.compiler.disable imports it when this module is imported, 2.6 of the 6 s that `qpnlp --help` took on a
# 2-core AMD EPYC (benchmarks/results/cli-startup); the public decorator where a torch lacks the lazy one
_lazy_disable = getattr(torch, "_disable_dynamo", None) or torch.compiler.disable


@_lazy_disable
def _outside_graph(function, *args):
    outputs = function(*args)
    if isinstance(outputs, torch.Tensor):
        return _unviewed(outputs)
    return type(outputs)(_unviewed(t) if isinstance(t, torch.Tensor) else t for t in outputs)


def _unviewed(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, or a copy of it where it is a view of another dtype (a complex view of a real buffer).

    The graph that resumes after ``_outside_graph`` receives its outputs as fake tensors; torch 2.11's dynamo
    rebuilds a view by replaying it on a fake copy of its base, and ``view_as_complex`` fails on a ``(..., 2d)``
    base ("Tensor must have a last dimension of size 2"; seen on CUDA, torch 2.11.0+cu130). The copy costs one
    pass over the states, under torch.compile only.
    """
    if tensor._is_view() and tensor._base.dtype != tensor.dtype:
        return tensor.clone()
    return tensor


def _lookup(table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
    """``table(ids)`` for a plain ``nn.Embedding`` (no ``max_norm``), with coalesced table gradients."""
    if not _fused(table) or table.max_norm is not None or table.scale_grad_by_freq:
        return table(ids)
    return _run(_RowLookup.apply, ids, table.weight, table.padding_idx, table.sparse)


def _check_padding_idx(padding_idx: object, num_words: int) -> int:
    """``padding_idx`` as a row of a table of ``num_words`` rows, in [0, num_words): an integer in
    [-num_words, num_words), a negative one counted from the end, as ``torch.nn.Embedding`` takes it (TypeError for
    anything else, None included; ValueError outside). A float or an id past the end met
    ``amplitude[padding_idx] = 0``'s IndexError, and None zeroed every row of both tables."""
    index = check_int("padding_idx", padding_idx)
    if not -num_words <= index < num_words:
        raise ValueError(f"padding_idx must be in [-num_words, num_words) = [{-num_words}, {num_words}); "
                         f"got {index}")
    return index % num_words


class ComplexWordEmbedding(ComplexPrecisionMixin, nn.Module):
    r"""Word states :math:`|w\rangle = \sum_j \frac{r_j}{\|r\|} e^{i\phi_j}|e_j\rangle` (thesis eq. 3.2).

    Two real lookup tables of shape ``(V, d)``: amplitudes ``R`` and phases
    ``Phi``. The state is unit-norm by construction (normalised in forward), for every row of norm at least
    ``finfo(dtype).tiny`` (1e-38 in float32), however small its squares; below that the norm is clamped there
    (a zero row gives a zero state).
    The raw amplitude norm :math:`\|r\|` is returned as well: the papers' public
    code uses it as the (softmaxed) word weight. A negative amplitude is the same
    as a phase shifted by :math:`\pi`, so amplitudes are left signed.

    Parameters
    ----------
    num_words : int
        Vocabulary size V, including padding (id 0) and unknown (id 1).
    dim : int
        Hilbert-space dimension d.
    pretrained : torch.Tensor, optional
        Real ``(V, d)`` initial amplitudes (e.g. GloVe rows aligned with the
        vocabulary); otherwise N(0, 1/d) so that norms are about 1.
    phase_init : {"uniform", "zero", "sign"}
        Phases uniform in :math:`[-\pi, \pi)` (the papers), all zero, or
        :math:`\pi` where the pretrained value is negative with amplitude
        :math:`|x|` (the state then equals the real vector ``x / ||x||``).
    unit_amplitudes : bool
        Scale every initial amplitude row to unit norm (one reading of the
        thesis' "amplitudes initialized by L2-norm"). The states are
        unchanged (they are normalised anyway); what changes is the raw norm
        :math:`\|r\|`, so amplitude-norm word weights start uniform
        instead of following the pretrained norms. Zero rows stay zero.
    sparse : bool
        Sparse gradients: a training step touches only the rows in the batch.
    freeze_amplitude, freeze_phase : bool
        Keep a table fixed (ablations).
    dtype : torch.dtype
        float32 (states complex64) or float64 (states complex128).
    padding_idx : int
        Row kept at zero amplitude and never trained; padded positions must be
        masked by the caller (they produce the zero vector, not a state).
        In [-num_words, num_words), a negative one counted from the end (as ``torch.nn.Embedding``).
    generator : torch.Generator, optional
        Seeds the initial amplitudes (unless ``pretrained``), then the uniform
        phases; None: the global generator.

    Examples
    --------
    >>> emb = ComplexWordEmbedding(10, 4, generator=torch.Generator().manual_seed(0))
    >>> states, norms = emb(torch.tensor([[2, 3, 0]]))
    >>> states.shape, states.dtype
    (torch.Size([1, 3, 4]), torch.complex64)
    >>> torch.linalg.vector_norm(states, dim=-1)
    tensor([[1., 1., 0.]], grad_fn=<LinalgVectorNormBackward0>)
    """

    def __init__(self, num_words: int, dim: int, *, pretrained: torch.Tensor | None = None,
                 phase_init: str = "uniform", unit_amplitudes: bool = False, sparse: bool = True,
                 freeze_amplitude: bool = False,
                 freeze_phase: bool = False, dtype: torch.dtype = torch.float32, padding_idx: int = PAD_ID,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        num_words, dim = check_int("num_words", num_words), check_int("dim", dim)
        if num_words < 2 or dim < 1:
            raise ValueError(f"need num_words >= 2 (padding and unknown) and dim >= 1; got {num_words}, {dim}")
        if phase_init not in PHASE_INITS:
            raise ValueError(f"phase_init must be one of {PHASE_INITS}; got {phase_init!r}")
        check_table_dtype(dtype)
        padding_idx = _check_padding_idx(padding_idx, num_words)
        amplitude = _initial_amplitude(num_words, dim, pretrained, dtype, generator)
        if unit_amplitudes:  # a zero row divided by the clamped norm stays zero
            amplitude = amplitude / torch.linalg.vector_norm(amplitude, dim=-1, keepdim=True).clamp_min(
                torch.finfo(dtype).tiny)
        phase = self._initial_phase(phase_init, amplitude, dtype, generator)
        if phase_init == "sign":
            amplitude = amplitude.abs()
        amplitude[padding_idx] = 0
        phase[padding_idx] = 0
        self.padding_idx = padding_idx
        self.amplitude = lookup_table(num_words, dim, padding_idx=padding_idx, sparse=sparse, _weight=amplitude,
                                      _freeze=freeze_amplitude)
        self.phase = lookup_table(num_words, dim, padding_idx=padding_idx, sparse=sparse, _weight=phase,
                                  _freeze=freeze_phase)

    @staticmethod
    def _initial_phase(phase_init, amplitude, dtype, generator) -> torch.Tensor:
        if phase_init == "uniform":
            return (torch.rand(amplitude.shape, dtype=dtype, generator=generator) * 2 - 1) * math.pi
        if phase_init == "zero":
            return torch.zeros_like(amplitude)
        return (amplitude < 0).to(dtype) * math.pi  # built in dtype: no float32 round trip of pi

    @property
    def num_words(self) -> int:
        return self.amplitude.num_embeddings

    @property
    def dim(self) -> int:
        return self.amplitude.embedding_dim

    def forward(self, ids: torch.Tensor, *, validate: V.Validate = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Word states and raw amplitude norms.

        Parameters
        ----------
        ids : torch.LongTensor
            ``(...,)`` word ids.
        validate : bool or "strict", optional
            Override the global validation mode for the id check (a model
            that has checked its batch passes False).

        Returns
        -------
        states : torch.Tensor
            Complex ``(..., d)``, unit norm (zero vectors at padding).
        norms : torch.Tensor
            Real ``(...,)`` amplitude norms :math:`\\|r\\|` (0 at padding).
        """
        check_ids(ids, self.num_words, validate=validate)   # ids in the vocabulary (a clear error, not IndexError)
        if _fused(self.amplitude, self.phase):
            return _run(_PolarLookup.apply, ids, self.amplitude.weight, self.phase.weight, self.padding_idx,
                        self.amplitude.sparse, self.phase.sparse)
        r = self.amplitude(ids)                   # the same maths as one traceable graph (torch.compile)
        norms = rescaled_norms(r, torch.linalg.vector_norm(r, dim=-1, keepdim=True)).squeeze(-1)
        unit = r / norms.clamp_min(torch.finfo(r.dtype).tiny).unsqueeze(-1)
        phi = self.phase(ids)
        if TORCH_POLAR_GRADIENT:
            return torch.polar(unit, phi), norms
        return torch.complex(unit * torch.cos(phi), unit * torch.sin(phi)), norms   # the derivative for every sign

    def distinct_states(self, ids: torch.Tensor, *, validate: V.Validate = None
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The states of the distinct ids only, and where each position finds its state.

        What :meth:`forward` gives, without copying each state to every position of its id:
        ``states[index]`` and ``norms[index]`` are :meth:`forward`'s outputs. A model that only needs
        per-word quantities (Born probabilities, weights) computes them on the U distinct rows and
        gathers the results, which are narrower than the states (QPDN: ``k`` probabilities for ``d``
        amplitudes); a repeated word or a padded position then costs one gathered row of those. The number
        of distinct ids depends on the data, so under ``torch.compile`` this breaks the graph (QPDN then
        measures :meth:`forward`'s states instead).

        Parameters
        ----------
        ids : torch.LongTensor
            ``(...,)`` word ids.

        Returns
        -------
        states : torch.Tensor
            Complex ``(U, d)``: the unit states of the sorted distinct ids (a zero vector for padding).
        norms : torch.Tensor
            Real ``(U,)`` amplitude norms.
        index : torch.LongTensor
            ``ids``-shaped: each position's row in ``states``.
        """
        check_ids(ids, self.num_words, validate=validate)
        if _fused():
            return _PolarLookup.apply(ids, self.amplitude.weight, self.phase.weight, self.padding_idx,
                                      self.amplitude.sparse, self.phase.sparse, True)
        rows, index = torch.unique(ids.reshape(-1), sorted=True, return_inverse=True)   # traceable graph
        states, norms = self(rows, validate=False)
        return states, norms, index.view(ids.shape)

    def all_states(self) -> torch.Tensor:
        """States of the whole vocabulary, complex ``(V, d)`` (row 0, padding, is zero)."""
        return self(torch.arange(self.num_words, device=self.amplitude.weight.device))[0]


def _check_weighting_inputs(ids: torch.Tensor, mask: torch.Tensor, norms: torch.Tensor, num_words: int,
                            empty_rows: bool, validate: V.Validate = None) -> None:
    """ids, a bool mask and real norms of one shape; while validation is on, ids in range and (``empty_rows``,
    where no softmax checks it) no row without a word."""
    check_ids(ids, num_words, validate=validate)
    check_mask(mask, ids)
    V.check_tensor("norms", norms)
    if norms.shape != ids.shape or not norms.dtype.is_floating_point:
        raise ValueError(f"norms must be real with the shape of ids {tuple(ids.shape)}; got {norms.dtype} "
                         f"{tuple(norms.shape)}")
    if empty_rows and V.enabled(validate) and ids.numel() and bool((~mask.any(-1)).any()):
        raise ValueError(f"mask has no word (True) at batch index {int((~mask.any(-1)).nonzero()[0, 0])} "
                         f"(shape {tuple(mask.shape)}): an empty sentence has no mixture weights")


def _checked_idf(idf: object, num_words: int) -> torch.Tensor:
    """``idf`` if it is a real tensor ``(V,)`` (V = ``num_words``) of positive, finite values; else an error naming it.

    TypeError for no tensor (a list) and for a complex one (``idf > 0`` is not defined there), ValueError for another
    shape and for values that are not positive and finite (NaN and inf would give NaN weights).
    """
    if idf is not None:
        V.check_tensor("idf", idf)
        if idf.is_complex():
            raise TypeError(f"idf must be a real tensor (IDF values); got {idf.dtype}")
    if idf is None or idf.shape != (num_words,):
        raise ValueError(f"weighting='idf' needs idf of shape ({num_words},); "
                         f"got {None if idf is None else tuple(idf.shape)}")
    if not bool(((idf > 0) & torch.isfinite(idf)).all()):
        raise ValueError("idf values must be positive and finite")
    return idf


class WordWeighting(ComplexPrecisionMixin, nn.Module):
    r"""Mixture weights :math:`p_i` over the words of each sentence (padding excluded).

    Schemes
    -------
    ``"amplitude_norm"`` (the papers' public code, default)
        :math:`p_i = \operatorname{softmax}_i \|r_{w_i}\|` over the sentence,
        with the raw amplitude norm from :class:`ComplexWordEmbedding`.
    ``"trainable"``
        :math:`p_i = \operatorname{softmax}_i \pi(w_i)` with a trainable
        lookup table :math:`\Pi` (thesis eq. 5.1), initialised to zero
        (uniform weights at the start).
    ``"idf"``
        :math:`p_i = \mathrm{idf}(w_i) / \sum_j \mathrm{idf}(w_j)`, fixed IDF
        from the training data (ablation of thesis Table 5.3).
    ``"uniform"``
        :math:`p_i = 1/m` (thesis eq. 3.3; "fixed mean weights").

    Masking happens before the softmax: padded positions get weight exactly 0.

    Shapes: ``ids (B, L), mask (B, L), norms (B, L) -> weights (B, L)``.

    Parameters
    ----------
    num_words : int
        Vocabulary size V (the rows of the ``"trainable"`` table and of ``idf``).
    scheme : {"amplitude_norm", "trainable", "idf", "uniform"}
        One of the schemes above.
    idf : torch.Tensor, optional
        Real ``(V,)`` positive, finite IDF values; required by ``"idf"`` (ValueError), ignored by the others.
    sparse : bool
        Sparse gradients of the ``"trainable"`` table (only the rows in the batch).
    dtype : torch.dtype
        float32 or float64 (TypeError else): the dtype of the table or of the stored IDF (float64 for complex128
        models).

    Examples
    --------
    >>> weighting = WordWeighting(10, "uniform")
    >>> ids = torch.tensor([[2, 3, 0]])
    >>> weighting(ids, ids != 0, torch.ones(1, 3))
    tensor([[0.5000, 0.5000, 0.0000]])
    """

    def __init__(self, num_words: int, scheme: str = "amplitude_norm", *, idf: torch.Tensor | None = None,
                 sparse: bool = True, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if scheme not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}; got {scheme!r}")
        self.scheme, self.num_words = scheme, check_int("num_words", num_words)
        if self.num_words < 1:
            raise ValueError(f"num_words must be >= 1 (the vocabulary size); got {self.num_words}")
        check_table_dtype(dtype)
        if scheme == "trainable":
            self.table = lookup_table(num_words, 1, padding_idx=PAD_ID, sparse=sparse,
                                      _weight=torch.zeros(num_words, 1, dtype=dtype))
        if scheme == "idf":
            self.register_buffer("idf", _checked_idf(idf, self.num_words).to(dtype))

    def extra_repr(self) -> str:
        return f"{self.num_words}, scheme={self.scheme!r}"

    def scores(self, ids: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
        """Per-word scores ``(B, L)`` whose masked softmax (or normalisation, for IDF) gives the weights."""
        if self.scheme == "amplitude_norm":
            return norms
        if self.scheme == "trainable":
            return _lookup(self.table, ids).squeeze(-1)
        if self.scheme == "idf":
            return self.idf[ids]
        return torch.zeros_like(norms)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, norms: torch.Tensor, *,
                validate: V.Validate = None) -> torch.Tensor:
        """Weights ``(B, L)``, non-negative, summing to one over unmasked positions.

        Parameters
        ----------
        ids : LongTensor ``(B, L)``; mask : BoolTensor ``(B, L)``; norms : ``(B, L)`` amplitude norms.
        validate : bool or "strict", optional
            Override the global validation mode (ids in range, a word in every row).
        """
        _check_weighting_inputs(ids, mask, norms, self.num_words, empty_rows=self.scheme == "idf", validate=validate)
        s = self.scores(ids, norms)
        if self.scheme == "idf":
            s = s.masked_fill(~mask, 0.0)
            return s / s.sum(-1, keepdim=True)
        return masked_softmax(s, mask, validate=validate)
