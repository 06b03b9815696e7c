"""The strategies for isometries, POVMs and Bures / Hilbert-Schmidt density matrices generate what they promise."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import DensityMatrix
from qpnlp.measurement import POVM
from qpnlp.testing import assert_allclose, assert_povm, density_matrices, isometries, povms


@given(isometries(rows=5, cols=3, batch_shape=(2,)))
def test_isometries(v):
    assert v.shape == (2, 5, 3)
    assert_allclose(v.mH @ v, torch.eye(3, dtype=v.dtype).expand(2, 3, 3))


@given(st.data())
def test_povms_are_valid_for_every_method(data):
    method = data.draw(st.sampled_from(["haar", "frame", "projective"]))
    povm = data.draw(povms(dim=3, batch_shape=(2,), method=method))
    assert isinstance(povm, POVM) and povm.dim == 3 and povm.batch_shape == (2,)
    assert_povm(povm)
    if method == "projective":
        assert povm.num_outcomes == 3 and povm.rank == 1
    if method == "frame":
        assert povm.num_outcomes >= 3 and povm.rank == 1


@given(povms(dim=4, num_outcomes=2, rank=2, method="haar", batch_shape=()))
def test_povm_parameters(povm):
    assert (povm.num_outcomes, povm.rank) == (2, 2)
    e = povm.effects()
    assert_allclose(e @ e, e, atol=1e-5 if e.dtype == torch.complex64 else 1e-12)      # k r = d: projective


@given(density_matrices(dim=4, method=st.sampled_from(["bures", "hilbert-schmidt"]), rank=2, batch_shape=(3,)))
def test_density_matrices_of_a_given_rank(rho):
    DensityMatrix(rho.data, validate="strict")
    lam = rho.eigvals()
    assert bool(((lam > 1e-4).sum(-1) == 2).all())


@given(st.data())
def test_unknown_methods_fail_clearly(data):
    with pytest.raises(ValueError, match="unknown method"):
        data.draw(povms(method="bogus"))
    with pytest.raises(ValueError, match="unknown method"):
        data.draw(density_matrices(method="bogus"))


@given(povms(dim=4, rank=1, method="haar", batch_shape=()))
def test_povm_rank_alone_draws_enough_outcomes(povm):
    # with only the rank fixed, k was drawn in 1..d+4 regardless of it: k r < d raised ValueError
    assert povm.rank == 1 and povm.num_outcomes >= 4
    assert_povm(povm)


@given(st.data())
def test_fixed_num_outcomes_and_rank_hold_whatever_method_is_drawn(data):
    # with the default method strategy, "frame" raised for k < d, "projective" returned d outcomes and
    # "frame" / "projective" returned rank 1 whatever rank was asked for
    povm = data.draw(povms(dim=3, num_outcomes=2, batch_shape=()))
    assert povm.num_outcomes == 2
    assert_povm(povm)
    povm = data.draw(povms(dim=3, rank=2, batch_shape=()))
    assert povm.rank == 2
    assert_povm(povm)


@given(st.data())
def test_fixed_rank_of_density_matrices_holds_whatever_method_is_drawn(data):
    # "ensemble" ignored the rank (any rank up to d) and "pure" gave rank 1 for rank=2
    rho = data.draw(density_matrices(dim=3, rank=2, batch_shape=()))
    assert int((rho.eigvals() > 1e-4).sum()) == 2
    rho = data.draw(density_matrices(dim=3, rank=1, batch_shape=()))
    assert int((rho.eigvals() > 1e-4).sum()) == 1


@given(st.data())
def test_a_method_named_outright_that_cannot_honour_the_parameters_is_an_error(data):
    with pytest.raises(ValueError, match="method='projective' cannot give num_outcomes=2"):
        data.draw(povms(dim=3, num_outcomes=2, method="projective"))
    with pytest.raises(ValueError, match="method='frame' cannot give .*rank=2"):
        data.draw(povms(dim=3, rank=2, method="frame"))
    with pytest.raises(ValueError, match="method='ensemble' cannot give rank=2"):
        data.draw(density_matrices(dim=3, rank=2, method="ensemble"))
    with pytest.raises(ValueError, match="method='pure' cannot give rank=2"):
        data.draw(density_matrices(dim=3, rank=2, method="pure"))
    assert data.draw(density_matrices(dim=3, rank=1, method="pure", batch_shape=())).purity() > 0.99
