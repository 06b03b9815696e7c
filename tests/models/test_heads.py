"""The measurement head shared by QPDN and CNM (qpnlp/models/_heads.py)."""

from __future__ import annotations

import pytest

from qpnlp.models import CNMConfig, QPDNConfig


@pytest.mark.parametrize("config, extra", [(QPDNConfig, dict(num_classes=2)), (CNMConfig, {})])
@pytest.mark.parametrize("k", [0, -2])
def test_povm_with_no_outcomes_is_a_config_error_not_a_division_by_zero(config, extra, k):
    """measurement_checks computed the POVM rank ceil(d / k) before the config's own check of k >= 1 ran."""
    with pytest.raises(ValueError, match="num_measurements must be >= 1"):
        config(num_words=20, dim=8, num_measurements=k, measurement="povm", **extra)
