import gzip
from pathlib import Path

import pytest

from qpnlp.data import paths
from qpnlp.data.paths import data_root, iter_lines


def test_explicit_root(tmp_path):
    assert data_root(tmp_path) == tmp_path.resolve()
    assert data_root(str(tmp_path)) == tmp_path.resolve()


def test_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv("QPNLP_DATA", str(tmp_path))
    assert data_root() == tmp_path.resolve()


def test_explicit_root_wins_over_env(tmp_path, monkeypatch):
    monkeypatch.setenv("QPNLP_DATA", str(tmp_path / "nowhere"))
    assert data_root(tmp_path) == tmp_path.resolve()


@pytest.mark.parametrize("value", [None, "", "  "])
def test_unset_env_says_how_to_set_it(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("QPNLP_DATA", raising=False)
    else:
        monkeypatch.setenv("QPNLP_DATA", value)
    with pytest.raises(FileNotFoundError, match=r"QPNLP_DATA is not set.*export QPNLP_DATA="):
        data_root()


def test_nonexistent_env_path(tmp_path, monkeypatch):
    monkeypatch.setenv("QPNLP_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=r"does not exist.*export QPNLP_DATA="):
        data_root()


def test_file_is_not_a_root(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        data_root(f)


@pytest.mark.data
def test_real_root_has_the_benchmarks(data_root):
    root = Path(data_root)
    assert (root / "classification").is_dir() and (root / "qa").is_dir()


@pytest.mark.parametrize("compress", [bytes, gzip.compress])
def test_iter_lines_reads_old_mac_line_ends(tmp_path, compress):
    # lines ended by "\r" alone were read as one line: the GloVe reader failed on "non-numeric value '2\rb'"
    path = tmp_path / "mac.txt"
    path.write_bytes(compress(b"\xef\xbb\xbfone\rtwo\r\rthree"))
    assert list(iter_lines(path)) == [(1, "one\r"), (2, "two\r"), (3, "\r"), (4, "three")]
    path.write_bytes(compress(b"one\r\ntwo\rstill two\nthree"))        # "\n" files as before: a stray "\r" stays
    assert list(iter_lines(path)) == [(1, "one\r\n"), (2, "two\rstill two\n"), (3, "three")]


def test_iter_lines_streams_old_mac_lines_with_the_line_limit(tmp_path, monkeypatch):
    # the "\r" lines are read in blocks: a file longer than MAX_LINE_BYTES is no "line longer than" it
    monkeypatch.setattr(paths, "MAX_LINE_BYTES", 16)
    path = tmp_path / "mac.txt"
    path.write_bytes(b"".join(b"line %d\r" % i for i in range(10_000)))
    assert [line for _, line in iter_lines(path)] == [f"line {i}\r" for i in range(10_000)]
    path.write_bytes(b"short\r" + b"x" * 40 + b"\rshort\r")
    with pytest.raises(ValueError, match=r"mac.txt:2: a line longer than 16 bytes"):
        list(iter_lines(path))
    path.write_bytes(b"one\rtwo\r" * 4 + b"three\n")   # no "\n" in the first 17 bytes: "\r" lines, then one
    with pytest.raises(ValueError, match=r"mac.txt: mixed line ends: a '\\n' after line \d+, in a file of old-Mac"):
        list(iter_lines(path))
