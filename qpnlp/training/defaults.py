"""The training settings of a registered model when none is given: what ``qpnlp train MODEL`` uses with no flags.

Defaults are the product: the command and a Python user get the same run from
one home. The settings are the training config's field defaults
(:class:`~qpnlp.training.TrainConfig`, or
:class:`~qpnlp.training.matching.MatchingConfig` for a matching model),
replaced by the model's ``training_defaults`` for the data set and the
vector set (:meth:`~qpnlp.models.base.Model.training_default`: the
reproductions' settings, chosen by the benchmarks). ``embedding_lr`` follows
``lr`` unless the model sets it, as ``--embedding-lr`` defaults to ``--lr``.

>>> config = default_train_config("cnm", dataset="trecqa")       # qpnlp train cnm --dataset trecqa
>>> config.epochs, config.lr, config.margin
(6, 0.003, 0.05)

The vectors of the command are :func:`default_vectors`: the set scaled as the
model trains on it (:func:`default_vectors_scale`; CNM multiplies spaCy's
vectors by 1/32 where :func:`~qpnlp.data.vectors.load_vectors` alone gives the
set's 1/16), and recording the set's pretrained fallback vocabulary
(:class:`fallback <qpnlp.data.pretrained.PretrainedVectors>`), which
``run_split`` / ``run_matching`` append when given ``pretrained_fallback=None``.

>>> default_vectors_scale("cnm", vectors="spacy-md-300d"), default_vectors_scale("qpdn", vectors="spacy-md-300d")
(0.03125, 0.0625)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection

from qpnlp.data.pretrained import PretrainedVectors
from qpnlp.data.vectors import DEFAULT_VECTORS, load_vectors, recommended_scale
from qpnlp.models import get_model_class

from .config import TrainConfig
from .matching import MatchingConfig

__all__ = ["train_config_class", "training_settings", "default_embedding_lr", "default_train_config", "default_grid",
           "default_vectors", "default_vectors_scale"]


def train_config_class(kind: str) -> type[TrainConfig]:
    """The training config of the registered model ``kind``: :class:`MatchingConfig` for a matching model, else
    :class:`TrainConfig`.

    Parameters
    ----------
    kind : str
        A registered model's name (ValueError for an unknown one).
    """
    return MatchingConfig if get_model_class(kind).task == "matching" else TrainConfig


def training_settings(kind: str, *, dataset: str | None = None, vectors: str | None = None) -> dict:
    """Every field of ``kind``'s training config at its default for this data set and vector set (names as on the
    command line): the model's ``training_defaults`` over the config class's defaults; ``embedding_lr`` is ``lr``
    unless the model sets it.

    Parameters
    ----------
    kind : str
        A registered model's name.
    dataset, vectors : str or None, default None
        The data set and vector set names the model's defaults may depend on; None: its general ones.
    """
    klass = get_model_class(kind)
    settings = {f.name: klass.training_default(f.name, dataset=dataset, vectors=vectors, fallback=f.default)
                for f in dataclasses.fields(train_config_class(kind))}
    settings["embedding_lr"] = default_embedding_lr(kind, dataset=dataset, vectors=vectors, lr=settings["lr"])
    return settings


def default_embedding_lr(kind: str, *, dataset: str | None = None, vectors: str | None = None,
                         lr: float | None = None) -> float | None:
    """The learning rate of ``kind``'s embedding tables for this data set and vector set: the model's own
    ``embedding_lr`` (:meth:`~qpnlp.models.base.Model.training_default`; QPDN: 1e-3), else ``lr``, which it
    follows as ``--embedding-lr`` follows ``--lr``. None for a model without one and no ``lr`` (the command's
    ``--embedding-lr`` default: follows ``--lr``). The one home of the rule, for :func:`training_settings`,
    :func:`default_train_config` and the command line.

    Parameters
    ----------
    kind : str
        A registered model's name.
    dataset, vectors : str or None, default None
        The data set and vector set names the model's own rate may depend on; None: its general one.
    lr : float or None, default None
        The dense parameters' rate, returned when the model sets none.

    Examples
    --------
    >>> default_embedding_lr("qpdn", lr=0.1), default_embedding_lr("cnm", lr=0.1), default_embedding_lr("cnm")
    (0.001, 0.1, None)
    """
    own = get_model_class(kind).training_default("embedding_lr", dataset=dataset, vectors=vectors)
    return lr if own is None else own


def default_train_config(kind: str, *, dataset: str | None = None, vectors: str | None = None,
                         **overrides) -> TrainConfig:
    """The training config of ``qpnlp train KIND --dataset DATASET --vectors VECTORS`` plus the options
    ``overrides`` (config field names: ``epochs=3``, ``seed=1``); an ``lr`` given without ``embedding_lr`` also sets
    the embedding tables' rate unless the model sets that one, as ``--lr`` does.

    Pass it to :func:`~qpnlp.training.classification.run_split` or
    :func:`~qpnlp.training.matching.run_matching`; the dev-selection grid of the command is
    :func:`default_grid`.

    Parameters
    ----------
    kind : str
        A registered model's name; a matching model gets a :class:`~qpnlp.training.matching.MatchingConfig`.
    dataset, vectors : str or None, default None
        The data set and vector set names the model's defaults may depend on; None: its general ones.
    **overrides
        Config fields given outright, over the defaults (above).
    """
    settings = training_settings(kind, dataset=dataset, vectors=vectors)
    if "lr" in overrides and "embedding_lr" not in overrides:
        settings["embedding_lr"] = default_embedding_lr(kind, dataset=dataset, vectors=vectors, lr=overrides["lr"])
    return train_config_class(kind)(**{**settings, **overrides})


def default_grid(kind: str) -> list[str]:
    """The dev-selection grid that ``qpnlp train KIND`` searches by default (``NAME=V1,V2`` axes, as ``--select``
    takes them; :func:`~qpnlp.training.classification.parse_grid` makes the candidates of
    :func:`~qpnlp.training.classification.run_split_selected`); empty for a model without one.

    Parameters
    ----------
    kind : str
        A registered model's name.
    """
    return list(get_model_class(kind).training_defaults.get("select", []))


def default_vectors_scale(kind: str | None, *, vectors: str | os.PathLike = DEFAULT_VECTORS,
                          dataset: str | None = None) -> float:
    """The factor ``qpnlp train KIND --vectors VECTORS --dataset DATASET`` multiplies the vectors by without
    ``--vectors-scale``: the model's ``vectors_scale`` for this vector set and data set
    (:meth:`~qpnlp.models.base.Model.training_default`; CNM: 1/32 on ``spacy-md-300d``, chosen on dev), else the
    set's own :class:`scale <qpnlp.data.vectors.VectorSet>` (:func:`~qpnlp.data.vectors.recommended_scale`: 1/16
    for ``spacy-md-300d``, 1 for ``glove-6b-50d`` and files). ``kind=None``: no model, the set's own.

    Parameters
    ----------
    kind : str or None
        A registered model's name; None: the set's own scale.
    vectors : str or path-like, default DEFAULT_VECTORS
        A registered vector set's name or a file (a file's own scale is 1).
    dataset : str or None, default None
        The data set the model's scale may depend on.
    """
    own = None if kind is None else get_model_class(kind).training_default("vectors_scale", dataset=dataset,
                                                                            vectors=str(vectors))
    return recommended_scale(vectors) if own is None else own


def default_vectors(kind: str | None, *, vectors: str | os.PathLike = DEFAULT_VECTORS, dataset: str | None = None,
                    scale: float | None = None, backoff: bool | None = None,
                    words: Collection[str] | None = None) -> PretrainedVectors:
    """The vectors ``qpnlp train KIND --vectors VECTORS --dataset DATASET`` trains with (the command loads them
    here): :func:`~qpnlp.data.vectors.load_vectors` with ``scale`` (``--vectors-scale``), by default
    :func:`default_vectors_scale`; ``backoff`` and ``words`` as there. The vectors record the set's pretrained
    fallback vocabulary (:class:`fallback <qpnlp.data.pretrained.PretrainedVectors>`, 400000 for ``glove-6b-50d``),
    which :func:`~qpnlp.training.classification.run_split` and :func:`~qpnlp.training.matching.run_matching`
    append by default, as the command does without ``--pretrained-fallback``.

    ``default_vectors("cnm", vectors="spacy-md-300d")`` is spaCy's (514k words, 300) matrix times 1/32, the
    command's, where ``load_vectors("spacy-md-300d")`` is the set's 1/16.

    Parameters
    ----------
    kind : str or None
        A registered model's name, for its scale; None: no model, the set's own scale.
    vectors : str or path-like, default DEFAULT_VECTORS
        A registered vector set's name or a file, as :func:`~qpnlp.data.vectors.load_vectors` takes it.
    dataset : str or None, default None
        The data set the model's scale may depend on.
    scale : float or None, default None
        Multiply the vectors by it; None: :func:`default_vectors_scale`.
    backoff : bool or None, default None
        As :func:`~qpnlp.data.vectors.load_vectors`'s ``backoff`` (None: False).
    words : collection of str, optional
        Keep only these words (and their backoff keys with ``backoff=True``); None: all.
    """
    if scale is None:
        scale = default_vectors_scale(kind, vectors=vectors, dataset=dataset)
    return load_vectors(vectors, words=words, scale=scale, backoff=backoff)
