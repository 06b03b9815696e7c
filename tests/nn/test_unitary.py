"""Tests of the unitary state-transition parametrisations and the Cayley-step optimiser (poster eq. 3)."""

from __future__ import annotations

import pytest
import torch

from qpnlp.hilbert import random_unitary, tolerance

from qpnlp.nn import (
    TRANSITION_MODES,
    CayleyStepSGD,
    StateTransition,
    cayley_step,
    split_cayley_step_parameters,
    unitarity_error,
)



N = 8


def _target_loss(w: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """A loss whose Euclidean minimiser (target) is far from unitary, so steps push W off the manifold."""
    return (w - target).abs().pow(2).sum()


def _optimiser(module, mode, lr):
    stiefel, other = split_cayley_step_parameters(module)
    if mode == "cayley_step":
        assert not other
        return CayleyStepSGD(stiefel, lr=lr)
    return torch.optim.Adam(other, lr=lr)


def test_random_unitary(cdtype, device):
    u = random_unitary(N, dtype=cdtype, device=device)
    assert u.dtype == cdtype and u.device.type == device.type
    assert unitarity_error(u) <= tolerance(cdtype, N)


@pytest.mark.parametrize("mode, lr", [("expm", 0.3), ("cayley", 0.3), ("cayley_step", 0.5)])
def test_stays_unitary_after_many_large_steps(mode, lr, cdtype, device):
    torch.manual_seed(0)
    st = StateTransition(N, mode=mode, dtype=cdtype, device=device)
    target = 3.0 * torch.randn(N, N, dtype=cdtype, device=device)
    opt = _optimiser(st, mode, lr)
    w0 = st().detach().clone()
    for _ in range(200):
        opt.zero_grad()
        _target_loss(st(), target).backward()
        opt.step()
    w = st().detach()
    assert w.dtype == cdtype
    assert not torch.allclose(w, w0), "the optimiser did not move the matrix"
    # The parametrisations are unitary up to one evaluation's rounding; the Cayley
    # step accumulates one rounding error per step, hence the factor for 200 steps.
    c = 10.0 if mode != "cayley_step" else 10.0 * 200 ** 0.5
    assert unitarity_error(w) <= tolerance(cdtype, N, factor=c), unitarity_error(w)


@pytest.mark.parametrize("mode", ["expm", "cayley"])
@pytest.mark.parametrize("scale", [1.0, 30.0, 300.0])
def test_unitary_by_construction_for_any_parameter(mode, scale, cdtype, device):
    """Whatever value the free parameter takes (e.g. after huge optimiser steps), W is unitary.

    ``matrix_exp`` (scaling and squaring) has a rounding error that grows with the
    norm of the skew-Hermitian generator A, so the tolerance is scaled by 1 + ||A||_2.
    """
    torch.manual_seed(5)
    st = StateTransition(N, mode=mode, dtype=cdtype, device=device)
    with torch.no_grad():
        st.parametrizations.weight.original.copy_(scale * torch.randn(N, N, dtype=cdtype, device=device))
    x = st.parametrizations.weight.original.detach().tril()
    a_norm = torch.linalg.matrix_norm(x - x.mH, 2).item()
    assert unitarity_error(st().detach()) <= tolerance(cdtype, N) * (1.0 + a_norm)


def test_free_mode_leaves_the_unitary_group(cdtype, device):
    torch.manual_seed(0)
    st = StateTransition(N, mode="free", dtype=cdtype, device=device)
    assert not st.is_unitary
    target = 3.0 * torch.randn(N, N, dtype=cdtype, device=device)
    opt = torch.optim.Adam(st.parameters(), lr=0.1)
    for _ in range(20):
        opt.zero_grad()
        _target_loss(st(), target).backward()
        opt.step()
    assert unitarity_error(st().detach()) > 1e-2


@pytest.mark.parametrize("mode", ["expm", "cayley", "cayley_step"])
def test_transition_preserves_norm(mode, cdtype, device, tol):
    st = StateTransition(N, mode=mode, dtype=cdtype, device=device)
    h = torch.randn(5, N, dtype=cdtype, device=device)
    w = st().detach()
    out = h
    for _ in range(250):  # many applications, as in a length-250 sequence
        out = out @ w.mT
    rel = ((out.norm(dim=-1) - h.norm(dim=-1)).abs() / h.norm(dim=-1)).max().item()
    assert rel <= 250 * tolerance(cdtype, N)


def test_cayley_step_formula(cdtype, device):
    torch.manual_seed(3)
    w = random_unitary(N, dtype=cdtype, device=device)
    g = torch.randn(N, N, dtype=cdtype, device=device)
    lr = 0.3
    a = g @ w.mH - w @ g.mH
    assert (a + a.mH).abs().max().item() <= tolerance(cdtype, N)  # skew-Hermitian
    eye = torch.eye(N, dtype=cdtype, device=device)
    expected = torch.linalg.inv(eye + lr / 2 * a) @ (eye - lr / 2 * a) @ w
    got = cayley_step(w, g, lr)
    assert torch.allclose(got, expected, atol=tolerance(cdtype, N, factor=100))
    assert unitarity_error(got) <= tolerance(cdtype, N)


@pytest.mark.parametrize("lr, scale", [(3e38, 1.0), (1e30, 1e9), (5.0, 1.0)])
def test_cayley_step_sgd_takes_a_huge_step_size(lr, scale):
    """(lr / 2) A overflowed complex64: lr=3e38 (under the largest float32, which CayleyStepSGD takes; from 2.7e38 here)
    and a normal gradient, or lr=1e30 and a gradient of 1e9, gave a NaN matrix with no error. The step is now computed
    divided by lr / 2: unitary, the complex128 step's matrix; lr <= 2 is the formula as written, bit for bit."""
    torch.manual_seed(6)
    w = random_unitary(4, dtype=torch.complex128)
    g = scale * torch.randn(4, 4, dtype=torch.complex128)
    weight = torch.nn.Parameter(w.to(torch.complex64))
    weight.grad = g.to(torch.complex64)
    CayleyStepSGD([weight], lr=lr).step()
    assert unitarity_error(weight) <= tolerance(torch.complex64, 4)
    torch.testing.assert_close(weight.detach(), cayley_step(w, g, lr).to(torch.complex64), atol=1e-5, rtol=0)
    w, g = w.to(torch.complex64), g.to(torch.complex64) / scale
    a, eye = g @ w.mH - w @ g.mH, torch.eye(4, dtype=torch.complex64)
    assert torch.equal(cayley_step(w, g, 0.3), torch.linalg.solve(eye + 0.15 * a, (eye - 0.15 * a) @ w))


def test_cayley_step_is_a_descent_step():
    """For a small step the Cayley update decreases a smooth loss (it follows the Riemannian gradient)."""
    torch.manual_seed(4)
    st = StateTransition(N, mode="cayley_step", dtype=torch.complex128)
    target = random_unitary(N, dtype=torch.complex128)
    opt = CayleyStepSGD([st.weight], lr=1e-2)
    losses = []
    for _ in range(50):
        opt.zero_grad()
        loss = _target_loss(st(), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:]))
    assert losses[-1] < 0.5 * losses[0]


def test_split_and_validation():
    st = StateTransition(4, mode="cayley_step")
    stiefel, other = split_cayley_step_parameters(torch.nn.ModuleList([st, torch.nn.Linear(2, 2)]))
    assert len(stiefel) == 1 and stiefel[0] is st.weight and len(other) == 2
    assert split_cayley_step_parameters(StateTransition(4, mode="expm"))[0] == []
    assert set(TRANSITION_MODES) == {"expm", "cayley", "cayley_step", "free"}
    with pytest.raises(ValueError):
        StateTransition(4, mode="householder")
    with pytest.raises(TypeError):
        StateTransition(4, dtype=torch.float32)
    with pytest.raises(ValueError):
        CayleyStepSGD([torch.nn.Parameter(torch.randn(3, 3))], lr=0.1)


def test_parametrisation_is_torch_orthogonal():
    """The expm/cayley modes use torch.nn.utils.parametrizations.orthogonal (which supports complex)."""
    from torch.nn.utils import parametrize

    st = StateTransition(4, mode="expm", dtype=torch.complex128)
    assert parametrize.is_parametrized(st, "weight")
    assert st.weight.dtype == torch.complex128


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128, torch.float32, torch.float64])
def test_skew_expm_mode_is_unitary_by_construction(dtype):
    """The uRNN cell's mode: W = exp(S - S^H) of a free S, a torch parametrisation; orthogonal for a real dtype."""
    from torch.nn.utils import parametrize

    st = StateTransition(N, mode="skew_expm", dtype=dtype, generator=torch.Generator().manual_seed(0))
    assert parametrize.is_parametrized(st, "weight") and st.is_unitary and st().dtype == dtype
    with torch.no_grad():
        st.parametrizations.weight.original.mul_(20.0)               # any value of S
    s = st.parametrizations.weight.original.detach()
    torch.testing.assert_close(st().detach(), torch.linalg.matrix_exp(s - s.mH), rtol=0, atol=0)
    a_norm = torch.linalg.matrix_norm(s - s.mH, 2).item()
    assert unitarity_error(st().detach()) <= tolerance(dtype, N) * (1.0 + a_norm)
    assert split_cayley_step_parameters(st)[0] == []
    assert "skew_expm" not in TRANSITION_MODES                       # not one of the poster's cgRNN modes
    with pytest.raises(TypeError, match="complex"):
        StateTransition(N, mode="expm", dtype=torch.float64)


@pytest.mark.parametrize("w, shape", [(torch.ones(3), r"\(3,\)"), (torch.tensor(1.0), r"\(\)"),
                                      (torch.ones(2, 3), r"\(2, 3\)")])
def test_unitarity_error_refuses_what_is_not_a_batch_of_square_matrices(w, shape):
    # a vector was torch's "tensor.mH is only supported on matrices", a 0-dim tensor an IndexError, and a (2, 3)
    # matrix was scored as if W^H W = I made it unitary
    with pytest.raises(ValueError, match=rf"w must have shape \(\.\.\., d, d\); got shape {shape}"):
        unitarity_error(w)
    with pytest.raises(TypeError, match="w must be a torch.Tensor; got list"):
        unitarity_error([[1.0, 0.0], [0.0, 1.0]])
    assert unitarity_error(torch.ones(0, 3, 3)) == 0.0          # was "max(): Expected reduction dim" on no matrix
    assert unitarity_error(torch.eye(2, dtype=torch.long)) == 0.0 and isinstance(unitarity_error(torch.eye(2)), float)


@pytest.mark.parametrize("mode", ["expm", "cayley"])
def test_a_transition_moved_to_double_is_unitary_to_float64s_precision(mode):
    """torch's orthogonal parametrisation gives W = W_0 Q(A) with a fixed base W_0 (a buffer); double() kept
    float32's round-off there, unitarity_error ~3e-7 at n = 8. The base is now re-orthonormalised as the move widens
    it: < 1e-14, W within float32's round-off of the single-precision matrix (a model's move: tests/models)."""
    st = StateTransition(N, mode, generator=torch.Generator().manual_seed(5))
    before = st().detach()
    assert st.double() is st
    w = st().detach()
    assert w.dtype == torch.complex128 and unitarity_error(w) < 1e-14
    assert float((w - before.to(torch.complex128)).abs().amax()) <= tolerance(torch.float32, N)


@pytest.mark.parametrize("move", ["double()", "to(torch.complex128)"])
def test_a_cayley_step_transition_moved_to_double_is_unitary_to_float64s_precision(move):
    """``"cayley_step"`` holds W as a plain parameter, unitary to float32's round-off; a model's double() kept that:
    unitarity_error 3e-7 to 6e-7 (n = 4 to 64), and every later Cayley step keeps it (its factor is unitary). W is
    re-orthonormalised as the move widens it (a QR, as the bases above): < 1e-14, within float32's round-off of the
    single-precision W, the same Parameter (an optimiser that holds it steps the new values); ``"free"``, which
    promises no unitarity, is kept bit for bit."""
    from qpnlp.nn import CGRNN

    model = CGRNN(3, N, transition="cayley_step", generator=torch.Generator().manual_seed(5))
    weight = model.cell.transition.weight
    before = weight.detach().clone()
    assert (model.double() if move == "double()" else model.to(torch.complex128)) is model
    assert model.cell.transition.weight is weight and weight.dtype == torch.complex128
    assert unitarity_error(weight) < 1e-14, unitarity_error(weight)
    assert float((weight.detach() - before.to(torch.complex128)).abs().amax()) <= tolerance(torch.float32, N)
    model.cell.transition().real.sum().backward()
    CayleyStepSGD([weight], lr=0.1).step()
    assert unitarity_error(weight) < 1e-14
    free = StateTransition(N, "free", generator=torch.Generator().manual_seed(5))
    single = free.weight.detach().clone()
    assert torch.equal(free.double().weight.detach(), single.to(torch.complex128))
