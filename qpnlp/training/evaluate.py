"""Score a saved model on a data set split, whatever the model: one function per task, none per model.

:func:`evaluate_checkpoint` loads a checkpoint directory
(:func:`~qpnlp.training.checkpoint.load_checkpoint`) and dispatches on the
model's declared ``task``: classification models are scored by accuracy on a
split of the training protocol, matching models by MAP / MRR / P@1 on a split
file of their QA data set, temporal models (Word2Fun) by the held-out
skip-gram log-likelihood of a timestamped corpus. ``qpnlp evaluate DIR`` is a
thin wrapper around it.

A checkpoint is refused (``ValueError``) for a data set of another task (a
classifier on an answer-selection set, a matcher on a classification set, a
Word2Fun model on either), and a classifier for a data set whose labels
differ from those it predicts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from qpnlp.data import DATASETS, QA_DATASETS, EncodedTexts, load_classification, load_qa, splits

from .checkpoint import Checkpoint, load_checkpoint
from .matching import encode_qa, evaluate_ranking, limit_questions, metrics_dict
from .config import ConfigError
from .trainer import accuracy

__all__ = ["evaluate_checkpoint", "CLASSIFICATION_SPLITS"]

CLASSIFICATION_SPLITS = ("train", "dev", "test")


def evaluate_checkpoint(directory: str | os.PathLike, *, dataset: str | None = None, split: str = "test",
                        root=None, device: str = "cpu", max_questions: int | None = None) -> dict:
    """Load the checkpoint in ``directory`` and score it on ``split`` of ``dataset`` (default: its own data set).

    Returns a report dict: ``checkpoint``, ``model``, ``dataset``, ``split``, ``metrics``, ``n``,
    ``seed``, ``config`` (the model's config and the training settings saved with it), ``wall_seconds``.
    """
    start = time.perf_counter()
    checkpoint = load_checkpoint(directory, device=device)
    task = checkpoint.model.task
    if checkpoint.vocabulary is None:
        raise ValueError(f"{directory} has no vocabulary.json; it cannot encode texts")
    _check_task(directory, checkpoint, dataset)
    if max_questions is not None and task != "matching":
        raise ConfigError(f"max_questions (--max-questions) limits the questions of an answer-selection set; "
                          f"{checkpoint.name} is a {task} model, scored on the whole split")
    report = _EVALUATORS[task](checkpoint, dataset=dataset, split=split, root=root, device=device,
                               max_questions=max_questions)
    config = dict(model=checkpoint.model.config.to_dict(), train=checkpoint.metadata.get("train"))
    return dict(checkpoint=str(directory), model=checkpoint.name, **report, seed=checkpoint.metadata.get("seed"),
                config=config, wall_seconds=time.perf_counter() - start)


_TASK_OF_DATASET = {**{name.lower(): "classification" for name in DATASETS},
                    **{name: "matching" for name in QA_DATASETS},
                    **{alias: "matching" for alias in ("trec-qa", "trec_qa", "wiki-qa", "wiki_qa")}}
_DATASET_NAMES = {"classification": DATASETS, "matching": QA_DATASETS}
_TASK_WORDS = {"classification": "a sentence-classification", "matching": "an answer-selection",
               "temporal": "a timestamped-corpus (Word2Fun)"}


def _check_task(directory, checkpoint: Checkpoint, dataset: str | None) -> None:
    """Refuse a data set of another task than the checkpoint's model (and a checkpoint whose metadata disagrees)."""
    task = checkpoint.model.task
    recorded = checkpoint.metadata.get("task")
    if recorded is not None and recorded != task:
        raise ValueError(f"{directory}: the metadata says task {recorded!r} but the model {checkpoint.name!r} is a "
                         f"{task} model")
    if dataset is not None and task in _DATASET_NAMES and str(dataset).lower() not in _TASK_OF_DATASET:
        raise ConfigError(f"unknown data set {dataset!r}; {_TASK_WORDS[task]} model ({checkpoint.name}) is scored "
                          f"on one of {', '.join(_DATASET_NAMES[task])}")
    named = _TASK_OF_DATASET.get(str(dataset or checkpoint.metadata.get("dataset") or "").lower())
    if named is not None and named != task:
        which = dataset or checkpoint.metadata.get("dataset")
        raise ValueError(f"{directory} holds {_TASK_WORDS[task]} model ({checkpoint.name}) but {which} is "
                         f"{_TASK_WORDS[named]} data set; pass a data set of its task")


def _evaluate_classifier(checkpoint: Checkpoint, *, dataset, split, root, device, max_questions) -> dict:
    if split not in CLASSIFICATION_SPLITS:
        raise ConfigError(f"split must be one of {', '.join(CLASSIFICATION_SPLITS)} for a classifier; got {split!r}")
    meta = checkpoint.metadata
    name = (dataset or meta.get("dataset") or "").upper()
    if not name:
        raise ValueError("the checkpoint does not name its data set; pass a data set")
    data = load_classification(name, root=root)
    labels = meta.get("label_names")
    if labels is not None and list(labels) != list(data.label_names):
        raise ValueError(f"the checkpoint predicts the labels {list(labels)} but {name} has {list(data.label_names)}")
    if checkpoint.model.config.num_classes != data.n_classes:
        raise ValueError(f"the checkpoint has {checkpoint.model.config.num_classes} classes but {name} has "
                         f"{data.n_classes}")
    wanted = meta.get("split", "fixed") if name == meta.get("dataset") else "fixed"
    if wanted == "fixed" and data.fixed_splits is None:
        raise ValueError(f"{name} has no fixed split (it is evaluated by cross-validation); a checkpoint trained on "
                         f"{meta.get('dataset')!r} can only be scored on a data set with a fixed split (SST2, TREC) "
                         f"or on its own fold")
    chosen = next((s for s in splits(data, seed=meta.get("seed", 0), n_folds=meta.get("folds") or 10)
                   if s.name == wanted), None)
    if chosen is None:
        raise ValueError(f"split {wanted!r} not found for {name}")
    part = dict(zip(CLASSIFICATION_SPLITS, chosen.subsets(data)))[split]
    encoded = EncodedTexts(checkpoint.vocabulary.encode_many(part.texts), part.labels)
    acc = accuracy(checkpoint.model, encoded, device=device, max_len=meta.get("max_len"))
    return dict(dataset=name, split=f"{chosen.name} {split}", metrics=dict(accuracy=acc), n=len(encoded))


def _evaluate_matcher(checkpoint: Checkpoint, *, dataset, split, root, device, max_questions) -> dict:
    meta = checkpoint.metadata
    name = (dataset or meta.get("dataset") or "").lower()
    if not name:
        raise ValueError("the checkpoint does not name its data set; pass a data set")
    data = limit_questions(load_qa(name, split, root=root, filter_questions=True), max_questions)
    encoded = encode_qa(data, checkpoint.vocabulary)
    metrics = metrics_dict(evaluate_ranking(checkpoint.model, encoded, device=device, max_len=meta.get("max_len")))
    return dict(dataset=data.name, split=split, metrics=metrics, n=len(encoded))


def _evaluate_temporal(checkpoint: Checkpoint, *, dataset, split, root, device, max_questions) -> dict:
    """Held-out skip-gram log-likelihood (:mod:`qpnlp.word2fun.evaluate`) on a timestamped corpus."""
    from qpnlp.data import load_sotu, read_tsv
    from qpnlp.word2fun.evaluate import heldout_pairs, word2fun_log_likelihood

    if not dataset:
        raise ValueError("a Word2Fun model is scored on a timestamped corpus: pass 'sotu' or a TSV file as the "
                         "data set (YEAR<TAB>tokens per line)")
    corpus = load_sotu() if dataset == "sotu" else read_tsv(os.path.expanduser(dataset))   # --dataset=~/c.tsv
    pairs = heldout_pairs(corpus, checkpoint.vocabulary, seed=checkpoint.metadata.get("seed", 0) or 0)
    score = word2fun_log_likelihood(checkpoint.model.to(device), pairs)
    return dict(dataset=str(dataset), split="all", metrics=dict(log_likelihood=score), n=len(pairs))


_EVALUATORS: dict[str, Callable[..., dict]] = {"classification": _evaluate_classifier,
                                              "matching": _evaluate_matcher,
                                              "temporal": _evaluate_temporal}
