"""to_qutip / from_qutip: exact round trips, QuTiP's metrics on the converted states equal ours.

Our fidelity is the squared Uhlmann fidelity; ``qutip.fidelity`` is its square root.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

qutip = pytest.importorskip("qutip")

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, fidelity, from_qutip, purity,  # noqa: E402
                           random_density_matrix, random_pure_state, to_qutip, trace_distance,
                           von_neumann_entropy)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_pure_state_round_trip(cdtype):
    w = random_pure_state(5, batch_shape=(), dtype=cdtype, generator=_gen())
    ket = to_qutip(w)
    assert ket.type == "ket" and ket.shape == (5, 1) and ket.dims == [[5], [1]]
    np.testing.assert_array_equal(ket.full().reshape(-1), w.data.to(torch.complex128).numpy())
    back = from_qutip(ket, dtype=cdtype)
    assert isinstance(back, PureState) and back.dtype == cdtype
    torch.testing.assert_close(back.data, w.data, rtol=0, atol=0)


def test_density_matrix_round_trip_and_composite_dims(cdtype):
    rho = random_density_matrix(6, batch_shape=(), dtype=cdtype, generator=_gen(1))
    op = to_qutip(rho, dims=[2, 3])
    assert op.type == "oper" and op.dims == [[2, 3], [2, 3]] and op.isherm
    back = from_qutip(op, dtype=cdtype)
    assert isinstance(back, DensityMatrix)
    torch.testing.assert_close(back.data, rho.data, rtol=0, atol=0)
    assert to_qutip(PureState.basis_state(5, 6), dims=[3, 2]).dims == [[3, 2], [1]]       # QuTiP 5's ket dims


def test_ensemble_becomes_its_density_operator():
    states = random_pure_state(4, batch_shape=(3,), dtype=torch.complex128, generator=_gen(2))
    mix = Ensemble(states, torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64))
    np.testing.assert_allclose(to_qutip(mix).full(), mix.dense().data.numpy(), atol=1e-15)


def test_batches_become_lists_and_lists_become_batches():
    rho = random_density_matrix(3, batch_shape=(2, 4), dtype=torch.complex128, generator=_gen(3))
    nested = to_qutip(rho)
    assert len(nested) == 2 and len(nested[0]) == 4 and all(q.type == "oper" for row in nested for q in row)
    np.testing.assert_array_equal(nested[1][2].full(), rho.data[1, 2].numpy())
    kets = [qutip.rand_ket(3, seed=s) for s in range(5)]
    batch = from_qutip(kets)
    assert tuple(batch.batch_shape) == (5,) and batch.dim == 3
    np.testing.assert_array_equal(batch.data[4].numpy(), kets[4].full().reshape(-1))


def test_a_bra_is_read_as_its_state():
    ket = qutip.rand_ket(4, seed=7)
    torch.testing.assert_close(from_qutip(ket.dag()).data, from_qutip(ket).data, rtol=0, atol=0)


def test_qutip_metrics_on_converted_states_equal_ours(cdtype):
    """fidelity == qutip.fidelity ** 2; trace distance, entropy (nats) and purity are the same definitions."""
    rhos = random_density_matrix(5, batch_shape=(4,), dtype=torch.complex128, generator=_gen(4))   # full rank: QuTiP's sqrtm is exact there
    pure = random_pure_state(5, batch_shape=(4,), dtype=torch.complex128, generator=_gen(5))
    ours_f = fidelity(rhos, pure)
    ours_t = trace_distance(rhos, pure.proj())
    ours_s = von_neumann_entropy(rhos)
    ours_p = purity(rhos)
    others = random_density_matrix(5, batch_shape=(4,), dtype=torch.complex128, generator=_gen(6))
    ours_ff = fidelity(rhos, others)
    for i, (r, w, o) in enumerate(zip(to_qutip(rhos), to_qutip(pure), to_qutip(others))):
        assert float(ours_ff[i]) == pytest.approx(qutip.fidelity(r, o) ** 2, abs=1e-9)
        # against a pure state F = <w|rho|w>; QuTiP's fidelity(rho, ket) takes a matrix square root of the
        # rank-one |w><w| and is off by ~1e-8, so the exact expectation is the reference there
        assert float(ours_f[i]) == pytest.approx(qutip.expect(r, w), abs=1e-12)
        assert float(ours_f[i]) == pytest.approx(qutip.fidelity(r, w) ** 2, abs=1e-7)
        assert float(ours_t[i]) == pytest.approx(qutip.tracedist(r, qutip.ket2dm(w)), abs=1e-9)
        assert float(ours_s[i]) == pytest.approx(qutip.entropy_vn(r), abs=1e-9)
        assert float(ours_p[i]) == pytest.approx(r.purity(), abs=1e-12)
    # and the other way: QuTiP's states measured by our functions
    a, b = qutip.rand_dm(6, seed=1), qutip.rand_dm(6, seed=2)
    assert float(fidelity(from_qutip(a), from_qutip(b))) == pytest.approx(qutip.fidelity(a, b) ** 2, abs=1e-9)


def test_from_qutip_validates_like_the_constructors():
    with pytest.raises(ValueError, match="unit norm"):
        from_qutip(qutip.Qobj(np.array([[1.0], [1.0]])))
    with pytest.raises(ValueError, match="trace"):
        from_qutip(qutip.Qobj(np.eye(2)))
    assert from_qutip(qutip.Qobj(np.eye(2)), validate=False).dim == 2


def test_a_bad_qobj_is_named_as_the_argument():
    """The checks ran through ``PureState(data)`` / ``DensityMatrix(data)``, whose errors name their own arguments
    ("states must have unit norm ...", "rho must be Hermitian ..."); they name ``qobj`` now, the rest as before."""
    with pytest.raises(ValueError, match=r"^qobj must have unit norm along the last dim; got norm 2 at batch index "
                                         r"\(1,\) \(shape \(2, 3\)"):
        from_qutip([qutip.basis(3, 0), 2 * qutip.basis(3, 1)])
    with pytest.raises(ValueError, match=r"^qobj must be Hermitian \(equal to its conjugate transpose\)"):
        from_qutip(qutip.Qobj(np.array([[1.0, 1.0], [0.0, 0.0]])))
    with pytest.raises(ValueError, match=r"^qobj must have trace one; got trace 2"):
        from_qutip(qutip.Qobj(np.eye(2)))


@pytest.mark.parametrize("call, error, match", [
    (lambda: to_qutip(torch.eye(2)), TypeError, "PureState, DensityMatrix or Ensemble"),
    (lambda: to_qutip(DensityMatrix.maximally_mixed(4), dims=[3, 2]), ValueError, "multiply to 6"),
    (lambda: from_qutip("ket"), TypeError, "qutip.Qobj"),
    (lambda: from_qutip([]), TypeError, "non-empty"),
    (lambda: from_qutip(qutip.operator_to_vector(qutip.maximally_mixed_dm(2))), ValueError, "operator-ket"),
    (lambda: from_qutip([qutip.basis(2, 0), qutip.maximally_mixed_dm(2)]), ValueError, "one kind"),
    (lambda: from_qutip([qutip.basis(2, 0), qutip.basis(3, 0)]), ValueError, "one shape"),
    (lambda: from_qutip(qutip.basis(2, 0), dtype=torch.float64), TypeError, "complex"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_without_qutip_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "qutip", None)                     # import qutip -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'qpnlp\[qutip\]'"):
        to_qutip(PureState.basis_state(0, 2))


@pytest.mark.parametrize("dims", [(2.5, 2.4), (6.0,), (-2, -3)])
def test_to_qutip_refuses_subsystem_dims_that_are_not_positive_integers(dims):
    """2.5 x 2.4 was truncated to 2 x 2 (then refused for d=6 with a misleading message) and 6.0 to 6."""
    with pytest.raises(ValueError, match="dims"):
        to_qutip(PureState.basis_state(1, 6), dims=dims)
