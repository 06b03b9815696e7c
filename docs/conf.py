"""Sphinx configuration of the qpnlp documentation.

Build locally (warnings are errors, as in the test suite)::

    .venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html

The concept pages are MyST markdown with ``$...$`` / ``$$...$$`` maths; the
API reference (``docs/api/*.rst``) is generated from the numpydoc docstrings
by autodoc + napoleon. Maths renders with MathJax, copied into the build from
the ``sphinx-mathjax-offline`` package (no CDN: the pages work offline).

The notebooks in ``notebooks/`` are stored without outputs and executed at
build time by myst-nb, cached in ``docs/_build/.jupyter_cache`` under a key
that changes with the notebooks and the qpnlp sources (an unchanged checkout
rebuilds in seconds). ``notebooks/cnm.ipynb`` trains on the benchmark data:
it is executed only when ``QPNLP_DATA`` is set and shown without outputs
otherwise. The benchmark result pages (``benchmarks/``) include the
summaries of ``benchmarks/results/`` from the repository.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the package from this checkout, installed or not
# The notebook kernels inherit this environment: the same package, one thread each, no GUI backend.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import qpnlp  # noqa: E402

project = "qpnlp"
author = "qpnlp contributors"
copyright = "qpnlp contributors"
release = version = qpnlp.__version__

extensions = [
    "myst_nb",                   # MyST markdown (it loads myst_parser) and the notebooks, executed
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",    # MathJax 3 from a Python package into _static/mathjax (no CDN)
    "sphinx.ext.viewcode",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "**/.ipynb_checkpoints", "tutorials/*.py"]


# --- notebooks (myst-nb): executed at build time, cached, errors fail the build
def _source_key() -> str:
    """A hash of the notebooks and the qpnlp sources: cached outputs never outlive the code that made them."""
    digest = hashlib.sha256()
    files = sorted((ROOT / "qpnlp").rglob("*.py")) + sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "docs" / "_build" / ".jupyter_cache" / _source_key())
nb_execution_timeout = 600                      # seconds per cell
nb_execution_raise_on_error = True              # a failing cell fails the build
nb_execution_show_tb = True
nb_execution_excludepatterns = [] if os.environ.get("QPNLP_DATA") else ["notebooks/cnm.ipynb"]
nb_merge_streams = True
nb_output_stderr = "show"
nb_render_markdown_format = "gfm"              # Markdown outputs (display(Markdown(...))) may hold tables

# --- MyST: LaTeX maths in markdown ($...$, $$...$$ and bare amsmath environments)
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# --- autodoc + napoleon (the library's docstrings are numpydoc)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
napoleon_include_init_with_doc = False
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_inherit_docstrings = False  # nn.Module.forward & co. would otherwise fill undocumented methods
autoclass_content = "class"
add_module_names = False
python_use_unqualified_type_names = True

# --- nitpicky: a cross-reference that resolves nowhere is a warning (an error in the -W build of the tests), so a
# mistyped, renamed or private qpnlp name fails the build instead of rendering as plain text. Ignored: what lies outside
# the documented package (no intersphinx: its inventories need the network) and the words Sphinx cuts out of napoleon's
# free-form types ("int, default 0", "torch.Tensor, shape (B, L)", '{"a", "b"}'). No documented qpnlp name is ignored.
nitpicky = True
_OUTSIDE = ("torch", "numpy", "scipy", "pandas", "matplotlib", "sklearn", "hypothesis", "qutip",  # libraries
            "rank_bm25", "collections", "typing", "os", "pathlib", "argparse", "datetime", "tempfile", "str")  # stdlib
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(_OUTSIDE)})(\..+)?"),
    (r"py:class", r".*[^\w.].*|\d.*"),               # not a dotted name: prose, literals, defaults, "D/2"
    (r"py:class", r"[a-z_][a-z0-9_]*"),               # numpydoc's type words (optional, sequence, array), axis names
    (r"py:class", r"[A-Z][a-z]?"),                    # a shape's axis symbol: B, L, D, Lq
    (r"py:class", r"Tensor|LongTensor|BoolTensor|Path|Axes|Qobj|SearchStrategy"),  # torch, pathlib, ... in short
]
nitpick_ignore = [  # type variables of generic signatures (autodoc names them; they document nothing)
    ("py:class", "qpnlp.models.base._ModelT"), ("py:class", "qpnlp.nn._scan.State"),
    ("py:class", "qpnlp.word2fun.distributed.T"),
]

# --- HTML: furo (previous/next links, a readable measure, no remote assets); code wraps instead of scrolling
html_theme = "furo"
html_title = f"qpnlp {release}"
html_static_path = ["_static"]
html_css_files = ["qpnlp.css"]
html_theme_options = {"navigation_with_keys": True, "top_of_page_buttons": []}
html_show_sourcelink = False
pygments_style = "friendly"
pygments_dark_style = "monokai"


# --- cross-references to re-exported names: ``:func:`qpnlp.interpret.helstrom``` links to the page of
# ``qpnlp.interpret.optimal.helstrom``, where autodoc documented it (Sphinx alone leaves it as plain text).
def _documented_at(module: str, qualname: str, rest: list[str]) -> list[str]:
    """``module.qualname.rest``, or where ``module`` is private (``qpnlp.nn._scan``) that name in the public modules
    whose ``__all__`` exports the object (``qpnlp.nn.recurrent``: autodoc documents it where it is re-exported)."""
    import sys

    if not any(part.startswith("_") for part in module.split(".")):
        return [".".join([module, qualname, *rest])]
    head = qualname.split(".")[0]
    obj = getattr(sys.modules.get(module), head, None)
    return [".".join([m, qualname, *rest]) for m, public in sorted(sys.modules.items())
            if m.startswith("qpnlp.") and not any(part.startswith("_") for part in m.split("."))
            and head in getattr(public, "__all__", ()) and getattr(public, head, None) is obj]


def _homes(target: str) -> list[str]:
    """Where ``target`` (``qpnlp.pkg.name[.attr]``) may be documented: its defining module (or the public modules
    that re-export it from a private one), or for a constant the public submodules of the package that export the
    same object."""
    import importlib
    import sys

    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        parent = None
        for depth, part in enumerate(parts[split:], start=split):
            home = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
            if depth > split and all(isinstance(h, str) for h in home) and home[0].startswith("qpnlp."):
                return _documented_at(*home, parts[depth:])   # a class or function: continue from where it lives
            if not hasattr(obj, part):
                return []
            parent, obj = obj, getattr(obj, part)
        home = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if all(isinstance(h, str) for h in home):
            return _documented_at(*home, []) if home[0].startswith("qpnlp.") else []
        prefix, name = f"{getattr(parent, '__name__', '')}.", parts[-1]
        if not prefix.startswith("qpnlp."):     # torch.float64 in a qpnlp module: torch.classes' __all__ is no list
            return []
        return [f"{m}.{name}" for m, module in sorted(sys.modules.items())
                if m.startswith(prefix) and name in getattr(module, "__all__", ()) and getattr(module, name) is obj]
    return []


def _resolve_reexport(app, env, node, contnode):
    """The ``missing-reference`` hook: retry a ``qpnlp.*`` Python target where the object is documented."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    candidates = [target] if target.startswith("qpnlp.") else []
    if node.get("py:module") and not target.startswith("qpnlp."):
        candidates.append(f"{node['py:module']}.{target}")
    for name in candidates:
        for home in _homes(name):
            if home == name:
                continue
            found = env.domains["py"].resolve_xref(env, node["refdoc"], app.builder, node["reftype"], home, node,
                                                   contnode)
            if found is not None:
                return found
    return None


def _public_bases(app, name, obj, options, bases) -> None:
    """``Bases:`` names the nearest public classes: a private helper (``qpnlp.hilbert._batched.Batched``) has no
    entry."""
    def private(cls) -> bool:
        parts = [*getattr(cls, "__module__", "").split("."), getattr(cls, "__name__", "")]
        return isinstance(cls, type) and parts[0] == "qpnlp" and any(p.startswith("_") for p in parts)

    public, todo = [], list(bases)
    while todo:
        cls = todo.pop(0)
        if private(cls):
            todo[:0] = [b for b in cls.__bases__ if b is not object]
        elif cls not in public:
            public.append(cls)
    bases[:] = public or [object]


def setup(app):
    app.connect("missing-reference", _resolve_reexport)
    app.connect("autodoc-process-bases", _public_bases)
