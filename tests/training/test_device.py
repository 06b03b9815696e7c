"""Every model trains, scores, saves, loads and resumes on the test device (``QPNLP_TEST_DEVICE=cuda`` on a GPU).

The trainers move the model and each batch to ``config.device``; these tests
check that nothing in a training epoch, the dev scoring, a checkpoint round
trip or a resumed run leaves a tensor on the wrong device.
"""

import importlib.util
from pathlib import Path
import dataclasses
import warnings

import numpy as np
import pytest
import torch

from qpnlp.models import CNM, QPDN, CNMConfig, Model, QPDNConfig
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig
from qpnlp.training import TrainConfig, fit, predict
from qpnlp.training.matching import MatchingConfig, fit_matching, score_pairs

_SPEC = importlib.util.spec_from_file_location("_qpnlp_tiny_runs", Path(__file__).with_name("_tiny_runs.py"))
TINY = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(TINY)        # the shared tiny data and models (tests/training/_tiny_runs.py)
_qa = TINY.qa


def _texts(n=96, seed=0):
    return TINY.texts(n, seed)


CLASSIFIERS = {
    "qpdn": lambda: QPDN(QPDNConfig(num_words=20, num_classes=2, dim=6, num_measurements=4, dropout=0.2,
                                    weighting="trainable"), generator=torch.Generator().manual_seed(0)),
    **{f"complex-order {net}": (lambda net=net: OrderClassifier(OrderClassifierConfig(
        num_words=20, num_classes=2, network=net, embedding="complex_order", dim=8, hidden=8, filters=4,
        kernel_sizes=(2, 3), heads=2, ffn_hidden=8, max_len=12, **({"rnn_cell": "cgrnn"} if net == "rnn" else {})),
        generator=torch.Generator().manual_seed(0))) for net in ("fasttext", "cnn", "rnn", "transformer")},
}


def _on(model, device) -> bool:
    return all(t.device.type == device.type for t in [*model.parameters(), *model.buffers()])


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_a_classifier_trains_scores_and_round_trips_on_the_device(name, device, tmp_path):
    model = CLASSIFIERS[name]()
    config = TrainConfig(epochs=2, batch_size=16, lr=0.02, embedding_lr=0.02, progress=False, seed=1,
                         device=str(device))
    result = fit(model, _texts(), _texts(seed=1), config)
    assert _on(model, device) and np.isfinite(result.history[-1]["train_loss"])
    logits = predict(model, _texts(seed=1), device=device)
    assert logits.device.type == "cpu" and torch.isfinite(logits).all()
    model.save_pretrained(tmp_path / "saved")
    loaded = Model.from_pretrained(tmp_path / "saved", device=device)
    assert _on(loaded, device)
    torch.testing.assert_close(predict(loaded, _texts(seed=1), device=device), logits)


def test_a_resumed_run_on_the_device_ends_where_an_uninterrupted_one_does(device, tmp_path):
    config = TrainConfig(epochs=3, batch_size=16, lr=0.02, embedding_lr=0.02, progress=False, seed=1,
                         device=str(device))
    torch.manual_seed(0)
    whole = CLASSIFIERS["qpdn"]()
    fit(whole, _texts(), _texts(seed=1), config)
    torch.manual_seed(0)
    first = CLASSIFIERS["qpdn"]()
    fit(first, _texts(), _texts(seed=1), TrainConfig(**{**config.to_dict(), "epochs": 2}), checkpoint_dir=tmp_path)
    resumed = CLASSIFIERS["qpdn"]()
    fit(resumed, _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path, resume=True)
    assert _on(resumed, device)
    for key, value in whole.state_dict().items():  # GPU scatter-adds may sum in another order: close, not equal
        torch.testing.assert_close(resumed.state_dict()[key], value, msg=key)


def test_cnm_trains_and_scores_on_the_device(device):
    model = CNM(CNMConfig(num_words=20, dim=6, num_measurements=6, dropout=0.2),
                generator=torch.Generator().manual_seed(0))
    result = fit_matching(model, _qa(), _qa(seed=1), MatchingConfig(epochs=2, batch_size=4, progress=False,
                                                                    device=str(device)))
    assert _on(model, device) and np.isfinite(result.history[-1]["train_loss"])
    scores = score_pairs(model, _qa(seed=1), device=device)
    assert scores.shape == (24,) and np.isfinite(scores).all()


@pytest.mark.parametrize("name", ["gpu", "cuda:x", "meta", "xla"])
def test_a_bad_device_name_is_refused_by_every_config(name):
    from qpnlp.training import ConfigError
    from qpnlp.word2fun import TrainConfig as Word2FunConfig

    with pytest.raises(ConfigError, match="device"):
        TrainConfig(device=name)
    with pytest.raises(ConfigError, match="device"):
        MatchingConfig(device=name)
    with pytest.raises(ValueError, match="device"):
        Word2FunConfig(device=name)


def test_a_device_this_machine_lacks_fails_before_training_with_the_reason(tmp_path):
    """A config names the device only; fit() and from_pretrained() check that this machine has it, first."""
    from qpnlp.word2fun import TrainConfig as Word2FunConfig
    from qpnlp.word2fun import fit as fit_word2fun
    from qpnlp.data.synthetic_drift import DriftSpec, generate_drift_corpus

    missing = f"cuda:{torch.cuda.device_count()}"        # one past the last GPU; plain "cuda" on a CPU machine
    expected = "CUDA device" if torch.cuda.is_available() else "CUDA is not available"
    model = CLASSIFIERS["qpdn"]()
    with pytest.raises(ValueError, match=expected):
        fit(model, _texts(), _texts(seed=1), TrainConfig(epochs=1, progress=False, device=missing))
    assert _on(model, torch.device("cpu"))
    with pytest.raises(ValueError, match=expected):
        fit_matching(CNM(CNMConfig(num_words=20, dim=6, num_measurements=6)), _qa(), _qa(seed=1),
                     MatchingConfig(epochs=1, progress=False, device=missing))
    model.save_pretrained(tmp_path / "saved")
    with pytest.raises(ValueError, match=expected):
        Model.from_pretrained(tmp_path / "saved", device=missing)
    corpus, _ = generate_drift_corpus(DriftSpec(n_years=5, n_tokens=2000, n_drift=2, n_stable=1, n_trap=1))
    with pytest.raises(ValueError, match=expected):
        fit_word2fun(corpus, Word2FunConfig(epochs=1, device=missing), dim=4, min_count=1)


# --------------------------------------------------------------------------- TrainConfig.compile
#: What inductor says while compiling these models (no complex code generation, torch.jit internals): expected,
#: documented in qpnlp.training.compiled.
_compiler_chatter = pytest.mark.filterwarnings("ignore:Torchinductor does not support:UserWarning",
                                               "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


def _compiled_and_eager(train, make, config):
    """Train one model eagerly and one through torch.compile from the same start; the two models and results.

    No compile attempt may fail: AOT autograd tracing a backward it cannot compile (the sparse backward of an
    embedding lookup) warns "Error detected in ..." and then breaks the graph, after paying for the attempt."""
    import torch._dynamo

    eager, compiled = make(), make()
    compiled.load_state_dict(eager.state_dict())
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for model, mode in ((eager, None), (compiled, "default")):
            torch.manual_seed(0)                             # the same dropout draws
            results.append(train(model, dataclasses.replace(config, compile=mode)))
    failed = sorted({str(w.message).splitlines()[0] for w in caught if "Error detected in" in str(w.message)})
    assert not failed, failed
    for w in caught:                                     # the rest as if not recorded: the test's filters apply
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    graphs = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    torch._dynamo.reset()
    return eager, compiled, results, graphs


@_compiler_chatter
def test_compiled_matching_training_equals_eager_to_rounding(device):
    """CNM, the model compile speeds up: the compiled steps give the eager losses and parameters to rounding."""
    from qpnlp.hilbert import get_validation

    config = MatchingConfig(epochs=2, batch_size=4, progress=False, device=str(device), seed=3)
    make = lambda: CNM(CNMConfig(num_words=20, dim=6, num_measurements=6),  # noqa: E731
                       generator=torch.Generator().manual_seed(0))
    eager, compiled, (r_eager, r_compiled), graphs = _compiled_and_eager(
        lambda m, c: fit_matching(m, _qa(), _qa(seed=1), c), make, config)
    assert graphs > 0                                    # the steps went through dynamo
    assert get_validation() is True                      # switched off inside the compiled steps only
    losses = [[h["train_loss"] for h in r.history] for r in (r_eager, r_compiled)]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    for key, value in eager.state_dict().items():
        torch.testing.assert_close(compiled.state_dict()[key], value, rtol=1e-4, atol=1e-5, msg=key)


@_compiler_chatter
@pytest.mark.parametrize("name", ["qpdn", "complex-order cnn"])
def test_compiled_classifier_training_equals_eager_to_rounding(name, device):
    """Compiled steps give eager's losses and parameters. The complex-order CNN's backward once failed in inductor:
    the gradient of a [Re, Im] view came with strides that view_as_complex rejects."""
    config = TrainConfig(epochs=1, batch_size=16, lr=0.02, embedding_lr=0.02, progress=False, seed=1,
                         device=str(device))
    eager, compiled, (r_eager, r_compiled), graphs = _compiled_and_eager(
        lambda m, c: fit(m, _texts(), _texts(seed=1), c), CLASSIFIERS[name], config)
    assert graphs > 0
    np.testing.assert_allclose(r_compiled.history[0]["train_loss"], r_eager.history[0]["train_loss"], rtol=1e-4)
    for key, value in eager.state_dict().items():
        torch.testing.assert_close(compiled.state_dict()[key], value, rtol=1e-4, atol=1e-5, msg=key)


@pytest.mark.parametrize("config", [TrainConfig, MatchingConfig])
def test_an_unknown_compile_mode_is_refused_with_the_modes(config):
    from qpnlp.training import ConfigError

    with pytest.raises(ConfigError, match="compile must be None .eager. or one of .*reduce-overhead"):
        config(compile="fast")
