"""Tiny training data and models shared by the training tests (resume, state footprint, devices).

Loaded by file (``importlib``), as the suite runs with ``--import-mode=importlib``: a test module cannot import a
sibling by name. Class 0 of :func:`texts` uses words 2..9, class 1 words 10..17, so a few epochs separate them.
"""

import numpy as np
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import CNM, QPDN, CNMConfig, QPDNConfig
from qpnlp.training.matching import EncodedQA


def texts(n=120, seed=0):
    """``n`` labelled texts of 2-6 word ids; the label decides the ids' range."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    return EncodedTexts([list(rng.integers(2 + 8 * y, 10 + 8 * y, rng.integers(2, 7))) for y in labels], labels)


def qa(seed=0, questions=8):
    """``questions`` questions of 3 word ids, each with 3 candidates of which the first is correct."""
    rng = np.random.default_rng(seed)
    qs, cands, qidx, labels, groups = [], [], [], [], []
    for q in range(questions):
        qs.append(list(rng.integers(2, 20, 3)))
        start = len(cands)
        for j in range(3):
            cands.append(list(rng.integers(2, 20, rng.integers(2, 5))))
            qidx.append(q)
            labels.append(int(j == 0))
        groups.append(np.arange(start, len(cands)))
    return EncodedQA(qs, cands, np.array(qidx), np.array(labels), tuple(groups))


def qpdn(seed):
    """A QPDN over 20 words with dropout and trainable word weights."""
    return QPDN(QPDNConfig(num_words=20, num_classes=2, dim=6, num_measurements=4, dropout=0.3,
                           weighting="trainable"), generator=torch.Generator().manual_seed(seed))


def cnm(seed):
    """A CNM over 20 words with dropout."""
    return CNM(CNMConfig(num_words=20, dim=6, num_measurements=6, dropout=0.2),
               generator=torch.Generator().manual_seed(seed))


def equal_states(a, b):
    """Whether two modules hold the same tensors, bit for bit."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def without_seconds(history):
    """A history without its wall times (which differ between equal runs)."""
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]
