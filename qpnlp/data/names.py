"""Data-set names as their registries spell them, whatever the case given: one rule for every lookup by name.

The sentence-classification data sets are named in upper case
(:data:`~qpnlp.data.classification.DATASETS`: ``TREC``), the answer-selection
ones in lower case (:data:`~qpnlp.data.qa.QA_DATASETS`: ``trecqa``, with the
aliases of ``qpnlp.data.qa.qa_folder_name``); the loaders accept either
case. A table keyed by data set (a model's
``training_defaults["per_dataset"]``, :meth:`~qpnlp.models.base.Model.training_default`)
is looked up through :func:`dataset_name`, so ``trec``, ``TREC`` and ``Trec``
find one entry, from the command line (``--dataset`` is upper-cased for a
classifier, lower-cased for a matching model) and from Python alike.
"""

from __future__ import annotations

from qpnlp.data.classification import DATASETS
from qpnlp.data.qa import qa_folder_name

__all__ = ["dataset_name"]


def dataset_name(name: str) -> str:
    """``name`` as its registry spells it: a classification data set in upper case, an answer-selection data set
    in lower case without its alias's hyphen (``qpnlp.data.qa.qa_folder_name``), any other name in lower
    case.

    Parameters
    ----------
    name : str
        A data set name in any case, or an answer-selection alias (``"TREC-QA"``).

    Examples
    --------
    >>> dataset_name("trec"), dataset_name("TREC-QA"), dataset_name("MyData")
    ('TREC', 'trecqa', 'mydata')
    """
    key = str(name).upper()
    return key if key in DATASETS else qa_folder_name(name)
