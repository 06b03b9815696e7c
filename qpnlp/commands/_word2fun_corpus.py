"""``--corpus`` of ``qpnlp train word2fun``: the files it names (a comma-separated list of files and globs, or
``sotu``) and the corpus read from them, in memory or streamed; and the comma-separated items of a list option
(``--corpus``, ``--words``) with their escapes."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path


def _corpus_parts(spec: str) -> list[tuple[str, list[str]]]:
    """The comma-separated parts of ``--corpus`` (none for ``sotu``; ``\\,`` is a comma inside a path, every other
    backslash a backslash, so that a Windows path ``\\\\server\\share`` is typed as it is: :func:`_comma_items`),
    each with the paths it names (a glob's matches, else the part itself)."""
    parts = [] if spec == "sotu" else [os.path.expanduser(s) for s in _comma_items(spec, backslash=False)]
    return [(part, sorted(glob.glob(part)) if any(c in part for c in "*?[") else [part]) for part in parts]


def _corpus_paths(spec: str) -> list[Path]:
    paths: list[Path] = []
    for part, matches in _corpus_parts(spec):
        if not matches:
            raise FileNotFoundError(f"--corpus {part}: no file matches")
        for m in matches:
            path = Path(m)
            if path.is_dir():
                raise ValueError(f"--corpus {m} is a directory; give a TSV file, a comma-separated list of files "
                                 f"or a quoted glob such as '{m}/*.tsv'")
            if not path.is_file():
                raise FileNotFoundError(f"corpus file {m} does not exist (use 'sotu' or a TSV file)")
            paths.append(path)
    if not paths:
        raise ValueError("--corpus is empty")
    return paths


def _load_corpus(spec: str, stream: bool):
    from qpnlp.data import load_sotu, read_tsv
    from qpnlp.data.timestamped import TsvStream, concatenate

    if spec == "sotu":
        if stream:
            raise ValueError("--stream reads TSV files; the sotu corpus is loaded in memory")
        return load_sotu()
    paths = _corpus_paths(spec)
    if stream:
        return TsvStream(paths)
    corpus = concatenate([read_tsv(path) for path in paths])
    if corpus.n_tokens == 0:
        raise ValueError(f"--corpus {spec}: no token in {', '.join(map(str, paths))} (empty files, blank lines or "
                         f"times without text; each line is 'TIME<TAB>tokens')")
    return corpus


#: An item of ``--words``: up to an unescaped comma (``\\,`` and ``\\\\`` are a comma and a backslash of the item);
#: of ``--corpus``: ``\\,`` alone is an escape (a path keeps its backslashes).
_COMMA_ITEM = {True: re.compile(r"(?:\\[\\,]|[^,])+"), False: re.compile(r"(?:\\,|[^,])+")}
_UNESCAPE = {True: re.compile(r"\\([\\,])"), False: re.compile(r"\\(,)")}


def _comma_items(spec: str, backslash: bool = True) -> list[str]:
    """The non-empty items of the comma-separated ``spec``, unescaped: ``a\\,b,c`` is ``["a,b", "c"]``; with
    ``backslash``, ``\\\\`` is a backslash too (a lone backslash before another character stays as typed)."""
    return [_UNESCAPE[backslash].sub(r"\1", item) for item in _COMMA_ITEM[backslash].findall(spec)]
