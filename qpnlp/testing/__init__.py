"""Testing toolkit shipped to users: hypothesis strategies and assertion helpers.

Property-test your own quantum-probability models the way qpnlp tests itself::

    from hypothesis import given
    from qpnlp.testing import ensembles, assert_probabilities

    @given(ensembles(dim=8))
    def test_my_measurement(mix):
        assert_probabilities(my_measurement(mix.states.data, mix.weights))
"""

from ._assertions import (assert_allclose, assert_density_matrix, assert_povm, assert_probabilities,
                          assert_pure_state, assert_unitary)
from ._strategies import (batch_shapes, complex_dtypes, density_matrices, dims, ensembles, isometries, povms,
                          projectors, pure_states, unitaries)
from ._tolerances import ATOL_PER_DIM, default_atol

__all__ = [
    "pure_states", "ensembles", "density_matrices", "unitaries", "projectors", "isometries", "povms",
    "dims", "batch_shapes", "complex_dtypes",
    "assert_allclose", "assert_pure_state", "assert_density_matrix", "assert_probabilities", "assert_unitary",
    "assert_povm",
    "default_atol", "ATOL_PER_DIM",
]
