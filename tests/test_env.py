"""qpnlp._env: the environment variables, read one way (blank = unset, a bad value an error naming it), and listed."""

import argparse
import ast
import re
from pathlib import Path

import pytest

from qpnlp import _env, _numba
from qpnlp.word2fun import distributed, pair_loop

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("value", "expected"), [("0", False), ("1", True), (" 0 ", False), ("off", False),
                                                 ("FALSE", False), ("no", False), ("On", True), ("yes", True)])
def test_a_switch_takes_the_usual_spellings(monkeypatch, value, expected):
    monkeypatch.setenv("QPNLP_SOME_SWITCH", value)
    assert _env.flag("QPNLP_SOME_SWITCH", not expected) is expected


@pytest.mark.parametrize("value", ["", "  "])
def test_a_blank_switch_is_an_unset_one(monkeypatch, value):
    monkeypatch.setenv("QPNLP_SOME_SWITCH", value)
    assert _env.flag("QPNLP_SOME_SWITCH", True) and not _env.flag("QPNLP_SOME_SWITCH", False)
    assert _env.text("QPNLP_SOME_SWITCH") is None


@pytest.mark.parametrize("value", ["2", "maybe", "0.0"])
def test_a_bad_switch_names_the_variable_and_the_values(monkeypatch, value):
    monkeypatch.setenv("QPNLP_SOME_SWITCH", value)
    with pytest.raises(ValueError, match=rf"QPNLP_SOME_SWITCH must be 0 or 1 .*off/on\); got '{value}'"):
        _env.flag("QPNLP_SOME_SWITCH", True)


@pytest.mark.parametrize("spelt", [*_env.SWITCHES, "TRUE", " Off ", "Yes", "nO"])
def test_every_reader_of_a_switch_takes_the_same_spellings(monkeypatch, spelt):
    """Three readers had three sets: QPNLP_* took 0/1, false/true, no/yes, off/on; a ``list[bool]`` option's items
    true/false only (``--flags 1``: "expected true or false"); a selection grid lower-case true/false only
    (``complete=True`` reached the model as the string 'True', "must be bool")."""
    from qpnlp.commands._config_options import _boolean
    from qpnlp.training.classification import parse_grid

    expected = _env.SWITCHES[spelt.strip().lower()]
    monkeypatch.setenv("QPNLP_SOME_SWITCH", spelt)
    assert _env.flag("QPNLP_SOME_SWITCH", not expected) is expected
    assert _boolean(spelt) is expected
    in_grid = parse_grid([f"complete={spelt}"])[0]["complete"]
    assert in_grid is expected if spelt.strip() not in ("0", "1") else in_grid == int(spelt)   # a grid's numbers


def test_a_bad_switch_is_refused_naming_the_spellings_wherever_it_is_read():
    from qpnlp.commands._config_options import _boolean
    from qpnlp.training.classification import parse_grid

    with pytest.raises(argparse.ArgumentTypeError, match=r"each item must be 0 or 1 \(or false/true, no/yes, "
                                                          r"off/on\); got 'maybe'"):
        _boolean("maybe")
    with pytest.raises(ValueError, match=r"--x must be 0 or 1 \(or false/true, no/yes, off/on\); got 'ja'"):
        _env.boolean("ja", "--x")
    assert parse_grid(["weighting=maybe"]) == [dict(weighting="maybe")]        # a string, as any other word


def test_qpnlp_compiled_off_turns_the_loops_off(monkeypatch):
    """Only the exact string "0" turned a loop off: QPNLP_COMPILED=false, =off or =' 0' left every loop compiled."""
    monkeypatch.setattr(_numba, "HAVE_NUMBA", True)
    monkeypatch.setattr(_numba, "imports", lambda: True)
    for value in ("false", "off", " 0"):
        monkeypatch.setenv("QPNLP_COMPILED", value)
        assert not pair_loop.available() and not _numba.enabled("QPNLP_TRIG_COMPILED")
    monkeypatch.setenv("QPNLP_COMPILED", "off")
    assert pair_loop.describe("cpu") == "SGD step: torch ops (QPNLP_COMPILED=off)"


def test_a_bad_compiled_switch_is_refused_with_numba_or_without(monkeypatch):
    """QPNLP_COMPILED=2 counted as on: a typo went unnoticed, on a machine without numba too."""
    monkeypatch.setattr(_numba, "HAVE_NUMBA", False)
    monkeypatch.setenv("QPNLP_LOOKUP_COMPILED", "2")
    with pytest.raises(ValueError, match="QPNLP_LOOKUP_COMPILED must be 0 or 1"):
        _numba.enabled("QPNLP_LOOKUP_COMPILED")


def test_switches_lists_every_compiled_loop():
    """:data:`qpnlp._numba.SWITCHES` (what the CLI checks) names every variable a loop asks ``enabled`` about."""
    asked = set()
    for path in (ROOT / "qpnlp").rglob("*.py"):
        asked |= set(re.findall(r'_numba\.enabled\("(\w+)"\)', path.read_text(encoding="utf-8")))
    assert asked and asked | {"QPNLP_COMPILED"} == set(_numba.SWITCHES)


@pytest.mark.parametrize("value", ["", " "])
def test_a_blank_world_size_is_one_process(monkeypatch, value):
    """``WORLD_SIZE=`` raised int()'s "invalid literal for int() with base 10: ''" in setup."""
    monkeypatch.setenv("WORLD_SIZE", value)
    assert distributed.setup("cpu") == 1


def test_a_bad_world_size_names_the_variable(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE must be a whole number >= 0; got 'two'"):
        distributed.setup("cpu")


@pytest.mark.parametrize(("name", "value", "message"), [
    ("QPNLP_DIST_BACKEND", "foo", "QPNLP_DIST_BACKEND must be 'nccl' or 'gloo'; got 'foo'"),
    ("QPNLP_DIST_TIMEOUT", "soon", "QPNLP_DIST_TIMEOUT must be a number of seconds > 0 (at most 86399999913600); "
                                   "got 'soon'"),
    ("QPNLP_DIST_TIMEOUT", "1e14", "QPNLP_DIST_TIMEOUT must be a number of seconds > 0"),   # was OverflowError, 1
    ("WORLD_SIZE", "two", "WORLD_SIZE must be a whole number >= 0; got 'two'"),
    ("QPNLP_COMPILED", "maybe", "QPNLP_COMPILED must be 0 or 1"),
])
def test_the_command_refuses_a_bad_variable_once_before_starting_processes(tmp_path, monkeypatch, capfd, name,
                                                                            value, message):
    """``--processes 2`` with a bad variable: every process said the error (three lines, exit code 1) after they
    had started; now the launcher says it once, a usage error (exit code 2), before the corpus is read."""
    from qpnlp.cli import main

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setenv(name, value)
    monkeypatch.setattr("qpnlp.commands.word2fun.run_in_processes",
                        lambda *a, **k: pytest.fail("processes started"))
    (tmp_path / "c.tsv").write_text("1900\twar peace\n")
    assert main(["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--no-progress", "--processes", "2"]) == 2
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_a_blank_data_root_is_an_unset_one(monkeypatch):
    from qpnlp.data import data_root

    monkeypatch.setenv("QPNLP_DATA", " ")
    with pytest.raises(FileNotFoundError, match="QPNLP_DATA is not set"):
        data_root()


def _variables_read() -> set[str]:
    """The QPNLP_... names written as strings in qpnlp's sources."""
    names = set()
    for path in (ROOT / "qpnlp").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names |= set(re.findall(r"^QPNLP_[A-Z0-9_]+$", node.value))
    return names


def test_every_variable_is_listed_in_one_place():
    """Users found QPNLP_DIST_TIMEOUT on the distributed page, the compiled switches in module docstrings and
    QPNLP_TEST_DEVICE in the README, and no list: the getting-started page now has one, internal ones marked so."""
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    names = _variables_read() | {"QPNLP_TEST_DEVICE"}
    assert {"QPNLP_DATA", "QPNLP_DIST_TIMEOUT", "QPNLP_LOCKED_OUT", *_numba.SWITCHES} <= names
    assert not {n for n in names if f"`{n}`" not in section}
    assert "internal" in section.split("`QPNLP_LOCKED_OUT`", 1)[1].split("\n", 1)[0]


def test_a_blank_world_size_lets_word2fun_lock_its_out(tmp_path, monkeypatch):
    """``WORLD_SIZE=' '`` passed the command's check of the environment (blank: one process), then ended the run in
    the lock of ``--out`` with int()'s "invalid literal for int() with base 10: ' '"."""
    from qpnlp.cli import main
    from qpnlp.commands import word2fun

    monkeypatch.setenv("WORLD_SIZE", " ")
    monkeypatch.delenv(word2fun.LOCKED_OUT_VARIABLE, raising=False)
    monkeypatch.setattr(word2fun, "_load_corpus", lambda *a: pytest.fail("corpus read"))
    with pytest.raises(pytest.fail.Exception, match="corpus read"):         # --out locked, the run goes on
        main(["train", "word2fun", "--corpus", "sotu", "--out", str(tmp_path / "out"), "--no-progress"])
