"""Precision moves of modules that hold complex tensors: ``to(dtype)``, ``type()``, ``double()``, ``float()``.

``torch.nn.Module.to(torch.float64)`` casts complex parameters to float64,
dropping their imaginary parts (with a warning only: "Casting complex values
to real discards the imaginary part"), and ``double()`` / ``float()`` leave
them untouched, so a complex128 measurement moved with ``to(torch.float64)``
became a real one, and a complex64 one moved with ``double()`` stayed
complex64. :class:`ComplexPrecisionMixin` reads a dtype as a precision and
maps it to both families instead (``double()`` asks for double precision, not
for a real module): float32 and complex64 give float32 / complex64, float64
and complex128 give float64 / complex128, as the states' own ``to`` reads a
dtype (:meth:`qpnlp.hilbert.PureState.to`). Half precisions have no complex
counterpart and are refused (TypeError), rather than leaving the complex
tensors as they were.

Every public module of :mod:`qpnlp.nn` and the trainable measurements
(:class:`~qpnlp.measurement.ProjectiveMeasurement`,
:class:`~qpnlp.measurement.POVMMeasurement`) use it (torch's own
``to(torch.complex128)`` also made the real parameters of the real layers
complex: a ``ModReLU`` bias, a ``RealPositionalEmbedding`` table), and so do
the models, whose :class:`~qpnlp.models._precision.PrecisionMixin` also records
the precision in their config. ``double()`` and ``float()`` come from
:class:`~qpnlp._precision_shortcuts.PrecisionShortcuts`, shared with the
first-class objects of :mod:`qpnlp.hilbert` and :mod:`qpnlp.measurement`.
"""

from __future__ import annotations

import torch
from torch.nn.utils import parametrize

from qpnlp.hilbert._widen import orthonormal_columns

from qpnlp._precision_shortcuts import PrecisionShortcuts

__all__ = ["ComplexPrecisionMixin", "precision_of"]


class ComplexPrecisionMixin(PrecisionShortcuts):
    """``to`` / ``type`` / ``double`` / ``float`` / ``half`` of an ``nn.Module`` (a base before it) that keep complex
    tensors complex (see the module docstring)."""

    def to(self, *args, **kwargs):
        """``nn.Module.to`` that keeps complex tensors in step with the real ones.

        A floating or complex ``dtype`` sets the precision: float32 (or complex64) moves real tensors to float32
        and complex ones to complex64; float64 (or complex128) to float64 and complex128. Half precisions have no
        complex counterpart and raise TypeError. A move without a dtype is ``nn.Module.to``'s.
        """
        device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
        if dtype is None:
            return super().to(*args, **kwargs)
        real = precision_of(dtype, type(self).__name__)
        if self._at_precision(real):               # all there already (a submodule moved alone is moved back)
            return super().to(device=device, non_blocking=non_blocking) if device is not None else self
        self._move_to_precision(device, real, non_blocking)
        return self

    def _move_to_precision(self, device, real: torch.dtype, non_blocking: bool) -> None:
        """Move every real floating tensor to ``real`` and every complex one to its complex dtype (and ``device``);
        then each submodule moved from single to double precision takes its :meth:`_widened` step."""
        cplx = torch.complex128 if real == torch.float64 else torch.complex64
        widened = [m for m in self.modules() if isinstance(m, ComplexPrecisionMixin) and m._widens_to(real)]
        self._apply(lambda t: t.to(device, real if t.is_floating_point() else cplx if t.is_complex() else None,
                                   non_blocking))
        for module in self.modules():                      # layers that remember their dtype
            held = module.__dict__.get("dtype")
            if isinstance(held, torch.dtype) and (held.is_complex or held.is_floating_point):
                module.__dict__["dtype"] = cplx if held.is_complex else real
        for module in widened:
            module._widened()

    def _widened(self) -> None:
        """Hook after a move from single to double precision: remove float32's round-off from the tensors that
        hold an invariant (an orthonormal base), as the first-class objects' ``_widened`` does
        (``qpnlp.hilbert._widen``); the default does nothing. Runs for every submodule the move widened, also
        when the move is a parent's (``model.double()``)."""

    def _widens_to(self, real: torch.dtype) -> bool:
        """Whether a move to precision ``real`` takes this module from single to double precision and its class
        has a :meth:`_widened` step."""
        return (real == torch.float64 and type(self)._widened is not ComplexPrecisionMixin._widened
                and self._real_dtype() == torch.float32)

    def type(self, dst_type):
        """``nn.Module.type`` through :meth:`to`: a dtype or a tensor type name such as ``"torch.DoubleTensor"``
        (``nn.Module.type`` itself casts complex parameters to the real type, dropping their imaginary parts)."""
        if isinstance(dst_type, torch.dtype):
            return self.to(dst_type)
        probe = torch.empty(0).type(dst_type)              # the device and dtype the name stands for
        return self.to(probe.device, probe.dtype)

    def half(self):
        """Refused: half precision has no complex counterpart (see :meth:`to`)."""
        raise TypeError(f"{type(self).__name__} supports float32/complex64 and float64/complex128 only "
                        f"(half precision has no complex counterpart)")

    bfloat16 = half

    def _at_precision(self, real: torch.dtype) -> bool:
        """Whether every floating and complex parameter and buffer is at precision ``real`` already."""
        return all((t.real.dtype if t.is_complex() else t.dtype) == real for t in (*self.parameters(), *self.buffers())
                   if t.is_floating_point() or t.is_complex())

    def _real_dtype(self) -> torch.dtype | None:
        """The real dtype of the first floating or complex parameter or buffer (None without one)."""
        for t in list(self.parameters()) + list(self.buffers()):
            if t.is_floating_point() or t.is_complex():
                return t.real.dtype if t.is_complex() else t.dtype
        return None


def precision_of(dtype: torch.dtype, owner: str) -> torch.dtype:
    """float32 or float64 for a floating or complex target dtype; TypeError naming ``owner`` for anything else."""
    if dtype in (torch.float32, torch.complex64):
        return torch.float32
    if dtype in (torch.float64, torch.complex128):
        return torch.float64
    raise TypeError(f"{owner} supports float32/complex64 and float64/complex128 only; got {dtype}")


def widen_orthogonal_base(module: torch.nn.Module) -> None:
    r"""Re-orthonormalise the base :math:`W_0` of ``module.weight``'s ``orthogonal`` parametrisation, just moved
    from single to double precision.

    torch's parametrisation returns :math:`W = W_0 Q(A)` (columns, or rows for a wide weight), :math:`Q(A)` the
    matrix exponential :math:`\exp(A)` or the Cayley map of the skew-Hermitian :math:`A` from the parameter, with
    the unitary ``(p, p)`` buffer :math:`W_0`, p the larger side of the ``(m, n)`` weight, fixed when the weight
    was assigned (the trivialisation). So one step serves every module that holds such a weight: the orthonormal
    :class:`~qpnlp.measurement.ProjectiveMeasurement` (rows), the isometry of a :class:`~qpnlp.measurement.POVMMeasurement`
    (columns) and the unitary :class:`~qpnlp.nn.StateTransition` (``"expm"``, ``"cayley"``; square). Cast from
    complex64, :math:`Q(A)` is unitary to float64's round-off but :math:`W_0` keeps float32's,
    :math:`\max|W_0^\dagger W_0 - I| \approx 10^{-7}`, and so does :math:`W`; a QR
    (``qpnlp.hilbert._widen.orthonormal_columns``) moves :math:`W_0` by that much only and leaves it unitary to
    float64's round-off (a base further off is kept).
    """
    parametrization = orthogonal_parametrization(module)
    with torch.no_grad():
        parametrization.base = orthonormal_columns(parametrization.base)


def orthogonal_parametrization(module: torch.nn.Module) -> torch.nn.Module | None:
    r"""The ``orthogonal`` parametrisation of ``module.weight`` that holds a base :math:`W_0` (its ``base``
    buffer, :func:`widen_orthogonal_base`), or None: no parametrised weight, another parametrisation (the
    ``"skew_expm"`` exponential), or an orthogonal one without a base (``use_trivialization=False``).

    Found through torch's public API (``parametrize.is_parametrized`` and the documented
    ``module.parametrizations.weight[0].base``), not by the class, which torch keeps private (``_Orthogonal``)."""
    if not parametrize.is_parametrized(module, "weight"):
        return None
    parametrization = module.parametrizations.weight[0]
    return parametrization if isinstance(getattr(parametrization, "base", None), torch.Tensor) else None
