"""Dtype moves of the models: ``to(dtype)``, ``type()``, ``double()``, ``float()`` keep complex parameters in step.

``torch.nn.Module.to(torch.float64)`` casts complex parameters to float64
(dropping the imaginary part), and ``double()`` / ``float()`` leave them
untouched, so a complex64 measurement would sit next to float64 tables.
:class:`PrecisionMixin` (a base of :class:`~qpnlp.models.Model`) maps a
precision to both families instead (``qpnlp._module_precision``, which the
trainable measurements use too): float32 <-> complex64, float64 <->
complex128, records it in the config (``complex128`` or ``precision``
field), and refuses half precisions and configs that cannot record it.
:func:`check_one_precision` finds a model whose submodules were moved apart
(``model.embedding.double()``: one layer moved on its own).
"""

from __future__ import annotations

import dataclasses

import torch

from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp.hilbert import _validation as V

__all__ = ["PrecisionMixin", "check_one_precision", "recorded_precision"]


class PrecisionMixin(ComplexPrecisionMixin):
    """``to`` / ``double`` / ``float`` / ``half`` for a model with a ``config`` dataclass (see the module docstring).

    ``to`` sets the precision as :class:`~qpnlp._module_precision.ComplexPrecisionMixin` does, and the config
    records the new precision (see :meth:`config_for_precision`), so ``save_pretrained`` and ``from_pretrained``
    round-trip the moved model. Half precisions raise TypeError, as does a model whose config has no precision
    option.
    """

    def _at_precision(self, real: torch.dtype) -> bool:
        """Every tensor at precision ``real``, and the config records it (or no precision)."""
        return super()._at_precision(real) and recorded_precision(self.config) in (None, real)

    def _move_to_precision(self, device, real: torch.dtype, non_blocking: bool) -> None:
        """The move of ``ComplexPrecisionMixin``, after the config for ``real`` is known (TypeError first)."""
        config = self.config_for_precision(real)
        super()._move_to_precision(device, real, non_blocking)
        self.config = config

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


def recorded_precision(config) -> torch.dtype | None:
    """The real dtype a config records (its ``complex128`` or ``precision`` field); None if it records none."""
    names = {f.name for f in dataclasses.fields(config)}
    if "complex128" in names:
        return torch.float64 if config.complex128 else torch.float32
    if "precision" in names:
        return torch.float64 if config.precision == "double" else torch.float32
    return None


def check_one_precision(model, validate: V.Validate = None) -> None:
    """TypeError naming the submodule and the dtypes when ``model``'s floating and complex tensors are not all of
    one precision (float32 / complex64, or float64 / complex128); only while validation is on (``validate``, None:
    the global switch, :func:`qpnlp.hilbert.set_validation`).

    The precision is the one the config records (:func:`recorded_precision`), else that of the first tensor.
    ``model.double()`` moves every tensor in step (:class:`PrecisionMixin`), but a submodule's own
    ``double()`` or ``to(dtype)`` moves it alone (so does the ``double()`` of a ``torch.compile`` wrapper, which
    is ``nn.Module``'s): the forward pass then raised torch's "expected scalar type Float but found Double" deep
    inside a layer, or ran with part of the model widened. :meth:`~qpnlp.models.Model.check_batch` calls this for
    every batch it checks: one pass over the modules' tensor dicts, no host sync (8 us for a QPDN, 12 us for a
    CGRNN, of the 40 us that QPDN's whole batch check of 32 x 20 ids takes on the CPU); the tensors' names are
    walked for the message only.
    """
    if not V.enabled(validate):
        return
    dtypes = {t.dtype for module in model.modules() for t in (*module._parameters.values(),
                                                               *module._buffers.values()) if t is not None}
    precisions = {V.real_dtype_of(d) for d in dtypes if d.is_floating_point or d.is_complex}
    recorded = recorded_precision(model.config)
    if len(precisions) > 1 or (recorded is not None and precisions - {recorded}):
        _refuse_two_precisions(model, recorded)


def _refuse_two_precisions(model, expected: torch.dtype | None) -> None:
    """The TypeError of :func:`check_one_precision`: the first tensor whose precision is not ``expected`` (the
    config's; None: the first tensor's), with its submodule."""
    reference = f"the precision its config {type(model.config).__name__} records"
    for name, tensor in (*model.named_parameters(), *model.named_buffers()):
        if not (tensor.is_floating_point() or tensor.is_complex()):
            continue
        real = V.real_dtype_of(tensor.dtype)
        if expected is None:
            expected, reference = real, f"{name} is {tensor.dtype}"
        elif real != expected:
            raise TypeError(f"{type(model).__name__} holds tensors of two precisions: {name} (submodule "
                            f"{_submodule(name)}) is {tensor.dtype}, but the model is {_family(expected)} "
                            f"({reference}); a submodule moved alone (its own double() or to(dtype)) mixes them: "
                            f"move the whole model, model.double() or model.float(), which keeps its real and "
                            f"complex tensors in step")


def _family(real: torch.dtype) -> str:
    """``"float32/complex64"`` or ``"float64/complex128"``."""
    return "float64/complex128" if real == torch.float64 else "float32/complex64"


def _submodule(name: str) -> str:
    """The submodule that owns the tensor ``name`` (the module a parametrization is registered on), or
    ``"(the model itself)"``."""
    head, parametrized, _ = f".{name}".partition(".parametrizations.")
    owner = head if parametrized else head.rpartition(".")[0]
    return owner.lstrip(".") or "(the model itself)"
