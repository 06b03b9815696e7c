"""Numerical extremes of the maths: subnormal, tiny and huge amplitudes, in float32 and float64; NaN and inf entries
with validation off."""

from __future__ import annotations

import math

import pytest
import torch

import qpnlp.nn.embedding as embedding_module
from qpnlp.hilbert import validation
from qpnlp.hilbert._linalg import rescaled_norms
from qpnlp.nn import ComplexWordEmbedding
from qpnlp.testing import assert_allclose

#: Per dtype: a scale whose squares underflow (a normal number) and one below ``finfo.tiny`` (subnormal).
SCALES = [(torch.float32, 1e-30), (torch.float32, 1e-39), (torch.float32, 1e-43),
          (torch.float64, 1e-200), (torch.float64, 1e-310)]


@pytest.mark.parametrize("dtype, scale", SCALES)
def test_the_gradient_of_rescaled_norms_is_the_unit_vector_down_to_subnormal_vectors(dtype, scale):
    r"""``rescaled_norms`` recomputes a norm whose squares underflow as :math:`m \|v / m\|` with m the largest entry.
    Differentiated through m, a subnormal vector (1e-39 in float32, 1e-310 in float64) got :math:`1/m = \infty`
    terms that cancel to NaN; m is a constant of the function (it does not depend on it), and the gradient
    :math:`v / \|v\|` is finite, to the few bits a subnormal vector holds."""
    v = (torch.tensor([3.0, -4.0, 0.0], dtype=dtype) * scale).requires_grad_(True)
    norm = rescaled_norms(v, torch.linalg.vector_norm(v, dim=-1, keepdim=True))
    norm.sum().backward()
    assert torch.isfinite(v.grad).all()
    assert_allclose(v.grad, torch.tensor([0.6, -0.8, 0.0], dtype=dtype), atol=0.05, rtol=0)


@pytest.mark.parametrize("dtype, scale", SCALES)
def test_rescaled_norms_of_complex_vectors_have_finite_gradients(dtype, scale):
    z = (torch.tensor([3.0 + 0j, -4.0j], dtype=dtype.to_complex()) * scale).requires_grad_(True)
    norm = rescaled_norms(z, torch.linalg.vector_norm(z, dim=-1, keepdim=True))
    norm.sum().backward()
    assert torch.isfinite(torch.view_as_real(z.grad)).all()
    assert_allclose(z.grad, torch.tensor([0.6 + 0j, -0.8j], dtype=dtype.to_complex()), atol=0.05, rtol=0)


@pytest.mark.parametrize("fused, compiled", [(True, "1"), (True, "0"), (False, "0")])
@pytest.mark.parametrize("dtype, scale", [(torch.float32, 1e-40), (torch.float64, 1e-310)])
def test_an_embedding_row_below_tiny_has_finite_gradients_on_every_path(fused, compiled, dtype, scale, monkeypatch):
    r"""A word row that weight decay shrank below ``finfo.tiny``: the plain graph that torch.compile and torch.func
    trace (``_fused`` False) gave NaN gradients to the whole row (``rescaled_norms``), the fused lookup (its
    compiled loops and its torch ops) an infinite norm gradient (:math:`r \cdot (g / \|r\|)`, whose quotient
    overflows); all are finite now (the state's norm is clamped at ``tiny``, as documented)."""
    if compiled == "1":
        pytest.importorskip("numba", reason="the compiled lookup needs numba (the extra 'fast', in 'test')")
    monkeypatch.setenv("QPNLP_LOOKUP_COMPILED", compiled)
    monkeypatch.setattr(embedding_module, "_fused", lambda *tables: fused)
    emb = ComplexWordEmbedding(4, 3, dtype=dtype, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        emb.amplitude.weight[2] = torch.tensor([3.0, -4.0, 0.0], dtype=dtype) * scale
    states, norms = emb(torch.tensor([[2, 3]]))
    (states.real.sum() + states.imag.sum() + norms.sum()).backward()
    grads = [p.grad.to_dense() for p in (emb.amplitude.weight, emb.phase.weight)]
    assert all(torch.isfinite(g).all() for g in grads)
    assert_allclose(norms[0, 0] / scale, torch.tensor(5.0, dtype=dtype), rtol=0.05, atol=0)


@pytest.mark.parametrize("dtype, scale", SCALES)
def test_normalize_without_validation_gives_the_unit_vector_of_a_tiny_complex_vector(dtype, scale):
    """A complex vector of subnormal norm normalised (validation off, which documents such vectors as normalised):
    torch's complex division by the subnormal norm gave inf and NaN entries. Ordinary rows beside it: bit for bit
    what they give alone (without a subnormal norm the division is the one it always was)."""
    from qpnlp.hilbert import normalize

    complex_dtype = dtype.to_complex()
    tiny = torch.tensor([3.0 + 0j, -4.0j], dtype=complex_dtype) * scale
    ordinary = torch.randn(4, 2, dtype=complex_dtype, generator=torch.Generator().manual_seed(0))
    out = normalize(torch.cat([tiny[None], ordinary]), validate=False)
    assert_allclose(out[0], torch.tensor([0.6 + 0j, -0.8j], dtype=complex_dtype), atol=0.05, rtol=0)
    assert torch.equal(out[1:], normalize(ordinary, validate=False))


#: Per complex dtype: scales whose modulus falls below ``finfo.tiny`` (1e-38 in float32, 2e-308 in float64).
SUBNORMAL = [(torch.complex64, 1e-39), (torch.complex64, 1e-43), (torch.complex128, 1e-310)]


def _tiny_entries(dtype, scale):
    """``[3 + 4i, -4i, 0] * scale`` (a leaf), and its phases ``z/|z|`` (0 at 0)."""
    z = (torch.tensor([3 + 4j, -4j, 0j], dtype=dtype) * scale).requires_grad_(True)
    return z, torch.tensor([0.6 + 0.8j, -1j, 0j], dtype=dtype)


@pytest.mark.parametrize("dtype, scale", SUBNORMAL)
def test_the_gradient_of_a_subnormal_modulus_is_its_phase(dtype, scale):
    r"""torch's backward of ``z.abs()`` is ``grad * z.sgn()``, and ``sgn``'s complex division is NaN for a modulus
    below ``finfo.tiny``; :func:`modulus` gives :math:`z/|z|` there, in reverse mode, forward mode and under
    ``torch.func.grad`` and ``vmap``, with ``z.abs()``'s values."""
    import torch.autograd.forward_ad as fwAD

    from qpnlp.hilbert._linalg import modulus

    z, phase = _tiny_entries(dtype, scale)
    r = modulus(z)
    assert torch.equal(r, z.abs())
    r.sum().backward()
    assert_allclose(z.grad, phase, atol=0.05, rtol=0)
    assert_allclose(torch.func.vmap(torch.func.grad(modulus))(z.detach()), phase, atol=0.05, rtol=0)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(modulus(fwAD.make_dual(z.detach(), torch.ones_like(z)))).tangent
    assert_allclose(tangent, phase.real, atol=0.05, rtol=0)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_modulus_is_z_abs_bit_for_bit_where_torch_is_finite(dtype):
    """Values, gradients, second derivatives (``create_graph``) and tangents of :func:`modulus` equal those of
    ``z.abs()`` bit for bit for every modulus at or above ``tiny`` (zero included), whatever the length."""
    import torch.autograd.forward_ad as fwAD

    from qpnlp.hilbert._linalg import modulus

    generator = torch.Generator().manual_seed(0)
    for n in (0, 1, 2, 3, 7, 16, 33, 100, 257, 1000):
        for scale in (1.0, 1e-3, 1e-18, 1e18):
            z = torch.randn(n, dtype=dtype, generator=generator) * scale
            z[: n // 7] = 0
            weights = torch.randn(n, dtype=z.real.dtype, generator=generator)
            tangent = torch.randn(n, dtype=dtype, generator=generator)
            results = []
            for function in (torch.abs, modulus):
                leaf = z.clone().requires_grad_(True)
                r = function(leaf)
                (grad,) = torch.autograd.grad((r * weights).sum(), leaf, create_graph=True)
                (second,) = torch.autograd.grad(torch.view_as_real(grad).sum(), leaf) if n else (grad,)
                with fwAD.dual_level():
                    dot = fwAD.unpack_dual(function(fwAD.make_dual(z, tangent))).tangent
                results.append((r, grad, second, dot))
            for plain, ours in zip(*results):
                assert torch.equal(plain, ours), (n, scale)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_modulus_records_torchs_own_abs_where_no_modulus_is_subnormal(dtype):
    """The Python Function (its forward and backward cost about 50 us a call on the CPU, 4% of a complex-order
    FastText step) is recorded only where torch's gradient would be NaN: for moduli of ordinary size, zero
    included, the graph holds torch's ``AbsBackward0``; one subnormal modulus in the tensor takes the Function."""
    from qpnlp.hilbert._linalg import modulus

    z = torch.randn(4, 6, dtype=dtype, generator=torch.Generator().manual_seed(0))
    z[0] = 0
    assert modulus(z.requires_grad_(True)).grad_fn.name() == "AbsBackward0"
    tiny = z.detach().clone()
    tiny[1, 2] = torch.finfo(dtype.to_real()).tiny / 8 * (3 + 4j)         # modulus 0.625 tiny
    assert modulus(tiny.requires_grad_(True)).grad_fn.name() == "_ModulusWithJvpBackward"


@pytest.mark.parametrize("dtype, scale", SUBNORMAL)
def test_readout_hirose_and_attention_scores_of_subnormal_entries_have_finite_gradients(dtype, scale, monkeypatch):
    """``readout(z, "modulus")``, ``hirose`` and ``hermitian_attention_scores`` take the modulus of complex
    features: through ``z.abs()`` an entry of subnormal modulus got a NaN gradient (its true gradient is bounded:
    the phase; Hirose's ``tanh(x)/x`` is smooth at 0). Ordinary entries beside it: bit for bit what ``z.abs()``
    gave them (torch's vectorised ``sgn`` rounds, and fails, by position in a vector: the reference is the same
    vector, through ``z.abs()``)."""
    import qpnlp.nn.activation as activation
    import qpnlp.nn.functional as functional

    z, phase = _tiny_entries(dtype, scale)
    functional.readout(z, "modulus").sum().backward()
    assert_allclose(z.grad, phase, atol=0.05, rtol=0)
    z.grad = None
    activation.hirose(z).real.sum().backward()
    assert_allclose(z.grad, torch.tensor([1, 1, 1], dtype=dtype), atol=0.05, rtol=0)
    q = z.detach().reshape(3, 1).requires_grad_(True)
    functional.hermitian_attention_scores(q, torch.ones(1, 1, dtype=dtype)).sum().backward()
    assert_allclose(q.grad.reshape(3), phase, atol=0.05, rtol=0)
    rows = torch.cat([torch.randn(5, dtype=dtype, generator=torch.Generator().manual_seed(1)), z.detach()])
    grads = []
    for plain in (False, True):
        if plain:                               # the code before: torch's z.abs()
            monkeypatch.setattr(functional, "modulus", torch.abs)
            monkeypatch.setattr(activation, "modulus", torch.abs)
        leaf = rows.clone().requires_grad_(True)
        (functional.readout(leaf, "modulus").sum() + activation.hirose(leaf).real.sum()).backward()
        grads.append(leaf.grad)
    assert torch.isfinite(torch.view_as_real(grads[0])).all()
    assert torch.equal(grads[0][:5], grads[1][:5])


@pytest.mark.parametrize("scale_first", [False, True])
@pytest.mark.parametrize("dtype, scale", SUBNORMAL)
def test_a_dead_modrelu_unit_of_subnormal_modulus_has_a_zero_gradient(dtype, scale, scale_first):
    """With :math:`|z| + b \\le 0` modReLU's output and gradient are 0; a subnormal z gave NaN (``z.abs()``'s
    backward, and, without ``scale_first``, 0 times the divisor's gradient :math:`\\propto 1/|z|^2`, infinite)."""
    from qpnlp.nn.activation import modrelu

    z, _ = _tiny_entries(dtype, scale)
    out = modrelu(z, -0.01, scale_first=scale_first)
    out.real.sum().backward()
    assert torch.equal(out, torch.zeros_like(out))
    assert torch.equal(z.grad, torch.zeros_like(z))


#: Per complex dtype: one unit in the last place of its smallest subnormal.
SMALLEST = [(torch.complex64, 1e-45), (torch.complex128, 5e-324)]


@pytest.mark.parametrize("dtype, unit", SMALLEST)
def test_the_phase_of_a_modulus_of_a_few_bits_has_modulus_one(dtype, unit):
    """z = (1 + i), (2 + i), (3 + 2i) units of the smallest subnormal: ``z.abs()`` rounds to 1, 2 and 4 units (it
    holds a bit or two there), and z divided by it gave phases of modulus 1.41, 1.12 and 0.90: the gradient of
    :func:`modulus` and modReLU's output (1.5 (1 + i) for b = 1.5); ``scale_first``'s ReLU(|z| + b) / |z|
    overflowed to inf. The phases have modulus 1 to rounding now, and modReLU's outputs 1.5 times them."""
    from qpnlp.hilbert._linalg import modulus
    from qpnlp.nn.activation import modrelu

    parts = torch.tensor([1 + 1j, 2 + 1j, 3 + 2j], dtype=torch.complex128)
    phases = (parts / parts.abs()).to(dtype)
    eps = torch.finfo(dtype.to_real()).eps
    z = (parts.to(dtype) * unit).requires_grad_(True)
    modulus(z).sum().backward()
    assert_allclose(z.grad, phases, atol=4 * eps, rtol=0)
    for scale_first in (False, True):
        assert_allclose(modrelu(z.detach(), 1.5, scale_first=scale_first), 1.5 * phases, atol=8 * eps, rtol=0)
    real = torch.tensor([1.0, -3.0], dtype=dtype.to_real()) * unit
    assert torch.equal(modrelu(real, 1.5, scale_first=True), torch.tensor([1.5, -1.5], dtype=real.dtype))


def test_the_compiled_readout_of_a_subnormal_entry_has_the_eager_gradient():
    """torch.compile traces :func:`modulus` (dynamo refuses a Function with a custom ``jvp``, so it traces the
    one without) in one graph, backward included; the gradient is eager's."""
    from qpnlp.nn.functional import readout

    torch._dynamo.reset()
    compiled = torch.compile(lambda z: readout(z, "modulus").sum(), backend="aot_eager", fullgraph=True)
    z, phase = _tiny_entries(torch.complex64, 1e-40)
    compiled(z).backward()
    assert_allclose(z.grad, phase, atol=0.05, rtol=0)


#: Per dtype: one unit in the last place of its smallest subnormal.
SMALLEST_REAL_AND_COMPLEX = [(torch.float32, 1e-45), (torch.float64, 5e-324), (torch.complex64, 1e-45),
                             (torch.complex128, 5e-324)]


@pytest.mark.parametrize("dtype, unit", SMALLEST_REAL_AND_COMPLEX)
def test_normalize_of_a_subnormal_vector_is_a_unit_vector(dtype, unit):
    r"""Vectors of a few units of the smallest subnormal, (1, 1), (2, 3), (1, 2, -1, 1), normalised with validation
    off: their norm, rounded to the subnormal grid, holds a bit or two, and v divided by it had norm 1.41, 0.90 and
    0.88 ((1, 1) stayed (1, 1)), in every dtype. Now unit vectors in v's direction, to rounding, in a batch (with
    ordinary rows, kept bit for bit, and a NaN row, whose NaN minimum hid the subnormal norms from the test for
    them), alone, and under vmap (branch-free)."""
    from qpnlp.hilbert import normalize

    units = torch.tensor([[1, 1, 0, 0], [2, 3, 0, 0], [1, 2, -1, 1]], dtype=torch.float64)
    expected = (units / torch.linalg.vector_norm(units, dim=-1, keepdim=True)).to(dtype)
    tiny = (units.to(dtype) * unit) * (1j if dtype.is_complex else 1)
    expected = expected * (1j if dtype.is_complex else 1)
    ordinary = torch.randn(2, 4, dtype=dtype, generator=torch.Generator().manual_seed(0))
    nan = torch.full((1, 4), float("nan"), dtype=dtype)
    eps = torch.finfo(dtype.to_real()).eps
    batch = normalize(torch.cat([tiny, ordinary, nan]), validate=False)
    for out in (batch[:3], normalize(tiny, validate=False), torch.vmap(lambda v: normalize(v, validate=False))(tiny)):
        assert_allclose(out, expected, atol=4 * eps, rtol=0)
        assert_allclose(torch.linalg.vector_norm(out, dim=-1), torch.ones(3, dtype=dtype.to_real()), atol=4 * eps,
                        rtol=0)
    assert torch.equal(batch[3:5], normalize(ordinary, validate=False))
    assert torch.isnan(batch[5]).all()
    assert torch.isnan(normalize(torch.zeros(2, 4, dtype=dtype), validate=False)).all()     # 0 / 0, as before


def _batch(kind: str, dtype: torch.dtype) -> torch.Tensor:
    """Three healthy operands of one kind (d = 4), from one seeded generator: dense states, ensembles' states, pure
    states, POVM effects, frames."""
    from qpnlp.hilbert import random_density_matrix, random_pure_state
    from qpnlp.measurement import random_povm

    gen = torch.Generator().manual_seed(1)
    if kind == "dense":
        return random_density_matrix(4, batch_shape=(3,), dtype=dtype, generator=gen).data
    if kind == "states":
        return random_pure_state(4, batch_shape=(3, 3), dtype=dtype, generator=gen).data
    if kind == "pure":
        return random_pure_state(4, batch_shape=(3,), dtype=dtype, generator=gen).data
    if kind == "effects":
        return random_povm(4, 3, rank=2, batch_shape=(3,), dtype=dtype, generator=gen).effects()
    return torch.randn(3, 5, 4, dtype=dtype, generator=gen)                                  # a frame


def _broken(x: torch.Tensor, kind: str, value: float) -> torch.Tensor:
    """A copy of the batch ``x`` with one entry of its element 1 set to ``value`` (of each of its effects: every
    effect is decomposed on its own)."""
    x = x.clone()
    if kind == "effects":
        x[1, :, 0, 0] = value
    else:
        x.view(3, -1)[1, 0] = value
    return x


def _decomposed_cases():
    """``(name, kind, f)``: a public function whose input reaches an eigen-decomposition or an SVD, as a function of
    a batch of three operands of ``kind`` (:func:`_batch`), the others healthy states of its dtype."""
    import qpnlp.hilbert as H
    from qpnlp.hilbert import DensityMatrix, Ensemble, PureState
    from qpnlp.measurement import POVM

    def other(x):
        return H.random_density_matrix(4, dtype=x.dtype, generator=torch.Generator().manual_seed(2))

    dense = [("von_neumann_entropy", H.von_neumann_entropy), ("negativity", lambda r: H.negativity(r, (2, 2))),
             ("mutual_information", lambda r: H.mutual_information(r, (2, 2))),
             ("conditional_entropy", lambda r: H.conditional_entropy(r, (2, 2))),
             ("DensityMatrix.eigvals", lambda r: r.eigvals()), ("DensityMatrix.eigh", lambda r: r.eigh()[0])]
    dense += [(f"renyi_entropy-{a}", lambda r, a=a: H.renyi_entropy(r, a)) for a in (0, 0.5, 2, math.inf)]
    dense += [(f.__name__, lambda r, f=f: f(r, other(r.data))) for f in (
        H.fidelity, H.infidelity, H.trace_distance, H.bures_distance, H.bures_angle, H.hellinger_distance,
        H.hellinger_affinity, H.relative_entropy, H.quantum_jensen_shannon_divergence)]
    dense += [("relative_entropy-sigma", lambda r: H.relative_entropy(other(r.data), r))]
    ensembles = [("von_neumann_entropy", H.von_neumann_entropy), ("Ensemble.eigvals", lambda e: e.eigvals())]
    ensembles += [(f.__name__, lambda e, f=f: f(e, Ensemble(_batch("states", e.dtype).flip(0)))) for f in (
        H.fidelity, H.trace_distance, H.quantum_jensen_shannon_divergence)]
    pure = [("schmidt_decomposition", lambda p: H.schmidt_decomposition(p, (2, 2)).coefficients)]
    pure += [(f.__name__, lambda p, f=f: f(p, other(p.data))) for f in (
        H.trace_distance, H.quantum_jensen_shannon_divergence)]
    return ([(name, "dense", lambda x, f=f: f(DensityMatrix(x))) for name, f in dense]
            + [(name, "states", lambda x, f=f: f(Ensemble(x))) for name, f in ensembles]
            + [(name, "pure", lambda x, f=f: f(PureState(x))) for name, f in pure]
            + [("POVM.from_effects", "effects", lambda x: POVM.from_effects(x).vectors),
               ("POVM.from_frame", "frame", lambda x: POVM.from_frame(x).vectors),
               ("POVM.post_measurement_state-povm", "effects",
                lambda x: POVM.from_effects(x).post_measurement_state(other(x), 0).data)])


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name, kind, f", _decomposed_cases(), ids=[c[0] + "-" + c[1] for c in _decomposed_cases()])
def test_a_non_finite_batch_element_gives_nan_there_and_the_others_their_values(name, kind, f, dtype, bad):
    r"""With validation off a NaN or infinite entry reaching ``eigh``, ``eigvalsh``, ``svd`` or ``svdvals`` raised
    torch's ``LinAlgError`` ("linalg.eigh: (Batch element 1): The algorithm failed to converge") and lost the whole
    batch, where qpnlp's other functions give NaN for such an input. Now
    :func:`~qpnlp.hilbert._linalg.decompose` gives NaN for that element (the entropies, whose masks read NaN as 0,
    keep it: not a plausible 0 or inf), and the other elements their values bit for bit."""
    healthy = _batch(kind, dtype)
    broken = _broken(healthy, kind, bad)
    with validation(False):
        good, out = f(healthy), f(broken)
    assert torch.isnan(out[1]).all(), out[1]
    assert torch.equal(out[0::2], good[0::2])
    assert not torch.isnan(good).any()


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name, kind, f", [c for c in _decomposed_cases() if c[0] in (
    "von_neumann_entropy", "fidelity", "trace_distance", "quantum_jensen_shannon_divergence", "relative_entropy",
    "relative_entropy-sigma", "bures_distance")], ids=lambda c: c if isinstance(c, str) else "")
def test_the_healthy_elements_beside_a_nan_one_keep_their_gradients(name, kind, f, dtype):
    """The gradient of the healthy elements' sum with respect to their inputs is the one without the NaN element, bit
    for bit (``torch.where`` routes none of the NaN element's into theirs)."""
    grads = []
    for value in (None, math.nan):
        x = _batch(kind, dtype)
        x = (x if value is None else _broken(x, kind, value)).requires_grad_(True)
        with validation(False):
            f(x)[0::2].sum().backward()
        grads.append(x.grad[0::2])
    assert torch.isfinite(grads[1]).all() and torch.equal(grads[0], grads[1])


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_decompose_is_the_same_branch_free_as_on_a_gpu_and_under_vmap(dtype, monkeypatch):
    """On a GPU, under torch.compile and under vmap ``decompose`` cannot read whether an element is bad (a host
    sync, or no value): it masks every batch. NaN for the bad element there too, and the other elements' values
    bit for bit those of the healthy batch on the same route (vmap's differ from the batched ones by round-off)."""
    import qpnlp.hilbert as H
    from qpnlp.hilbert import _linalg

    healthy = _batch("dense", dtype)
    x = _broken(healthy, "dense", math.nan)
    sigma = H.random_density_matrix(4, dtype=dtype, generator=torch.Generator().manual_seed(2)).data
    metrics = (H.von_neumann_entropy, lambda r: H.trace_distance(r, sigma), lambda r: H.fidelity(r, sigma))
    with validation(False):
        references = [[f(healthy) for f in metrics], [torch.vmap(f)(healthy) for f in metrics]]
        mapped = [torch.vmap(f)(x) for f in metrics]
        monkeypatch.setattr(_linalg, "none_needs_the_second_pass", lambda needs, *tensors: False)
        masked = [f(x) for f in metrics]
    for out, expected in zip((masked, mapped), references):
        for value, reference in zip(out, expected):
            assert torch.isnan(value[1]) and torch.equal(value[0::2], reference[0::2])
