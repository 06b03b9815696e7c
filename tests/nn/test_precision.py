"""Every public module of qpnlp.nn and qpnlp.measurement moved between precisions keeps complex tensors complex.

``nn.Module.to(torch.float64)`` cast complex parameters to float64, dropping their imaginary parts (torch's warning
only), and ``double()`` / ``float()`` left them as they were; the complex building blocks now read a dtype as a
precision (``qpnlp._module_precision.ComplexPrecisionMixin``). The modules are discovered from the packages'
``__all__``, so a new public module without a row in ``CASES`` fails here.
"""

from __future__ import annotations

import inspect
import warnings

import pytest
import torch
from torch import nn

import qpnlp.measurement
import qpnlp.nn
from qpnlp import nn as qn
from qpnlp._module_precision import ComplexPrecisionMixin, orthogonal_parametrization
from qpnlp.hilbert import tolerance
from qpnlp.measurement import POVMMeasurement, ProjectiveMeasurement

IDS = torch.tensor([[2, 3, 4, 0], [5, 1, 0, 0]])
MASK = IDS != 0


def _z(shape, real):
    """A complex input of precision ``real`` (the same values at both precisions)."""
    g = torch.Generator().manual_seed(1)
    return torch.randn(shape, dtype=torch.complex64, generator=g).to(real.to_complex())


def _states(real):
    z = _z((3, 4), real)
    return z / torch.linalg.vector_norm(z, dim=-1, keepdim=True)


#: id -> (build at single precision, run at precision ``real``); every public module class needs at least one row.
CASES = {
    "ComplexLinear": (lambda g: qn.ComplexLinear(3, 2, generator=g), lambda m, r: m(_z((4, 3), r))),
    "ComplexLinear shared parts": (lambda g: qn.ComplexLinear(3, 2, share_parts=True, generator=g),
                                   lambda m, r: m(_z((4, 3), r))),
    "ComplexLinear real": (lambda g: qn.ComplexLinear(3, 2, dtype=torch.float32, generator=g),
                           lambda m, r: m(_z((4, 3), r).real)),
    "ComplexConv1d": (lambda g: qn.ComplexConv1d(3, 2, 2, generator=g), lambda m, r: m(_z((2, 5, 3), r))),
    "ComplexFeedForward": (lambda g: qn.ComplexFeedForward(4, 6, generator=g), lambda m, r: m(_z((2, 3, 4), r))),
    "ComplexDropout": (lambda g: qn.ComplexDropout(0.5), lambda m, r: m(_z((3, 4), r))),
    "Readout": (lambda g: qn.Readout(), lambda m, r: m(_z((3, 4), r))),
    "PartLayerNorm": (lambda g: qn.PartLayerNorm(4), lambda m, r: m(_z((2, 4), r))),
    "ComplexMultiheadSelfAttention": (lambda g: qn.ComplexMultiheadSelfAttention(4, 2, generator=g),
                                      lambda m, r: m(_z((2, 4, 4), r), MASK)),
    "Hirose": (lambda g: qn.Hirose(learnable=True), lambda m, r: m(_z((3, 4), r))),
    "ModReLU": (lambda g: qn.ModReLU(4, -0.1), lambda m, r: m(_z((3, 4), r))),
    "SumGate": (lambda g: qn.SumGate(learnable=True), lambda m, r: m(_z((3, 4), r))),
    "ProdGate": (lambda g: qn.ProdGate(), lambda m, r: m(_z((3, 4), r))),
    **{f"StateTransition {mode}": (lambda g, mode=mode: qn.StateTransition(4, mode, generator=g), lambda m, r: m())
       for mode in qn.TRANSITION_MODES},
    "ComplexLSTMCell": (lambda g: qn.ComplexLSTMCell(3, 4, generator=g), lambda m, r: m(_z((2, 3), r))),
    "URNNCell": (lambda g: qn.URNNCell(3, 4, generator=g), lambda m, r: m(_z((2, 3), r))),
    "ComplexRNN": (lambda g: qn.ComplexRNN(3, 4, generator=g), lambda m, r: m(_z((2, 4, 3), r), MASK)),
    "CGRNNCell": (lambda g: qn.CGRNNCell(3, 4, learn_alpha=True, generator=g), lambda m, r: m(_z((2, 3), r))),
    "CGRNN": (lambda g: qn.CGRNN(3, 4, activation="hirose", transition="cayley", generator=g),
              lambda m, r: m(_z((2, 4, 3), r), MASK)),
    "ComplexWordEmbedding": (lambda g: qn.ComplexWordEmbedding(6, 4, generator=g), lambda m, r: m(IDS)),
    "WordWeighting": (lambda g: qn.WordWeighting(6), lambda m, r: m(IDS, MASK, _z(IDS.shape, r).abs())),
    "ComplexOrderEmbedding": (lambda g: qn.ComplexOrderEmbedding(6, 4, generator=g), lambda m, r: m(IDS, MASK)),
    "RealPositionalEmbedding": (lambda g: qn.RealPositionalEmbedding(6, 4, position="pe", max_len=8, generator=g),
                                lambda m, r: m(IDS, MASK)),
    "ProjectiveMeasurement": (lambda g: ProjectiveMeasurement(4, 3, init="random", generator=g),
                              lambda m, r: m(_states(r))),
    "ProjectiveMeasurement orthonormal": (lambda g: ProjectiveMeasurement(4, 3, orthonormal=True, generator=g),
                                          lambda m, r: m(_states(r))),
    "POVMMeasurement": (lambda g: POVMMeasurement(4, 6, generator=g), lambda m, r: m(_states(r))),
    "POVMMeasurement square": (lambda g: POVMMeasurement(4, 2, generator=g), lambda m, r: m(_states(r))),
}

MOVES = {"double()": lambda m: m.double(), "to(torch.float64)": lambda m: m.to(torch.float64),
         "to('cpu', torch.complex128)": lambda m: m.to("cpu", torch.complex128),
         "type(torch.DoubleTensor)": lambda m: m.type("torch.DoubleTensor")}


def _public_module_classes() -> set[type]:
    return {obj for package in (qpnlp.nn, qpnlp.measurement) for obj in map(package.__dict__.get, package.__all__)
            if inspect.isclass(obj) and issubclass(obj, nn.Module)}


def test_every_public_module_reads_a_dtype_as_a_precision_and_has_a_case():
    classes = _public_module_classes()
    plain = sorted(cls.__name__ for cls in classes if not issubclass(cls, ComplexPrecisionMixin))
    assert not plain, f"base {plain} on qpnlp._module_precision.ComplexPrecisionMixin (before nn.Module)"
    built = [build(torch.Generator().manual_seed(0)) for build, _ in CASES.values()]
    missing = sorted(cls.__name__ for cls in classes if not any(isinstance(m, cls) for m in built))
    assert not missing, f"add a row to CASES for {missing}"


def _tensors(module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def _precision(dtype: torch.dtype) -> torch.dtype:
    return dtype.to_real() if dtype.is_complex else dtype


def _outputs(result) -> list[torch.Tensor]:
    return [t for t in (result if isinstance(result, tuple) else (result,)) if t.is_floating_point() or t.is_complex()]


def _orthogonal_bases(module) -> set[str]:
    """Names of the bases :math:`W_0` of the module's torch ``orthogonal`` parametrisations, :math:`W = W_0 Q(A)`
    (an orthonormal ProjectiveMeasurement, a POVMMeasurement, a StateTransition ``"expm"`` / ``"cayley"``), found
    as the library finds the one it widens (``qpnlp._module_precision.orthogonal_parametrization``)."""
    found = {id(p) for sub in module.modules() if (p := orthogonal_parametrization(sub)) is not None}
    return {f"{name}.base" for name, sub in module.named_modules() if id(sub) in found}


#: The cases that hold torch ``orthogonal`` parametrisations with a base, and the bases' names (others: none).
ORTHOGONAL_BASES = {**{case: {"parametrizations.weight.0.base"} for case in (
                        "StateTransition expm", "StateTransition cayley", "ProjectiveMeasurement orthonormal",
                        "POVMMeasurement", "POVMMeasurement square")},
                    "CGRNNCell": {"transition.parametrizations.weight.0.base"},
                    "CGRNN": {"cell.transition.parametrizations.weight.0.base"}}


@pytest.mark.parametrize("case", list(CASES))
def test_the_orthogonal_bases_are_found_without_torchs_private_class(case):
    """:func:`_orthogonal_bases` found the bases by torch's private ``parametrizations._Orthogonal``; it asks the
    library's :func:`~qpnlp._module_precision.orthogonal_parametrization` (public torch API) now, and finds the
    same bases: those of every orthogonal parametrisation, none where a module has none (``"skew_expm"``'s
    exponential, ``"cayley_step"``, a plain weight)."""
    module = CASES[case][0](torch.Generator().manual_seed(0))
    assert _orthogonal_bases(module) == ORTHOGONAL_BASES.get(case, set())
    assert orthogonal_parametrization(qn.StateTransition(3, "skew_expm")) is None


def _unitarity_error(base: torch.Tensor) -> float:
    """max |W_0^dagger W_0 - I| of a square base (or a ``"cayley_step"`` weight)."""
    base = base.detach()                        # a parameter (the "cayley_step" weight): no scalar-of-grad warning
    return float((base.mH @ base - torch.eye(base.shape[-1], dtype=base.dtype)).abs().amax())


def _assert_moved(module, before: dict[str, torch.Tensor], real: torch.dtype) -> None:
    """Every complex tensor still complex, every tensor at precision ``real``, the dtype a layer remembers moved
    with them, and the values those of ``before``: exact (float32 values are float64 values) for every tensor but
    the bases of the registered orthogonal / unitary parametrisations (:func:`_orthogonal_bases`) and the plain
    unitary weight of a ``"cayley_step"`` StateTransition. Those are re-orthonormalised when the move widens them
    (as Projector and SememeBasis are): after ``double()`` unitary to float64's round-off (max |W_0^dagger W_0 - I|
    < 1e-14), and both ways within float32's tolerance of the single-precision values (a round trip gives them
    back to float32's round-off, not bit for bit)."""
    after = _tensors(module)
    bases = _orthogonal_bases(module) | {f"{name}.weight".lstrip(".") for name, sub in module.named_modules()
                                         if isinstance(sub, qn.StateTransition) and sub.mode == "cayley_step"}
    assert after.keys() == before.keys()
    for name, t in after.items():
        old = before[name]
        if not (old.is_floating_point() or old.is_complex()):
            assert t.dtype == old.dtype, name
            continue
        assert t.is_complex() == old.is_complex() and _precision(t.dtype) == real, (name, old.dtype, t.dtype)
        exact = name not in bases
        atol = 0 if exact else tolerance(torch.float32, t.shape[-1])
        torch.testing.assert_close(t, old.to(t.dtype), rtol=0, atol=atol, msg=name)
        if not exact and real == torch.float64:
            assert _unitarity_error(t) < 1e-14, (name, _unitarity_error(t))
    held = module.__dict__.get("dtype")
    if isinstance(held, torch.dtype):
        assert _precision(held) == real, held


@pytest.mark.parametrize("move", list(MOVES))
@pytest.mark.parametrize("case", list(CASES))
def test_a_module_moved_to_double_precision_keeps_complex_tensors_complex(case, move):
    build, run = CASES[case]
    module = build(torch.Generator().manual_seed(0)).eval()
    single = {name: t.detach().clone() for name, t in _tensors(module).items()}
    expected = _outputs(run(module, torch.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # torch's "Casting complex values to real discards the imaginary part"
        assert MOVES[move](module) is module
    _assert_moved(module, single, torch.float64)
    wide = _outputs(run(module, torch.float64))
    assert [_precision(t.dtype) for t in wide] == [torch.float64] * len(wide)
    assert [t.is_complex() for t in wide] == [t.is_complex() for t in expected]
    for w, e in zip(wide, expected):                                  # the float32 result, to float32's round-off
        torch.testing.assert_close(w.to(e.dtype), e, rtol=1e-4, atol=1e-5)
    assert module.float() is module
    _assert_moved(module, single, torch.float32)                     # back to the very float32 values
    assert [_precision(t.dtype) for t in _outputs(run(module, torch.float32))] == [torch.float32] * len(wide)


@pytest.mark.parametrize("case", list(CASES))
def test_a_module_refuses_half_precision(case):
    module = CASES[case][0](torch.Generator().manual_seed(0))
    for refused in (module.half, module.bfloat16, lambda: module.to(torch.float16)):
        with pytest.raises(TypeError, match="half precision has no complex counterpart|float64/complex128 only"):
            refused()
    assert all(_precision(t.dtype) == torch.float32 for t in _tensors(module).values()
               if t.is_floating_point() or t.is_complex())
