"""Fixtures for the model tests."""

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    """These tensors are tiny: intra-op threads only add synchronisation overhead (large on a busy machine)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
