"""Forward-mode AD (``torch.func.jvp``, ``jacfwd``) through the custom autograd functions of qpnlp.measurement.

``POVM.from_effects`` (``_EffectFactor``), ``POVM.from_frame`` (``_PolarFactor``) and the Lueders update of a
POVM (``_FactorRoot``) raised torch's "You must implement the jvp function" (``from_frame`` gave a zero tangent:
under ``jvp`` the frame does not require grad). Checked against central finite differences and ``jacrev`` at a
generic point and at repeated eigenvalues or singular values (effects I/k, a tight frame), where they are smooth.
"""

from __future__ import annotations

import pytest
import torch
from torch.func import hessian, jacrev

import qpnlp.measurement as M
from qpnlp.hilbert import DensityMatrix, PureState

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # jacfwd

D, K = 3, 4
DT = torch.complex128
STATE = PureState(torch.nn.functional.normalize(torch.tensor([1.0, 2.0, 0.5j], dtype=DT), dim=-1))
RHO = DensityMatrix.from_ensemble(
    torch.nn.functional.normalize(torch.randn(5, D, dtype=DT, generator=torch.Generator().manual_seed(0)), dim=-1))
QUBIT = PureState(torch.tensor([0.6, 0.8j], dtype=DT))
TRINE = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -0.75 ** 0.5]], dtype=DT)


def _complex(theta: torch.Tensor, *shape: int) -> torch.Tensor:
    size = torch.Size(shape).numel()
    return torch.complex(theta[:size], theta[size:2 * size]).reshape(shape)


def effects(theta: torch.Tensor) -> torch.Tensor:
    r""":math:`E_k = I/K + X_k + X_k^\dagger - \text{their mean}` ``(K, D, D)``: complete, positive near 0, I/K at 0."""
    x = _complex(theta, K, D, D)
    h = x + x.mH
    return torch.eye(D, dtype=DT) / K + h - h.mean(0)


def frame(theta: torch.Tensor) -> torch.Tensor:
    """The trine (a tight frame of C^2: repeated singular values) moved by theta."""
    return TRINE + _complex(theta, 3, 2)


def _real(x: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(x).flatten()


CASES = {
    "from_effects probabilities, pure": (lambda t: M.POVM.from_effects(effects(t)).probabilities(STATE), 2 * K * D * D),
    "from_effects probabilities, dense": (lambda t: M.POVM.from_effects(effects(t)).probabilities(RHO),
                                          2 * K * D * D),
    "from_frame probabilities": (lambda t: M.POVM.from_frame(frame(t)).probabilities(QUBIT), 12),
    "Lueders update of a dense state": (lambda t: _real(M.POVM.from_effects(effects(t)).post_measurement_state(
        RHO, 1).data), 2 * K * D * D),
    "Lueders update of a pure state": (lambda t: _real(M.POVM.from_effects(effects(t)).post_measurement_state(
        STATE, 2).data), 2 * K * D * D),
    "Lueders update by a rank-1 effect": (lambda t: _real(M.POVM.from_frame(frame(t)).post_measurement_state(
        DensityMatrix.maximally_mixed(2, dtype=DT), 0).data), 12),
}


@pytest.mark.parametrize("point", ["generic", "degenerate"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_equals_finite_differences_and_jacrev(name, point, check_forward_mode):
    function, size = CASES[name]
    theta = torch.zeros(size, dtype=torch.float64)
    if point == "generic":
        theta = 0.02 * torch.randn(size, dtype=torch.float64, generator=torch.Generator().manual_seed(size))
    check_forward_mode(function, theta)


def test_second_derivatives_refuse_instead_of_going_wrong():
    function, size = CASES["Lueders update of a dense state"]
    with pytest.raises(NotImplementedError, match="second derivatives"):
        hessian(function)(torch.zeros(size, dtype=torch.float64))


@pytest.mark.parametrize("name", ["from_effects probabilities, dense", "from_frame probabilities",
                                  "Lueders update by a rank-1 effect"])
@pytest.mark.parametrize("second", ["autograd.functional.hessian", "jacrev(jacrev)"])
def test_reverse_second_derivatives_refuse_instead_of_going_wrong(name, second):
    """``once_differentiable`` tied its error to fresh leaves, pruned by ``torch.autograd.grad(outputs, inputs)``:
    the Hessian of a Lueders update missed the square root's part (equal to that of the outer function alone)."""
    function, size = CASES[name]
    theta = 0.02 * torch.randn(size, dtype=torch.float64, generator=torch.Generator().manual_seed(size))
    scalar = lambda t: function(t).square().sum()                                       # noqa: E731
    second_derivative = {"autograd.functional.hessian": lambda t: torch.autograd.functional.hessian(scalar, t),
                         "jacrev(jacrev)": jacrev(jacrev(scalar))}[second]
    with pytest.raises(NotImplementedError, match="second derivatives.*central differences"):
        second_derivative(theta)
