r"""The one masked recurrence, :func:`masked_scan` (re-exported by :mod:`qpnlp.nn.recurrent`, where the API
reference documents it), and the checks of what the recurrent layers and cells of qpnlp are given.

:math:`s_t = m_t\,\mathrm{step}(x_t, s_{t-1}) + (1 - m_t)\, s_{t-1}` (a selection, not arithmetic): at a padded
step the state is carried over unchanged, so padding anywhere (left, right, or holes) never changes the state after
the last real step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch
from torch import Tensor, nn

from qpnlp.hilbert import _validation as V

from .functional import as_complex_input

__all__ = ["masked_scan"]

State = TypeVar("State", Tensor, tuple)


def _check_mask(mask: Tensor | None, bsz: int, steps: int) -> None:
    if mask is not None:
        V.check_tensor("mask", mask)
    if mask is not None and (mask.dtype != torch.bool or mask.shape != (bsz, steps)):
        raise ValueError(f"mask must be a bool tensor of shape {(bsz, steps)}; got {mask.dtype} {tuple(mask.shape)}")


def _checked_input(name: str, x: Tensor, mask: Tensor | None = None) -> Tensor:
    """``x`` with zeros at the padded steps (``_zero_padding``), checked: a tensor on the mask's device, and,
    while validation is on (:func:`qpnlp.hilbert.set_validation`), finite at the real steps, with the check and
    the message of every finiteness check of qpnlp (``check_finite``: the first bad value and the index of its step,
    ``(b, t)``, or ``(b,)`` for a cell's step): NaN or inf there would flow into every later state.

    Padded steps may hold anything (the state is carried over them).
    """
    V.check_tensor(name, x)
    if mask is not None and x.ndim >= 2:
        V.check_same_device((name, x), ("mask", mask))
    return _check_finite(name, _zero_padding(x, mask))


def _check_finite(name: str, x: Tensor) -> Tensor:
    """``x`` (B, ..., d) or (d,), checked while validation is on: ValueError naming ``name``, the first NaN or inf
    and its batch index (``check_finite``). The one finiteness check of the recurrent inputs and of the states
    given to a cell or a layer (``h``, ``c``, ``h0``): a NaN state would flow into every later state."""
    if V.enabled() and (x.is_floating_point() or x.is_complex()):
        V.check_finite(name, x, event_ndim=min(x.ndim, 1))
    return x


def _cell_input(x: Tensor, input_size: int, batched: bool = True) -> Tensor:
    """A cell's step ``x``, checked: (B, input_size), or (..., input_size) for ``batched=False`` (CGRNNCell)."""
    V.check_tensor("x", x)
    if x.shape[-1:] != (input_size,) or (batched and x.ndim != 2):
        raise ValueError(f"x must have shape ({'B' if batched else '...'}, {input_size}); got {tuple(x.shape)}")
    return x


def _zero_padding(x: Tensor, mask: Tensor | None) -> Tensor:
    """``x`` (B, T, ...) with zeros at the padded steps: a padded step may hold anything (NaN, inf), and the
    gradient of the input projection would read it (0 * NaN = NaN) although the scan discards its state."""
    return x if mask is None else x.masked_fill(~mask.view(*mask.shape, *(1,) * (x.ndim - 2)), 0)


def masked_scan(step: Callable[[Tensor, State], State], inputs: Tensor, state: State, mask: Tensor | None = None,
                output: Callable[[State], Tensor] | None = None) -> tuple[Tensor, State]:
    r"""Run a recurrence over time, carrying the state over masked steps.

    .. math::

        s_t = \begin{cases} \mathrm{step}(x_t, s_{t-1}) & m_t \\ s_{t-1} & \text{otherwise} \end{cases},
        \qquad y_t = \mathrm{output}(s_t)

    Parameters
    ----------
    step : callable ``(x_t (B, ...), state) -> state``
        One step; ``state`` is a tensor ``(B, h)`` or a tuple of them (LSTM: ``(h, c)``).
    inputs : Tensor, shape (B, T, ...)
        Per-step inputs (usually pre-projected).
    state : Tensor (B, h) or tuple of them
        Initial state :math:`s_0`.
    mask : bool Tensor, shape (B, T), optional
        True at real steps. ``None``: every step is real.
    output : callable ``state -> Tensor (B, h)``, optional
        What is reported per step (default: the state itself).

    Returns
    -------
    outputs : Tensor, shape (B, T, h)
        :math:`y_t` after every step (a padded step repeats the previous one).
    state : Tensor or tuple
        :math:`s_T`, the state after the last real step.

    Examples
    --------
    >>> x = torch.ones(1, 4, 1)
    >>> out, s = masked_scan(lambda x_t, s: s + x_t, x, torch.zeros(1, 1), torch.tensor([[True, False, True, False]]))
    >>> out[0, :, 0].tolist(), s.item()
    ([1.0, 1.0, 2.0, 2.0], 2.0)
    """
    V.check_tensor("inputs", inputs)
    V.check_min_ndim("inputs", inputs, 2, "(B, T, ...)")     # unbind(1) raised torch's IndexError
    if mask is not None:
        V.check_tensor("mask", mask)
        if mask.dtype != torch.bool:            # torch.where's own error named no argument
            raise TypeError(f"mask must be a bool tensor (True at real steps); got {mask.dtype}")
        _check_mask(mask, *inputs.shape[:2])    # (B, T) of inputs, not torch.where's broadcast error
        V.check_same_device(("inputs", inputs), ("mask", mask))
    output = (lambda s: s) if output is None else output
    masks = mask.unsqueeze(-1).unbind(1) if mask is not None else None
    outputs = []
    for t, x_t in enumerate(inputs.unbind(1)):
        new = step(x_t, state)
        if masks is not None:
            m = masks[t]
            new = tuple(torch.where(m, a, b) for a, b in zip(new, state)) if isinstance(new, tuple) else \
                torch.where(m, new, state)
        state = new
        outputs.append(output(state))
    if outputs:
        return torch.stack(outputs, 1), state
    y = output(state)
    return y.new_zeros(y.shape[0], 0, *y.shape[1:]), state


def _cell_repr(cell: nn.Module) -> str:
    """The ``extra_repr`` of the cells, as torch's ``LSTMCell(3, 4)``: input and hidden sizes, dtype."""
    return f"{cell.input_size}, {cell.hidden_size}, dtype={cell.dtype}"


def _check_cell_state(name: str, state: Tensor, shape: tuple[int, ...], x: Tensor) -> Tensor:
    """A cell's state given to its ``forward``, checked: a tensor of the shape ``(B, hidden)`` of its projected
    input ``x``, on its device, in its dtype by the layers' input rule (``as_complex_input`` with ``upcast=False``:
    TypeError naming the state; a complex128 or an integer state met torch's matmul error, or one named ``x``), and
    finite while validation is on (:func:`_check_finite`)."""
    if not isinstance(state, Tensor) or state.shape != shape:
        got = tuple(state.shape) if isinstance(state, Tensor) else type(state).__name__
        raise ValueError(f"{name} must be a tensor of shape {tuple(shape)} (batch, hidden); got {got}")
    V.check_same_device(("x", x), (name, state))
    return _check_finite(name, as_complex_input(state, x.dtype, name, upcast=False))
