"""The ``qpnlp`` command under bad inputs, faults and interruptions, run as separate processes.

Every bad input gives one line on stderr (``qpnlp <command>: error: ...``), exit
code 2 for a usage error and 1 for a failure, and never a traceback; training
that diverges stops with the epoch named; Ctrl-C saves the best model so far
and exits 130 (SIGTERM: 143); ``--resume`` continues to the same result as an
uninterrupted run; reports are strict JSON written atomically after every
epoch, with the history as CSV and TensorBoard events.

The command lines run in processes forked from one warm server (starting a
Python with torch costs seconds; a fork costs milliseconds): each is a
separate process with its own stdout, stderr and exit status that ends as
the installed ``qpnlp`` script does. The Ctrl-C test runs the installed
script itself. A new command or option without validation shows up here as
a traceback or a wrong exit code.
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import gzip
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from qpnlp.cli import build_parser, main
from qpnlp.data import Vocabulary, tokenize
from qpnlp.models import CNM, QPDN, CNMConfig, QPDNConfig
from qpnlp.training import load_checkpoint

SERVER = r'''
import json, os, sys, tempfile, traceback
import qpnlp.cli
qpnlp.cli.build_parser()                        # import every command module once, before forking
import sklearn.model_selection, torch._dynamo   # imported lazily by the protocols and the optimisers' first step
import qpnlp.training.evaluate, qpnlp.training.matching
out_dir = tempfile.mkdtemp(prefix="qpnlp-cli-")
for line in sys.stdin:
    request = json.loads(line)
    out, err = os.path.join(out_dir, "out"), os.path.join(out_dir, "err")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(request["cwd"])
            os.environ.update(request["env"])
            for name in request.get("unset", []):
                os.environ.pop(name, None)
            for fd, path in ((1, out), (2, err)):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.argv = ["qpnlp", *request["argv"]]
            try:
                code = qpnlp.cli.main(request["argv"])
            except SystemExit as exit:
                code = exit.code
                if isinstance(code, str):
                    print(code, file=sys.stderr)
                    code = 1
                code = 0 if code is None else code
            except BaseException:
                traceback.print_exc()               # what the interpreter does with an uncaught exception
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    with open(out, errors="replace") as f_out, open(err, errors="replace") as f_err:
        reply = dict(code=code, stdout=f_out.read(), stderr=f_err.read())
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
'''


class Server:
    """``run(argv, env=..., unset=...) -> (code, stdout, stderr)`` in a process forked from a warm ``qpnlp``."""

    def __init__(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)

    def run(self, argv, *, cwd=".", env=None, unset=()) -> tuple[int, str, str]:
        request = dict(argv=[str(a) for a in argv], cwd=str(Path(cwd).resolve()), env=env or {}, unset=list(unset))
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        assert reply, "the qpnlp test server died"
        reply = json.loads(reply)
        return reply["code"], reply["stdout"], reply["stderr"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.process.stdout.close()


@pytest.fixture(scope="module")
def server():
    if not hasattr(os, "fork"):
        pytest.skip("Windows: the test server forks a process per command line (os.fork)")
    s = Server()
    yield s
    s.close()


# --------------------------------------------------------------------------- a tiny benchmark tree
POSITIVE = "good great fine superb lovely nice".split()
NEGATIVE = "bad awful dull poor boring weak".split()
COMMON = "the film a plot is was".split()


def _sentences(words, n, rng):
    return [" ".join(rng.choice(words) if i % 2 else rng.choice(COMMON) for i in range(rng.randint(3, 6))) + " ."
            for _ in range(n)]


def _qa_lines(n, offset=0):
    lines = []
    for i in range(offset, offset + n):
        q = f"what is {POSITIVE[i % 6]} thing {i} ?"
        lines += [f"{q}\tthe {POSITIVE[i % 6]} thing is here .\t1", f"{q}\ta {NEGATIVE[i % 6]} answer .\t0",
                  f"{q}\tnothing at all .\t0"]
    return "\n".join(lines) + "\n"


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _tree(root: Path, *, mr_pos=None, mr_neg=None, wikiqa_dev=None, compress=None) -> Path:
    rng = random.Random(0)
    pos = mr_pos if mr_pos is not None else "\n".join(_sentences(POSITIVE, 15, rng)) + "\n"
    neg = mr_neg if mr_neg is not None else "\n".join(_sentences(NEGATIVE, 15, rng)) + "\n"
    for name, text in (("rt-polarity.pos", pos), ("rt-polarity.neg", neg)):
        data = text.encode() if isinstance(text, str) else text
        _write(root / "classification" / "MR" / name, compress(data) if compress else data)
    _write(root / "classification" / "TREC" / "train_5500.label",
           "".join(f"{c}:x {w} is it ?\n" for c, w in zip(["HUM", "LOC", "NUM"] * 4, POSITIVE * 2)))
    _write(root / "classification" / "TREC" / "TREC_10.label", "HUM:ind who is it ?\nLOC:city where is it ?\n")
    _write(root / "qa" / "wikiqa" / "train.tsv", _qa_lines(6))
    _write(root / "qa" / "wikiqa" / "dev.tsv", wikiqa_dev if wikiqa_dev is not None else _qa_lines(4, 6))
    _write(root / "qa" / "wikiqa" / "test.tsv", _qa_lines(4, 10))
    return root


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """Workspace: data roots (good and broken), vectors, saved checkpoints, a file and a foreign directory."""
    base = tmp_path_factory.mktemp("cli")
    rng = random.Random(1)
    words = sorted(set(POSITIVE + NEGATIVE + COMMON + ". ? what thing answer nothing at all here".split()))
    vectors = _write(base / "vec.txt", "".join(w + " " + " ".join(f"{rng.uniform(-1, 1):.3f}" for _ in range(4))
                                              + "\n" for w in words))
    root = _tree(base / "root")
    vocab = Vocabulary.build([tokenize(line) for line in (root / "classification/MR/rt-polarity.pos").read_text()
                              .splitlines()])
    clf = QPDN(QPDNConfig(num_words=len(vocab), num_classes=2, dim=4, num_measurements=4))
    clf.save_pretrained(base / "clf", vocabulary=vocab, metadata=dict(
        dataset="MR", split="fold 1", seed=0, folds=10, label_names=["neg", "pos"], task="classification"))
    cnm = CNM(CNMConfig(num_words=len(vocab), dim=4, num_measurements=4))
    cnm.save_pretrained(base / "cnm", vocabulary=vocab, metadata=dict(dataset="wikiqa", task="matching",
                                                                      label_names=["wrong", "correct"]))
    _write(base / "foreign" / "notes.txt", "my own files\n")
    _write(base / "novec.vec", "0 4\n")                   # a word2vec header announcing no vector
    _write(base / "corpus.tsv", "".join(f"{1900 + 10 * i}\t{' '.join(COMMON)} {POSITIVE[i % 6]}\n" for i in range(10)))
    (base / "adir").mkdir()
    (base / "hist.history.csv").mkdir()                 # where the history of a report hist.json would go
    return dict(
        base=base, root=root, vec=vectors, clf=base / "clf", cnm=base / "cnm", afile=_write(base / "afile", "x\n"),
        foreign=base / "foreign", adir=base / "adir",
        binary=_tree(base / "binary", mr_pos=b"good film .\nnice \x00\x01\x02 plot .\n"),
        oneclass=_tree(base / "oneclass", mr_neg="\n   \n"),
        gzipped=_tree(base / "gzipped", compress=gzip.compress),
        bzipped=_tree(base / "bzipped", compress=bz2.compress),
        latin=_tree(base / "latin", wikiqa_dev=b"q ?\ta .\t1\nq ?\tb .\t0\nq\xff ?\tc .\t0\n"),
        emptydev=_tree(base / "emptydev", wikiqa_dev="\n\n"),
        norank=_tree(base / "norank", wikiqa_dev="q ?\ta .\t0\nr ?\tb .\t0\n"),   # no correct answer
    )


def _train(ws, *extra, root="root"):
    return ["train", "qpdn", "--dataset", "mr", "--data", ws[root], "--vectors", ws["vec"], "--no-select",
            "--num-measurements", "4", "--max-splits", "1", "--epochs", "1", "--no-progress", *extra]


def _word2fun(ws, *extra):
    return ["train", "word2fun", "--corpus", ws["base"] / "corpus.tsv", "--dim", "4", "--min-count", "1", "--epochs",
            "1", "--no-progress", *extra]


def _match(ws, *extra, root="root"):
    return ["train", "cnm", "--dataset", "wikiqa", "--data", ws[root], "--no-pretrained", "--dim", "4",
            "--num-measurements", "4", "--epochs", "1", "--no-progress", *extra]


# id -> (argv builder, exit code, fragment of the one error line)
BAD_INPUTS = {
    "epochs 0": (lambda w: _train(w, "--epochs", "0"), 2, "argument --epochs: must be >= 1; got 0"),
    "batch size 0": (lambda w: _train(w, "--batch-size", "0"), 2, "--batch-size: must be >= 1"),
    "max-splits 0": (lambda w: _train(w, "--max-splits", "0"), 2, "--max-splits: must be >= 1; got 0"),
    "folds 1": (lambda w: _train(w, "--folds", "1"), 2, "--folds: must be >= 2"),
    "max-len 0": (lambda w: _train(w, "--max-len", "0"), 2, "--max-len: must be >= 1"),
    "max-questions 0": (lambda w: _match(w, "--max-questions", "0"), 2, "--max-questions: must be >= 1; got 0"),
    "max-questions -1": (lambda w: _match(w, "--max-questions", "-1"), 2, "--max-questions: must be >= 1; got -1"),
    "device foo": (lambda w: _train(w, "--device", "foo"), 2, "unknown device 'foo'"),
    "compile fast": (lambda w: _match(w, "--compile", "fast"), 2, "--compile: invalid choice: 'fast'"),
    "lr inf": (lambda w: _train(w, "--lr", "inf"), 2, "--lr: must be a finite number > 0"),
    "lr negative": (lambda w: _train(w, "--lr", "-1"), 2, "--lr: must be a finite number > 0"),
    "lr text": (lambda w: _train(w, "--lr", "fast"), 2, "--lr: expected a number; got 'fast'"),
    "unknown option": (lambda w: _train(w, "--frobnicate"), 2, "unrecognized arguments: --frobnicate"),
    "no data set": (lambda w: ["train", "qpdn"], 2, "the following arguments are required: --dataset"),
    "no command": (lambda w: [], 2, "the following arguments are required"),
    "unknown data set": (lambda w: _train(w)[:3] + ["imdb"], 2, "invalid choice: 'IMDB'"),
    "select unknown key": (lambda w: _train(w, "--select", "nosuch=1,2"), 2, "unknown selection key(s) ['nosuch']"),
    "select bad lr": (lambda w: _train(w, "--select", "lr=0,0.1"), 2, "learning rates must be positive"),
    "select bad model value": (lambda w: _train(w, "--select", "dropout=0,2"), 2,
                               "dropout must be a dropout probability in [0, 1)"),
    "select malformed": (lambda w: _train(w, "--select", "dropout"), 2, "name=v1,v2"),
    "select fixed key": (lambda w: _train(w, "--select", "seed=1,2"), 2, "cannot be part of a selection grid"),
    "model option": (lambda w: _train(w, "--num-measurements", "0"), 2, "num_measurements must be >= 1"),
    "matching option": (lambda w: _match(w, "--windows", "0"), 2, "windows must be distinct sizes >= 1"),
    "save is a file": (lambda w: _train(w, "--save", w["afile"]), 2, "exists and is a file; --save takes a directory"),
    "save over a foreign directory": (lambda w: _train(w, "--save", w["foreign"]), 2, "not a saved qpnlp model"),
    "report is a directory": (lambda w: _train(w, "--report", w["adir"]), 2, "is a directory; --report takes a file"),
    "report under a file": (lambda w: _train(w, "--report", w["afile"] / "r.json"), 2, "is a file, not a directory"),
    "report history is a directory": (lambda w: _train(w, "--report", w["base"] / "hist.json"), 2,
                                      "hist.history.csv, where the report's history is written, is a directory"),
    "word2fun report history is a directory": (lambda w: _word2fun(w, "--report", w["base"] / "hist.json"), 2,
                                               "hist.history.csv, where the report's history is written, is a "
                                               "directory"),
    "report equals save": (lambda w: _train(w, "--report", w["base"] / "x", "--save", w["base"] / "x"), 2,
                           "--report and --save name the same path"),
    "resume without save": (lambda w: _train(w, "--resume"), 2, "--resume needs --checkpoint-dir or --save"),
    "checkpoint-dir foreign": (lambda w: _train(w, "--checkpoint-dir", w["foreign"]), 2,
                               "not a qpnlp training-state directory"),
    "seed negative": (lambda w: _train(w, "--seed", "-1"), 2, "argument --seed: must be an integer in [0, 2**32 - 1]"),
    "seed too large": (lambda w: _match(w, "--seed", str(2 ** 32)), 2, "argument --seed: must be an integer in"),
    "word2fun seed negative": (lambda w: _word2fun(w, "--seed", "-1"), 2, "argument --seed: must be >= 0; got -1"),
    "select fractional batch size": (lambda w: _train(w, "--select", "batch_size=1.5,2"), 2,
                                     "batch_size must be an integer; got float 1.5"),
    "select fractional epochs": (lambda w: _train(w, "--select", "epochs=2.5"), 2, "epochs must be an integer"),
    "word2fun sample nan": (lambda w: _word2fun(w, "--sample", "nan"), 2, "argument --sample: must be a finite"),
    "word2fun roughness inf": (lambda w: _word2fun(w, "--roughness-penalty", "inf"), 2,
                               "argument --roughness-penalty: must be a finite"),
    "word2fun rare-lr-max nan": (lambda w: _word2fun(w, "--rare-lr-max", "nan"), 2, "--rare-lr-max: must be a finite"),
    "word2fun powers nan": (lambda w: _word2fun(w, "--rare-lr-power", "nan"), 2, "--rare-lr-power: must be a finite"),
    "word2fun device missing": (lambda w: _word2fun(w, "--device", "cuda:99"), 2, "argument --device: 'cuda:99'"),
    "report above save": (lambda w: _train(w, "--report", w["base"] / "rs", "--save", w["base"] / "rs" / "m"), 2,
                          "--report and --save overlap"),
    "report is the checkpoint-dir": (lambda w: _train(w, "--report", w["base"] / "rc", "--checkpoint-dir",
                                                      w["base"] / "rc"), 2,
                                     "--report and --checkpoint-dir name the same path"),
    "report is the state next to save": (lambda w: _match(w, "--report", w["base"] / "rt.training", "--save",
                                                          w["base"] / "rt"), 2,
                                         "--report and the training state next to --save name the same path"),
    "word2fun report above out": (lambda w: _word2fun(w, "--report", w["base"] / "ro", "--out",
                                                      w["base"] / "ro" / "m"), 2, "--report and --out overlap"),
    "train on dev": (lambda w: _match(w, "--train-split", "dev"), 2, "--train-split dev: the dev split selects"),
    "train on test": (lambda w: _match(w, "--train-split", "test"), 2, "--train-split test: the test split is"),
    "import missing": (lambda w: ["--import", "no_such_module_xyz", *_train(w)], 2, "--import: No module named"),
    "evaluate max-questions 0": (lambda w: ["evaluate", w["cnm"], "--max-questions", "0"], 2, "must be >= 1"),
    "extra-train is the data set": (lambda w: _match(w, "--extra-train", "wikiqa"), 2,
                                    "--extra-train wikiqa: wikiqa is --dataset"),
    "extra-train named twice": (lambda w: _match(w, "--dataset", "trecqa", "--extra-train", "wikiqa", "wikiqa"), 2,
                                "--extra-train: wikiqa named twice"),
    "no-training-state with checkpoint-dir": (lambda w: _train(w, "--checkpoint-dir", w["base"] / "nts",
                                                               "--no-training-state"), 2,
                                              "--no-training-state and --checkpoint-dir"),
    "evaluate unknown data set": (lambda w: ["evaluate", w["clf"], "--dataset", "imdb", "--data", w["root"]], 2,
                                  "unknown data set 'imdb'"),
    "evaluate matcher on an unknown data set": (lambda w: ["evaluate", w["cnm"], "--dataset", "nosuchqa", "--data",
                                                           w["root"]], 2, "unknown data set 'nosuchqa'"),
    "folds for a fixed split": (lambda w: [("trec" if a == "mr" else a) for a in _train(w, "--folds", "5")], 2,
                                "--folds 5: TREC has a fixed split"),
    # '-' as an output: stdout holds the results only; it was a file named '-' in the working directory
    "report to stdout": (lambda w: _train(w, "--report", "-"), 2, "--report -: writes a file, not stdout"),
    "save to stdout": (lambda w: _match(w, "--save", "-"), 2, "--save -: writes a directory, not stdout"),
    "word2fun grid to stdout": (lambda w: _word2fun(w, "--export-npz", "-"), 2, "--export-npz -: writes a file"),
    "word2fun out to stdout": (lambda w: _word2fun(w, "--out", "-"), 2, "--out -: writes a directory"),
    "evaluate report to stdout": (lambda w: ["evaluate", w["cnm"], "--report", "-"], 2, "--report -: writes a file"),
    "convert to stdout": (lambda w: ["convert", w["afile"], "-"], 2, "output directory -: writes a directory"),
    # failures while running: exit code 1
    "resume with nothing saved": (lambda w: _train(w, "--resume", "--save", w["base"] / "never-saved"), 1,
                                  "nothing to resume"),
    "data root missing": (lambda w: _train(w)[:5] + [w["base"] / "nowhere"] + _train(w)[6:], 1,
                          "QPNLP_DATA"),
    "vectors missing": (lambda w: _train(w, "--vectors", w["base"] / "nowhere.txt"), 1,
                        "neither a registered name"),
    "binary data file": (lambda w: _train(w, root="binary"), 1, "is not a text file (a NUL byte on line 2"),
    "one class": (lambda w: _train(w, root="oneclass"), 1, "rt-polarity.neg: no sentence in the file"),
    "undecodable QA file": (lambda w: _match(w, root="latin"), 1, "dev.tsv:3: cannot decode byte 0xff at column 2 "
                                                                  "as utf-8"),
    "empty dev file": (lambda w: _match(w, root="emptydev"), 1, "dev.tsv: no question in the file"),
    "dev without a rankable question": (lambda w: _match(w, root="norank"), 1, "nothing is left to rank"),
    "diverging classifier": (lambda w: _train(w, "--epochs", "3", "--lr", "1e30", "--embedding-lr", "1e30"), 1,
                             "MR fold 1: training diverged in epoch 1"),
    "diverging matcher": (lambda w: _match(w, "--epochs", "3", "--lr", "1e30", "--embedding-lr", "1e30"), 1,
                          "wikiqa: training diverged in epoch 1"),
    "evaluate nothing": (lambda w: ["evaluate", w["base"] / "nothing"], 1, "nothing does not exist"),
    "evaluate a foreign directory": (lambda w: ["evaluate", w["foreign"]], 1, "is not a saved qpnlp model"),
    "evaluate a file": (lambda w: ["evaluate", w["afile"]], 1, "is a file; qpnlp models are saved as directories"),
    "evaluate classifier on QA": (lambda w: ["evaluate", w["clf"], "--dataset", "wikiqa", "--data", w["root"]], 1,
                                  "holds a sentence-classification model (qpdn) but wikiqa is an answer-selection"),
    "evaluate matcher on classification": (lambda w: ["evaluate", w["cnm"], "--dataset", "mr", "--data", w["root"]],
                                           1, "holds an answer-selection model (cnm) but mr is a "
                                              "sentence-classification"),
    "evaluate other labels": (lambda w: ["evaluate", w["clf"], "--dataset", "trec", "--data", w["root"]], 1,
                              "the checkpoint predicts the labels ['neg', 'pos'] but TREC has"),
    "convert a text file": (lambda w: ["convert", w["afile"], w["base"] / "converted"], 1,
                            "is not a readable qpnlp 0.1 checkpoint"),
    "convert a model of today's format": (lambda w: ["convert", w["cnm"], w["base"] / "converted"], 1,
                                          "is already a saved qpnlp model (cnm) in the current format; nothing to "
                                          "convert"),
    "vectors header without vectors": (lambda w: _train(w, "--vectors", w["base"] / "novec.vec"), 1,
                                       "novec.vec: no vectors found"),
    "word2fun dim not a number": (lambda w: _word2fun(w, "--dim", "four"), 2,
                                  "argument --dim: expected an integer >= 1; got 'four'"),
}


def _prog(argv) -> str:
    """The command's name as its errors start: ``qpnlp train qpdn``, ``qpnlp evaluate``, ``qpnlp``."""
    argv = [str(a) for a in argv]
    if argv[:1] == ["train"] and len(argv) > 1:
        return f"qpnlp train {argv[1]}"
    return f"qpnlp {argv[0]}" if argv[:1] in (["evaluate"], ["convert"]) else "qpnlp"


def _one_error_line(argv, code, stderr, expected_code, fragment):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == expected_code, stderr
    assert "Traceback" not in stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"{_prog(argv)}: error: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert "--debug" not in lines[0], lines[0]          # the user's mistake, not a bug of qpnlp: no traceback asked for


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_gives_one_error_line_and_the_exit_code(server, ws, case):
    build, expected_code, fragment = BAD_INPUTS[case]
    argv = build(ws)
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, expected_code, fragment)


@pytest.mark.parametrize("corpus", ["~/corpus.tsv", "~/corp*.tsv"])
def test_word2fun_corpus_may_start_with_the_home_directory(server, ws, corpus):
    """--corpus=~/corpus.tsv reaches qpnlp unexpanded (no tilde expansion after '='): it was 'does not exist'."""
    argv = _word2fun(ws, "--words", "nosuchword")[:2] + [f"--corpus={corpus}"] + _word2fun(ws, "--words",
                                                                                          "nosuchword")[4:]
    code, _, stderr = server.run(argv, env={"HOME": str(ws["base"])})
    _one_error_line(argv, code, stderr, 2, "--words: not in the vocabulary")      # the corpus was read


@pytest.mark.parametrize("command", ["qpdn", "cnm"])
def test_vectors_that_cover_almost_no_training_word_are_warned_about(server, ws, tmp_path, command):
    """A wrong --vectors file (here: upper case) trained on random vectors and nothing on the console said so."""
    upper = _write(tmp_path / "upper.txt", ws["vec"].read_text().upper())     # '.' and '?' are still found
    argv = _train(ws) if command == "qpdn" else [a for a in _match(ws) if a != "--no-pretrained"]
    if command == "cnm":                                   # --dim is the vectors' width with --vectors
        del argv[argv.index("--dim"):argv.index("--dim") + 2]
    code, _, stderr = server.run([*argv, "--vectors", upper])
    assert code == 0, stderr
    assert re.search(r"warning: the pretrained vectors cover [12]/\d+ training words \(\d\.\d%", stderr), stderr
    code, _, stderr = server.run([*argv, "--vectors", ws["vec"]])
    assert code == 0 and "pretrained vectors cover" not in stderr, stderr


def test_evaluate_word2fun_dataset_may_start_with_the_home_directory(server, ws, tmp_path):
    """--dataset=~/corpus.tsv reaches qpnlp unexpanded (no tilde expansion after '='): it was 'No such file'."""
    from qpnlp.word2fun.model import Word2Fun, Word2FunConfig

    vocab = Vocabulary.build([COMMON + POSITIVE], specials=False)
    Word2Fun(Word2FunConfig(len(vocab), 4, span_start=1900, span_end=1990)).save_pretrained(
        tmp_path / "w2f", vocabulary=vocab)
    code, stdout, stderr = server.run(["evaluate", tmp_path / "w2f", "--dataset=~/corpus.tsv"],
                                      env={"HOME": str(ws["base"])})
    assert code == 0 and "log_likelihood" in stdout, stderr


def test_evaluate_word2fun_without_a_data_set_is_a_usage_error_that_the_help_announces(server, tmp_path):
    """The help said --dataset defaults to the one the model was trained on; a Word2Fun model has no such default,
    and leaving it out exited 1, as a failure while running."""
    from qpnlp.word2fun.model import Word2Fun, Word2FunConfig

    vocab = Vocabulary.build([COMMON + POSITIVE], specials=False)
    Word2Fun(Word2FunConfig(len(vocab), 4, span_start=1900, span_end=1990)).save_pretrained(
        tmp_path / "w2f", vocabulary=vocab)
    argv = ["evaluate", tmp_path / "w2f"]
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "pass 'sotu' or a TSV file as the data set (--dataset")
    verbs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert "required for Word2Fun" in verbs.choices["evaluate"]._option_string_actions["--dataset"].help


def test_device_cuda_without_cuda(server, ws):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, stderr = server.run(_train(ws, "--device", "cuda"))
    _one_error_line(["train", "qpdn"], code, stderr, 2, "'cuda' requested but CUDA is not available on this machine")
    assert "; use --device cpu" in stderr, stderr      # the CLI's spelling, not the library's


def test_missing_qpnlp_data_names_the_variable(server, ws):
    argv = [a for a in _train(ws) if a not in ("--data", str(ws["root"]), ws["root"])]
    code, _, stderr = server.run(argv, unset=("QPNLP_DATA",))
    _one_error_line(argv, code, stderr, 1, "QPNLP_DATA is not set")


def test_debug_shows_the_traceback(server, ws):
    code, _, stderr = server.run(["--debug", *_train(ws, root="oneclass")])
    assert code == 1 and "Traceback" in stderr and stderr.strip().splitlines()[-1].startswith("qpnlp train qpdn: ")
    code, _, stderr = server.run([*_train(ws, root="oneclass"), "--debug"])       # after the command, too
    assert code == 1 and "Traceback" in stderr


@pytest.mark.parametrize("root", ["gzipped", "bzipped"])
def test_compressed_data_files_are_read_transparently(server, ws, root):
    plain = server.run(_train(ws))
    compressed = server.run(_train(ws, root=root))
    assert plain[0] == compressed[0] == 0, compressed[2]
    scores = [re.findall(r"test accuracy ([\d.]+) \(dev ([\d.]+)", out) for _, out, _ in (plain, compressed)]
    assert scores[0] and scores[0] == scores[1]


# --------------------------------------------------------------------------- reports
def test_report_schema_history_and_csv(server, ws, tmp_path):
    report = tmp_path / "out" / "run.json"
    code, stdout, stderr = server.run(_train(ws, "--epochs", "3", "--patience", "3", "--report", report,
                                             "--save", tmp_path / "model"))
    assert code == 0, stderr
    assert [line.split(":")[0] for line in stderr.splitlines() if line.startswith("MR fold 1 epoch")] == \
        [f"MR fold 1 epoch {e}" for e in (1, 2, 3)]                           # a per-epoch line, on stderr
    assert stdout.startswith("MR fold 1: test accuracy ") and "MR fold 1 epoch" not in stdout     # the results
    data = json.loads(report.read_text())
    for key in ("schema", "command", "status", "qpnlp_version", "torch_version", "model", "dataset", "split_counts",
                "config", "metrics", "history", "wall_seconds", "checkpoint", "training_state"):
        assert key in data, key
    assert data["schema"] == "qpnlp-report/1" and data["command"] == "train qpdn" and data["status"] == "completed"
    assert data["qpnlp_version"] and data["torch_version"] == torch.__version__
    assert data["split_counts"] == {"fold 1": {"train": 24, "dev": 3, "test": 3}}
    assert [h["epoch"] for h in data["history"]] == [1, 2, 3] and data["history"][0]["split"] == "fold 1"
    assert data["checkpoint"] == str(tmp_path / "model") and data["config"]["train"]["epochs"] == 3
    assert 0 <= data["metrics"]["accuracy_mean"] <= 1
    csv = (tmp_path / "out" / "run.history.csv").read_text().splitlines()
    assert csv[0] == "split,epoch,train_loss,dev_accuracy,seconds" and len(csv) == 4
    assert not [p for p in report.parent.iterdir() if p.name.startswith(".")]     # no temporary file left


def test_evaluate_writes_the_same_schema(server, ws, tmp_path):
    report = tmp_path / "eval.json"
    code, stdout, stderr = server.run(["evaluate", ws["cnm"], "--split", "dev", "--data", ws["root"],
                                       "--report", report])
    assert code == 0, stderr
    data = json.loads(report.read_text())
    assert data["schema"] == "qpnlp-report/1" and data["command"] == "evaluate" and data["model"] == "cnm"
    assert data["checkpoint"] == str(ws["cnm"]) and data["n"] == 12 and data["metrics"]["questions"] == 4


def test_evaluate_report_records_the_checkpoints_model_and_training_settings(server, ws, tmp_path):
    """The report's ``config`` (model options, training settings) was always empty for ``qpnlp evaluate``."""
    save, report = tmp_path / "m", tmp_path / "eval.json"
    code, _, stderr = server.run(_train(ws, "--batch-size", "7", "--save", save, "--no-training-state"))
    assert code == 0, stderr
    code, _, stderr = server.run(["evaluate", save, "--data", ws["root"], "--report", report])
    assert code == 0, stderr
    config = json.loads(report.read_text())["config"]
    assert config["model"]["num_measurements"] == 4 and config["model"]["num_words"] > 2
    assert config["train"]["batch_size"] == 7


def test_report_is_strict_json_and_history_survives_divergence(server, ws, tmp_path):
    report = tmp_path / "d.json"
    code, _, stderr = server.run(_match(ws, "--epochs", "4", "--lr", "1e30", "--embedding-lr", "1e30",
                                        "--report", report))
    assert code == 1 and "diverged" in stderr
    text = report.read_text()
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert data["status"] == "diverged" and "training diverged in epoch 1" in data["error"]


def test_report_writer_replaces_non_finite_numbers_and_feeds_tensorboard(tmp_path, monkeypatch):
    """NaN never reaches the file; the history goes to TensorBoard when torch.utils.tensorboard imports."""
    from qpnlp.commands._report import Report

    scalars = []

    class Writer:
        def __init__(self, log_dir):
            scalars.append(("dir", log_dir))

        def add_scalar(self, tag, value, step):
            scalars.append((tag, value, step))

        def flush(self):
            pass

        def close(self):
            pass

    fake = type(sys)("torch.utils.tensorboard")
    fake.SummaryWriter = Writer
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", fake)
    args = argparse.Namespace(report=str(tmp_path / "r.json"), seed=0)
    report = Report(args, command="train toy", model="toy")
    report.epoch(dict(split="fold 1", epoch=1, train_loss=0.5, dev=dict(map=0.7), seconds=1.0))
    report.finish(metrics=dict(accuracy=float("nan")))
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["metrics"]["accuracy"] is None and "metrics.accuracy" in data["warnings"][0]
    assert ("dir", str(tmp_path / "r.tensorboard")) in scalars
    assert ("fold_1/train_loss", 0.5, 1) in scalars and ("fold_1/dev.map", 0.7, 1) in scalars
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)            # not installed: skipped silently
    Report(args, command="train toy").epoch(dict(epoch=1, train_loss=0.5, seconds=1.0))


def test_a_finished_report_closes_its_tensorboard_writer(tmp_path, monkeypatch):
    """Its SummaryWriter was never closed: each run of a command in one process (``main([...])`` in a notebook or a
    sweep) left an event file and a writer thread open. Now closed when the report finishes, also as failed."""
    from qpnlp.commands._report import Report

    opened = []

    class Writer:
        def __init__(self, log_dir):
            self.closed = False
            opened.append(self)

        def add_scalar(self, tag, value, step):
            assert not self.closed

        def flush(self):
            pass

        def close(self):
            self.closed = True

    fake = type(sys)("torch.utils.tensorboard")
    fake.SummaryWriter = Writer
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", fake)
    completed = Report(argparse.Namespace(report=str(tmp_path / "c.json"), seed=0), command="train toy")
    completed.epoch(dict(epoch=1, train_loss=0.5, seconds=1.0))
    completed.epoch(dict(epoch=2, train_loss=0.4, seconds=2.0))
    assert len(opened) == 1 and not opened[0].closed
    completed.finish()
    failed = Report(argparse.Namespace(report=str(tmp_path / "f.json"), seed=0), command="train toy")
    with pytest.raises(RuntimeError, match="boom"), failed.guard():
        failed.epoch(dict(epoch=1, train_loss=0.5, seconds=1.0))
        raise RuntimeError("boom")
    assert json.loads((tmp_path / "f.json").read_text())["status"] == "failed"
    assert len(opened) == 2 and all(w.closed for w in opened)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts the descriptors in /proc/self/fd")
def test_a_closed_pipe_on_stdout_leaves_no_descriptor_open(monkeypatch):
    """The reader of stdout gone (``qpnlp ... | head``), stdout goes to /dev/null: the descriptor opened for it was
    never closed, one more per run of a command in one process."""
    from qpnlp.commands._errors import run_command

    class Stdout:                                  # the closed pipe: a descriptor of this test's own
        def __init__(self):
            self.fd = os.open(os.devnull, os.O_WRONLY)

        def fileno(self):
            return self.fd

    def pipe_closed(args):
        raise BrokenPipeError

    stdout = Stdout()
    monkeypatch.setattr(sys, "stdout", stdout)
    try:
        run_command(argparse.Namespace(func=pipe_closed))
        before = len(os.listdir("/proc/self/fd"))
        assert [run_command(argparse.Namespace(func=pipe_closed)) for _ in range(3)] == [1, 1, 1]
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        os.close(stdout.fd)


# --------------------------------------------------------------------------- Ctrl-C and --resume
@pytest.mark.skipif(sys.platform == "win32", reason="Windows: no preexec_fn, pthread_sigmask or SIGINT to send "
                                                    "to a child process")
def test_sigint_saves_the_best_model_so_far_and_exits_130(ws, tmp_path):
    save, report = tmp_path / "model", tmp_path / "r.json"
    script = Path(sys.executable).with_name("qpnlp")
    argv = [str(script), *map(str, _train(ws, "--epochs", "100000", "--patience", "100000", "--save", save,
                                          "--report", report))]
    # A shell starts background jobs with SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    # (CI run with `&` or nohup), and a harness may block it (the mask is inherited): give the child the default
    # disposition and an unblocked SIGINT, as an interactive terminal would.
    def interactive():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"}, preexec_fn=interactive)
    try:
        seen = []
        for line in process.stderr:                 # the first epoch line, after the start-up lines
            seen.append(line)
            if line.startswith("MR fold 1 epoch") or len(seen) > 20:
                break
        assert seen and seen[-1].startswith("MR fold 1 epoch 1:"), "".join(seen)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:                  # never leave a training process behind
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    line = [line for line in stderr.splitlines() if line.strip()][-1]     # after the epoch lines and the status lines
    assert line.startswith("qpnlp train qpdn: interrupted in epoch") and f"saved to {save}" in line
    assert "continue with --resume" in line
    checkpoint = load_checkpoint(save)
    assert checkpoint.metadata["interrupted"]["best_epoch"] >= 1 and checkpoint.model.name == "qpdn"
    data = json.loads(report.read_text())
    assert data["status"] == "interrupted" and len(data["history"]) >= 1 and data["checkpoint"] == str(save)


# A plugin (--import) that sends the command SIGTERM, as a scheduler would (slurm, kubernetes, `timeout`), or SIGINT
# (Ctrl-C), right after the first epoch's report: deterministic, no timing.
_SIGNAL_AFTER_THE_FIRST_EPOCH = """
import os, signal
from qpnlp.commands._report import Report

signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a terminal (a background job ignores SIGINT)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT, signal.SIGTERM])   # a harness may block them (inherited)
_epoch = Report.epoch

def _epoch_then_signal(self, entry):
    _epoch(self, entry)
    if entry["epoch"] == 1:
        os.kill(os.getpid(), signal.{signal})

Report.epoch = _epoch_then_signal
"""
_SIGTERM_AFTER_THE_FIRST_EPOCH = _SIGNAL_AFTER_THE_FIRST_EPOCH.format(signal="SIGTERM")

# A plugin that sends the signal while the {call}th directory saved atomically (a training state, a word2fun
# checkpoint) is written: its files are in the temporary directory, not yet put in place (qpnlp._atomic._place).
_SIGNAL_WHILE_SAVING = """
import os, signal
from qpnlp import _atomic

signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT, signal.SIGTERM])   # a harness may block them (inherited)
_place, _calls = _atomic._place, []

def _signal_then_place(tmp, target):
    _calls.append(target)
    if len(_calls) == {call}:
        os.kill(os.getpid(), signal.{signal})
    _place(tmp, target)

_atomic._place = _signal_then_place
"""


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: no SIGTERM to send to a process")
@pytest.mark.parametrize("command", ["qpdn", "cnm", "word2fun"])
def test_sigterm_stops_training_as_ctrl_c_does_and_resume_continues(server, ws, tmp_path, command):
    """SIGTERM (``kill``, ``timeout``, a scheduler ending the job) ended a training command at once (exit status
    -15): its report stayed "running" for good and the best model so far was not saved, as Ctrl-C saves it. It now
    stops as Ctrl-C does, with exit status 143, and ``--resume`` continues from the last finished epoch."""
    plugin = _write(tmp_path / "sigterm.py", _SIGTERM_AFTER_THE_FIRST_EPOCH)
    report, save = tmp_path / "r.json", tmp_path / "model"
    outputs = ("--out", save) if command == "word2fun" else ("--save", save, "--patience", "3")
    build = {"qpdn": _train, "cnm": _match, "word2fun": _word2fun}[command]
    argv = build(ws, "--epochs", "3", *outputs, "--report", report)
    code, _, stderr = server.run(["--import", plugin, *argv])
    assert code == 143, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr and "Terminated" not in stderr
    line = [line for line in stderr.splitlines() if line.strip()][-1]
    assert line.startswith(f"qpnlp train {command}: stopped by SIGTERM"), stderr
    data = json.loads(report.read_text())
    assert data["status"] == "interrupted" and data["error"] == "stopped by SIGTERM", data["error"]
    assert [e["epoch"] for e in data["history"]] == [1]
    assert "continue with --resume" in line
    if command != "word2fun":                          # the best model so far is saved, as on Ctrl-C
        assert f"saved to {save}" in line
        assert load_checkpoint(save).metadata["interrupted"] == {"epoch": 1, "best_epoch": 1}
    else:
        assert line.endswith(f"; the checkpoint of epoch 1 (of 3) is in {save}; continue with --resume"), line
    code, _, stderr = server.run([*argv, "--resume"])
    assert code == 0, stderr
    assert [e["epoch"] for e in json.loads(report.read_text())["history"]] == [1, 2, 3]


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: no SIGTERM to send to a process")
@pytest.mark.parametrize("name, status, words", [("SIGINT", 130, "interrupted"),
                                                 ("SIGTERM", 143, "stopped by SIGTERM")])
def test_an_interrupted_word2fun_says_what_out_keeps_and_how_to_continue(server, ws, tmp_path, name, status, words):
    """``train word2fun`` said only "interrupted" where ``train qpdn`` says what was kept and "continue with
    --resume". It now names the checkpoint in --out of the last epoch whose checkpoint was written whole (not the
    epoch interrupted while its checkpoint was written), or says that nothing was kept."""
    out, report = tmp_path / "out", tmp_path / "r.json"
    argv = _word2fun(ws, "--epochs", "3", "--out", out, "--report", report)

    def interrupted(plugin: str, *extra) -> str:
        code, _, stderr = server.run(["--import", _write(tmp_path / "plugin.py", plugin), *extra])
        assert code == status and "Traceback" not in stderr, stderr
        return [line for line in stderr.splitlines() if line.strip()][-1]

    while_saving = {call: _SIGNAL_WHILE_SAVING.format(signal=name, call=call) for call in (1, 2)}
    prefix, kept = f"qpnlp train word2fun: {words}; ", f"the checkpoint of epoch 1 (of 3) is in {out}"
    assert interrupted(while_saving[1], *argv) == prefix + f"no epoch finished, nothing saved in {out}"
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert interrupted(while_saving[2], *argv) == prefix + kept + "; continue with --resume"
    assert [e["epoch"] for e in json.loads(report.read_text())["history"]] == [1]
    # resumed and interrupted before a new epoch is saved: the checkpoint it started from is still there
    assert interrupted(while_saving[1], *argv, "--resume") == prefix + kept + "; continue with --resume"
    code, _, stderr = server.run([*argv, "--resume"])
    assert code == 0, stderr
    assert [e["epoch"] for e in json.loads(report.read_text())["history"]] == [1, 2, 3]
    after_an_epoch = _SIGNAL_AFTER_THE_FIRST_EPOCH.format(signal=name)
    assert interrupted(after_an_epoch, *_word2fun(ws, "--epochs", "3")) == \
        prefix + "nothing saved (--out DIR keeps a checkpoint after every epoch)"


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: no SIGINT to send to a process")
@pytest.mark.parametrize("command", ["qpdn", "cnm"])
def test_ctrl_c_while_a_training_state_is_written_names_the_epoch_resume_continues_from(server, ws, tmp_path,
                                                                                       command):
    """Ctrl-C while the training state of epoch 2 was written said "interrupted in epoch 3" (and recorded epoch 2
    as finished in the --save model) while the state on disk was epoch 1's, from which --resume redoes epoch 2."""
    plugin = _write(tmp_path / "sigint.py", _SIGNAL_WHILE_SAVING.format(signal="SIGINT", call=2))
    report, save, state = tmp_path / "r.json", tmp_path / "model", tmp_path / "state"
    build = {"qpdn": _train, "cnm": _match}[command]
    argv = build(ws, "--epochs", "3", "--patience", "3", "--save", save, "--checkpoint-dir", state,
                 "--report", report)
    code, _, stderr = server.run(["--import", plugin, *argv])
    assert code == 130 and "Traceback" not in stderr, stderr
    line = [line for line in stderr.splitlines() if line.strip()][-1]
    assert line.startswith(f"qpnlp train {command}: interrupted in epoch 2") and "continue with --resume" in line
    assert load_checkpoint(save).metadata["interrupted"]["epoch"] == 1
    assert [e["epoch"] for e in json.loads(report.read_text())["history"]] == [1]
    code, _, stderr = server.run([*argv, "--resume"])
    assert code == 0, stderr
    assert [(e["epoch"], e.get("restored")) for e in json.loads(report.read_text())["history"]] == \
        [(1, True), (2, None), (3, None)]


def test_sigterm_raises_in_a_command_but_not_in_the_processes_of_its_launcher(monkeypatch):
    """While a command runs, SIGTERM raises Terminated (a KeyboardInterrupt, stopping the work as Ctrl-C does); in a
    process that ``--processes`` started it ends the process at once, as before: the launcher stops its processes
    so and finishes the report for them. The handler of the caller is back afterwards."""
    from qpnlp.commands._errors import Terminated, interrupted_status, run_command, stopped_by_sigterm
    from qpnlp.commands._processes import ERROR_FILE_VARIABLE, records_error

    def handlers(args):
        with records_error():
            args.seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    seen: list = []
    assert run_command(argparse.Namespace(func=handlers, seen=seen)) == 0
    monkeypatch.setenv(ERROR_FILE_VARIABLE, os.devnull)
    assert run_command(argparse.Namespace(func=handlers, seen=seen)) == 0
    assert callable(seen[0]) and seen[1] == signal.SIG_DFL, seen
    assert signal.getsignal(signal.SIGTERM) == before
    with pytest.raises(Terminated) as raised:
        seen[0](signal.SIGTERM, None)
    for cause, status in ((raised.value, 143), (KeyboardInterrupt(), 130)):
        try:
            try:
                raise cause
            except KeyboardInterrupt:
                raise KeyboardInterrupt from None  # as TrainingInterrupted replaces the interrupt it carries
        except KeyboardInterrupt as wrapped:
            assert stopped_by_sigterm(wrapped) == (status == 143) and interrupted_status(wrapped) == status


@pytest.mark.parametrize("command", ["qpdn", "cnm"])
def test_resume_continues_to_the_result_of_an_uninterrupted_run(server, ws, tmp_path, command):
    """Train 2 epochs (the 'interruption'), resume to 4 epochs, compare with 4 epochs in one go: bit for bit."""
    build = (lambda *a: _train(ws, "--dropout", "0.3", *a)) if command == "qpdn" else (lambda *a: _match(ws, *a))
    full, part = tmp_path / "full", tmp_path / "part"
    code, full_out, err = server.run(build("--epochs", "4", "--patience", "4", "--save", full))
    assert code == 0, err
    code, _, err = server.run(build("--epochs", "2", "--patience", "4", "--save", part))
    assert code == 0, err
    code, resumed_out, err = server.run(build("--epochs", "4", "--patience", "4", "--save", part, "--resume"))
    assert code == 0, err
    assert "epoch 1:" in err and "(from the saved training state)" in err
    a, b = load_checkpoint(full).model.state_dict(), load_checkpoint(part).model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    score = re.compile(r"test accuracy [\d.]+ \(dev [\d.]+, epoch \d+|test: MAP [\d.]+ MRR [\d.]+ P@1 [\d.]+")
    assert score.findall(full_out) == score.findall(resumed_out) and score.findall(full_out)
    code, _, err = server.run(build("--epochs", "4", "--patience", "4", "--save", part, "--resume", "--lr", "0.5"))
    assert code == 2 and "--resume: this command line differs" in err and "--lr 0.5 here, 0.01 in the saved run" in err


def test_a_run_without_resume_says_that_it_cleared_an_earlier_training_state(server, ws, tmp_path):
    """A rerun without --resume deleted the training state of the interrupted run without a word."""
    state = tmp_path / "state"
    code, _, first = server.run(_train(ws, "--checkpoint-dir", state))
    assert code == 0 and "cleared" not in first, first
    code, _, again = server.run(_train(ws, "--checkpoint-dir", state))
    assert code == 0, again
    assert f"--checkpoint-dir: the training state of an earlier run in {state} was cleared" in again    # stderr
    assert "an earlier run's training state there is cleared" in \
        _own_commands()["qpnlp train qpdn"]._option_string_actions["--resume"].help


# --------------------------------------------------------------------------- help
def _own_commands():
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    train = next(a for a in verbs.choices["train"]._actions if isinstance(a, argparse._SubParsersAction))
    commands = {f"qpnlp {k}": v for k, v in verbs.choices.items() if k != "train"}
    commands.update({f"qpnlp train {k}": v for k, v in train.choices.items() if k != "word2fun"})
    return commands


def test_the_help_of_resume_says_the_settings_not_given_are_the_runs_and_those_given_compared():
    """word2fun's --resume said "(its settings, next epoch)" while the settings had to be given again; now the
    options not given are the saved run's (``qpnlp.commands._resume``) and those given are compared, in every
    train command."""
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    train = next(a for a in verbs.choices["train"]._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("word2fun", "qpdn", "cnm"):
        text = train.choices[name]._option_string_actions["--resume"].help
        assert "not given here" in text and "is the" in text and "compared" in text and "both values" in text, \
            (name, text)
        assert "--epochs" in text and "--device" in text, (name, text)


def test_every_option_says_its_default():
    missing = []
    for name, command in _own_commands().items():
        for action in command._actions:
            if not action.option_strings or action.help in (None, argparse.SUPPRESS):
                continue
            if action.required or isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction,
                                                      argparse._StoreConstAction, argparse._VersionAction)):
                continue
            if "default" not in action.help:
                missing.append(f"{name} {action.option_strings[0]}")
    assert not missing, missing


def test_help_shows_no_rest_markup():
    """Descriptions and option help come partly from docstrings: no ``literal`` quotes or :role: in the output."""
    parser = build_parser()
    train = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["train"]
    train_commands = next(a for a in train._actions if isinstance(a, argparse._SubParsersAction)).choices
    marked = [name for name, command in {"qpnlp": parser, "qpnlp train": train, **_own_commands(),
                                         "qpnlp train word2fun": train_commands["word2fun"]}.items()
              if re.search(r"``|:(mod|func|class|meth|attr|math|data):`", command.format_help())]
    assert not marked, marked


def test_help_and_version_exit_zero(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("qpnlp ")


# --------------------------------------------------------------------------- review: lost outputs, ignored flags
def test_convert_refuses_to_replace_a_directory_that_is_not_a_model(server, ws, tmp_path):
    """``qpnlp convert OLD NEW`` replaces NEW: a directory of the user's own files must survive, as with --save."""
    model = QPDN(QPDNConfig(num_words=5, num_classes=2, dim=4, num_measurements=4))
    vocab = Vocabulary.build([["good", "bad", "film"]])
    torch.save(dict(format="qpnlp-checkpoint-1", kind="qpdn", config=model.config.to_dict(), vocab=vocab.to_dict(),
                    label_names=["neg", "pos"], meta={"dataset": "MR", "seed": 0}, state_dict=model.state_dict()),
               tmp_path / "old.pt")
    mine = _write(tmp_path / "mine" / "thesis.tex", "precious\n").parent
    argv = ["convert", tmp_path / "old.pt", mine]
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "exists and is not a saved qpnlp model")
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]
    code, _, stderr = server.run(["convert", tmp_path / "old.pt", tmp_path / "new"])       # a new directory: fine
    assert code == 0, stderr
    code, _, stderr = server.run(["convert", tmp_path / "old.pt", tmp_path / "new"])       # a model: replaced
    assert code == 0, stderr
    assert load_checkpoint(tmp_path / "new").name == "qpdn"


def test_a_word2fun_directory_of_qpnlp_0_1_as_an_output_is_refused_as_one_with_the_converter_named(tmp_path):
    """--save, --out and convert's NEW refused a Word2Fun directory of qpnlp 0.1 as "not a saved qpnlp model": it is
    one, of the old format; the refusal says so and names `qpnlp convert`."""
    import shutil

    from qpnlp.commands._errors import UsageError
    from qpnlp.commands._outputs import check_output_path

    old = shutil.copytree(Path(__file__).parent / "word2fun" / "data" / "legacy-word2fun-0.1", tmp_path / "old")
    for option in ("--save", "--out", "output directory"):
        with pytest.raises(UsageError, match=rf"{option} {old}: holds a Word2Fun model of qpnlp 0.1; refusing to "
                                             rf"replace it \(convert it first with `qpnlp convert {old} NEW`"):
            check_output_path(old, option, directory=True, model=True)
    assert sorted(p.name for p in old.iterdir()) == ["config.json", "weights.safetensors"]


def test_a_directory_with_another_librarys_config_json_is_never_replaced(server, ws, tmp_path):
    """Any directory holding a file named config.json (state.json, training-run.json) counted as qpnlp's own:
    --save and --out replaced a Hugging Face model directory, deleting its weights without a word."""
    theirs = _write(tmp_path / "bert" / "config.json", '{"architectures": ["BertModel"]}\n').parent
    _write(theirs / "pytorch_model.bin", "weights\n")
    for argv in (_train(ws, "--save", theirs, "--no-training-state"), _word2fun(ws, "--out", theirs)):
        code, _, stderr = server.run(argv)
        _one_error_line(argv, code, stderr, 2, "exists and is not a saved qpnlp model")
    with pytest.raises(FileExistsError, match="holds no config.json written by qpnlp"):
        QPDN(QPDNConfig(num_words=5, num_classes=2, dim=4, num_measurements=4)).save_pretrained(theirs)
    assert sorted(p.name for p in theirs.iterdir()) == ["config.json", "pytorch_model.bin"]
    state = _write(tmp_path / "state" / "training-run.json", '{"run": 1}\n').parent
    argv = _train(ws, "--checkpoint-dir", state)
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "is not a qpnlp training-state directory")
    assert [p.name for p in state.iterdir()] == ["training-run.json"]


@pytest.mark.parametrize("npz", ["w2f", "w2f/grid.npz"])
def test_word2fun_export_npz_overlapping_out_is_refused_before_training(server, ws, tmp_path, npz):
    """--export-npz at --out failed only after training (a directory), and a grid inside --out was deleted by the
    next save of the model (--resume)."""
    argv = _word2fun(ws, "--out", tmp_path / "w2f", "--export-npz", tmp_path / npz)
    code, stdout, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "--export-npz")
    assert "overlap" in stderr and "epoch 1:" not in stdout + stderr and not (tmp_path / "w2f").exists()


@pytest.mark.parametrize("where", ["same", "inside save", "save inside"])
def test_checkpoint_dir_overlapping_save_is_refused(server, ws, tmp_path, where):
    """Saving the model replaces --save: a training state inside it would be gone (and --resume impossible)."""
    save, state = {"same": ("m", "m"), "inside save": ("m", "m/state"), "save inside": ("st/m", "st")}[where]
    argv = _match(ws, "--save", tmp_path / save, "--checkpoint-dir", tmp_path / state)
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "overlap")
    assert not (tmp_path / state).exists()


REPORT_INSIDE = {        # id -> (argv builder given tmp_path, the output directory, the option the error names)
    "qpdn --save": (lambda w, t: _train(w, "--save", t / "m", "--report", t / "m" / "r.json"), "m", "--save"),
    "qpdn state next to --save": (lambda w, t: _train(w, "--save", t / "m", "--report", t / "m.training" / "r.json"),
                                  "m.training", "the training state next to --save"),
    "cnm --checkpoint-dir": (lambda w, t: _match(w, "--checkpoint-dir", t / "st", "--report",
                                                 t / "st" / "a" / "r.json"), "st", "--checkpoint-dir"),
    "word2fun --out": (lambda w, t: _word2fun(w, "--out", t / "w", "--report", t / "w" / "r.json"), "w", "--out"),
    "word2fun --export-npz": (lambda w, t: _word2fun(w, "--export-npz", t / "g.npz", "--report",
                                                     t / "g.npz" / "r.json"), "g.npz", "--export-npz"),
}


@pytest.mark.parametrize("case", sorted(REPORT_INSIDE))
def test_a_report_inside_an_output_directory_is_refused_before_training(server, ws, tmp_path, case):
    """A report under --save (--out, the training state) was written into the model directory: a later save replaced
    the directory and deleted the report, and a new --save directory holding the report was refused only after
    training (exit 1, the model lost)."""
    build, output, option = REPORT_INSIDE[case]
    argv = build(ws, tmp_path)
    code, stdout, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, f"--report and {option} overlap: the report ")
    assert f"would lie inside {tmp_path / output}," in stderr and "epoch 1:" not in stdout + stderr
    assert not (tmp_path / output).exists()


REPORT_FILES_APART = {   # id -> (argv builder given ws and tmp_path, fragment of the error, a file not to be written)
    "history at --export-npz": (lambda w, t: _word2fun(w, "--report", t / "a.json", "--export-npz",
                                                       t / "a.history.csv"),
                                "--report and --export-npz overlap: {t}/a.history.csv is also the report's history",
                                "a.json"),
    "events at --out": (lambda w, t: _word2fun(w, "--report", t / "r.json", "--out", t / "r.tensorboard"),
                        "--report and --out overlap: {t}/r.tensorboard is also the report's TensorBoard events",
                        "r.json"),
    "history at --save": (lambda w, t: _train(w, "--report", t / "m.json", "--save", t / "m.history.csv"),
                          "--report and --save overlap: {t}/m.history.csv is also the report's history", "m.json"),
    "state inside the events": (lambda w, t: _match(w, "--report", t / "r.json", "--checkpoint-dir",
                                                    t / "r.tensorboard" / "st"),
                                "--report and --checkpoint-dir overlap: {t}/r.tensorboard/st would lie inside the "
                                "report's TensorBoard events {t}/r.tensorboard", "r.json"),
    "report at the corpus": (lambda w, t: _word2fun(w, "--corpus", t / "c.tsv", "--report", t / "c.tsv"),
                             "--report and --corpus overlap: the report {t}/c.tsv would be written over {t}/c.tsv, "
                             "which the command reads", "c.tensorboard"),
    "history at --vectors": (lambda w, t: _train(w, "--vectors", t / "c.history.csv", "--report", t / "c.json"),
                             "--report and --vectors overlap: the report's history {t}/c.history.csv would be "
                             "written over", "c.json"),
    "report inside the checkpoint": (lambda w, t: ["evaluate", w["clf"], "--data", w["root"], "--report",
                                                   w["clf"] / "config.json"],
                                     "--report and the checkpoint overlap: the report {clf}/config.json would be "
                                     "written inside {clf}, which the command reads", "config.history.csv"),
    "report named as its events": (lambda w, t: _word2fun(w, "--report", t / "r.tensorboard"),
                                   "the name of the directory of its TensorBoard events", "r.tensorboard"),
}


@pytest.mark.parametrize("case", sorted(REPORT_FILES_APART))
def test_the_files_of_a_report_apart_from_the_outputs_and_inputs_are_refused_before_any_work(server, ws, tmp_path,
                                                                                              case):
    """--report wrote FILE.json, FILE.history.csv and FILE.tensorboard/ over the other outputs or the inputs without a
    check: the grid of --export-npz a.history.csv was overwritten by the history, events went into the --out that
    every save replaces, --report c.tsv replaced the corpus it read, --report MODEL/config.json the model."""
    build, fragment, unwritten = REPORT_FILES_APART[case]
    corpus = (ws["base"] / "corpus.tsv").read_text()
    for name in ("c.tsv", "c.history.csv"):
        (tmp_path / name).write_text(corpus)                 # a corpus, and vectors for --vectors (never read)
    config = (ws["clf"] / "config.json").read_bytes()
    argv = build(ws, tmp_path)
    code, stdout, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, fragment.format(t=tmp_path, clf=ws["clf"]))
    assert "epoch 1:" not in stdout + stderr and not (tmp_path / unwritten).exists()
    assert not (ws["clf"] / unwritten).exists() and (ws["clf"] / "config.json").read_bytes() == config
    assert (tmp_path / "c.tsv").read_text() == corpus and (tmp_path / "c.history.csv").read_text() == corpus


def test_evaluate_of_a_matcher_counts_questions_as_training_does(server, ws, tmp_path):
    """MAP, MRR and P@1 average over questions: training said 'on 4 questions', evaluate 'on 12 items' (the pairs)."""
    code, trained, stderr = server.run(_match(ws))
    assert code == 0, stderr
    removed = r" \(the 'no-correct' filter removed 0 of the file's 4\)"
    assert re.search(r"wikiqa test: MAP [\d.]+ MRR [\d.]+ P@1 [\d.]+ on 4 questions" + removed + "$", trained,
                     re.M), trained
    report = tmp_path / "eval.json"
    code, stdout, stderr = server.run(["evaluate", ws["cnm"], "--data", ws["root"], "--report", report])
    assert code == 0, stderr
    assert re.search(r"^wikiqa test: MAP [\d.]+ MRR [\d.]+ P@1 [\d.]+ on 4 questions" + removed +
                     r", 12 candidate answers \(cnm\)$", stdout, re.M), stdout
    data = json.loads(report.read_text())
    assert data["n"] == 12 and data["metrics"]["questions"] == 4
    assert data["split_counts"] == {"test": {"questions": 4, "candidates": 12}} and data["counts"] == {
        "questions": 4, "candidates": 12}
    assert data["split_unit"] == "questions, candidates"
    code, stdout, stderr = server.run(["evaluate", ws["clf"], "--data", ws["root"], "--report", report])
    assert code == 0 and re.search(r" on 3 sentences \(qpdn\)$", stdout, re.M), stdout + stderr  # as train counts
    assert json.loads(report.read_text())["split_counts"] == {"fold 1 test": {"sentences": 3}}


def test_import_of_a_missing_file_has_one_prefix(server, ws, tmp_path):
    """The error read 'qpnlp: error: --import: --import FILE: no such file'."""
    argv = ["--import", tmp_path / "missing.py", *_train(ws)]
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "")
    assert stderr == f"qpnlp: error: --import: {tmp_path / 'missing.py'}: no such file\n"


def _device_helps():
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    train = next(a for a in verbs.choices["train"]._actions if isinstance(a, argparse._SubParsersAction))
    commands = {f"qpnlp {k}": v for k, v in verbs.choices.items() if k != "train"}
    commands.update({f"qpnlp train {k}": v for k, v in train.choices.items()})
    return {name: command._option_string_actions["--device"].help for name, command in commands.items()
            if "--device" in command._option_string_actions}


@pytest.mark.parametrize("command", sorted(_device_helps()))
def test_device_help_names_every_device_accepted(command):
    """--device takes cpu, cuda, cuda:N and mps (qpnlp._device); a help that left out mps hid it."""
    from qpnlp._device import SUPPORTED

    assert _device_helps()[command].startswith(f"{SUPPORTED}: "), _device_helps()[command]


def test_evaluate_refuses_max_questions_for_a_classifier(server, ws):
    """--max-questions limits answer-selection questions; a classifier scored on the whole split must say so."""
    argv = ["evaluate", ws["clf"], "--data", ws["root"], "--split", "test", "--max-questions", "1"]
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "--max-questions")


def test_evaluate_classifier_with_an_unknown_split_is_a_usage_error(server, ws):
    argv = ["evaluate", ws["clf"], "--data", ws["root"], "--split", "validation"]
    code, _, stderr = server.run(argv)
    _one_error_line(argv, code, stderr, 2, "split must be one of train, dev, test")


def test_a_fixed_split_run_records_no_fold_count(server, ws, tmp_path):
    """TREC has one fixed split: the checkpoint and the report recorded folds=10 all the same."""
    save, report = tmp_path / "trec", tmp_path / "trec.json"
    argv = [("trec" if a == "mr" else a) for a in _train(ws, "--save", save, "--no-training-state", "--report", report)]
    code, _, stderr = server.run(argv)
    assert code == 0, stderr
    assert load_checkpoint(save).metadata["folds"] is None
    assert json.loads(report.read_text())["arguments"]["folds"] is None
    code, _, stderr = server.run(["evaluate", save, "--data", ws["root"]])
    assert code == 0, stderr
    save, report = tmp_path / "mr", tmp_path / "mr.json"                  # a CV data set records the folds used
    code, _, stderr = server.run(_train(ws, "--save", save, "--no-training-state", "--report", report))
    assert code == 0, stderr
    assert load_checkpoint(save).metadata["folds"] == 10
    assert json.loads(report.read_text())["arguments"]["folds"] == 10


def test_output_paths_may_start_with_the_home_directory(server, ws, tmp_path, monkeypatch):
    """--out=~/w2f reaches qpnlp unexpanded (no tilde expansion after '='): the model, the report and the grid
    were written to a directory named '~' in the working directory."""
    home = tmp_path / "home"
    home.mkdir()
    argv = _word2fun(ws, "--out=~/w2f", "--report=~/r.json", "--export-npz=~/g.npz")
    code, _, stderr = server.run(argv, cwd=tmp_path, env={"HOME": str(home)})
    assert code == 0, stderr
    assert not (tmp_path / "~").exists() and {"w2f", "r.json", "g.npz"} <= {p.name for p in home.iterdir()}
    monkeypatch.setenv("HOME", str(home))
    for command in ("qpdn", "cnm"):
        args = build_parser().parse_args(["train", command, "--dataset", "wikiqa" if command == "cnm" else "MR",
                                          "--save=~/m", "--checkpoint-dir=~/s", "--report=~/r.json"])
        assert (args.save, args.checkpoint_dir, args.report) == (f"{home}/m", f"{home}/s", f"{home}/r.json")
    assert build_parser().parse_args(["evaluate", "m", "--report=~/r.json"]).report == f"{home}/r.json"


# --------------------------------------------------------------------------- the command as a Unix tool
@contextlib.contextmanager
def _stdout_reader_gone(monkeypatch):
    """stdout a pipe whose reader has left (``qpnlp ... | head -1`` once head exited): every write raises
    :class:`BrokenPipeError` (Python ignores SIGPIPE)."""
    read, write = os.pipe()
    os.close(read)
    stream = open(write, "w", encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            stream.close()


CLOSED_STDOUT_RUNS = {      # argv in tmp_path -> the files that the run must have written before its results
    "word2fun": (lambda w, t: _word2fun(w, "--words", "good", "--export-npz", t / "g.npz", "--out", t / "m",
                                        "--report", t / "r.json"), ["g.npz", "m/config.json"], True),
    "match": (lambda w, t: _match(w, "--save", t / "m", "--report", t / "r.json"), ["m/config.json"], True),
    "classify": (lambda w, t: _train(w, "--save", t / "m", "--report", t / "r.json"), ["m/config.json"], False),
    "evaluate": (lambda w, t: ["evaluate", w["cnm"], "--data", w["root"], "--report", t / "r.json"], [], True),
    "demo": (lambda w, t: ["demo", "--train-size", "300", "--epochs", "1", "--no-progress", "--report", t / "r.json"],
             [], True),
}


@pytest.mark.parametrize("command", sorted(CLOSED_STDOUT_RUNS))
def test_a_reader_of_stdout_that_left_loses_no_file_the_run_was_asked_for(ws, tmp_path, monkeypatch, command):
    """The results were printed before --save, --export-npz and the report were written: ``qpnlp ... | head -1``
    (or a reader that left before the first line) ended the command at the closed pipe with the trained model
    unsaved, the grid unwritten and the report saying 'failed'. Exit code 1 and no line on stderr, as documented;
    a cross-validation stops at the first split line that finds the reader gone (its report says so)."""
    argv, files, completed = CLOSED_STDOUT_RUNS[command]
    with _stdout_reader_gone(monkeypatch):
        code = main([str(a) for a in argv(ws, tmp_path)])
    assert code == 1
    assert [f for f in files if not (tmp_path / f).is_file()] == []
    status = json.loads((tmp_path / "r.json").read_text())["status"]
    assert status == ("completed" if completed else "failed"), status


def test_results_on_a_console_without_their_characters_are_escaped_not_lost(ws, tmp_path, monkeypatch, capsys):
    """An ASCII stdout (``LC_ALL=C PYTHONUTF8=0``, ``PYTHONIOENCODING=ascii``) and a word with an accent among the
    results: the run failed at its last step with "'ascii' codec can't encode character", exit code 1."""
    corpus = _write(tmp_path / "c.tsv", "".join(f"{1900 + 10 * i}\tthe café plot {POSITIVE[i % 6]}\n"
                                                for i in range(10)))
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="ascii", write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    argv = ["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "1",
            "--no-progress", "--words", "café,plot", "--topk", "5"]
    assert main(argv) == 0, capsys.readouterr().err
    text = buffer.getvalue().decode("ascii")
    assert text.startswith("caf\\xe9  (change degree") and "\nplot  (change degree" in text, text
    assert stdout.errors == "strict"                # the caller's stream as it was


def test_python_m_qpnlp_is_the_qpnlp_command():
    """``python -m qpnlp`` (no __main__.py: "'qpnlp' is a package and cannot be directly executed")."""
    import qpnlp

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "qpnlp", "--version"], capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"qpnlp {qpnlp.__version__}\n", "")
    done = subprocess.run([sys.executable, "-m", "qpnlp"], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("qpnlp: error: the following")


@pytest.mark.parametrize("where", ["build_parser", "import_plugins"])
def test_ctrl_c_while_the_command_starts_is_one_line_and_exit_code_130(monkeypatch, capsys, where):
    """Building the parser imports torch and every command (seconds): Ctrl-C then gave a KeyboardInterrupt traceback
    and a death by SIGINT instead of the documented line and exit code 130 (``--import`` alone had them)."""
    import qpnlp.cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(qpnlp.cli, where, interrupted)
    assert main(["train", "qpdn", "--help"]) == 130
    assert capsys.readouterr().err == "qpnlp: interrupted\n"
