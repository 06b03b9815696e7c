"""PyTorch conventions of every registered model: seeded construction, dtype moves, validation switch, compile."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from qpnlp.hilbert import validation
from qpnlp.models import Model, ModelConfig, get_model_class, registered_models

SIZES = dict(num_words=12, num_classes=3, dim=4, num_measurements=3, hidden=3, filters=2, kernel_sizes=[2],
             windows=[1, 2], vocab_size=12, heads=2, ffn_hidden=3, family="IV", span_start=1900.0, span_end=2000.0)
# Variants whose construction draws from more places than the registry's small configs.
VARIANTS = {
    "qpdn-orthonormal": ("qpdn", dict(orthonormal=True)),
    "qpdn-povm": ("qpdn", dict(measurement="povm", num_measurements=6)),
    "cnm-povm": ("cnm", dict(measurement="povm", num_measurements=6, measurement_init="orthogonal")),
    "order-rnn-cgrnn": ("order_classifier", dict(network="rnn", rnn_cell="cgrnn", max_len=8)),
    "order-rnn-urnn": ("order_classifier", dict(network="rnn", rnn_cell="urnn", embedding="pe")),
    "order-transformer": ("order_classifier", dict(network="transformer", embedding="complex_vanilla")),
    "cgrnn-cayley": ("cgrnn_classifier", dict(transition="cayley", gate="prod", activation="hirose")),
}
def _config(name: str, **overrides):
    klass = get_model_class(name).config_class
    fields = {f.name for f in dataclasses.fields(klass)}
    return klass.from_dict({**{k: v for k, v in SIZES.items() if k in fields}, **overrides})


def _build(name: str, generator=None, **overrides) -> Model:
    return get_model_class(name)(_config(name, **overrides), generator=generator)


def _cases():
    out = [pytest.param(n, {}, id=n) for n in registered_models()]
    return out + [pytest.param(n, kw, id=label) for label, (n, kw) in VARIANTS.items()]


@pytest.mark.parametrize("name, overrides", _cases())
def test_a_generator_seeds_every_parameter_and_leaves_the_global_rng_alone(name, overrides):
    before = torch.random.get_rng_state()
    first = _build(name, torch.Generator().manual_seed(7), **overrides)
    assert torch.equal(torch.random.get_rng_state(), before), "construction drew from the global RNG"
    torch.manual_seed(12345)                                   # a different global state changes nothing
    second = _build(name, torch.Generator().manual_seed(7), **overrides)
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), f"{key} is not seeded by the generator"
    third = _build(name, torch.Generator().manual_seed(8), **overrides)
    assert any(not torch.equal(a[k], v) for k, v in third.state_dict().items()), "the generator is ignored"


@pytest.mark.parametrize("name, overrides", _cases())
def test_loading_a_saved_model_leaves_the_global_rng_alone(name, overrides, tmp_path):
    """from_pretrained built the model to load into with the global RNG (its placeholder initial values, torch's
    orthogonal completion): a notebook's draws after loading a model were shifted, whatever it had seeded."""
    saved = _build(name, torch.Generator().manual_seed(7), **overrides)
    saved.save_pretrained(tmp_path / name)
    before = torch.random.get_rng_state()
    loaded = Model.from_pretrained(tmp_path / name)
    assert torch.equal(torch.random.get_rng_state(), before), "loading drew from the global RNG"
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in saved.state_dict().items())


def _inputs(model: Model):
    ids = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
    if model.task == "temporal":
        return (ids[:, 0], torch.tensor([1950.0, 1990.0]))
    if model.task == "matching":
        return (ids, ids != 0, ids.flip(0), ids.flip(0) != 0)
    return (ids, ids != 0)


def _outputs(model: Model, args):
    return model.vectors(*args) if model.task == "temporal" else model(*args)


def _dtypes(model: Model) -> set[torch.dtype]:
    return {t.dtype for t in list(model.parameters()) + list(model.buffers()) if t.is_floating_point() or t.is_complex()}


@pytest.mark.parametrize("name, overrides", [pytest.param(n, {}, id=n) for n in registered_models()] + [
    pytest.param(n, kw, id=label) for label, (n, kw) in VARIANTS.items()])
def test_dtype_moves_keep_complex_parameters_in_step_or_raise(name, overrides, tmp_path):
    model = _build(name, torch.Generator().manual_seed(0), **overrides).eval()
    args = _inputs(model)
    fields = {f.name for f in dataclasses.fields(model.config)}
    if not fields & {"complex128", "precision"}:
        for move in (model.double, lambda: model.to(torch.complex128), lambda: model.to("cpu", torch.float64)):
            with pytest.raises(TypeError, match="no precision option"):
                move()
        assert model.float() is model                          # already float32: nothing to record
        return
    single = _outputs(model, args)
    assert model.double() is model
    assert _dtypes(model) <= {torch.float64, torch.complex128}
    assert _outputs(model, args).dtype == torch.float64
    # the moved model is the model built in double precision with the same parameters
    fresh = get_model_class(name).empty(model.config)
    fresh.load_state_dict(model.state_dict())
    torch.testing.assert_close(_outputs(fresh.eval(), args), _outputs(model, args), rtol=0, atol=0)
    torch.testing.assert_close(_outputs(model, args).float(), single, rtol=1e-4, atol=1e-5)
    model.save_pretrained(tmp_path / name)
    torch.testing.assert_close(_outputs(Model.from_pretrained(tmp_path / name), args), _outputs(model, args))
    model.to(torch.complex64)
    assert _dtypes(model) <= {torch.float32, torch.complex64}
    assert _outputs(model, args).dtype == torch.float32
    with pytest.raises(TypeError, match="half precision"):
        model.half()
    with pytest.raises(TypeError, match="float32/complex64 and float64/complex128 only"):
        model.to(torch.float16)


def test_a_model_whose_config_cannot_record_a_precision_refuses_to_move():
    @dataclasses.dataclass
    class Config(ModelConfig):
        num_words: int

    class Complexish(Model):
        config_class = Config

        def __init__(self, config):
            super().__init__(config)
            self.real = torch.nn.Parameter(torch.zeros(2))
            self.cplx = torch.nn.Parameter(torch.zeros(2, dtype=torch.complex64))

    model = Complexish(Config(num_words=3))
    for move in (model.double, lambda: model.to(torch.complex128), lambda: model.to("cpu", torch.float64)):
        with pytest.raises(TypeError, match="no precision option"):
            move()
    assert model.float() is model and model.real.dtype == torch.float32 and model.cplx.dtype == torch.complex64
    with pytest.warns(UserWarning, match="discards the imaginary part"):          # what torch alone does
        plain = torch.nn.Module.to(Complexish(Config(num_words=3)), torch.float64)
    assert plain.cplx.dtype == torch.float64


@pytest.mark.parametrize("name", [n for n in registered_models() if get_model_class(n).task != "temporal"])
def test_validation_switch_global_and_per_model(name):
    model = _build(name, torch.Generator().manual_seed(0)).eval()

    def call(ids, mask):
        return model(ids, mask, ids, mask) if model.task == "matching" else model(ids, mask)

    ids, at_padding = torch.tensor([[2, 3, 0]]), torch.ones(1, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="padding id 0"):
        call(ids, at_padding)
    model.validate = False                                      # this model's input checks only
    call(ids, at_padding)
    model.validate = None
    with validation(False):                                     # every check
        call(ids, at_padding)
        with pytest.raises((IndexError, RuntimeError)):         # unchecked: torch's own error, later
            call(torch.tensor([[2, 3, 40]]), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="max id 40"):
        call(torch.tensor([[2, 3, 40]]), torch.ones(1, 3, dtype=torch.bool))


COMPILABLE = {"qpdn": {}, "qpdn-povm": dict(measurement="povm", num_measurements=6), "real_bow": {},
              "cnm": {}, "cnm-both": dict(window_padding="both"), "cnm_real": {}, "cgrnn_classifier": {},
              **{f"order_classifier-{net}": dict(network=net, embedding="complex_order")
                 for net in ("fasttext", "cnn", "rnn", "transformer")},
              "order_classifier-pe": dict(network="cnn", embedding="pe")}


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(COMPILABLE))
def test_compiles_without_graph_breaks_when_validation_is_off(label):
    """With validation off, no Python branch depends on tensor values (fullgraph tracing succeeds). Without
    gradients: a lookup that records a sparse table gradient runs outside the graph (qpnlp.nn.embedding._fused)."""
    name = label.split("-")[0]
    model = _build(name, torch.Generator().manual_seed(0), **COMPILABLE[label]).eval()
    args = _inputs(model)
    with validation(False), torch.no_grad():
        compiled = torch.compile(model, backend="eager", fullgraph=True)
        torch.testing.assert_close(compiled(*args), model(*args))
