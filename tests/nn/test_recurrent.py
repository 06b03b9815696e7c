"""Recurrent cells and layers: the one masked scan, the gated complex RNN (poster eqs. 4-9), the LSTM and uRNN cells."""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from qpnlp.hilbert import tolerance
from qpnlp.nn import (CGRNN, CGRNNCell, ComplexLSTMCell, ComplexRNN, URNNCell, as_complex_input, cgrnn_step,
                      gate_prod, gate_sum, hirose, masked_scan, modrelu, real_parameter_count)


def _x(shape, cdtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=cdtype, generator=g).to(device)


D_IN, H = 3, 6
CONFIGS = list(itertools.product(["modrelu", "hirose"], ["sum", "prod"], ["expm", "cayley", "cayley_step", "free"]))


def _layer(cdtype, device, **kw):
    torch.manual_seed(0)
    return CGRNN(D_IN, H, dtype=cdtype, device=device, **kw)


@pytest.mark.parametrize("activation, gate, transition", CONFIGS)
def test_output_shapes_dtype_device(activation, gate, transition, cdtype, device):
    rnn = _layer(cdtype, device, activation=activation, gate=gate, transition=transition)
    x = torch.randn(4, 7, D_IN, dtype=cdtype, device=device)
    out, h_last = rnn(x)
    assert out.shape == (4, 7, H) and h_last.shape == (4, H)
    assert out.dtype == cdtype and h_last.dtype == cdtype
    assert out.device.type == device.type
    assert torch.equal(out[:, -1], h_last)
    assert torch.isfinite(torch.view_as_real(out)).all()


def _reference_step(cell: CGRNNCell, x, h):
    """Eqs. (4)-(7) written out term by term from the parameter blocks."""
    n = cell.hidden_size
    v, v_r, v_z = cell.input_weight.split(n)
    b, b_r, b_z = cell.input_bias.split(n)
    w_r, w_z = cell.gate_weight.split(n)
    w = cell.transition()
    f_g = (lambda z: gate_sum(z, cell.gate.alpha)) if cell.gate_name == "sum" else gate_prod
    f_a = (lambda z: modrelu(z, cell.activation.bias)) if cell.activation_name == "modrelu" else (
        lambda z: hirose(z, cell.activation.m))
    g_r = f_g(h @ w_r.T + x @ v_r.T + b_r)  # eq. 6 (row-vector convention: W h -> h @ W^T)
    g_z = f_g(h @ w_z.T + x @ v_z.T + b_z)  # eq. 7
    z = (g_r * h) @ w.T + x @ v.T + b  # eq. 4
    return g_z * f_a(z) + (1 - g_z) * h  # eq. 5


@pytest.mark.parametrize("activation, gate", [("modrelu", "sum"), ("hirose", "prod")])
def test_cell_matches_equations(activation, gate, cdtype, device, tol):
    torch.manual_seed(1)
    cell = CGRNNCell(D_IN, H, activation=activation, gate=gate, alpha=0.3, dtype=cdtype, device=device)
    with torch.no_grad():
        cell.input_bias.normal_()
        if activation == "modrelu":
            cell.activation.bias.uniform_(-0.5, 0.5)
    x = torch.randn(5, D_IN, dtype=cdtype, device=device)
    h = torch.randn(5, H, dtype=cdtype, device=device)
    assert torch.allclose(cell(x, h), _reference_step(cell, x, h), atol=tol(10))


def test_layer_matches_cell_loop(cdtype, device, tol):
    rnn = _layer(cdtype, device, activation="hirose", gate="sum")
    x = torch.randn(3, 6, D_IN, dtype=cdtype, device=device)
    h0 = torch.randn(3, H, dtype=cdtype, device=device)
    out, h_last = rnn(x, h0=h0)
    h = h0
    for t in range(x.shape[1]):
        h = rnn.cell(x[:, t], h)
        assert torch.allclose(out[:, t], h, atol=tol(10))
    assert torch.allclose(h_last, h, atol=tol(10))


@pytest.mark.parametrize("activation", ["modrelu", "hirose"])
def test_masking_padded_equals_unpadded(activation, cdtype, device, tol):
    rnn = _layer(cdtype, device, activation=activation)
    lengths = [7, 4, 1]
    seqs = [torch.randn(n, D_IN, dtype=cdtype, device=device) for n in lengths]
    T = max(lengths) + 2
    # Right padding with garbage values (not zeros) ...
    x = 100 * torch.randn(len(seqs), T, D_IN, dtype=cdtype, device=device)
    mask = torch.zeros(len(seqs), T, dtype=torch.bool, device=device)
    for i, s in enumerate(seqs):
        x[i, : len(s)] = s
        mask[i, : len(s)] = True
    out, h_last = rnn(x, mask=mask)
    # ... and the same sequences with padding on the left and in the middle.
    x2 = 100 * torch.randn(len(seqs), T + 3, D_IN, dtype=cdtype, device=device)
    mask2 = torch.zeros(len(seqs), T + 3, dtype=torch.bool, device=device)
    for i, s in enumerate(seqs):
        idx = torch.arange(len(s), device=device) * 2 % (T + 3 - 1) + 1 if len(s) <= (T + 2) // 2 else \
            torch.arange(len(s), device=device) + 2
        x2[i, idx] = s
        mask2[i, idx] = True
    _, h_last2 = rnn(x2, mask=mask2)
    for i, s in enumerate(seqs):
        _, h_ref = rnn(s.unsqueeze(0))
        assert torch.allclose(h_last[i], h_ref[0], atol=tol(10))
        assert torch.allclose(h_last2[i], h_ref[0], atol=tol(10))
        # padded steps report the carried state unchanged
        assert torch.equal(out[i, len(s):], h_last[i].expand(T - len(s), H))


def test_all_padding_keeps_h0(cdtype, device):
    rnn = _layer(cdtype, device)
    h0 = torch.randn(2, H, dtype=cdtype, device=device)
    x = torch.randn(2, 4, D_IN, dtype=cdtype, device=device)
    out, h_last = rnn(x, mask=torch.zeros(2, 4, dtype=torch.bool, device=device), h0=h0)
    assert torch.equal(h_last, h0) and torch.equal(out, h0.unsqueeze(1).expand(2, 4, H))
    out0, h0_last = rnn(x[:, :0], h0=h0)
    assert out0.shape == (2, 0, H) and torch.equal(h0_last, h0)


def test_real_input_promotion(cdtype, device, tol):
    rnn = _layer(cdtype, device)
    x = torch.randn(2, 5, D_IN, dtype=cdtype.to_real(), device=device)
    out_real, _ = rnn(x)
    out_cplx, _ = rnn(torch.complex(x, torch.zeros_like(x)))
    assert out_real.dtype == cdtype and torch.equal(out_real, out_cplx)
    # float32 is promoted losslessly into a complex128 layer; nothing is ever downcast.
    out32, _ = rnn(x.float())
    assert out32.dtype == cdtype
    if cdtype == torch.complex64:
        with pytest.raises(TypeError, match="downcast"):
            rnn(x.double())
        with pytest.raises(TypeError, match="downcast"):
            rnn(torch.randn(2, 5, D_IN, dtype=torch.complex128, device=device))
    with pytest.raises(TypeError):
        as_complex_input(torch.ones(3, dtype=torch.long), cdtype)


def test_input_validation(device):
    rnn = _layer(torch.complex64, device)
    x = torch.randn(2, 5, D_IN, device=device)
    with pytest.raises(ValueError):
        rnn(x[0])
    with pytest.raises(ValueError):
        rnn(x, mask=torch.ones(2, 5, device=device))  # not bool
    with pytest.raises(ValueError):
        rnn(x, h0=torch.zeros(3, H, dtype=torch.complex64, device=device))
    with pytest.raises(TypeError):
        CGRNNCell(D_IN, H, dtype=torch.float32)


@pytest.mark.parametrize("transition", ["expm", "cayley", "cayley_step"])
def test_unitary_linear_part_preserves_state_norm(transition, cdtype, device):
    """With the gates open (g_r = 1) and no input, the linear part W h keeps |h| over 250 steps."""
    cell = CGRNNCell(D_IN, H, transition=transition, dtype=cdtype, device=device)
    w = cell.transition().detach()
    h = torch.randn(4, H, dtype=cdtype, device=device)
    norms = h.norm(dim=-1)
    for _ in range(250):
        h = h @ w.mT
        rel = ((h.norm(dim=-1) - norms).abs() / norms).max().item()
        assert rel <= 250 * tolerance(cdtype, H)


def test_gates_inside_cell_are_real_in_unit_interval(cdtype, device):
    rnn = _layer(cdtype, device, gate="prod")
    seen = []

    def recording_gate(z):
        g = rnn.cell.gate(z)
        seen.append(g)
        return g

    cell = rnn.cell
    xp = cell.project_inputs(10 * torch.randn(3, 4, D_IN, dtype=cdtype, device=device))
    h = torch.zeros(3, H, dtype=cdtype, device=device)
    for t in range(4):
        h = cgrnn_step(xp[:, t], h, cell.transition(), cell.gate_weight, cell.activation, recording_gate)
    for g in seen:
        assert not g.is_complex() and g.dtype == cdtype.to_real() and g.shape == (3, 2 * H)
        assert bool(((g >= 0) & (g <= 1)).all())


@pytest.mark.parametrize("activation, gate", [("modrelu", "sum"), ("hirose", "prod")])
def test_gradcheck_layer(activation, gate):
    torch.manual_seed(2)
    rnn = CGRNN(2, 3, activation=activation, gate=gate, transition="expm", dtype=torch.complex128)
    with torch.no_grad():
        if activation == "modrelu":
            rnn.cell.activation.bias.fill_(0.1)
    x = torch.randn(2, 3, 2, dtype=torch.complex128, requires_grad=True)
    h0 = torch.randn(2, 3, dtype=torch.complex128, requires_grad=True)
    mask = torch.tensor([[True, True, True], [True, False, True]])
    assert torch.autograd.gradcheck(lambda x, h0: rnn(x, mask=mask, h0=h0), (x, h0))


def test_gradcheck_step_wrt_weights():
    torch.manual_seed(3)
    n = 3
    xp = torch.randn(2, 3 * n, dtype=torch.complex128, requires_grad=True)
    h = torch.randn(2, n, dtype=torch.complex128, requires_grad=True)
    w = torch.randn(n, n, dtype=torch.complex128, requires_grad=True)
    wg = torch.randn(2 * n, n, dtype=torch.complex128, requires_grad=True)
    b = torch.full((n,), 0.2, dtype=torch.float64, requires_grad=True)

    def step(xp, h, w, wg, b):
        return cgrnn_step(xp, h, w, wg, lambda z: modrelu(z, b), lambda z: gate_sum(z, 0.4))

    assert torch.autograd.gradcheck(step, (xp, h, w, wg, b))


@pytest.mark.parametrize("activation", ["modrelu", "hirose"])
def test_gradients_reach_all_parameters(activation, cdtype, device):
    rnn = _layer(cdtype, device, activation=activation, transition="expm")
    out, h_last = rnn(torch.randn(2, 5, D_IN, device=device, dtype=cdtype.to_real()))
    (h_last.abs() ** 2).sum().backward()
    for name, p in rnn.named_parameters():
        assert p.grad is not None, name
        g = torch.view_as_real(p.grad) if p.grad.is_complex() else p.grad
        assert torch.isfinite(g).all(), name
        assert p.grad.dtype == p.dtype, name


def test_learnable_alpha_keeps_dtype(cdtype, device):
    rnn = _layer(cdtype, device, gate="sum", learn_alpha=True, alpha=0.2)
    assert rnn.cell.gate.logit_alpha.dtype == cdtype.to_real()
    _, h_last = rnn(torch.randn(2, 3, D_IN, dtype=cdtype, device=device))
    h_last.abs().sum().backward()
    assert rnn.cell.gate.logit_alpha.grad is not None


def test_parameter_count():
    cell = CGRNNCell(D_IN, H, activation="modrelu", transition="free")
    # V (3h x d), b (3h), W_r;W_z (2h x h), W (h x h) complex, modReLU bias (h) real
    expected = 2 * (3 * H * D_IN + 3 * H + 2 * H * H + H * H) + H
    assert real_parameter_count(cell) == expected


# ------------------------------------------------- the complex-order paper's LSTM and uRNN cells (ComplexRNN)

def test_lstm_cell_real_dtype_is_torch_lstm():
    torch.manual_seed(0)
    cell = ComplexLSTMCell(3, 4, dtype=torch.float64)
    ref = nn.LSTMCell(3, 4, dtype=torch.float64)
    order = lambda w: torch.cat([w[0:4], w[4:8], w[12:16], w[8:12]])  # ours i,f,o,g -> torch i,f,g,o  # noqa
    with torch.no_grad():
        nn.init.normal_(cell.input_proj.bias)
        ref.weight_ih.copy_(order(cell.input_proj.weight))
        ref.weight_hh.copy_(order(cell.hidden_proj.weight))
        ref.bias_ih.copy_(order(cell.input_proj.bias))
        ref.bias_hh.zero_()
    x, h, c = (torch.randn(2, n, dtype=torch.float64) for n in (3, 4, 4))
    for mine, theirs in zip(cell(x, (h, c)), ref(x, (h, c))):
        torch.testing.assert_close(mine, theirs)


def test_lstm_state_bounded(cdtype, device):
    cell = ComplexLSTMCell(3, 4, dtype=cdtype).to(device)
    state = None
    for t in range(20):
        state = cell(_x((2, 3), cdtype, device, t) * 10, state)
    h, _ = state
    assert h.real.abs().max() <= 1 and h.imag.abs().max() <= 1


def test_urnn_transition_is_unitary(cdtype, device, tol):
    cell = URNNCell(3, 5, dtype=cdtype).to(device)
    w = cell.transition()
    torch.testing.assert_close(w @ w.mH, torch.eye(5, dtype=cdtype, device=device), atol=tol(5) * 10, rtol=0)


@pytest.mark.parametrize("kind", ["lstm", "urnn"])
def test_rnn_carries_state_over_padding(kind, cdtype, device, tol):
    rnn = ComplexRNN(3, 4, cell=kind, dtype=cdtype).to(device)
    x = _x((2, 5, 3), cdtype, device)
    mask = torch.tensor([[True] * 5, [True, True, False, True, False]], device=device)
    out, h = rnn(x, mask)
    _, h_ref = rnn(x[1:, [0, 1, 3]], None)
    torch.testing.assert_close(h[1], h_ref[0], atol=tol(4), rtol=0)
    assert torch.equal(out[1, 1], out[1, 2])
    with pytest.raises(ValueError, match="cell must be"):
        ComplexRNN(3, 4, cell="gru")


# ------------------------------------------------------------------------------------- the one masked scan

def _previous_complex_rnn_loop(rnn, x, mask):
    """The loop ComplexRNN ran before the masked scan was shared (kept verbatim as the reference)."""
    bsz, steps = x.shape[:2]
    xp = rnn.cell.input_proj(x)
    state = rnn.cell.initial_state(bsz, xp)
    w = rnn.cell.transition() if rnn.kind == "urnn" else None
    outputs = []
    for t in range(steps):
        new = rnn.cell.step(xp[:, t], state, w) if w is not None else rnn.cell.step(xp[:, t], state)
        if mask is not None:
            m = mask[:, t].unsqueeze(-1)
            new = torch.where(m, new, state) if w is not None else \
                tuple(torch.where(m, a, b) for a, b in zip(new, state))
        state = new
        outputs.append(state if w is not None else state[0])
    h_last = state if w is not None else state[0]
    return torch.stack(outputs, 1), h_last


def _previous_cgrnn_loop(rnn, x, mask):
    """The loop CGRNN ran before the masked scan was shared (kept verbatim as the reference)."""
    cell = rnn.cell
    xp = cell.project_inputs(x)
    h = xp.new_zeros(x.shape[0], rnn.hidden_size)
    w, w_gates = cell.transition(), cell.gate_weight
    outputs = []
    masks = mask.unsqueeze(-1).unbind(1) if mask is not None else None
    for t, xp_t in enumerate(xp.unbind(1)):
        h_new = cgrnn_step(xp_t, h, w, w_gates, cell.activation, cell.gate)
        h = h_new if masks is None else torch.where(masks[t], h_new, h)
        outputs.append(h)
    return torch.stack(outputs, dim=1), h


def _rnn(kind, cdtype, device):
    if kind == "cgrnn":
        torch.manual_seed(0)
        return CGRNN(D_IN, H, dtype=cdtype, device=device)
    return ComplexRNN(D_IN, H, cell=kind, dtype=cdtype, generator=torch.Generator().manual_seed(0)).to(device)


@pytest.mark.parametrize("kind", ["lstm", "urnn", "cgrnn"])
def test_masked_scan_equals_the_previous_per_class_loops(kind, cdtype, device):
    """Bit for bit: sharing the scan changed no number, with and without a mask (holes included)."""
    rnn = _rnn(kind, cdtype, device)
    x = _x((3, 6, D_IN), cdtype, device)
    mask = torch.tensor([[True] * 6, [True, False, True, True, False, False], [False, True, False, True, True, False]],
                        device=device)
    reference = _previous_cgrnn_loop if kind == "cgrnn" else _previous_complex_rnn_loop
    for m in (mask, None):
        out, h = rnn(x, m)
        out_ref, h_ref = reference(rnn, x, m)
        assert torch.equal(out, out_ref) and torch.equal(h, h_ref)


@pytest.mark.parametrize("kind", ["lstm", "urnn", "cgrnn"])
@given(valid=st.lists(st.booleans(), min_size=1, max_size=7))
def test_padding_never_changes_the_last_valid_state(kind, valid, cdtype, device, tol):
    """Any mask (left, right, holes): the state after the last step equals the run over the valid steps alone."""
    rnn = _rnn(kind, cdtype, device)
    mask = torch.tensor([valid], device=device)
    x = _x((1, len(valid), D_IN), cdtype, device)
    x[:, ~mask[0]] *= 100                                            # garbage under the padding
    out, h = rnn(x, mask)
    _, h_ref = rnn(x[:, mask[0]], None)
    assert torch.allclose(h, h_ref, atol=tol(10), rtol=0)
    for t in range(1, len(valid)):                                   # a padded step repeats the previous output
        if not valid[t]:
            assert torch.equal(out[:, t], out[:, t - 1])


def test_masked_scan_tuple_state_output_and_empty_sequences():
    step = lambda x_t, s: (s[0] + x_t, s[1] * 2)                     # noqa: E731
    x = torch.ones(2, 3, 1)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    out, (a, b) = masked_scan(step, x, (torch.zeros(2, 1), torch.ones(2, 1)), mask, output=lambda s: s[1])
    assert out[:, :, 0].tolist() == [[2.0, 2.0, 4.0], [1.0, 1.0, 1.0]]
    assert a[:, 0].tolist() == [2.0, 0.0] and b[:, 0].tolist() == [4.0, 1.0]
    out, s = masked_scan(step, x[:, :0], (torch.zeros(2, 5), torch.ones(2, 5)), None, output=lambda s: s[0])
    assert out.shape == (2, 0, 5) and torch.equal(s[0], torch.zeros(2, 5))


def test_cgrnn_generator_seeds_every_weight_and_leaves_the_global_rng_alone():
    before = torch.random.get_rng_state()
    a = CGRNN(3, 4, transition="cayley", generator=torch.Generator().manual_seed(5))
    assert torch.equal(torch.random.get_rng_state(), before)
    torch.manual_seed(99)
    b = CGRNN(3, 4, transition="cayley", generator=torch.Generator().manual_seed(5))
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name


@pytest.mark.parametrize("make", [lambda: CGRNN(2, 3), lambda: ComplexRNN(2, 3, cell="lstm"),
                                  lambda: ComplexRNN(2, 3, cell="urnn")])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_at_a_real_step_is_refused_and_at_padding_ignored(make, bad):
    """The check every finiteness check of qpnlp makes (hilbert's ``check_finite``): its message, the step's index."""
    rnn = make()
    x = torch.randn(2, 3, 2)
    x[1, 2, 1] = bad
    mask = torch.tensor([[True, True, True], [True, True, False]])
    _, h = rnn(x, mask)                                     # the NaN sits under padding: carried over
    assert torch.isfinite(torch.view_as_real(h)).all()
    message = rf"^x must be finite; got {bad} at batch index \(1, 2\) \(shape \(2, 3, 2\)\)$"
    with pytest.raises(ValueError, match=message):
        rnn(x)


def test_the_cells_step_refuses_nan_at_its_batch_index():
    x = torch.randn(3, 2, dtype=torch.complex64)
    x[2, 0] = complex(0, float("nan"))
    with pytest.raises(ValueError, match=r"^x must be finite; got \S*nan\S* at batch index \(2,\) \(shape \(3, 2\)\)$"):
        CGRNNCell(2, 3)(x)


def test_the_finiteness_check_follows_the_validation_switch():
    from qpnlp.hilbert import validation

    x = torch.randn(2, 3, 2)
    x[0, 1] = float("nan")
    for layer in (CGRNN(2, 3), ComplexRNN(2, 3), CGRNNCell(2, 3)):
        inputs = x if not isinstance(layer, CGRNNCell) else x[:, 1]
        with validation(False):                             # no check: the NaN propagates, as in torch's layers
            out = layer(inputs)
        h = out[1] if isinstance(out, tuple) else out
        assert torch.isnan(torch.view_as_real(h[0])).any() and torch.isfinite(torch.view_as_real(h[1])).all()
        with validation(True), pytest.raises(ValueError, match="x must be finite"):
            layer(inputs)


@pytest.mark.parametrize("make", [lambda: CGRNN(2, 3), lambda: CGRNN(2, 3, activation="hirose", gate="prod"),
                                  lambda: ComplexRNN(2, 3, cell="lstm"), lambda: ComplexRNN(2, 3, cell="urnn")])
def test_nan_at_padding_reaches_no_gradient(make):
    # the forward carried the state over the NaN, but the input projection's gradient read it (0 * NaN = NaN)
    torch.manual_seed(0)
    rnn = make()
    x = torch.randn(2, 3, 2, dtype=torch.complex64)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    _, h_ref = rnn(x, mask)
    g_ref = torch.autograd.grad(h_ref.abs().sum(), list(rnn.parameters()))
    x[1, 2] = float("nan")
    xb = x.clone().requires_grad_()
    _, h = rnn(xb, mask)
    assert torch.equal(h, h_ref)
    grads = torch.autograd.grad(h.abs().sum(), [xb] + list(rnn.parameters()))
    assert all(torch.isfinite(torch.view_as_real(g) if g.is_complex() else g).all() for g in grads)
    assert (grads[0][1, 2] == 0).all()
    for g, r in zip(grads[1:], g_ref):
        assert torch.equal(g, r)


def test_cell_refuses_a_state_that_would_broadcast_against_the_batch():
    cell = CGRNNCell(2, 3)
    x = torch.randn(4, 2)
    for h in (torch.zeros(3, dtype=torch.complex64), torch.zeros(1, 3, dtype=torch.complex64),
              torch.zeros(4, 5, dtype=torch.complex64)):
        with pytest.raises(ValueError, match=re.escape(f"h must have shape (4, 3) (x.shape[:-1] + (hidden,)); "
                                                       f"got {tuple(h.shape)}")):
            cell(x, h)
    assert cell(x, torch.zeros(4, 3)).shape == (4, 3)                            # a real state is promoted
    assert cell(x[0], torch.zeros(3, dtype=torch.complex64)).shape == (3,)      # one unbatched step


@pytest.mark.parametrize("cell, state", [
    (ComplexLSTMCell(2, 3), lambda h: (h, torch.zeros(4, 3, dtype=torch.complex64))),
    (URNNCell(2, 3), lambda h: h)])
def test_the_lstm_and_urnn_cells_name_a_state_of_the_wrong_dtype(cell, state):
    # the LSTM cell's error named x, the uRNN cell's was torch's matmul RuntimeError ("expected m1 and m2 ...")
    x = torch.randn(4, 2, dtype=torch.complex64)
    for h, message in ((torch.zeros(4, 3, dtype=torch.complex128), "h has dtype torch.complex128"),
                       (torch.zeros(4, 3, dtype=torch.float64), "h has dtype torch.float64"),
                       (torch.zeros(4, 3, dtype=torch.long), "h must be a real floating or complex tensor")):
        with pytest.raises(TypeError, match=re.escape(message)):
            cell(x, state(h))
    out = cell(x, state(torch.zeros(4, 3)))                 # a real state of the cell's precision is promoted
    assert (out[0] if isinstance(out, tuple) else out).dtype == torch.complex64


_STATE_CALLS = {   # (name of the state, a call given a state (2, 3) in its slot and zeros elsewhere)
    "lstm h": ("h", lambda s, x: ComplexLSTMCell(2, 3)(x, (s, torch.zeros_like(s)))[0]),
    "lstm c": ("c", lambda s, x: ComplexLSTMCell(2, 3)(x, (torch.zeros_like(s), s))[0]),
    "urnn h": ("h", lambda s, x: URNNCell(2, 3)(x, s)),
    "cgrnn cell h": ("h", lambda s, x: CGRNNCell(2, 3)(x, s)),
    "cgrnn h0": ("h0", lambda s, x: CGRNN(2, 3)(x[:, None], h0=s)[1]),
}


@pytest.mark.parametrize("case", list(_STATE_CALLS))
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_state_with_nan_or_inf_is_refused_naming_it(case, bad):
    """One check (``_check_finite``) for every state given to a cell or a layer; a NaN state ran through silently."""
    from qpnlp.hilbert import validation

    name, call = _STATE_CALLS[case]
    x, state = torch.randn(2, 2, dtype=torch.complex64), torch.zeros(2, 3, dtype=torch.complex64)
    assert torch.isfinite(torch.view_as_real(call(state + 0.5, x))).all()     # a finite state still works
    state[1, 2] = bad
    with pytest.raises(ValueError, match=rf"^{name} must be finite; got \S*{bad}\S* at batch index \(1,\) "
                                         rf"\(shape \(2, 3\)\)$"):
        call(state, x)
    with validation(False):                                 # no check: the NaN propagates, as in torch's layers
        call(state, x)


@pytest.mark.parametrize("cell", [ComplexLSTMCell, URNNCell])
def test_the_lstm_and_urnn_cells_refuse_a_nan_input_as_the_cgrnn_cell(cell):
    x = torch.randn(3, 2, dtype=torch.complex64)
    x[2, 0] = complex(0, float("nan"))
    with pytest.raises(ValueError, match=r"^x must be finite; got \S*nan\S* at batch index \(2,\) \(shape \(3, 2\)\)$"):
        cell(2, 3)(x)
