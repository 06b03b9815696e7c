r"""Gated complex recurrent network (cgRNN) with unitary state transitions.

Implements the cell of Wolter & Yao, *Gated Complex Recurrent Neural Networks*
(poster, Bonn University; full paper "Complex Gated Recurrent Neural
Networks", NeurIPS 2018), equations (4)-(9):

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
:math:`\mathbb{C} \to [0, 1]` (see :mod:`qpnlp.models.complex_activations`).
Only the state transition :math:`\mathbf{W}` is (optionally) unitary, as in
the poster; the gate matrices :math:`\mathbf{W}_r, \mathbf{W}_z` are free
(see :mod:`qpnlp.models.unitary` for the transition modes).

Everything is in native complex tensors (complex64 or complex128); the device
follows the parameters (``module.to(device)``), and inputs must live there.

Input promotion rule
--------------------
``x`` (and ``h0``) are converted to the layer's complex dtype only when this
is lossless: a real floating input becomes complex with zero imaginary part
(float32 -> complex64 or complex128, float64 -> complex128); a complex input
of the same or lower precision is upcast. Anything that would lose precision
(e.g. complex128 or float64 into a complex64 layer) raises ``TypeError``
instead of downcasting silently; integer inputs raise ``TypeError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from qpnlp.models.complex_activations import make_activation, make_gate
from qpnlp.models.unitary import StateTransition

__all__ = ["cgrnn_step", "CGRNNCell", "CGRNN", "real_parameter_count", "as_complex_input"]


def as_complex_input(x: Tensor, dtype: torch.dtype, name: str = "x") -> Tensor:
    """Apply the module's input promotion rule: lossless promotion to ``dtype``, else ``TypeError``.

    Examples
    --------
    >>> as_complex_input(torch.ones(2), torch.complex64)
    tensor([1.+0.j, 1.+0.j])
    """
    if not (x.is_complex() or x.is_floating_point()):
        raise TypeError(f"{name} must be a real floating or complex tensor; got dtype {x.dtype}")
    if x.dtype == dtype:
        return x
    src_bits = torch.finfo(x.dtype).bits
    dst_bits = torch.finfo(dtype.to_real()).bits
    if src_bits > dst_bits:
        raise TypeError(
            f"{name} has dtype {x.dtype} but the layer is {dtype}; refusing to downcast silently "
            f"(convert the input or build the layer with a wider dtype)"
        )
    return x.to(dtype)


def cgrnn_step(
    x_proj: Tensor,
    h: Tensor,
    w: Tensor,
    w_gates: Tensor,
    activation: Callable[[Tensor], Tensor],
    gate: Callable[[Tensor], Tensor],
) -> Tensor:
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


class CGRNNCell(nn.Module):
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
        How :math:`\mathbf{W}` is kept unitary (or not); see :mod:`qpnlp.models.unitary`.
    hirose_m : float
        Scale :math:`m` of the Hirose non-linearity (default 1, fixed).
    dtype : torch.dtype
        complex64 (default) or complex128.
    device : torch.device, optional

    Notes
    -----
    Initialisation: :math:`\mathbf{W}` Haar-random unitary (also for ``"free"``,
    so the comparison starts from the same point); :math:`\mathbf{V}_*` and
    :math:`\mathbf{W}_r, \mathbf{W}_z` complex normal with
    :math:`E|w|^2 = 1/\text{fan-in}`; biases and the modReLU bias 0.

    Examples
    --------
    >>> cell = CGRNNCell(3, 4, activation="hirose", gate="prod")
    >>> h = cell(torch.randn(2, 3))  # real input is promoted to complex64
    >>> h.shape, h.dtype
    (torch.Size([2, 4]), torch.complex64)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        activation: str = "modrelu",
        gate: str = "sum",
        alpha: float = 0.5,
        learn_alpha: bool = False,
        transition: str = "expm",
        hirose_m: float = 1.0,
        dtype: torch.dtype = torch.complex64,
        device=None,
    ):
        super().__init__()
        if dtype not in (torch.complex64, torch.complex128):
            raise TypeError(f"dtype must be complex64 or complex128; got {dtype}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.dtype = dtype
        n = hidden_size
        self.input_weight = nn.Parameter(
            torch.randn(3 * n, input_size, dtype=dtype, device=device) / math.sqrt(max(input_size, 1))
        )
        self.input_bias = nn.Parameter(torch.zeros(3 * n, dtype=dtype, device=device))
        self.gate_weight = nn.Parameter(torch.randn(2 * n, n, dtype=dtype, device=device) / math.sqrt(n))
        self.transition = StateTransition(n, mode=transition, dtype=dtype, device=device)
        act_kwargs = {"m": hirose_m} if activation == "hirose" else {}
        self.activation = make_activation(activation, n, dtype=dtype.to_real(), device=device, **act_kwargs)
        gate_kwargs = {"alpha": alpha, "learnable": learn_alpha} if gate == "sum" else {}
        self.gate = make_gate(gate, dtype=dtype.to_real(), device=device, **gate_kwargs)
        self.activation_name = activation
        self.gate_name = gate

    def project_inputs(self, x: Tensor) -> Tensor:
        r"""Input projections of all three branches at once.

        Parameters
        ----------
        x : Tensor, shape (..., d_in), real or complex (promotion rule in the module docstring)

        Returns
        -------
        Tensor, complex, shape (..., 3h).
        """
        x = as_complex_input(x, self.dtype)
        return x @ self.input_weight.mT + self.input_bias

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        r"""One step.

        Parameters
        ----------
        x : Tensor, shape (B, d_in), real or complex
        h : Tensor, complex, shape (B, h), optional (default zeros)

        Returns
        -------
        Tensor, complex, shape (B, h).
        """
        xp = self.project_inputs(x)
        if h is None:
            h = xp.new_zeros(*xp.shape[:-1], self.hidden_size)
        else:
            h = as_complex_input(h, self.dtype, "h")
        return cgrnn_step(xp, h, self.transition(), self.gate_weight, self.activation, self.gate)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, dtype={self.dtype}"


class CGRNN(nn.Module):
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
        self.cell = CGRNNCell(input_size, hidden_size, **cell_kwargs)

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
        if x.ndim != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"x must have shape (B, T, {self.input_size}); got {tuple(x.shape)}")
        bsz, steps = x.shape[:2]
        if mask is not None:
            if mask.dtype != torch.bool or mask.shape != (bsz, steps):
                raise ValueError(
                    f"mask must be a bool tensor of shape {(bsz, steps)}; got {mask.dtype} {tuple(mask.shape)}"
                )
        cell = self.cell
        xp = cell.project_inputs(x)  # (B, T, 3h)
        if h0 is None:
            h = xp.new_zeros(bsz, self.hidden_size)
        else:
            if h0.shape != (bsz, self.hidden_size):
                raise ValueError(f"h0 must have shape {(bsz, self.hidden_size)}; got {tuple(h0.shape)}")
            h = as_complex_input(h0, self.dtype, "h0")
        w = cell.transition()
        w_gates = cell.gate_weight
        outputs = []
        masks = mask.unsqueeze(-1).unbind(1) if mask is not None else None
        for t, xp_t in enumerate(xp.unbind(1)):
            h_new = cgrnn_step(xp_t, h, w, w_gates, cell.activation, cell.gate)
            h = h_new if masks is None else torch.where(masks[t], h_new, h)
            outputs.append(h)
        out = torch.stack(outputs, dim=1) if outputs else xp.new_zeros(bsz, 0, self.hidden_size)
        return out, h


def real_parameter_count(module: nn.Module) -> int:
    """Number of real numbers in ``module.parameters()`` (a complex entry counts as 2).

    For the ``"expm"``/``"cayley"`` transitions this counts the stored (n, n)
    complex parameter, of which only :math:`n^2` real degrees of freedom are
    used (the skew-Hermitian part).

    Examples
    --------
    >>> real_parameter_count(nn.Linear(3, 2))
    8
    """
    return sum(p.numel() * (2 if p.is_complex() else 1) for p in module.parameters())
