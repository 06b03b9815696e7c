"""qpnlp._trig: the compiled loop's (numba) and numpy's float32 cosine and sine stand in for torch's with errors of
the same size; every test of the large-tensor paths runs on both."""

from __future__ import annotations

import math
import sys
import types
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qpnlp import _numba, _trig

ULP_OF_ONE = torch.finfo(torch.float32).eps
PATHS = ["compiled", "numpy", "torch"] if _numba.HAVE_NUMBA else ["numpy", "torch"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """The large-tensor path under test: the compiled loop (numba), numpy's ufuncs (taken on AVX-512 CPUs, here
    whatever the CPU) or torch's kernels (no numba, no AVX-512)."""
    monkeypatch.setenv("QPNLP_COMPILED", "1")
    monkeypatch.setenv("QPNLP_TRIG_COMPILED", "1" if request.param == "compiled" else "0")
    monkeypatch.setattr(_trig, "NUMPY_SIMD_TRIG", request.param == "numpy")
    return request.param


def _angles(n: int, limit: float, seed: int = 0) -> torch.Tensor:
    return (torch.rand(n, generator=torch.Generator().manual_seed(seed)) * 2 - 1) * limit


@pytest.mark.parametrize("limit", [1.0, 10.0, 1e3, 1e4, 1e5])
def test_float32_values_are_within_an_ulp_of_one_of_the_float64_reference(limit, path):
    x = _angles(50_000, limit)
    assert _trig._compiled_path(x) == (path == "compiled") and _trig._numpy_path(x) == (path == "numpy")
    for cos, sin in (_trig.cos_sin(x), (_trig.cos(x), _trig.sin(x))):
        assert cos.dtype == sin.dtype == torch.float32 and cos.shape == sin.shape == x.shape
        assert float((cos.double() - torch.cos(x.double())).abs().max()) < ULP_OF_ONE
        assert float((sin.double() - torch.sin(x.double())).abs().max()) < ULP_OF_ONE


def _near(base: float) -> st.SearchStrategy:
    """float32 ``base`` and its two neighbours: where a reduction by pi/2 cancels most digits."""
    b = np.float32(base)
    return st.sampled_from([float(np.nextafter(b, np.float32(-np.inf))), float(b),
                            float(np.nextafter(b, np.float32(np.inf)))])


#: Angles where a polynomial sine hides its bugs: any float32 (signed zeros, subnormals, NaN, infinities, huge),
#: near multiples of pi/2 up to the reduction's limit (8192) and beyond it, at +-2^k pi, and about [-pi/4, pi/4].
ANGLES = st.one_of(
    st.floats(width=32),
    st.integers(-6000, 6000).flatmap(lambda k: _near(k * math.pi / 2)),
    st.integers(-4, 16).flatmap(lambda k: _near(2.0 ** k * math.pi) | _near(-(2.0 ** k) * math.pi)),
    st.floats(-1.0, 1.0, width=32),
)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ANGLES, min_size=1, max_size=64))
@example(angles=[-0.0, 0.0, -1e-45])
def test_fuzzed_angles_agree_with_the_float64_reference(path, angles):
    """Within an ulp of one everywhere, within an ulp of the value on [-pi/4, pi/4] (no reduction there), NaN where
    torch gives NaN and the sign of a zero sine as torch's: sin(-0) = -0 (the compiled loop's reduction gave +0)."""
    x = torch.tensor(angles, dtype=torch.float32).repeat(-(-_trig.NUMPY_MIN_NUMEL // len(angles)))
    cos, sin = _trig.cos_sin(x)
    for got, fn in ((cos, torch.cos), (sin, torch.sin)):
        want, exact = fn(x), fn(x.double())
        assert torch.equal(got.isnan(), want.isnan())
        assert float((got.double() - exact).abs().nan_to_num().max()) < ULP_OF_ONE
        ulps = (got.double() - exact).abs() / (ULP_OF_ONE * exact.abs().clamp_min(torch.finfo(torch.float32).tiny))
        assert float(torch.where(x.abs() <= math.pi / 4, ulps, 0).max()) <= 1.0
        assert torch.equal(got[want == 0].signbit(), want[want == 0].signbit())


def test_large_float32_cpu_tensors_get_a_new_tensor_and_torch_s_values_where_no_faster_path_applies(path):
    x = _angles(_trig.NUMPY_MIN_NUMEL, 4.0)
    assert _trig._large_float32(x)
    if path == "torch":
        assert torch.equal(_trig.cos(x), torch.cos(x)) and torch.equal(_trig.sin(x), torch.sin(x))
    before = x.clone()
    out = _trig.cos(x)
    assert out.data_ptr() != x.data_ptr() and torch.equal(x, before)


def test_non_contiguous_inputs_keep_their_shape_and_values(path):
    x = _angles(2 * 3 * 4096, 6.0).view(2, 3, 4096).transpose(0, 2)
    assert not x.is_contiguous()
    torch.testing.assert_close(_trig.sin(x), torch.sin(x), atol=2 * ULP_OF_ONE, rtol=0)
    assert _trig.sin(x).shape == x.shape


@pytest.mark.parametrize("x", [
    _angles(10, 3.0),                                   # small: torch
    _angles(10_000, 3.0).double(),                      # float64: torch (numpy's float64 kernels are slower)
    _angles(10_000, 3.0).half(),
], ids=["small", "float64", "float16"])
def test_other_tensors_get_torch_bit_for_bit(x, path):
    assert not _trig._large_float32(x) and not _trig._numpy_path(x) and not _trig._compiled_path(x)
    assert torch.equal(_trig.cos(x), torch.cos(x)) and torch.equal(_trig.sin(x), torch.sin(x))


def test_a_tensor_that_needs_a_gradient_keeps_its_autograd_graph():
    x = _angles(10_000, 3.0).requires_grad_()
    y = _trig.sin(x)
    assert y.grad_fn is not None
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.cos(x.detach()))
    with torch.no_grad():
        assert _trig._large_float32(x)


def test_non_finite_angles_give_nan_like_torch_without_a_warning(path):
    x = torch.zeros(_trig.NUMPY_MIN_NUMEL)
    x[:3] = torch.tensor([float("inf"), float("nan"), -float("inf")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cos, sin = _trig.cos_sin(x)
    assert torch.isnan(cos[:3]).all() and torch.isnan(sin[:3]).all()
    assert torch.equal(cos[3:], torch.ones(x.numel() - 3))


def test_code_that_torch_compile_traces_gets_torch_ops_in_one_graph():
    """A numpy call would break the graph (fullgraph=True raises on a break); traced, the functions are torch's."""
    torch._dynamo.reset()
    traced = torch.compile(lambda x: _trig.cos(x) + _trig.sin(x), fullgraph=True, backend="eager")
    x = _angles(_trig.NUMPY_MIN_NUMEL, 4.0)
    torch.testing.assert_close(traced(x), torch.cos(x) + torch.sin(x))


def test_the_cpu_feature_table_is_read_under_numpy_1_too(monkeypatch):
    """numpy 1.x (pyproject allows 1.24) has the table at ``numpy.core._multiarray_umath``, numpy 2 at
    ``numpy._core``: reading only the new name left numpy's AVX-512 kernels unused under numpy 1."""
    monkeypatch.setitem(sys.modules, "numpy._core._multiarray_umath", None)          # as under numpy 1: ImportError
    old = types.SimpleNamespace(__cpu_features__={"AVX512F": True})
    monkeypatch.setitem(sys.modules, "numpy.core._multiarray_umath", old)
    assert _trig._has_avx512()
    old.__cpu_features__["AVX512F"] = False
    assert not _trig._has_avx512()
    monkeypatch.setitem(sys.modules, "numpy.core._multiarray_umath", None)           # neither: off
    assert not _trig._has_avx512()
