"""``--report`` against what a command reads: refused over an input, taken beside it."""

from __future__ import annotations

import argparse
import json

import pytest

from qpnlp.commands._errors import UsageError
from qpnlp.commands._outputs import check_report_apart, read_paths
from qpnlp.commands._report import Report


def _evaluate_args(model) -> argparse.Namespace:
    return argparse.Namespace(checkpoint=str(model), dataset=None, vectors=None)


def test_a_new_report_inside_the_model_directory_evaluate_reads_is_taken_and_one_over_its_files_refused(tmp_path):
    """``qpnlp evaluate MODEL --report MODEL/eval.json`` (the evaluation kept beside the model) was refused as "inside
    the checkpoint, which the command reads", though it overwrites nothing the command reads; so was running it a
    second time. A report over a file of the model (``MODEL/config.json``) is still refused."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    args = _evaluate_args(model)
    check_report_apart(model / "eval.json", {"--save": None}, read_paths(args))            # a new file: taken
    report = Report(argparse.Namespace(report=str(model / "eval.json")), command="evaluate")
    report.write()                                                                         # the first evaluation's
    assert json.loads((model / "eval.json").read_text())["schema"] == "qpnlp-report/1"
    check_report_apart(model / "eval.json", {"--save": None}, read_paths(args))            # written again: taken
    with pytest.raises(UsageError, match="the report .*config.json would be written inside"):
        check_report_apart(model / "config.json", {"--save": None}, read_paths(args))
    (model / "notes.json").write_text('{"schema": "mine"}')                                # not a report of qpnlp
    with pytest.raises(UsageError, match="notes.json would be written inside"):
        check_report_apart(model / "notes.json", {"--save": None}, read_paths(args))
    with pytest.raises(UsageError, match="would be written over"):
        check_report_apart(model, {"--save": None}, read_paths(args))
