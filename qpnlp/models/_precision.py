"""Dtype moves of the models: ``to(dtype)``, ``type()``, ``double()``, ``float()`` keep complex parameters in step.

``torch.nn.Module.to(torch.float64)`` casts complex parameters to float64
(dropping the imaginary part), and ``double()`` / ``float()`` leave them
untouched, so a complex64 measurement would sit next to float64 tables.
:class:`PrecisionMixin` (a base of :class:`~qpnlp.models.Model`) maps a
precision to both families instead: float32 <-> complex64, float64 <->
complex128, records it in the config (``complex128`` or ``precision``
field), and refuses half precisions and configs that cannot record it.
"""

from __future__ import annotations

import dataclasses

import torch

__all__ = ["PrecisionMixin", "recorded_precision"]


class PrecisionMixin:
    """``to`` / ``double`` / ``float`` / ``half`` for a model with a ``config`` dataclass (see the module docstring)."""

    def to(self, *args, **kwargs):
        """``nn.Module.to`` that keeps complex parameters in step with the real ones.

        A floating ``dtype`` sets the precision: float32 (or complex64) moves
        real tensors to float32 and complex ones to complex64; float64 (or
        complex128) to float64 and complex128. The config records the new
        precision (see :meth:`config_for_precision`), so ``save_pretrained``
        and ``from_pretrained`` round-trip the moved model. Half precisions
        have no complex counterpart and raise TypeError, as does a model whose
        config has no precision option.
        """
        device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
        if dtype is None:
            return super().to(*args, **kwargs)
        real = _precision_of(dtype, type(self).__name__)
        if real == self._real_dtype():
            return super().to(device=device, non_blocking=non_blocking) if device is not None else self
        config = self.config_for_precision(real)
        cplx = torch.complex128 if real == torch.float64 else torch.complex64
        self._apply(lambda t: t.to(device, real if t.is_floating_point() else cplx if t.is_complex() else None,
                                   non_blocking))
        for module in self.modules():                      # layers that remember their dtype
            held = module.__dict__.get("dtype")
            if isinstance(held, torch.dtype) and (held.is_complex or held.is_floating_point):
                module.__dict__["dtype"] = cplx if held.is_complex else real
        self.config = config
        return self

    def type(self, dst_type):
        """``nn.Module.type`` through :meth:`to`: a dtype or a tensor type name such as ``"torch.DoubleTensor"``
        (``nn.Module.type`` itself casts complex parameters to the real type, dropping their imaginary parts)."""
        if isinstance(dst_type, torch.dtype):
            return self.to(dst_type)
        probe = torch.empty(0).type(dst_type)              # the device and dtype the name stands for
        return self.to(probe.device, probe.dtype)

    def double(self):
        """Move to float64 / complex128 (see :meth:`to`)."""
        return self.to(torch.float64)

    def float(self):
        """Move to float32 / complex64 (see :meth:`to`)."""
        return self.to(torch.float32)

    def half(self):
        """Refused: half precision has no complex counterpart (see :meth:`to`)."""
        raise TypeError(f"{type(self).__name__} supports float32/complex64 and float64/complex128 only "
                        f"(half precision has no complex counterpart)")

    bfloat16 = half

    def _real_dtype(self) -> torch.dtype | None:
        for t in list(self.parameters()) + list(self.buffers()):
            if t.is_floating_point() or t.is_complex():
                return t.real.dtype if t.is_complex() else t.dtype
        return None

    def config_for_precision(self, real: torch.dtype):
        """The config describing this model in precision ``real`` (float32 or float64).

        The default understands a ``complex128: bool`` field or a
        ``precision: "single" | "double"`` field; a config with neither
        cannot record a precision change, so the move raises TypeError.
        """
        names = {f.name for f in dataclasses.fields(self.config)}
        if "complex128" in names:
            return dataclasses.replace(self.config, complex128=real == torch.float64)
        if "precision" in names:
            return dataclasses.replace(self.config, precision="double" if real == torch.float64 else "single")
        raise TypeError(f"{type(self).__name__} is built in {self._real_dtype()} only: its config "
                        f"{type(self.config).__name__} has no precision option, so a moved model could not be "
                        f"saved and loaded; build the model in the precision you need")


def _precision_of(dtype: torch.dtype, owner: str) -> torch.dtype:
    """float32 or float64 for a floating or complex target dtype; TypeError for anything else."""
    if dtype in (torch.float32, torch.complex64):
        return torch.float32
    if dtype in (torch.float64, torch.complex128):
        return torch.float64
    raise TypeError(f"{owner} supports float32/complex64 and float64/complex128 only; got {dtype}")


def recorded_precision(config) -> torch.dtype | None:
    """The real dtype a config records (its ``complex128`` or ``precision`` field); None if it records none."""
    names = {f.name for f in dataclasses.fields(config)}
    if "complex128" in names:
        return torch.float64 if config.complex128 else torch.float32
    if "precision" in names:
        return torch.float64 if config.precision == "double" else torch.float32
    return None
