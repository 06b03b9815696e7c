"""Hilbert-space objects and the batched complex maths on them.

First-class objects (immutable wrappers around tensors):

* :class:`SememeBasis` - an orthonormal basis of C^d with optional labels;
* :class:`PureState` - unit complex vectors ``(..., d)`` (words);
* :class:`DensityMatrix` - ``(..., d, d)`` Hermitian, PSD, trace-one (sentences);
* :class:`Ensemble` - a mixture kept as states and weights (lazy, never d x d).

Free functions relate states:

* fidelities and distances: :func:`fidelity` (squared convention), :func:`infidelity`,
  :func:`trace_distance`, :func:`bures_distance`, :func:`bures_angle`,
  :func:`hellinger_distance`, :func:`hellinger_affinity`,
  :func:`hilbert_schmidt_distance`, :func:`sub_fidelity`, :func:`super_fidelity`;
* entropies: :func:`von_neumann_entropy`, :func:`renyi_entropy`,
  :func:`linear_entropy`, :func:`purity`, :func:`relative_entropy`,
  :func:`quantum_jensen_shannon_divergence`;
* composite systems: :func:`tensor_product`, :func:`partial_trace`,
  :func:`partial_transpose`, :func:`schmidt_decomposition`,
  :func:`mutual_information`, :func:`conditional_entropy`, :func:`negativity`,
  :func:`log_negativity`;
* random states: :func:`random_pure_state`, :func:`random_density_matrix`,
  :func:`random_isometry`, :func:`random_unitary`.
* bridges: :func:`to_qutip`, :func:`from_qutip` (QuTiP ``Qobj``; the ``qutip`` extra).

The functional core on plain tensors (:func:`inner`, :func:`outer`,
:func:`masked_softmax`, ...) is exported too. Validation:
:func:`set_validation`, :func:`validation`.
"""

from ._basis import SememeBasis
from ._bipartite import (SchmidtDecomposition, conditional_entropy, log_negativity, mutual_information, negativity,
                         partial_transpose, schmidt_decomposition)
from ._composite import partial_trace, tensor_product
from ._contract import contract
from ._ensemble import Ensemble
from ._entropy import (linear_entropy, purity, quantum_jensen_shannon_divergence, relative_entropy, renyi_entropy,
                       von_neumann_entropy)
from ._linalg import dagger, inner, kron, normalize, outer, promote, random_unitary, trace
from ._metrics import (bures_angle, bures_distance, fidelity, hellinger_affinity, hellinger_distance,
                       hilbert_schmidt_distance, infidelity, sub_fidelity, super_fidelity, trace_distance)
from ._mixture import masked_softmax
from ._random import random_density_matrix, random_isometry, random_pure_state
from ._qutip import from_qutip, to_qutip
from ._states import DensityMatrix, PureState
from ._validation import get_validation, set_validation, tolerance, validation

__all__ = [
    "SememeBasis", "PureState", "DensityMatrix", "Ensemble",
    "fidelity", "infidelity", "trace_distance", "bures_distance", "bures_angle", "hellinger_distance",
    "hellinger_affinity", "hilbert_schmidt_distance", "sub_fidelity", "super_fidelity",
    "von_neumann_entropy", "renyi_entropy", "linear_entropy", "relative_entropy", "purity",
    "quantum_jensen_shannon_divergence",
    "tensor_product", "partial_trace", "partial_transpose", "schmidt_decomposition", "SchmidtDecomposition",
    "mutual_information", "conditional_entropy", "negativity", "log_negativity",
    "random_pure_state", "random_density_matrix", "random_isometry", "random_unitary",
    "inner", "outer", "normalize", "dagger", "trace", "kron", "promote",
    "masked_softmax", "contract",
    "set_validation", "get_validation", "validation", "tolerance",
    "to_qutip", "from_qutip",
]
