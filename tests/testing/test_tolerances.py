"""The tolerance table of qpnlp.testing covers every floating precision, scaled by its machine epsilon."""

import pytest
import torch

from qpnlp.testing import ATOL_PER_DIM, assert_probabilities, default_atol


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.complex32])
def test_half_precisions_get_tolerances_scaled_like_float32(dtype):
    real = torch.float16 if dtype == torch.complex32 else dtype
    ratio = ATOL_PER_DIM[torch.float32] / torch.finfo(torch.float32).eps
    assert default_atol(dtype, 10) == pytest.approx(10 * ratio * torch.finfo(real).eps)
    assert default_atol(dtype) > default_atol(torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_assert_probabilities_accepts_autocast_outputs(dtype):
    p = torch.softmax(torch.randn(4, 7, generator=torch.Generator().manual_seed(0)), -1).to(dtype)
    assert_probabilities(p, complete=True)
    with pytest.raises(AssertionError, match="outside"):
        assert_probabilities(torch.tensor([0.5, 1.5], dtype=dtype))


def test_a_dtype_without_a_tolerance_is_named():
    with pytest.raises(TypeError, match="no default tolerance for torch.int64"):
        default_atol(torch.int64)
