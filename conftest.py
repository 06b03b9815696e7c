"""Root pytest configuration: names available to every doctest in the package."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    import qpnlp.hilbert as hilbert

    doctest_namespace["torch"] = torch
    for name in hilbert.__all__:
        doctest_namespace[name] = getattr(hilbert, name)
