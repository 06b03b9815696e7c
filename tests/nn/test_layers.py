"""Complex layers of the complex-order paper (appendix B, eq. 10-14)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from qpnlp.nn import (ComplexConv1d, ComplexDropout, ComplexFeedForward, ComplexLinear, ComplexLSTMCell,
                      ComplexMultiheadSelfAttention, PartLayerNorm, URNNCell, complex_dropout,
                      hermitian_attention_scores, masked_max, masked_mean, part_mul, readout, readout_dim,
                      split_activation)




def _x(shape, cdtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=cdtype, generator=g).to(device)


def test_dense_matches_paper_eq10(cdtype, device, tol):
    lin = ComplexLinear(4, 3, dtype=cdtype).to(device)
    with torch.no_grad():
        lin.bias.copy_(_x(3, cdtype, device, 1))
    z = _x((5, 4), cdtype, device)
    A, B = lin.weight.real, lin.weight.imag
    c, d = lin.bias.real, lin.bias.imag
    x, y = z.real, z.imag
    out = lin(z)
    torch.testing.assert_close(out.real, x @ A.T - y @ B.T + c, atol=tol(4), rtol=0)
    torch.testing.assert_close(out.imag, x @ B.T + y @ A.T + d, atol=tol(4), rtol=0)


def test_dense_shared_parts(cdtype, device, tol):
    lin = ComplexLinear(4, 3, dtype=cdtype, share_parts=True).to(device)
    assert not lin.weight.is_complex() and sum(p.numel() for p in lin.parameters()) == 4 * 3 + 3
    w, b = lin.effective_weight()
    torch.testing.assert_close(w.real, w.imag)
    z = _x((5, 4), cdtype, device)
    A, x, y = lin.weight, z.real, z.imag
    out = lin(z)
    torch.testing.assert_close(out.real, x @ A.T - y @ A.T + lin.bias, atol=tol(4), rtol=0)
    torch.testing.assert_close(out.imag, x @ A.T + y @ A.T + lin.bias, atol=tol(4), rtol=0)


def test_dense_real_dtype_is_linear():
    lin = ComplexLinear(4, 3, dtype=torch.float64)
    ref = nn.Linear(4, 3, dtype=torch.float64)
    ref.load_state_dict(lin.state_dict())
    x = torch.randn(2, 4, dtype=torch.float64)
    torch.testing.assert_close(lin(x), ref(x))


def test_dense_promotes_real_input_and_refuses_downcast():
    lin = ComplexLinear(2, 2, dtype=torch.complex128)
    assert lin(torch.randn(1, 2, dtype=torch.float64)).dtype == torch.complex128
    with pytest.raises(TypeError, match="expects"):
        lin(torch.randn(1, 2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="last dimension"):
        lin(torch.randn(1, 3, dtype=torch.complex128))
    with pytest.raises(ValueError, match="complex dtype"):
        ComplexLinear(2, 2, dtype=torch.float32, share_parts=True)


def test_conv1d_is_sum_over_windows(cdtype, device, tol):
    conv = ComplexConv1d(3, 2, 3, dtype=cdtype).to(device)
    x = _x((2, 6, 3), cdtype, device)
    out = conv(x)
    assert out.shape == (2, 4, 2) and out.dtype == cdtype
    expected = torch.stack([sum(x[:, t + s] @ conv.weight[:, :, s].T for s in range(3)) + conv.bias
                            for t in range(4)], 1)
    torch.testing.assert_close(out, expected, atol=tol(9), rtol=0)
    with pytest.raises(ValueError, match="shorter than the kernel"):
        conv(x[:, :2])


def test_conv1d_block_kernel_equals_torchs_complex_convolution(cdtype, device, tol):
    torch.manual_seed(0)
    conv = ComplexConv1d(3, 4, 2, dtype=cdtype).to(device)
    with torch.no_grad():
        conv.bias.copy_(torch.randn(4, dtype=cdtype))
    x = _x((2, 3, 7), cdtype, device).transpose(1, 2).requires_grad_()      # (2, 7, 3), not contiguous
    out = conv(x)
    expected = torch.nn.functional.conv1d(x.transpose(-1, -2), conv.weight, conv.bias).transpose(-1, -2)
    torch.testing.assert_close(out, expected, atol=tol(6), rtol=0)
    assert out.is_contiguous()
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, (x, conv.weight, conv.bias), g)
    want = torch.autograd.grad(expected, (x, conv.weight, conv.bias), g)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=tol(40), rtol=0)
    torch.testing.assert_close(conv(x[0].detach()), expected[0].detach(), atol=tol(6), rtol=0)  # unbatched (L, C)
    torch.testing.assert_close(conv(x.detach().conj()), conv(x.detach().conj().resolve_conj()), atol=0, rtol=0)


def test_split_activation_and_part_mul(cdtype):
    z = torch.tensor([1 - 2j, -3 + 4j], dtype=cdtype)
    assert torch.equal(split_activation(z, "relu"), torch.tensor([1 + 0j, 4j], dtype=cdtype))
    assert torch.equal(part_mul(z, z), torch.tensor([1 + 4j, 9 + 16j], dtype=cdtype))
    with pytest.raises(ValueError, match="unknown activation"):
        split_activation(z, "gelu2")


def test_part_mul_of_a_complex_and_a_real_tensor(cdtype):
    # a real factor has imaginary part 0: Re a Re b + i Im a Im b = Re(z) x
    z = torch.tensor([1 - 2j, -3 + 4j], dtype=cdtype)
    x = torch.tensor([2.0, -0.5], dtype=z.real.dtype)
    expected = torch.tensor([2 + 0j, 1.5 + 0j], dtype=cdtype)
    assert torch.equal(part_mul(z, x), expected)
    assert torch.equal(part_mul(x, z), expected)


def test_readouts(cdtype, tol):
    z = torch.tensor([[3 + 4j, 1j]], dtype=cdtype)
    torch.testing.assert_close(readout(z, "modulus"), torch.tensor([[5.0, 1.0]], dtype=z.real.dtype))
    torch.testing.assert_close(readout(z, "squared_modulus"), torch.tensor([[25.0, 1.0]], dtype=z.real.dtype))
    torch.testing.assert_close(readout(z, "re_im"), torch.tensor([[3.0, 0.0, 4.0, 1.0]], dtype=z.real.dtype))
    assert readout_dim("re_im", 2, True) == 4 and readout_dim("re_im", 2, False) == 2
    x = torch.randn(3)
    assert readout(x, "modulus") is x
    with pytest.raises(ValueError, match="unknown readout"):
        readout(z, "phase")


def test_dropout_uses_one_real_mask(cdtype, device):
    torch.manual_seed(0)
    z = _x((200, 50), cdtype, device)
    out = complex_dropout(z, 0.3)
    dropped = out == 0
    assert torch.equal(out.real == 0, dropped) and torch.equal(out.imag == 0, dropped)
    kept = ~dropped
    ratio = out[kept] / z[kept]
    torch.testing.assert_close(ratio, torch.full_like(ratio, 1 / 0.7))  # phase of kept units unchanged
    assert 0.25 < dropped.float().mean() < 0.35
    layer = ComplexDropout(0.3).eval()
    assert layer(z) is z
    with pytest.raises(ValueError, match="dropout probability"):
        ComplexDropout(1.0)


@pytest.mark.filterwarnings("ignore:Torchinductor does not support:UserWarning",
                            "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_dropout_compiles_for_lengths_that_change():
    """Compiled training (TrainConfig.compile) sees a new padded length per batch: dynamo makes the length
    symbolic, and the mask must be drawn from symbolic sizes (the complex-order CNN failed here); under the
    compiled steps' settings the masks are eager's."""
    from qpnlp.training.compiled import compiled_steps

    torch._dynamo.reset()
    dropped = torch.compile(lambda z: complex_dropout(z, 0.5), dynamic=True)
    for length in (3, 5, 7):
        z = torch.ones(2, length, dtype=torch.complex64)
        torch.manual_seed(length)
        with compiled_steps("default"):
            out = dropped(z)
        torch.manual_seed(length)
        torch.testing.assert_close(out, complex_dropout(z, 0.5))


def test_part_layer_norm(cdtype, device, tol):
    norm = PartLayerNorm(8, dtype=cdtype).to(device)
    out = norm(_x((3, 8), cdtype, device) * 5 + 2)
    for part in (out.real, out.imag):
        torch.testing.assert_close(part.mean(-1), torch.zeros(3, dtype=part.dtype, device=device), atol=tol(8) * 10,
                                   rtol=0)
        torch.testing.assert_close(part.var(-1, unbiased=False), torch.ones(3, dtype=part.dtype, device=device),
                                   atol=1e-3, rtol=0)


def _layer_norm_with_affine(dim, dtype, eps=1e-5):
    """A PartLayerNorm whose affine maps are not the identity (the reference: torch's layer_norm of each part)."""
    norm = PartLayerNorm(dim, eps=eps, dtype=dtype)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for part in (norm.norm_re, norm.norm_im):
            part.weight.copy_(torch.randn(dim, generator=g) + 1)
            part.bias.copy_(torch.randn(dim, generator=g))
    return norm


def _reference(norm, z):
    return torch.complex(*(nn.functional.layer_norm(part, p.normalized_shape, p.weight, p.bias, p.eps)
                           for part, p in ((z.real, norm.norm_re), (z.imag, norm.norm_im))))


def test_part_layer_norm_of_ordinary_inputs_runs_torchs_layer_norm_alone(dispatched_ops):
    """On the CPU an input below 2^44 goes to torch's layer_norm as it is, after one ``aminmax`` over both parts:
    the per-row scales (abs, amax, log2, floor, exp2, a product over the input) ran for every input, four times per
    complex-order Transformer step. An input with a large entry still takes them (and stays finite)."""
    norm = _layer_norm_with_affine(8, torch.complex64)
    z = torch.randn(4, 8, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))
    with dispatched_ops() as ops:
        norm(z)
    assert ops.names.count("aminmax.default") == 1 and "amax.default" not in ops.names, ops.names
    large = z.clone()
    large[2, 3] = 1e30
    with dispatched_ops() as ops:
        out = norm(large)
    assert ops.names.count("amax.default") == 2 and torch.isfinite(torch.view_as_real(out)).all()


@pytest.mark.parametrize("eps", [1e-5, 0.0, 1.0])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_part_layer_norm_is_torchs_layer_norm_bit_for_bit_for_ordinary_inputs(dtype, eps):
    """Rows below 2^44 (float32; 2^492 in float64) are not shrunk: torch's layer_norm of each part, bit for bit,
    also where eps matters (rows of scale 1e-3 with eps = 1), for eps = 0, for zero and constant rows."""
    norm = _layer_norm_with_affine(6, dtype, eps)
    g = torch.Generator().manual_seed(0)
    scales = torch.tensor([1e-3, 1.0, 1e3, 1e12, 0.0]).repeat_interleave(4)[:, None]
    z = (torch.randn(20, 6, dtype=torch.complex128, generator=g) * scales + 3 * scales).to(dtype)
    constant = torch.full((2, 6), 0.3 - 0.1j, dtype=dtype)
    z = torch.cat([z, constant]) if eps else z[:16]         # eps = 0: zero and constant rows are 0 / 0, as torch's
    z.requires_grad_()
    out, expected = norm(z), _reference(norm, z)
    assert torch.equal(out, expected)
    weights = torch.randn(out.shape, dtype=dtype, generator=g)
    assert torch.equal(*(torch.autograd.grad((y * weights).real.sum(), z)[0] for y in (out, expected)))


@pytest.mark.parametrize("scale", [1e20, 1e30, 3e38])
def test_part_layer_norm_is_finite_and_right_for_large_float32_inputs(scale):
    """torch's LayerNorm squares x - mean in float32: NaN outputs (and gradients) for rows near 1e30, the variance
    overflowing from about 1e19; now the values and gradients of the float64 layer norm of the same inputs, to
    float32's round-off, and a constant row of such values is 0."""
    norm = _layer_norm_with_affine(5, torch.complex64)
    z = torch.complex(torch.tensor([[1.0, -0.5, 0.25, 1e-3, -1.0], [1.0, 1.0, 1.0, 1.0, 1.0]]),
                      torch.tensor([[-0.3, 0.9, 0.1, -1.0, 0.0], [0.2, -0.7, 0.5, 0.0, -1.0]])) * scale
    wide, z_wide = copy.deepcopy(norm).double(), z.to(torch.complex128).requires_grad_()
    z.requires_grad_()
    out, expected = norm(z), _reference(wide, z_wide)
    assert bool(torch.isfinite(torch.view_as_real(out)).all())
    assert torch.equal(out[1].real, norm.norm_re.bias)                         # the constant row: 0, then the bias
    torch.testing.assert_close(out.to(torch.complex128), expected, rtol=1e-5, atol=1e-5)
    weights = torch.randn(out.shape, dtype=torch.complex128, generator=torch.Generator().manual_seed(2))
    gradient = torch.autograd.grad((out * weights.to(out.dtype)).real.sum(), z)[0]
    reference = torch.autograd.grad((expected * weights).real.sum(), z_wide)[0]          # about 1 / scale
    torch.testing.assert_close(gradient.to(torch.complex128) * scale, reference * scale, rtol=1e-5, atol=1e-5)


def test_part_layer_norm_gradient_is_that_of_the_layer_norm():
    """gradcheck in double of rows of very different scales, a constant row, and rows beyond 2^492, where the
    layer shrinks them by a power of two held fixed in the backward pass (the layer is scale invariant but for
    eps: u -> LN(2^600 u) is the layer norm of u, with eps / 4^600)."""
    norm = _layer_norm_with_affine(4, torch.complex128)
    g = torch.Generator().manual_seed(1)
    z = torch.randn(4, 4, dtype=torch.complex128, generator=g) * torch.tensor([[1e-2], [1.0], [1e2], [0.0]])
    z[3] = 0.7 - 0.2j
    _gc(norm, z.requires_grad_())
    u = torch.randn(3, 4, dtype=torch.complex128, generator=g).requires_grad_()
    _gc(lambda v: norm(v * 2.0 ** 600), u)


def test_part_layer_norm_follows_the_layers_input_rule(cdtype):
    # a real input of the layer's precision is a complex one with zero imaginary part, as for ComplexLinear
    norm = PartLayerNorm(4, dtype=cdtype)
    x = _x((3, 4), cdtype, "cpu").real
    assert torch.equal(norm(x), norm(x.to(cdtype)))
    wider = torch.complex128 if cdtype == torch.complex64 else None
    if wider is not None:
        with pytest.raises(TypeError, match="the layer expects"):
            norm(torch.ones(3, 4, dtype=wider))


def test_attention_scores_are_eq14(cdtype, device, tol):
    att = ComplexMultiheadSelfAttention(6, 2, dtype=cdtype).to(device)
    x = _x((2, 5, 6), cdtype, device)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2], device=device)
    a = att.attention_weights(x, mask)
    x = x.masked_fill(~mask.unsqueeze(-1), 0)       # padding is zeroed first, as in forward
    q = att.q(x).view(2, 5, 2, 3).transpose(1, 2)
    k = att.k(x).view(2, 5, 2, 3).transpose(1, 2)
    z = torch.einsum("bhid,bhjd->bhij", q, k.conj())
    e = torch.sqrt((z.real ** 2 + z.imag ** 2) / 3)  # paper eq. 14 with n = head dim
    e = e.masked_fill(~mask[:, None, None, :], float("-inf"))
    torch.testing.assert_close(a, torch.softmax(e, -1), atol=tol(6), rtol=0)
    assert (a[1, :, :, 3:] == 0).all()
    torch.testing.assert_close(hermitian_attention_scores(q, k), torch.sqrt((z.real ** 2 + z.imag ** 2) / 3),
                               atol=tol(6), rtol=0)


def test_attention_padding_gets_zero_weight_and_cannot_reach_the_outputs(cdtype):
    torch.manual_seed(0)
    att = ComplexMultiheadSelfAttention(4, 2, dtype=cdtype)
    x = _x((2, 3, 4), cdtype, "cpu")
    mask = torch.tensor([[True, True, False], [False, False, False]])
    a = att.attention_weights(x, mask)
    assert (a[0, :, :, 2] == 0).all() and (a[1] == 0).all()     # a row without a real key was uniform over padding
    torch.testing.assert_close(a[0].sum(-1), torch.ones(2, 3, dtype=a.dtype))
    ref = att(x, mask)
    for bad in (float("nan"), float("inf")):                    # 0 * NaN reached every output and gradient
        xb = x.clone().requires_grad_()
        with torch.no_grad():
            xb[0, 2] = bad
            xb[1] = bad
        out = att(xb, mask)
        torch.testing.assert_close(out[0, :2], ref[0, :2], atol=0, rtol=0)
        out[0, :2].abs().sum().backward()
        grads = [xb.grad] + [p.grad for p in att.parameters()]
        assert all(torch.isfinite(torch.view_as_real(g) if g.is_complex() else g).all() for g in grads)


def test_attention_weights_invariant_under_global_phase(cdtype, device, tol):
    att = ComplexMultiheadSelfAttention(4, 2, dtype=cdtype).to(device)
    for lin in (att.q, att.k):
        nn.init.zeros_(lin.bias)
    x = _x((1, 4, 4), cdtype, device)
    phase = torch.exp(torch.tensor(0.7j, dtype=cdtype, device=device))
    torch.testing.assert_close(att.attention_weights(x * phase), att.attention_weights(x), atol=tol(4) * 10, rtol=0)


def test_attention_real_dtype_is_scaled_dot_product():
    att = ComplexMultiheadSelfAttention(4, 1, dtype=torch.float64)
    x = torch.randn(1, 3, 4, dtype=torch.float64)
    q, k = att.q(x), att.k(x)
    torch.testing.assert_close(att.attention_weights(x)[0, 0], torch.softmax(q[0] @ k[0].T / 2, -1))
    with pytest.raises(ValueError, match="divisible"):
        ComplexMultiheadSelfAttention(5, 2)


def test_masked_pooling(cdtype):
    x = torch.tensor([[[1 + 5j], [3 - 1j], [100 + 100j]]], dtype=cdtype)
    mask = torch.tensor([[True, True, False]])
    assert torch.equal(masked_mean(x, mask), torch.tensor([[2 + 2j]], dtype=cdtype))
    assert torch.equal(masked_max(x, mask), torch.tensor([[3 + 5j]], dtype=cdtype))  # per part


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_masked_max_ignores_non_finite_padding(cdtype, bad):
    x = torch.tensor([[[1 + 5j], [3 - 1j], [bad + 0j]], [[bad * 1j], [bad + 0j], [bad + 0j]]], dtype=cdtype,
                     requires_grad=True)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    top = masked_max(x, mask)
    assert torch.equal(top.detach(), torch.tensor([[3 + 5j], [0j]], dtype=cdtype))
    grad, = torch.autograd.grad(top.abs().sum(), x)
    assert torch.isfinite(torch.view_as_real(grad)).all() and (grad[~mask] == 0).all()


@pytest.mark.parametrize("pool", [masked_mean, masked_max])
def test_masked_pooling_rejects_a_mask_of_the_wrong_shape(pool):
    x = torch.randn(2, 3, 4)
    bool_mask = lambda *shape: torch.ones(shape, dtype=torch.bool)      # noqa: E731
    for bad in (bool_mask(2, 4), bool_mask(3), bool_mask(2, 3, 1)):
        with pytest.raises(ValueError, match="shape of x without its last dim"):
            pool(x, bad)
    with pytest.raises(ValueError, match="shape of x without its last dim"):
        pool(torch.randn(4), torch.ones(4, dtype=torch.bool))
    if pool is masked_max:
        with pytest.raises(TypeError, match="bool"):
            pool(x, torch.ones(2, 3))


@pytest.mark.parametrize("pool", [masked_mean, masked_max])
def test_masked_pooling_of_no_steps_is_zero(cdtype, pool):
    x = torch.zeros(2, 0, 3, dtype=cdtype, requires_grad=True)
    out = pool(x, torch.zeros(2, 0, dtype=torch.bool))
    assert torch.equal(out.detach(), torch.zeros(2, 3, dtype=cdtype))
    out.abs().sum().backward()
    assert x.grad.shape == x.shape


def test_masked_max_gradcheck():
    x = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    valid = torch.tensor([[True, True, False, True], [False] * 4])
    assert torch.autograd.gradcheck(lambda x: masked_max(x, valid), (x,))
    z = torch.randn(2, 4, 3, dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z: masked_max(z, valid), (z,))


def _gc(fn, *inputs):
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5)


def test_gradcheck_layers():
    c = torch.complex128
    torch.manual_seed(0)
    x = torch.randn(2, 4, 3, dtype=c, requires_grad=True)
    mask = torch.tensor([[True] * 4, [True, True, True, False]])
    for share in (False, True):
        lin = ComplexLinear(3, 2, dtype=c, share_parts=share)
        _gc(lin, x)
        conv = ComplexConv1d(3, 2, 2, dtype=c, share_parts=share)
        _gc(conv, x)
    lstm = ComplexLSTMCell(3, 2, dtype=c)
    h0 = torch.randn(2, 2, dtype=c, requires_grad=True)
    _gc(lambda a, h: lstm(a, (h, h)), x[:, 0], h0)
    urnn = URNNCell(3, 2, dtype=c)
    _gc(lambda a, h: urnn(a, h), x[:, 0], h0)
    att = ComplexMultiheadSelfAttention(4, 2, dtype=c)
    y = torch.randn(2, 3, 4, dtype=c, requires_grad=True)
    _gc(lambda a: att(a, mask[:, :3]), y)
    _gc(ComplexFeedForward(4, 5, dtype=c, activation="tanh"), y)
    _gc(PartLayerNorm(4, dtype=c), y)
    for kind in ("modulus", "re_im", "squared_modulus"):
        _gc(lambda a: readout(a, kind), y)
    _gc(lambda a: hermitian_attention_scores(a, a), y)


def test_attention_mask_is_checked_in_forward_and_attention_weights():
    att = ComplexMultiheadSelfAttention(4, 2)
    x = torch.randn(3, 5, 4, dtype=torch.complex64)
    for call in (att, att.attention_weights):
        with pytest.raises(ValueError, match=r"mask must have the shape .*\(3, 5\); got \(1, 5\)"):
            call(x, torch.ones(1, 5, dtype=torch.bool))           # was broadcast over the batch silently
        for dtype in (torch.float32, torch.long):
            with pytest.raises(TypeError, match="mask must be a bool tensor"):
                call(x, torch.ones(3, 5, dtype=dtype))
        with pytest.raises(ValueError, match="x must have shape"):
            call(x[0], None)


def test_attention_weights_zero_the_padding_as_forward_does():
    torch.manual_seed(0)
    att = ComplexMultiheadSelfAttention(4, 2)
    x = torch.randn(2, 4, 4, dtype=torch.complex64)
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    ref = att.attention_weights(x, mask)
    bad = x.masked_fill(~mask.unsqueeze(-1), float("nan"))
    a = att.attention_weights(bad, mask)
    assert torch.isfinite(a).all()
    torch.testing.assert_close(a, ref, atol=0, rtol=0)


def test_dropout_keep_draws_as_the_bool_mask(cdtype, device):
    """``dropout_keep`` (the comparison written into the drawn numbers) gives the 1s and 0s, and
    ``complex_dropout`` the values, of ``(rand >= p).to(real) / (1 - p)`` from the same seed, bit for bit."""
    from qpnlp.nn.functional import dropout_keep
    real = torch.float64 if cdtype == torch.complex128 else torch.float32
    z = _x((40, 30), cdtype, device)
    torch.manual_seed(3)
    reference = torch.rand(z.shape, dtype=real, device=device) >= 0.3
    torch.manual_seed(3)
    keep = dropout_keep(z.shape, 0.3, real, device)
    assert keep.dtype == real and torch.equal(keep, reference.to(real))
    torch.manual_seed(3)
    assert torch.equal(complex_dropout(z, 0.3), z * (reference.to(real) / (1 - 0.3)))


def test_reprs_show_the_constructor_settings_as_torch_layers_do():
    # the number of heads, the activation, the weighting scheme and the cells' sizes were not in the reprs
    from qpnlp.nn import WordWeighting
    first = lambda module: repr(module).splitlines()[1].strip()  # noqa: E731  (the line under the class name)
    assert first(ComplexMultiheadSelfAttention(4, 2, dropout=0.1)) == "4, heads=2, dropout=0.1, dtype=torch.complex64"
    assert first(ComplexFeedForward(4, 8, activation="tanh")) == "activation='tanh'"
    assert first(ComplexLSTMCell(3, 5)) == first(URNNCell(3, 5)) == "3, 5, dtype=torch.complex64"
    assert repr(WordWeighting(20000, "uniform")) == "WordWeighting(20000, scheme='uniform')"
