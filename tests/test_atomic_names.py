"""The names of a save's hidden siblings live in qpnlp._atomic, which makes them (``.NAME.XXXXXXXX.tmp`` / ``.old``)
and reads them back (leftover_of, leftovers); the command line parsed them on its own, more loosely."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from qpnlp import _atomic
from qpnlp._atomic import atomic_directory, atomic_file, leftover_of, leftovers, lock_file_of


@pytest.mark.parametrize("name", ["model", "model.v2", ".hidden", "a b.json"])
@pytest.mark.parametrize("kind", ["tmp", "old"])
def test_the_names_the_writer_makes_are_read_back_as_its_leftovers(tmp_path, name, kind):
    target = tmp_path / name
    made = [Path(tempfile.mkdtemp(**_atomic._sibling(target, kind))) for _ in range(3)]
    fd, file = tempfile.mkstemp(**_atomic._sibling(target, kind))
    os.close(fd)
    for path in [*made, Path(file)]:
        assert leftover_of(path) == target and path.suffix == f".{kind}"
    assert leftovers(target) == sorted([*made, Path(file)])


def test_the_temporaries_of_real_saves_are_read_back(tmp_path):
    target = tmp_path / "report.json"
    with atomic_file(target) as handle:
        handle.write("{}")
        (temporary,) = [p for p in tmp_path.iterdir() if p.name.startswith(".")]
        assert leftover_of(temporary) == target and leftovers(target) == [temporary]
    with atomic_directory(tmp_path / "model") as tmp:
        assert leftover_of(tmp) == tmp_path / "model" and leftovers(tmp_path / "model") == [tmp]
    assert leftovers(target) == [] and leftovers(tmp_path / "model") == []


def test_other_names_are_not_leftovers(tmp_path):
    target = tmp_path / "model"
    others = [lock_file_of(target, beside=True).name, "model", "model.tmp", ".model.tmp", ".model.old",
              ".model.k1lled0.tmp", ".model.k1lled000.tmp", ".model.K1LLED00.tmp", ".model.k1lled00.bak",
              "model.k1lled00.tmp", ".modelx.k1lled00.tmp", ".model.v2.k1lled00.tmp", ".model.k1lled00.tmp.txt"]
    for name in others:
        (tmp_path / name).write_text("user's")
    assert [name for name in others if leftover_of(tmp_path / name) == target] == []
    assert leftovers(target) == []
    assert leftover_of(tmp_path / ".model.v2.k1lled00.tmp") == tmp_path / "model.v2"       # another NAME's
    assert leftovers(tmp_path / "missing" / "model") == []


def test_a_resume_puts_back_only_a_directory_named_as_the_writer_names_it(tmp_path):
    target = tmp_path / "state"
    fake = tmp_path / ".state.mine.old" / "state"              # not the writer's name: the user's, left alone
    fake.mkdir(parents=True)
    assert _atomic.restore_replaced_directory(target) is None and fake.is_dir()
    aside = Path(tempfile.mkdtemp(**_atomic._sibling(target, "old"))) / "state"
    aside.mkdir()
    assert _atomic.restore_replaced_directory(target) == aside and target.is_dir() and not aside.parent.exists()
