"""What qpnlp's messages tell users to type still exists: an option named in an error, a warning, a help text or a
docstring of ``qpnlp/`` (``use --max-questions``, ``qpnlp train word2fun --resume``) that no parser has, or a dotted
``qpnlp.x.y`` name that does not import, fails here; so does an option in the prose of README.md and docs/ that no
``qpnlp`` command has (their command lines: tests/test_documented_commands.py). Nothing runs; no data needed.

The check is benchmarks/hinted_names.py, run once in a subprocess (it imports the benchmark scripts the messages
name). An option that is not qpnlp's and must stay as written is in :data:`EXEMPT`, with the reason; an entry that no
longer fails must go.
"""

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "hinted_names.py"
_SPEC = importlib.util.spec_from_file_location("_qpnlp_hinted_names", SCRIPT)
HINTED = sys.modules[_SPEC.name] = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(HINTED)

TORCHRUN = "torchrun's option (before `-m qpnlp.cli`), not qpnlp's"
PLACEHOLDER = "stands for any option in a docstring about option parsing"
EXEMPT = {
    "--flag": PLACEHOLDER,
    "--no-flag": PLACEHOLDER,
    "--opt": PLACEHOLDER,
    "--model-": "the prefix add_config_options gives a config field whose name a run option already has",
    "--nproc-per-node": TORCHRUN,
    "--nnodes": TORCHRUN,
    "--node-rank": TORCHRUN,
    "--rdzv-backend": TORCHRUN,
    "--rdzv-endpoint": TORCHRUN,
    "--ntasks-per-node": "Slurm's srun option (docs/word2fun-at-scale.md)",
    "--index-url": "pip's option (installing torch's CPU wheels)",
    "--dist": "pytest-xdist's option (the test command of README.md and getting-started)",
    "--keep-going": "sphinx-build's option (building the docs)",
}


@functools.cache
def _checked() -> tuple[dict, ...]:
    """Every hint with its verdict (benchmarks/hinted_names.py --json)."""
    return HINTED.DOCUMENTED.json_verdicts(SCRIPT)


def _stale() -> list[dict]:
    return [hint for hint in _checked() if hint["verdict"] != HINTED.OK]


def test_the_hints_are_found():
    hints = _checked()
    flags = [h for h in hints if h["text"].startswith("--")]
    assert len(flags) >= 400 and len(hints) - len(flags) >= 500, "the extraction lost hints"
    assert {"qpnlp train word2fun", "benchmarks/reproduce_qpdn.py"} <= {h["program"] for h in flags}
    assert any(h["where"].startswith("docs/") for h in flags) and any(h["where"].startswith("README.md:") for h in flags)


def test_every_hint_names_what_exists_or_is_exempt():
    stale = [f"{h['where']}: {h['text']}" + (f" (in `{h['program']} ...`)" if h["program"] else "")
             + f"\n    -> {h['verdict']}" for h in _stale() if h["text"] not in EXEMPT]
    assert not stale, ("hints naming an option or a name that no longer exists (fix the text, or exempt another "
                       "tool's option with a reason):\n" + "\n".join(stale))


def test_every_exemption_still_fails():
    unused = sorted(set(EXEMPT) - {h["text"] for h in _stale()})
    assert not unused, f"exemptions no hint needs any more; remove them: {unused}"


def _hints(source: str) -> list[tuple[str, str]]:
    return [(h.text, h.program) for line, text in HINTED.strings(source) for h in HINTED.hints_in(text, f"m.py:{line}")]


def test_f_strings_docstrings_and_command_lines_give_their_hints():
    source = ('"""Run ``qpnlp train word2fun --resume`` (see qpnlp.word2fun.Word2Fun)."""\n'
              'x = f"use --max-questions {n} or `benchmarks/reproduce_qpdn.py --no-selection`"\n'
              'y = "qpnlp.Vocabulary/1"\n')
    assert sorted(_hints(source)) == sorted([("--resume", "qpnlp train word2fun"), ("qpnlp.word2fun.Word2Fun", ""),
                                             ("--max-questions", ""),
                                             ("--no-selection", "benchmarks/reproduce_qpdn.py")])


@pytest.mark.parametrize(("text", "program", "expected"), [
    ("--no-pretrained", "", "ok"),                                     # some command has it
    ("--no-pretrained", "qpnlp train cnm", "ok"),
    ("--no-pretrained", "qpnlp train word2fun", "`qpnlp train word2fun` has no --no-pretrained"),
    ("--no-pretrained", "qpnlp train MODEL", "ok"),                    # any model
    ("--no-pretrained", "qpnlp train word2fun | qpnlp train cnm", "ok"),   # a module of several commands
    ("--debug", "qpnlp evaluate", "ok"),                               # qpnlp's own option, after the command too
    ("--no-such-flag", "", "`qpnlp` has no --no-such-flag"),
    ("--epochs", "qpnlp train no-such-model", "no command `qpnlp train no-such-model`"),
    ("qpnlp.word2fun.Word2Fun.freeze_compass", "", "ok"),      # a module, a class, a method
    ("qpnlp.training", "", "ok"),
    ("qpnlp.word2fun.Word2Fun.freeze_compas", "", "qpnlp.word2fun.Word2Fun has no attribute 'freeze_compas'"),
    ("qpnlp.no_such_module.f", "", "qpnlp has no attribute 'no_such_module'"),
])
def test_a_hint_is_checked_against_its_commands_parser_or_by_import(text, program, expected):
    assert HINTED.verdict(HINTED.Hint("m.py:1", text, program)) == expected
