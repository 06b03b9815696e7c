"""Projective measurements and Born-rule probabilities.

* :func:`born_probabilities` - lazy :math:`\\sum_i p_i |\\langle v_k|w_i\\rangle|^2` from
  states and weights (no d x d matrices); :func:`born_probabilities_dense` for
  dense density matrices; :func:`word_probabilities` per state.
* :class:`Projector` - immutable rank-r projectors.
* :class:`ProjectiveMeasurement` - trainable measurement vectors (nn.Module).
* :func:`lueders_update` - post-measurement state.
"""

from ._born import born_probabilities, born_probabilities_dense, word_probabilities
from ._lueders import lueders_update
from ._module import ProjectiveMeasurement
from ._projector import Projector

__all__ = [
    "born_probabilities", "born_probabilities_dense", "word_probabilities",
    "Projector", "ProjectiveMeasurement", "lueders_update",
]
