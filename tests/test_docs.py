"""The Python snippets of the README and the docs run."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _snippets(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("page", [p for p in PAGES if _snippets(p)], ids=lambda p: p.name)
def test_python_snippets_run(page):
    for code in _snippets(page):
        exec(compile(code, str(page), "exec"), {})


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
