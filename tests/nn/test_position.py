"""Complex-order embeddings (paper eq. 5-6, Table 4, appendix A) and the none/PE/TPE baselines."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from qpnlp.nn import (EMBEDDING_KINDS, ComplexOrderEmbedding, RealPositionalEmbedding, complex_order_embedding,
                      default_positions, make_embedding, sinusoidal_frequencies, sinusoidal_position_encoding)


V, D = 9, 6
IDS = torch.tensor([[2, 3, 4, 5], [6, 7, 8, 0]])
SCHEMES = ["none", "word", "dimension"]
positions_st = st.floats(-30, 30, allow_nan=False)


def _real(cdtype):
    return torch.float64 if cdtype == torch.complex128 else torch.float32


def _emb(cdtype, device, seed=0, **kw):
    return ComplexOrderEmbedding(V, D, dtype=_real(cdtype), generator=torch.Generator().manual_seed(seed),
                                 **kw).to(device)


def _angle_tol(tol, cdtype, emb, ids, *positions):
    """Error of cos/sin grows with the size of the angle omega * pos."""
    omega = emb.frequencies(ids).abs().max().item()
    return tol(D) * (1 + omega * max(abs(p) for p in positions)) * (10 if cdtype == torch.complex64 else 1)


@given(pos=positions_st, n=positions_st, freq=st.sampled_from(SCHEMES), amp=st.sampled_from(SCHEMES),
       phase=st.booleans(), seed=st.integers(0, 2**16))
def test_offset_transformation_is_position_free(pos, n, freq, amp, phase, seed, cdtype, device, tol):
    # f(j, pos + n) = w_j(n) * f(j, pos) with w_j(n) = e^{i omega_j n} not depending on pos
    emb = _emb(cdtype, device, seed, frequency_sharing=freq, amplitude_sharing=amp, initial_phase=phase)
    ids = IDS.to(device)
    p = torch.full(ids.shape, pos, dtype=_real(cdtype), device=device)
    w = emb.offset_transform(ids, n)
    assert w.dtype == cdtype
    atol = _angle_tol(tol, cdtype, emb, ids, pos, pos + n, n)
    mask = ids != 0
    torch.testing.assert_close(emb(ids, mask, p + n), w * emb(ids, mask, p), atol=atol, rtol=0)
    # the same w(n) moves a different starting position
    torch.testing.assert_close(emb(ids, mask, p + 1.5 + n), w * emb(ids, mask, p + 1.5), atol=atol, rtol=0)


@given(pos=st.floats(-1e4, 1e4, allow_nan=False), freq=st.sampled_from(SCHEMES), amp=st.sampled_from(SCHEMES),
       seed=st.integers(0, 2**16))
def test_bounded_for_any_position(pos, freq, amp, seed, cdtype, device, tol):
    emb = _emb(cdtype, device, seed, frequency_sharing=freq, amplitude_sharing=amp)
    ids = IDS.to(device)
    z = emb(ids, ids != 0, positions=torch.full(ids.shape, pos, dtype=_real(cdtype), device=device))
    r = emb.amplitude_table().to(device)[ids] * (ids != 0).unsqueeze(-1)
    torch.testing.assert_close(z.abs(), r.abs(), atol=tol(D), rtol=tol(D))
    assert z.abs().max() <= emb.amplitude_table().abs().max() + tol(D)


@given(p=positions_st, q=positions_st, shift=positions_st, freq=st.sampled_from(SCHEMES), seed=st.integers(0, 999))
def test_inner_product_of_position_codes_depends_only_on_distance(p, q, shift, freq, seed, cdtype, device, tol):
    emb = _emb(cdtype, device, seed, frequency_sharing=freq)
    # with word sharing two different words share the code; otherwise compare a word with itself
    j1, j2 = (torch.tensor([3]), torch.tensor([5])) if freq == "word" else (torch.tensor([3]), torch.tensor([3]))
    j1, j2 = j1.to(device), j2.to(device)
    real = _real(cdtype)

    def inner(a, b):
        ga = emb.position_code(j1, torch.tensor([a], dtype=real, device=device))
        gb = emb.position_code(j2, torch.tensor([b], dtype=real, device=device))
        return (ga.conj() * gb).sum()

    expected = torch.exp(1j * emb.frequencies(j1).to(device).expand(1, D).to(cdtype) * (q - p)).sum()
    atol = _angle_tol(tol, cdtype, emb, j1, p, q, p + shift, q + shift)
    torch.testing.assert_close(inner(p + shift, q + shift), inner(p, q), atol=atol, rtol=0)
    torch.testing.assert_close(inner(p, q), expected.to(cdtype), atol=atol, rtol=0)


@given(positions=st.lists(st.floats(0, 500, allow_nan=False), min_size=1, max_size=6), half=st.integers(1, 8))
def test_tpe_is_word_sharing_complex_embedding(positions, half, cdtype, device, tol):
    # appendix A: PE_{2k} = Im f_pe,k, PE_{2k+1} = Re f_pe,k with omega_k = 10000^{-2k/d_model}
    real = _real(cdtype)
    emb = ComplexOrderEmbedding(V, half, dtype=real, frequency_sharing="word", frequency_init="sinusoidal").to(device)
    pos = torch.tensor(positions, dtype=real, device=device)
    ids = torch.full(pos.shape, 4, device=device)
    code = emb.position_code(ids, pos)  # (n, half)
    tpe = sinusoidal_position_encoding(pos, 2 * half)
    atol = tol(half) * (1 + 500) * (10 if cdtype == torch.complex64 else 1)
    torch.testing.assert_close(tpe[:, 0::2], code.imag, atol=atol, rtol=0)
    torch.testing.assert_close(tpe[:, 1::2], code.real, atol=atol, rtol=0)
    # the real TPE then also has distance-only inner products
    shifted = sinusoidal_position_encoding(pos + 7.25, 2 * half)
    torch.testing.assert_close(tpe @ tpe.T, shifted @ shifted.T, atol=atol * half, rtol=0)


def test_sinusoidal_frequencies_values():
    torch.testing.assert_close(sinusoidal_frequencies(3, 6), torch.tensor([1.0, 10000 ** (-2 / 6), 10000 ** (-4 / 6)]))
    enc = sinusoidal_position_encoding(torch.tensor([2.0]), 4)
    torch.testing.assert_close(enc, torch.tensor([[math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)]]))
    assert sinusoidal_position_encoding(torch.tensor([1.0]), 5).shape == (1, 5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sinusoidal_encoding_in_16_bits_is_the_float64_one_rounded(dtype):
    """The angles were computed in the 16-bit dtype: bfloat16 rounded position 257 to 256 (one encoding for both)
    and a float16 angle of 4999 rad has an ulp of 4, so entries were off by up to 2. Only the result is rounded."""
    positions = torch.arange(5000)
    out = sinusoidal_position_encoding(positions, 8, dtype=dtype)
    assert out.dtype == dtype
    reference = sinusoidal_position_encoding(positions, 8, dtype=torch.float64)
    assert float((out.double() - reference).abs().max()) <= torch.finfo(dtype).eps
    assert not torch.equal(out[256], out[257])


@pytest.mark.parametrize("rows", [32, 128])         # 2048 and 8192 elements: torch's kernels, the compiled loop
def test_float32_embedding_of_far_positions_is_within_the_documented_angle_rounding(rows):
    """complex_order_embedding's Notes: float32 moves the angle by up to 2^-24 (|omega pos| + |alpha|) rad, the
    float64 embedding of the same float32 tables is exact to float64 rounding, and |z| = |r| at any position."""
    g = torch.Generator().manual_seed(0)
    amp, omega, theta = torch.rand(3, rows, 64, generator=g) * torch.tensor([1.0, 2.0, 6.0]).view(3, 1, 1)
    positions = torch.linspace(0, 1e6, rows, dtype=torch.float64).round()
    z32 = complex_order_embedding(amp, omega, positions.float(), theta)
    z64 = complex_order_embedding(amp.double(), omega.double(), positions, theta.double())
    product = (omega.double() * positions.unsqueeze(-1)).abs()
    bound = 2.0 ** -24 * (product + (product + theta.double().abs())) * amp.double() + 4e-7
    assert bool(((z32.to(torch.complex128) - z64).abs() <= bound).all())
    torch.testing.assert_close(z32.abs(), amp)

@pytest.mark.parametrize("freq, amp, expected", [
    ("none", "none", 2 * V * D), ("word", "none", V * D + D), ("dimension", "none", V * D + V),
    ("none", "word", V * D + D), ("none", "dimension", V * D + V)])
def test_parameter_counts_of_sharing_schemes(freq, amp, expected):
    # paper: word sharing |W| D + D, dimension sharing |W| D + |W| (initial phases off)
    emb = ComplexOrderEmbedding(V, D, frequency_sharing=freq, amplitude_sharing=amp)
    assert sum(p.numel() for p in emb.parameters()) == expected
    with_phase = ComplexOrderEmbedding(V, D, frequency_sharing=freq, amplitude_sharing=amp, initial_phase=True)
    assert sum(p.numel() for p in with_phase.parameters()) == expected + V * D


def test_sharing_schemes_share_what_they_say(cdtype, device):
    ids = torch.tensor([[2, 3]], device=device)
    word = _emb(cdtype, device, frequency_sharing="word")
    assert torch.equal(word.frequency_table()[2], word.frequency_table()[3])
    dim = _emb(cdtype, device, frequency_sharing="dimension")
    table = dim.frequency_table()
    assert torch.equal(table[2], table[2, :1].expand(D))
    amp = _emb(cdtype, device, amplitude_sharing="word")
    z = amp(ids, ids != 0)
    torch.testing.assert_close(z[0, 0].abs(), z[0, 1].abs())


def test_frequency_inits(cdtype):
    real = _real(cdtype)
    sin = ComplexOrderEmbedding(V, 4, frequency_init="sinusoidal", dtype=real)
    torch.testing.assert_close(sin.frequency_table()[3], sinusoidal_frequencies(4, 8, dtype=real))
    zero = ComplexOrderEmbedding(V, 4, frequency_init="zero", dtype=real)
    assert zero.frequency_table().abs().max() == 0
    uni = ComplexOrderEmbedding(V, 4, frequency_init="uniform", frequency_scale=0.3, dtype=real)
    assert uni.frequency_table().abs().max() <= 0.3


def test_complex_vanilla_ignores_positions(cdtype, device, tol):
    emb = make_embedding("complex_vanilla", V, D, dtype=_real(cdtype)).to(device)
    ids = IDS.to(device)
    a = emb(ids, ids != 0)
    b = emb(ids, ids != 0, positions=torch.arange(4, device=device) * 3.7 + 2)
    torch.testing.assert_close(a, b)
    theta = emb.phase.weight[2:]
    assert theta.abs().max() <= math.pi and theta.std() > 0.5  # uniform in [-pi, pi)
    assert not emb.encodes_positions


def test_pretrained_amplitudes_and_pad_is_zero(cdtype, device):
    real = _real(cdtype)
    pre = torch.randn(V, D, dtype=real)
    emb = ComplexOrderEmbedding(V, D, pretrained=pre, dtype=real).to(device)
    z = emb(IDS.to(device), IDS.to(device) != 0, positions=torch.zeros(4, device=device))
    torch.testing.assert_close(z[0, 0].real, pre[2].to(device))
    assert (z[1, 3] == 0).all()
    assert z.dtype == cdtype


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_every_kind_zero_at_padding_and_positions_count_real_tokens(kind, cdtype, device):
    emb = make_embedding(kind, V, D, dtype=_real(cdtype)).to(device)
    assert emb.is_complex == kind.startswith("complex")
    left = torch.tensor([[0, 0, 2, 3]], device=device)  # left padding does not shift positions
    right = torch.tensor([[2, 3, 0, 0]], device=device)
    zl, zr = emb(left, left != 0), emb(right, right != 0)
    assert (zl[0, :2] == 0).all() and (zr[0, 2:] == 0).all()
    torch.testing.assert_close(zl[0, 2:], zr[0, :2])


def test_default_positions():
    ids = torch.tensor([[0, 5, 6, 0, 7]])
    assert default_positions(ids, ids != 0).tolist() == [[0, 0, 1, 0, 2]]
    assert default_positions(ids).tolist() == [[0, 1, 2, 3, 4]]


def test_non_integer_positions(cdtype, device, tol):
    real = _real(cdtype)
    ids = torch.tensor([[2, 3, 4]], device=device)
    pos = torch.tensor([0.0, 0.5, 2.0], dtype=real, device=device)  # a token inserted between 0 and 1
    emb = _emb(cdtype, device)
    z = emb(ids, ids != 0, positions=pos)
    expected = complex_order_embedding(emb.amplitude(ids), emb.frequency(ids), pos.unsqueeze(0))
    torch.testing.assert_close(z, expected)
    tpe = make_embedding("tpe", V, D, dtype=real).to(device)
    tpe(ids, ids != 0, positions=pos)
    pe = make_embedding("pe", V, D, dtype=real).to(device)
    with pytest.raises(ValueError, match="integer positions"):
        pe(ids, ids != 0, positions=pos)


@pytest.mark.parametrize("kind", ["complex_order", "tpe", "pe"])
def test_bool_and_complex_positions_are_refused(kind):
    """A bool tensor (a mask passed as positions) was read as positions 0 and 1, a complex one lost its imaginary
    part with at most a one-off torch warning; integer and floating positions of any width still work."""
    emb = make_embedding(kind, V, D)
    mask = IDS != 0
    for bad in (mask, torch.arange(4).to(torch.complex64)):
        with pytest.raises(TypeError, match=f"positions must be real numbers; got {bad.dtype}"):
            emb(IDS, mask, positions=bad)
    expected = emb(IDS, mask, positions=torch.arange(4))
    torch.testing.assert_close(emb(IDS, mask, positions=torch.arange(4, dtype=torch.int32)), expected)


def test_gradients_reach_frequencies_and_amplitudes(device):
    emb = make_embedding("complex_order", V, D, dtype=torch.float64, initial_phase=True).to(device)
    emb(IDS.to(device), IDS.to(device) != 0).abs().pow(2).sum().backward()
    for table in (emb.amplitude, emb.frequency, emb.phase):
        assert table.weight.grad is not None and table.weight.grad.is_sparse


def test_gradcheck_functional_core():
    r = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    th = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    pos = torch.tensor([0.3, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(complex_order_embedding, (r, w, pos, th))


@pytest.mark.parametrize("amp_shape, freq_shape", [((2, 4, 3), (2, 4, 3)), ((3,), (2, 4, 1)), ((2, 4, 1), (3,))])
def test_fused_core_equals_the_plain_graph_for_shared_tables_signs_and_a_mask(amp_shape, freq_shape):
    """Values and gradients of the fused r e^{i alpha} equal autograd through torch.complex(r cos, r sin)."""
    g = torch.Generator().manual_seed(0)
    r = torch.randn(amp_shape, dtype=torch.float64, generator=g).requires_grad_()    # negative amplitudes too
    w = torch.randn(freq_shape, dtype=torch.float64, generator=g).requires_grad_()
    th = torch.randn(2, 4, 3, dtype=torch.float64, generator=g).requires_grad_()
    pos = torch.tensor([[0.0, 1.0, 2.0, 3.0], [0.0, 1.5, 0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    up = torch.randn(2, 4, 3, dtype=torch.complex128, generator=g)
    fused = complex_order_embedding(r, w, pos, th, mask)
    angle = w * pos.unsqueeze(-1) + th
    amplitude = r * mask.unsqueeze(-1)
    plain = torch.complex(amplitude * torch.cos(angle), amplitude * torch.sin(angle))
    torch.testing.assert_close(fused, plain, rtol=0, atol=1e-15)
    assert bool((fused[1, 2:] == 0).all())
    grads = [torch.autograd.grad((z * up.conj()).real.sum(), (r, w, th)) for z in (fused, plain)]
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
    assert torch.autograd.gradcheck(lambda *t: complex_order_embedding(*t, mask), (r, w, pos.requires_grad_(), th))


def test_clear_errors():
    with pytest.raises(ValueError, match="unknown embedding kind"):
        make_embedding("rope", V, D)
    with pytest.raises(ValueError, match="frequency_sharing"):
        ComplexOrderEmbedding(V, D, frequency_sharing="both")
    with pytest.raises(ValueError, match="amplitude_sharing"):
        ComplexOrderEmbedding(V, D, amplitude_sharing="all")
    with pytest.raises(ValueError, match="frequency_init"):
        ComplexOrderEmbedding(V, D, frequency_init="xavier")
    with pytest.raises(ValueError, match="pretrained"):
        ComplexOrderEmbedding(V, D, amplitude_sharing="word", pretrained=torch.zeros(V, D))
    with pytest.raises(ValueError, match="shape"):
        ComplexOrderEmbedding(V, D, pretrained=torch.zeros(V, D + 1))
    with pytest.raises(TypeError, match="complex_order only"):
        make_embedding("pe", V, D, frequency_sharing="word")
    with pytest.raises(ValueError, match="max_len"):
        RealPositionalEmbedding(V, D, position="pe", max_len=2)(IDS, IDS != 0)
    with pytest.raises(ValueError, match="positions must have shape"):
        _emb(torch.complex64, "cpu")(IDS, IDS != 0, positions=torch.zeros(3))
    with pytest.raises(ValueError, match=r"ids must be word ids in \[0, 9\).*max id 9"):
        _emb(torch.complex64, "cpu")(torch.tensor([[V]]), torch.tensor([[V]]) != 0)
    with pytest.raises(ValueError, match="mask"):
        _emb(torch.complex64, "cpu")(IDS, IDS)


def test_pe_table_ignores_explicit_positions_at_padding(cdtype, device):
    """Explicit positions (L,) also cover the padding of a batch; the "pe" table must look up and range-check only
    the real tokens' positions, or a padded batch fails where the same text alone works (positions 0..2 < max_len)."""
    pe = make_embedding("pe", V, D, max_len=4, dtype=_real(cdtype)).to(device)
    ids = torch.tensor([[2, 3, 4, 0, 0, 0]], device=device)
    alone = pe(ids[:, :3], ids[:, :3] != 0, positions=torch.arange(3, device=device))
    padded = pe(ids, ids != 0, positions=torch.arange(6, device=device))
    torch.testing.assert_close(padded[:, :3], alone, rtol=0, atol=0)
    assert (padded[:, 3:] == 0).all()
    holes = pe(ids, ids != 0, positions=torch.tensor([0, 1, 2, -1, 0.5, 99], device=device))
    torch.testing.assert_close(holes, padded, rtol=0, atol=0)


def _three_steps(emb, ids, mask, positions, p):
    """``masked_mean(complex_dropout(emb(...), p), mask)``: the graph the fused ``dropped_mean`` replaces."""
    from qpnlp.nn import complex_dropout, masked_mean
    return masked_mean(complex_dropout(emb(ids, mask, positions), p), mask)


@pytest.mark.parametrize("kind, options", [("complex_order", {}), ("complex_order", dict(initial_phase=True)),
                                           ("complex_vanilla", {})])
@pytest.mark.parametrize("p", [0.0, 0.3])
@pytest.mark.parametrize("explicit_positions", [False, True])
def test_dropped_mean_equals_embedding_dropout_and_mean(kind, options, p, explicit_positions, cdtype, device, tol):
    """The fused FastText pooling: the same values and table gradients as the three steps, the same dropout draw
    (one seed), coalesced sparse gradients with the same rows (masked positions' ids included, padding left out)."""
    emb = make_embedding(kind, V, D, dtype=_real(cdtype), generator=torch.Generator().manual_seed(3),
                         **options).to(device)
    assert emb.fuses_mean()
    ids = torch.tensor([[2, 3, 2, 5, 0], [6, 7, 8, 0, 0], [4, 4, 4, 4, 4]], device=device)
    mask = ids != 0
    mask[2, 3:] = False                                       # masked words that are not padding
    positions = (torch.arange(5, dtype=_real(cdtype), device=device) * 1.5 + 0.25) if explicit_positions else None
    g = torch.randn(3, D, dtype=cdtype, generator=torch.Generator().manual_seed(1)).to(device)
    results = []
    for fused in (True, False):
        emb.zero_grad(set_to_none=True)
        if not fused:
            emb.fuses_mean = lambda: False
        torch.manual_seed(7)
        out = emb.dropped_mean(ids, mask, positions, dropout=p) if fused else _three_steps(emb, ids, mask,
                                                                                           positions, p)
        (out.conj() * g).real.sum().backward()
        results.append((out, {n: w.grad for n, w in emb.named_parameters()}))
    del emb.fuses_mean
    (fused_out, fused_grads), (ref_out, ref_grads) = results
    assert fused_out.shape == (3, D) and fused_out.dtype == cdtype
    torch.testing.assert_close(fused_out, ref_out, atol=tol(D), rtol=0)
    assert fused_grads.keys() == ref_grads.keys()
    for name, grad in fused_grads.items():
        assert grad.is_sparse
        ref = ref_grads[name].coalesce()
        assert torch.equal(grad.coalesce().indices(), ref.indices()), name
        assert torch.equal(grad._indices()[0], torch.tensor([2, 3, 4, 5, 6, 7, 8], device=device))
        torch.testing.assert_close(grad.to_dense(), ref.to_dense(), atol=10 * tol(D), rtol=0)


def test_dropped_mean_falls_back_for_shared_tables(cdtype, device, tol):
    """Sharing schemes (tables of another width than (V, D)) take the three steps, with the same result."""
    emb = _emb(cdtype, device, frequency_sharing="word", amplitude_sharing="dimension")
    assert not emb.fuses_mean()
    ids = IDS.to(device)
    torch.manual_seed(0)
    out = emb.dropped_mean(ids, ids != 0, dropout=0.5)
    torch.manual_seed(0)
    torch.testing.assert_close(out, _three_steps(emb, ids, ids != 0, None, 0.5), atol=0, rtol=0)
    with pytest.raises(ValueError, match="dropout probability"):
        _emb(cdtype, device).dropped_mean(ids, ids != 0, dropout=1.0)


@pytest.mark.parametrize("shape", [(0, 4), (2, 0)], ids=["no-rows", "no-words"])
@pytest.mark.parametrize("sparse", [True, False])
def test_dropped_mean_of_an_empty_batch(shape, sparse, cdtype, device):
    """No sentence, or sentences of no word: zeros of shape (B, D) and empty table gradients, as the three steps
    give them (not a failed reshape of zero elements)."""
    emb = _emb(cdtype, device, initial_phase=True, sparse=sparse)
    assert emb.fuses_mean()
    ids = torch.zeros(shape, dtype=torch.long, device=device)
    out = emb.dropped_mean(ids, ids != 0, dropout=0.3)
    torch.testing.assert_close(out, _three_steps(emb, ids, ids != 0, None, 0.3), atol=0, rtol=0)
    assert out.shape == (shape[0], D)
    out.real.sum().backward()
    for w in emb.parameters():
        assert w.grad is not None and not w.grad.to_dense().any()


def test_dropped_mean_gives_explicit_positions_their_gradient(cdtype, device, tol):
    """Positions that need a gradient (learned positions, say) get the three steps' gradient, not none."""
    emb = _emb(cdtype, device, initial_phase=True)
    ids = IDS.to(device)
    grads = []
    for fused in (True, False):
        positions = torch.tensor([0.5, 1.0, 2.5, 3.0], dtype=_real(cdtype), device=device, requires_grad=True)
        out = emb.dropped_mean(ids, ids != 0, positions) if fused else _three_steps(emb, ids, ids != 0,
                                                                                    positions, 0.0)
        grads.append(torch.autograd.grad(out.abs().sum(), positions, allow_unused=True)[0])
    assert grads[0] is not None
    torch.testing.assert_close(grads[0], grads[1], atol=tol(D), rtol=0)


@pytest.mark.parametrize("shape", [(4,), (1, 2, 4)], ids=["one-sentence", "two-batch-dims"])
def test_dropped_mean_takes_the_ids_shapes_of_the_embedding(shape, cdtype, device, tol):
    """ids of another shape than (B, L), which the embedding takes, give the three steps' result (not an error
    unpacking the shape)."""
    emb = _emb(cdtype, device)
    ids = torch.tensor([2, 3, 4, 0], device=device).expand(shape)
    out = emb.dropped_mean(ids, ids != 0)
    torch.testing.assert_close(out, _three_steps(emb, ids, ids != 0, None, 0.0), atol=tol(D), rtol=0)
    assert out.shape == shape[:-1] + (D,)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")     # torch's note on complex32 itself
@pytest.mark.parametrize("dtype, result", [(torch.float16, torch.complex32), (torch.bfloat16, torch.complex64)])
def test_complex_order_embedding_in_16_bits_computes_the_angles_in_float32(dtype, result):
    """bfloat16 raised torch.complex's "Expected both inputs to be Half, Float or Double tensors", and in float16
    the angle omega * pos (ulp 0.5 near 900 rad) put entries off by up to 0.23; now only the result is rounded."""
    g = torch.Generator().manual_seed(0)
    amplitude, frequency = torch.rand(300, 4, generator=g), 3 * torch.rand(300, 4, generator=g)
    args = [t.to(dtype) for t in (amplitude, frequency, torch.arange(300.0))]
    z = complex_order_embedding(*args)
    assert z.dtype == result
    reference = complex_order_embedding(*(t.double() for t in args))   # the same 16-bit inputs, exactly
    assert float((z.to(torch.complex128) - reference).abs().max()) <= 2 * torch.finfo(torch.float16).eps
