r"""Recurrent cells and the layers that run them over masked sequences, all through one :func:`masked_scan`.

Three cells, each written as a step :math:`s_t = \mathrm{step}(x_t, s_{t-1})`
on pre-projected inputs (the input projections of all time steps are one
matmul before the loop):

* :class:`ComplexLSTMCell` -- the complex-order paper's LSTM (Wang et al., ICLR
  2020, appendix B) with split gates, run by :class:`ComplexRNN`;
* :class:`URNNCell` -- :math:`h_t = \operatorname{modReLU}(W h_{t-1} + V x_t + b)`
  with a unitary :math:`W` (Arjovsky et al., 2016), run by :class:`ComplexRNN`;
* :class:`CGRNNCell` -- the gated complex RNN of Wolter & Yao, *Gated Complex
  Recurrent Neural Networks* (poster, Bonn University; full paper "Complex
  Gated Recurrent Neural Networks", NeurIPS 2018), equations (4)-(9), run by
  :class:`CGRNN`:

.. math::

    \mathbf{z}_r &= \mathbf{W}_r \mathbf{h}_{t-1} + \mathbf{V}_r \mathbf{x}_t + \mathbf{b}_r,
        \qquad \mathbf{g}_r = f_g(\mathbf{z}_r) \qquad \text{(eq. 6)} \\
    \mathbf{z}_z &= \mathbf{W}_z \mathbf{h}_{t-1} + \mathbf{V}_z \mathbf{x}_t + \mathbf{b}_z,
        \qquad \mathbf{g}_z = f_g(\mathbf{z}_z) \qquad \text{(eq. 7)} \\
    \widetilde{\mathbf{z}}_t &= \mathbf{W} (\mathbf{g}_r \odot \mathbf{h}_{t-1})
        + \mathbf{V} \mathbf{x}_t + \mathbf{b} \qquad \text{(eq. 4)} \\
    \mathbf{h}_t &= \mathbf{g}_z \odot f_a(\widetilde{\mathbf{z}}_t)
        + (1 - \mathbf{g}_z) \odot \mathbf{h}_{t-1} \qquad \text{(eq. 5)}

with :math:`f_a` the Hirose (eq. 1) or modReLU (eq. 2) non-linearity and
:math:`f_g` the sum (eq. 8) or product (eq. 9) gate, both
:math:`\mathbb{C} \to [0, 1]` (see :mod:`qpnlp.nn.activation`).
Only the state transition :math:`\mathbf{W}` is (optionally) unitary, as in
the poster; the gate matrices :math:`\mathbf{W}_r, \mathbf{W}_z` are free
(see :mod:`qpnlp.nn.unitary` for the transition modes, the one unitary
mechanism shared with the uRNN cell).

Masking
-------
:func:`masked_scan` is the one masked recurrence:
:math:`s_t = m_t\,\mathrm{step}(x_t, s_{t-1}) + (1 - m_t)\, s_{t-1}` (a
selection, not arithmetic). At a padded step the state is carried over
unchanged, so padding anywhere (left, right, or holes) never changes the
state after the last real step.

Input promotion rule
--------------------
The cgRNN converts ``x`` (and ``h0``) to its complex dtype by
:func:`~qpnlp.nn.functional.as_complex_input` (lossless upcasts allowed, never
a downcast); :class:`ComplexRNN` uses the stricter rule of
:class:`~qpnlp.nn.linear.ComplexLinear` (the layer's dtype or a real tensor of
its precision). The device follows the parameters (``module.to(device)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp.hilbert import _validation as V

from ._checks import check_int
from ._scan import (_cell_input, _cell_repr, _check_cell_state, _check_finite, _check_mask, _checked_input,
                    masked_scan)
from .activation import ModReLU, make_activation, make_gate
from .functional import as_complex_input, part_mul, split_activation
from .linear import ComplexLinear, _check_dtype
from .unitary import StateTransition

__all__ = ["masked_scan", "ComplexLSTMCell", "URNNCell", "ComplexRNN", "cgrnn_step", "CGRNNCell", "CGRNN"]

class ComplexLSTMCell(ComplexPrecisionMixin, nn.Module):
    r"""Complex LSTM cell with the paper's split gates (app. B, "complex-valued gates ... as in (12)").

    .. math::

        [a_i, a_f, a_o, a_g] &= W_x x_t + W_h h_{t-1} + b \\
        i, f, o &= \sigma(\Re a) + i\,\sigma(\Im a), \qquad g = \tanh(\Re a_g) + i \tanh(\Im a_g) \\
        c_t &= f \circ c_{t-1} + i \circ g, \qquad h_t = o \circ \tanh_\text{split}(c_t)

    where :math:`\circ` is the per-part product (:func:`~qpnlp.nn.functional.part_mul`),
    so each part of the state is gated like a real LSTM while the complex
    matmuls mix the parts. With a real dtype this is the standard LSTM cell.

    Shapes: ``x (B, in), (h, c) (B, hidden) -> (h, c)``.

    Parameters
    ----------
    input_size, hidden_size : int
        Width of the input ``x`` and of the state ``h`` and ``c``.
    dtype : torch.dtype
        complex64 (default) or complex128; float32 or float64 for the real LSTM.
    share_parts : bool
        :class:`~qpnlp.nn.linear.ComplexLinear`'s option :math:`\Re W = \Im W` for both projections (complex only).
    generator : torch.Generator, optional
        Seeds the initial weights (the input projection, then the hidden one); None: the global generator.

    Examples
    --------
    >>> cell = ComplexLSTMCell(3, 4)
    >>> h, c = cell(torch.randn(2, 3, dtype=torch.complex64))
    >>> h.shape, c.shape
    (torch.Size([2, 4]), torch.Size([2, 4]))
    """

    def __init__(self, input_size: int, hidden_size: int, *, dtype: torch.dtype = torch.complex64,
                 share_parts: bool = False, generator: torch.Generator | None = None) -> None:
        super().__init__()
        input_size, hidden_size = check_int("input_size", input_size), check_int("hidden_size", hidden_size)
        self.input_size, self.hidden_size, self.dtype = input_size, hidden_size, _check_dtype(dtype)
        self.input_proj = ComplexLinear(input_size, 4 * hidden_size, dtype=dtype, share_parts=share_parts,
                                        generator=generator)
        self.hidden_proj = ComplexLinear(hidden_size, 4 * hidden_size, bias=False, dtype=dtype,
                                         share_parts=share_parts, generator=generator)

    extra_repr = _cell_repr

    def step(self, xp: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """One step from the projected input ``xp = input_proj(x)`` (B, 4 hidden)."""
        h, c = state
        a_i, a_f, a_o, a_g = (xp + self.hidden_proj(h)).chunk(4, dim=-1)
        i, f, o = (split_activation(a, "sigmoid") for a in (a_i, a_f, a_o))
        c = part_mul(f, c) + part_mul(i, split_activation(a_g, "tanh"))
        return part_mul(o, split_activation(c, "tanh")), c

    def step_function(self) -> Callable[[Tensor, tuple[Tensor, Tensor]], tuple[Tensor, Tensor]]:
        """The step for :func:`masked_scan`."""
        return self.step

    @staticmethod
    def hidden(state: tuple[Tensor, Tensor]) -> Tensor:
        """The output :math:`h` of a state :math:`(h, c)`."""
        return state[0]

    def initial_state(self, batch: int, like: Tensor) -> tuple[Tensor, Tensor]:
        z = like.new_zeros(batch, self.hidden_size)
        return z, z

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        xp = self.input_proj(_checked_input("x", _cell_input(x, self.input_size)))
        if state is None:
            return self.step(xp, self.initial_state(x.shape[0], xp))
        if not (isinstance(state, (tuple, list)) and len(state) == 2):   # a tensor would unpack along dim 0
            raise TypeError(f"state must be a pair (h, c) of tensors; got {type(state).__name__}")
        shape = xp.shape[:-1] + (self.hidden_size,)
        return self.step(xp, tuple(_check_cell_state(name, part, shape, xp) for name, part in zip("hc", state)))


class URNNCell(ComplexPrecisionMixin, nn.Module):
    r"""uRNN-style cell (Arjovsky et al., 2016): :math:`h_t = \operatorname{modReLU}(W h_{t-1} + V x_t + b)`.

    :math:`W = \exp(S - S^\dagger)` is unitary by construction (orthogonal for
    a real dtype): a :class:`~qpnlp.nn.unitary.StateTransition` in mode
    ``"skew_expm"``. :math:`\operatorname{modReLU}(z) = \operatorname{ReLU}(|z| + \beta)\, z/|z|`
    (:class:`~qpnlp.nn.activation.ModReLU`, with ``scale_first=True``) has a
    trainable real bias :math:`\beta`, initially -0.01 (0 at :math:`z = 0`).

    Shapes: ``x (B, in), h (B, hidden) -> h (B, hidden)``.

    Parameters
    ----------
    input_size, hidden_size : int
        Width of the input ``x`` and of the state ``h``.
    dtype : torch.dtype
        complex64 (default) or complex128; float32 or float64 for an orthogonal :math:`W`.
    share_parts : bool
        :class:`~qpnlp.nn.linear.ComplexLinear`'s option :math:`\Re V = \Im V` for the input projection (complex only).
    generator : torch.Generator, optional
        Seeds :math:`V`, then :math:`S`; None: the global generator.

    Examples
    --------
    >>> cell = URNNCell(3, 4, dtype=torch.complex128)
    >>> cell(torch.randn(2, 3, dtype=torch.complex128)).shape
    torch.Size([2, 4])
    """

    def __init__(self, input_size: int, hidden_size: int, *, dtype: torch.dtype = torch.complex64,
                 share_parts: bool = False, generator: torch.Generator | None = None) -> None:
        super().__init__()
        input_size, hidden_size = check_int("input_size", input_size), check_int("hidden_size", hidden_size)
        self.input_size, self.hidden_size, self.dtype = input_size, hidden_size, _check_dtype(dtype)
        # V and b are drawn before S, but registered after it: parameters() keeps the order (S, beta, V, b)
        # this cell has always had, so optimiser state and gradient-norm sums are unchanged.
        input_proj = ComplexLinear(input_size, hidden_size, dtype=dtype, share_parts=share_parts,
                                   generator=generator)
        self.transition = StateTransition(hidden_size, mode="skew_expm", dtype=dtype, generator=generator)
        self.activation = ModReLU(hidden_size, -0.01, dtype=dtype.to_real(), scale_first=True)
        self.input_proj = input_proj

    extra_repr = _cell_repr

    def step(self, xp: Tensor, h: Tensor, w: Tensor | None = None) -> Tensor:
        """One step from the projected input ``xp`` (B, hidden); ``w``: the transition, if already computed."""
        w = self.transition() if w is None else w
        return self.activation(h @ w.transpose(-1, -2) + xp)

    def step_function(self) -> Callable[[Tensor, Tensor], Tensor]:
        """The step for :func:`masked_scan`, with the transition computed once."""
        w = self.transition()
        return lambda xp, h: self.step(xp, h, w)

    @staticmethod
    def hidden(state: Tensor) -> Tensor:
        return state

    def initial_state(self, batch: int, like: Tensor) -> Tensor:
        return like.new_zeros(batch, self.hidden_size)

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        xp = self.input_proj(_checked_input("x", _cell_input(x, self.input_size)))
        if h is None:
            return self.step(xp, self.initial_state(x.shape[0], xp))
        return self.step(xp, _check_cell_state("h", h, xp.shape[:-1] + (self.hidden_size,), xp))


class ComplexRNN(ComplexPrecisionMixin, nn.Module):
    r"""A :class:`ComplexLSTMCell` (``cell="lstm"``) or :class:`URNNCell` (``cell="urnn"``) over masked sequences.

    At a padded step the state is carried over unchanged (:func:`masked_scan`),
    so padding anywhere never changes ``h_last``.

    Shapes: ``x (B, T, in), mask (B, T) -> outputs (B, T, hidden), h_last (B, hidden)``.

    Parameters
    ----------
    input_size, hidden_size : int
        Width of the inputs and of the state.
    cell : {"lstm", "urnn"}
        The cell run at every step.
    dtype, share_parts, generator
        Passed to the cell (see :class:`ComplexLSTMCell`, :class:`URNNCell`).

    Examples
    --------
    >>> rnn = ComplexRNN(2, 3, cell="urnn")
    >>> out, h = rnn(torch.randn(2, 4, 2, dtype=torch.complex64), torch.tensor([[True] * 4, [True, True, False, False]]))
    >>> out.shape, torch.equal(out[1, 1], h[1])
    (torch.Size([2, 4, 3]), True)
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
        V.check_tensor("x", x)
        if x.ndim != 3:
            raise ValueError(f"x must have shape (B, T, {self.cell.input_size}); got {tuple(x.shape)}")
        bsz, steps = x.shape[:2]
        _check_mask(mask, bsz, steps)
        xp = self.cell.input_proj(_checked_input("x", x, mask))
        state = self.cell.initial_state(bsz, xp)
        out, state = masked_scan(self.cell.step_function(), xp, state, mask, self.cell.hidden)
        return out, self.cell.hidden(state)


def cgrnn_step(x_proj: Tensor, h: Tensor, w: Tensor, w_gates: Tensor, activation: Callable[[Tensor], Tensor],
               gate: Callable[[Tensor], Tensor]) -> Tensor:
    r"""One cgRNN step (poster eqs. 4-7) on pre-projected inputs; the functional core.

    Parameters
    ----------
    x_proj : Tensor, complex, shape (B, 3h)
        :math:`[\mathbf{V}x_t + \mathbf{b},\ \mathbf{V}_r x_t + \mathbf{b}_r,\
        \mathbf{V}_z x_t + \mathbf{b}_z]` concatenated along the last dim.
    h : Tensor, complex, shape (B, h)
        Previous state :math:`\mathbf{h}_{t-1}`.
    w : Tensor, complex, shape (h, h)
        State transition :math:`\mathbf{W}`.
    w_gates : Tensor, complex, shape (2h, h)
        :math:`[\mathbf{W}_r; \mathbf{W}_z]` stacked along rows.
    activation : callable, complex (B, h) -> complex (B, h)
        :math:`f_a` (Hirose or modReLU).
    gate : callable, complex (B, 2h) -> real (B, 2h) in [0, 1]
        :math:`f_g` (sum or product gate).

    Returns
    -------
    Tensor, complex, shape (B, h): :math:`\mathbf{h}_t`.
    """
    n = h.shape[-1]
    g = gate(h @ w_gates.mT + x_proj[..., n:])
    g_r, g_z = g[..., :n], g[..., n:]
    z = (g_r * h) @ w.mT + x_proj[..., :n]
    return h + g_z * (activation(z) - h)


def _randn(shape, dtype, device, generator: torch.Generator | None) -> Tensor:
    """Normal draws on ``device`` from ``generator`` (drawn on the generator's device, then moved) or the global RNG."""
    if generator is None:
        return torch.randn(shape, dtype=dtype, device=device)
    return torch.randn(shape, dtype=dtype, device=generator.device, generator=generator).to(device)


class CGRNNCell(ComplexPrecisionMixin, nn.Module):
    r"""Gated complex recurrent cell (poster eqs. 4-9).

    Parameters
    ----------
    input_size : int
        :math:`d_\text{in}`.
    hidden_size : int
        :math:`h` (complex units).
    activation : {"modrelu", "hirose"}
        Candidate non-linearity :math:`f_a` (eq. 2 or eq. 1). Default ``"modrelu"``.
    gate : {"sum", "prod"}
        Gate non-linearity :math:`f_g` (eq. 8 or eq. 9). Default ``"sum"``.
    alpha : float in [0, 1]
        :math:`\alpha` of the sum gate (default 0.5); ignored for ``"prod"``.
    learn_alpha : bool
        Learn :math:`\alpha = \sigma(a)` (default False: fixed).
    transition : {"expm", "cayley", "cayley_step", "free"}
        How :math:`\mathbf{W}` is kept unitary (or not); see :mod:`qpnlp.nn.unitary`.
    hirose_m : float
        Scale :math:`m` of the Hirose non-linearity (default 1, fixed).
    dtype : torch.dtype
        complex64 (default) or complex128.
    device : torch.device, optional
    generator : torch.Generator, optional
        Source of every random initial value (default: the global generator).

    Notes
    -----
    Initialisation: :math:`\mathbf{W}` Haar-random unitary (also for ``"free"``,
    so the comparison starts from the same point); :math:`\mathbf{V}_*` and
    :math:`\mathbf{W}_r, \mathbf{W}_z` complex normal with
    :math:`E|w|^2 = 1/\text{fan-in}`; biases and the modReLU bias 0. Draw
    order: the input weights :math:`[\mathbf{V}; \mathbf{V}_r; \mathbf{V}_z]`,
    the gate weights :math:`[\mathbf{W}_r; \mathbf{W}_z]`, then :math:`\mathbf{W}`.

    Examples
    --------
    >>> cell = CGRNNCell(3, 4, activation="hirose", gate="prod")
    >>> h = cell(torch.randn(2, 3))  # real input is promoted to complex64
    >>> h.shape, h.dtype
    (torch.Size([2, 4]), torch.complex64)
    """

    def __init__(self, input_size: int, hidden_size: int, *, activation: str = "modrelu", gate: str = "sum",
                 alpha: float = 0.5, learn_alpha: bool = False, transition: str = "expm", hirose_m: float = 1.0,
                 dtype: torch.dtype = torch.complex64, device=None, generator: torch.Generator | None = None):
        super().__init__()
        if dtype not in (torch.complex64, torch.complex128):
            raise TypeError(f"dtype must be complex64 or complex128; got {dtype}")
        input_size, hidden_size = check_int("input_size", input_size), check_int("hidden_size", hidden_size)
        self.input_size, self.hidden_size, self.dtype = input_size, hidden_size, dtype
        n = hidden_size
        self.input_weight = nn.Parameter(_randn((3 * n, input_size), dtype, device, generator)
                                         / math.sqrt(max(input_size, 1)))
        self.input_bias = nn.Parameter(torch.zeros(3 * n, dtype=dtype, device=device))
        self.gate_weight = nn.Parameter(_randn((2 * n, n), dtype, device, generator) / math.sqrt(n))
        self.transition = StateTransition(n, mode=transition, dtype=dtype, device=device, generator=generator)
        act_kwargs = {"m": hirose_m} if activation == "hirose" else {}
        self.activation = make_activation(activation, n, dtype=dtype.to_real(), device=device, **act_kwargs)
        gate_kwargs = {"alpha": alpha, "learnable": learn_alpha} if gate == "sum" else {}
        self.gate = make_gate(gate, dtype=dtype.to_real(), device=device, **gate_kwargs)
        self.activation_name, self.gate_name = activation, gate

    def project_inputs(self, x: Tensor) -> Tensor:
        r"""Input projections ``(..., 3h)`` of all three branches at once, of ``x`` ``(..., d_in)``, real or complex
        (promotion rule in the module docstring)."""
        x = as_complex_input(x, self.dtype)
        return x @ self.input_weight.mT + self.input_bias

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        r"""One step: the next state, complex ``(B, h)``.

        Parameters
        ----------
        x : Tensor, shape (B, d_in), real or complex
        h : Tensor, complex, shape (B, h), optional (default zeros); exactly x.shape[:-1] + (h,), never broadcast
        """
        xp = self.project_inputs(_checked_input("x", _cell_input(x, self.input_size, batched=False)))
        if h is None:
            h = xp.new_zeros(*xp.shape[:-1], self.hidden_size)
        else:
            h = as_complex_input(h, self.dtype, "h")
            expected = (*xp.shape[:-1], self.hidden_size)
            if h.shape != expected:                  # static, as CGRNN's h0: a state never broadcasts over a batch
                raise ValueError(f"h must have shape {expected} (x.shape[:-1] + (hidden,)); got {tuple(h.shape)}")
            V.check_same_device(("x", x), ("h", h))
            _check_finite("h", h)
        return cgrnn_step(xp, h, self.transition(), self.gate_weight, self.activation, self.gate)

    def step_function(self) -> Callable[[Tensor, Tensor], Tensor]:
        """The step for :func:`masked_scan` on projected inputs, with the transition computed once."""
        w, w_gates = self.transition(), self.gate_weight
        return lambda xp, h: cgrnn_step(xp, h, w, w_gates, self.activation, self.gate)

    extra_repr = _cell_repr


class CGRNN(ComplexPrecisionMixin, nn.Module):
    r"""Gated complex recurrent layer over a batch of (optionally padded) sequences.

    Parameters
    ----------
    input_size, hidden_size : int
    **cell_kwargs
        Passed to :class:`CGRNNCell` (``activation``, ``gate``, ``alpha``,
        ``transition``, ``dtype``, ``device``, ...).

    Notes
    -----
    The input projections :math:`\mathbf{V}_* x_t + \mathbf{b}_*` of all time
    steps are computed in one matmul before the loop; inside the loop only the
    two recurrent matmuls remain. The transition matrix is evaluated once per
    call (one ``matrix_exp`` for the ``"expm"`` mode).

    Examples
    --------
    >>> rnn = CGRNN(2, 8, activation="modrelu", transition="expm", dtype=torch.complex128)
    >>> x = torch.randn(3, 5, 2, dtype=torch.complex128)
    >>> mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2, [True] * 4 + [False]])
    >>> out, h_last = rnn(x, mask=mask)
    >>> out.shape, h_last.shape
    (torch.Size([3, 5, 8]), torch.Size([3, 8]))
    >>> torch.equal(out[1, 2], h_last[1])  # padded steps keep the state
    True
    """

    def __init__(self, input_size: int, hidden_size: int, **cell_kwargs):
        super().__init__()
        self.cell = CGRNNCell(input_size, hidden_size, **cell_kwargs)   # generator= seeds every initial value

    @property
    def input_size(self) -> int:
        return self.cell.input_size

    @property
    def hidden_size(self) -> int:
        return self.cell.hidden_size

    @property
    def dtype(self) -> torch.dtype:
        return self.cell.dtype

    def forward(self, x: Tensor, mask: Tensor | None = None, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        r"""Run the recurrence.

        Parameters
        ----------
        x : Tensor, shape (B, T, d_in), real or complex
            Promoted to the layer's complex dtype by the module's rule.
        mask : bool Tensor, shape (B, T), optional
            True at real steps, False at padding. At a padded step the state is
            carried over unchanged (and reported unchanged in ``outputs``), so
            padding may sit anywhere in the sequence.
        h0 : Tensor, shape (B, h), optional
            Initial state (default zeros).

        Returns
        -------
        outputs : Tensor, complex, shape (B, T, h)
            The state after every step.
        h_last : Tensor, complex, shape (B, h)
            The state after the last step (= after the last unpadded step).
        """
        V.check_tensor("x", x)
        if x.ndim != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"x must have shape (B, T, {self.input_size}); got {tuple(x.shape)}")
        bsz, steps = x.shape[:2]
        _check_mask(mask, bsz, steps)
        cell = self.cell
        xp = cell.project_inputs(_checked_input("x", x, mask))  # (B, T, 3h)
        if h0 is None:
            h = xp.new_zeros(bsz, self.hidden_size)
        else:
            V.check_tensor("h0", h0)            # a list met an AttributeError on .shape
            if h0.shape != (bsz, self.hidden_size):
                raise ValueError(f"h0 must have shape {(bsz, self.hidden_size)}; got {tuple(h0.shape)}")
            V.check_same_device(("x", x), ("h0", h0))
            h = _check_finite("h0", as_complex_input(h0, self.dtype, "h0"))
        return masked_scan(cell.step_function(), xp, h, mask)
