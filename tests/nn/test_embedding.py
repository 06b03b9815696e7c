"""Word embeddings of qpnlp.nn: the padding id and the public surface of the package."""

from __future__ import annotations

import pytest
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



@pytest.mark.parametrize("compiled", ["1", "0"])
@pytest.mark.parametrize("sparse", [True, False])
def test_an_empty_batch_has_zero_table_gradients(compiled, sparse, monkeypatch):
    """ids of shape (B, 0): no state, no norm, and a backward that leaves the tables' gradients zero (as
    ``nn.Embedding`` does), on the compiled loops and the torch ops, for the states and the weighting's table."""
    if compiled == "1":
        pytest.importorskip("numba", reason="the compiled lookup needs numba (the extra 'fast', in 'test')")
    monkeypatch.setenv("QPNLP_LOOKUP_COMPILED", compiled)
    ids = torch.zeros(2, 0, dtype=torch.long)
    emb = ComplexWordEmbedding(10, 4, sparse=sparse, dtype=torch.float64)
    for states, norms in (emb(ids), emb.distinct_states(ids)[:2]):
        assert states.shape[-1] == 4 and states.numel() == norms.numel() == 0
        emb.zero_grad(set_to_none=True)
        (states.abs().sum() + norms.sum()).backward()
        for table in (emb.amplitude, emb.phase):
            assert table.weight.grad.shape == (10, 4) and not table.weight.grad.to_dense().any()
    weighting = WordWeighting(10, "trainable", sparse=sparse)
    weighting.scores(ids, torch.zeros(2, 0)).sum().backward()
    assert not weighting.table.weight.grad.to_dense().any()


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_idf_weighting_refuses_nan_and_infinite_idf(bad):
    """NaN passed the old ``idf <= 0`` check and an infinite idf is no weight: both gave NaN sentence weights."""
    with pytest.raises(ValueError, match="idf values must be positive"):
        WordWeighting(3, "idf", idf=torch.tensor([1.0, bad, 2.0]))


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(num_words=0), ValueError, r"num_words must be >= 1 \(the vocabulary size\); got 0"),     # was accepted
    (dict(num_words=-1, scheme="trainable"), ValueError, "num_words must be >= 1"),   # was torch's RuntimeError
    (dict(scheme="idf", idf=[1.0, 1.0, 2.0]), TypeError, "idf must be a torch.Tensor; got list"),  # AttributeError
    (dict(scheme="idf", idf=torch.ones(3, dtype=torch.complex64)), TypeError,          # was NotImplementedError
     "idf must be a real tensor .*; got torch.complex64"),
    (dict(scheme="trainable", dtype=torch.long), TypeError,                            # was torch's RuntimeError
     "dtype must be float32 or float64 .*; got torch.int64"),
    (dict(dtype=torch.complex64), TypeError, "dtype must be float32 or float64"),     # was accepted
])
def test_word_weighting_names_a_bad_argument(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        WordWeighting(**{"num_words": 3, **kwargs})


@pytest.mark.parametrize("make", [
    lambda p: ComplexWordEmbedding(4, 3, pretrained=p),
    lambda p: ComplexOrderEmbedding(4, 3, pretrained=p),
    lambda p: RealPositionalEmbedding(4, 3, pretrained=p),
])
def test_pretrained_tables_refuse_arrays_and_complex_values_naming_pretrained(make):
    """An array failed inside torch.isfinite naming no argument (embedding_matrix_for returns one); a complex
    table lost its imaginary part with at most a one-off torch warning."""
    with pytest.raises(TypeError, match="pretrained must be a torch.Tensor; got ndarray"):
        make(torch.randn(4, 3).numpy())
    with pytest.raises(TypeError, match="pretrained must hold real amplitudes.*complex64"):
        make(torch.randn(4, 3, dtype=torch.complex64))
    make(torch.randn(4, 3, dtype=torch.float64).t().contiguous().t())     # real, any float dtype and strides: fine


# --------------------------------------------------------------------------- dense optimisers, qpnlp's tables
def _sparse_step(module: torch.nn.Module, optimizer_type=torch.optim.Adam, forward=None):
    """One backward through ``module`` (its tables' gradients sparse), then a step of ``optimizer_type`` on every
    parameter: the exception raised (None if the step ran) and whether any parameter changed."""
    ids = torch.tensor([[3, 4, 0]])
    out = forward(ids) if forward is not None else module(ids)
    sum(t.abs().sum() for t in (out if isinstance(out, tuple) else (out,))).backward()
    assert any(p.grad is not None and p.grad.is_sparse for p in module.parameters())
    before = [p.detach().clone() for p in module.parameters()]
    try:
        optimizer_type(module.parameters(), lr=0.1).step()
    except Exception as error:          # noqa: BLE001 -- what a user's except clause would see
        return error, any(not torch.equal(b, p) for b, p in zip(before, module.parameters()))
    return None, True


def test_a_plain_sparse_embedding_with_adam_gets_torchs_own_error_after_importing_qpnlp():
    # qpnlp's global step hook raised its TypeError for ANY sparse gradient: a user's own nn.Embedding(sparse=True)
    # with Adam got a message naming qpnlp.training.Optimisers, and `except RuntimeError` no longer caught it
    import qpnlp.models  # noqa: F401 -- every table module and the hook loaded

    error, _ = _sparse_step(torch.nn.Embedding(5, 3, sparse=True))
    assert type(error) is RuntimeError
    assert str(error) == "Adam does not support sparse gradients, please consider SparseAdam instead"
    error, _ = _sparse_step(torch.nn.Embedding(5, 3, sparse=True), torch.optim.RMSprop)
    assert type(error) is RuntimeError and "qpnlp" not in str(error)


def _copies():
    """Ways a user rebuilds or moves a model; each keeps qpnlp's tables known as such."""
    import copy
    import pickle

    def overwritten(module):               # torch's opt-in: .to() puts new Parameter objects in the module
        torch.__future__.set_overwrite_module_params_on_conversion(True)
        try:
            return module.to(torch.float64)
        finally:
            torch.__future__.set_overwrite_module_params_on_conversion(False)

    def assigned(module):                  # load_state_dict(assign=True) puts the state dict's tensors in
        module.load_state_dict({k: v.clone() for k, v in module.state_dict().items()}, assign=True)
        return module

    return {"itself": lambda m: m, "deepcopy": copy.deepcopy, "pickle": lambda m: pickle.loads(pickle.dumps(m)),
            "to float64": lambda m: m.to("cpu", torch.float64), "overwritten on conversion": overwritten,
            "load_state_dict assign": assigned}


@pytest.mark.parametrize("rebuild", list(_copies()))
@pytest.mark.parametrize("make", [lambda: ComplexWordEmbedding(6, 2), lambda: ComplexOrderEmbedding(6, 2),
                                  lambda: RealPositionalEmbedding(6, 2)], ids=["word", "order", "positional"])
def test_qpnlps_tables_still_get_qpnlps_hint_with_a_dense_only_optimizer(make, rebuild):
    from qpnlp.nn._tables import SparseGradientsError

    module = _copies()[rebuild](make())
    forward = (lambda ids: module(ids, ids != 0)) if not isinstance(module, ComplexWordEmbedding) else None
    error, changed = _sparse_step(module, forward=forward)
    assert isinstance(error, SparseGradientsError) and isinstance(error, TypeError) and isinstance(error, RuntimeError)
    assert "torch.optim.Adam cannot update parameters with sparse gradients" in str(error)
    assert "qpnlp.training.Optimisers" in str(error) and not changed          # refused before any update


def test_a_qpnlp_table_under_functional_call_gets_qpnlps_hint():
    module = ComplexWordEmbedding(6, 2)
    params = dict(module.named_parameters())
    error, _ = _sparse_step(module, forward=lambda ids: torch.func.functional_call(module, params, (ids,)))
    assert "qpnlp.training.Optimisers" in str(error)


def test_a_dropped_table_leaves_the_registry():
    import gc
    import weakref

    from qpnlp.nn import _tables

    module = ComplexWordEmbedding(6, 2)
    table = weakref.ref(module.amplitude)
    assert module.amplitude in _tables._TABLES
    del module
    gc.collect()
    assert table() is None
