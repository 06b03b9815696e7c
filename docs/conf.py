"""Sphinx configuration of the qpnlp documentation.

Build locally (warnings are errors, as in the test suite)::

    .venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html

The concept pages are MyST markdown with ``$...$`` / ``$$...$$`` maths; the
API reference (``docs/api/*.rst``) is generated from the numpydoc docstrings
by autodoc + napoleon. Maths renders with MathJax.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the package from this checkout, installed or not
os.environ.setdefault("OMP_NUM_THREADS", "1")

import qpnlp  # noqa: E402

project = "qpnlp"
author = "qpnlp contributors"
copyright = "qpnlp contributors"
release = version = qpnlp.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# notebooks/ is written and executed by the test suite elsewhere (no nbsphinx here)
exclude_patterns = ["_build", "notebooks", "README.md", "**/.ipynb_checkpoints"]

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

# --- HTML
html_theme = "alabaster"
html_title = f"qpnlp {release}"
html_theme_options = {"description": "Quantum-probability NLP in PyTorch", "fixed_sidebar": True}
