"""The interpretation notebooks in docs/notebooks run top to bottom and are stored without outputs.

Each notebook is executed with nbclient in a fresh ``python3`` kernel (this
venv's ipykernel) with ``OMP_NUM_THREADS=1``; any cell error fails the test.
Notebooks that read the benchmark data skip when ``QPNLP_DATA`` is unset.
They are written by ``docs/notebooks/make_notebooks.py``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "docs" / "notebooks"
NEEDS_DATA = {"cnm.ipynb"}
TIMEOUT = 300                                     # seconds per cell; each notebook takes well under a minute


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


@pytest.mark.slow
@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_notebook_runs(path, monkeypatch, capsys):
    if path.name in NEEDS_DATA and not os.environ.get("QPNLP_DATA"):
        pytest.skip(f"{path.name} trains on the benchmark data: set QPNLP_DATA to run it")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")                          # the kernel inherits the environment
    monkeypatch.setenv("MKL_NUM_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # the kernel is this interpreter (the venv's ipykernel), whatever kernelspecs the machine has
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(NOTEBOOKS.parents[1]),
                                                                   os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", resources={
        "metadata": {"path": str(path.parent)}})
    client.kernel_manager_class = _manager_for(sys.executable)
    start = time.perf_counter()
    client.execute()                               # raises CellExecutionError on the first failing cell
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n{path.name}: executed in {seconds:.1f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors


def _manager_for(python: str):
    """A kernel manager class that starts ipykernel with ``python`` (not whatever 'python3' resolves to)."""
    from jupyter_client.manager import KernelManager

    class Manager(KernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return [python, "-m", "ipykernel_launcher", "-f", self.connection_file]

    return Manager
