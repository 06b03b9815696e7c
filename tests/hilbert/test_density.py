"""DensityMatrix and the lazy Ensemble."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, masked_softmax, random_unitary, validation
from qpnlp.testing import (assert_allclose, assert_density_matrix, density_matrices, ensembles, pure_states,
                           unitaries)


@given(density_matrices())
def test_density_matrix_axioms(rho):
    assert_density_matrix(rho)
    p = rho.purity()
    d = rho.dim
    assert bool((p >= 1 / d - 1e-5).all()) and bool((p <= 1 + 1e-5).all())


@given(ensembles())
def test_lazy_ensemble_agrees_with_dense(mix):
    rho = mix.dense()
    assert_density_matrix(rho)
    assert_allclose(mix.purity(), rho.purity())
    lazy = mix.eigvals()
    dense = rho.eigvals()
    assert_allclose(lazy, dense[..., dense.shape[-1] - lazy.shape[-1]:])


def test_from_ensemble_matches_explicit_sum(cdtype, device):
    gen = torch.Generator().manual_seed(0)
    states = torch.nn.functional.normalize(torch.randn(3, 4, dtype=cdtype, generator=gen), dim=-1).to(device)
    p = torch.tensor([0.5, 0.3, 0.2], dtype=states.real.dtype, device=device)
    expected = sum(p[i] * torch.outer(states[i], states[i].conj()) for i in range(3))
    assert_allclose(DensityMatrix.from_ensemble(states, p).data, expected)


def test_mask_excludes_padding_exactly(cdtype):
    gen = torch.Generator().manual_seed(1)
    states = torch.nn.functional.normalize(torch.randn(2, 5, 3, dtype=cdtype, generator=gen), dim=-1)
    mask = torch.tensor([[True, True, True, False, False], [True, False, False, False, False]])
    mix = Ensemble(states, mask=mask)
    assert_allclose(mix.weights[0], torch.tensor([1 / 3] * 3 + [0, 0], dtype=mix.weights.dtype))
    unpadded = DensityMatrix.from_ensemble(states[0, :3])
    assert_allclose(mix.dense().data[0], unpadded.data)
    # Garbage in padded positions must not leak in.
    states_garbage = states.clone()
    states_garbage[0, 3:] = torch.nn.functional.normalize(torch.randn(2, 3, dtype=cdtype), dim=-1)
    assert_allclose(Ensemble(states_garbage, mask=mask).dense().data, mix.dense().data)


@pytest.mark.parametrize("weights, pattern", [
    (torch.tensor([0.5, 0.6]), r"sum to one.*sum 1\.1"),
    (torch.tensor([1.5, -0.5]), r"non-negative.*-0\.5"),
    (torch.tensor([0.5, float("nan")]), "finite"),
    (torch.tensor([1.0]), r"shape \(2,\)"),
])
def test_bad_weights(weights, pattern):
    states = torch.eye(2, dtype=torch.complex64)
    with pytest.raises(ValueError, match=pattern):
        Ensemble(states, weights)


def test_empty_sentence_is_an_error():
    states = torch.eye(2, dtype=torch.complex64).expand(2, 2, 2)
    with pytest.raises(ValueError, match=r"empty mixture.*batch index \(1,\)"):
        Ensemble(states, mask=torch.tensor([[True, False], [False, False]]))
    with pytest.raises(ValueError, match="empty sentence"):
        masked_softmax(torch.zeros(2, 2), torch.tensor([[True, False], [False, False]]))


def test_masked_softmax_checks_dim_up_front():
    # dim=2 on 2-D scores was an IndexError from mask.any(dim)
    scores, mask = torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool)
    for m in (mask, None):
        with pytest.raises(ValueError, match=r"dim must be in \[-2, 1\] for scores of shape \(2, 3\).*got 2"):
            masked_softmax(scores, m, dim=2)
        with pytest.raises(ValueError, match="got -3"):
            masked_softmax(scores, m, dim=-3)
        with pytest.raises(TypeError, match="dim must be an int; got float"):
            masked_softmax(scores, m, dim=1.0)
    assert masked_softmax(scores, mask, dim=0)[0, 0] == 0.5
    assert masked_softmax(torch.zeros(3), dim=0).tolist() == pytest.approx([1 / 3] * 3)


def test_real_weights_type_and_mask_type():
    states = torch.eye(2, dtype=torch.complex64)
    with pytest.raises(TypeError, match="real floating"):
        Ensemble(states, torch.tensor([0.5, 0.5], dtype=torch.complex64))
    with pytest.raises(TypeError, match="bool"):
        Ensemble(states, mask=torch.tensor([1, 1]))


def test_float64_weights_widen_complex64_states():
    mix = Ensemble(torch.eye(2, dtype=torch.complex64), torch.tensor([0.5, 0.5], dtype=torch.float64))
    assert mix.dtype == torch.complex128 and mix.weights.dtype == torch.float64


@pytest.mark.parametrize("name, bad, pattern", [
    ("hermitian", torch.tensor([[0.5, 0.1], [0.3, 0.5]], dtype=torch.complex64), "Hermitian"),
    ("transpose-only", torch.tensor([[0.5, 0.1j], [0.1j, 0.5]], dtype=torch.complex64), "Hermitian"),
    ("trace", torch.eye(2, dtype=torch.complex64), r"trace one.*trace 2"),
    ("rank", torch.ones(2, dtype=torch.complex64), r"\(\.\.\., d, d\)"),
    ("real", torch.eye(2) / 2, "complex"),
])
def test_density_validation(name, bad, pattern):
    error = TypeError if name == "real" else ValueError
    with pytest.raises(error, match=pattern):
        DensityMatrix(bad)


def test_psd_only_checked_in_strict_mode():
    not_psd = torch.tensor([[1.5, 0], [0, -0.5]], dtype=torch.complex128)
    DensityMatrix(not_psd)  # cheap checks pass: Hermitian, trace one
    with pytest.raises(ValueError, match=r"positive semi-definite.*-0\.5"):
        DensityMatrix(not_psd, validate="strict")
    with validation("strict"):
        with pytest.raises(ValueError, match="positive semi-definite"):
            DensityMatrix(not_psd)


def test_spectral_functions_check_positivity_for_free_in_the_default_mode(cdtype):
    """Issue 17: a non-PSD 'state' gave a negative entropy in the default mode; the spectrum is computed anyway."""
    from qpnlp.hilbert import fidelity, renyi_entropy, von_neumann_entropy

    not_psd = torch.tensor([[1.5, 0], [0, -0.5]], dtype=cdtype)
    rho = DensityMatrix(not_psd)                                # cheap checks pass at construction
    for fn in (von_neumann_entropy, lambda r: renyi_entropy(r, 2.0), lambda r: fidelity(r, r)):
        with pytest.raises(ValueError, match=r"positive semi-definite.*eigenvalue -0\.5"):
            fn(rho)
    with validation(False):                                     # unchecked: clamped, as before
        assert float(von_neumann_entropy(rho)) == pytest.approx(-1.5 * math.log(1.5), rel=1e-5)


@pytest.mark.parametrize("where", ["weights", "state", "masked-state"])
def test_nan_is_never_silently_accepted(where, cdtype):
    states = torch.eye(3, dtype=cdtype)[:2].clone()
    weights = torch.tensor([0.5, 0.5], dtype=states.real.dtype)
    mask = torch.tensor([True, True])
    if where == "weights":
        weights[0] = math.nan
    elif where == "state":
        states[1, 1] = math.nan
    else:
        states, weights = torch.cat([states, torch.full((1, 3), math.nan, dtype=cdtype)]), torch.tensor([0.5, 0.5, 0.0])
        mask = torch.tensor([True, True, False])               # masked: replaced by a zero vector, accepted
        assert_allclose(Ensemble(states, weights.to(states.real.dtype), mask).purity(), torch.tensor(0.5))
        return
    with pytest.raises(ValueError, match="finite|norm nan"):
        Ensemble(states, weights, mask)


def test_masked_softmax_checks_only_while_validation_is_on():
    empty = torch.tensor([[True, True], [False, False]])
    with pytest.raises(ValueError, match="empty sentence"):
        masked_softmax(torch.zeros(2, 2), empty)
    with validation(False):
        assert torch.isnan(masked_softmax(torch.zeros(2, 2), empty)[1]).all()
    assert torch.isnan(masked_softmax(torch.zeros(2, 2), empty, validate=False)[1]).all()


@given(st.data())
def test_unitary_evolution_keeps_a_density_matrix_and_its_spectrum(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    rho = data.draw(density_matrices(dim=4, dtype=dtype))
    u = data.draw(unitaries(dim=4, batch_shape=(), dtype=dtype))
    moved = rho.evolve(u)
    assert_density_matrix(moved)
    assert_allclose(moved.eigvals(), rho.eigvals().to(moved.eigvals().dtype))


def test_maximally_mixed_and_eigh(cdtype):
    rho = DensityMatrix.maximally_mixed(5, batch_shape=(2,), dtype=cdtype)
    assert rho.batch_shape == (2,)
    assert_allclose(rho.purity(), torch.full((2,), 0.2, dtype=rho.purity().dtype))
    values, states = PureState.from_real(torch.tensor([0.6, 0.8], dtype=torch.float64)).proj().eigh()
    assert_allclose(values, torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert math.isclose(float(states[1].overlap(PureState.from_real(torch.tensor([0.6, 0.8], dtype=torch.float64)))), 1.0)


@given(pure_states(batch_shape=(3,)))
def test_dag_of_valid_density_is_itself(w):
    rho = w.proj()
    assert_allclose(rho.dag().data, rho.data)


def test_gradients_flow_through_lazy_purity():
    raw = torch.randn(3, 4, dtype=torch.complex128, requires_grad=True)
    logits = torch.randn(3, dtype=torch.float64, requires_grad=True)

    def purity_fn(raw, logits):
        states = raw / torch.linalg.vector_norm(raw, dim=-1, keepdim=True)
        return Ensemble(states, torch.softmax(logits, -1)).purity()

    assert torch.autograd.gradcheck(purity_fn, (raw, logits))


def test_purity_and_fidelity_bounds_of_a_long_ensemble_never_build_an_n_x_n_matrix(largest_tensor):
    # n = 300 words in d = 6: the n x n Gram (and n x m cross) matrices hold 90 000 entries, rho 36
    from qpnlp.hilbert import sub_fidelity, super_fidelity
    g = torch.Generator().manual_seed(0)
    n, d = 300, 6
    states = torch.nn.functional.normalize(torch.randn(2, n, d, dtype=torch.complex128, generator=g), dim=-1)
    weights = torch.softmax(torch.randn(2, n, dtype=torch.float64, generator=g), -1)
    a, b = Ensemble(states[0], weights[0]), Ensemble(states[1], weights[1])
    with largest_tensor() as seen:
        values = [a.purity(), super_fidelity(a, b), sub_fidelity(a, b)]
    assert seen.largest <= 4 * n * d             # the states and their weighted copies, never n x n
    ra, rb = a.dense().data, b.dense().data
    t1, t2 = (ra * rb.mT).sum().real, ((ra @ rb) * (ra @ rb).mT).sum().real
    assert_allclose(values[0], a.gram().abs().square().sum())
    assert_allclose(values[1], t1 + torch.sqrt((1 - values[0]) * (1 - b.gram().abs().square().sum())))
    assert_allclose(values[2], t1 + torch.sqrt((2 * (t1.square() - t2)).clamp_min(0)))


@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_masked_softmax_sums_to_one_over_kept(n_kept, seed):
    scores = torch.randn(6, generator=torch.Generator().manual_seed(seed))
    mask = torch.arange(6) < n_kept
    p = masked_softmax(scores, mask)
    assert float(p[~mask].abs().sum()) == 0.0
    assert abs(float(p.sum()) - 1) < 1e-6


def test_padding_may_hold_anything_even_nan():
    states = torch.tensor([[1, 0], [float("nan"), 5]], dtype=torch.complex64)
    mix = Ensemble(states, mask=torch.tensor([True, False]))
    assert torch.isfinite(torch.view_as_real(mix.dense().data)).all()
    assert_allclose(mix.dense().data, torch.tensor([[1, 0], [0, 0]], dtype=torch.complex64))
    with pytest.raises(ValueError, match="finite"):
        Ensemble(states)


def test_masked_softmax_without_a_mask_rejects_non_finite_scores():
    # the docstring promises the error; without a mask NaN or inf scores gave NaN probabilities silently
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite"):
            masked_softmax(torch.tensor([0.0, bad]))
        assert torch.isnan(masked_softmax(torch.tensor([0.0, bad]), validate=False)).all()


def _zero_weight_functions():
    from qpnlp.hilbert import (fidelity, hellinger_affinity, purity, quantum_jensen_shannon_divergence,
                               random_density_matrix, relative_entropy, super_fidelity, von_neumann_entropy)
    other = random_density_matrix(5, dtype=torch.complex128, generator=torch.Generator().manual_seed(1))
    return {"purity": purity, "entropy": von_neumann_entropy, "fidelity": lambda e: fidelity(e, other),
            "hellinger": lambda e: hellinger_affinity(e, other), "relative": lambda e: relative_entropy(e, other),
            "qjsd": lambda e: quantum_jensen_shannon_divergence(e, other),
            "super": lambda e: super_fidelity(e, other)}


@pytest.mark.parametrize("name", list(_zero_weight_functions()))
def test_a_zero_weight_gives_finite_gradients(name):
    # the factor sqrt(p_i) w_i has an infinite derivative at p_i = 0: a zero weight (masked_softmax without
    # mask=, a softmax that underflows) made every weight's gradient NaN
    fn = _zero_weight_functions()[name]
    gen = torch.Generator().manual_seed(0)
    states = torch.nn.functional.normalize(torch.randn(3, 5, dtype=torch.complex128, generator=gen), dim=-1)
    scores = torch.randn(3, dtype=torch.float64, generator=gen, requires_grad=True)
    mask = torch.tensor([True, True, False])
    fn(Ensemble(states, masked_softmax(scores, mask))).backward()
    assert torch.isfinite(scores.grad).all()
    # the same as the gradient through the masked ensemble, whose padding never enters
    again = scores.detach().clone().requires_grad_()
    fn(Ensemble(states, masked_softmax(again, mask), mask=mask)).backward()
    assert_allclose(scores.grad, again.grad)


def test_expectation_refuses_an_observable_of_another_shape_or_not_hermitian():
    # a (1, 1) observable broadcast against rho and gave the sum of all its entries
    rho = DensityMatrix.maximally_mixed(3)
    with pytest.raises(ValueError, match=r"observable must have shape \(\.\.\., 3, 3\)"):
        rho.expectation(torch.ones(1, 1))
    with pytest.raises(ValueError, match="Hermitian"):
        rho.expectation(torch.triu(torch.ones(3, 3)))
    assert_allclose(rho.expectation(torch.diag(torch.tensor([3.0, 0.0, 0.0]))), torch.tensor(1.0))


def test_density_evolve_refuses_a_matrix_that_is_not_a_unitary_of_the_state_dimension():
    rho = DensityMatrix.maximally_mixed(2)
    with pytest.raises(ValueError, match=r"unitary must have shape \(\.\.\., 2, 2\)"):
        rho.evolve(torch.ones(1, 2))
    with pytest.raises(ValueError, match="unitary.*trace 4"):
        rho.evolve(2 * torch.eye(2))


@pytest.mark.parametrize("state_dtype, operator_dtype", [(torch.complex64, torch.complex128),
                                                         (torch.complex128, torch.complex64)])
def test_expectation_and_evolve_of_mixed_precisions_check_at_the_coarser_one(state_dtype, operator_dtype, device):
    # a complex64 observable (Hermitian to 1e-7) or unitary was held to float64's tolerance next to a complex128 rho
    gen = torch.Generator().manual_seed(1)
    u = random_unitary(6, dtype=operator_dtype, generator=gen).to(device)
    observable = u @ torch.diag(torch.linspace(-1, 1, 6, dtype=torch.float64).to(device, operator_dtype)) @ u.mH
    rho = PureState.normalized(torch.randn(4, 6, dtype=state_dtype, generator=gen).to(device)).proj()
    value = rho.expectation(observable)
    assert value.dtype == torch.float64 and value.device.type == device.type
    moved = rho.evolve(u)
    assert moved.dtype == torch.complex128 and moved.device.type == device.type
    assert_allclose(moved.expectation(observable), rho.expectation(u.mH @ observable @ u), atol=1e-5)
    with pytest.raises(ValueError, match="trace one"):                  # still checked, at float32's tolerance
        rho.evolve(u * (1 + 1e-3))


def test_masked_softmax_normalises_over_the_given_dim_with_and_without_a_mask():
    # p_i = m_i e^{s_i} / sum_j m_j e^{s_j} along dim; without a mask dim was only tested on 1-D scores
    scores = torch.tensor([[0.0, 1.0, 2.0], [3.0, -1.0, 0.5]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False], [True, False, True]])
    for dim in (0, 1, -1):
        plain = scores.exp() / scores.exp().sum(dim, keepdim=True)
        assert_allclose(masked_softmax(scores, None, dim=dim), plain)
        masked = scores.exp() * mask / (scores.exp() * mask).sum(dim, keepdim=True)
        assert_allclose(masked_softmax(scores, mask, dim=dim), masked)
