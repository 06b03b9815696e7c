"""Random states: valid objects, reproducible with a generator, and the right distributions (known moments)."""

import numpy as np
import pytest
import torch

from qpnlp.hilbert import DensityMatrix, random_density_matrix, random_isometry, random_pure_state, random_unitary
from qpnlp.testing import assert_allclose, assert_density_matrix, assert_pure_state


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_samplers_are_valid_and_reproducible(cdtype, tol):
    psi = random_pure_state(4, batch_shape=(2, 3), dtype=cdtype, generator=_gen())
    assert psi.batch_shape == (2, 3) and psi.dim == 4 and psi.dtype == cdtype
    assert_pure_state(psi)
    assert torch.equal(psi.data, random_pure_state(4, batch_shape=(2, 3), dtype=cdtype, generator=_gen()).data)
    for measure in ("hilbert-schmidt", "bures"):
        for rank in (1, 2, 5):
            rho = random_density_matrix(5, rank=rank, measure=measure, batch_shape=(3,), dtype=cdtype, generator=_gen())
            assert_density_matrix(rho)
            lam = rho.eigvals()
            assert bool(((lam > tol(5)).sum(-1) == rank).all()), (measure, rank, lam)      # the others are round-off
            again = random_density_matrix(5, rank=rank, measure=measure, batch_shape=(3,), dtype=cdtype,
                                          generator=_gen())
            assert torch.equal(rho.data, again.data)
    v = random_isometry(6, 4, batch_shape=(2,), dtype=cdtype, generator=_gen())
    assert v.shape == (2, 6, 4)
    assert_allclose(v.mH @ v, torch.eye(4, dtype=cdtype).expand(2, 4, 4))
    u = random_isometry(3, 3, dtype=cdtype, generator=_gen())
    assert_allclose(u @ u.mH, torch.eye(3, dtype=cdtype))


def test_float_dtypes_map_to_complex():
    assert random_pure_state(3, dtype=torch.float64).dtype == torch.complex128
    assert random_density_matrix(3, dtype=torch.float32).dtype == torch.complex64


@pytest.mark.parametrize("call, pattern", [
    (lambda: random_density_matrix(3, rank=4), r"rank must be in \[1, dim=3\]"),
    (lambda: random_density_matrix(3, measure="flat"), "measure must be one of"),
    (lambda: random_isometry(2, 3), "rows >= cols"),
    (lambda: random_pure_state(0), "dim must be >= 1"),
])
def test_argument_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


N = 20_000


def _within(samples: torch.Tensor, expected: float, sigmas: float = 5.0) -> bool:
    return abs(float(samples.mean()) - expected) <= sigmas * float(samples.std()) / N ** 0.5


@pytest.mark.parametrize("d", [2, 3, 5])
def test_mean_purities_match_the_measures(d):
    """Hilbert-Schmidt induced by K: <Tr rho^2> = (d + K) / (d K + 1); Bures: (5 d^2 + 1) / (2 d (d^2 + 2))

    (Zyczkowski & Sommers, J. Phys. A 34, 7111 (2001); Sommers & Zyczkowski, J. Phys. A 37, 8457 (2004)).
    """
    for k in (1, 2, d):
        p = random_density_matrix(d, rank=k, batch_shape=(N,), dtype=torch.complex128, generator=_gen(k)).purity()
        assert _within(p, (d + k) / (d * k + 1)), (d, k, float(p.mean()))
    p = random_density_matrix(d, measure="bures", batch_shape=(N,), dtype=torch.complex128, generator=_gen()).purity()
    assert _within(p, (5 * d * d + 1) / (2 * d * (d * d + 2))), (d, float(p.mean()))


def test_haar_moments():
    """Haar states and isometries: E|psi_0|^2 = 1/d, E|psi_0|^4 = 2/(d(d+1)); E|V_ij|^2 = 1/rows."""
    d = 4
    psi = random_pure_state(d, batch_shape=(N,), dtype=torch.complex128, generator=_gen())
    p0 = psi.probabilities()[:, 0]
    assert _within(p0, 1 / d) and _within(p0.square(), 2 / (d * (d + 1)))
    v = random_isometry(5, 3, batch_shape=(N,), dtype=torch.complex128, generator=_gen(1))
    assert _within(v[:, 2, 1].abs().square(), 1 / 5)
    u = random_unitary(3, batch_shape=(N,), dtype=torch.complex128, generator=_gen(2))
    assert _within(u[:, 0, 0].abs().square(), 1 / 3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.complex32])
def test_lower_precision_dtypes_map_to_complex64_for_every_sampler(dtype):
    # random_unitary (and SememeBasis.random) passed float16 on: torch's QR failed on ComplexHalf
    assert random_unitary(3, dtype=dtype).dtype == torch.complex64
    assert random_density_matrix(3, measure="bures", dtype=dtype).dtype == torch.complex64
    assert random_pure_state(3, dtype=dtype).dtype == torch.complex64


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, "float64"])
def test_a_dtype_that_is_not_floating_is_refused_with_its_name(dtype):
    # an integer dtype gave complex64 silently (random_unitary: torch.randn's error), a string an AttributeError
    for call in (random_unitary, random_pure_state, random_density_matrix):
        with pytest.raises(TypeError, match="dtype must be a floating or complex torch.dtype"):
            call(3, dtype=dtype)


@pytest.mark.parametrize("sample", [
    lambda b: random_pure_state(3, batch_shape=b).data,
    lambda b: random_density_matrix(3, batch_shape=b).data,
    lambda b: random_density_matrix(3, measure="bures", batch_shape=b).data,
    lambda b: random_isometry(4, 3, batch_shape=b),
    lambda b: random_unitary(3, batch_shape=b),
    lambda b: DensityMatrix.maximally_mixed(3, batch_shape=b).data,
])
def test_an_int_batch_shape_is_one_batch_dim_as_torch_reads_a_size(sample):
    # was "Value after * must be an iterable, not int"; torch.zeros(4) is torch.zeros((4,))
    for size, shape in [(4, (4,)), (np.int64(2), (2,)), (torch.tensor(3), (3,)), (0, (0,)), ([2, 1], (2, 1))]:
        assert sample(size).shape[:len(shape)] == shape and sample(size).dim() == len(shape) + sample(()).dim()


@pytest.mark.parametrize("sample", [
    lambda b: random_pure_state(3, batch_shape=b),
    lambda b: random_density_matrix(3, batch_shape=b),
    lambda b: random_isometry(4, 3, batch_shape=b),
    lambda b: random_unitary(3, batch_shape=b),
    lambda b: DensityMatrix.maximally_mixed(3, batch_shape=b),
])
def test_a_batch_shape_that_is_no_shape_names_the_argument(sample):
    for bad, error, pattern in [(2.5, TypeError, "batch_shape must be an integer or a tuple of integers; got float"),
                                ("4", TypeError, "batch_shape must be an integer or a tuple of integers; got str"),
                                (None, TypeError, "batch_shape must be an integer or a tuple"),
                                (-1, ValueError, "batch_shape must be >= 0; got -1"),
                                ((2, -1), ValueError, r"batch_shape\[1\] must be >= 0; got -1"),
                                ((2.5,), ValueError, r"batch_shape\[0\] must be an integer >= 0")]:
        with pytest.raises(error, match=pattern):
            sample(bad)
