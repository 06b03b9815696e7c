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


def _small(name):
    from qpnlp.models import get_model_class

    sizes = {"qpdn": dict(num_classes=3, dim=6, num_measurements=4), "real_bow": dict(num_classes=3, dim=6),
             "cgrnn_classifier": dict(num_classes=3, dim=4, hidden=5), "fasttext_maxpool": dict(dim=3)}
    klass = get_model_class(name)
    return klass(klass.config_class(num_words=20, **sizes[name]), generator=torch.Generator().manual_seed(0)).eval()


def _run(model):
    ids = torch.tensor([[2, 3, 4], [5, 6, 0]])
    if model.task == "matching":
        return model(ids, ids != 0, ids.flip(0), ids.flip(0) != 0)
    return model(ids, ids != 0)


@pytest.mark.parametrize("name, moved, dtype", [("qpdn", "embedding", torch.float64),
                                                ("qpdn", "measurement", torch.complex128),
                                                ("real_bow", "classifier", torch.float64),
                                                ("cgrnn_classifier", "rnn", torch.complex128),
                                                ("fasttext_maxpool", "embedding", torch.float64)])
def test_a_submodule_moved_alone_is_named_by_the_batch_check_while_validation_is_on(name, moved, dtype):
    """model.<layer>.double() (nn.Module's, on one layer) left the rest in float32: QPDN raised torch's "expected
    scalar type Float but found Double", CGRNN "x has dtype torch.float64 but the layer is torch.complex64", and
    RealBagOfWords / FastTextMaxPool ran with part of the model widened. Model.check_batch now names the
    submodule and both precisions (qpnlp.models._precision.check_one_precision) while validation is on."""
    from qpnlp.hilbert import validation

    model = _small(name)
    model.get_submodule(moved).double()     # the layer's own: complex layers and measurements stay complex (complex128)
    with pytest.raises(TypeError, match=rf"holds tensors of two precisions: {moved}\.\S+ \(submodule {moved}"
                                        rf"(\.\w+)*\) is {dtype}, but the model is float32/complex64 .*model.double"):
        _run(model)
    from qpnlp.models._precision import check_one_precision
    with validation(False):
        check_one_precision(model)                              # off: not checked (nor paid for) at all
    model.double()                                              # the whole model: one precision again
    assert _run(model).dtype == torch.float64


@pytest.mark.parametrize("transition", ["expm", "cayley"])
def test_a_cgrnn_moved_to_double_has_a_transition_unitary_to_float64s_precision(transition):
    """CGRNNClassifier.double() moved its StateTransition's parametrisation base W_0 (W = W_0 Q(A)) with float32's
    round-off, unitarity error ~5e-7 at hidden = 5; the widening move now re-orthonormalises it: < 1e-14, the
    logits within float32's round-off of the single-precision ones."""
    from qpnlp.nn import StateTransition, unitarity_error

    config = CGRNNClassifierConfig(num_words=20, num_classes=3, dim=4, hidden=5, transition=transition)
    model = CGRNNClassifier(config, generator=torch.Generator().manual_seed(0)).eval()
    ids = torch.tensor([[2, 3, 4], [5, 6, 0]])
    expected = model(ids, ids != 0).detach()
    assert model.double() is model
    transitions = [m for m in model.modules() if isinstance(m, StateTransition)]
    assert transitions and all(unitarity_error(m().detach()) < 1e-14 for m in transitions)
    torch.testing.assert_close(model(ids, ids != 0).float(), expected, rtol=1e-5, atol=1e-5)
