"""The suite's property tests (hypothesis): explore draws the profile's examples for every property, and a property
draws its random values through hypothesis, so that the suite's derandomised run draws the same ones every time."""

import ast
import os
import pathlib
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

TESTS = pathlib.Path(__file__).parent
#: torch's samplers, which draw from the global generator unless given ``generator=``.
SAMPLERS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
            "multinomial", "poisson", "exponential_", "uniform_", "normal_", "random_", "bernoulli_", "cauchy_",
            "geometric_", "log_normal_"}


@settings(max_examples=3)
@given(st.integers())
def test_a_property_sized_for_the_suite(n):
    assert isinstance(n, int)


def _examples(profile: str | None) -> str:
    """hypothesis' statistics line for :func:`test_a_property_sized_for_the_suite` run under ``profile``."""
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    env.update({"HYPOTHESIS_PROFILE": profile} if profile else {})
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                          f"{__file__}::test_a_property_sized_for_the_suite", "--hypothesis-show-statistics"],
                         capture_output=True, text=True, env=env, cwd=TESTS.parent, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return next(line for line in run.stdout.splitlines() if "passing" in line)


def test_explore_draws_the_profiles_examples_for_a_property_of_its_own_size():
    """hypothesis keeps a test's ``@settings(max_examples=3)`` over any profile: explore drew 3 fresh examples for
    it, and 25 for the fused SGD step's property, whose too-tight bound took some 4000 to show."""
    assert "- 3 passing" in _examples(None)
    assert "- 500 passing" in _examples("explore")


def _unseeded_draws(tree: ast.AST) -> list[tuple[str, int]]:
    """``(test, line)`` of each call to a torch sampler without ``generator=`` in the body of a ``@given`` test."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "given" for d in node.decorator_list):
            found += [(node.name, call.lineno) for call in ast.walk(node) if isinstance(call, ast.Call)
                      and getattr(call.func, "attr", None) in SAMPLERS
                      and "generator" not in {k.arg for k in call.keywords}]
    return found


def test_properties_draw_their_tensors_from_seeds_hypothesis_draws():
    """hypothesis does not seed torch's global generator, so a property's ``torch.randn(6)`` drew other values on
    every run (as the tests before it left the generator), derandomised or not, and a found case did not replay
    (four properties did, one of them the fuzzed Adam step whose case CI found)."""
    unseeded = {str(path.relative_to(TESTS)): draws for path in sorted(TESTS.rglob("test_*.py"))
                if (draws := _unseeded_draws(ast.parse(path.read_text(encoding="utf-8"))))}
    assert unseeded == {}
