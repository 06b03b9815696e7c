"""FastText-MaxPool (thesis Table 5.9): max-pooled real word vectors of size 2d matched by the cosine."""

import pytest
import torch

from qpnlp.models import FastTextMaxPool, FastTextMaxPoolConfig


def _model(**options):
    return FastTextMaxPool(FastTextMaxPoolConfig(num_words=8, dim=2, **options),
                           generator=torch.Generator().manual_seed(0)).eval()


def test_score_is_the_cosine_of_the_coordinatewise_max_over_the_words():
    model = _model()
    table = torch.tensor([[0, 0, 0, 0], [9, 9, 9, 9], [1, -2, 0, 3], [-1, 5, 2, 0], [4, 0, -3, 1],
                          [2, 2, 2, 2], [0, 1, 0, 1], [7, 7, -7, 7]], dtype=torch.float32)
    with torch.no_grad():
        model.embedding.weight.copy_(table)
    q = torch.tensor([[2, 3, 7]])
    q_mask = torch.tensor([[True, True, False]])                          # word 7 is masked: its 7s never win
    a = torch.tensor([[4, 5, 6]])
    a_mask = torch.ones(1, 3, dtype=torch.bool)
    xq, xa = torch.tensor([1.0, 5, 2, 3]), torch.tensor([4.0, 2, 2, 2])
    torch.testing.assert_close(model.encode(q, q_mask), xq.unsqueeze(0))
    torch.testing.assert_close(model(q, q_mask, a, a_mask), (xq @ xa / (xq.norm() * xa.norm())).unsqueeze(0))


def test_pretrained_vectors_fill_the_first_d_coordinates_and_the_maximum_gets_the_gradient():
    pretrained = torch.arange(16, dtype=torch.float32).reshape(8, 2)
    model = FastTextMaxPool(FastTextMaxPoolConfig(num_words=8, dim=2), pretrained=pretrained,
                            generator=torch.Generator().manual_seed(0))
    table = model.embedding.weight.detach()
    torch.testing.assert_close(table[1:, :2], pretrained[1:])
    assert torch.equal(table[0], torch.zeros(4))                         # the padding row
    q, a = torch.tensor([[2, 3]]), torch.tensor([[4, 0]])
    model(q, q != 0, a, a != 0).sum().backward()
    grad = model.embedding.weight.grad.to_dense()
    assert grad[[0, 1, 5, 6, 7]].abs().sum() == 0                        # only the pooled words' rows
    assert grad[3, :2].abs().sum() > 0 and grad[2, :2].abs().sum() == 0   # word 3 holds the max of the first two


def test_config_is_checked_and_the_model_round_trips(tmp_path):
    with pytest.raises(ValueError, match="dropout"):
        FastTextMaxPoolConfig(num_words=8, dropout=1.0)
    with pytest.raises(ValueError, match="unknown"):
        FastTextMaxPoolConfig.from_dict({"num_words": 8, "num_measurements": 4})
    model = _model()
    model.save_pretrained(tmp_path / "m")
    loaded = FastTextMaxPool.from_pretrained(tmp_path / "m")
    q, a = torch.tensor([[2, 3, 0]]), torch.tensor([[0, 3, 2]])
    torch.testing.assert_close(loaded(q, q != 0, a, a != 0), model(q, q != 0, a, a != 0))
