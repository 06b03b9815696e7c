"""The QPDN notebook's optimal-measurement diagnostic (Helstrom / pretty-good bound next to the learned measurement).

The notebook itself is executed by the documentation build
(``tests/test_docs_site.py``); here its two diagnostic cells run, without
training, on a tiny QPDN and synthetic sentences, for two classes (Helstrom)
and three (pretty-good measurement), and the stored notebook is checked to
hold them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("pandas")

from qpnlp.data import EncodedTexts  # noqa: E402
from qpnlp.interpret import single_shot_accuracy  # noqa: E402
from qpnlp.models.qpdn import QPDN, QPDNConfig  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "docs" / "notebooks"


def _generator():
    spec = importlib.util.spec_from_file_location("make_notebooks", NOTEBOOKS / "make_notebooks.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make


def _diagnostic_cells(cells) -> list[str]:
    code = [source for kind, source in cells if kind == "code"]
    bound = next(i for i, source in enumerate(code) if "measurement_bound(" in source)
    assert "single_shot_accuracy(" in code[bound + 1]
    return code[bound:bound + 2]


def test_the_stored_qpdn_notebook_holds_the_diagnostic_after_training():
    nb = nbformat.read(NOTEBOOKS / "qpdn.ipynb", as_version=4)
    sources = [cell.source for cell in nb.cells]
    trained = next(i for i, s in enumerate(sources) if "run_split(" in s)
    bound = next(i for i, s in enumerate(sources) if "measurement_bound(" in s)
    table = next(i for i, s in enumerate(sources) if "single_shot_accuracy(" in s and "read_once" in s)
    assert trained < bound < table < len(sources) - 1
    text = "\n".join(s for cell, s in zip(nb.cells, sources) if cell.cell_type == "markdown")
    assert "Helstrom" in text and "pretty-good" in text
    assert "limited by its measurement" in text and "limited by its states" in text


def _encoded(generator, n, num_words, num_classes):
    lengths = torch.randint(1, 6, (n,), generator=generator).tolist()
    ids = [torch.randint(1, num_words, (m,), generator=generator).tolist() for m in lengths]
    return EncodedTexts(ids, torch.arange(n) % num_classes)


@pytest.mark.parametrize("num_classes", [2, 3])
def test_the_diagnostic_cells_run_and_agree_with_the_bound(num_classes):
    gen = torch.Generator().manual_seed(num_classes)
    config = QPDNConfig(num_words=30, num_classes=num_classes, dim=6, num_measurements=3, orthonormal=True)
    model = QPDN(config, generator=gen).eval()
    prepared = SimpleNamespace(train=_encoded(gen, 40, 30, num_classes), test=_encoded(gen, 24, 30, num_classes))
    namespace = {"torch": torch, "model": model, "prepared": prepared}
    for source in _diagnostic_cells(_generator().QPDN):
        exec(compile(source, "<qpdn notebook cell>", "exec"), namespace)

    on_test = namespace["on_test"]
    assert on_test.method == ("helstrom" if num_classes == 2 else "pretty-good")
    rows = namespace["rows"]
    assert len(rows) == 5 and all(len(pair) == 2 for pair in rows.values())
    learned, _ = single_shot_accuracy(model.measurement.as_projectors(), on_test.class_states, on_test.priors)
    once = rows["learned projectors (one outcome)"]
    assert once[0] == pytest.approx(float(learned), abs=1e-5)         # read_once agrees with single_shot_accuracy
    assert once[1] <= once[0] + 1e-6                                   # the best reading is the test one
    assert float(learned) <= float(on_test.upper_bound) + 1e-5         # no measurement beats the bound
    optimal = [v for k, v in rows.items() if k.endswith("measurement (one outcome)")][0]
    assert optimal[1] <= float(on_test.upper_bound) + 1e-5
    assert all(0 <= v <= 1 for pair in rows.values() for v in pair if v is not None)
    assert rows["QPDN: projectors + linear layer (exact)"][0] is None
