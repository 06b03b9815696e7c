"""Forward-mode AD (``torch.func.jvp``, ``jacfwd``) through the custom autograd functions of qpnlp.hilbert.

The fidelity of dense states (``_PsdSqrt``), the Hellinger affinity (``_RootOverlap``) and the relative entropy
(``_TraceLog``) raised torch's "You must implement the jvp function". Each is checked against central finite
differences and against ``jacrev`` (a jvp is the Jacobian applied to the tangent; ``jacfwd`` equals ``jacrev``),
at a generic point and at one with repeated eigenvalues where the function is differentiable (the maximally mixed
state, equal weights on orthogonal words). The states are functions of real parameters, so that ``jacfwd`` and
``jacrev`` have one meaning.
"""

from __future__ import annotations

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.func import hessian, jacfwd, jacrev, jvp

import qpnlp.hilbert as H
from qpnlp.hilbert import DensityMatrix, Ensemble, PureState

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # jacfwd

D, N = 4, 2
DT = torch.complex128


def _complex(theta: torch.Tensor, *shape: int) -> torch.Tensor:
    """A complex tensor ``shape`` from the first ``2 prod(shape)`` real parameters."""
    size = torch.Size(shape).numel()
    return torch.complex(theta[:size], theta[size:2 * size]).reshape(shape)


def dense(theta: torch.Tensor) -> DensityMatrix:
    r""":math:`\rho = (I + X + X^\dagger) / \operatorname{Tr}`: the maximally mixed state at :math:`\theta = 0`."""
    x = _complex(theta, D, D)
    rho = torch.eye(D, dtype=DT) + x + x.mH
    return DensityMatrix(rho / torch.diagonal(rho).sum().real)


def ensemble(theta: torch.Tensor) -> Ensemble:
    """Two words near the first basis vectors, weights softmax(theta): orthogonal with equal weights at 0."""
    words = torch.eye(N, D, dtype=DT) + _complex(theta, N, D)
    return Ensemble(words / words.norm(dim=-1, keepdim=True), torch.softmax(theta[-N:], -1))


def pure(theta: torch.Tensor) -> PureState:
    psi = torch.ones(D, dtype=DT) + _complex(theta, D)
    return PureState(psi / psi.norm())


SIGMA = DensityMatrix.from_ensemble(
    torch.nn.functional.normalize(torch.randn(2 * D, D, dtype=DT, generator=torch.Generator().manual_seed(0)), dim=-1))

CASES = {
    "fidelity of dense states": (lambda t: H.fidelity(dense(t), SIGMA), 2 * D * D),
    "fidelity of two dense sides": (lambda t: H.fidelity(dense(t), dense(0.5 * t.flip(0))), 2 * D * D),
    "fidelity of an ensemble and a dense state": (lambda t: H.fidelity(ensemble(t), dense(0.5 * t.flip(0))),
                                                  2 * D * D),
    "bures_distance": (lambda t: H.bures_distance(dense(t), SIGMA), 2 * D * D),
    "hellinger_affinity, dense": (lambda t: H.hellinger_affinity(dense(t), SIGMA), 2 * D * D),
    "hellinger_affinity, ensemble": (lambda t: H.hellinger_affinity(ensemble(t), SIGMA), 2 * N * D + N),
    "hellinger_affinity, pure": (lambda t: H.hellinger_affinity(SIGMA, pure(t)), 2 * D),
    "hellinger_distance, two sides": (lambda t: H.hellinger_distance(ensemble(t), dense(t[:2 * D * D].flip(0))),
                                      2 * D * D),
    "relative_entropy, rho": (lambda t: H.relative_entropy(dense(t), SIGMA), 2 * D * D),
    "relative_entropy, sigma": (lambda t: H.relative_entropy(SIGMA, dense(t)), 2 * D * D),
    "relative_entropy, both": (lambda t: H.relative_entropy(dense(t), dense(0.5 * t.flip(0))), 2 * D * D),
}


def _points(size: int) -> dict[str, torch.Tensor]:
    generic = 0.2 * torch.randn(size, dtype=torch.float64, generator=torch.Generator().manual_seed(size))
    return {"generic": generic, "degenerate": torch.zeros(size, dtype=torch.float64)}


@pytest.mark.parametrize("point", ["generic", "degenerate"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_equals_finite_differences_and_jacrev(name, point, check_forward_mode):
    function, size = CASES[name]
    check_forward_mode(function, _points(size)[point])


@pytest.mark.parametrize("second", [hessian, lambda f: jacrev(jacfwd(f))], ids=["hessian", "jacrev(jacfwd)"])
def test_second_derivatives_refuse_instead_of_going_wrong(second):
    """The custom rules hold the eigenvectors fixed: differentiated again they missed their change (a hessian
    off by about a third); they raise instead."""
    function, size = CASES["fidelity of dense states"]
    with pytest.raises(NotImplementedError, match="second derivatives"):
        second(function)(_points(size)["generic"])


def _double_backward(function, theta):
    """The gradient of the sum of the gradient (create_graph=True), as a Hessian-vector product is taken."""
    theta = theta.clone().requires_grad_()
    (g,) = torch.autograd.grad(function(theta).sum(), theta, create_graph=True)
    return torch.autograd.grad(g.square().sum(), theta, allow_unused=True)[0]


REVERSE_SECOND = {
    "autograd.functional.hessian": lambda f, t: torch.autograd.functional.hessian(f, t),
    "grad of a create_graph grad": _double_backward,
    "jacrev(jacrev)": lambda f, t: jacrev(jacrev(f))(t),
}


@pytest.mark.parametrize("second", sorted(REVERSE_SECOND))
@pytest.mark.parametrize("name", ["fidelity of dense states", "hellinger_affinity, ensemble",
                                  "relative_entropy, both"])
def test_reverse_second_derivatives_refuse_instead_of_going_wrong(name, second):
    """``once_differentiable`` tied its error to fresh leaves, which ``torch.autograd.grad(outputs, inputs)``
    prunes: these gave None, or a Hessian without the custom rules' part (the one of the outer function only:
    ``torch.autograd.functional.hessian`` of a fidelity was 0, silently). They raise, saying what to do."""
    function, size = CASES[name]
    with pytest.raises(NotImplementedError, match="second derivatives.*central differences of the gradient"):
        REVERSE_SECOND[second](function, _points(size)["generic"])


def test_a_create_graph_gradient_alone_keeps_its_values():
    function, size = CASES["fidelity of two dense sides"]
    theta = _points(size)["generic"].requires_grad_()
    (want,) = torch.autograd.grad(function(theta), theta)
    (got,) = torch.autograd.grad(function(theta), theta, create_graph=True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_eager_forward_ad_equals_torch_func_and_refuses_a_gradient_of_the_tangent():
    function, size = CASES["hellinger_distance, two sides"]
    theta, v = _points(size)["generic"], torch.ones(size, dtype=torch.float64)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(function(fwAD.make_dual(theta, v))).tangent
    torch.testing.assert_close(tangent, jvp(function, (theta,), (v,))[1], rtol=1e-12, atol=0)
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="second derivatives"):
        function(fwAD.make_dual(theta.clone().requires_grad_(), v))
