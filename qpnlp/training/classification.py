"""Sentence-classification experiments under the papers' protocols.

For each split of :func:`qpnlp.data.splits` (10-fold CV or the fixed split):
build the vocabulary from the training part only, initialise amplitudes from
pretrained vectors, train with early stopping on the dev part, and evaluate
the test part once with the selected parameters.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from qpnlp.data import (ClassificationDataset, EncodedTexts, OOVReport, PretrainedVectors, Split, Vocabulary,
                        embedding_matrix_for, with_pretrained_fallback)
from qpnlp.models import Model, get_model_class, registered_models

from qpnlp._env import SWITCHES
from qpnlp._errors import TrainingDiverged
from qpnlp._repr import record_repr
from qpnlp._stacklevel import outside_qpnlp
from qpnlp.measurement._module import drawing_from

from .config import ConfigError, TrainConfig
from .loop import TrainingInterrupted
from .optimisers import check_phase_lr
from .trainer import FitResult, accuracy, fit, seeded


#: The word-vector dimension of a model trained without pretrained vectors (``--no-pretrained``), when not given.
DEFAULT_DIM = 50

#: Below this share of the training words with a pretrained vector, the vectors are most likely the wrong ones.
MIN_VECTOR_COVERAGE = 0.1


def warn_low_coverage(report: OOVReport) -> None:
    """Warn (``UserWarning``) when pretrained vectors cover under :data:`MIN_VECTOR_COVERAGE` of the training words.

    Such vectors are most likely the wrong file (another language, another
    letter case): the words without one start from random vectors. Shared by
    :func:`prepare` and :func:`qpnlp.training.matching.prepare_qa`.
    """
    found = report.n_words - report.n_oov
    if report.n_words and found < MIN_VECTOR_COVERAGE * report.n_words:
        warnings.warn(f"the pretrained vectors cover {found}/{report.n_words} training words "
                      f"({100 * found / report.n_words:.1f}%; missing e.g. {', '.join(report.examples[:3])}): the "
                      f"others start from random vectors. Wrong vectors file (another language, another letter "
                      f"case)?", UserWarning, stacklevel=outside_qpnlp())


@dataclass(eq=False)                     # == is identity: the generated one compared tensors and raised
class Prepared:
    """A split encoded with a vocabulary built from its training part."""

    vocab: Vocabulary
    train: EncodedTexts
    dev: EncodedTexts
    test: EncodedTexts
    pretrained_matrix: torch.Tensor | None
    oov_rate: float | None

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut


@dataclass
class SplitResult:
    split: str
    test_accuracy: float
    dev_accuracy: float
    best_epoch: int
    seconds: float
    history: list = field(default_factory=list)
    selected: dict | None = None
    candidate_dev_accuracies: list[float] | None = None

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut


def prepare(dataset: ClassificationDataset, split: Split, pretrained: PretrainedVectors | None, *,
            min_freq: int = 1, seed: int = 0, pretrained_fallback: int | None = None) -> Prepared:
    """Vocabulary from the training texts, encoded splits, and the aligned pretrained matrix.

    ``pretrained_fallback = n > 0`` appends n more words, the first (for GloVe:
    most frequent) pretrained words the training vocabulary lacks, of those the
    tokenizer can produce (:func:`~qpnlp.data.pretrained.with_pretrained_fallback`); ``None`` (the
    default) takes the vectors' own n, :class:`PretrainedVectors.fallback
    <qpnlp.data.pretrained.PretrainedVectors>` (400000 for
    ``load_vectors("glove-6b-50d")``, 0 for other vectors and without
    vectors), as ``qpnlp train`` does without ``--pretrained-fallback``. The
    vocabulary then holds V <= (training words) + n ids (GloVe: 394,689
    words at most, the tokenizer's of its 400,000) and the pretrained
    matrix is (V, d). Vectors that
    cover almost none of the training words are warned about
    (:func:`warn_low_coverage`).
    """
    train, dev, test = split.subsets(dataset)
    present = np.unique(train.labels)
    if len(present) < 2:
        raise ValueError(f"the training part of {dataset.name} {split.name} holds only the class "
                         f"{[dataset.label_names[i] for i in present]}; a classifier needs at least two")
    _warn_unseen_classes(dataset, split, present, dev=dev.labels, test=test.labels)
    vocab = with_pretrained_fallback(Vocabulary.build(train.texts, min_freq=min_freq), pretrained,
                                     pretrained_fallback)
    encode = lambda part: EncodedTexts(vocab.encode_many(part.texts), part.labels)  # noqa: E731
    matrix, oov = None, None
    if pretrained is not None:
        array, report = embedding_matrix_for(vocab, pretrained, seed=seed)
        warn_low_coverage(report)
        matrix, oov = torch.from_numpy(array), report.rate
    return Prepared(vocab, encode(train), encode(dev), encode(test), matrix, oov)


def _warn_unseen_classes(dataset: ClassificationDataset, split: Split, trained: np.ndarray,
                        **parts: np.ndarray) -> None:
    """Warn, for each part (``dev=labels``, ``test=labels``), of its items whose class the training part lacks
    (``trained``, the classes present): the classifier cannot predict them, so they cap the part's accuracy.

    >>> ds = ClassificationDataset("toy", [["w"]] * 3, np.array([0, 1, 2]), ("a", "b", "c"))
    >>> split = Split("fixed", np.arange(2), np.arange(0), np.arange(2, 3))
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     _warn_unseen_classes(ds, split, np.array([0, 1]), test=np.array([2, 0]))
    >>> str(seen[0].message).split(":")[0]
    "the test part of toy fixed holds 1 of its 2 items in a class that its training part lacks ('c' 1)"
    """
    for part, labels in parts.items():
        unseen = ~np.isin(labels, trained)
        if unseen.any():
            counts = np.bincount(labels[unseen], minlength=dataset.n_classes)
            which = ", ".join(f"{dataset.label_names[k]!r} {n}" for k, n in enumerate(counts) if n)
            warnings.warn(f"the {part} part of {dataset.name} {split.name} holds {int(unseen.sum())} of its "
                          f"{len(labels)} items in a class that its training part lacks ({which}): no classifier "
                          f"trained on it can predict them, so its {part} accuracy is at most "
                          f"{1 - unseen.mean():.4f}", UserWarning, stacklevel=outside_qpnlp())


def build_classifier(kind: str, prepared: Prepared, num_classes: int, model_options: dict,
                     seed: int) -> tuple[Model, dict]:
    """A fresh classification model registered as ``kind`` for the prepared split, and its JSON config.

    The config is the model's own config class, filled with the vocabulary
    size, the number of classes and the pretrained vectors' width (or
    ``model_options["dim"]``, default :data:`DEFAULT_DIM`, without vectors), then
    ``model_options`` (unknown options are an error naming the config, and so
    is an option that contradicts the data: :func:`with_data_fields`).
    """
    klass = get_model_class(kind)
    if klass.task != "classification":
        raise ValueError(f"{kind!r} is a {klass.task} model; classification models: "
                         f"{', '.join(registered_models('classification'))}")
    gen = torch.Generator().manual_seed(seed)
    filled = dict(num_words=len(prepared.vocab), num_classes=num_classes)
    if prepared.pretrained_matrix is not None:
        filled["dim"] = prepared.pretrained_matrix.shape[1]
    config = config_from_data(klass, model_options, filled)
    model = klass.build(config, vocabulary=prepared.vocab, pretrained=prepared.pretrained_matrix, generator=gen)
    return model, config.to_dict()


def run_split(kind: str, dataset: ClassificationDataset, split: Split, pretrained: PretrainedVectors | None,
              model_options: dict, train_config: TrainConfig, *,
              pretrained_fallback: int | None = None,
              on_epoch: Callable[[nn.Module, Prepared], dict] | None = None,
              log: Callable[[dict], None] | None = None,
              checkpoint_dir: str | os.PathLike | None = None, resume: bool = False,
              ) -> tuple[SplitResult, Model, Prepared, dict]:
    """Train on one split (selection on dev) and evaluate its test part once (see :func:`prepare`).

    ``qpnlp train KIND`` passes :func:`~qpnlp.training.defaults.default_train_config` (``kind``'s training
    defaults), the vectors of :func:`~qpnlp.training.defaults.default_vectors` and ``--pretrained-fallback``
    (None when not given). ``pretrained_fallback=None``, the default, is the vectors' own
    (:class:`fallback <qpnlp.data.pretrained.PretrainedVectors>`, recorded by
    :func:`~qpnlp.data.vectors.load_vectors`: 400000, all of GloVe 6B, for ``glove-6b-50d``; 0 for
    ``spacy-md-300d``, files and no vectors); an int is the number of words appended.

    ``on_epoch(model, prepared)`` is an observer passed on to :func:`fit`
    (its dict joins each epoch's history; it does not affect selection);
    ``log``, ``checkpoint_dir`` and ``resume`` are passed on to :func:`fit`
    (per-epoch lines, resumable training). A
    :class:`~qpnlp.training.loop.TrainingInterrupted` or
    :class:`~qpnlp.training.TrainingDiverged` leaving this function
    carries ``prepared`` and ``split`` in its ``context``.
    """
    prepared = prepare(dataset, split, pretrained, seed=train_config.seed, pretrained_fallback=pretrained_fallback)
    start = time.perf_counter()
    try:
        result, model, config = train_prepared(kind, prepared, dataset.n_classes, model_options, train_config,
                                               on_epoch=on_epoch, log=log, checkpoint_dir=checkpoint_dir,
                                               resume=resume)
    except (TrainingInterrupted, TrainingDiverged) as err:
        err.context.update(prepared=prepared, split=split.name)
        raise
    test_acc = accuracy(model, prepared.test, device=train_config.device, max_len=train_config.max_len,
                        length_chunks=train_config.length_chunks)
    return (SplitResult(split.name, test_acc, result.best_dev_accuracy, result.best_epoch,
                        time.perf_counter() - start, result.history), model, prepared, config)


def train_prepared(kind: str, prepared: Prepared, num_classes: int, model_options: dict, train_config: TrainConfig,
                   *, on_epoch: Callable[[nn.Module, Prepared], dict] | None = None,
                   log: Callable[[dict], None] | None = None,
                   checkpoint_dir: str | os.PathLike | None = None, resume: bool = False,
                   ) -> tuple[FitResult, Model, dict]:
    """Seed, build a ``kind`` model and fit it on ``prepared.train`` with early stopping on ``prepared.dev``.

    The test part is not touched. Returns the fit result, the model (with its
    best-dev parameters) and its JSON config. The global RNGs are seeded with
    ``train_config.seed`` for the run only (:func:`~qpnlp.training.trainer.seeded`): the caller's are put back.
    They are the process's: two runs at once in two threads are not reproducible (train in processes).
    """
    observer = None if on_epoch is None else (lambda m: on_epoch(m, prepared))
    with seeded(train_config.seed):
        model, config = build_classifier(kind, prepared, num_classes, model_options, train_config.seed)
        fitted = fit(model, prepared.train, prepared.dev, train_config, on_epoch=observer, log=log,
                     checkpoint_dir=checkpoint_dir, resume=resume)
    return fitted, model, config


TRAIN_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainConfig))
NOT_SELECTABLE = frozenset({"seed", "device", "max_len", "progress"})


def grid(**axes: Sequence) -> list[dict]:
    """The Cartesian product of named value lists, as a list of settings (last axis varies fastest).

    >>> grid(dropout=[0.0, 0.3], weighting=["amplitude_norm", "trainable"])[1]
    {'dropout': 0.0, 'weighting': 'trainable'}
    """
    for name, values in axes.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise ConfigError(f"grid axis {name} must be a list of values; got {type(values).__name__} {values!r}")
    empty = [name for name, values in axes.items() if len(values) == 0]
    if empty:
        raise ConfigError(f"grid axes need at least one value; empty: {empty}")
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


def parse_grid(specs: Sequence[str]) -> list[dict]:
    """Settings from command-line axes ``"name=v1,v2,..."`` (values read as JSON where they parse, else a switch
    as every switch is spelt, ``True``, ``no``, ``OFF`` (as the ``QPNLP_*`` variables; ``0`` and ``1`` are numbers
    here), else strings).

    >>> parse_grid(["dropout=0,0.3", "weighting=amplitude_norm,trainable"])[3]
    {'dropout': 0.3, 'weighting': 'trainable'}
    >>> parse_grid(["complete=True,no"])
    [{'complete': True}, {'complete': False}]
    >>> parse_grid([])
    [{}]
    """
    axes = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        if not sep or not name or not values:
            raise ConfigError(f"a grid axis is written name=v1,v2,...; got {spec!r}")
        if name in axes:
            raise ConfigError(f"grid axis {name!r} given twice")
        axes[name] = [_grid_value(name, v) for v in values.split(",")]
    return grid(**axes)


def _grid_value(name: str, text: str):
    """``text`` as JSON where it parses, else as a switch or a string; a number that is not finite (``nan``, ``inf``,
    JSON's ``NaN``) is refused here, naming the axis (as a string it reached the configs as "must be a number")."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:                   # True, yes, OFF: a switch (qpnlp._env.SWITCHES) as spelt elsewhere
        value = SWITCHES.get(text.strip().lower(), text)
    try:
        number = float(value) if not isinstance(value, bool) else 0.0
    except (TypeError, ValueError):
        return value
    if not math.isfinite(number):
        raise ConfigError(f"grid axis {name}: {text!r} is not a finite number")
    return value


def apply_setting(setting: dict, model_options: dict, train_config: TrainConfig) -> tuple[dict, TrainConfig]:
    """Model options and training settings with one candidate ``setting`` applied.

    Keys that are :class:`TrainConfig` fields (``lr``, ``embedding_lr``,
    ``batch_size``, ``weight_decay``, ...) replace training settings; the
    others replace model options. ``seed``, ``device``, ``max_len`` and
    ``progress`` are run settings, not selected (a checkpoint records one
    ``max_len`` for evaluation).
    """
    fixed = sorted(NOT_SELECTABLE & set(setting))
    if fixed:
        raise ConfigError(f"{fixed} cannot be part of a selection grid; selectable training settings: "
                          f"{sorted(TRAIN_FIELDS - NOT_SELECTABLE)}")
    train = {k: v for k, v in setting.items() if k in TRAIN_FIELDS}
    model = {k: v for k, v in setting.items() if k not in TRAIN_FIELDS}
    try:
        return {**model_options, **model}, dataclasses.replace(train_config, **train)
    except TypeError as err:                      # a value of the wrong type (e.g. lr=abc) fails the comparisons
        raise ConfigError(f"setting {train}: {err}") from None


#: Fields of a model config that the trainer fills from the data; never options, never selected.
FILLED_FROM_DATA = frozenset({"num_words", "num_classes", "dim"})


def with_data_fields(model_options: dict, filled: dict) -> dict:
    """``model_options`` with the fields the data decides (``filled``: vocabulary size, classes, pretrained width).

    An option that gives one of them another value is a :class:`~qpnlp.training.config.ConfigError` (it
    would be overridden without a word); the same value is accepted.
    """
    clash = {k: v for k, v in model_options.items() if k in filled and v != filled[k]}
    if clash:
        raise ConfigError("model options " + ", ".join(f"{k}={v!r}" for k, v in clash.items()) + " contradict the "
                          "data, which sets " + ", ".join(f"{k}={filled[k]!r}" for k in clash) + " (vocabulary "
                          "size, number of classes, pretrained vectors' width); leave them out")
    return {**model_options, **filled}


def config_from_data(klass: type[Model], model_options: dict, filled: dict):
    """``klass``'s config from ``model_options`` and the fields the data decides (``filled``: ``num_words``,
    ``num_classes``, ``dim``), those of them its config declares; ``dim`` defaults to :data:`DEFAULT_DIM`.

    A config of a user's model without a ``dim`` field (a width of its own, or none) gets no ``dim``: the
    pretrained matrix, if any, still reaches the model's ``build``. A config that refuses the values is a
    :class:`~qpnlp.training.config.ConfigError`.
    """
    fields = {f.name for f in dataclasses.fields(klass.config_class)}
    width = {"dim": DEFAULT_DIM} if "dim" in fields else {}
    try:
        return klass.config_class.from_dict(
            {**width, **with_data_fields(model_options, {k: v for k, v in filled.items() if k in fields})})
    except (ValueError, TypeError) as err:
        raise ConfigError(str(err)) from None


# Placeholders for those fields when options are checked before any data is read: permissive values, several
# widths (a check such as "dim divisible by heads" must pass for one of them).
_PLACEHOLDER_DIMS = (720720, 50, 100, 300)


def check_model_options(kind: str, model_options: dict, train_config: TrainConfig | None = None) -> None:
    """Raise :class:`~qpnlp.training.config.ConfigError` if ``model_options`` cannot configure a ``kind`` model.

    Checked before any data is read: unknown options, values of the wrong
    type and values the model's config refuses, with the trainer-filled
    fields (vocabulary size, classes, width) at permissive placeholders; with
    ``train_config``, also a ``phase_lr`` that the model would ignore
    (:func:`~qpnlp.training.optimisers.check_phase_lr`, asked of the model
    built with 4 words: it was refused once the data and vectors were read).
    """
    _placeholder_config(kind, model_options, 1 << 20, _PLACEHOLDER_DIMS)
    if train_config is not None and train_config.phase_lr is not None:
        small = _placeholder_config(kind, model_options, 4, _PLACEHOLDER_DIMS[1:], refuse=False)
        model = None if small is None else _placeholder_model(kind, small)
        if model is not None:             # else the trainer's Optimisers refuses it, with the data
            check_phase_lr(model, train_config.phase_lr)


def _placeholder_config(kind: str, model_options: dict, num_words: int, dims: Sequence[int], refuse: bool = True):
    """The config of a ``kind`` model of ``model_options`` with the trainer-filled fields at placeholders:
    ``num_words`` words, 2 classes and the first width of ``dims`` that the config takes (``dim`` as given
    when it is an option); the config's error as a ConfigError when none does (None unless ``refuse``)."""
    klass = get_model_class(kind)
    fields = {f.name for f in dataclasses.fields(klass.config_class)}
    filled = {k: v for k, v in {"num_words": num_words, "num_classes": 2}.items() if k in fields}
    widths = [{}] if "dim" in model_options or "dim" not in fields else [{"dim": d} for d in dims]
    first = None
    for width in widths:
        try:
            return klass.config_class.from_dict({**model_options, **filled, **width})
        except (ValueError, TypeError) as err:
            first = first or err
    if refuse:
        raise ConfigError(f"{kind}: {first}") from None
    return None


def _placeholder_model(kind: str, config) -> Model | None:
    """A ``kind`` model of ``config`` (:meth:`~qpnlp.models.base.Model.empty`), its draws from a generator of its
    own (the global RNG, and so the training that follows, as it was) and its warnings unsaid (the real model
    says them); None where the placeholder sizes build none (the real model, of the data's sizes, may)."""
    try:
        with drawing_from(torch.Generator().manual_seed(0)), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return get_model_class(kind).empty(config)
    except (ValueError, TypeError, RuntimeError):
        return None


def check_grid(kind: str, candidates: Sequence[dict], model_options: dict, train_config: TrainConfig) -> None:
    """Raise :class:`~qpnlp.training.config.ConfigError` for a selection grid that cannot run, before any training.

    Every candidate must be a dict that no earlier candidate equals, every key
    a field of ``kind``'s model config (not one the data fills:
    :data:`FILLED_FROM_DATA`) or a selectable :class:`TrainConfig` field, and
    every candidate must give a valid model config
    (:func:`check_model_options`) and valid training settings.
    """
    for i, setting in enumerate(candidates):
        if not isinstance(setting, Mapping):
            raise ConfigError(f"candidates must be a list of settings (dicts, e.g. from grid(...)); candidate {i} "
                              f"is {type(setting).__name__} {setting!r}")
        if setting in candidates[:i]:
            raise ConfigError(f"candidates {candidates.index(setting)} and {i} are the same setting {setting}: it "
                              f"would be trained twice")
    fields = {f.name for f in dataclasses.fields(get_model_class(kind).config_class)}
    keys = sorted({k for setting in candidates for k in setting})
    unknown = [k for k in keys if k not in TRAIN_FIELDS and (k not in fields or k in FILLED_FROM_DATA)]
    if unknown:
        options = sorted((fields - FILLED_FROM_DATA) | (TRAIN_FIELDS - NOT_SELECTABLE))
        raise ConfigError(f"unknown selection key(s) {unknown} for {kind}: a key is a model option or a training "
                          f"setting, one of {', '.join(options)}")
    for setting in candidates:
        options, config = apply_setting(setting, model_options, train_config)
        try:
            check_model_options(kind, options, config)
        except ConfigError as err:
            raise ConfigError(f"selection candidate {setting}: {err}") from None


def run_split_selected(kind: str, dataset: ClassificationDataset, split: Split,
                       pretrained: PretrainedVectors | None, model_options: dict, train_config: TrainConfig,
                       candidates: Sequence[dict], *, pretrained_fallback: int | None = None,
                       log: Callable[[dict], None] | None = None,
                       checkpoint_dir: str | os.PathLike | None = None, resume: bool = False,
                       ) -> tuple[SplitResult, Model, Prepared, dict]:
    """Hyper-parameter selection on dev inside one split, then one test evaluation.

    Every candidate setting (see :func:`apply_setting`) is trained on the
    split's training part with early stopping on its dev part, from the same
    seed. The candidate with the highest dev accuracy (the earliest in
    ``candidates`` on ties) is kept, and only its test part is scored: the
    test data never influences which setting or epoch is reported. This is
    the papers' per-data-set parameter search, done on dev. The candidates
    are checked (:func:`check_grid`) before any data is prepared.

    Returns the selected candidate's :class:`SplitResult` (with ``selected``
    and every candidate's dev accuracy), its model, the prepared split and its
    JSON config. ``seconds`` covers the whole search.

    A candidate whose training diverges
    (:class:`~qpnlp.training.TrainingDiverged`) is out of the
    selection; its dev accuracy is recorded as None (if every candidate
    diverges, the last divergence is raised). ``log`` gets each epoch's entry
    with the ``candidate`` index and its ``setting`` added; with
    ``checkpoint_dir``, candidate i keeps its training state in
    ``checkpoint_dir/candidate-i`` (``resume`` as in :func:`run_split`). On
    Ctrl-C the :class:`~qpnlp.training.loop.TrainingInterrupted` carries
    the best model so far over the candidates, its setting in
    ``context["selected"]``.
    """
    if len(candidates) == 0:
        raise ValueError("candidates must hold at least one setting ({} = the given options)")
    check_grid(kind, candidates, model_options, train_config)
    prepared = prepare(dataset, split, pretrained, seed=train_config.seed, pretrained_fallback=pretrained_fallback)
    start, best, dev_accuracies, diverged = time.perf_counter(), None, [], None
    for i, setting in enumerate(candidates):
        options, config = apply_setting(setting, model_options, train_config)
        try:
            fitted, model, model_config = train_prepared(
                kind, prepared, dataset.n_classes, options, config, log=_tagged_log(log, i, setting),
                checkpoint_dir=None if checkpoint_dir is None else Path(checkpoint_dir) / f"candidate-{i}",
                resume=resume)
        except TrainingDiverged as err:
            dev_accuracies.append(None)
            diverged = _without_locals(err)     # kept for the end, not the candidate's model and optimiser state
            continue
        except TrainingInterrupted as err:
            _attach_best_candidate(err, best, setting)
            err.context.update(prepared=prepared, split=split.name)
            raise
        dev_accuracies.append(fitted.best_dev_accuracy)
        if best is None or fitted.best_dev_accuracy > best[0].best_dev_accuracy:
            best = (fitted, model, model_config, setting, config)
        del model  # a losing candidate is freed before the next one is built
    if best is None:
        diverged.context.update(prepared=prepared, split=split.name)
        raise diverged
    fitted, model, model_config, setting, config = best
    test_acc = accuracy(model, prepared.test, device=config.device, max_len=config.max_len,
                        length_chunks=config.length_chunks)
    result = SplitResult(split.name, test_acc, fitted.best_dev_accuracy, fitted.best_epoch,
                         time.perf_counter() - start, fitted.history, selected=dict(setting),
                         candidate_dev_accuracies=dev_accuracies)
    return result, model, prepared, model_config


def _without_locals(err: BaseException) -> BaseException:
    """``err`` without its traceback, nor those of its cause and context: what it says stays (message, epoch,
    history), and ``raise`` gives it a traceback from there.

    A diverged candidate's error is kept until the grid ends (raised if every candidate diverges); its traceback's
    frames, and the trainer's closures they run, held the candidate's model and optimiser state meanwhile (Adam's
    two moments, each as large as the parameters). Clearing the frames' locals is not enough: a finished frame
    keeps its function, and so a closure's cells."""
    seen: set[int] = set()
    pending = [err]
    while pending:
        found = pending.pop()
        if found is not None and id(found) not in seen:
            seen.add(id(found))
            found.__traceback__ = None
            pending += [found.__cause__, found.__context__]
    return err


def _tagged_log(log: Callable[[dict], None] | None, i: int, setting: dict) -> Callable[[dict], None] | None:
    """``log`` for candidate ``i`` of a selection: each epoch's entry gets its ``candidate`` index and ``setting``."""
    if log is None:
        return None
    return lambda entry: log({**entry, "candidate": i, "setting": dict(setting)})


def _attach_best_candidate(err: TrainingInterrupted, best: tuple | None, setting: dict) -> None:
    """Make a Ctrl-C in the candidate ``setting`` carry the best model over the candidates: ``best`` (fit result,
    model, config, setting, training config) when its dev accuracy is at least the interrupted one's best, else
    the interrupted model; its setting goes into ``err.context["selected"]``."""
    if best is not None and best[0].best_dev_accuracy >= err.best_score:
        err.model, err.best_epoch, err.best_score = best[1], best[0].best_epoch, best[0].best_dev_accuracy
        err.context["selected"] = dict(best[3])
    else:
        err.context["selected"] = dict(setting)


def mean_std(values) -> dict:
    """``{"mean", "std"}`` of per-split scores (sample std, ddof=1, when more than one; else 0)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("no scores to summarise (no split was run)")
    return dict(mean=float(values.mean()), std=float(values.std(ddof=1)) if len(values) > 1 else 0.0)


def summarise(results: list[SplitResult]) -> dict:
    """Mean and standard deviation (:func:`mean_std`) of test accuracy, with every split's result."""
    return dict(**mean_std([r.test_accuracy for r in results]), n=len(results),
                per_split=[r.__dict__ for r in results])
