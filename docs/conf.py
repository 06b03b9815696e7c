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

# --- HTML: furo (previous/next links, a readable measure, no remote assets); code wraps instead of scrolling
html_theme = "furo"
html_title = f"qpnlp {release}"
html_static_path = ["_static"]
html_css_files = ["qpnlp.css"]
html_theme_options = {"navigation_with_keys": True, "top_of_page_buttons": []}
html_show_sourcelink = False
pygments_style = "friendly"
pygments_dark_style = "monokai"
