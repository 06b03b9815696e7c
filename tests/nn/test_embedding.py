"""Word embeddings of qpnlp.nn: the padding id and the public surface of the package."""

from __future__ import annotations

import torch

import qpnlp.nn
from qpnlp.data import PAD_ID
from qpnlp.nn import ComplexOrderEmbedding, ComplexWordEmbedding, RealPositionalEmbedding, WordWeighting


def test_the_embeddings_pad_with_the_one_padding_id():
    """The padding rows use qpnlp.data.PAD_ID, defined once in qpnlp.data.vocab."""
    assert ComplexWordEmbedding(5, 2).padding_idx == PAD_ID
    assert WordWeighting(5, "trainable").table.padding_idx == PAD_ID
    assert ComplexOrderEmbedding(5, 2).amplitude.padding_idx == PAD_ID
    assert RealPositionalEmbedding(5, 2).word.padding_idx == PAD_ID


def test_every_exported_name_exists_and_is_documented():
    for name in qpnlp.nn.__all__:
        obj = getattr(qpnlp.nn, name)
        if callable(obj) and not isinstance(obj, dict):
            assert obj.__doc__, f"qpnlp.nn.{name} has no docstring"


def test_a_lookup_run_outside_the_graph_hands_back_no_complex_view_of_a_real_buffer():
    """torch 2.11's dynamo cannot fake a complex view of a real base (it replays view_as_complex on the base)."""
    from qpnlp.nn.embedding import _outside_graph

    parts = torch.randn(3, 4, 2)
    states, same = _outside_graph(lambda: (torch.view_as_complex(parts), parts))
    assert not (states._is_view() and states._base.dtype != states.dtype)
    assert torch.equal(states, torch.view_as_complex(parts))
    assert same is parts                                     # other outputs pass through uncopied
    single = _outside_graph(lambda: torch.view_as_complex(parts))
    assert isinstance(single, torch.Tensor) and not single._is_view()
