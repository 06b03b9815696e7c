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


# --- Temporary: docstrings that docutils rejects, in modules other engineers are editing now
# (qpnlp/models/complex_order.py, qpnlp/models/word2fun.py, qpnlp/interpret/ann.py). Until their
# source is fixed, the build applies exactly these fixes to those modules' docstrings and nothing
# else; no warning is suppressed. Each fix applies only to text it matches exactly (a table: the same
# words whatever the spacing), so it does nothing once the source is fixed or changed; the build then
# logs that the entry can go. Delete an entry when its source is fixed.
_TABLE, _REPLACE = "table", "replace"
_PENDING_DOCSTRING_FIXES = {
    # "Malformed table: text in column margin": re-align the columns
    "qpnlp.models.word2fun": [(_TABLE, [
        ("family", r":math:`f(u, \tau)`", "parameters"),
        ("static", r":math:`B_u`", "VD"),
        ("sliced", r":math:`B_{u, s(\tau)}` (one vector per time slice, a baseline)", "SVD"),
        ("linear", r":math:`B_u + K_u \tau`", "2VD"),
        ("time2fun", r":math:`B_u + \sin(\Omega \tau)`, :math:`\Omega \in \mathbb{R}^D` shared", "VD + D"),
        ("II", r":math:`B_u + R_u [\sin(\Omega\tau); \cos(\Omega\tau)]`, fixed", ""),
        ("", r":math:`\Omega_j = 10000^{-j/(D/2)}`", "2VD"),
        ("III", r":math:`B_u + R_u [\sin(\Omega^{(1)}_u\tau); \cos(\Omega^{(2)}_u\tau)]`", "3VD"),
        ("IV", r":math:`B_u + R_u [\sin(\Omega^{(1)}_u\tau + \Theta^{(1)}_u); "
               r"\cos(\Omega^{(2)}_u\tau + \Theta^{(2)}_u)]`", "4VD"),
    ])],
}


def _simple_table(rows):
    """RST simple table (header = first row) with columns wide enough for every cell."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    border = "  ".join("=" * w for w in widths)
    line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()  # noqa: E731
    return [border, line(rows[0]), border, *map(line, rows[1:]), border]


def _realign_table(lines, rows) -> bool:
    import re

    is_border = lambda s: re.fullmatch(r"=+( +=+)+", s.strip()) is not None  # noqa: E731
    fixed = _simple_table(rows)
    words = " ".join(c for row in rows for c in row).split()
    borders = [i for i, s in enumerate(lines) if is_border(s)]
    for k in range(len(borders) - 2):
        start, end = borders[k], borders[k + 2]
        block = lines[start:end + 1]
        if " ".join(s for s in block if not is_border(s)).split() == words and block != fixed:
            lines[start:end + 1] = fixed
            return True
    return False


def _replace_text(lines, old, new) -> bool:
    hits = [i for i, s in enumerate(lines) if old in s]
    for i in hits:
        lines[i] = lines[i].replace(old, new)
    return bool(hits)


def _apply_pending_fixes(app, what, name, obj, options, lines):
    from sphinx.util import logging

    for fix in _PENDING_DOCSTRING_FIXES.get(name, ()) if what == "module" else ():
        applied = _realign_table(lines, fix[1]) if fix[0] == _TABLE else _replace_text(lines, *fix[1:])
        if not applied:
            logging.getLogger(__name__).info(f"docs/conf.py: a pending docstring fix for {name} no longer "
                                             "applies (source fixed?); delete it from _PENDING_DOCSTRING_FIXES")


def setup(app):
    app.connect("autodoc-process-docstring", _apply_pending_fixes)
