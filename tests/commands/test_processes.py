"""``qpnlp train word2fun --processes N`` stopped by SIGTERM or Ctrl-C says what ``--out`` keeps, as one process
does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from qpnlp.data import TimestampedCorpus
from qpnlp.word2fun import TrainConfig, fit

# The command, its processes replaced by stand-ins that run CHILD (argv[1]): no training, no timing.
_DRIVER = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # Python leaves SIGINT ignored when started so (nohup, &)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})  # a harness may block them (CI did)
from qpnlp.cli import main
real, child = subprocess.Popen, sys.argv[1]
subprocess.Popen = lambda command, **kwargs: real([sys.executable, "-c", child], **kwargs)
sys.exit(main(sys.argv[2:]))
"""
# Each stand-in: process 0 does to --out what the first process of a run does (ACTION), then both wait.
_CHILD = """
import os, shutil, sys, time
from pathlib import Path
out, saved, ready = Path({out!r}), Path({saved!r}), Path({ready!r} + os.environ["RANK"])
if os.environ["RANK"] == "0":
    {action}
ready.write_text(str(os.getpid()))
time.sleep(120)
"""
_ACTIONS = {
    "saves an epoch": "shutil.copytree(saved, out)",
    "saves nothing": "pass",
    # killed between the two renames of the next save: --out missing, its last checkpoint aside in .out.*.old/out
    "is killed while replacing it": "shutil.copytree(saved, out); (out.parent / '.out.k1lled00.old').mkdir(); "
                                    "os.rename(out, out.parent / '.out.k1lled00.old' / 'out')",
}


@pytest.fixture
def saved(tmp_path):
    """The checkpoint of one epoch of a tiny run."""
    docs = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(60)]
    fit(TimestampedCorpus.from_pairs(docs), TrainConfig(epochs=1, batch_size=256), dim=4, min_count=1,
        checkpoint=tmp_path / "saved")
    (tmp_path / "c.tsv").write_text("".join(f"{1900 + i}\ta b c\n" for i in range(6)))
    return tmp_path / "saved"


@pytest.mark.skipif(sys.platform == "win32",
                    reason="Windows: no SIGTERM or SIGINT to send to a process, no pthread_sigmask")
@pytest.mark.parametrize("signal_name, action, earlier, kept", [
    ("SIGTERM", "saves an epoch", False, True),
    ("SIGINT", "saves an epoch", False, True),
    ("SIGTERM", "saves nothing", True, False),             # an earlier run's checkpoint, not this run's
    ("SIGTERM", "is killed while replacing it", False, True),
])
def test_a_run_of_several_processes_stopped_says_what_out_keeps(tmp_path, saved, signal_name, action, earlier, kept):
    """It said only "stopped by SIGTERM" (or "interrupted"), where one process names the checkpoint kept and how to
    continue: its processes end at once on the launcher's SIGTERM, before the first could say it. The launcher
    now reads it from --out, after putting back a checkpoint the first process left aside."""
    out = tmp_path / "out"
    if earlier:
        shutil.copytree(saved, out)
    child = _CHILD.format(out=str(out), saved=str(saved), ready=str(tmp_path / "ready"), action=_ACTIONS[action])
    argv = ["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--min-count", "1", "--processes", "2",
            "--epochs", "3", "--out", str(out), "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "WORLD_SIZE"}
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER, child, *argv], env=env, stderr=subprocess.PIPE,
                              text=True)
    files = [tmp_path / f"ready{r}" for r in range(2)]
    try:
        for _ in range(600):
            if all(f.is_file() and f.read_text() for f in files):
                break
            time.sleep(0.1)
        driver.send_signal(getattr(signal, signal_name))
        _, stderr = driver.communicate(timeout=60)
    finally:
        for f in files:
            if f.is_file() and f.read_text():
                try:
                    os.kill(int(f.read_text()), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if driver.poll() is None:
            driver.kill()
    words, status = ("stopped by SIGTERM", 143) if signal_name == "SIGTERM" else ("interrupted", 130)
    assert driver.returncode == status, stderr
    line = [line for line in stderr.splitlines() if line.strip()][-1]
    what = f"the checkpoint of epoch 1 (of 3) is in {out}; continue with --resume" if kept else \
        f"no epoch finished, nothing saved in {out}"
    assert line == f"qpnlp train word2fun: {words}; {what}", stderr
    assert (out / "config.json").is_file() and not list(tmp_path.glob(".out.*.old"))    # put back, resumable
