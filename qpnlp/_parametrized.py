"""Pickling of modules that register torch parametrizations on themselves.

``torch.nn.utils.parametrize.register_parametrization`` (and ``parametrizations.orthogonal``) swaps the module's
class for a generated subclass, ``Parametrized<Name>``, whose ``__getstate__`` raises ("Serialization of
parametrized modules is only supported through state_dict()") and which pickle could not find by name anyway;
only ``copy.deepcopy`` works. The library's unitary and orthonormal layers (:class:`~qpnlp.nn.StateTransition`,
the orthonormal :class:`~qpnlp.measurement.ProjectiveMeasurement`, :class:`~qpnlp.measurement.POVMMeasurement`)
are parametrized, so without :class:`PicklableParametrizations` a model holding one (CGRNN by default, QPDN and
CNM with an orthonormal or POVM head) failed ``pickle``, ``torch.save(model)``, ``copy.copy`` and
``multiprocessing`` (a model sent to a worker process).

A parametrized module is pickled as its own class and its attributes (the ``parametrizations`` with their
``original`` tensors among them); loading injects the parametrized properties again, as registering did.
"""

from __future__ import annotations

from torch import nn
from torch.nn.utils import parametrize

__all__ = ["PicklableParametrizations"]


class PicklableParametrizations:
    """Mixin (before ``nn.Module``): ``pickle``, ``torch.save`` and ``copy.copy`` work once parametrized."""

    def __reduce_ex__(self, protocol):
        if not parametrize.is_parametrized(self):
            return super().__reduce_ex__(protocol)
        own_class = type(self).__bases__[0]          # the class torch derived Parametrized<Name> from
        return _parametrized_module, (own_class, self.__dict__)


def _parametrized_module(cls: type, state: dict) -> nn.Module:
    """A ``cls`` with the attributes ``state`` and, for each tensor of ``state["_modules"]["parametrizations"]``,
    the parametrized property that ``register_parametrization`` had added."""
    module = cls.__new__(cls)
    module.__setstate__(state)
    parametrize._inject_new_class(module)
    for name in module.parametrizations:
        parametrize._inject_property(module, name)
    return module
