"""Cross-references of the API reference resolve: the site builds nitpicky, ignoring only what lies outside qpnlp, and
no docstring's example is read by napoleon as a parameter or an exception (a garbled entry instead of code).

The build itself (every reference resolved, warnings as errors) is tests/test_docs_site.py; these tests are fast.
"""

import ast
import importlib.util
import inspect
import re
from pathlib import Path

from sphinx.ext.napoleon import Config
from sphinx.ext.napoleon.docstring import NumpyDocstring

CONF = Path(__file__).resolve().parents[1] / "docs" / "conf.py"
_SPEC = importlib.util.spec_from_file_location("_qpnlp_test_docstrings", Path(__file__).with_name("test_docstrings.py"))
_DOCSTRINGS = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_DOCSTRINGS)   # its walk over the docstrings the API reference renders
FIELD = re.compile(r"^:(param|type|raises|returns|rtype|ivar|vartype)\b[^:]*:")


def _nitpick_settings() -> dict:
    """``nitpicky``, ``nitpick_ignore`` and ``nitpick_ignore_regex`` of docs/conf.py (its other lines not run)."""
    wanted = {"_OUTSIDE", "nitpicky", "nitpick_ignore", "nitpick_ignore_regex"}
    tree = ast.parse(CONF.read_text(encoding="utf-8"))
    body = [n for n in tree.body if isinstance(n, ast.Assign) and {getattr(t, "id", "") for t in n.targets} & wanted]
    namespace: dict = {}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(CONF), "exec"), namespace)
    return namespace


def _ignored(settings: dict, role: str, target: str) -> bool:
    return (role, target) in set(settings["nitpick_ignore"]) or any(
        re.fullmatch(r, role) and re.fullmatch(t, target) for r, t in settings["nitpick_ignore_regex"])


def test_the_site_is_built_nitpicky():
    assert _nitpick_settings()["nitpicky"] is True


def test_nitpick_ignores_outside_names_and_type_words_but_no_qpnlp_name():
    settings = _nitpick_settings()
    outside = [("py:class", "torch.Tensor"), ("py:class", "numpy.ndarray"), ("py:meth", "str.splitlines"),
               ("py:class", "optional"), ("py:class", "default 0.1"), ("py:class", "B"), ("py:class", '{"a"'),
               ("py:class", "Tensor"), ("py:mod", "matplotlib.pyplot")]
    assert [o for o in outside if not _ignored(settings, *o)] == []
    qpnlp = [("py:class", "qpnlp.models.Typo"), ("py:func", "qpnlp.hilbert.no_such_function"),
             ("py:class", "PureState"), ("py:meth", "POVM.from_frame"), ("py:data", "TPE_BASE"),
             ("py:func", "row_indices"), ("py:attr", "VectorSet.scale"), ("py:exc", "ConfigError")]
    assert [q for q in qpnlp if _ignored(settings, *q)] == []


def _doctests_read_as_fields(doc: str) -> list[str]:
    config = Config(napoleon_google_docstring=False, napoleon_numpy_docstring=True, napoleon_use_rtype=False,
                    napoleon_use_ivar=True)
    lines = str(NumpyDocstring(inspect.cleandoc(doc), config)).splitlines()
    return [line for line in lines if FIELD.match(line) and ">>>" in line]


def test_no_example_is_read_as_a_parameter_or_an_exception():
    """A doctest right after ``Parameters`` or ``Raises`` needs its ``Examples`` header: napoleon would list
    ``>>> f(1)`` as a parameter (or an exception) named after the code."""
    docs = _DOCSTRINGS._rendered_docstrings()
    garbled = {name: found for name, doc in docs.items() if (found := _doctests_read_as_fields(doc))}
    assert not garbled, f"examples without an Examples header: {garbled}"


def test_the_field_reader_finds_a_doctest_after_parameters():
    doc = "Twice.\n\nParameters\n----------\nx : int\n    A number.\n\n>>> twice(2)\n4\n"
    assert _doctests_read_as_fields(doc) == [":param >>> twice(2):"]
    fixed = doc.replace(">>> twice", "Examples\n--------\n>>> twice")
    assert _doctests_read_as_fields(fixed) == []
