"""Cached optimised contractions for three or more operands.

Two-operand contractions use ``torch.einsum`` or matmul directly. For three or
more, :func:`contract` asks ``opt_einsum`` for a contraction order once per
(equation, shapes) and reuses the compiled expression.
"""

from __future__ import annotations

import functools

import opt_einsum
import torch

from ._validation import check_complex_width


@functools.lru_cache(maxsize=512)
def _expression(equation: str, shapes: tuple[tuple[int, ...], ...]):
    return opt_einsum.contract_expression(equation, *shapes, optimize="auto")


def contract(equation: str, *operands: torch.Tensor) -> torch.Tensor:
    """Evaluate an einsum ``equation`` with an optimised, cached contraction order.

    Parameters
    ----------
    equation : str
        Einstein-summation equation, e.g. ``"kd,...de,ke->...k"``.
    *operands : torch.Tensor
        Tensors of any shapes consistent with the equation; an equation that does not fit them is a ValueError
        (whatever the number of operands), a complex32 operand a TypeError (convert it to complex64).

    Examples
    --------
    >>> a, b, c = torch.ones(2, 3), torch.ones(3, 4), torch.ones(4, 5)
    >>> contract("ij,jk,kl->il", a, b, c).shape
    torch.Size([2, 5])
    """
    for i, op in enumerate(operands):
        check_complex_width(f"operands[{i}]", op)
    if len(operands) < 3:
        try:
            return torch.einsum(equation, *operands)
        except RuntimeError:        # an equation that does not fit the operands: opt_einsum's ValueError names why
            _expression(equation, _shapes(operands))
            raise
    return _expression(equation, _shapes(operands))(*operands, backend="torch")


def _shapes(operands: tuple[torch.Tensor, ...]) -> tuple[tuple[int, ...], ...]:
    """The shapes of the operands, the key of ``_expression``; TypeError naming an operand that is no tensor."""
    for i, op in enumerate(operands):
        if not isinstance(op, torch.Tensor):
            raise TypeError(f"operands[{i}] must be a torch.Tensor; got {type(op).__name__}")
    return tuple(tuple(op.shape) for op in operands)
