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


@pytest.mark.parametrize("network", ["rnn", "transformer"])
@pytest.mark.parametrize("embedding", ["none", "tpe"])
def test_real_order_classifiers_run_under_cpu_autocast(network, embedding):
    """bfloat16 autocast made the real rnn and transformer raise TypeError in their second layer; now the
    logits are bfloat16 and close to the float32 ones (bfloat16 keeps 8 bits: a loose tolerance)."""
    from qpnlp.models import OrderClassifier, OrderClassifierConfig

    config = OrderClassifierConfig(num_words=30, num_classes=2, network=network, embedding=embedding, dim=8,
                                   hidden=8, heads=2, ffn_hidden=8, max_len=16, dropout=0.0)
    model = OrderClassifier(config, generator=torch.Generator().manual_seed(0)).eval()
    ids = torch.randint(2, 30, (3, 6), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(3, 6, dtype=torch.bool)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(ids, mask)
    assert logits.dtype == torch.bfloat16 and bool(torch.isfinite(logits).all())
    torch.testing.assert_close(logits.float(), model(ids, mask), atol=0.5, rtol=0.1)
