"""The fused hot paths of issue 22 equal the formulas they replaced (kept here as the references).

* the word-state lookup of :class:`ComplexWordEmbedding` (one sort of the ids, a hand-written backward,
  coalesced table gradients) against ``torch.polar(r / ||r||, phi)`` on two ``nn.Embedding`` lookups;
* the lookup of :class:`WordWeighting`'s table against ``nn.Embedding``;
* the per-part functions of :mod:`qpnlp.nn.functional` and the attention's weighted values, now on the
  real [Re, Im] view, against their ``torch.complex(f(z.real), f(z.imag))`` forms;
* :func:`unit_rows` (CNM's renormalisation after dropout) against ``torch.nn.functional.normalize``.

Values and gradients, complex64 and complex128 (float32 and float64 tables).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import qpnlp.nn.embedding as embedding_module
from qpnlp.nn import (ComplexMultiheadSelfAttention, ComplexWordEmbedding, WordWeighting, complex_dropout,
                      masked_max, masked_mean, part_mul, readout, split_activation, unit_rows)
from qpnlp.testing import assert_allclose


@pytest.fixture(params=["compiled", "torch ops"])
def lookup_backend(request, monkeypatch):
    """Run a lookup test with the compiled loops of :mod:`qpnlp.nn.polar_rows` (where numba is installed) and
    with the torch ops."""
    if request.param == "compiled":
        pytest.importorskip("numba", reason="the compiled lookup needs numba (the extra 'fast', in 'test')")
    monkeypatch.setenv("QPNLP_LOOKUP_COMPILED", "1" if request.param == "compiled" else "0")
    return request.param


def _old_states(emb: ComplexWordEmbedding, ids: torch.Tensor):
    """The previous ComplexWordEmbedding.forward, verbatim."""
    r = emb.amplitude(ids)
    norms = torch.linalg.vector_norm(r, dim=-1)
    unit = r / norms.clamp_min(torch.finfo(r.dtype).tiny).unsqueeze(-1)
    return torch.polar(unit, emb.phase(ids)), norms


def _grads(emb, states_norms, g_states, g_norms):
    emb.zero_grad(set_to_none=True)
    states, norms = states_norms
    torch.autograd.backward([states, norms], [g_states, g_norms])
    return [p.grad.to_dense() if p.grad is not None and p.grad.is_sparse else p.grad for p in
            (emb.amplitude.weight, emb.phase.weight)]


@pytest.mark.usefixtures("lookup_backend")
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("phase_init", ["uniform", "sign"])
def test_word_states_equal_the_polar_graph(cdtype, tol, sparse, phase_init, monkeypatch):
    monkeypatch.setattr(embedding_module, "TORCH_POLAR_GRADIENT", True)       # the convention of that graph
    real = cdtype.to_real()
    gen = torch.Generator().manual_seed(0)
    pretrained = torch.randn(40, 6, dtype=real, generator=gen)
    pretrained[7] = 0.0                                           # a zero row that is not padding
    pretrained[9, 2] = 0.0                                        # a zero coordinate
    emb = ComplexWordEmbedding(40, 6, pretrained=pretrained, phase_init=phase_init, sparse=sparse, dtype=real,
                               generator=gen)
    ids = torch.tensor([[3, 7, 9, 9, 0, 0], [39, 3, 1, 2, 7, 0]])     # repeats, padding, the zero rows
    g_states = torch.randn(2, 6, 6, dtype=cdtype, generator=gen)
    g_norms = torch.randn(2, 6, dtype=real, generator=gen)
    old, new = _old_states(emb, ids), emb(ids)
    assert new[0].dtype == cdtype and new[1].dtype == real
    for a, b in zip(old, new):
        torch.testing.assert_close(b.detach(), a.detach(), atol=tol(6), rtol=0)
    for a, b in zip(_grads(emb, old, g_states, g_norms), _grads(emb, new, g_states, g_norms)):
        torch.testing.assert_close(b, a, atol=tol(6), rtol=tol(6))


@pytest.mark.usefixtures("lookup_backend")
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("polar_gradient", [False, True])
def test_distinct_states_gathered_equal_the_lookup(cdtype, tol, fused, polar_gradient, monkeypatch):
    """``distinct_states``: ``states[index]`` and ``norms[index]`` are the lookup's outputs, and a loss through
    them gives the same table gradients (repeats, padding, a zero row; fused and traceable paths)."""
    monkeypatch.setattr(embedding_module, "TORCH_POLAR_GRADIENT", polar_gradient)
    real = cdtype.to_real()
    gen = torch.Generator().manual_seed(2)
    pretrained = torch.randn(30, 7, dtype=real, generator=gen)
    pretrained[5] = 0.0
    emb = ComplexWordEmbedding(30, 7, pretrained=pretrained, dtype=real, generator=gen)
    ids = torch.tensor([[4, 5, 9, 9, 0], [29, 4, 1, 2, 0]])
    g_states = torch.randn(2, 5, 7, dtype=cdtype, generator=gen)
    g_norms = torch.randn(2, 5, dtype=real, generator=gen)
    reference = emb(ids)
    monkeypatch.setattr(embedding_module, "_fused", lambda *tables: fused)
    states, norms, index = emb.distinct_states(ids)
    assert states.shape == (7, 7) and norms.shape == (7,) and index.shape == ids.shape
    gathered = (states[index], norms[index])
    for a, b in zip(reference, gathered):
        torch.testing.assert_close(b.detach(), a.detach(), atol=tol(7), rtol=0)
    for a, b in zip(_grads(emb, reference, g_states, g_norms), _grads(emb, gathered, g_states, g_norms)):
        torch.testing.assert_close(b, a, atol=tol(7), rtol=tol(7))


def test_distinct_states_check_their_ids():
    emb = ComplexWordEmbedding(10, 3)
    with pytest.raises(ValueError, match="id"):
        emb.distinct_states(torch.tensor([[1, 10]]), validate=True)


@pytest.mark.usefixtures("lookup_backend")
def test_a_conjugated_incoming_gradient_is_accepted(cdtype, tol, monkeypatch):
    """A loss through ``states.conj()`` hands the backward a lazily conjugated gradient (CNM's trace
    inner product did): same gradients as the polar graph, no view_as_real error."""
    monkeypatch.setattr(embedding_module, "TORCH_POLAR_GRADIENT", True)       # the convention of that graph
    real = cdtype.to_real()
    emb = ComplexWordEmbedding(12, 5, dtype=real, generator=torch.Generator().manual_seed(4))
    ids = torch.tensor([[2, 3, 3, 0]])
    w = torch.randn(5, dtype=cdtype, generator=torch.Generator().manual_seed(5))

    def grads(states_norms):
        emb.zero_grad(set_to_none=True)
        (states_norms[0].conj() @ w).real.sum().backward()
        return [p.grad.to_dense() for p in (emb.amplitude.weight, emb.phase.weight)]

    for a, b in zip(grads(_old_states(emb, ids)), grads(emb(ids))):
        torch.testing.assert_close(b, a, atol=tol(5), rtol=tol(5))


@pytest.mark.usefixtures("lookup_backend")
def test_table_gradients_are_coalesced_without_padding():
    emb = ComplexWordEmbedding(50, 4, generator=torch.Generator().manual_seed(1))
    states, norms = emb(torch.tensor([[9, 3, 9, 0, 0], [3, 1, 0, 0, 0]]))
    (torch.view_as_real(states).sum() + norms.sum()).backward()
    for table in (emb.amplitude, emb.phase):
        grad = table.weight.grad
        assert grad.is_sparse and grad._indices()[0].tolist() == [1, 3, 9]       # sorted, unique, no padding 0


@pytest.mark.usefixtures("lookup_backend")
def test_frozen_amplitudes_get_no_gradient():
    emb = ComplexWordEmbedding(10, 3, freeze_amplitude=True, generator=torch.Generator().manual_seed(2))
    states, _ = emb(torch.tensor([[2, 4, 4]]))
    states.abs().sum().backward()
    assert emb.amplitude.weight.grad is None and emb.phase.weight.grad is not None


@pytest.mark.usefixtures("lookup_backend")
def test_exact_polar_gradient_passes_gradcheck():
    assert embedding_module.TORCH_POLAR_GRADIENT is False                        # the default: the derivative
    gen = torch.Generator().manual_seed(3)
    amplitude = torch.randn(8, 3, dtype=torch.float64, generator=gen).requires_grad_()   # signed
    phase = torch.randn(8, 3, dtype=torch.float64, generator=gen).requires_grad_()
    ids = torch.tensor([[1, 5, 5, 7]])

    def f(a, p):
        states, norms = embedding_module._PolarLookup.apply(ids, a, p, None, False, False)
        return torch.view_as_real(states), norms
    assert torch.autograd.gradcheck(f, (amplitude, phase))


@pytest.mark.usefixtures("lookup_backend")
@pytest.mark.parametrize("polar_gradient", [False, True])
def test_the_graph_torch_compile_traces_equals_the_fused_lookup(polar_gradient, monkeypatch):
    """Under torch.compile the embedding runs its plain graph instead of the fused lookup; both must give the
    same states and gradients in either modulus-gradient convention, signed amplitudes included (a compiled
    training run once took torch.polar's gradient there while the eager one took the derivative)."""
    monkeypatch.setattr(embedding_module, "TORCH_POLAR_GRADIENT", polar_gradient)
    gen = torch.Generator().manual_seed(6)
    emb = ComplexWordEmbedding(20, 4, pretrained=torch.randn(20, 4, dtype=torch.float64, generator=gen),
                               phase_init="uniform", dtype=torch.float64, generator=gen)
    ids = torch.tensor([[3, 5, 5, 0], [7, 3, 1, 2]])
    g_states = torch.randn(2, 4, 4, dtype=torch.complex128, generator=gen)
    g_norms = torch.randn(2, 4, dtype=torch.float64, generator=gen)
    fused = emb(ids)
    monkeypatch.setattr(embedding_module, "_fused", lambda *tables: False)   # what torch.compile traces
    traced = emb(ids)
    for a, b in zip(fused, traced):
        torch.testing.assert_close(b.detach(), a.detach())
    for a, b in zip(_grads(emb, fused, g_states, g_norms), _grads(emb, traced, g_states, g_norms)):
        torch.testing.assert_close(b, a)


@pytest.mark.usefixtures("lookup_backend")
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("dtype, small, large", [(torch.float32, 1e-25, 1e20), (torch.float64, 1e-170, 1e160)])
def test_rows_whose_squares_underflow_or_overflow_give_unit_states(fused, dtype, small, large, monkeypatch):
    """AdamW's decoupled weight decay shrinks a row that no training batch holds (the unknown word's, read at test
    time) by 1 - lr wd per step: in float32 its squares underflow from about 1e-19, the norm came out too small
    or 0, and r / max(||r||, tiny) had a norm up to 1e30 (QPDN gave Born probabilities of 1e30). Squares that
    overflow (1e20) gave a zero state. Now unit states, the true norms and finite gradients, on every path."""
    monkeypatch.setattr(embedding_module, "_fused", lambda *tables: fused)
    emb = ComplexWordEmbedding(5, 4, phase_init="uniform", dtype=dtype, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        emb.amplitude.weight[2:4] = torch.tensor([[small], [large]], dtype=dtype) * torch.tensor(
            [3.0, -4.0, 0.0, 12.0], dtype=dtype)                                     # norm 13 small, 13 large
    states, norms = emb(torch.tensor([[2, 3, 4, 2]]))
    assert_allclose(states.abs().square().sum(-1), torch.ones(1, 4, dtype=dtype))
    assert_allclose(norms[0, :2] / torch.tensor([small, large], dtype=dtype), torch.full((2,), 13.0, dtype=dtype))
    (states.real.sum() + norms.sum()).backward()
    assert torch.isfinite(emb.amplitude.weight.grad.to_dense()).all()


@pytest.mark.parametrize("polar_gradient", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_compiled_lookup_equals_its_torch_ops(polar_gradient, dtype, monkeypatch):
    """At d=37 (vectorised loops and their tails), repeated ids, a zero row, NaN in a phase and in an amplitude,
    both gradients."""
    pytest.importorskip("numba", reason="the compiled lookup needs numba (the extra 'fast', in 'test')")
    monkeypatch.setattr(embedding_module, "TORCH_POLAR_GRADIENT", polar_gradient)
    gen = torch.Generator().manual_seed(7)
    emb = ComplexWordEmbedding(300, 37, pretrained=torch.randn(300, 37, dtype=dtype, generator=gen),
                               phase_init="uniform", dtype=dtype, generator=gen)
    with torch.no_grad():
        emb.amplitude.weight[11] = 0.0
        emb.phase.weight[12, 3] = float("nan")
        emb.amplitude.weight[13, 5] = float("nan")
    ids = torch.randint(14, 300, (6, 50), generator=gen)
    ids[0, :4] = torch.tensor([11, 12, 13, 0])
    g_states = torch.randn(6, 50, 37, dtype=dtype.to_complex(), generator=gen)
    g_norms = torch.randn(6, 50, dtype=dtype, generator=gen)
    runs = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("QPNLP_LOOKUP_COMPILED", flag)
        states_norms = emb(ids)
        runs[flag] = [t.detach() for t in states_norms] + _grads(emb, states_norms, g_states, g_norms)
    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
    for compiled, ops in zip(runs["1"], runs["0"]):
        torch.testing.assert_close(compiled, ops, atol=tolerance, rtol=tolerance, equal_nan=True)
    nan = torch.isnan(runs["1"][0])                     # the NaN phase's coordinate, the NaN amplitude's row
    assert torch.equal(nan.any(-1), (ids == 12) | (ids == 13)) and nan[0, 2].all() and nan[0, 1].sum() == 1


@settings(max_examples=30)
@given(data=st.data())
def test_fuzzed_lookups_equal_the_polar_graph(data):
    """Random tables and batches for both backends: one word or one row, zero rows and zero coordinates, ids at
    the last row, repeated ids, padding at either end, widths across the loops' vector tails; values and gradients
    of the states and norms (or of the states alone) against ``torch.polar(r / ||r||, phi)``."""
    draw = data.draw
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    V, d, B, L = draw(st.integers(2, 6)), draw(st.integers(1, 19)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 99)))
    table = torch.randn(V, d, dtype=dtype, generator=gen) * draw(st.sampled_from([1.0, 1e-3, 1e3]))
    table[torch.tensor(draw(st.lists(st.booleans(), min_size=V, max_size=V)))] = 0.0
    padding = draw(st.sampled_from([0, V - 1, -1]))     # None (refused now) zeroed every row; -1 is row V - 1
    ids = torch.tensor(draw(st.lists(st.integers(0, V - 1), min_size=B * L, max_size=B * L))).view(B, L)
    g_states = torch.randn(B, L, d, dtype=dtype.to_complex(), generator=gen)
    g_norms = torch.randn(B, L, dtype=dtype, generator=gen) if draw(st.booleans()) else torch.zeros(B, L, dtype=dtype)
    runs = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedding_module, "TORCH_POLAR_GRADIENT", True)
        for compiled in ("1", "0", None):
            patch.setenv("QPNLP_LOOKUP_COMPILED", compiled or "0")
            emb = ComplexWordEmbedding(V, d, pretrained=table, phase_init="uniform", padding_idx=padding,
                                       dtype=dtype, generator=torch.Generator().manual_seed(1))
            out = emb(ids) if compiled else _old_states(emb, ids)
            runs.append([t.detach() for t in out] + _grads(emb, out, g_states, g_norms))
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    # the gradients of r / ||r|| are of size |g| / ||r||, and so is the reference's rounding (d = 1 at scale 1e-3:
    # 2.4e-4 where the exact value is 0): their tolerance grows as the smallest nonzero row shrinks
    norms = table.norm(dim=-1)
    grad_tol = tol * max(1.0, 1.0 / float(norms[norms > 0].min())) if bool((norms > 0).any()) else tol
    for run in runs[:2]:
        for i, (got, want) in enumerate(zip(run, runs[2])):
            if want is not None:
                atol = tol if i < 2 else grad_tol                   # states and norms, then the two gradients
                torch.testing.assert_close(got, want, atol=atol, rtol=tol)


def test_the_compiled_lookup_refuses_shapes_its_loops_would_read_past():
    pytest.importorskip("numba", reason="the compiled lookup needs numba (the extra 'fast', in 'test')")
    from qpnlp.nn import polar_rows
    r, inverse = torch.rand(4, 3) + 0.1, torch.tensor([0, 3, 3, 1])
    cos, sin = torch.ones(4, 3), torch.zeros(4, 3)
    with pytest.raises(ValueError, match="expected"):
        polar_rows.unit_states(r, cos[:3], sin, inverse)
    with pytest.raises(IndexError, match=r"position ids must lie in \[0, 4\)"):
        polar_rows.unit_states(r, cos, sin, torch.tensor([0, 4]))
    states, _, unit, norms, scale = polar_rows.unit_states(r, cos, sin, inverse)
    g = torch.randn_like(states)
    with pytest.raises(ValueError, match="expected g"):
        polar_rows.unit_states_backward(g[:3], None, inverse, r, unit, cos, sin, norms, scale, False)
    with pytest.raises(ValueError, match="expected g"):
        polar_rows.unit_states_backward(g, torch.ones(3), inverse, r, unit, cos, sin, norms, scale, False)
    with pytest.raises(IndexError):
        polar_rows.unit_states_backward(g, None, inverse + 1, r, unit, cos, sin, norms, scale, False)


def test_torch_polar_gradient_flips_at_negative_amplitudes():
    """What ``TORCH_POLAR_GRADIENT = True`` keeps: torch.polar's modulus gradient is sgn(abs) times the derivative."""
    abs_ = torch.tensor([-0.5, 0.0, 0.7], dtype=torch.float64, requires_grad=True)
    angle = torch.tensor([0.3, 0.4, 0.5], dtype=torch.float64)
    torch.polar(abs_, angle).real.sum().backward()
    torch.testing.assert_close(abs_.grad, torch.sign(abs_.detach()) * torch.cos(angle))


@pytest.mark.parametrize("sparse", [True, False])
def test_weighting_table_lookup_equals_embedding(sparse):
    gen = torch.Generator().manual_seed(4)
    weighting = WordWeighting(30, "trainable", sparse=sparse)
    with torch.no_grad():
        weighting.table.weight[1:] = torch.randn(29, 1, generator=gen)
    ids = torch.tensor([[5, 5, 2, 0], [29, 1, 0, 0]])
    g = torch.randn(2, 4, generator=gen)
    new = weighting.scores(ids, torch.ones(2, 4))
    old = weighting.table(ids).squeeze(-1)
    torch.testing.assert_close(new, old)
    grads = []
    for out in (old, new):
        weighting.zero_grad(set_to_none=True)
        out.backward(g)
        grads.append(weighting.table.weight.grad.to_dense())
    torch.testing.assert_close(grads[1], grads[0])


# --------------------------------------------------------------------- per-part functions on [Re, Im] views
def _z(shape, cdtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=cdtype, generator=gen).requires_grad_()


def _check(new_fn, old_fn, inputs, tol, dim=1):
    new, old = new_fn(*inputs), old_fn(*inputs)
    torch.testing.assert_close(new, old, atol=tol(dim), rtol=0)
    g = torch.randn(old.shape, dtype=old.dtype, generator=torch.Generator().manual_seed(9))
    grads_new = torch.autograd.grad(new, inputs, g)
    grads_old = torch.autograd.grad(old, inputs, g)
    for a, b in zip(grads_new, grads_old):
        torch.testing.assert_close(a, b, atol=tol(dim), rtol=0)


@pytest.mark.parametrize("fn", ["relu", "tanh", "sigmoid", "identity"])
def test_split_activation_equals_per_part_form(cdtype, tol, fn):
    f = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "identity": lambda x: x}[fn]
    z = _z((3, 5, 4), cdtype)
    _check(lambda z: split_activation(z, fn), lambda z: torch.complex(f(z.real), f(z.imag)), (z,), tol)
    _check(lambda z: split_activation(z.transpose(0, 1), fn),                              # non-contiguous input
           lambda z: torch.complex(f(z.real), f(z.imag)).transpose(0, 1), (z,), tol)
    _check(lambda z: split_activation(z.conj(), fn), lambda z: torch.complex(f(z.real), f(-z.imag)), (z,), tol)


def test_unit_rows_equals_normalize(cdtype, tol):
    z = _z((3, 5, 4), cdtype).detach()
    z[0, 1] = 0                                                 # padding rows: zero, with zero gradient
    z[1, 2] = 1e-14                                             # below eps: divided by eps, as normalize does
    z.requires_grad_()
    normalize = lambda z: torch.nn.functional.normalize(z, dim=-1)     # noqa: E731
    _check(unit_rows, normalize, (z,), tol)
    _check(lambda z: unit_rows(z.transpose(0, 1)), lambda z: normalize(z).transpose(0, 1), (z,), tol)
    x = z.detach().real.clone().requires_grad_()                # real rows too (CNM-Real)
    _check(unit_rows, normalize, (x,), tol)
    assert not unit_rows(z).isnan().any()


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.complex32])
def test_unit_rows_in_16_bits(dtype):
    """In float16, eps^2 = 1e-24 rounded to 0 (a zero row gave 0/0 = NaN) and the squared norm overflowed from a
    norm of 256 (a row of 300s gave 0): 16-bit rows are normalised in 32 bits, then rounded."""
    wide = torch.complex64 if dtype.is_complex else torch.float32
    rows = torch.tensor([[0.0, 0.0, 0.0], [300.0, -300.0, 300.0], [1e-3, 2e-3, 0.0]], dtype=wide)
    out = unit_rows(rows.to(dtype))
    assert out.dtype == dtype
    assert out[0].abs().float().max() == 0
    expected = torch.nn.functional.normalize(rows, dim=-1)
    assert float((out.to(wide) - expected).abs().max()) <= 2 * torch.finfo(dtype.to_real()).eps


def test_part_mul_equals_per_part_form(cdtype, tol):
    a, b = _z((4, 6), cdtype, 1), _z((4, 6), cdtype, 2)
    _check(part_mul, lambda a, b: torch.complex(a.real * b.real, a.imag * b.imag), (a, b), tol)


def test_complex_dropout_equals_complex_product(cdtype, tol):
    z = _z((4, 7), cdtype)
    real = cdtype.to_real()

    def old(z):
        keep = torch.rand(z.shape, dtype=real, generator=torch.Generator().manual_seed(5)) >= 0.3
        return z * (keep.to(real) / 0.7)
    _check(lambda z: complex_dropout(z, 0.3, generator=torch.Generator().manual_seed(5)), old, (z,), tol)


def _old_max(mask):
    def old_max(x):
        def pool(t):
            out = t.masked_fill(~mask.unsqueeze(-1), torch.finfo(t.dtype).min).amax(-2)
            return torch.where(mask.any(-1, keepdim=True), out, torch.zeros_like(out))
        return torch.complex(pool(x.real), pool(x.imag)) if x.is_complex() else pool(x)
    return old_max


def test_masked_pooling_equals_per_part_form(cdtype, tol):
    z = _z((3, 5, 4), cdtype, 3)
    mask = torch.tensor([[True, True, False, False, False], [True] * 5, [False] * 5])

    def old_mean(x):
        m = mask.to(x.dtype.to_real()).unsqueeze(-1)
        return (x * m).sum(-2) / m.sum(-2).clamp_min(1)
    _check(lambda x: masked_max(x, mask), _old_max(mask), (z,), tol)
    _check(lambda x: masked_mean(x, mask), old_mean, (z,), tol, dim=5)
    x = z.detach().real.clone().requires_grad_()                            # real input
    _check(lambda x: masked_max(x, mask), _old_max(mask), (x,), tol)
    with torch.no_grad():                                                   # without autograd: amax, no indices
        torch.testing.assert_close(masked_max(z, mask), _old_max(mask)(z), atol=0, rtol=0)
        torch.testing.assert_close(masked_max(x, mask), _old_max(mask)(x), atol=0, rtol=0)


def test_masked_max_sends_a_tie_gradient_to_the_first_maximal_step(cdtype):
    """amax shared the gradient among tied steps; masked_max gives it to the first (as torch.max): same total."""
    z = _z((2, 5, 3), cdtype, 4).detach()
    z[1, 3] = z[1, 1]                                                       # ties in both parts of every feature
    z.requires_grad_()
    mask = torch.ones(2, 5, dtype=torch.bool)
    g = torch.randn(2, 3, dtype=cdtype, generator=torch.Generator().manual_seed(5))
    new, = torch.autograd.grad(masked_max(z, mask), z, g)
    old, = torch.autograd.grad(_old_max(mask)(z), z, g)
    torch.testing.assert_close(new[0], old[0])
    torch.testing.assert_close(new[1, 1], old[1, 1] + old[1, 3])
    assert (new[1, 3] == 0).all()


def test_squared_modulus_readout(cdtype, tol):
    z = _z((3, 4), cdtype, 4)
    _check(lambda z: readout(z, "squared_modulus"), lambda z: z.real ** 2 + z.imag ** 2, (z,), tol)


def test_attention_values_equal_complex_product(cdtype, tol):
    att = ComplexMultiheadSelfAttention(6, 2, dtype=cdtype)
    x = _z((2, 5, 6), cdtype, 6)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])

    def old(x):                                          # the previous forward: complex weights @ complex values
        x = x.masked_fill(~mask.unsqueeze(-1), 0)        # (the padded steps are zeroed first, as forward does)
        v = att._split(att.v(x))
        out = att._attend(x, mask).to(v.dtype) @ v
        return att.out(out.transpose(1, 2).reshape(2, 5, 6))
    _check(lambda x: att(x, mask), old, (x,), tol, dim=6)


def test_cnm_gradients_equal_the_amax_pooling(monkeypatch):
    """CNM's max-pooled local mixtures: the same loss and parameter gradients as with the amax graph."""
    from qpnlp.models import CNM, CNMConfig
    model = CNM(CNMConfig(num_words=40, dim=6, num_measurements=7, windows=[1, 2, 3]),
                generator=torch.Generator().manual_seed(8))
    gen = torch.Generator().manual_seed(9)
    q, a = torch.randint(2, 40, (3, 5), generator=gen), torch.randint(2, 40, (3, 9), generator=gen)
    q_mask, a_mask = torch.ones(3, 5, dtype=torch.bool), torch.ones(3, 9, dtype=torch.bool)
    q_mask[0, 3:], a_mask[1, 4:] = False, False
    runs = []
    for amax in (False, True):
        if amax:
            monkeypatch.setattr("qpnlp.nn.mixture.masked_max", lambda x, valid: _old_max(valid)(x))
        model.zero_grad(set_to_none=True)
        score = model(q, q_mask, a, a_mask)
        score.square().sum().backward()
        runs.append((score.detach(), [p.grad.to_dense() for p in model.parameters() if p.grad is not None]))
    (s_new, g_new), (s_old, g_old) = runs
    torch.testing.assert_close(s_new, s_old)
    assert len(g_new) == len(g_old) > 0
    for new, old in zip(g_new, g_old):
        torch.testing.assert_close(new, old)
