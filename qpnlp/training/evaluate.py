"""Score a saved model on a data set split, whatever the model: one function per task, none per model.

:func:`evaluate_checkpoint` loads a checkpoint directory
(:func:`~qpnlp.training.checkpoint.load_checkpoint`) and dispatches on the
model's declared ``task``: classification models are scored by accuracy on a
split of the training protocol, matching models by MAP / MRR / P@1 on a split
file of their QA data set, temporal models (Word2Fun) by the held-out
skip-gram log-likelihood of a timestamped corpus (a TSV file read as the
training corpus was: lowercased where the checkpoint records a lowercased
stream). ``qpnlp evaluate DIR`` is a thin wrapper around it.

A checkpoint is refused (``ValueError``) for a data set of another task (a
classifier on an answer-selection set, a matcher on a classification set, a
Word2Fun model on either), and a classifier for a data set whose labels
differ from those it predicts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from qpnlp._checks import check_seed, is_integer
from qpnlp._errors import preview
from qpnlp.data import DATASETS, QA_DATASETS, EncodedTexts, data_root, load_classification, load_qa, splits
from qpnlp.data.qa import STANDARD_FILTERS, qa_folder_name
from qpnlp.models.base import CONFIG_FILE

from .checkpoint import Checkpoint, load_checkpoint
from .matching import encode_qa, evaluate_ranking, limit_questions, metrics_dict
from .config import ConfigError
from .length_chunks import DEFAULT_OVERHEAD
from .trainer import accuracy

__all__ = ["evaluate_checkpoint", "CLASSIFICATION_SPLITS"]

#: The parts of a classification data set a checkpoint can be scored on.
CLASSIFICATION_SPLITS = ("train", "dev", "test")


def evaluate_checkpoint(directory: str | os.PathLike, *, dataset: str | None = None, split: str | None = None,
                        root=None, device: str = "cpu", max_questions: int | None = None) -> dict:
    """Load the checkpoint in ``directory`` and score it on ``split`` of ``dataset`` (default: its own data set).

    ``split`` defaults to ``"test"``; ``split`` and ``max_questions`` are refused (:class:`ConfigError`) for a
    model they do not apply to (a Word2Fun model is scored on its whole corpus; only matching models have questions).

    Returns a report dict: ``checkpoint``, ``model``, ``vectors`` (the vectors the model was trained with, as its
    metadata records them: a registered name or an absolute path, null without vectors or where not recorded),
    ``data_root`` (the absolute data folder read: ``root``, else ``QPNLP_DATA``; None for Word2Fun, whose corpus is
    the data set), ``dataset``, ``split``, ``metrics``, ``n`` (the items scored: sentences, candidate answers or
    skip-gram pairs), ``counts`` (``n`` by name, as ``train`` reports them: ``{"sentences": n}``, ``{"questions":
    Q, "candidates": n}`` or ``{"skipgram_pairs": n}``), ``seed``, ``config`` (the model's config and the
    training settings saved with it), ``wall_seconds``; for a matching model also ``questions_removed``,
    ``{split: {"filter": ..., "removed": ..., "file_questions": ...}}``:
    the question filter of the split's file, how many questions it removed and how many the file holds
    (:meth:`~qpnlp.data.QADataset.filter_counts`).

    Parameters
    ----------
    directory : path-like
        A checkpoint written by ``qpnlp train ... --save`` (:func:`~qpnlp.training.checkpoint.load_checkpoint`); it
        must hold a vocabulary.
    dataset : str or None, default None
        The data set scored; None: the checkpoint's own (from its metadata).
    split : str or None, default None
        The split scored (above); None: ``"test"``.
    root : path-like, optional
        The data folder; None: ``QPNLP_DATA``.
    device : str, default "cpu"
        Where the model runs.
    max_questions : int or None, default None
        Score the first this many questions only (matching models); None: all.
    """
    start = time.perf_counter()
    checkpoint = load_checkpoint(directory, device=device)
    task = checkpoint.model.task
    if checkpoint.vocabulary is None:
        raise ValueError(f"{directory} has no vocabulary.json; it cannot encode texts")
    _check_metadata(directory, checkpoint.metadata)
    _check_task(directory, checkpoint, dataset)
    if max_questions is not None and task != "matching":
        raise ConfigError(f"max_questions (--max-questions) limits the questions of an answer-selection set; "
                          f"{checkpoint.name} is a {task} model, scored on the whole split")
    if split is not None and task == "temporal":
        raise ConfigError(f"split (--split) picks a split of a classification or answer-selection set; "
                          f"{checkpoint.name} is a {task} model, scored on the whole corpus; got {split!r}")
    split = "test" if split is None else split
    report = _EVALUATORS[task](checkpoint, dataset=dataset, split=split, root=root, device=device,
                               max_questions=max_questions)
    config = dict(model=checkpoint.model.config.to_dict(), train=checkpoint.metadata.get("train"))
    read = dict(vectors=checkpoint.metadata.get("vectors"), data_root=report.pop("data_root"))
    return dict(checkpoint=str(directory), model=checkpoint.name, **read, **report,
                seed=checkpoint.metadata.get("seed"), config=config, wall_seconds=time.perf_counter() - start)


def _text(value) -> bool:
    return isinstance(value, str)


def _count(minimum: int) -> Callable[[object], bool]:
    return lambda value: is_integer(value) and value >= minimum


def _seed(value) -> bool:
    try:
        check_seed(value)
    except ValueError:
        return False
    return True


def _texts(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# metadata key -> (check, what it must be); None is allowed for every key (not recorded).
_METADATA_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "task": (_text, "a string"), "dataset": (_text, "a data set name (a string)"), "split": (_text, "a string"),
    "seed": (_seed, "an integer in [0, 2**32 - 1]"), "folds": (_count(2), "an integer >= 2"),
    "max_len": (_count(1), "an integer >= 1"), "max_questions": (_count(1), "an integer >= 1"),
    "label_names": (_texts, "a list of strings"), "vectors": (_text, "a vector set's name or a path (a string)"),
}


def _check_metadata(directory: str | os.PathLike, metadata: dict) -> None:
    """Refuse hand-edited training metadata that the evaluation reads (``ValueError`` naming
    ``directory/config.json`` and the key): a data set that is not a string, a seed that is not an integer in
    [0, 2**32), a ``max_len`` or ``folds`` that is not a positive integer, labels that are not strings."""
    for key, (valid, what) in _METADATA_RULES.items():
        value = metadata.get(key)
        if value is not None and not valid(value):
            raise ValueError(f"{os.path.join(directory, CONFIG_FILE)}: metadata {key!r} must be {what}; got "
                             f"{type(value).__name__} {preview(value, 60)}")


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
    chosen = next((s for s in splits(data, seed=meta.get("seed") or 0, n_folds=meta.get("folds") or 10)
                   if s.name == wanted), None)
    if chosen is None:
        raise ValueError(f"split {wanted!r} not found for {name}")
    part = dict(zip(CLASSIFICATION_SPLITS, chosen.subsets(data)))[split]
    encoded = EncodedTexts(checkpoint.vocabulary.encode_many(part.texts), part.labels)
    acc = accuracy(checkpoint.model, encoded, device=device, max_len=meta.get("max_len"),
                   length_chunks=_length_chunks(meta))
    return dict(dataset=name, split=f"{chosen.name} {split}", metrics=dict(accuracy=acc), n=len(encoded),
                counts=dict(sentences=len(encoded)), data_root=str(data_root(root)))


def _evaluate_matcher(checkpoint: Checkpoint, *, dataset, split, root, device, max_questions) -> dict:
    meta = checkpoint.metadata
    name = (dataset or meta.get("dataset") or "").lower()
    if not name:
        raise ValueError("the checkpoint does not name its data set; pass a data set")
    how = STANDARD_FILTERS.get(qa_folder_name(name), "clean")      # a scored split needs a correct candidate
    data = limit_questions(load_qa(name, split, root=root, filter_questions=how), max_questions)
    encoded = encode_qa(data, checkpoint.vocabulary)
    metrics = metrics_dict(evaluate_ranking(checkpoint.model, encoded, device=device, max_len=meta.get("max_len"),
                                            length_chunks=_length_chunks(meta)))
    return dict(dataset=data.name, split=split, metrics=metrics, n=len(encoded),
                counts=dict(questions=metrics["questions"], candidates=len(encoded)), data_root=str(data_root(root)),
                questions_removed={split: data.filter_counts()})


def _length_chunks(meta: dict) -> int | None:
    """The ``length_chunks`` the training run scored its splits with (its saved ``train`` settings; the default
    where they do not say): chunks change the logits in their last bits, so another value may not give the
    reported figure."""
    train = meta.get("train")
    return train.get("length_chunks", DEFAULT_OVERHEAD) if isinstance(train, dict) else DEFAULT_OVERHEAD


def _evaluate_temporal(checkpoint: Checkpoint, *, dataset, split, root, device, max_questions) -> dict:
    """Held-out skip-gram log-likelihood (:mod:`qpnlp.word2fun.evaluate`) on a timestamped corpus."""
    from qpnlp.data import load_sotu, read_tsv
    from qpnlp.word2fun.evaluate import heldout_pairs, word2fun_log_likelihood

    if not dataset:
        raise ConfigError("a Word2Fun model is scored on a timestamped corpus: pass 'sotu' or a TSV file as the "
                          "data set (--dataset; YEAR<TAB>tokens per line)")
    corpus = load_sotu() if dataset == "sotu" else read_tsv(os.path.expanduser(dataset),    # --dataset=~/c.tsv
                                                            lowercase=_read_lowercased(checkpoint.metadata))
    pairs = heldout_pairs(corpus, checkpoint.vocabulary, seed=checkpoint.metadata.get("seed", 0) or 0)
    _warn_outside_span(checkpoint, pairs.times)
    score = word2fun_log_likelihood(checkpoint.model.to(device), pairs)
    return dict(dataset=str(dataset), split="all", metrics=dict(log_likelihood=score), n=len(pairs),
                counts=dict(skipgram_pairs=len(pairs)), data_root=None)


def _read_lowercased(meta: dict) -> bool:
    """Whether the training corpus's words were lowercased when read (``TsvStream(..., lowercase=True)``, recorded
    by :func:`~qpnlp.word2fun.train.fit` as ``corpus.lowercase``): a TSV file scored is read the same way, else its
    capitalised words were out of the vocabulary and silently left out of the score. False where not recorded."""
    corpus = meta.get("corpus")
    lowercase = corpus.get("lowercase", False) if isinstance(corpus, dict) else False
    if not isinstance(lowercase, bool):
        raise ValueError(f"metadata 'corpus.lowercase' must be true or false; got {preview(lowercase, 60)}")
    return lowercase


def _warn_outside_span(checkpoint: Checkpoint, times) -> None:
    """``UserWarning`` when a scored time (T,) lies outside the model's training span, worded as
    :class:`~qpnlp.word2fun.KeyedVectors` queries warn (its public check,
    :meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.query_times`: the functions extrapolate there)."""
    from qpnlp.word2fun.keyed_vectors import KeyedVectors

    KeyedVectors(checkpoint.model, checkpoint.vocabulary).query_times(times.unique(), "the corpus times")


_EVALUATORS: dict[str, Callable[..., dict]] = {"classification": _evaluate_classifier,
                                              "matching": _evaluate_matcher,
                                              "temporal": _evaluate_temporal}
