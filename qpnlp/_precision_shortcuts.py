"""``double()`` and ``float()`` as ``to(torch.float64)`` and ``to(torch.float32)``, for owners whose ``to`` reads a
dtype as a precision.

``torch.Tensor.double()`` of a complex tensor casts it to real float64 (dropping the imaginary part), and
``nn.Module.double()`` leaves complex tensors as they are. qpnlp's complex owners read a dtype as a precision
instead: float32 (or complex64) moves real tensors to float32 and complex ones to complex64, float64 (or
complex128) to float64 and complex128. :class:`PrecisionShortcuts` gives ``double()`` and ``float()`` that
meaning in one place, for the modules (:class:`qpnlp._module_precision.ComplexPrecisionMixin`) and the
first-class objects (:class:`qpnlp.hilbert._batched.Batched`, :class:`qpnlp.hilbert.SememeBasis`) alike; each
owner's ``to`` does the move.
"""

from __future__ import annotations

import torch

__all__ = ["PrecisionShortcuts"]


class PrecisionShortcuts:
    """``double()`` / ``float()`` of a class whose ``to(dtype)`` reads the dtype as a precision (a base before the
    class that defines ``to``, or the class itself)."""

    __slots__ = ()

    def double(self):
        """``self.to(torch.float64)``: double precision, float64 real tensors and complex128 complex ones."""
        return self.to(torch.float64)

    def float(self):
        """``self.to(torch.float32)``: single precision, float32 real tensors and complex64 complex ones."""
        return self.to(torch.float32)
