"""Sentence-classification experiments under the papers' protocols.

For each split of :func:`qpnlp.data.splits` (10-fold CV or the fixed split):
build the vocabulary from the training part only, initialise amplitudes from
pretrained vectors, train with early stopping on the dev part, and evaluate
the test part once with the selected parameters.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from qpnlp.data import (ClassificationDataset, EncodedTexts, PretrainedVectors, Split, Vocabulary,
                        embedding_matrix_for, with_pretrained_fallback)
from qpnlp.models import QPDN, QPDNConfig, RealBagOfWords

from .trainer import TrainConfig, accuracy, fit, seed_everything

MODEL_KINDS = ("qpdn", "real_bow")


@dataclass
class Prepared:
    """A split encoded with a vocabulary built from its training part."""

    vocab: Vocabulary
    train: EncodedTexts
    dev: EncodedTexts
    test: EncodedTexts
    pretrained_matrix: torch.Tensor | None
    oov_rate: float | None


@dataclass
class SplitResult:
    split: str
    test_accuracy: float
    dev_accuracy: float
    best_epoch: int
    seconds: float
    history: list = field(default_factory=list)


def prepare(dataset: ClassificationDataset, split: Split, pretrained: PretrainedVectors | None, *,
            min_freq: int = 1, seed: int = 0, pretrained_fallback: int = 0) -> Prepared:
    """Vocabulary from the training texts, encoded splits, and the aligned pretrained matrix.

    ``pretrained_fallback = n > 0`` appends the n first (for GloVe: most
    frequent) pretrained words to the vocabulary
    (:func:`~qpnlp.data.pretrained.with_pretrained_fallback`).
    """
    train, dev, test = split.subsets(dataset)
    vocab = with_pretrained_fallback(Vocabulary.build(train.texts, min_freq=min_freq), pretrained,
                                     pretrained_fallback)
    encode = lambda part: EncodedTexts(vocab.encode_many(part.texts), part.labels)  # noqa: E731
    matrix, oov = None, None
    if pretrained is not None:
        array, report = embedding_matrix_for(vocab, pretrained, seed=seed)
        matrix, oov = torch.from_numpy(array), report.rate
    return Prepared(vocab, encode(train), encode(dev), encode(test), matrix, oov)


def build_classifier(kind: str, prepared: Prepared, num_classes: int, model_options: dict,
                     seed: int) -> tuple[nn.Module, dict]:
    """A model of ``kind`` for the prepared split, and its JSON config (for checkpoints)."""
    gen = torch.Generator().manual_seed(seed)
    num_words = len(prepared.vocab)
    dim = prepared.pretrained_matrix.shape[1] if prepared.pretrained_matrix is not None \
        else model_options.get("dim", 50)
    idf = prepared.vocab.idf().clamp_min(1e-6) if model_options.get("weighting") == "idf" else None
    if kind == "qpdn":
        config = QPDNConfig(num_words=num_words, num_classes=num_classes, **{**model_options, "dim": dim})
        return QPDN(config, pretrained=prepared.pretrained_matrix, idf=idf, generator=gen), config.to_dict()
    if kind == "real_bow":
        config = dict(num_words=num_words, num_classes=num_classes, dim=dim,
                      weighting=model_options.get("weighting", "amplitude_norm"),
                      dropout=model_options.get("dropout", 0.0))
        return RealBagOfWords(**config, pretrained=prepared.pretrained_matrix, idf=idf, generator=gen), config
    raise ValueError(f"unknown model kind {kind!r}; choose from {MODEL_KINDS}")


def run_split(kind: str, dataset: ClassificationDataset, split: Split, pretrained: PretrainedVectors | None,
              model_options: dict, train_config: TrainConfig, *,
              pretrained_fallback: int = 0,
              on_epoch: Callable[[nn.Module, Prepared], dict] | None = None,
              ) -> tuple[SplitResult, nn.Module, Prepared, dict]:
    """Train on one split (selection on dev) and evaluate its test part once (see :func:`prepare`).

    ``on_epoch(model, prepared)`` is an observer passed on to :func:`fit`
    (its dict joins each epoch's history; it does not affect selection).
    """
    seed_everything(train_config.seed)
    prepared = prepare(dataset, split, pretrained, seed=train_config.seed, pretrained_fallback=pretrained_fallback)
    model, config = build_classifier(kind, prepared, dataset.n_classes, model_options, train_config.seed)
    start = time.perf_counter()
    observer = None if on_epoch is None else (lambda m: on_epoch(m, prepared))
    result = fit(model, prepared.train, prepared.dev, train_config, on_epoch=observer)
    test_acc = accuracy(model, prepared.test, device=train_config.device, max_len=train_config.max_len)
    return (SplitResult(split.name, test_acc, result.best_dev_accuracy, result.best_epoch,
                        time.perf_counter() - start, result.history), model, prepared, config)


def mean_std(values) -> dict:
    """``{"mean", "std"}`` of per-split scores (sample std, ddof=1, when more than one; else 0)."""
    values = np.asarray(values, dtype=float)
    return dict(mean=float(values.mean()), std=float(values.std(ddof=1)) if len(values) > 1 else 0.0)


def summarise(results: list[SplitResult]) -> dict:
    """Mean and standard deviation (:func:`mean_std`) of test accuracy, with every split's result."""
    return dict(**mean_std([r.test_accuracy for r in results]), n=len(results),
                per_split=[r.__dict__ for r in results])
