"""The interpretation notebooks in docs/notebooks are stored without outputs, as their generator writes them.

They are written by ``docs/notebooks/make_notebooks.py`` and executed when the
documentation is built (myst-nb, cached; a failing cell fails the build):
``tests/test_docs_site.py`` builds the site and checks that each notebook
page holds its outputs and figures. The CNM notebook trains on the benchmark
data and is executed only when ``QPNLP_DATA`` is set.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "docs" / "notebooks"


def _notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def test_the_four_notebooks_exist():
    assert [p.name for p in _notebooks()] == ["cnm.ipynb", "complex_order.ipynb", "qpdn.ipynb", "word2fun.ipynb"]


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: cell {cell.id} has outputs"
        assert "attachments" not in cell or not cell.attachments


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_markdown_cells_have_no_stray_lines(path):
    """No cell opens with a blank or backslash line (a raw string's line continuation kept as text)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        first = cell.source.split("\n", 1)[0]
        assert first.strip() not in ("", "\\"), f"{path.name}: cell {cell.id} opens with {first!r}"
        assert "\n\\\n" not in cell.source, f"{path.name}: cell {cell.id} has a line holding only a backslash"


def test_the_stored_notebooks_are_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("make_notebooks", NOTEBOOKS / "make_notebooks.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    for name, cells in make.NOTEBOOKS.items():
        stored = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        assert stored == make.build(name, cells), f"{name}.ipynb differs from make_notebooks.py: regenerate it"


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_code_lines_fit_the_page(path):
    """The rendered pages show about 100 characters of code per line; longer lines would wrap."""
    nb = nbformat.read(path, as_version=4)
    long = [line for cell in nb.cells if cell.cell_type == "code" for line in cell.source.splitlines()
            if len(line) > 100]
    assert not long, f"{path.name}: lines over 100 characters: {long}"
