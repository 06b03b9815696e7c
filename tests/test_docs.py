"""The code of the README and the docs runs as written: Python blocks page by page, ``qpnlp`` command lines parse.

A page's Python blocks (fenced as ``python`` or ``{code-block} python``) run in order in one namespace, as a reader
pastes them into one session, in a fresh interpreter in an empty folder (so global switches and files they make stay
out of the test process and the checkout). A block that must not run here is marked on the line before its fence::

    <!-- docs-test: needs QPNLP_DATA -->      run only when QPNLP_DATA is set
    <!-- docs-test: needs cuda -->            run only when a CUDA device is present
    <!-- docs-test: skip REASON -->           never run here (REASON says where it is tested)
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)]
FENCE = re.compile(r"^(?:<!-- docs-test: (?P<mark>[^>]*?) -->\n)?```(?:python|\{code-block\} python)\n"
                   r"(?P<code>.*?)^```", flags=re.S | re.M)
SHELL = re.compile(r"^```(?:bash|console|shell)\n(.*?)^```", flags=re.S | re.M)
# Runs a page's blocks, given as (path, first line, code), in one namespace; tracebacks name the page's lines.
DRIVER = """
import json, sys
namespace = {"__name__": "__main__"}
for path, line, code in json.load(sys.stdin):
    exec(compile("\\n" * (line - 1) + code, path, "exec"), namespace)
"""


def _blocks(path: Path) -> list[tuple[int, str | None, str]]:
    """The Python blocks of a page: (line of the first code line, mark or None, code)."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("mark"), m.group("code")) for m in FENCE.finditer(text)]


def _runs_here(mark: str | None) -> tuple[bool, str]:
    """Whether a block with this mark runs in this environment, and why not."""
    if mark is None:
        return True, ""
    kind, _, detail = mark.partition(" ")
    if kind == "needs" and detail == "QPNLP_DATA":
        return bool(os.environ.get("QPNLP_DATA")), "needs QPNLP_DATA (the benchmark data)"
    if kind == "needs" and detail == "cuda":
        return torch.cuda.is_available(), "needs a CUDA device"
    if kind == "skip" and detail:
        return False, detail
    raise ValueError(f"unknown docs-test mark {mark!r}: use 'needs QPNLP_DATA', 'needs cuda' or 'skip REASON'")


def _run_blocks(blocks: list[tuple[str, int, str]], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "TMPDIR": str(cwd)}
    return subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(blocks), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run_in_order(page, tmp_path):
    blocks, skipped = [], []
    for line, mark, code in _blocks(page):
        runs, reason = _runs_here(mark)
        if runs:
            blocks.append((str(page), line, code))
        else:
            skipped.append(f"line {line}: {reason}")
    if not blocks:
        pytest.skip(f"{page.name}: no block runs here ({'; '.join(skipped)})")
    proc = _run_blocks(blocks, tmp_path)
    assert proc.returncode == 0, f"{page.name}: a Python block failed:\n{proc.stderr[-4000:]}"


def test_a_later_block_sees_the_names_of_an_earlier_one(tmp_path):
    proc = _run_blocks([("first.md", 1, "x = 41\n"), ("first.md", 5, "assert x + 1 == 42\n")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    failing = _run_blocks([("page.md", 1, "y = 1\n"), ("page.md", 7, "assert y == 2\n")], tmp_path)
    assert failing.returncode != 0 and 'File "page.md", line 7' in failing.stderr


def test_marks_say_why_a_block_does_not_run(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n<!-- docs-test: skip tested elsewhere -->\n```python\nraise SystemExit(1)\n```\n\n"
                    "```python\nprint(1)\n```\n", encoding="utf-8")
    assert [(line, mark) for line, mark, _ in _blocks(page)] == [(5, "skip tested elsewhere"), (9, None)]
    assert _runs_here("skip tested elsewhere") == (False, "tested elsewhere")
    with pytest.raises(ValueError, match="unknown docs-test mark"):
        _runs_here("later")


def _command_lines(path: Path) -> list[list[str]]:
    """The ``qpnlp`` command lines of a page's shell blocks, as arguments after ``qpnlp`` (or ``-m qpnlp.cli``)."""
    commands = []
    for block in SHELL.findall(path.read_text(encoding="utf-8")):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line.removeprefix("$ "), comments=True)
            for start in ("qpnlp", "qpnlp.cli"):
                if start in words:
                    commands.append(words[words.index(start) + 1:])
                    break
    return commands


def test_the_qpnlp_commands_of_the_docs_parse():
    """Every ``qpnlp`` command line in a shell block names a command and options that exist."""
    commands = [c for page in PAGES for c in _command_lines(page)]
    assert len(commands) >= 5
    check = ("import json, sys\nfrom qpnlp.cli import build_parser, import_plugins\n"
             "for argv in json.load(sys.stdin):\n"
             "    import_plugins(argv)\n"
             "    args, extras = build_parser().parse_known_args(argv)\n"
             "    assert not extras, (argv, extras)\n")
    proc = subprocess.run([sys.executable, "-c", check], input=json.dumps(commands), cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_readme_states_exactly_two_commands_and_ci_runs_the_test_one():
    blocks = re.findall(r"```\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)
    commands = [b.strip() for b in blocks if b.strip().startswith("python3.11 -m venv")]
    assert len(commands) == 2
    assert "qpnlp demo" in commands[0] and "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_getting_started_states_the_readme_commands():
    readme = re.findall(r"```\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)
    commands = [b.strip() for b in readme if b.strip().startswith("python3.11 -m venv")]
    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert commands and all(c in page for c in commands)
