from pathlib import Path

import pytest

from qpnlp.data.paths import data_root


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
