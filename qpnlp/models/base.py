"""The model contract: one config type, one save format and one registry for every model.

Every model of the library (and every model a user adds) is a
:class:`Model`: an ``nn.Module`` built from a JSON-serialisable config
dataclass (:class:`ModelConfig`, strict ``from_dict``),
registered by name with :func:`register_model`. The trainer, the CLI,
checkpoints and ``qpnlp evaluate`` look models up in the registry and never
switch on model names.

Save format (a directory; no pickle anywhere, so loading never runs code)::

    DIRECTORY/
      config.json          {"format": "qpnlp-model/1", "model": NAME, "config": {...},
                            "metadata": {...}, "qpnlp_version": ...}
      model.safetensors    the state dict (complex tensors stored as complex)
      vocabulary.json      the vocabulary (optional; Vocabulary.to_dict())
      ...                  further files of the caller (optional; save_pretrained(files=...))

The directory is written atomically: everything goes to a temporary sibling
directory, each file is fsynced, and the directory is renamed into place
(:func:`atomic_directory`), so a crash during a save never leaves a
half-written checkpoint over a good one.

Two tasks share the contract: ``"classification"`` models map word ids
``(B, L)`` and a bool mask ``(B, L)`` (True = word, always explicit) to class
logits ``(B, C)``; ``"matching"`` models score question / answer batches
``forward(q_ids, q_mask, a_ids, a_mask) -> (B,)``.

Examples
--------
>>> import dataclasses, tempfile, torch
>>> @register_model("doc_tiny_bow")
... class TinyBow(Model):
...     @dataclasses.dataclass
...     class Config(ModelConfig):
...         num_words: int
...         num_classes: int
...         dim: int = 4
...     config_class = Config
...     def __init__(self, config, *, pretrained=None, generator=None):
...         super().__init__(config)
...         self.embedding = torch.nn.EmbeddingBag(config.num_words, config.dim, mode="sum")
...         self.out = torch.nn.Linear(config.dim, config.num_classes)
...     def forward(self, ids, mask):
...         return self.out(self.embedding(ids, per_sample_weights=mask.float()))
>>> model = TinyBow(TinyBow.Config(num_words=10, num_classes=2))
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = model.save_pretrained(f"{tmp}/tiny")
...     again = Model.from_pretrained(f"{tmp}/tiny")
>>> type(again).__name__, again.config == model.config
('TinyBow', True)
>>> unregister_model("doc_tiny_bow")
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import threading
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn

from qpnlp._atomic import MAX_CONFIG_BYTES, atomic_directory, atomic_write_text, check_header_size
from qpnlp._checks import checked_copy
from qpnlp._device import resolve_device
from qpnlp._errors import newer_format_note, preview
from qpnlp._safetensors import save_tensors
from qpnlp.data.names import dataset_name
from qpnlp.hilbert._validation import Validate

from ._batch import check_batch
from ._precision import PrecisionMixin, check_one_precision
from ._config_types import _check_json_type
from ._repr import config_repr
from ._state_checks import (_check_file_names, _check_parents, _check_savable, _check_vocabulary, _metadata,
                            _model_from_state, _restored, _storable)
from ._versions import _newer_version_note, _version

__all__ = ["FORMAT", "CONFIG_FILE", "WEIGHTS_FILE", "VOCABULARY_FILE", "TASKS", "ModelConfig", "Model",
           "check_batch", "register_model", "unregister_model", "get_model_class", "registered_models", "read_model_header",
           "atomic_directory", "atomic_write_text"]

#: The ``format`` field of a saved model's ``config.json``.
FORMAT = "qpnlp-model/1"
#: The file of a saved model's configuration (JSON).
CONFIG_FILE = "config.json"
#: The file of a saved model's weights (safetensors).
WEIGHTS_FILE = "model.safetensors"
#: The file of a saved model's vocabulary (JSON).
VOCABULARY_FILE = "vocabulary.json"
#: The tasks a registered model serves (``task=`` of :func:`register_model`).
TASKS = ("classification", "matching", "temporal")
# Installed packages register models through entry points of this group (each loads a module that registers);
# qpnlp's own Word2Fun (a package above models/ in the layout) is registered this way too.
PLUGIN_GROUP = "qpnlp.models"

_REGISTRY: dict[str, type[Model]] = {}
_ConfigT = TypeVar("_ConfigT", bound="ModelConfig")
_ModelT = TypeVar("_ModelT", bound="Model")


# --------------------------------------------------------------------------- config
class ModelConfig:
    """Mixin for config dataclasses: ``to_dict``, a strict ``from_dict``, ``_require``.

    ``from_dict`` refuses unknown keys and values of the wrong JSON type
    (naming the field), before the dataclass' own ``__post_init__`` checks run.
    Direct construction checks the same types: every subclass' ``__post_init__``
    is wrapped so that a value of the wrong type (an ``int`` field given
    ``True`` or ``2.0``, a ``str`` field given a number, a ``float`` given
    NaN) raises ValueError naming the field before the subclass' own checks.
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__post_init__")
        if own is not None and not getattr(own, "_checks_types", False):
            def __post_init__(self, _own=own) -> None:
                self._check_types()
                _own(self)

            __post_init__._checks_types = True
            __post_init__.__doc__ = own.__doc__
            cls.__post_init__ = __post_init__

    def __post_init__(self) -> None:
        self._check_types()

    def _check_types(self) -> None:
        """Refuse field values of the wrong type (the JSON types of :meth:`from_dict`), naming the field."""
        for field in dataclasses.fields(self):
            _check_json_type(type(self), field.name, getattr(self, field.name))

    @staticmethod
    def _require(checks) -> None:
        """Raise ValueError with the message of the first ``(ok, message)`` pair that is not ok."""
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls: type[_ConfigT], values: Mapping[str, Any]) -> _ConfigT:
        if not isinstance(values, Mapping):
            raise ValueError(f"{cls.__name__} must be given a JSON object; got {type(values).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(values) - set(fields)
        if unknown:
            raise ValueError(f"unknown {cls.__name__} keys: {preview(sorted(unknown), 200)}")
        for name, value in values.items():
            _check_json_type(cls, name, value)
        return cls(**values)


# --------------------------------------------------------------------------- registry
def register_model(name: str) -> Callable[[type[_ModelT]], type[_ModelT]]:
    """Class decorator: register a :class:`Model` subclass under ``name`` (its save-format and CLI name).

    Parameters
    ----------
    name : str
        Non-empty; the ``model`` of its ``config.json`` and ``qpnlp train NAME``. One taken is refused (ValueError).
    """

    if not isinstance(name, str) or not name.strip():
        # `@register_model` without a name replaced the class by this function; "" or 3 broke saving and listing
        raise TypeError(f"register_model needs a non-empty name string: decorate with @register_model(\"name\"); "
                        f"got {name!r}")

    def decorate(cls: type[_ModelT]) -> type[_ModelT]:
        if not (isinstance(cls, type) and issubclass(cls, Model)):
            raise TypeError(f"register_model({name!r}) needs a Model subclass; got {cls!r}")
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"a model named {name!r} is already registered ({_REGISTRY[name].__qualname__}); choose "
                             f"another name, or unregister_model({name!r}) first to replace it (a notebook cell "
                             f"run again)")
        other = next((n for n, c in _REGISTRY.items() if c is cls and n != name), None)
        if other is not None:               # one class, one name: the first would save under the second
            raise ValueError(f"{cls.__qualname__} is already registered as {other!r}; unregister_model({other!r}) "
                             f"first to rename it")
        config_class = getattr(cls, "config_class", None)
        if not (dataclasses.is_dataclass(config_class) and isinstance(config_class, type)
                and issubclass(config_class, ModelConfig)):
            raise TypeError(f"{cls.__qualname__}.config_class must be a ModelConfig dataclass; got {config_class!r}")
        if cls.task not in TASKS:
            raise ValueError(f"{cls.__qualname__}.task must be one of {TASKS}; got {cls.task!r}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def unregister_model(name: str) -> None:
    """Remove ``name`` from the registry (for tests and notebooks that define throwaway models).

    An unknown name is ignored on purpose: cleanup code calls this in ``finally`` blocks whether or not the
    registration ran (or was undone).

    Parameters
    ----------
    name : str
        A name given to :func:`register_model`.
    """
    _REGISTRY.pop(name, None)


def get_model_class(name: str) -> type[Model]:
    """The registered model class called ``name``; a clear error listing the known names otherwise.

    Parameters
    ----------
    name : str
        A registered name (:func:`registered_models`; built-in models and installed plugins are loaded first).
    """
    _load_builtin_models()
    if name not in _REGISTRY:
        raise ValueError(f"unknown model {preview(name, 60)}; registered: {', '.join(registered_models())} (a model "
                         f"of your own is registered when its module is imported: import it first, or pass "
                         f"`qpnlp --import MODULE`)")
    return _REGISTRY[name]


def registered_models(task: str | None = None) -> tuple[str, ...]:
    """Names of the registered models (of one task of :data:`TASKS` if given), sorted.

    Parameters
    ----------
    task : str, optional
        Only the models of this task, one of :data:`TASKS` (default: all).
    """
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}")
    _load_builtin_models()
    return tuple(sorted(n for n, c in _REGISTRY.items() if task is None or c.task == task))


def _load_builtin_models() -> None:
    """Import the built-in models (they register themselves) and the installed plugins, once.

    A plugin that fails to load raises ImportError naming its entry point, on
    every call until it loads (never a registry silently missing the plugins).
    """
    global _LOADED
    with _LOADING:                      # other threads wait: going on meanwhile, one missed a plugin's model
        if _LOADED:
            return
        _LOADED = True                  # set first: a plugin that asks for the registry while loading gets no loop
        try:
            import qpnlp.models  # noqa: F401

            for entry in importlib.metadata.entry_points(group=PLUGIN_GROUP):
                try:
                    entry.load()
                except Exception as err:
                    dist = getattr(getattr(entry, "dist", None), "name", None)
                    raise ImportError(f"the {PLUGIN_GROUP!r} plugin {entry.name!r} ({entry.value}"
                                      f"{f', package {dist}' if dist else ''}) failed to load: "
                                      f"{type(err).__name__}: {err}") from err
        except BaseException:
            _LOADED = False
            raise


_LOADED = False
_LOADING = threading.RLock()        # reentrant: a plugin may ask for the registry while loading


# --------------------------------------------------------------------------- model
class Model(PrecisionMixin, nn.Module):
    """Base of every model: a config, ``save_pretrained`` / ``from_pretrained``, a registry name.

    Subclasses set ``config_class`` (a :class:`ModelConfig` dataclass) and
    ``task``, take the config as the first argument of ``__init__`` (other
    arguments keyword-only and optional: initial values such as pretrained
    vectors or a generator, never needed to rebuild the model), and are
    registered with :func:`register_model`.

    Parameters
    ----------
    config : ModelConfig
        An instance of the class's ``config_class`` (TypeError otherwise). ``self.config`` is a copy made by
        the config's constructor: a field set after the config was made is checked here, and the caller's later
        changes to ``config`` (to build the next model of a notebook) leave this model's, and so what its
        ``save_pretrained`` writes, as it was built.
    """

    name: ClassVar[str] = ""
    config_class: ClassVar[type] = None  # type: ignore[assignment]
    task: ClassVar[str] = "classification"
    # The training settings of the model's reproduction (TrainConfig / MatchingConfig fields, plus "select": a
    # dev-selection grid as `qpnlp train --select` takes it): the defaults of its `qpnlp train` command.
    # "per_dataset" / "per_vectors" map a data set (any case) / vector set name to settings that replace these
    # (training_default).
    training_defaults: ClassVar[dict] = {}
    # Whether the trainers cut this model's training batches into length-sorted chunks
    # (qpnlp.training.length_chunks): worth it where padding costs more than model calls. A class attribute
    # (CNM) or, where it depends on the config, a property (OrderClassifier: not for FastText).
    chunk_training: bool = False
    #: Validation mode of this model's input checks (None: the global :func:`qpnlp.hilbert.set_validation`).
    validate: Validate = None

    def __init__(self, config) -> None:
        super().__init__()
        if not isinstance(config, self.config_class):
            raise TypeError(f"{type(self).__name__} needs a {self.config_class.__name__}; got {type(config).__name__}")
        self.config = checked_copy(config)

    def extra_repr(self) -> str:
        """The config's settings that differ from their defaults, first in ``print(model)`` (``config_repr``)."""
        return config_repr(self.config)

    @classmethod
    def training_default(cls, key: str, *, dataset: str | None = None, vectors: str | None = None,
                         fallback: Any = None) -> Any:
        """The default training setting ``key`` for a data set and a vector set (names as on the command line).

        ``training_defaults["per_vectors"][vectors]`` first, then ``training_defaults["per_dataset"][dataset]``,
        then ``training_defaults`` itself; ``fallback`` when none of them sets ``key``. Data-set names match in
        any case (:func:`~qpnlp.data.names.dataset_name`: ``TREC`` finds a ``"trec"`` entry).
        """
        defaults = cls.training_defaults
        per_dataset = {dataset_name(name): scope for name, scope in defaults.get("per_dataset", {}).items()}
        for scope in (defaults.get("per_vectors", {}).get(str(vectors), {}),
                      {} if dataset is None else per_dataset.get(dataset_name(dataset), {}), defaults):
            if key in scope:
                return scope[key]
        return fallback

    # ------------------------------------------------------------------ inputs
    def check_batch(self, ids: torch.Tensor, mask: torch.Tensor, names: tuple[str, str] = ("ids", "mask")) -> None:
        """:func:`check_batch` against this model: its vocabulary size, its device and its ``validate`` mode; while
        validation is on, also one precision for all its tensors (a submodule moved alone with its own
        ``double()``: TypeError naming it, ``qpnlp.models._precision.check_one_precision``)."""
        first = next(self.parameters(), None)
        check_batch(ids, mask, num_words=getattr(self.config, "num_words", None),
                    device=None if first is None else first.device, names=names, validate=self.validate)
        check_one_precision(self, self.validate)

    def check_pair(self, q_ids: torch.Tensor, q_mask: torch.Tensor, a_ids: torch.Tensor, a_mask: torch.Tensor) -> None:
        """The matching contract: both batches checked (:meth:`check_batch`, names ``q_ids`` / ``a_ids`` ...) and of
        one batch size (no broadcasting)."""
        self.check_batch(q_ids, q_mask, names=("q_ids", "q_mask"))
        self.check_batch(a_ids, a_mask, names=("a_ids", "a_mask"))
        if q_ids.shape[0] != a_ids.shape[0]:
            raise ValueError(f"questions and answers are scored in pairs: q_ids has batch size {q_ids.shape[0]} "
                             f"but a_ids has {a_ids.shape[0]} (repeat the question for each answer)")

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, config, *, vocabulary=None, pretrained: torch.Tensor | None = None,
              generator: torch.Generator | None = None) -> Model:
        """A freshly initialised model for training (the trainer's constructor).

        Override when the model needs something from the training vocabulary
        (e.g. IDF weights); the default passes ``pretrained`` and ``generator``.
        """
        return cls(config, pretrained=pretrained, generator=generator)

    @classmethod
    def empty(cls, config) -> Model:
        """A model of the right shapes to load saved parameters into (``from_pretrained`` uses it).

        Override when ``__init__`` needs more than the config (e.g. placeholder
        IDF values that the state dict then overwrites). Must also work under
        ``torch.device("meta")``: the shapes are checked on a meta skeleton
        before anything is allocated.
        """
        return cls(config)

    # ------------------------------------------------------------------ saving
    def save_pretrained(self, directory: str | os.PathLike, *, vocabulary=None,
                        metadata: Mapping[str, Any] | None = None, files: Mapping[str, str] | None = None) -> Path:
        """Write ``config.json``, ``model.safetensors`` (and ``vocabulary.json``) atomically to ``directory``.

        ``metadata`` (JSON: data set, split, label names, training settings, ...)
        is stored in ``config.json`` and returned by :func:`read_model_header`; ``files`` (file name: text) are
        further files of the directory, written with it (data too large for the header, such as a training run's
        generator states). What :meth:`from_pretrained` would refuse is refused before anything is written
        (ValueError): tensors holding NaN or infinite values, tensors that do not match the config (names, shapes,
        dtypes, the recorded precision), a vocabulary whose size is not the config's ``num_words``, a
        ``config.json`` over ``MAX_CONFIG_BYTES``, a file name that is not a plain name of its own, a path below a
        file; a vocabulary that is not a Vocabulary, metadata that is not a mapping with string keys (TypeError).
        A directory that holds a saved qpnlp model (its ``config.json``) is replaced whole, whatever model it held
        (none of its files is left beside the new ones); any other non-empty directory is refused (FileExistsError).
        """
        if not self.name or _REGISTRY.get(self.name) is not type(self):
            # a subclass inherits its registered base's name: saved under it, it would load as the base class
            raise TypeError(f"{type(self).__name__} is not registered; decorate it with @register_model(name)"
                            + (f" (the name {self.name!r} is {_REGISTRY[self.name].__qualname__}'s)"
                               if self.name in _REGISTRY else ""))
        _check_parents(directory)
        header = dict(format=FORMAT, model=self.name, config=self.config.to_dict(), metadata=_metadata(metadata),
                      qpnlp_version=_version())
        text = json.dumps(header, indent=2, allow_nan=False) + "\n"
        where, state = f"cannot save {type(self).__name__} to {directory}", self.state_dict()
        _check_savable(where, type(self), self.config, state)       # never write what from_pretrained refuses
        check_header_size(text, Path(directory) / CONFIG_FILE)
        if vocabulary is not None:
            _check_vocabulary(where, vocabulary, self.config)
        files = _check_file_names(where, files, own=(CONFIG_FILE, WEIGHTS_FILE, VOCABULARY_FILE))
        tensors, stored_metadata = _storable(state)
        with atomic_directory(directory, replaces=CONFIG_FILE) as tmp:   # never a user's own directory
            (tmp / CONFIG_FILE).write_text(text, encoding="utf-8", newline="\n")   # the same file on Windows
            for name, content in files.items():
                (tmp / name).write_text(content, encoding="utf-8", newline="\n")
            save_tensors(tensors, tmp / WEIGHTS_FILE, metadata={"format": FORMAT, "model": self.name,
                                                                 **stored_metadata})
            if vocabulary is not None:
                (tmp / VOCABULARY_FILE).write_text(json.dumps(vocabulary.to_dict(), allow_nan=False), encoding="utf-8")
        return Path(directory)

    @classmethod
    def from_pretrained(cls: type[_ModelT], directory: str | os.PathLike, *,
                        device: str | torch.device = "cpu") -> _ModelT:
        """Rebuild a saved model (in eval mode) from ``directory``; ``Model.from_pretrained`` loads any kind.

        The config is validated, and its sizes checked against the stored
        tensors' shapes, before any parameter is allocated; stored tensors
        holding NaN or infinite values are refused. A ``device`` this
        machine lacks is refused before anything is read. Errors name the
        file at fault, and the versions when a newer qpnlp saved the model.
        """
        device = resolve_device(device)
        header = read_model_header(directory)
        try:
            return cls._from_header(directory, header).to(device).eval()
        except ValueError as err:       # a newer qpnlp's checkpoint: say so (its config or tensors may be new)
            note = _newer_version_note(header)
            if not note:
                raise
            raise ValueError(f"{err}{note}") from None

    @classmethod
    def _from_header(cls: type[_ModelT], directory: str | os.PathLike, header: dict) -> _ModelT:
        config_path = Path(directory) / CONFIG_FILE
        try:
            klass = get_model_class(header["model"])
        except ValueError as err:
            raise ValueError(f"{config_path}: {err}") from None
        if not issubclass(klass, cls):
            raise ValueError(f"{directory} holds a {header['model']!r} model, not a {cls.__name__}")
        try:
            config = klass.config_class.from_dict(header["config"])
        except (ValueError, TypeError) as err:            # TypeError: a required field is missing
            raise ValueError(f"{config_path}: not a valid {header['model']!r} config ({err})") from None
        path = Path(directory) / WEIGHTS_FILE
        if path.exists() and not path.is_file():      # a FIFO blocked the read, a device was mapped
            raise ValueError(f"{path}: not a readable safetensors file (not a regular file)")
        try:
            state = _restored(load_file(str(path), device="cpu"), path)
        except (SafetensorError, OSError) as err:
            raise ValueError(f"{path}: not a readable safetensors file ({err})") from None
        model = _model_from_state(klass, config, state, weights=path, config_path=config_path, name=header["model"])
        return typing.cast(_ModelT, model)     # klass is cls or a subclass (checked above)


def read_model_header(directory: str | os.PathLike) -> dict:
    """The parsed ``config.json`` of a saved model (format checked; model name, config, metadata).

    Parameters
    ----------
    directory : str or os.PathLike
        A directory written by :meth:`Model.save_pretrained`; a file (a qpnlp 0.1 checkpoint) is refused with a hint.
    """
    directory = Path(directory)
    if directory.is_file():
        raise ValueError(f"{directory} is a file; qpnlp models are saved as directories (config.json + "
                         f"model.safetensors). A file from qpnlp 0.1 `--save` converts with "
                         f"`qpnlp convert {directory} NEW_DIRECTORY`")
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{directory} is not a saved qpnlp model (no {CONFIG_FILE})")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"{path} is {path.stat().st_size} bytes; not a qpnlp model config")
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else None
        legacy_word2fun = isinstance(header, dict) and isinstance(header.get("model"), dict) \
            and "family" in header["model"]
        hint = f" (a Word2Fun directory from qpnlp 0.1: `qpnlp convert {directory} NEW_DIRECTORY`)" \
            if legacy_word2fun else newer_format_note(found, FORMAT)
        raise ValueError(f"{path} is not a {FORMAT} model config (format {preview(found)}){hint}")
    if not isinstance(header.get("config"), dict) or not isinstance(header.get("model"), str):
        raise ValueError(f"{path} lacks its model name or config")
    header.setdefault("metadata", {})
    if not isinstance(header["metadata"], dict):      # a list or a string reached load_checkpoint's callers
        raise ValueError(f"{path}: metadata must be a JSON object; got {type(header['metadata']).__name__}")
    if not isinstance(header.get("qpnlp_version", ""), str):
        raise ValueError(f"{path}: qpnlp_version must be a string; got {preview(header['qpnlp_version'])}")
    return header
