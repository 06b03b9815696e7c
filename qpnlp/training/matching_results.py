"""What the answer-selection training of :mod:`qpnlp.training.matching` returns: two records.

* :class:`MatchingFitResult` -- of :func:`~qpnlp.training.matching.fit_matching`: the best epoch, its dev
  metrics, the time taken and the history;
* :class:`MatchingRun` -- of :func:`~qpnlp.training.matching.run_matching`: the dev and evaluation metrics, the
  trained model with its vocabulary and config (what a checkpoint saves), and the training data's size.

The metrics are :func:`~qpnlp.training.matching.metrics_dict`'s: ``map``, ``mrr``, ``p_at_1`` (floats) and
``questions`` (int). Both records are importable from :mod:`qpnlp.training.matching` too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qpnlp._repr import record_repr
from qpnlp.data import Vocabulary
from qpnlp.models import Model

__all__ = ["MatchingFitResult", "MatchingRun"]


@dataclass
class MatchingFitResult:
    """What :func:`~qpnlp.training.matching.fit_matching` returns: the best epoch, its dev metrics, the time taken
    and the history.

    Attributes
    ----------
    best_epoch : int
        The epoch (1-based) whose parameters the model holds afterwards: the best dev MAP (0 when no epoch
        scored a finite MAP).
    best_dev : dict or None
        The dev metrics of ``best_epoch`` (``map``, ``mrr``, ``p_at_1``, ``questions``); None when ``best_epoch``
        is 0.
    seconds : float
        Wall time of the training, in seconds (a resumed run's included).
    history : list of dict, default []
        One entry per finished epoch: ``epoch``, ``train_loss``, ``dev`` (its metrics), the fields ``on_epoch``
        returned, and ``seconds`` (elapsed since the start of the training).
    """

    best_epoch: int
    best_dev: dict
    seconds: float
    history: list[dict] = field(default_factory=list)

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut


@dataclass
class MatchingRun:
    """Outcome of :func:`~qpnlp.training.matching.run_matching`: dev (selection) and evaluation metrics, and what to
    checkpoint.

    Attributes
    ----------
    dataset : str
        The data set's name, a key of :data:`~qpnlp.data.qa.QA_DATASETS` (also when ``extra_train`` added other
        data sets' training splits).
    dev : dict
        The dev metrics of the selected epoch (``best_dev`` of :class:`MatchingFitResult`).
    evaluation : dict of str -> dict
        The metrics of each evaluation split whose file exists, scored once with the best-dev parameters.
    best_epoch : int
        The selected epoch (1-based).
    seconds : float
        Wall time of the training, in seconds (scoring the evaluation splits excluded).
    history : list of dict
        One entry per epoch (``history`` of :class:`MatchingFitResult`), with ``"<split>": metrics`` for each of
        ``observe_splits``.
    model : qpnlp.models.Model
        The trained model, holding the best-dev parameters (in eval mode, on the training device).
    vocab : qpnlp.data.Vocabulary
        The vocabulary of the model's word ids (training words, then any pretrained fallback words).
    model_config : dict
        The model's config as a plain dict (``config.to_dict()``), for a checkpoint.
    oov_rate : float or None
        The fraction of training word types without a pretrained vector; None without vectors.
    train_questions : int
        The training questions (``extra_train``'s included; unfiltered, at most ``max_questions`` per data set).
    train_triplets : int
        The triplets one epoch samples (:func:`~qpnlp.training.matching.sample_triplets` with the config's
        ``negatives``); counted for the pointwise loss too.
    train_split : str, default "train"
        The training file of the data set (``"train-all"`` for TREC-QA's TRAIN-ALL).
    questions_removed : dict of str -> dict, default {}
        Per filtered split scored (dev, evaluation and observed splits), the question filter of its file and the
        questions it removed (:meth:`~qpnlp.data.QADataset.filter_counts`), counts of the whole file (before
        ``max_questions``): ``{"filter": "clean", "removed": 14, "file_questions": 243}``.
    candidates : dict of str -> int, default {}
        The candidate answers of each split read, one question-candidate pair each (the rows scored, what
        ``qpnlp evaluate`` reports as ``n``): dev, the evaluation and observed splits, and the training data as
        ``"train"``.
    """

    dataset: str
    dev: dict
    evaluation: dict                    # split name -> metrics, scored once with the best-dev parameters
    best_epoch: int
    seconds: float
    history: list
    model: Model
    vocab: Vocabulary
    model_config: dict
    oov_rate: float | None
    train_questions: int
    train_triplets: int
    train_split: str = "train"
    questions_removed: dict = field(default_factory=dict)
    candidates: dict = field(default_factory=dict)

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut
