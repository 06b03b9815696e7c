"""The "Add your own model" tutorial runs as written: register, train with `qpnlp train`, save, load, evaluate."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from qpnlp.cli import main
from qpnlp.models import registered_models, unregister_model

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorials" / "add-a-model.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_model_file_is_about_fifty_lines():
    code = (ROOT / "docs" / "tutorials" / "purity_bow.py").read_text(encoding="utf-8").splitlines()
    assert len(code) <= 60


def test_the_tutorial_encodes_new_text_as_the_training_texts_were_read():
    """Split at spaces, "What is the capital of Peru?" reached the model as unknown words (`What`, `Peru?`)."""
    from qpnlp.data import tokenize

    (code,) = _blocks(r"\{code-block\} python")
    text = re.search(r'tokenize\("([^"]+)"\)', code)
    assert text is not None and ".split()" not in code
    assert tokenize(text.group(1)) == ["what", "is", "the", "capital", "of", "peru", "?"]


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="Windows: symlinks need Developer Mode or administrator rights")
def test_tutorial_runs_as_written(data_root, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QPNLP_DATA", data_root)
    commands = [line[2:] for block in _blocks("console") for line in block.splitlines() if line.startswith("$ ")]
    assert len(commands) == 2
    try:
        outputs = []
        for command in commands:
            argv = shlex.split(command.replace("docs/tutorials/", f"{ROOT}/docs/tutorials/"))
            assert argv[0] == "qpnlp"
            assert main(argv[1:]) == 0, command
            outputs.append(capsys.readouterr().out)
        assert "purity_bow" in registered_models("classification")
        trained = float(re.search(r"fixed: test accuracy ([\d.]+)", outputs[0]).group(1))
        evaluated = float(re.search(r"fixed test: accuracy ([\d.]+)", outputs[1]).group(1))
        assert trained == evaluated and trained > 0.4            # 6 classes: chance is below 0.25
        (code,) = _blocks(r"\{code-block\} python")
        # as a reader runs it: a new Python session in the folder of the commands, which is the repository root
        (tmp_path / "docs").symlink_to(ROOT / "docs")
        loaded = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
        assert loaded.returncode == 0, loaded.stderr
        assert loaded.stdout.strip() in {"ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"}
    finally:
        unregister_model("purity_bow")
        sys.modules.pop("qpnlp_plugin_purity_bow", None)
