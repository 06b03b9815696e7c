"""Hilbert-space objects and the batched complex maths on them.

First-class objects (immutable wrappers around tensors):

* :class:`SememeBasis` - an orthonormal basis of C^d with optional labels;
* :class:`PureState` - unit complex vectors ``(..., d)`` (words);
* :class:`DensityMatrix` - ``(..., d, d)`` Hermitian, PSD, trace-one (sentences);
* :class:`Ensemble` - a mixture kept as states and weights (lazy, never d x d).

Free functions relate states: :func:`fidelity`, :func:`trace_distance`,
:func:`von_neumann_entropy`, :func:`relative_entropy`, :func:`purity`,
:func:`tensor_product`, :func:`partial_trace`. The functional core on plain
tensors (:func:`inner`, :func:`outer`, :func:`masked_softmax`, ...) is exported
too. Validation: :func:`set_validation`, :func:`validation`.
"""

from ._basis import SememeBasis
from ._composite import partial_trace, tensor_product
from ._contract import contract
from ._density import DensityMatrix
from ._ensemble import Ensemble, masked_softmax
from ._linalg import dagger, inner, kron, normalize, outer, promote, random_unitary, trace
from ._metrics import fidelity, purity, relative_entropy, trace_distance, von_neumann_entropy
from ._state import PureState
from ._validation import get_validation, set_validation, tolerance, validation

__all__ = [
    "SememeBasis", "PureState", "DensityMatrix", "Ensemble",
    "fidelity", "trace_distance", "von_neumann_entropy", "relative_entropy", "purity",
    "tensor_product", "partial_trace",
    "inner", "outer", "normalize", "dagger", "trace", "kron", "promote", "random_unitary",
    "masked_softmax", "contract",
    "set_validation", "get_validation", "validation", "tolerance",
]
