"""qpnlp._host: float64_values reads the items of lists of tensors of any layout, once."""

import numpy as np
import pytest
import torch

from qpnlp._host import float64_values
from qpnlp.evaluation.drift import DriftGrid


@pytest.mark.parametrize("item", [
    lambda y: torch.tensor(y, requires_grad=True),          # np.asarray: "Can't call numpy() on ... requires grad"
    lambda y: torch.tensor(y, dtype=torch.bfloat16),        # numpy has no bfloat16
    lambda y: torch.tensor(complex(0, -y)).conj().imag,     # the lazy negative bit
    lambda y: torch.tensor([y], requires_grad=True)[0],     # a view of a tensor that requires grad
])
def test_float64_values_reads_a_list_of_0d_tensors(item):
    values = float64_values([item(1984.0), item(2000.0)], "times")
    assert values.dtype == np.float64 and values.tolist() == [1984.0, 2000.0]
    assert float64_values((item(y) for y in (1984.0, 2000.0)), "times").tolist() == [1984.0, 2000.0]


def test_float64_values_still_refuses_complex_tensors_in_a_list():
    with pytest.raises(TypeError, match="times must be real numbers"):
        float64_values([torch.tensor(1990 + 1j).conj()], "times")


def test_drift_grid_reads_its_years_once():
    # np.asarray(generator, dtype=float64) raised TypeError; a list of grad tensors raised RuntimeError
    for years in ((y for y in (1990, 2000)), [torch.tensor(1990.0, requires_grad=True), torch.tensor(2000.0)]):
        assert DriftGrid(torch.zeros(2, 1, 3), ("a",), years).years.tolist() == [1990.0, 2000.0]
