"""Shared pytest configuration.

The device under test is chosen with ``--device`` or the ``QPNLP_TEST_DEVICE``
environment variable (default ``cpu``), so the same suite runs on a GPU machine:
``QPNLP_TEST_DEVICE=cuda python -m pytest``.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

from qpnlp._threads import torch_threads
from qpnlp.testing import default_atol

# The suite's profile draws the same 40 examples per property on every run (derandomize: a seed from the test's
# source), so a run's verdict is the code's, not the draw's; "explore" draws 500 fresh ones per run to look for
# counterexamples (a property's own smaller max_examples is raised to it: pytest_collection_modifyitems):
#     HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest -n auto --dist loadscope
settings.register_profile(
    "qpnlp", max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "explore", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "qpnlp"))


def pytest_collection_modifyitems(items):
    """Under "explore" every property draws the profile's examples. hypothesis keeps a test's own
    ``@settings(max_examples=...)`` over any profile's, and 19 properties size themselves for the suite's run (3 to
    60 examples), so explore drew 25 fresh ones for the fused SGD step, whose too-tight bound took some 4000 to show."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "explore":
        for item in items:
            _draw_the_profiles_examples(getattr(item, "function", None))


def _draw_the_profiles_examples(test) -> None:
    """Raise a property's ``max_examples`` to the loaded profile's; its other settings stay. hypothesis reads a
    property's settings from the attribute ``_hypothesis_internal_use_settings`` at each call (it has no public way
    to put a profile above a test's own settings); tests/test_property_tests.py checks that this still works."""
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if own is not None and own.max_examples < settings.default.max_examples:
        test._hypothesis_internal_use_settings = settings(own, max_examples=settings.default.max_examples)


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        default=os.environ.get("QPNLP_TEST_DEVICE", "cpu"),
        help="torch device the numeric tests run on (default: $QPNLP_TEST_DEVICE or cpu)",
    )


@pytest.fixture(scope="session")
def device(request) -> torch.device:
    dev = torch.device(request.config.getoption("--device"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        pytest.exit("--device cuda requested but CUDA is not available", returncode=2)
    return dev


@pytest.fixture(scope="session", params=[torch.complex64, torch.complex128], ids=["c64", "c128"])
def cdtype(request) -> torch.dtype:
    """Every numeric test runs in complex64 and complex128."""
    return request.param


@pytest.fixture(scope="session")
def tol(cdtype):
    """Tolerance table (qpnlp.testing.default_atol): ``tol(d)`` for d-dimensional results."""
    return lambda dim=1: default_atol(cdtype, dim)


@pytest.fixture(scope="session")
def data_root():
    """Root of the benchmark data (``QPNLP_DATA``); skips when it is unset."""
    root = os.environ.get("QPNLP_DATA")
    if not root:
        pytest.skip("QPNLP_DATA is not set; point it at the shared benchmark data to run this test")
    return root


# Every test runs single-threaded: the suite's tensors are small, so intra-op threads add synchronisation more than
# speed, and beside busy processes OpenMP waits on descheduled threads (2026-11-29, two 1-thread jobs on the 2 cores:
# the training of `qpnlp train real-bow --dataset trec --epochs 2` took 8 s with one thread, 11-15 s with torch's two;
# quiet: tests/test_cli.py and tests/training/test_resume.py took 47 s with one, 50 s with two). Tests that start
# processes pass OMP_NUM_THREADS=1 themselves.
@pytest.fixture(scope="session", autouse=True)
def single_thread():
    with torch_threads(1):
        yield


def _copied_inside(func, args) -> list:
    """The inputs that ``func`` copies whole inside its kernel, where a dispatch mode does not see the copy: torch's
    CPU ``bmm`` resolves a conjugate view before it multiplies, and ``linalg_qr`` factors a copy of its input."""
    aten = torch.ops.aten
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if func in (aten.bmm.default, aten.baddbmm.default, aten.baddbmm_.default):
        return [t for t in tensors if t.is_conj()]
    return tensors[:1] if func is aten.linalg_qr.default else []


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


class _LargestTensor:
    """A dispatch mode recording the most entries of any tensor an operation makes while active (``.largest``): a
    result that is not a view of an input, or a copy the kernel makes inside (``_copied_inside``). The tests that a
    computation never builds a large intermediate (a d x d density matrix, an n x n Gram, a copy of a batch of
    states); views (``.mT``, ``view_as_real``, slices) allocate nothing and do not count."""

    def __new__(cls):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves

        class Mode(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.largest = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                inputs = {_storage(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
                made = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and _storage(t) not in inputs]
                made += _copied_inside(func, args)
                self.largest = max([self.largest, *(t.numel() for t in made)])
                return out

        return Mode()


class _DispatchedOps:
    """A dispatch mode noting the name of every torch op run inside (``.names``: ``func.__name__``, e.g.
    ``"amin.default"``)."""

    def __new__(cls):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Mode(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.names = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.names.append(func.__name__)
                return func(*args, **(kwargs or {}))

        return Mode()


@pytest.fixture
def dispatched_ops():
    """``with dispatched_ops() as ops: ...``, then ``ops.names``: the torch ops run inside, by name
    (``"aminmax.default"``)."""
    return _DispatchedOps


@pytest.fixture
def largest_tensor():
    """``with largest_tensor() as seen: ...``, then ``seen.largest``: the most entries of a tensor made inside."""
    return _LargestTensor


def _check_forward_mode(function, theta: torch.Tensor, step: float = 1e-6) -> None:
    """``torch.func.jvp`` of ``function`` (real ``theta`` (p,) -> real (...)) equals central differences and the
    ``jacrev`` Jacobian applied to the tangent; ``jacfwd`` equals ``jacrev`` (float64)."""
    from torch.func import jacfwd, jacrev, jvp

    v = torch.randn(theta.shape, dtype=theta.dtype, generator=torch.Generator().manual_seed(1))
    value, tangent = jvp(function, (theta,), (v,))
    torch.testing.assert_close(value, function(theta))
    central = (function(theta + step * v) - function(theta - step * v)) / (2 * step)
    torch.testing.assert_close(tangent, central, rtol=1e-6, atol=1e-7)
    reverse = jacrev(function)(theta)
    torch.testing.assert_close(tangent, reverse @ v, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(jacfwd(function)(theta), reverse, rtol=1e-10, atol=1e-12)


@pytest.fixture
def check_forward_mode():
    """``check_forward_mode(function, theta)``: forward-mode AD against finite differences and ``jacrev``."""
    return _check_forward_mode


def _neg_bit(x: torch.Tensor) -> torch.Tensor:
    """``x``'s values with torch's lazy negative bit set: the imaginary part of a conjugate view."""
    return torch.complex(torch.zeros_like(x), -x).conj().imag


#: Real tensors as torch users hold them, each with the values of the plain tensor (bfloat16: for values it holds).
_REAL_LAYOUTS = {
    "requires_grad": lambda x: x.clone().requires_grad_(),
    "neg_bit": _neg_bit,
    "strided": lambda x: torch.stack([x, torch.full_like(x, 7.0)], -1)[..., 0],
    "inference": lambda x: _inference_copy(x),
    "bfloat16": lambda x: x.to(torch.bfloat16),
}


def _inference_copy(x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return x.clone()


@pytest.fixture(params=sorted(_REAL_LAYOUTS))
def real_layout(request):
    """``real_layout(x)``: float ``x`` (values a bfloat16 holds) as a tensor of another layout, the same values: one
    that requires grad, one with the negative bit (``z.conj().imag``), strided, made under inference mode, bfloat16."""
    return _REAL_LAYOUTS[request.param]
