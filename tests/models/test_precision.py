"""PrecisionMixin (qpnlp/models/_precision.py): every dtype move keeps complex parameters complex."""

from __future__ import annotations

import pytest
import torch

from qpnlp.models import CGRNNClassifier, CGRNNClassifierConfig


@pytest.mark.parametrize("dst", [torch.float64, "torch.DoubleTensor"])
def test_module_type_moves_complex_parameters_like_double(dst):
    """nn.Module.type cast complex parameters to float64, discarding their imaginary parts (with a warning only)."""
    config = CGRNNClassifierConfig(num_words=20, num_classes=3, dim=4, hidden=5)
    model = CGRNNClassifier(config, generator=torch.Generator().manual_seed(0)).eval()
    expected = CGRNNClassifier(config, generator=torch.Generator().manual_seed(0)).eval().double()
    assert model.type(dst) is model
    assert model.rnn.cell.input_weight.dtype == torch.complex128 and model.config.complex128
    ids = torch.tensor([[2, 3, 4], [5, 6, 0]])
    torch.testing.assert_close(model(ids, ids != 0), expected(ids, ids != 0), rtol=0, atol=0)
