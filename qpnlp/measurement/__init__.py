"""Measurements, projective and general, and Born-rule probabilities.

* :func:`born_probabilities` - lazy :math:`\\sum_i p_i |\\langle v_k|w_i\\rangle|^2` from
  states and weights (no d x d matrices); :func:`born_probabilities_dense` for
  dense density matrices; :func:`word_probabilities` per state.
* :class:`Projector` - immutable rank-r projectors.
* :class:`ProjectiveMeasurement` - trainable measurement vectors (nn.Module).
* :func:`lueders_update` - post-measurement state.
* General measurements: :class:`POVM` (immutable effects
  :math:`E_k = M_k^\\dagger M_k` summing to the identity),
  :func:`povm_probabilities` (lazy :math:`\\operatorname{Tr}(\\rho E_k)`),
  :func:`povm_probabilities_dense`, :func:`random_povm`,
  :func:`kraus_update` (post-measurement state), :func:`naimark_dilation`
  (a projective measurement on a larger space) and the trainable
  :class:`POVMMeasurement`, a drop-in replacement for
  :class:`ProjectiveMeasurement` valid by construction.
"""

from ._born import (born_probabilities, born_probabilities_dense, povm_probabilities, povm_probabilities_dense,
                    word_probabilities)
from ._kraus import kraus_update
from ._lueders import lueders_update
from ._module import ProjectiveMeasurement
from ._naimark import NaimarkDilation, naimark_dilation
from ._povm import POVM, random_povm
from ._povm_module import POVMMeasurement
from ._projector import Projector

__all__ = [
    "born_probabilities", "born_probabilities_dense", "word_probabilities",
    "Projector", "ProjectiveMeasurement", "lueders_update",
    "POVM", "POVMMeasurement", "povm_probabilities", "povm_probabilities_dense", "random_povm",
    "kraus_update", "naimark_dilation", "NaimarkDilation",
]
