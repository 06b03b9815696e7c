"""The per-epoch training state behind ``--resume``: parameters, optimiser state, RNG state and progress.

A training-state directory holds two files, written together atomically
(:func:`qpnlp.models.base.atomic_directory`) at the end of every epoch:

* ``state.safetensors``: the model's current parameters (``model.*``), the
  best-so-far parameters (``best.*``, omitted when the current epoch is the
  best), every tensor of every optimiser's state (``optimiser.<i>.<param
  index>.<key>``, dense and sparse optimisers alike: SparseAdam, Adam,
  SparseRMSprop, RMSprop) and the torch RNG states (``rng.torch``,
  ``rng.cuda.<i>``, ``rng.numpy``); complex128 tensors are stored as their
  float64 real views, as in ``model.safetensors``;
  a large tensor (an embedding table, SparseAdam's moments of it) is
  stored as the rows that differ from a base (``<name>#rows``,
  ``<name>#values``; ``qpnlp.training._row_delta``) when at most half
  of them do: the parameters against the model's initial ones, the best
  parameters against the current ones, optimiser state against zeros. With
  a pretrained fallback vocabulary of 400k words most rows of the tables
  are never trained, and a TREC state takes megabytes instead of 480 MB;
* ``state.json``: everything else (epoch, best epoch and score, epochs
  without improvement, history, elapsed time, the optimisers' non-tensor
  state such as SparseAdam's integer step, Python's and NumPy's RNG
  counters) and the run's identity: model name and config, the names of
  its trainable parameters, training settings and a fingerprint of the
  training and dev data; ``row_deltas`` (the base and shape of each tensor
  stored as rows), the fingerprint of the initial parameters and the
  ``qpnlp_version`` that wrote it.

No pickle: loading never runs code. Resuming checks the identity first, so a
state is never continued with other data, another model (or other
parameters frozen), a model that starts from other parameters (when the
state holds rows against the initial ones) or other training settings
(``epochs``, ``patience``, ``device``, ``progress``, ``compile`` and
``pad_to_multiple_of`` may change; ``epochs`` not below the epochs already
trained): a refusal names each model config field and training setting
that differs, with both values. A field that a state of an earlier qpnlp
does not record (added since) stands for its default, as for a saved model.

A run that stopped early (``patience`` epochs without a better dev score)
cannot continue with the same settings, so its state is then reduced to a
*final* one: the best parameters and the progress only (a third of the
size), enough to give its result again on resume.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from qpnlp._atomic import atomic_directory, check_header_size
from qpnlp._errors import newer_format_note, preview
from qpnlp._json import leaves
from qpnlp._safetensors import save_tensors
from qpnlp.models._config_types import field_default
from qpnlp.models.base import _restored, _storable, _version

from ._row_delta import decode_rows, encode_rows, fingerprint
from .sparse_rmsprop import check_state_shapes

__all__ = ["STATE_FORMAT", "InitialParameters", "has_training_state", "save_training_state", "load_training_state",
           "data_fingerprint", "run_identity", "RESUMABLE_CHANGES"]

#: The ``format`` field of a saved training state.
STATE_FORMAT = "qpnlp-training-state/2"
#: Formats this version reads (/1: every tensor stored whole).
READABLE_FORMATS = frozenset({"qpnlp-training-state/1", STATE_FORMAT})
TENSORS_FILE = "state.safetensors"
JSON_FILE = "state.json"
#: Training settings that may differ between a run and its resumption.
RESUMABLE_CHANGES = frozenset({"epochs", "patience", "progress", "device", "compile", "pad_to_multiple_of"})


@dataclass(frozen=True, eq=False)          # == and hash of object: its generated == compared tensors
class InitialParameters:
    """A copy of a model's parameters before training, and their fingerprint.

    Given to :func:`save_training_state`, large parameters are stored as the
    rows that differ from these; resuming then needs a model that starts
    from the same parameters (same vectors, vocabulary and seed), which
    loading checks against the fingerprint.

    Parameters
    ----------
    state : mapping of str to torch.Tensor
        The model's state dict before training, copied (``InitialParameters.of(model)`` makes both fields).
    fingerprint : str
        A hash of ``state``: the identity of the initial parameters a resumed run must start from.
    """

    state: Mapping[str, torch.Tensor]
    fingerprint: str

    @classmethod
    def of(cls, model: torch.nn.Module) -> InitialParameters:
        state = copy.deepcopy(model.state_dict())
        return cls(state, fingerprint(state))


def has_training_state(directory: str | os.PathLike | None) -> bool:
    """Whether ``directory`` holds a training state written by :func:`save_training_state`.

    Parameters
    ----------
    directory : path-like or None
        The folder looked at; None gives False.
    """
    return directory is not None and (Path(directory) / JSON_FILE).is_file()


def data_fingerprint(*parts) -> str:
    """SHA-256 of nested sequences of ints (encoded texts, labels, groups): equal data, equal fingerprint.

    >>> data_fingerprint([[2, 3], [4]], [0, 1]) == data_fingerprint([[2, 3], [4]], [0, 1])
    True
    >>> data_fingerprint([[2, 3], [4]]) == data_fingerprint([[2], [3, 4]])
    False
    """
    digest = hashlib.sha256()

    def feed(item) -> None:
        if isinstance(item, (np.ndarray, torch.Tensor)) or (isinstance(item, Sequence) and item and
                                                             not isinstance(item[0], (Sequence, np.ndarray))):
            array = np.asarray(item.cpu() if isinstance(item, torch.Tensor) else item, dtype=np.int64)
            digest.update(b"[%d]" % array.size + array.tobytes())
        elif isinstance(item, Iterable):
            digest.update(b"(")
            for sub in item:
                feed(sub)
            digest.update(b")")
        else:
            digest.update(repr(item).encode())

    for part in parts:
        feed(part)
    return digest.hexdigest()


def run_identity(model: torch.nn.Module, config, data: str) -> dict:
    """What a resumed run must share with the run that wrote the state (see the module notes).

    Parameters
    ----------
    model : torch.nn.Module
        The model trained: its registry name, config and trainable parameters' names are recorded.
    config : ~qpnlp.training.TrainConfig
        The training settings; those of :data:`RESUMABLE_CHANGES` are left out.
    data : str
        A fingerprint of the training and dev data (:func:`data_fingerprint`).
    """
    settings = {k: v for k, v in config.to_dict().items() if k not in RESUMABLE_CHANGES}
    model_config = model.config.to_dict() if hasattr(getattr(model, "config", None), "to_dict") else None
    trainable = [name for name, param in model.named_parameters() if param.requires_grad]
    return dict(model=getattr(model, "name", None) or type(model).__name__, model_config=model_config,
                settings=settings, data=data, trainable=trainable)


# --------------------------------------------------------------------------- RNG
def _capture_rng() -> tuple[dict[str, torch.Tensor], dict]:
    tensors = {"rng.torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = state
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    tensors["rng.numpy"] = torch.from_numpy(np.asarray(keys, dtype=np.int64))
    version, internal, gauss_next = random.getstate()
    return tensors, dict(numpy=[kind, int(pos), int(has_gauss), float(gauss)],
                         python=[version, list(internal), gauss_next])


def _restore_rng(tensors: Mapping[str, torch.Tensor], values: dict) -> None:
    torch.set_rng_state(tensors["rng.torch"])
    cuda = [tensors[f"rng.cuda.{i}"] for i in range(sum(k.startswith("rng.cuda.") for k in tensors))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda[: torch.cuda.device_count()])
    kind, pos, has_gauss, gauss = values["numpy"]
    np.random.set_state((kind, tensors["rng.numpy"].numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = values["python"]
    random.setstate((version, tuple(internal), gauss_next))


# --------------------------------------------------------------------------- save / load
class _Entries:
    """The tensors of a state file and, for those stored as rows, their base and shape (``row_deltas``)."""

    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self.row_deltas: dict[str, dict] = {}

    def add(self, key: str, value: torch.Tensor, base: str | None = None,
            base_value: torch.Tensor | None = None) -> None:
        """``value`` under ``key``: as the rows that differ from ``base_value`` (None: zeros) when ``base``
        names one and ``qpnlp.training._row_delta.encode_rows`` takes it, else whole."""
        encoded = None if base is None else encode_rows(value, base_value)
        if encoded is None:
            self.tensors[key] = value.detach()
            return
        self.tensors[key + "#rows"], self.tensors[key + "#values"] = encoded
        self.row_deltas[key] = dict(base=base, shape=list(value.shape))

    def add_state(self, prefix: str, state: Mapping[str, torch.Tensor], base: str,
                  bases: Mapping[str, torch.Tensor] | None) -> None:
        """Each tensor of ``state`` as ``prefix.name``, against ``bases[name]`` where there is one."""
        for name, value in state.items():
            found = bases is not None and name in bases
            self.add(f"{prefix}.{name}", value, base if found else None, bases[name] if found else None)


def save_training_state(directory: str | os.PathLike, *, model: torch.nn.Module,
                        best_state: Mapping[str, torch.Tensor] | None,
                        optimisers: Sequence[torch.optim.Optimizer], progress: dict, identity: dict,
                        final: bool = False, initial: InitialParameters | None = None) -> Path:
    """Write the training state of the epoch just finished to ``directory`` (atomically).

    ``best_state`` is None when the model's current parameters are the best
    so far. ``progress`` (epoch, best epoch and score, history, ...) and
    ``identity`` (:func:`run_identity`) must be JSON. ``final``: the run
    stopped early; keep only the best parameters and the progress.
    ``initial``: the parameters the run started from; large parameters are
    then stored as the rows that differ from them.

    Parameters
    ----------
    directory : path-like
        The folder written (replaced atomically).
    model : torch.nn.Module
        Its current parameters are saved.
    best_state : mapping of str to torch.Tensor or None
        The best parameters so far (above).
    optimisers : sequence of torch.optim.Optimizer
        Every optimiser's state is saved, in this order.
    progress : dict
        The loop's progress (epoch, best epoch and score, history, ...), JSON.
    identity : dict
        The run's :func:`run_identity`, JSON.
    final : bool, default False
        The run stopped early: keep only the best parameters and the progress.
    initial : InitialParameters or None, default None
        The model's parameters before training: large tensors are stored as their rows that differ from these;
        None stores them whole.
    """
    entries, current = _Entries(), model.state_dict()
    initial_state = None if initial is None else initial.state
    header: dict = dict(format=STATE_FORMAT, qpnlp_version=_version(), identity=identity)
    if initial is not None:
        header["initial_fingerprint"] = initial.fingerprint
    if final:
        entries.add_state("best", current if best_state is None else best_state, "initial", initial_state)
        return _write(directory, entries, {**header, "progress": {**progress, "final": True}})
    entries.add_state("model", current, "initial", initial_state)
    if best_state is not None:
        entries.add_state("best", best_state, "model", current)
    scalars: dict[str, dict[str, dict]] = {}
    for i, optimiser in enumerate(optimisers):
        scalars[str(i)] = {}
        for index, values in optimiser.state_dict()["state"].items():
            for key, value in values.items():
                if isinstance(value, torch.Tensor):
                    entries.add(f"optimiser.{i}.{index}.{key}", value, "zeros")
                else:
                    scalars[str(i)].setdefault(str(index), {})[key] = value
    rng_tensors, rng_values = _capture_rng()
    entries.tensors.update(rng_tensors)
    header.update(progress=progress, best_is_current=best_state is None, optimisers=len(optimisers),
                  optimiser_scalars=scalars, rng=rng_values)
    return _write(directory, entries, header)


def _write(directory: str | os.PathLike, entries: _Entries, header: dict) -> Path:
    text = json.dumps({**header, "row_deltas": entries.row_deltas}, allow_nan=False, default=_plain)
    check_header_size(text, Path(directory) / JSON_FILE)     # a larger one would count as a user's, never replaced
    tensors, wide = _storable(entries.tensors)     # complex128 (double-precision models) as float64 real views
    with atomic_directory(directory, replaces=JSON_FILE) as tmp:     # never a user's own directory
        save_tensors(tensors, tmp / TENSORS_FILE, metadata={"format": STATE_FORMAT, **wide})
        (tmp / JSON_FILE).write_text(text, encoding="utf-8")
    return Path(directory)


def load_training_state(directory: str | os.PathLike, *, model: torch.nn.Module,
                        optimisers: Sequence[torch.optim.Optimizer], identity: dict,
                        initial: InitialParameters | None = None, config=None) -> tuple[dict, dict | None]:
    """Restore the model's parameters, the optimisers' state and the RNG state saved in ``directory``.

    Returns ``(progress, best_state)`` (``best_state`` None: the restored
    parameters are the best so far). A final state (``progress["final"]``)
    restores nothing and returns the best parameters. Raises ``ValueError``
    naming the directory when the state is unreadable or belongs to another
    run (model, settings or data differ from ``identity``). ``initial``: the
    parameters the model starts from, as the loop already holds them
    (default: the model's parameters as given). A model config field or
    training setting that the state does not record (an earlier qpnlp's)
    is compared with its default (of ``model.config`` and ``config``).

    Parameters
    ----------
    directory : path-like
        The folder :func:`save_training_state` wrote.
    model : torch.nn.Module
        The model built for the run; its parameters are replaced in place.
    optimisers : sequence of torch.optim.Optimizer
        The run's optimisers, in the order they were saved; their state is replaced.
    identity : dict
        The run's :func:`run_identity`, compared with the saved one.
    initial : InitialParameters or None, default None
        The parameters the model starts from (above); None: the model's as given.
    config : ~qpnlp.training.TrainConfig or None, default None
        The run's training settings, whose field defaults stand for those the state does not record.
    """
    directory = Path(directory)
    try:
        # strict, as written: a NaN best score (an edited file) would never be beaten, and fail the next save
        header = _strict_json((directory / JSON_FILE).read_text(encoding="utf-8"))
        # copies: load_file's tensors map the file, and the optimisers and the best parameters keep them; Windows
        # refuses to move or delete a mapped file, and so the next epoch's save, which replaces this directory
        mapped = load_file(str(directory / TENSORS_FILE), device="cpu")
        tensors = _restored({key: value.clone() for key, value in mapped.items()}, directory / TENSORS_FILE)
        del mapped
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, SafetensorError) as err:
        raise ValueError(f"{directory}: not a readable training state ({err})") from None
    found = header.get("format") if isinstance(header, dict) else None
    if found not in READABLE_FORMATS:
        raise ValueError(f"{directory} is not a qpnlp training state this qpnlp reads (format {preview(found)}, "
                         f"expected {STATE_FORMAT!r}){newer_format_note(found, STATE_FORMAT)}")
    defaults = dict(model_config=_field_defaults(getattr(model, "config", None)), settings=_field_defaults(config))
    _check_identity(directory, header.get("identity", {}), identity, defaults)
    tensors = _rows_rebuilt(directory, tensors, header, model, initial)
    if header["progress"].get("final"):
        return header["progress"], _prefixed(tensors, "best")
    if header.get("optimisers") != len(optimisers):
        raise ValueError(f"{directory}: the state has {header.get('optimisers')} optimiser(s), this run "
                         f"{len(optimisers)}")
    try:
        model.load_state_dict(_prefixed(tensors, "model"))
        for i, optimiser in enumerate(optimisers):
            state: dict[int, dict] = {}
            for key, value in _prefixed(tensors, f"optimiser.{i}").items():
                index, name = key.split(".", 1)
                state.setdefault(int(index), {})[name] = value
            for index, values in header["optimiser_scalars"][str(i)].items():
                state.setdefault(int(index), {}).update(values)
            current = optimiser.state_dict()
            optimiser.load_state_dict({"state": state, "param_groups": current["param_groups"]})
            check_state_shapes(optimiser)          # torch's own optimisers load any shape
    except (RuntimeError, KeyError, ValueError) as err:
        raise ValueError(f"{directory}: the training state does not fit this model ({err})") from None
    best = None if header["best_is_current"] else _prefixed(tensors, "best")
    _restore_rng(tensors, header["rng"])
    return header["progress"], best


def _rows_rebuilt(directory: Path, tensors: dict[str, torch.Tensor], header: dict, model: torch.nn.Module,
                  initial: InitialParameters | None) -> dict[str, torch.Tensor]:
    """``tensors`` with each one stored as rows (``header["row_deltas"]``) rebuilt on its base.

    ``initial`` (default: ``model``'s parameters, before loading) must be the
    parameters the saving run started from (fingerprint).
    """
    row_deltas = header.get("row_deltas", {})
    if not isinstance(row_deltas, dict) or not all(isinstance(entry, dict) for entry in row_deltas.values()):
        raise ValueError(f"{directory}: damaged training state (row_deltas is not a mapping of entries)")
    if any(entry.get("base") == "initial" for entry in row_deltas.values()):
        if initial is None:
            state = model.state_dict()
            initial = InitialParameters(state, fingerprint(state))
        if initial.fingerprint != header.get("initial_fingerprint"):
            raise ValueError(f"cannot resume from {directory}: this run's model starts from other parameters than "
                             "the run that wrote it (other pretrained vectors or vector scale, another vocabulary "
                             "or another initialisation), and the state holds only the rows that training changed")
    rebuilt = {k: v for k, v in tensors.items() if "#" not in k}
    bases = {"zeros": {}, "initial": {} if initial is None else initial.state}
    # no tensor of a training state is larger than the model's largest (optimiser moments have their parameter's
    # shape): a stored shape beyond it is refused before its zeros are allocated
    largest = max((value.numel() for value in model.state_dict().values()), default=0)
    # the best parameters are stored against the current ones: those are rebuilt first
    for against_model in (False, True):
        if against_model:
            bases["model"] = _prefixed(rebuilt, "model")
        for key, entry in row_deltas.items():
            if (entry.get("base") == "model") == against_model:
                rebuilt[key] = _rebuilt_entry(directory, tensors, key, entry, bases, largest)
    return rebuilt


def _rebuilt_entry(directory: Path, tensors: Mapping[str, torch.Tensor], key: str, entry: dict,
                   bases: Mapping[str, Mapping[str, torch.Tensor]], max_elements: int) -> torch.Tensor:
    """One tensor stored as rows, rebuilt on its base (``bases[entry["base"]]``; zeros: an empty mapping)."""
    try:
        name = key.split(".", 1)[1]
        found = bases[entry["base"]]
        if entry["base"] != "zeros" and name not in found:
            raise KeyError(f"no {entry['base']} tensor {name!r}")
        return decode_rows(tensors[key + "#rows"], tensors[key + "#values"], found.get(name), tuple(entry["shape"]),
                           max_elements)
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise ValueError(f"{directory}: damaged training state ({key}: {err})") from None


def _strict_json(text: str):
    """``text`` read as strict JSON, as :func:`save_training_state` writes it: ``NaN``, ``Infinity`` and
    ``-Infinity`` (which ``json.loads`` takes) are a ``json.JSONDecodeError`` at their first place in ``text``."""
    def refuse(constant: str):
        raise json.JSONDecodeError(f"{constant} is not a JSON number", text, max(text.find(constant), 0))

    return json.loads(text, parse_constant=refuse)


def _number(value):
    """The Python number of a zero-dimensional NumPy or torch value (``np.float32(0.5)``, ``np.array(0.5)``,
    ``torch.tensor(0.5)``: what an observer may return), else ``value`` itself."""
    if isinstance(value, (np.generic, np.ndarray, torch.Tensor)) and value.ndim == 0:
        return value.item()
    return value


def _plain(value):
    """JSON for NumPy and torch scalars in a history entry (:func:`_number`); TypeError for anything else."""
    number = _number(value)
    if number is value:
        raise TypeError(f"a {type(value).__name__} is not JSON; history entries must be numbers, strings, lists or "
                        f"dicts")
    return number


def non_finite_value(value, where: str = "") -> tuple[str, float] | None:
    """``(location, number)`` of the first NaN or infinity in ``value``, else None: what the strict JSON of
    ``state.json`` (``json.dumps(..., allow_nan=False)``) refuses in a history entry.

    ``value`` is looked through as the writer reads it (``qpnlp._json.leaves``): dicts (``where.key``), lists and
    tuples (``where[i]``), Python floats and zero-dimensional NumPy / torch numbers (:func:`_number`). ``where``
    names ``value`` itself.

    >>> non_finite_value({"test": {"map": 0.5, "mrr": float("nan")}})
    ('test.mrr', nan)
    """
    for path, leaf in leaves(value, where):
        leaf = _number(leaf)
        if isinstance(leaf, float) and not np.isfinite(leaf):
            return path, leaf
    return None


def _prefixed(tensors: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    start = prefix + "."
    return {k[len(start):]: v for k, v in tensors.items() if k.startswith(start)}


def _check_identity(directory: Path, saved: dict, current: dict, defaults: Mapping[str, Mapping]) -> None:
    """Refuse (``ValueError``) a state whose run differs from ``current``, naming each field that differs in the
    model config and the training settings, with both values. A field the state does not record (written by an
    earlier qpnlp, before the field was added) stands for its default (``defaults["model_config"]`` /
    ``defaults["settings"]``), as loading a saved model takes it (:meth:`~qpnlp.models.base.Model.from_pretrained`).
    """
    current = json.loads(json.dumps(current))          # tuples -> lists, as stored
    defaults = json.loads(json.dumps(defaults, default=repr))      # as stored; a default JSON lacks: its repr
    differences = []
    if saved.get("model") != current["model"]:
        differences.append(f"the model ({preview(saved.get('model'), 60)} there, {current['model']} here)")
    elif isinstance(saved.get("model_config"), dict) and isinstance(current["model_config"], dict):
        differences += _fields_differing("the model config", saved["model_config"], current["model_config"],
                                         defaults.get("model_config", {}))
    elif saved.get("model_config") != current["model_config"]:
        differences.append(f"the model config ({preview(saved.get('model_config'), 300)} there, "
                           f"{current['model_config']} here)")
    old = {k: v for k, v in saved.get("settings", {}).items() if k not in RESUMABLE_CHANGES}
    differences += _fields_differing("the training settings", old, current["settings"], defaults.get("settings", {}))
    # the optimisers' states are stored by parameter position: another set of trainable parameters would give
    # each one another's moments (states written before the field was recorded lack it)
    if "trainable" in saved and saved["trainable"] != current["trainable"]:
        there, here = saved["trainable"], current["trainable"]
        differences.append(f"the trainable parameters (only there: {preview(sorted(set(there) - set(here)), 300)}, "
                           f"only here: {sorted(set(here) - set(there))})")
    if saved.get("data") != current["data"]:
        differences.append("the training or dev data (as read: other files, or the same files read otherwise, "
                           "e.g. a data set's filter or the tokenizer changed by a later qpnlp; train afresh)")
    if differences:
        raise ValueError(f"cannot resume from {directory}: this run differs from the one that wrote it in "
                         + "; ".join(differences) + f" (only {', '.join(sorted(RESUMABLE_CHANGES))} may change)")


def _fields_differing(what: str, saved: Mapping, now: Mapping, defaults: Mapping, shown: int = 10) -> list[str]:
    """``what`` and each key whose value differs between ``saved`` (a key it lacks: its ``defaults`` entry, else
    None) and ``now``, ``key (there -> here)``, ``shown`` of them and how many more ([] if none differs)."""
    there = {**{k: v for k, v in defaults.items() if k in now}, **saved}
    changed = sorted(k for k in set(there) | set(now) if there.get(k) != now.get(k))
    if not changed:
        return []
    named = ", ".join(f"{k[:60]} ({preview(there.get(k))} -> {now.get(k)!r})" for k in changed[:shown])
    return [f"{what} {named}" + (f" and {len(changed) - shown} more" if len(changed) > shown else "")]


def _field_defaults(config) -> dict:
    """The default of each field of the dataclass instance ``config`` that has one ({} for anything else): what a
    field a training state does not record stands for (:func:`load_training_state`)."""
    if not dataclasses.is_dataclass(config):
        return {}
    found = {f.name: field_default(f) for f in dataclasses.fields(config)}
    return {k: v for k, v in found.items() if v is not dataclasses.MISSING}
