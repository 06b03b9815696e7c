"""Fixtures for the data tests: a small hand-made benchmark tree in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return path


@pytest.fixture
def fake_root(tmp_path) -> Path:
    """A miniature ``$QPNLP_DATA`` with every file format, quirks included."""
    c = tmp_path / "classification"
    # CR: an empty line, a blank (spaces) line, one duplicated sentence.
    write(c / "CR" / "custrev.pos", "great player ! . \n\ni love it . \ngreat player ! . \n   \n")
    write(c / "CR" / "custrev.neg", "it does n't work . \nbad remote . \n")
    write(c / "MR" / "rt-polarity.pos", "a fine film . \n")
    write(c / "MR" / "rt-polarity.neg", "a dull film . \n")
    write(c / "MPQA" / "mpqa.pos", "to win \n")
    write(c / "MPQA" / "mpqa.neg", "to win \nfailing \n")  # same text, conflicting labels
    write(c / "SUBJ" / "subj.subjective", "i love it . \n")
    write(c / "SUBJ" / "subj.objective", "the boy runs . \n")
    write(c / "SST2" / "train.tsv", "good \t1\nbad \t0\ngood \t1\nclichés galore \t0\n")
    write(c / "SST2" / "dev.tsv", "fine \t1\n")
    write(c / "SST2" / "test.tsv", "awful \t0\ngood \t1\n")
    # TREC train in ISO-8859-1 with a non-ASCII byte (0xf0 like the real file).
    write(
        c / "TREC" / "train_5500.label",
        "LOC:city Which city has a sister\u00f0city ?\nHUM:ind Who was Galileo ?\nNUM:date When did it happen ?\n"
        "LOC:city Which city has a sister\u00f0city ?\n",
        encoding="iso-8859-1",
    )
    write(c / "TREC" / "TREC_10.label", "DESC:def What is a cat ?\nHUM:desc Who is she ?\n")
    q = tmp_path / "qa"
    write(
        q / "wikiqa" / "dev.tsv",
        "what is a cat ?\tA cat is an animal .\t1\n"
        "what is a cat ?\tDogs bark .\t0\n"
        "who won ?\tNobody knows .\t0\n"  # no correct candidate
        "what is a cat ?\tCats purr .\t0\n"  # same question again, not contiguous
        "\n"
        "where is paris ?\tParis is in France .\t1\n"  # no wrong candidate
        "when ?\tToday .\t0\n"
        "when ?\tNow .\t1\n",
    )
    write(q / "wikiqa" / "train.tsv", "q ?\ta .\t0\nq ?\tb .\t1\nr ?\tc .\t0\n")
    write(q / "trecqa" / "train.tsv", "q ?\ta .\t1\nq ?\tb .\t0\n")
    write(q / "trecqa" / "dev.tsv", "q ?\ta .\t1\nq ?\tb .\t0\n")
    return tmp_path
