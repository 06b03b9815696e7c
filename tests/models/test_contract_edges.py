"""Edges of the model contract: the registry's arguments, damaged headers, configs only the layers refused, and
saves that wrote what loading then refused."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from qpnlp.models import (CNM, QPDN, CNMConfig, Model, ModelConfig, OrderClassifierConfig, QPDNConfig,
                          get_model_class, register_model, registered_models, unregister_model)
from qpnlp.models.base import CONFIG_FILE, WEIGHTS_FILE


@dataclasses.dataclass
class _Config(ModelConfig):
    num_words: int
    num_classes: int = 2


def _model_class(config_class=_Config) -> type[Model]:
    class Tiny(Model):
        def __init__(self, config, *, pretrained=None, generator=None):
            super().__init__(config)
            self.out = torch.nn.Linear(1, config.num_classes)

        def forward(self, ids, mask):
            return self.out(mask.sum(1, keepdim=True).float())

    Tiny.config_class = config_class
    return Tiny


def _qpdn(**options) -> QPDN:
    return QPDN(QPDNConfig(**{"num_words": 10, "num_classes": 2, "dim": 4, "num_measurements": 3, **options}),
                generator=torch.Generator().manual_seed(0)).eval()


def _edit_header(directory, **changes) -> None:
    header = json.loads((directory / CONFIG_FILE).read_text())
    for key, value in changes.items():
        if key == "config":
            header["config"].update(value)
        else:
            header[key] = value
    (directory / CONFIG_FILE).write_text(json.dumps(header))


# --------------------------------------------------------------------------- registry
@pytest.mark.parametrize("name", ["", "  ", 3, None])
def test_register_model_refuses_a_name_that_is_not_a_non_empty_string(name):
    """"" registered a class that could never be saved; 3 broke registered_models() (sorting str and int)."""
    with pytest.raises(TypeError, match="needs a non-empty name string"):
        register_model(name)(_model_class())
    assert "qpdn" in registered_models()


def test_register_model_used_without_a_name_says_how_instead_of_replacing_the_class():
    """``@register_model`` without parentheses returned the inner decorator: the class became a function."""
    with pytest.raises(TypeError, match=r'@register_model\("name"\)'):
        register_model(_model_class())


def test_register_model_refuses_a_config_class_that_is_not_a_model_config():
    """A plain dataclass was accepted; saving then failed on ``config.to_dict`` and loading on ``from_dict``."""

    @dataclasses.dataclass
    class Plain:
        num_words: int

    with pytest.raises(TypeError, match="config_class must be a ModelConfig dataclass"):
        register_model("test_plain_config")(_model_class(Plain))
    assert "test_plain_config" not in registered_models()


def test_one_class_has_one_name_and_unregistering_frees_it(tmp_path):
    """A second name silently renamed the class (it then saved under the second name, while the first stayed
    listed and pointed at it)."""
    klass = _model_class()
    register_model("test_first_name")(klass)
    try:
        with pytest.raises(ValueError, match="already registered as 'test_first_name'"):
            register_model("test_second_name")(klass)
        assert "test_second_name" not in registered_models() and klass.name == "test_first_name"
        register_model("test_first_name")(klass)                  # the same name again is fine (a re-import)
        unregister_model("test_first_name")
        register_model("test_second_name")(klass)
        model = klass(_Config(num_words=4)).eval()
        model.save_pretrained(tmp_path / "m")
        again = Model.from_pretrained(tmp_path / "m")
        assert type(again) is klass and json.loads((tmp_path / "m" / CONFIG_FILE).read_text())["model"] == \
            "test_second_name"
    finally:
        unregister_model("test_first_name")
        unregister_model("test_second_name")


# --------------------------------------------------------------------------- config values
def test_a_float_field_given_an_int_beyond_the_float_range_is_refused_naming_the_field(tmp_path):
    """``math.isfinite(10**400)`` raised OverflowError: not a ValueError, and no field or file named."""
    with pytest.raises(ValueError, match="QPDNConfig.dropout must be finite"):
        QPDNConfig(num_words=10, num_classes=2, dropout=10 ** 400)
    _qpdn().save_pretrained(tmp_path / "m")
    _edit_header(tmp_path / "m", config={"dropout": 10 ** 400})
    with pytest.raises(ValueError, match=r"m/config.json: not a valid 'qpdn' config \(QPDNConfig.dropout must be"):
        Model.from_pretrained(tmp_path / "m")


def test_list_of_float_fields_refuse_nan_and_infinity():
    config = dataclasses.make_dataclass("Config", [("scales", "list[float]")], bases=(ModelConfig,))
    for bad in ([1.0, float("nan")], [float("inf")], [10 ** 400]):
        with pytest.raises(ValueError, match="Config.scales must be finite"):
            config.from_dict({"scales": bad})
    assert config.from_dict({"scales": [1, 2.5]}).scales == [1, 2.5]


@pytest.mark.parametrize("options, match", [
    (dict(orthonormal=True, num_measurements=5), "orthonormal=True needs num_measurements <= dim"),
    (dict(measurement_init="identity", num_measurements=5), "measurement_init='identity' needs num_measurements"),
    (dict(measurement_init="identity", train_measurements=False, num_measurements=6), "identity")])
def test_qpdn_config_refuses_more_orthonormal_or_identity_measurements_than_dim(options, match, tmp_path):
    """The config was accepted and only the layer refused it, so a config.json holding it raised the layer's
    error without the file's name."""
    with pytest.raises(ValueError, match=match):
        QPDNConfig(num_words=10, num_classes=2, dim=4, **options)
    _qpdn().save_pretrained(tmp_path / "m")
    _edit_header(tmp_path / "m", config=options)
    with pytest.raises(ValueError, match=r"m/config.json: not a valid 'qpdn' config"):
        Model.from_pretrained(tmp_path / "m")


@pytest.mark.parametrize("options", [dict(measurement_init="random", num_measurements=6),
                                     dict(orthonormal=True, head="dense", num_measurements=6),
                                     dict(complete=True, num_measurements=6),
                                     dict(measurement="povm", measurement_init="identity", num_measurements=6)])
def test_qpdn_configs_with_more_measurements_than_dim_that_build_stay_accepted(options):
    QPDN(QPDNConfig(num_words=10, num_classes=2, dim=4, **options))


@pytest.mark.parametrize("sizes", [("a",), (None,), (float("nan"),), (float("inf"),), ([3],)])
def test_kernel_sizes_that_are_not_numbers_are_refused_naming_the_field(sizes):
    """``int("a")``, ``int(None)`` and ``int(nan)`` raised their own errors, naming no field."""
    with pytest.raises(ValueError, match="kernel_sizes must be integers"):
        OrderClassifierConfig(num_words=10, num_classes=2, kernel_sizes=sizes)


def test_a_config_that_only_the_layers_refuse_is_refused_naming_config_json(tmp_path):
    """An ``embedding_options`` key the embedding does not know passed ``from_dict``; loading then raised the
    embedding's bare TypeError, naming no file. The config checks its options now (``from_dict`` refuses them),
    and the error names config.json and the option."""
    klass = get_model_class("order_classifier")
    model = klass(klass.config_class(num_words=10, num_classes=2, dim=4, hidden=3))
    model.save_pretrained(tmp_path / "m")
    for options, error in [({"bogus": 1}, r"embedding_options: \['bogus'\] are unknown"),
                           ({"frequency_sharing": "bogus"},
                            r"embedding_options\['frequency_sharing'\] must be one of")]:
        _edit_header(tmp_path / "m", config={"embedding_options": options})
        with pytest.raises(ValueError, match=rf"m/config.json: not a valid 'order_classifier' config \({error}"):
            Model.from_pretrained(tmp_path / "m")


# --------------------------------------------------------------------------- damaged or foreign checkpoints
@pytest.mark.parametrize("metadata", [[1, 2], "notes", 3])
def test_metadata_that_is_not_a_json_object_is_refused_naming_config_json(metadata, tmp_path):
    """A list or a string was returned as the checkpoint's metadata (its readers call ``.get`` on it)."""
    _qpdn().save_pretrained(tmp_path / "m")
    _edit_header(tmp_path / "m", metadata=metadata)
    with pytest.raises(ValueError, match=r"m/config.json: metadata must be a JSON object"):
        Model.from_pretrained(tmp_path / "m")


def test_a_checkpoint_of_a_newer_qpnlp_says_so_when_it_does_not_load(tmp_path):
    """A config key added by a newer qpnlp read as a damaged file ("unknown QPDNConfig keys"), the version
    stored next to it unmentioned."""
    from qpnlp import __version__

    _qpdn().save_pretrained(tmp_path / "m")
    _edit_header(tmp_path / "m", qpnlp_version="99.1.0", config={"new_option": 1})
    with pytest.raises(ValueError, match=rf"unknown QPDNConfig keys.*saved by qpnlp 99.1.0, newer than this "
                                         rf"qpnlp {__version__}: upgrade"):
        Model.from_pretrained(tmp_path / "m")
    _edit_header(tmp_path / "m", qpnlp_version="0.0.1")                     # an older one: no such note
    with pytest.raises(ValueError, match="unknown QPDNConfig keys") as raised:
        Model.from_pretrained(tmp_path / "m")
    assert "saved by" not in str(raised.value)
    _edit_header(tmp_path / "m", qpnlp_version="99.1.0", config={"new_option": None})
    header = json.loads((tmp_path / "m" / CONFIG_FILE).read_text())
    del header["config"]["new_option"]
    (tmp_path / "m" / CONFIG_FILE).write_text(json.dumps(header))
    assert isinstance(Model.from_pretrained(tmp_path / "m"), QPDN)     # a newer checkpoint that fits still loads
    _edit_header(tmp_path / "m", qpnlp_version=5)
    with pytest.raises(ValueError, match="m/config.json: qpnlp_version must be a string"):
        Model.from_pretrained(tmp_path / "m")


@pytest.mark.parametrize("listed", ["5", '{"a": 1}', "[1]", "not json"])
def test_an_unreadable_complex128_listing_is_refused_naming_the_weights_file(listed, tmp_path):
    """The listing of the complex128 tensors was iterated as found: ``5`` raised a bare TypeError."""
    _qpdn().save_pretrained(tmp_path / "m")
    path = tmp_path / "m" / WEIGHTS_FILE
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    save_file(load_file(str(path)), str(path), metadata={**metadata, "qpnlp_complex128": listed})
    with pytest.raises(ValueError, match=r"m/model.safetensors: unreadable qpnlp_complex128 metadata"):
        Model.from_pretrained(tmp_path / "m")


# --------------------------------------------------------------------------- saving what loading refuses
def test_save_refuses_non_finite_parameters_and_writes_nothing(tmp_path):
    """A diverged model was saved, and from_pretrained then refused the directory."""
    model = _qpdn()
    with torch.no_grad():
        model.classifier.bias[0] = float("inf")
    with pytest.raises(ValueError, match=r"cannot save QPDN to .*: tensor 'classifier.bias' holds NaN or infinite"):
        model.save_pretrained(tmp_path / "m")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("build", [lambda: _qpdn(), lambda: CNM(CNMConfig(num_words=10, dim=4, num_measurements=3))],
                         ids=["qpdn", "cnm-no-meta-skeleton"])
def test_save_refuses_a_precision_move_that_bypassed_the_config(build, tmp_path):
    """``.double()`` of a ``torch.compile`` wrapper is ``nn.Module.double``: float64 tables next to complex64
    measurements, the config still float32; the save succeeded and from_pretrained refused it (CNM, whose
    skeleton cannot be built on ``meta``, had no check before allocation either)."""
    model = build()
    compiled = torch.compile(model, backend="eager")
    compiled.double()
    with pytest.raises(ValueError, match=r"cannot save .*torch.float64 but the config records torch.float32.*"
                                         r"model.to\(dtype\)"):
        compiled.save_pretrained(tmp_path / "m")
    assert not (tmp_path / "m").exists()
    fine = build()
    torch.compile(fine, backend="eager").save_pretrained(tmp_path / "ok")       # the wrapper saves its model
    fine.to(torch.float64).save_pretrained(tmp_path / "double")
    assert Model.from_pretrained(tmp_path / "double").config.complex128


def test_save_refuses_a_layer_replaced_after_construction(tmp_path):
    """The state dict no longer matched the config (5 classes, config 2): saved, then refused on loading."""
    model = _qpdn()
    model.classifier = torch.nn.Linear(3, 5)
    with pytest.raises(ValueError, match=r"cannot save QPDN to .*tensor 'classifier.weight' is \(5, 3\)"):
        model.save_pretrained(tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_save_refuses_a_vocabulary_that_is_not_one_before_writing(tmp_path):
    """A list failed half-way through the save with AttributeError ``'list' object has no attribute 'to_dict'``."""
    with pytest.raises(TypeError, match="vocabulary must be a qpnlp Vocabulary; got list"):
        _qpdn().save_pretrained(tmp_path / "m", vocabulary=["a", "b"])
    assert not (tmp_path / "m").exists()
