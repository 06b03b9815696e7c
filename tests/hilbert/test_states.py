"""PureState, SememeBasis and the functional core."""

import copy
import io
import math
import pickle
import threading

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.hilbert import (PureState, SememeBasis, get_validation, inner, kron, outer, random_unitary, trace,
                           validation)
from qpnlp.testing import assert_allclose, assert_density_matrix, assert_pure_state, assert_unitary, pure_states, unitaries


def test_from_polar_builds_r_exp_i_phi(cdtype, device):
    real = torch.empty((), dtype=cdtype).real.dtype
    r = torch.tensor([0.6, 0.8], dtype=real, device=device)
    phi = torch.tensor([0.3, -1.2], dtype=real, device=device)
    w = PureState.from_polar(r, phi)
    expected = torch.tensor([0.6 * complex(math.cos(0.3), math.sin(0.3)),
                             0.8 * complex(math.cos(-1.2), math.sin(-1.2))], dtype=cdtype, device=device)
    assert w.dtype == cdtype and w.device.type == device.type
    assert_allclose(w.data, expected)
    assert_allclose(w.amplitude, r)
    assert_allclose(w.phase, phi)


def test_from_polar_rejects_unnormalised_amplitude_with_location():
    with pytest.raises(ValueError, match=r"unit norm.*norm 1\.4.*batch index \(1,\)"):
        PureState.from_polar(torch.tensor([[1.0, 0.0], [1.0, 1.0]]), torch.zeros(2, 2))


def test_from_polar_normalises_on_request_and_rejects_negative_amplitudes():
    w = PureState.from_polar(torch.tensor([3.0, 4.0]), torch.zeros(2), normalize_amplitude=True)
    assert_allclose(w.amplitude, torch.tensor([0.6, 0.8]))
    with pytest.raises(ValueError, match="non-negative"):
        PureState.from_polar(torch.tensor([-0.6, 0.8]), torch.zeros(2))


def test_no_silent_downcast():
    w = PureState.from_polar(torch.tensor([0.6, 0.8], dtype=torch.float64), torch.zeros(2, dtype=torch.float32))
    assert w.dtype == torch.complex128
    assert PureState.from_real(torch.tensor([1.0, 0.0], dtype=torch.float64)).dtype == torch.complex128
    a64 = PureState.from_real(torch.tensor([1.0, 0.0]))
    b128 = PureState.from_real(torch.tensor([0.6, 0.8], dtype=torch.float64))
    assert a64.inner(b128).dtype == torch.complex128


@pytest.mark.parametrize("bad, error, pattern", [
    (torch.tensor([1.0, 0.0]), TypeError, "complex64 or complex128"),
    (torch.tensor(1.0 + 0j), ValueError, r"shape \(\.\.\., d\)"),
    (torch.tensor([float("nan"), 0], dtype=torch.complex64), ValueError, "finite"),
    ([1, 0], TypeError, "torch.Tensor"),
])
def test_bad_input_raises_clear_errors(bad, error, pattern):
    with pytest.raises(error, match=pattern):
        PureState(bad)


def test_validation_can_be_switched_off_per_call():
    data = torch.tensor([2.0, 0.0], dtype=torch.complex64)
    assert PureState(data, validate=False).dim == 2


def test_validation_blocks_of_two_threads_neither_leak_nor_undo_each_other():
    # the blocks set one process-wide mode: a block switched the checks of every thread, and two blocks exiting
    # out of order (A enters, B enters, A exits, B exits) left the whole process with validation off for good
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with validation(False):
            a_in.set()
            b_in.wait(5)
            seen["first"] = (get_validation(), PureState(torch.tensor([2.0, 0j])).dim)     # unchecked here
        a_out.set()

    def second():
        a_in.wait(5)
        with validation("strict"):
            b_in.set()
            a_out.wait(5)
            seen["second"] = get_validation()

    before = get_validation()
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"first": (False, 2), "second": "strict"}
    assert get_validation() == before
    with validation(False):                                  # nested blocks in one thread still restore in order
        with validation("strict"):
            assert get_validation() == "strict"
        assert get_validation() is False
    assert get_validation() == before


@given(pure_states(batch_shape=(3, 2)))
def test_batch_indexing_and_metadata(w):
    assert w.batch_shape == (3, 2)
    assert w[1].batch_shape == (2,)
    assert w[1:, 0].batch_shape == (2,)
    assert_allclose(w[2, 1].data, w.data[2, 1])
    with pytest.raises(IndexError):
        w[0, 0, 0]
    with pytest.raises(AttributeError):
        w._data = None


@given(pure_states(batch_shape=(2,), dtype=torch.complex64))
def test_to_changes_precision_only_when_asked(w):
    wide = w.to(torch.float64)
    assert wide.dtype == torch.complex128
    assert_allclose(wide.data, w.data.to(torch.complex128), atol=1e-6)


@given(st.data())
def test_inner_is_conjugate_linear_in_first_argument(data):
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    a = data.draw(pure_states(dim=4, batch_shape=(), dtype=dtype))
    b = data.draw(pure_states(dim=4, batch_shape=(), dtype=dtype))
    c = torch.tensor(0.3 + 0.7j, dtype=dtype)
    assert_allclose(inner(c * a.data, b.data), c.conj() * inner(a.data, b.data))
    assert_allclose(a.inner(b), b.inner(a).conj())


@given(pure_states())
def test_projector_of_a_state_is_a_pure_density_matrix(w):
    rho = w.proj()
    assert_density_matrix(rho)
    assert_allclose(rho.purity(), torch.ones(w.batch_shape, dtype=rho.purity().dtype))
    # |w><w| has entries w_i conj(w_j): check the conjugation explicitly.
    assert_allclose(rho.data, w.data.unsqueeze(-1) * w.data.conj().unsqueeze(-2))


@given(pure_states(), st.floats(-10, 10))
def test_global_phase_leaves_density_matrix_unchanged(w, angle):
    assert_allclose(w.global_phase(angle).proj().data, w.proj().data)


@given(unitaries(dim=5))
def test_random_unitaries_are_unitary(u):
    assert_unitary(u)


def test_outer_conjugates_the_bra():
    ket = torch.tensor([1j, 0], dtype=torch.complex128)
    assert outer(ket)[0, 0] == 1
    assert outer(ket, torch.tensor([1j, 0], dtype=torch.complex128))[0, 0] == 1


def test_functional_core_names_shapes_that_do_not_broadcast():
    # batch shapes (2,) and (3,) gave torch's "The size of tensor a (2) must match ..." RuntimeError
    a, b = torch.ones(2, 4, dtype=torch.complex64), torch.ones(3, 4, dtype=torch.complex64)
    with pytest.raises(ValueError, match=r"bra has batch shape \(2,\) and ket has batch shape \(3,\)"):
        inner(a, b)
    with pytest.raises(ValueError, match=r"ket has batch shape \(2,\) and bra has batch shape \(3,\)"):
        outer(a, b)
    with pytest.raises(ValueError, match=r"a has batch shape \(2,\) and b has batch shape \(3,\)"):
        kron(torch.ones(2, 2, 2), torch.ones(3, 2, 2))
    with pytest.raises(ValueError, match=r"bra with d=4 .* and ket with d=3"):
        inner(a, torch.ones(2, 3, dtype=torch.complex64))
    assert inner(a[:1], b).shape == (3,) and outer(a[:1], b).shape == (3, 4, 4)   # broadcasting still works
    assert kron(torch.ones(1, 2, 2), torch.ones(3, 2, 3)).shape == (3, 4, 6)


class TestSememeBasis:
    def test_coordinates_round_trip_in_a_random_basis(self, cdtype, device):
        gen = torch.Generator().manual_seed(0)
        basis = SememeBasis.random(6, dtype=cdtype, generator=gen).to(device)
        w = PureState.normalized(torch.randn(4, 6, dtype=cdtype, generator=gen).to(device))
        coords = basis.coordinates(w)
        assert_pure_state(coords)
        assert_allclose(basis.from_coordinates(coords).data, w.data)

    @pytest.mark.parametrize("bad, what", [(2.0, r"must have unit norm along the last dim; got norm 2"),
                                           (math.inf, r"must be finite; got \(inf\+0j\)")])
    def test_bad_coordinates_are_named_as_the_argument(self, cdtype, bad, what):
        """from_coordinates(c) checked ``PureState(c @ e)``: the error named ``states`` and, for an inf, showed the
        nan of inf * 0 in the product; the coordinates are checked now, under their name, with the value passed."""
        basis = SememeBasis.canonical(3, dtype=cdtype)
        coords = torch.eye(3, dtype=cdtype)[:2].clone()
        coords[1, 1] = bad
        with pytest.raises(ValueError, match=rf"^coordinates {what} at batch index \(1,\) \(shape \(2, 3\)"):
            basis.from_coordinates(coords)

    @pytest.mark.parametrize("shape", [(2,), (4, 2)])
    def test_coordinates_of_the_wrong_dimension_are_named(self, cdtype, shape):
        """Coordinates whose last dim is not the basis's d gave torch's "mat1 and mat2 shapes cannot be multiplied"
        (a RuntimeError); a ValueError names ``coordinates``, their d and the basis's, as ``coordinates()`` does."""
        basis = SememeBasis.canonical(3, dtype=cdtype)
        coords = torch.zeros(shape, dtype=cdtype)
        coords[..., 0] = 1.0
        with pytest.raises(ValueError, match=r"^dimension mismatch: coordinates has d=2 but the basis has d=3$"):
            basis.from_coordinates(coords)
        with pytest.raises(ValueError, match=r"^dimension mismatch: coordinates has d=2 but the basis has d=3$"):
            basis.from_coordinates(PureState(coords))

    def test_change_of_basis_names_a_bad_other(self, cdtype):
        """A basis of another dimension said "dimension mismatch: 3 vs 2"; a tensor compared its ``dim`` method with
        an int and said the same with a bound method."""
        basis = SememeBasis.canonical(3, dtype=cdtype)
        with pytest.raises(ValueError, match=r"^dimension mismatch: other has d=2 but this basis has d=3$"):
            basis.change_of_basis(SememeBasis.canonical(2, dtype=cdtype))
        with pytest.raises(TypeError, match="other must be a SememeBasis; got Tensor"):
            basis.change_of_basis(torch.eye(3, dtype=cdtype))

    def test_change_of_basis_maps_coordinates(self, cdtype):
        gen = torch.Generator().manual_seed(1)
        e = SememeBasis.random(5, dtype=cdtype, generator=gen)
        f = SememeBasis.random(5, dtype=cdtype, generator=gen)
        w = PureState.normalized(torch.randn(3, 5, dtype=cdtype, generator=gen))
        u = e.change_of_basis(f)
        assert_unitary(u)
        assert_allclose(e.coordinates(w).data @ u.mT, f.coordinates(w).data)

    def test_density_coordinates_preserve_the_spectrum(self, cdtype):
        gen = torch.Generator().manual_seed(2)
        basis = SememeBasis.random(4, dtype=cdtype, generator=gen)
        rho = PureState.normalized(torch.randn(3, 4, dtype=cdtype, generator=gen)).proj()
        assert_allclose(basis.coordinates(rho).eigvals(), rho.eigvals())

    def test_labels_and_validation(self):
        basis = SememeBasis.canonical(2, labels=["good", "bad"])
        assert basis.label(1) == "bad" and basis.state(0).data[0] == 1
        with pytest.raises(ValueError, match="2 labels"):
            SememeBasis.canonical(3, labels=["a", "b"])
        with pytest.raises(ValueError, match="orthonormal"):
            SememeBasis(torch.ones(2, 2, dtype=torch.complex64))
        with pytest.raises(ValueError, match="dimension mismatch"):
            basis.coordinates(PureState.basis_state(0, 3))


def test_basis_state_widens_a_real_dtype_to_complex():
    # a float64 dtype gave a PureState holding float64 data, which no check of the class allows
    for real, cdtype in ((torch.float32, torch.complex64), (torch.float64, torch.complex128)):
        e1 = PureState.basis_state(1, 3, dtype=real)
        assert e1.dtype == cdtype
        assert e1.proj().data.dtype == cdtype
        PureState(e1.data)                                                   # a valid state


def test_normalized_honours_the_per_call_validate():
    # normalize() read only the global switch: validate=True with it off gave a NaN state, validate=False
    # with it on still raised
    zero = torch.zeros(3, dtype=torch.complex64)
    with validation(False), pytest.raises(ValueError, match="zero vector"):
        PureState.normalized(zero, validate=True)
    with validation(False), pytest.raises(ValueError, match="zero vector"):
        PureState.from_real(zero.real, normalize_vectors=True, validate=True)
    assert torch.isnan(PureState.normalized(zero, validate=False).data).all()


@pytest.mark.parametrize("dtype", [torch.complex64, torch.float32])
def test_normalize_of_cpu_vectors_whose_squares_are_fine_takes_no_rescaling_pass(dtype):
    """The rescaled norms of vectors whose squares under- or overflow (``rescaled_norms``) were computed for
    every vector, a complex ``abs``, a maximum, a division and a norm more: ``normalize`` (the measurement
    vectors of every forward pass) took 4-5x as long. On the CPU, where reading the norms costs no host sync,
    they run only where a norm needs them; values unchanged."""
    from torch.overrides import TorchFunctionMode

    from qpnlp.hilbert import normalize

    class Calls(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            names.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    vectors = torch.randn(5, 8, dtype=dtype, generator=torch.Generator().manual_seed(0))
    names = []
    with Calls():
        unit = normalize(vectors, validate=False)
    assert "amax" not in names and "abs" not in names
    norms = torch.view_as_real(vectors).square().sum((-2, -1)).sqrt().unsqueeze(-1) if dtype.is_complex else \
        torch.linalg.vector_norm(vectors, dim=-1, keepdim=True)
    assert torch.equal(unit, vectors / norms)
    names = []
    with Calls():
        tiny = normalize(vectors * 1e-25, validate=False)            # squares that underflow: rescaled
    assert "amax" in names
    assert_allclose(tiny, unit)


def test_a_nan_entry_of_a_complex_vector_gives_a_nan_state_without_validation():
    """The complex norms took a sqrt that maps NaN to 0 (for a finite gradient at 0): a NaN entry gave infinite
    entries beside it. NaN, as for real vectors and as the docstring says."""
    from qpnlp.hilbert import normalize

    z = torch.tensor([[float("nan"), 1 + 1j, 0.5]], dtype=torch.complex64)
    assert torch.isnan(torch.view_as_real(normalize(z, validate=False))).all()
    assert torch.isnan(normalize(z.real.contiguous(), validate=False)).all()


def test_from_polar_normalises_the_broadcast_amplitudes():
    # the amplitudes were normalised before broadcasting against the phases: one amplitude for d phases
    # gave norm sqrt(d) (an error, or with validation off a state of norm 2)
    phases = torch.tensor([0.0, 1.0, 2.0, 3.0])
    w = PureState.from_polar(torch.ones(1), phases, normalize_amplitude=True)
    assert_allclose(w.amplitude, torch.full((4,), 0.5))
    with validation(False):
        assert_pure_state(PureState.from_polar(torch.ones(2, 1), phases, normalize_amplitude=True))


def test_evolve_refuses_a_matrix_that_is_not_a_unitary_of_the_state_dimension():
    # a (1, 2) matrix gave a 1-dimensional "state", 2 I a state of norm 2, both trusted without a check
    w = PureState.basis_state(0, 2)
    with pytest.raises(ValueError, match=r"unitary must have shape \(\.\.\., 2, 2\)"):
        w.evolve(torch.ones(1, 2) / math.sqrt(2))
    with pytest.raises(ValueError, match="unitary.*norm 2"):
        w.evolve(2 * torch.eye(2))
    with validation(False):
        assert w.evolve(2 * torch.eye(2)).dim == 2                          # the norm is checked only while on


@pytest.mark.parametrize("state_dtype, unitary_dtype", [(torch.complex64, torch.complex128),
                                                         (torch.complex128, torch.complex64)])
def test_evolve_of_mixed_precisions_checks_the_norm_at_the_coarser_one(state_dtype, unitary_dtype, device):
    # the norm of U|w> was held to float64's tolerance (2e-14) when either operand was complex64 (exact to 1e-7)
    gen = torch.Generator().manual_seed(1)
    w = PureState.normalized(torch.randn(8, 6, dtype=state_dtype, generator=gen).to(device))
    u = random_unitary(6, dtype=unitary_dtype, generator=gen).to(device)
    out = w.evolve(u)
    assert out.dtype == torch.complex128 and out.device.type == device.type
    assert_pure_state(out, atol=1e-5)
    with pytest.raises(ValueError, match="unit norm"):                  # still checked, at float32's tolerance
        w.evolve(u * (1 + 1e-3))


def test_sememe_basis_to_a_real_dtype_keeps_it_complex():
    # basis.to(torch.float64) cast the vectors to float64 (dropping their imaginary parts) and then raised
    basis = SememeBasis.random(3, generator=torch.Generator().manual_seed(0))
    wide = basis.to(torch.float64)
    assert wide.dtype == torch.complex128
    assert_allclose(wide.vectors, basis.vectors.to(torch.complex128), atol=1e-6)
    assert basis.to(device="cpu", dtype=torch.float32).dtype == torch.complex64


def test_sememe_basis_of_dimension_zero_is_a_clear_error():
    with pytest.raises(ValueError, match="d = 0"):
        SememeBasis(torch.zeros(0, 0, dtype=torch.complex64))


@pytest.mark.parametrize("index", [1.5, 1.0, "1"])
def test_basis_state_refuses_a_non_integer_index(index):
    with pytest.raises(TypeError, match="basis index must be an integer"):
        PureState.basis_state(index, 3)


@pytest.mark.parametrize("index", [True, False, torch.tensor(True)])
def test_a_bool_is_no_basis_index_as_it_is_no_size(index):
    """``operator.index`` read True as 1: ``basis.label(True)`` was the second label, while a bool is refused as a
    size or a batch shape (``as_integer``) everywhere else."""
    basis = SememeBasis.random(3, generator=torch.Generator().manual_seed(0))
    for call in (basis.label, basis.state, lambda j: PureState.basis_state(j, 3)):
        with pytest.raises(TypeError, match=f"basis index must be an integer; got {type(index).__name__}"):
            call(index)
    assert basis.label(torch.tensor(1)) == basis.label(1)


def test_to_an_integer_dtype_is_refused_and_a_lower_one_keeps_weights_with_states():
    # Ensemble.to(torch.int64) truncated the weights 1/3 to 0 (purity 0); to(torch.float16) kept float16 weights
    # beside complex64 states, to(torch.complex32) made states no constructor accepts
    from qpnlp.hilbert import Ensemble, purity
    mix = Ensemble(PureState.basis_state(0, 3).data.expand(3, 3).clone(), torch.full((3,), 1 / 3))
    with pytest.raises(TypeError, match="dtype must be a floating or complex torch.dtype.*torch.int64"):
        mix.to(torch.int64)
    for dtype in (torch.float16, torch.complex32):
        low = mix.to(dtype)
        assert (low.states.dtype, low.weights.dtype) == (torch.complex64, torch.float32)
        assert_allclose(purity(low), torch.tensor(1.0))


@pytest.mark.parametrize("call, names", [
    (lambda a, b: inner(a, b), "bra on cpu, ket on meta"),
    (lambda a, b: outer(a, b), "ket on cpu, bra on meta"),
    (lambda a, b: kron(outer(a), outer(b)), "a on cpu, b on meta"),
    (lambda a, b: PureState.from_polar(a.abs(), b.real), "amplitude on cpu, phase on meta"),
    (lambda a, b: PureState(a).global_phase(b.real[..., 0]), "the state on cpu, angle on meta"),
])
def test_arguments_on_two_devices_are_named_before_any_computation(call, names):
    # was torch's "Tensor on device meta is not on the expected device cpu!" (from_polar, inner, outer, kron), and
    # global_phase copied a tensor angle to the state's device silently
    a = PureState.basis_state(0, 2).data.expand(3, 2)
    with pytest.raises(ValueError, match=f"arguments must be on one device; got {names}"):
        call(a, a.to("meta"))


def _round_trips():
    def torch_save(obj):
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=False)

    return {"pickle": lambda obj: pickle.loads(pickle.dumps(obj)), "deepcopy": copy.deepcopy, "copy": copy.copy,
            "torch.save": torch_save}


@pytest.mark.parametrize("how", sorted(_round_trips()))
def test_immutable_objects_pickle_and_copy(how):
    # the immutable __setattr__ refused the state that pickle and copy restore: "PureState is immutable"
    from qpnlp.hilbert import DensityMatrix, Ensemble, random_pure_state, schmidt_decomposition
    from qpnlp.measurement import Projector, random_povm

    gen = torch.Generator().manual_seed(0)
    w = random_pure_state(3, batch_shape=(2,), generator=gen)
    objects = [w, w.proj(), Ensemble(w, torch.tensor([0.3, 0.7])), Projector(w.data[:1]),
               random_povm(3, 4, generator=gen), SememeBasis.canonical(3, labels=["a", "b", "c"])]
    round_trip = _round_trips()[how]
    for obj in objects:
        again = round_trip(obj)
        assert type(again) is type(obj) and repr(again) == repr(obj)
        for name in getattr(obj, "_fields", ("vectors",)):                  # the tensors themselves
            assert torch.equal(getattr(again, "_" + name), getattr(obj, "_" + name))
        with pytest.raises(AttributeError, match="immutable"):
            again.data = None
    assert round_trip(objects[-1]).labels == ("a", "b", "c")
    assert isinstance(round_trip(w.proj()), DensityMatrix)
    schmidt = schmidt_decomposition(random_pure_state(4, generator=gen), (2, 2))      # a NamedTuple of states
    assert torch.equal(round_trip(schmidt).left.data, schmidt.left.data)


def test_a_validation_block_may_close_in_another_thread():
    # a generator suspended inside the block and closed by another thread: the exit raised AttributeError there
    def steps():
        with validation(False):
            yield get_validation()
            yield get_validation()

    before, gen, seen = get_validation(), steps(), []
    worker = threading.Thread(target=lambda: seen.append(next(gen)))
    worker.start()
    worker.join(10)
    gen.close()
    assert seen == [False] and get_validation() == before


def test_global_phase_of_an_angle_that_does_not_broadcast_names_both_shapes():
    # was torch's RuntimeError "The size of tensor a (2) must match the size of tensor b (3) ..."
    w = PureState.basis_state(0, 2).data.expand(2, 2)
    with pytest.raises(ValueError, match=r"the state has batch shape \(2,\) and angle has batch shape \(3,\)"):
        PureState(w).global_phase(torch.zeros(3))
    assert PureState(w).global_phase(torch.zeros(4, 1)).batch_shape == (4, 2)       # broadcasting still works
    assert PureState(w).global_phase(0.5).batch_shape == (2,)


@given(pure_states(), st.floats(-10, 10))
def test_global_phase_multiplies_by_exp_i_angle(w, angle):
    # the projector test above cannot see the sign of the angle (any phase leaves |w><w| unchanged)
    phase = torch.tensor(complex(math.cos(angle), math.sin(angle)), dtype=w.dtype)
    assert_allclose(w.global_phase(angle).data, phase * w.data)
    assert_allclose(PureState.basis_state(0, 2).global_phase(math.pi / 2).data, torch.tensor([1j, 0]))


@given(st.data())
def test_evolve_is_the_matrix_vector_product_and_commutes_with_the_projector(data):
    w = data.draw(pure_states(dim=4, batch_shape=(3,)))
    u = data.draw(unitaries(dim=4, batch_shape=(3,), dtype=w.dtype))
    out = w.evolve(u)
    assert_allclose(out.data, torch.einsum("bij,bj->bi", u, w.data))
    assert_allclose(out.proj().data, w.proj().evolve(u).data)
    # a non-symmetric real rotation: U|e0> is U's first column, not its first row
    rotation = torch.tensor([[1.0, 1.0], [-1.0, 1.0]], dtype=torch.complex64) / math.sqrt(2)
    assert_allclose(PureState.basis_state(0, 2).evolve(rotation).data, rotation[:, 0])


def test_trace_is_the_complex_sum_of_the_diagonal():
    # the functional trace of any square matrices, not only of Hermitian ones (whose trace is real)
    m = torch.tensor([[[1 + 2j, 5.0], [3.0, 4 - 1j]], [[0.5j, 1j], [2.0, -3j]]], dtype=torch.complex128)
    assert_allclose(trace(m), torch.tensor([5 + 1j, -2.5j], dtype=torch.complex128))
    assert_allclose(trace(m), torch.stack([torch.trace(x) for x in m]))


def test_a_single_precision_state_cast_to_double_is_refused_with_its_distance_from_one():
    """The message read "got norm 1 ... tolerance 1.4e-14" (six digits of 1 + 9e-8): it now gives |x - 1| and
    says why; the same for a trace and a sum of weights."""
    from qpnlp.hilbert import DensityMatrix, Ensemble, random_density_matrix, random_pure_state

    g = torch.Generator().manual_seed(0)
    state = random_pure_state(6, batch_shape=(4,), generator=g).data.to(torch.complex128)
    rho = random_density_matrix(6, rank=3, generator=g).data.to(torch.complex128)
    weights = torch.softmax(torch.randn(3, 7, generator=g), -1).double()
    cases = [(lambda: PureState(state), "norm"), (lambda: DensityMatrix(rho), "trace"),
             (lambda: Ensemble(random_pure_state(6, batch_shape=(3, 7), dtype=torch.complex128), weights), "sum")]
    for build, what in cases:
        with pytest.raises(ValueError, match=rf"\(\|{what} - 1\| = [1-9][.0-9]*e-0[6-9]; float32 round-off"):
            build()
    with pytest.raises(ValueError, match=r"got norm 5 \(shape"):                     # a visible error: as before
        PureState(torch.tensor([3.0, 4.0], dtype=torch.complex64))


def test_single_precision_objects_moved_to_double_pass_their_own_checks():
    """to(torch.float64) kept float32's round-off (|norm - 1| ~ 1e-7, |A - A^dagger| ~ 1e-8), a million times
    float64's tolerance: PureState(s.data), Ensemble(...), DensityMatrix(rho.data) and the Born rule refused the
    moved objects ("float32 round-off ... normalise after the cast"); now they are projected back after the cast."""
    from qpnlp.hilbert import DensityMatrix, Ensemble, random_pure_state
    from qpnlp.measurement import born_probabilities, born_probabilities_dense
    g = torch.Generator().manual_seed(3)
    states = random_pure_state(5, batch_shape=(8, 5), generator=g)
    mix = Ensemble(states.data, torch.softmax(torch.randn(8, 5, generator=g), -1))
    s64, mix64, rho64 = states.to(torch.float64), mix.to(torch.float64), mix.dense().to(torch.complex128)
    eye = torch.eye(5, dtype=torch.complex128)
    PureState(s64.data)
    Ensemble(mix64.states.data, mix64.weights)
    DensityMatrix(rho64.data)
    lazy, dense = born_probabilities(mix64.states.data, mix64.weights, eye), born_probabilities_dense(rho64.data, eye)
    assert lazy.dtype == dense.dtype == torch.float64
    assert_allclose(lazy, dense, atol=1e-6)                          # two single-precision roads to one mixture
    assert_allclose(s64.data, states.data.to(torch.complex128), atol=1e-6)           # round-off only
    assert_allclose(rho64.data, mix.dense().data.to(torch.complex128), atol=1e-6)


def test_widening_keeps_zero_rows_and_what_is_more_than_round_off():
    """Only float32's round-off is removed: a zero row (padding) and a row built with validate=False stay as they
    were."""
    data = torch.tensor([[0.6, 0.8j], [0.0, 0.0], [2.0, 0.0]], dtype=torch.complex64)
    moved = PureState(data, validate=False).to(torch.float64).data
    assert torch.equal(moved[1:], data[1:].to(torch.complex128))
    assert_allclose(moved[0], data[0].to(torch.complex128), atol=1e-7)
    PureState(moved[:1])                                                   # the unit row: unit in float64


@pytest.mark.parametrize("weights_dtype", [torch.float64, torch.bfloat16, torch.float16])
def test_a_mixture_of_mixed_precisions_passes_its_own_checks(weights_dtype):
    """complex64 states with float64 weights made a complex128 mixture of trace one to float32's round-off only,
    and bfloat16/float16 weights a complex64 one of trace 1.002: DensityMatrix(rho.data) refused both."""
    from qpnlp.hilbert import DensityMatrix, Ensemble, random_pure_state
    g = torch.Generator().manual_seed(4)
    states = random_pure_state(4, batch_shape=(6, 3), generator=g).data
    weights = torch.softmax(torch.randn(6, 3, dtype=torch.float64, generator=g), -1).to(weights_dtype)
    rho = DensityMatrix.from_ensemble(states, weights)
    DensityMatrix(rho.data)
    mix = Ensemble(states, weights)
    Ensemble(mix.states.data, mix.weights)
    assert rho.dtype == (torch.complex128 if weights_dtype == torch.float64 else torch.complex64)
