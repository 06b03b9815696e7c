"""Every command a result or a doc gives for a figure still parses with today's parser: a benchmark flag or a ``qpnlp``
option renamed or removed fails here, naming the page, the line and argparse's reason (nothing runs; no data needed).

The check is benchmarks/documented_commands.py, run once in a subprocess (it imports the benchmark scripts and the
plugins the docs ``--import``). A command that cannot parse and must stay as written is in :data:`EXEMPT`, keyed by
page and command, with the reason; a historical command there (``HISTORICAL``) needs today's equivalent beside it
on the same page, and an entry that no longer fails must go.
"""

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "documented_commands.py"
_SPEC = importlib.util.spec_from_file_location("_qpnlp_documented_commands", SCRIPT)
DOCUMENTED = sys.modules[_SPEC.name] = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(DOCUMENTED)   # the extraction (stdlib only); the parsing runs in the subprocess below

HISTORICAL = "historical"   # the command records what ran; the page gives today's equivalent beside it
FRAGMENT = "fragment"       # prose naming a command or an option, not a run to repeat
EXEMPT = {
    ("benchmarks/results/word2fun/speed-changepoint.md",
     "benchmarks/word2fun_speed.py --processes 2 --tokens 750000 --dim 100 --epochs 5 --negatives 5 --bins 10 "
     "--workers 2 --repeats 2 --busy 0 --baseline-tree --tag speed-changepoint"):
        (HISTORICAL, "printed by the script at 0a99974 with --baseline-tree's empty default as nothing (b54322e)"),
    ("benchmarks/results/SPEED.md", "qpnlp train order-classifier --network cnn --compile default"):
        (FRAGMENT, "the options of a fixed compile failure, named in a sentence (no data set: not a run)"),
    ("benchmarks/results/word2fun/sync-every/README.md", "qpnlp train word2fun --sync-every"):
        (FRAGMENT, "names the option whose default changed"),
    ("docs/architecture.md", "qpnlp --import MODULE"):
        (FRAGMENT, "MODULE stands for the user's module"),
    ("docs/concepts/word2fun.md", "qpnlp train word2fun --no-logistic"):
        (FRAGMENT, "names the option that turns the logistic step off"),
    ("docs/getting-started.md", "qpnlp train MODEL --help"):
        (FRAGMENT, "MODEL stands for any registered model"),
}


def _key(command: dict) -> tuple[str, str]:
    return command["where"].rsplit(":", 1)[0], " ".join([command["program"], *command["argv"]])


@functools.cache
def _checked() -> tuple[dict, ...]:
    """Every documented command with its verdict (benchmarks/documented_commands.py --json)."""
    return DOCUMENTED.json_verdicts(SCRIPT)


def _failures() -> dict[tuple[str, str], dict]:
    return {_key(c): c for c in _checked() if c["verdict"] not in (DOCUMENTED.OK, DOCUMENTED.MENTION)}


def test_the_documented_commands_are_found():
    programs = {c["program"] for c in _checked()}
    assert len(_checked()) >= 900, "the extraction lost commands"
    assert {"qpnlp", "benchmarks/reproduce_complex_order.py", "benchmarks/word2fun_drift.py"} <= programs


def test_every_documented_command_parses_or_is_exempt():
    failing = [f"{c['where']}: {key[1]}\n    -> {c['verdict']}" for key, c in _failures().items() if key not in EXEMPT]
    assert not failing, ("documented commands that no longer parse (add today's equivalent beside each, or restore "
                         "the option, or exempt it with a reason):\n" + "\n".join(failing))


def test_every_exemption_still_fails():
    stale = [key for key in EXEMPT if key not in _failures()]
    assert not stale, f"exemptions whose command parses now or is gone; remove them: {stale}"


@pytest.mark.parametrize("key", [k for k, (kind, _) in EXEMPT.items() if kind == HISTORICAL], ids=lambda k: k[0])
def test_a_historical_command_has_todays_equivalent_beside_it(key):
    page, command = key
    program = command.split()[0]
    today = [c for c in _checked() if c["where"].startswith(f"{page}:") and c["program"] == program
             and c["verdict"] == DOCUMENTED.OK]
    assert today, f"{page}: no command of {program} that parses today beside the historical {command!r}"


def _commands(tmp_path: Path, text: str, name: str = "page.md") -> list[tuple[str, tuple[str, ...]]]:
    page = tmp_path / name
    page.write_text(text, encoding="utf-8")
    return [(c.program, c.argv) for c in DOCUMENTED.commands_in(page, tmp_path)]


def test_continued_lines_and_code_spans_over_a_line_break_are_one_command(tmp_path):
    text = ("    python benchmarks/a.py --x 1 \\\n      --y 2 | tee log\n\n"
            "The run (`QPNLP_DATA=/d python3 benchmarks/b.py --networks\nfasttext --json out.json`) gave 3.\n")
    assert _commands(tmp_path, text) == [("benchmarks/a.py", ("--x", "1", "--y", "2")),
                                         ("benchmarks/b.py", ("--networks", "fasttext", "--json", "out.json"))]


def test_globs_braces_and_placeholders_stay_literal_and_optional_brackets_go(tmp_path):
    text = ("`python benchmarks/p.py --a run-f3-seed[1-4] --b {cr,mpqa} --seed S --out DIR/$S ...`, and\n"
            "`python benchmarks/d.py --seed 0 [--variant low-frequency --tag t]`; `qpnlp train qpdn --dataset DS`\n"
            "# benchmarks/c.py --rounds 5, at 360e9e5\nname|OMP_NUM_THREADS=1 python3 benchmarks/j.py --x 1\n")
    assert _commands(tmp_path, text, "page.txt") == [
        ("benchmarks/p.py", ("--a", "run-f3-seed[1-4]", "--b", "{cr,mpqa}", "--seed", "S", "--out", "DIR/$S", "...")),
        ("benchmarks/d.py", ("--seed", "0", "--variant", "low-frequency", "--tag", "t")),
        ("qpnlp", ("train", "qpdn", "--dataset", "DS")),
        ("benchmarks/c.py", ("--rounds", "5")),
        ("benchmarks/j.py", ("--x", "1"))]


def test_prose_names_are_no_commands(tmp_path):
    text = "`benchmarks/a.py` runs with `qpnlp` and python; see benchmarks/a.py on the first split.\n"
    assert _commands(tmp_path, text) == []


FAKE = '''import argparse

def _parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variant", choices=["standard", "low-frequency"])
    parser.add_argument("--lr-decay", type=float)
    parser.add_argument("files", nargs="+")
    return parser
'''


@pytest.mark.parametrize(("argv", "expected"), [
    (("--seed", "1", "a"), "ok"),
    (("--seed", "S", "--variant", "V", "$FILES"), "ok"),             # placeholders of any type and choice
    (("--seed", "1", "a", "$S"), "ok"),                             # a shell variable standing for options
    ((), "mention"),                                                 # the script named, not run
    (("--seeds", "1", "a"), "unrecognized arguments: --seeds"),      # a renamed flag
    (("--lr", "0.1", "a"), "unrecognized arguments: --lr"),          # no abbreviation of --lr-decay
    (("--variant", "middle", "a"), "argument --variant: invalid choice: 'middle'"),   # a removed choice
    (("--seed", "one", "a"), "argument --seed: invalid int value: 'one'"),            # the wrong type
    (("--seed", "1"), "the following arguments are required: files"),  # options given: a run, not a mention
])
def test_a_command_parses_against_its_scripts_parser(tmp_path, argv, expected):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "fake.py").write_text(FAKE, encoding="utf-8")
    verdict = DOCUMENTED.verdict(DOCUMENTED.Command("page.md:1", "benchmarks/fake.py", argv), tmp_path)
    assert verdict.startswith(expected), verdict


def test_a_script_without_a_parser_function_is_reported(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "inline.py").write_text("import argparse\n\ndef main():\n    argparse.ArgumentParser()"
                                                       ".parse_args()\n", encoding="utf-8")
    command = DOCUMENTED.Command("page.md:1", "benchmarks/inline.py", ("--x",))
    assert "no _parser() or build_parser()" in DOCUMENTED.verdict(command, tmp_path)
    assert "no such script" in DOCUMENTED.verdict(DOCUMENTED.Command("p:1", "benchmarks/gone.py", ()), tmp_path)
