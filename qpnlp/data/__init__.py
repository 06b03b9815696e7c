"""Dataset readers, the tokeniser, the vocabulary, pretrained vectors, protocols, batching and skip-gram pairs.

Benchmark files are found through ``$QPNLP_DATA`` (see :func:`data_root`).
"""

from qpnlp.data.batching import EncodedTexts, collate, iterate_batches, make_loader, pad_batch
from qpnlp.data.classification import DATASETS, ClassificationDataset, load_classification
from qpnlp.data.paths import DATA_ENV_VAR, data_root
from qpnlp.data.pretrained import (
    OOVReport,
    PretrainedVectors,
    embedding_matrix_for,
    from_matrix,
    load_glove_50d,
    load_glove_text,
    pretrained_fallback_size,
    with_pretrained_fallback,
)
from qpnlp.data.protocols import Split, carve_dev, splits
from qpnlp.data.qa import QA_DATASETS, QADataset, concat_qa, load_qa, read_qa_tsv
from qpnlp.data.skipgram import (
    CentreBatch,
    CentreRun,
    NegativeSampler,
    iter_centre_batches,
    iter_centre_runs,
    keep_probabilities,
)
from qpnlp.data.sotu import load_sotu, split_sentences
from qpnlp.data.sotu_era import ERA_LABELS, load_sotu_era
from qpnlp.data.timestamped import EncodedCorpus, TimestampedCorpus, TsvStream, concatenate, read_tsv, write_tsv
from qpnlp.data.tokenize import normalize_text, tokenize
from qpnlp.data.vocab import PAD, PAD_ID, UNK, UNK_ID, Vocabulary

__all__ = [
    "DATASETS",
    "DATA_ENV_VAR",
    "ERA_LABELS",
    "PAD",
    "PAD_ID",
    "QA_DATASETS",
    "UNK",
    "UNK_ID",
    "CentreBatch",
    "CentreRun",
    "ClassificationDataset",
    "EncodedCorpus",
    "EncodedTexts",
    "NegativeSampler",
    "OOVReport",
    "PretrainedVectors",
    "QADataset",
    "Split",
    "TimestampedCorpus",
    "Vocabulary",
    "carve_dev",
    "collate",
    "concat_qa",
    "data_root",
    "embedding_matrix_for",
    "from_matrix",
    "iter_centre_batches",
    "iter_centre_runs",
    "iterate_batches",
    "keep_probabilities",
    "load_classification",
    "load_glove_50d",
    "load_glove_text",
    "load_qa",
    "load_sotu",
    "load_sotu_era",
    "make_loader",
    "normalize_text",
    "pad_batch",
    "pretrained_fallback_size",
    "read_qa_tsv",
    "TsvStream",
    "concatenate",
    "read_tsv",
    "split_sentences",
    "splits",
    "tokenize",
    "with_pretrained_fallback",
    "write_tsv",
]
