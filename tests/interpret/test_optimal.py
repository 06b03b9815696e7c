"""Helstrom bound, pretty-good measurement, class averages: known answers and an independent numpy reference."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, random_density_matrix, random_pure_state,
                           random_unitary, validation)
from qpnlp.interpret import (class_averages, helstrom, measurement_bound, pretty_good_measurement,
                             single_shot_accuracy)
from qpnlp.measurement import POVMMeasurement, ProjectiveMeasurement
from qpnlp.testing import assert_allclose, assert_povm, density_matrices


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_orthogonal_states_are_perfectly_distinguishable(cdtype, tol):
    a, b = PureState.basis_state(0, 3, dtype=cdtype), PureState.basis_state(2, 3, dtype=cdtype)
    mixed = Ensemble(torch.eye(3, dtype=cdtype)[:2])                     # support {e0, e1}, orthogonal to e2
    for rho0, rho1 in ((a, b), (a.proj(), b), (mixed, b)):
        for prior in (0.5, 0.2):
            assert abs(float(helstrom(rho0, rho1, prior).success_probability) - 1) <= tol(3)


def test_identical_states_give_the_larger_prior(cdtype, tol):
    rho = random_density_matrix(4, dtype=cdtype, generator=_gen())
    for prior in (0.5, 0.3, 0.9):
        result = helstrom(rho, rho, prior)
        assert abs(float(result.success_probability) - max(prior, 1 - prior)) <= tol(4)


@pytest.mark.parametrize("prior", [0.5, 0.3])
def test_two_pure_states(cdtype, tol, prior):
    a, b = (random_pure_state(5, batch_shape=(4,), dtype=cdtype, generator=_gen(s)) for s in (1, 2))
    overlap = a.overlap(b).double()
    expected = 0.5 * (1 + (1 - 4 * prior * (1 - prior) * overlap).sqrt())
    assert_allclose(helstrom(a, b, prior).success_probability.double(), expected, atol=tol(5))


def test_helstrom_matches_numpy_and_its_measurement_reaches_the_bound(cdtype, tol):
    gen = _gen(3)
    rho0, rho1 = (random_density_matrix(4, rank=r, dtype=torch.complex128, generator=gen) for r in (4, 2))
    prior = 0.35
    gamma = prior * rho0.data.numpy() - (1 - prior) * rho1.data.numpy()
    expected = 0.5 * (1 + np.abs(scipy.linalg.eigvalsh(gamma)).sum())
    result = helstrom(rho0.to(cdtype), rho1.to(cdtype), prior)
    assert abs(float(result.success_probability) - expected) <= tol(4)
    assert result.method == "helstrom" and torch.equal(result.upper_bound, result.success_probability)
    assert_povm(result.measurement)
    accuracy, assignment = single_shot_accuracy(result.measurement, result.class_states, result.priors)
    assert abs(float(accuracy) - expected) <= tol(4) and assignment.tolist() == [0, 1]
    assert "helstrom" in str(result)


def test_batched_helstrom(cdtype, tol):
    rho0 = random_density_matrix(3, batch_shape=(2, 3), dtype=cdtype, generator=_gen(4))
    rho1 = random_density_matrix(3, batch_shape=(3,), dtype=cdtype, generator=_gen(5))
    result = helstrom(rho0, rho1, 0.4)
    assert result.success_probability.shape == (2, 3)
    assert abs(float(result.success_probability[1, 2]) - float(helstrom(rho0[1, 2], rho1[2], 0.4).success_probability)) \
        <= tol(3)


def test_pretty_good_measurement_known_cases(cdtype, tol):
    trine = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -(0.75 ** 0.5)]], dtype=cdtype)
    result = pretty_good_measurement(PureState(trine).proj())
    assert result.method == "pretty-good"
    assert abs(float(result.success_probability) - 2 / 3) <= tol(2)            # optimal for the trine
    assert_povm(result.measurement)
    basis = PureState(torch.eye(4, dtype=cdtype)[:3]).proj()                    # orthogonal, rank-deficient sum
    result = pretty_good_measurement(basis, [0.2, 0.3, 0.5])
    assert abs(float(result.success_probability) - 1) <= tol(4)
    assert_povm(result.measurement)                                            # kernel added to outcome 0
    same = DensityMatrix.maximally_mixed(3, batch_shape=(3,), dtype=cdtype)
    result = pretty_good_measurement(same, [0.2, 0.3, 0.5])       # E_c = p_c I: sum p_c^2, below the optimum 0.5
    assert abs(float(result.success_probability) - 0.38) <= tol(3)
    assert float(result.success_probability) <= 0.5 <= float(result.upper_bound)


@given(st.data())
def test_pretty_good_brackets_the_optimum(data):
    """Two classes: P_pgm <= P_helstrom <= sqrt(P_pgm) (Barnum & Knill)."""
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    d = data.draw(st.integers(1, 5))
    rho0, rho1 = (data.draw(density_matrices(dim=d, batch_shape=(), dtype=dtype)) for _ in range(2))
    prior = data.draw(st.floats(0.05, 0.95))
    slack = 1e-4 if dtype == torch.complex64 else 1e-10
    best = float(helstrom(rho0, rho1, prior).success_probability)
    pgm = pretty_good_measurement(DensityMatrix(torch.stack([rho0.data, rho1.data])), [prior, 1 - prior])
    assert float(pgm.success_probability) <= best + slack
    assert best <= float(pgm.upper_bound) + slack
    assert max(prior, 1 - prior) <= best + slack


def test_pretty_good_measurement_of_nearly_pure_complex64_states_is_a_povm():
    """rho^{-1/2} of an ill-conditioned average amplified complex64 rounding: the effects summed to I only within
    3e-4 and the call raised (198 of these 200 inputs before); built in complex128, it returns a POVM."""
    gen = torch.Generator().manual_seed(0)
    spectrum = torch.tensor([0.9997, 1e-4, 1e-4, 1e-4], dtype=torch.float64).to(torch.complex128)
    for _ in range(200):
        u = random_unitary(4, batch_shape=(2,), dtype=torch.complex128, generator=gen)
        rho = ((u * spectrum) @ u.mH).to(torch.complex64)
        result = pretty_good_measurement(DensityMatrix(rho), [0.25, 0.75])
        assert result.success_probability.dtype == torch.float32
        assert result.measurement.effects().dtype == torch.complex64
        assert_povm(result.measurement)                       # the float32 default tolerance
        assert 0.75 - 1e-4 <= float(result.success_probability) <= float(helstrom(rho[0], rho[1], 0.25).success_probability) + 1e-4


def _sentences(cdtype, n=6, words=3, d=4):
    gen = _gen(7)
    states = random_pure_state(d, batch_shape=(n, words), dtype=cdtype, generator=gen).data
    weights = torch.softmax(torch.randn(n, words, generator=gen, dtype=torch.float64), -1).to(states.real.dtype)
    return Ensemble(states, weights), torch.tensor([0, 1, 2, 1, 0, 1])


def test_class_averages_agree_for_every_input_form(cdtype, tol):
    batch, labels = _sentences(cdtype)
    averages, counts = class_averages(batch, labels)
    assert counts.tolist() == [2, 3, 1] and averages.batch_shape == (3,)
    dense = batch.dense().data
    expected = torch.stack([dense[labels == c].mean(0) for c in range(3)])
    assert_allclose(averages.data, expected, atol=tol(4))
    assert_allclose(class_averages([batch[i] for i in range(6)], labels.tolist())[0].data, expected, atol=tol(4))
    assert_allclose(class_averages(batch.dense(), labels)[0].data, expected, atol=tol(4))
    assert_allclose(class_averages(dense, labels)[0].data, expected, atol=tol(4))


def test_class_average_errors():
    batch, labels = _sentences(torch.complex64)
    with pytest.raises(ValueError, match="every class"):
        class_averages(batch, labels, num_classes=4)
    with pytest.raises(ValueError, match="labels must be 6 integers"):
        class_averages(batch, labels.float())
    with pytest.raises(ValueError, match="priors must be"):
        pretty_good_measurement(class_averages(batch, labels)[0], [0.5, 0.5, 0.5])


def test_measurement_bound_and_the_learned_measurement(cdtype, tol):
    batch, labels = _sentences(cdtype)
    three = measurement_bound(batch, labels)
    assert three.method == "pretty-good"
    assert_allclose(three.priors.double(), torch.tensor([2, 3, 1], dtype=torch.float64) / 6, atol=tol(3))
    two = measurement_bound(batch, labels.clamp_max(1))
    assert two.method == "helstrom"
    averages, _ = class_averages(batch, labels.clamp_max(1))
    for measurement in (ProjectiveMeasurement(4, 2, dtype=cdtype), ProjectiveMeasurement(4, complete=True, dtype=cdtype),
                        POVMMeasurement(4, 6, dtype=cdtype), two.measurement):
        accuracy, assignment = single_shot_accuracy(measurement, averages, two.priors)
        assert float(accuracy) <= float(two.success_probability) + tol(4)
        assert float(accuracy) >= float(two.priors.max()) - tol(4)                  # never below guessing
        assert assignment.max() <= 1
    with pytest.raises(TypeError, match="measurement must be"):
        single_shot_accuracy(torch.eye(2), averages)


def test_bound_for_a_model_that_separates_nothing(cdtype, tol):
    """Sentences whose classes have the same average state: no measurement beats the larger prior."""
    e = torch.eye(2, dtype=cdtype)
    sentences = [Ensemble(e[:1]), Ensemble(e[1:]), Ensemble(e)]
    result = measurement_bound(sentences, [0, 0, 1])                               # averages: I/2 and I/2
    assert math.isclose(float(result.success_probability), 2 / 3, abs_tol=tol(2))


def test_single_shot_accuracy_rejects_projectors_that_are_not_a_measurement():
    """Unit vectors that are not orthonormal (the default ProjectiveMeasurement, or k > d) do not give projectors
    that sum to at most I: the 'accuracy' came out above 1 (1.18 here) instead of an error."""
    e = torch.eye(2, dtype=torch.complex64)
    classes = torch.stack([e[:, :1] @ e[:1], e[:, 1:] @ e[1:]])                       # |e0><e0|, |e1><e1|
    overlapping = ProjectiveMeasurement(2, 3, generator=_gen(0))                   # 3 unit vectors in C^2
    with pytest.raises(ValueError, match="orthonormal"):
        single_shot_accuracy(overlapping, classes)
    skewed = ProjectiveMeasurement(2, 2, init="random", generator=_gen(1))
    with pytest.raises(ValueError, match="orthonormal"):
        single_shot_accuracy(skewed.as_projectors(), classes)


def test_single_shot_accuracy_assignment_has_one_entry_per_outcome(cdtype, tol):
    """A complete projective measurement has k outcomes (no empty 'rest' outcome); an incomplete one gets k + 1."""
    classes = PureState(torch.eye(3, dtype=cdtype)).proj()
    accuracy, assignment = single_shot_accuracy(ProjectiveMeasurement(3, complete=True, init="identity",
                                                                      dtype=cdtype), classes)
    assert assignment.tolist() == [0, 1, 2] and abs(float(accuracy) - 1) <= tol(3)
    accuracy, assignment = single_shot_accuracy(ProjectiveMeasurement(3, 1, init="identity", dtype=cdtype), classes)
    assert assignment.shape == (2,) and assignment[0] == 0 and abs(float(accuracy) - 2 / 3) <= tol(3)


def test_nan_priors_are_an_error_not_a_nan_bound():
    """NaN passed the checks `p < 0` and `|sum p - 1| > tol` (both False for NaN) and came back as a NaN accuracy."""
    a, b = PureState.basis_state(0, 2), PureState.from_real(torch.tensor([0.6, 0.8]))
    classes = torch.stack([a.proj().data, b.proj().data])
    with pytest.raises(ValueError, match="prior0"):
        helstrom(a, b, float("nan"))
    with pytest.raises(ValueError, match="priors must be"):
        pretty_good_measurement(classes, [float("nan"), 0.5])
    with pytest.raises(ValueError, match="priors must be"):
        single_shot_accuracy(helstrom(a, b).measurement, classes, [float("nan"), 1.0])


_OPTIMAL = {"helstrom": lambda s: helstrom(s[:, 0], s[:, 1], 0.3), "pretty_good_measurement": pretty_good_measurement}


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("name", list(_OPTIMAL))
def test_a_nan_batch_element_gives_nan_there_and_the_others_their_values(cdtype, name, bad):
    """A NaN or infinite class state is a ValueError while validation is on; with it off, helstrom and the
    pretty-good measurement called ``torch.linalg.eigh`` and lost the whole batch to its ``LinAlgError``
    ("linalg.eigh: (Batch element 1): The algorithm failed to converge"). Now NaN for that element (success and
    measurement) and the other elements their values bit for bit, as everywhere in qpnlp (``decompose``). The
    batch: three pairs of class states ``(3, 2, 4, 4)``, one entry of element 1 bad."""
    def f(states):
        result = _OPTIMAL[name](states)
        return result.success_probability, result.measurement.vectors

    healthy = random_density_matrix(4, batch_shape=(3, 2), dtype=cdtype, generator=_gen(1)).data
    broken = healthy.clone()
    broken[1, 0, 0, 0] = bad
    with pytest.raises(ValueError, match="finite"):
        f(broken)
    with validation(False):
        (good, good_vectors), (out, vectors) = f(healthy), f(broken)
    assert torch.isnan(out[1]) and torch.isnan(vectors[1]).any(), name      # pgm pads with zero rows
    assert torch.equal(out[0::2], good[0::2]) and torch.equal(vectors[0::2], good_vectors[0::2])
    assert torch.isfinite(good).all() and torch.isfinite(good_vectors).all()


_NAMED = {"rho0": lambda bad, ok: helstrom(bad, ok), "rho1": lambda bad, ok: helstrom(ok, bad),
          "class_states": lambda bad, ok: pretty_good_measurement(torch.stack([ok, bad], -3))}


@pytest.mark.parametrize("what", ["must be finite", "must be Hermitian"])
@pytest.mark.parametrize("name", list(_NAMED))
def test_a_bad_tensor_is_named_as_the_argument(cdtype, name, what):
    """A NaN or non-Hermitian tensor passed as ``rho0``, ``rho1`` or ``class_states`` was checked through
    ``DensityMatrix(x)`` and the error named ``rho`` ("rho must be finite; got (nan+0j) at batch index (1,)"), an
    argument the caller never passed; now it names theirs, the rest of the message as before."""
    ok = random_density_matrix(3, batch_shape=(2,), dtype=cdtype, generator=_gen(2)).data
    bad = ok.clone()
    if what == "must be finite":
        bad[1, 0, 0] = math.nan
    else:
        bad[1, 0, 1] += 0.25
    with pytest.raises(ValueError, match=rf"^{name} {what}") as info:
        _NAMED[name](bad, ok)
    assert "batch index" in str(info.value) and "shape" in str(info.value)


@pytest.mark.parametrize("bound", [class_averages, measurement_bound])
def test_a_bad_sentence_is_reported_at_its_index_in_sentences(monkeypatch, cdtype, bound):
    """A tensor ``sentences`` was checked per class, after the split: a NaN sentence at index 2 of 4 with labels
    [0, 1, 0, 1] was reported "at batch index (1,) (shape (2, 3, 3))", its place in class 0's sub-batch. It is
    checked whole before the split now (each sentence once); a list's tensors are named ``sentences[i]``."""
    from qpnlp.hilbert import _mixture

    good = random_density_matrix(3, batch_shape=(4,), dtype=cdtype, generator=_gen(3)).data
    bad = good.clone()
    bad[2, 0, 0] = math.nan
    with pytest.raises(ValueError, match=r"^sentences must be finite; got \(nan\+0j\) at batch index \(2,\) "
                                         r"\(shape \(4, 3, 3\)\)$"):
        bound(bad, [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^sentences\[2\] must be finite; got \(nan\+0j\) \(shape \(3, 3\)\)$"):
        bound(list(bad), [0, 1, 0, 1])
    checked, check = [], _mixture.check_density_tensor
    monkeypatch.setattr(_mixture, "check_density_tensor",
                        lambda name, data, validate: checked.append((name, tuple(data.shape))) or
                        check(name, data, validate))
    bound(good, [0, 1, 0, 1])
    assert checked == [("sentences", (4, 3, 3))]
    checked.clear()
    bound(list(good), [0, 1, 0, 1])
    assert checked == [(f"sentences[{i}]", (3, 3)) for i in range(4)]


def test_priors_on_another_device_are_named_not_copied():
    """A (C,) tensor of priors (or a (B,) prior0) was copied to the states' device silently
    (``torch.as_tensor(priors, device=...)``); a 0-dim prior0 may be a CPU scalar, as in torch's operators."""
    a, b = PureState.basis_state(0, 2), PureState.from_real(torch.tensor([0.6, 0.8]))
    classes = torch.stack([a.proj().data, b.proj().data])
    elsewhere = torch.tensor([0.5, 0.5], device="meta")
    with pytest.raises(ValueError, match="the states on cpu, priors on meta"):
        pretty_good_measurement(classes, elsewhere)
    with pytest.raises(ValueError, match="the states on cpu, priors on meta"):
        single_shot_accuracy(helstrom(a, b).measurement, classes, elsewhere)
    with pytest.raises(ValueError, match="rho0 on cpu, prior0 on meta"):
        helstrom(a, b, elsewhere)
    assert float(helstrom(a, b, torch.tensor(0.5)).success_probability) == pytest.approx(0.9)


@pytest.mark.parametrize("outcomes", [128, 96])                   # complete, and incomplete (the rest outcome)
def test_single_shot_accuracy_of_projectors_never_builds_their_d_x_d_matrices(outcomes, largest_tensor):
    """The projector path stacked every P_k as a d x d matrix: k d^2 entries (2.1M here, 16.8M at d = 256);
    now Tr(rho_c P_k) comes from the rows, and the rest outcome from Tr rho_c - sum_k Tr(rho_c P_k)."""
    from qpnlp.measurement import Projector
    d, num = 128, 3
    gen = _gen(5)
    rho_c = random_density_matrix(d, batch_shape=(num,), dtype=torch.complex128, generator=gen)
    rows = random_unitary(d, dtype=torch.complex128, generator=gen)[:outcomes]
    priors = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    with largest_tensor() as seen:
        accuracy, assignment = single_shot_accuracy(Projector(rows.unsqueeze(-2)), rho_c, priors)
    assert seen.largest <= 2 * num * d * d, seen.largest               # the class states, never k d^2
    effects = rows.unsqueeze(-1) * rows.conj().unsqueeze(-2)           # the previous computation: P_k (k, d, d)
    if outcomes < d:
        effects = torch.cat([effects, (torch.eye(d, dtype=rows.dtype) - effects.sum(0))[None]])
    best, expected = (priors.unsqueeze(-1) * torch.einsum("kde,ced->ck", effects, rho_c.data).real).max(0)
    assert_allclose(accuracy, best.sum())
    assert torch.equal(assignment, expected)


def test_pretty_good_measurement_reads_each_class_only_with_its_own_effect(largest_tensor):
    """The success probability needs Tr(rho_c E_c); every class with every effect, (C, C, 2d, d), was computed
    for its diagonal: C times the memory of the measurement itself."""
    from qpnlp.measurement import povm_probabilities_dense
    num, d = 8, 32
    states = random_density_matrix(d, batch_shape=(num,), dtype=torch.complex128, generator=_gen(6))
    priors = torch.softmax(torch.randn(num, dtype=torch.float64, generator=_gen(7)), -1)
    with largest_tensor() as seen:
        result = pretty_good_measurement(states, priors)
    assert seen.largest <= num * 2 * d * d, seen.largest               # the measurement's (C, 2d, d) vectors
    every = povm_probabilities_dense(states.data, result.measurement.vectors.unsqueeze(-4), validate=False)
    assert_allclose(result.success_probability, (priors * torch.diagonal(every)).sum())
