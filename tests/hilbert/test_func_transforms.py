"""torch.func and torch.compile over qpnlp.hilbert with validation on (the default).

Under ``vmap`` every value check called ``bool()`` or ``.item()`` on a batched tensor: torch's "data-dependent
control flow is not supported" from the first state built. The value checks now pass vmapped tensors
(``_validation.has_values``), as they pass meta tensors; the static checks still run, and outside ``vmap`` (and
under ``grad`` alone) the value checks run as before.
"""

from __future__ import annotations

import pytest
import torch
from torch.func import grad, vmap

import qpnlp.hilbert as H
from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, SememeBasis
from qpnlp.hilbert import _validation as V

B, D, N = 3, 4, 5
DT = torch.complex128


def _unit(*shape, seed=0):
    z = torch.randn(*shape, dtype=DT, generator=torch.Generator().manual_seed(seed))
    return z / z.norm(dim=-1, keepdim=True)


PSI, PHI = _unit(B, D), _unit(B, D, seed=1)
WORDS = _unit(B, N, D, seed=2)
WEIGHTS = torch.softmax(torch.randn(B, N, dtype=torch.float64, generator=torch.Generator().manual_seed(3)), -1)
MASK = torch.tensor([[True] * N, [True, True, False, False, False], [False, True, True, True, True]])
RHO = torch.stack([DensityMatrix.from_ensemble(WORDS[i], WEIGHTS[i]).data for i in range(B)])
SIGMA = torch.stack([DensityMatrix.from_ensemble(_unit(N, D, seed=4 + i)).data for i in range(B)])
BASES = torch.stack([H.random_unitary(D, dtype=DT, generator=torch.Generator().manual_seed(i)) for i in range(B)])

CASES = {
    "PureState": (lambda a: PureState(a).data, (PSI,)),
    "normalize": (lambda a: H.normalize(3 * a), (PSI,)),
    "DensityMatrix": (lambda r: DensityMatrix(r, validate="strict").data, (RHO,)),
    "Ensemble with a mask": (lambda s, m: Ensemble(s, mask=m).dense().data, (WORDS, MASK)),
    "Ensemble with weights": (lambda s, w: Ensemble(s, w).purity(), (WORDS, WEIGHTS)),
    "masked_softmax": (lambda w, m: H.masked_softmax(w, m), (WEIGHTS, MASK)),
    "SememeBasis": (lambda u: SememeBasis(u).vectors, (BASES,)),
    "fidelity of pure states": (lambda a, b: H.fidelity(PureState(a), PureState(b)), (PSI, PHI)),
    "fidelity of dense states": (lambda r, s: H.fidelity(r, s), (RHO, SIGMA)),
    "trace_distance": (lambda r, s: H.trace_distance(r, s), (RHO, SIGMA)),
    "von_neumann_entropy": (lambda r: H.von_neumann_entropy(r), (RHO,)),
    "purity": (lambda r: H.purity(r), (RHO,)),
    "partial_trace": (lambda r: H.partial_trace(r, (2, 2), 0).data, (RHO,)),
    "negativity": (lambda r: H.negativity(r, (2, 2)), (RHO,)),
    "tensor_product of tensors": (lambda r, s: H.tensor_product(r, s).data, (RHO, SIGMA)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_with_validation_on_equals_the_loop(name):
    function, args = CASES[name]
    with H.validation(True):
        looped = torch.stack([function(*(a[i] for a in args)) for i in range(B)])
        mapped = vmap(function)(*args)
    torch.testing.assert_close(mapped, looped)


def _fidelity_of_angles(theta: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """F(|psi(theta)>, target) for the real parameters ``theta`` (D,) of a state psi = e^{i theta} / sqrt(D)."""
    psi = torch.polar(torch.full_like(theta, D ** -0.5), theta)
    return H.fidelity(PureState(psi), DensityMatrix(target))


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_per_sample_gradients_of_a_fidelity_equal_the_loop():  # jacfwd: torch scripts its jvp decompositions
    theta = torch.randn(B, D, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    looped = torch.stack([grad(_fidelity_of_angles)(theta[i], SIGMA[i]) for i in range(B)])
    torch.testing.assert_close(vmap(grad(_fidelity_of_angles))(theta, SIGMA), looped)
    jac = torch.func.jacfwd(lambda t: vmap(_fidelity_of_angles)(t, SIGMA))(theta)     # (B, B, D): block diagonal
    torch.testing.assert_close(torch.stack([jac[i, i] for i in range(B)]), looped)


def test_value_checks_still_run_outside_vmap_and_under_grad():
    bad = torch.tensor([1.0, 1.0], dtype=DT)
    with pytest.raises(ValueError, match="unit norm"):
        PureState(bad)
    with pytest.raises(ValueError, match="unit norm"):
        grad(lambda t: PureState(bad * t).data.real.sum())(torch.tensor(1.0, dtype=torch.float64))


def test_static_checks_still_run_under_vmap():
    with pytest.raises(TypeError, match="complex64 or complex128"):
        vmap(lambda r: DensityMatrix(r))(RHO.real)
    with pytest.raises(ValueError, match="dimension mismatch"):
        vmap(lambda a, r: H.fidelity(PureState(a), r))(_unit(B, D + 1), RHO)


def test_vmapped_finds_a_batch_under_nested_transforms_only():
    seen = {}

    def probe(tag):
        def f(x):
            seen[tag] = V.vmapped(x) or V.vmapped(2 * x.detach())
            return x.sum()
        return f

    x = torch.randn(B, 2)
    probe("plain")(x)
    grad(probe("grad"))(x[0])
    vmap(probe("vmap"))(x)
    vmap(grad(probe("vmap(grad)")))(x)
    assert seen == {"plain": False, "grad": False, "vmap": True, "vmap(grad)": True}
    assert not V.vmapped(torch.empty(2, device="meta")) and not V.has_values(torch.empty(2, device="meta"))


def test_torch_compile_of_a_vmapped_fidelity_is_one_graph():
    """torch.compile(vmap(f)) traced the checks' ``bool()`` on batched fake tensors and failed in the resumed frame
    ("data-dependent control flow"); the batch is now seen while compiling too."""
    from torch._dynamo.testing import CompileCounter

    def function(a, b):
        return H.fidelity(PureState(a), PureState(b))

    counter = CompileCounter()
    torch._dynamo.reset()
    try:
        compiled = torch.compile(vmap(function), backend=counter)(PSI, PHI)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(compiled, function(PSI, PHI))
    assert counter.frame_count == 1


def _born_and_fidelity(theta: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """A Born probability and a fidelity of the state e^{i theta} / sqrt(D), validation on."""
    import qpnlp.measurement as M
    psi = PureState(torch.polar(torch.full_like(theta, D ** -0.5), theta))
    born = M.word_probabilities(psi.data.unsqueeze(0), target.unsqueeze(0))[0, 0]
    return born + H.fidelity(psi, PureState(target))


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="this torch has no torch.compile")
@pytest.mark.parametrize("transform", ["vmap(grad)", "grad"])
def test_torch_compile_of_per_sample_gradients_is_one_graph(transform):
    """``torch.compile(vmap(grad(f)))`` failed with "AssertionError: False != True" (dynamo resuming inside the
    transform after a value check's graph break); ``torch.compile(grad(f))`` compiled nothing (frame_count 0).
    While torch.compile traces a torch.func transform the value checks are skipped (``has_values``)."""
    from torch._dynamo.testing import CompileCounter

    theta = torch.randn(B, D, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    function = vmap(grad(_born_and_fidelity)) if transform == "vmap(grad)" else grad(_born_and_fidelity)
    args = (theta, PHI) if transform == "vmap(grad)" else (theta[0], PHI[0])
    counter = CompileCounter()
    torch._dynamo.reset()
    try:
        compiled = torch.compile(function, backend=counter)(*args)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(compiled, function(*args))
    assert counter.frame_count == 1
