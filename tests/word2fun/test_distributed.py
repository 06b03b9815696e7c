"""Streaming from disk, resuming from a checkpoint, and two processes started by torchrun (gloo)."""

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus, TsvStream, Vocabulary, write_tsv
from qpnlp.evaluation.drift import DriftGrid, evaluate_grid
from qpnlp.models.base import read_model_header
from qpnlp.word2fun import KeyedVectors, TrainConfig, _run_state, fit
from qpnlp.word2fun.sources import StreamSource


def test_the_stream_reads_gzip_and_plain_shards_and_splits_them(tmp_path, tiny_drift):
    corpus, _ = tiny_drift
    write_tsv(corpus, tmp_path / "all.tsv")
    with open(tmp_path / "all.tsv", "rb") as src, gzip.open(tmp_path / "all.tsv.gz", "wb") as dst:
        dst.write(src.read())
    plain, packed = list(TsvStream([tmp_path / "all.tsv"])), list(TsvStream([tmp_path / "all.tsv.gz"]))
    assert packed == plain and [t for t, _ in plain] == corpus.times.tolist()
    halves = [list(TsvStream([tmp_path / "all.tsv.gz"]).shard(r, 2)) for r in range(2)]
    assert sorted(map(repr, halves[0] + halves[1])) == sorted(map(repr, plain))  # disjoint and complete
    assert halves[0] and halves[1]
    files = TsvStream([tmp_path / "all.tsv", tmp_path / "all.tsv.gz"]).shard(1, 2)
    assert files.paths == (tmp_path / "all.tsv.gz",) and files.world == 1
    with pytest.raises(ValueError, match="directory"):
        TsvStream([tmp_path])


def test_stream_chunks_hold_the_encoded_corpus_in_bounded_pieces(tmp_path, tiny_drift):
    corpus, _ = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    vocab = Vocabulary.build(corpus.docs, min_freq=3, specials=False)
    enc = corpus.encode(vocab)
    source = StreamSource(TsvStream([tmp_path / "c.tsv"]), vocab, chunk_tokens=5000)
    chunks = list(source.chunks(None))
    longest = max(len(d) for d in corpus.docs)
    assert len(chunks) > 10 and all(c[0].shape[0] < 5000 + longest for c in chunks)
    np.testing.assert_array_equal(np.concatenate([c[0] for c in chunks]), enc.tokens)
    np.testing.assert_array_equal(np.concatenate([c[2] for c in chunks]), enc.times)
    assert source.n_tokens == enc.n_tokens


def test_stream_chunks_hold_at_most_chunk_tokens_documents(tmp_path):
    """Documents without a word of the vocabulary piled up in one chunk, each with its time, until
    ``chunk_tokens`` tokens came (all 20 000 documents in a chunk of 100 tokens: memory grew with the corpus);
    now a chunk also ends at ``chunk_tokens`` documents, and every token is still read."""
    lines = [f"{1900 + i % 30}\t{'war peace' if i % 1000 == 0 else f'rare{i}'}\n" for i in range(20_000)]
    (tmp_path / "c.tsv").write_text("".join(lines))
    freq = {"war": 20, "peace": 20}
    vocab = Vocabulary(["war", "peace"], freq, freq, 20_000, specials=False)
    chunks = list(StreamSource(TsvStream([tmp_path / "c.tsv"]), vocab, chunk_tokens=100).chunks(None))
    assert max(c[2].shape[0] for c in chunks) <= 100
    assert np.concatenate([c[0] for c in chunks]).tolist() == [0, 1] * 20


def test_a_streamed_fit_learns_the_planted_drift(tmp_path, tiny_drift):
    corpus, truth = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    result = fit(TsvStream([tmp_path / "c.tsv"]), TrainConfig(epochs=3, chunk_tokens=20_000), dim=20, min_count=3)
    assert result.corpus_info == {"documents": len(corpus), "tokens": corpus.n_tokens, "span": list(corpus.span),
                                  "lowercase": False}                # a stream records how its words were read
    v = result.vectors
    words = list(truth.words) + [w for tw in truth.topic_words for w in tw]
    r = evaluate_grid(DriftGrid(v.grid(words, truth.years), words, truth.years), truth)
    assert r["auc"] >= 0.8 and r["acc_after"] >= 0.6


@pytest.mark.parametrize("workers", [{}, {"workers": 2, "parallel": "replicas", "replica_sync_every": 2}])
def test_resuming_from_a_checkpoint_continues_the_run(tmp_path, tiny_drift, workers):
    """One worker, or replicas (equal after every epoch, each with its negatives' stream), resume bit for bit."""
    corpus, truth = tiny_drift
    cfg = dict(seed=2, batch_size=2048, **workers)
    whole = fit(corpus, TrainConfig(epochs=3, **cfg), dim=8, min_count=3).vectors

    def interrupt(epoch, stats):  # the run is killed after its first epoch
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(corpus, TrainConfig(epochs=3, **cfg), dim=8, min_count=3, checkpoint=tmp_path / "ck", on_epoch=interrupt)
    assert read_model_header(tmp_path / "ck")["metadata"]["epochs_done"] == 1
    resumed = fit(corpus, TrainConfig(epochs=3, **cfg), dim=8, min_count=3, checkpoint=tmp_path / "ck", resume=True)
    assert resumed.epochs_done == 3 and len(resumed.stats.epoch_loss) == 3
    words = list(truth.words)
    assert torch.equal(resumed.vectors.grid(words, truth.years), whole.grid(words, truth.years))
    assert torch.equal(KeyedVectors.from_pretrained(tmp_path / "ck").grid(words, [1900.0]), whole.grid(words, [1900.0]))
    with pytest.raises(ValueError, match="checkpoint"):
        fit(corpus, resume=True)


@pytest.mark.parametrize("workers", [(1, 2), (2, 1)])
def test_resuming_with_another_number_of_workers_continues_the_data_order(tmp_path, monkeypatch, workers):
    """The pair generator and the common workers' negatives continue from the checkpoint; an added worker starts
    its own stream (before, any change of ``workers`` restarted the data order: epoch 2 repeated epoch 1's)."""
    import base64

    from qpnlp.data import TimestampedCorpus
    from qpnlp.word2fun import train

    rs = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    corpus = TimestampedCorpus.from_pairs([(1900 + i % 20, list(rs.choice(words, 30))) for i in range(300)])
    before, after = workers
    opts = dict(dim=4, min_count=1, checkpoint=tmp_path / "ck")

    def interrupt(epoch, stats):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(corpus, TrainConfig(epochs=3, seed=1, batch_size=512, workers=before), **opts, on_epoch=interrupt)
    state = _run_state.saved_rng(tmp_path / "ck", read_model_header(tmp_path / "ck")["metadata"], 0)
    assert len(state["torch"]) == before
    seen, real = {}, train._train_checked

    def spy(model, source, counts, cfg, **kw):
        seen.update(rng=kw["rng"].bit_generator.state, gens=[g.get_state() for g in kw["generators"]])
        return real(model, source, counts, cfg, **kw)

    monkeypatch.setattr(train, "_train_checked", spy)
    resumed = fit(corpus, TrainConfig(epochs=3, seed=1, batch_size=512, workers=after), **opts, resume=True)
    assert resumed.epochs_done == 3
    assert seen["rng"] == state["numpy"]  # not default_rng(seed) again
    assert seen["rng"] != np.random.default_rng(1).bit_generator.state
    assert len(seen["gens"]) == after
    assert torch.equal(seen["gens"][0], torch.frombuffer(bytearray(base64.b64decode(state["torch"][0])),
                                                         dtype=torch.uint8))
    if after > before:  # the added worker's own stream, from its seed
        assert torch.equal(seen["gens"][1], torch.Generator().manual_seed(1 + 7919).get_state())


@pytest.fixture(autouse=True)
def _collectives_wait_a_minute_at_most(monkeypatch):
    """The processes these tests start wait 60 s at most in a collective (torch's default: 30 minutes): a process
    left waiting for another fails the test instead of hanging it."""
    monkeypatch.setenv("QPNLP_DIST_TIMEOUT", "60")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_processes(*args: str, timeout: float = 300) -> None:
    """``dist_worker.py args`` in two gloo processes on the CPU, started as torchrun (and ``--processes``) would."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}
    env.pop("QPNLP_DIST_BACKEND", None)
    procs = [subprocess.Popen([sys.executable, str(Path(__file__).parent / "dist_worker.py"), *args],
                              env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(2)]
    try:
        codes = [p.wait(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert codes == [0, 0]


def test_two_processes_resume_exactly_where_they_stopped(tmp_path, tiny_drift):
    """Every process's generators are in the checkpoint (gathered to rank 0, written once) and restored by their
    process: a resumed 2-process run equals the uninterrupted one bit for bit (on the CPU, gloo)."""
    corpus, _ = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    _two_processes(str(tmp_path / "c.tsv"), str(tmp_path / "whole"), str(tmp_path / "ck"), "cpu", "train")
    metadata = read_model_header(tmp_path / "ck-epoch1")["metadata"]  # the resumed run overwrites it
    states = [_run_state.saved_rng(tmp_path / "ck-epoch1", metadata, r) for r in range(3)]
    _two_processes(str(tmp_path / "c.tsv"), str(tmp_path / "resumed"), str(tmp_path / "ck-epoch1"), "cpu", "resume")
    for r in range(2):
        a, b = np.load(tmp_path / f"whole-rank{r}.npz"), np.load(tmp_path / f"resumed-rank{r}.npz")
        for key in a.files:
            if key != "tokens":  # the resumed run counts its one epoch
                np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert metadata["epochs_done"] == 1 and "rng" not in metadata and "rng_by_rank" not in metadata
    assert states[0] is not None and states[1] is not None and states[0] != states[1] and states[2] is None


def test_two_processes_pretrain_the_frozen_compass_on_their_own_negatives_and_share_it(tmp_path, tiny_drift):
    """``compass="frozen"`` in two processes: each pre-trains the static model on negatives from its own stream
    (before, both drew the very same negatives from ``seed``), and the compass they freeze is one (gloo, CPU)."""
    corpus, _ = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    _two_processes(str(tmp_path / "c.tsv"), str(tmp_path / "p"), str(tmp_path / "ck"), "cpu", "compass")
    a, b = np.load(tmp_path / "p-rank0.npz"), np.load(tmp_path / "p-rank1.npz")
    assert a["first_draws"].shape[0] == 2  # the compass pre-training's first draw, then the model's
    assert not np.array_equal(a["first_draws"][0], b["first_draws"][0])  # the compass's negatives: one stream each
    assert not np.array_equal(a["first_draws"][1], b["first_draws"][1])
    one_process = torch.Generator().manual_seed(0).get_state().numpy()  # rank 0 keeps the one-process stream
    np.testing.assert_array_equal(a["first_draws"][0], one_process)
    assert np.abs(a["compass.weight"]).sum() > 0  # it was trained
    for key in a.files:
        if key != "first_draws":
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)  # one compass, one model


def test_processes_given_the_files_in_another_order_are_refused(tmp_path, tiny_drift):
    """The processes split a stream's files by position: process 1 listing them in another order (an unsorted
    glob) trained both processes on the first file and never read the second, silently; now every process
    refuses the run, naming the process and the file."""
    corpus, _ = tiny_drift
    n = len(corpus) // 8
    for name, part in (("a.tsv", slice(0, n)), ("b.tsv", slice(n, 2 * n))):
        write_tsv(TimestampedCorpus(corpus.times[part], corpus.docs[part]), tmp_path / name)
    files = f"{tmp_path / 'a.tsv'},{tmp_path / 'b.tsv'}"
    _two_processes(files, str(tmp_path / "error"), str(tmp_path / "ck"), "cpu", "order")
    for r in range(2):
        assert (tmp_path / f"error-rank{r}.txt").read_text().startswith(
            "process 1 of 2 was given another corpus than process 0 (its file 1 is b.tsv (")


def test_a_process_that_fails_alone_fails_every_process_at_once(tmp_path):
    """One process fails between two collectives (a missing file, a bad line of its shard, other options, its
    batches, drawing its pairs on the drawing thread, writing or putting back the checkpoint, on_epoch) and catches
    its error, as a program calling shutdown() does: the other process waited for it in the next collective until
    the group's timeout (30 min), or, where it exited, failed with only "Connection closed by peer"; now every
    process raises at once, the failing one its own error, the others one naming it, and the group stays usable
    (shutdown() passes)."""
    import json

    good = "".join(f"{1900 + i % 20}\twar peace trade army navy\n" for i in range(300))
    for name, text in (("a.tsv", good), ("b.tsv", good + "19x0\twar peace\n" + good), ("c.tsv", good)):
        (tmp_path / name).write_text(text)
    ck = tmp_path / "ck"
    _two_processes(str(tmp_path), str(tmp_path / "e"), str(ck), "cpu", "fail", timeout=240)
    errors = [json.loads((tmp_path / f"e-rank{r}.json").read_text()) for r in range(2)]
    failing = {"missing file": (1, "FileNotFoundError: ", "reading the corpus's files"),
               "bad line": (1, f"ValueError: {tmp_path / 'b.tsv'}:301: time '19x0' is not a number",
                            "counting its shard of the corpus"),
               "options": (1, "ValueError: dim must be >= 1; got 0", "preparing its model and its shard"),
               "batches": (1, "OSError: [Errno 28] No space left on device", "training its batches"),
               "drawing": (1, "OSError: [Errno 28] No space left on device", "training its batches"),
               "checkpoint": (0, "OSError: [Errno 28] No space left on device", f"writing the checkpoint {ck}"),
               "on_epoch": (1, "KeyboardInterrupt", "in on_epoch after epoch 1"),
               "Ctrl-C in batches": (1, "KeyboardInterrupt", "training its batches"),
               "put back": (0, "OSError: [Errno 28]", f"putting back the checkpoint {ck}")}
    for name, (r, error, what) in failing.items():
        own, other = errors[r][name], errors[1 - r][name]
        assert own.startswith(error), (name, own)
        assert other == f"ProcessFailed: process {r} of 2 failed {what}: {own}", name
    assert errors[1]["other checkpoint"] == (f"ValueError: process 1 of 2 finds no training run at {ck}-1, process 0 "
                                             f"a run of 1 epochs: every process must resume from the same "
                                             f"checkpoint, a directory that they all see")
    assert errors[0]["other checkpoint"].startswith("ValueError: process 1 of 2 finds no training run at ")
    assert errors[0]["on_epoch of process 0"] is None and errors[1]["on_epoch of process 0"] is None
    assert errors[1]["Ctrl-C waited for the segment"] is True     # Ctrl-C waits for the others' segment (documented)


def test_fail_together_not_together_is_a_plain_block_even_in_an_open_group(monkeypatch):
    """A process training alone (no ParameterSync, no reduce) while a group is open: no collective, its own error."""
    from qpnlp.word2fun import distributed

    monkeypatch.setattr(distributed, "_dist", lambda: pytest.fail("fail_together(together=False) asked for the group"))
    with pytest.raises(ValueError, match="its own"), distributed.fail_together("training", together=False):
        raise ValueError("its own")


def test_the_group_timeout_is_read_from_the_environment(monkeypatch):
    """``QPNLP_DIST_TIMEOUT`` bounds every wait of the group (torch's 30 minutes otherwise); a bad value is refused."""
    import datetime

    from qpnlp.word2fun import distributed

    monkeypatch.delenv("QPNLP_DIST_TIMEOUT", raising=False)
    assert distributed._timeout() is None
    monkeypatch.setenv("QPNLP_DIST_TIMEOUT", "90")
    assert distributed._timeout() == datetime.timedelta(seconds=90)
    monkeypatch.setenv("WORLD_SIZE", "2")
    for bad in ("soon", "0", "-5", "nan", "inf", "1e14"):      # 1e14: timedelta's OverflowError named no variable
        monkeypatch.setenv("QPNLP_DIST_TIMEOUT", bad)
        with pytest.raises(ValueError, match="QPNLP_DIST_TIMEOUT must be a number of seconds > 0"):
            distributed.setup("cpu")


@pytest.mark.skipif(shutil.which("torchrun", path=str(Path(sys.executable).parent)) is None, reason="no torchrun")
def test_two_processes_started_by_torchrun_keep_one_model(tmp_path, tiny_drift, device):
    """On the test device: gloo on CPU; on CUDA, NCCL with a GPU per process, else gloo on one shared GPU."""
    corpus, truth = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    torchrun = str(Path(sys.executable).parent / "torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if device.type == "cuda" and torch.cuda.device_count() < 2:
        env["QPNLP_DIST_BACKEND"] = "gloo"
    subprocess.run([torchrun, "--nproc-per-node", "2", "--master-port", "29571", str(Path(__file__).parent / "dist_worker.py"),
                    str(tmp_path / "c.tsv"), str(tmp_path / "p"), str(tmp_path / "ck"), str(device)], check=True,
                   env=env, timeout=300)
    a, b = np.load(tmp_path / "p-rank0.npz"), np.load(tmp_path / "p-rank1.npz")
    assert int(a["world"]) == 2 and int(a["tokens"]) == 2 * corpus.n_tokens  # both processes' tokens, 2 epochs
    for key in a.files:
        np.testing.assert_array_equal(a[key], b[key])  # one model after the last synchronisation
    saved = KeyedVectors.from_pretrained(tmp_path / "ck")  # written once, by rank 0, loadable
    assert read_model_header(tmp_path / "ck")["metadata"]["processes"] == 2
    np.testing.assert_array_equal(saved.model.compass.weight.detach().cpu().numpy(), a["compass.weight"])
    words = list(truth.words) + [w for tw in truth.topic_words for w in tw]
    r = evaluate_grid(DriftGrid(saved.grid(words, truth.years), words, truth.years), truth)
    assert r["auc"] >= 0.8 and r["acc_after"] >= 0.6  # it learned the drift from both shards


def test_the_cli_starts_its_own_processes_and_reports_one_run(tmp_path, tiny_drift, monkeypatch, capfd):
    """``qpnlp train word2fun --processes 2``: two processes as torchrun starts them, one report, one checkpoint."""
    import json

    from qpnlp.cli import main

    corpus, _ = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    argv = ["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--dim", "8", "--epochs", "1", "--min-count",
            "3", "--no-progress", "--processes", "2"]
    assert main([*argv, "--report", str(tmp_path / "r.json"), "--out", str(tmp_path / "ck")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "completed" and report["details"]["training"]["processes"] == 2
    assert report["details"]["training"]["tokens"] == corpus.n_tokens          # the two shards make the corpus
    assert read_model_header(tmp_path / "ck")["metadata"]["processes"] == 2
    # a process that fails: its exit status and one-line error, the others stopped, the report says why
    assert main([*argv, "--lr", "1e30", "--report", str(tmp_path / "bad.json")]) == 1
    assert json.loads((tmp_path / "bad.json").read_text())["status"] == "diverged"
    err = capfd.readouterr().err                               # the processes' own stderr
    assert "error: Word2Fun training diverged in epoch 1" in err and "Traceback" not in err
    monkeypatch.setenv("WORLD_SIZE", "3")                      # under torchrun, --processes must agree with it
    assert main([*argv, "--report", str(tmp_path / "mismatch.json")]) == 2
    assert "torchrun started 3 processes" in capfd.readouterr().err


def test_the_report_names_the_error_of_the_process_that_failed_first(tmp_path, monkeypatch, capfd):
    """``--processes 2`` whose process 1 fails on a bad line of its file: the report said "failed" with process
    0's "Connection closed by peer" (or "its error is above"), the cause only on stderr; now it carries process
    1's own error, and a last line on stderr names it."""
    import json

    from qpnlp.cli import main

    good = "".join(f"{1900 + i % 20}\twar peace trade army navy\n" for i in range(300))
    (tmp_path / "a.tsv").write_text(good)
    (tmp_path / "b.tsv").write_text(good + "19x0\twar peace\n" + good)      # process 1 reads b.tsv: line 301
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    argv = ["train", "word2fun", "--corpus", f"{tmp_path / 'a.tsv'},{tmp_path / 'b.tsv'}", "--stream", "--dim",
            "4", "--epochs", "1", "--min-count", "1", "--no-progress", "--processes", "2",
            "--report", str(tmp_path / "r.json")]
    assert main(argv) == 1
    line = f"{tmp_path / 'b.tsv'}:301: time '19x0' is not a number"
    cause = f"process 1 of 2 failed: {line}; the others were stopped"
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "failed" and report["error"] == cause
    err = capfd.readouterr().err
    assert f"error: {line}\n" in err and err.endswith(f"error: {cause} (the first error of the processes)\n")


def test_a_process_stopped_by_sigint_records_it_in_the_reports_words(tmp_path, monkeypatch):
    """A process stopped by SIGINT (``kill -INT``) recorded "KeyboardInterrupt: KeyboardInterrupt (run with
    --debug for the traceback)", which the command then printed as the process's failure; now "interrupted
    (SIGINT)", as the report of one process says (:meth:`Report.guard`)."""
    import json

    from qpnlp.commands import _processes

    monkeypatch.setenv(_processes.ERROR_FILE_VARIABLE, str(tmp_path / "e.json"))
    with pytest.raises(KeyboardInterrupt), _processes.records_error():
        raise KeyboardInterrupt
    record = json.loads((tmp_path / "e.json").read_text())
    assert record["status"] == "interrupted" and record["error"] == "interrupted (SIGINT)"


_KILLED_CHILD = """
import json, os, signal, sys, time
if os.environ["RANK"] == "1":
    time.sleep(2)
    os.kill(os.getpid(), signal.SIGKILL)
report = json.load(open(sys.argv[1])) if os.path.exists(sys.argv[1]) else {"status": "running"}
report["history"] = [{"epoch": 1, "train_loss": 0.5}]
json.dump(report, open(sys.argv[1], "w"))
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform == "win32",
                    reason="Windows: no signals kill a process (TerminateProcess gives an exit status)")
def test_a_process_killed_by_a_signal_is_named_and_the_report_finished(tmp_path, monkeypatch, capfd):
    """``--processes 2`` whose process 1 is killed (the out-of-memory killer's SIGKILL): the command printed
    nothing and exited with status 247 (-9), leaving the report "running"; now one line names the process and
    the signal, the status is 1 and the report is finished as failed, with the epoch process 0 recorded."""
    import json
    import subprocess

    from qpnlp.cli import main

    report, real = tmp_path / "r.json", subprocess.Popen

    def stand_in(command, **kwargs):      # each process as the command starts it, without the training
        return real([sys.executable, "-c", _KILLED_CHILD, str(report)], **kwargs)

    monkeypatch.setattr(subprocess, "Popen", stand_in)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    (tmp_path / "c.tsv").write_text("".join(f"{1900 + i}\ta b c\n" for i in range(6)))
    assert main(["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--min-count", "1", "--processes", "2",
                 "--report", str(report)]) == 1
    assert "error: process 1 of 2 was killed by SIGKILL (by the system: out of memory?)" in capfd.readouterr().err
    data = json.loads(report.read_text())
    assert data["status"] == "failed" and data["error"].startswith("process 1 of 2 was killed by SIGKILL")
    assert data["history"] == [{"epoch": 1, "train_loss": 0.5}]


_SIGTERM_DRIVER = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # Python leaves SIGINT ignored when started so (nohup, &)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})  # a harness may block them (CI did)
from qpnlp.cli import main
real, pids = subprocess.Popen, sys.argv[1]
child = "import os, sys, time\\nopen(sys.argv[1] + os.environ['RANK'], 'w').write(str(os.getpid()))\\ntime.sleep(120)"
subprocess.Popen = lambda command, **kwargs: real([sys.executable, "-c", child, pids], **kwargs)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.skipif(sys.platform == "win32",
                    reason="Windows: no SIGTERM or SIGINT to send to a process, no pthread_sigmask")
@pytest.mark.parametrize("signal_name, status, error", [("SIGTERM", 143, "stopped by SIGTERM"),
                                                         ("SIGINT", 130, "interrupted (SIGINT)")])
def test_the_processes_are_stopped_with_the_command_on_sigterm(tmp_path, signal_name, status, error):
    """``kill`` or ``timeout`` sends the command SIGTERM: it ended at once and its two processes trained on,
    orphaned; now it stops them, finishes the report as interrupted and exits with status 143. Ctrl-C
    (SIGINT) stopped them too, but left the report "running" (the first process was stopped before it could
    finish it): it is finished as interrupted, status 130."""
    import json
    import signal
    import time

    (tmp_path / "c.tsv").write_text("".join(f"{1900 + i}\ta b c\n" for i in range(6)))
    argv = ["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--min-count", "1", "--processes", "2",
            "--report", str(tmp_path / "r.json")]
    env = {k: v for k, v in os.environ.items() if k != "WORLD_SIZE"}
    driver = subprocess.Popen([sys.executable, "-c", _SIGTERM_DRIVER, str(tmp_path / "pid"), *argv], env=env)
    files = [tmp_path / f"pid{r}" for r in range(2)]
    pids: list[int] = []
    try:
        for _ in range(600):
            if all(f.is_file() and f.read_text() for f in files):
                break
            time.sleep(0.1)
        pids = [int(f.read_text()) for f in files]
        driver.send_signal(getattr(signal, signal_name))
        assert driver.wait(timeout=60) == status
        time.sleep(0.5)
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["status"] == "interrupted" and report["error"].startswith(error)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if driver.poll() is None:
            driver.kill()


class _LocalSync:
    """A one-process stand-in for ParameterSync: the segmented loop without collectives."""

    def __init__(self):
        self.rounds = 0

    def step(self, has_more, error=None):
        self.rounds += 1
        if error is not None:
            raise error
        return has_more


@pytest.mark.parametrize("sync_every", [1, 3])
def test_the_segmented_loop_of_distributed_runs_trains_like_the_plain_loop(tiny_drift, make, sync_every):
    from qpnlp.data import Vocabulary
    from qpnlp.word2fun.loop import train_source
    from qpnlp.word2fun.sources import ArraySource

    corpus, truth = tiny_drift
    vocab = Vocabulary.build(corpus.docs, min_freq=3, specials=False)
    enc = corpus.encode(vocab)
    source = ArraySource(enc.tokens, enc.doc_ids, enc.times)
    cfg = TrainConfig(epochs=2, batch_size=1024, sync_every=sync_every, seed=1)
    plain, segmented = make(len(vocab), 8, family="IV", seed=1), make(len(vocab), 8, family="IV", seed=1)
    a = train_source(plain, source, vocab.counts, cfg)
    sync = _LocalSync()
    b = train_source(segmented, source, vocab.counts, cfg, sync=sync)
    assert sync.rounds > 2 * 10 // sync_every  # it did synchronise, many times per epoch
    assert a.epoch_loss == b.epoch_loss  # the same learning-rate schedule and the same updates
    for p, q in zip(plain.parameters(), segmented.parameters()):
        assert torch.equal(p, q)


def test_replicas_in_a_distributed_run_share_each_process_segment(tiny_drift, make):
    """Each process's ``sync_every`` batches are trained by its replicas in segments of their own: with
    ``sync_every`` a multiple of ``workers x replica_sync_every`` the segments are those of a run of one process."""
    from qpnlp.data import Vocabulary
    from qpnlp.word2fun.loop import train_source
    from qpnlp.word2fun.sources import ArraySource

    corpus, _ = tiny_drift
    vocab = Vocabulary.build(corpus.docs, min_freq=3, specials=False)
    enc = corpus.encode(vocab)
    source = ArraySource(enc.tokens, enc.doc_ids, enc.times)
    cfg = TrainConfig(epochs=2, batch_size=256, seed=1, workers=2, parallel="replicas", replica_sync_every=2,
                      sync_every=8)
    plain, segmented = make(len(vocab), 8, family="IV", seed=1), make(len(vocab), 8, family="IV", seed=1)
    a = train_source(plain, source, vocab.counts, cfg)
    sync = _LocalSync()
    b = train_source(segmented, source, vocab.counts, cfg, sync=sync)
    assert sync.rounds > 8
    assert a.epoch_loss == b.epoch_loss
    assert all(torch.equal(p, q) for p, q in zip(plain.parameters(), segmented.parameters()))


def test_a_bad_backend_name_is_refused(monkeypatch):
    from qpnlp.word2fun.distributed import setup

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("QPNLP_DIST_BACKEND", "mpi")
    with pytest.raises(ValueError, match="QPNLP_DIST_BACKEND"):
        setup("cpu")


def test_the_collectives_reduce_cpu_values_under_nccl(tmp_path, device):
    """all_sum / all_min_max / all_reduce_sum take CPU values; NCCL reduces CUDA tensors only."""
    import torch.distributed as dist

    from qpnlp.word2fun import distributed

    if device.type != "cuda" or not dist.is_nccl_available():
        pytest.skip("NCCL needs CUDA: run the suite with QPNLP_TEST_DEVICE=cuda")
    dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        assert distributed.all_sum([1.0, 2.5]) == [1.0, 2.5]
        assert distributed.all_min_max(3.0, 7.0) == (3.0, 7.0)
        counts = torch.arange(4, dtype=torch.float64)
        distributed.all_reduce_sum(counts)
        assert counts.device.type == "cpu" and counts.tolist() == [0.0, 1.0, 2.0, 3.0]
        model = torch.nn.Linear(3, 2).to(device)
        sync = distributed.ParameterSync(model)
        with torch.no_grad():
            model.weight.add_(1.0)
        assert sync.step(False) is False and sync.rounds == 1
    finally:
        dist.destroy_process_group()


class _EqualProcesses:
    """A stand-in for a group of ``n`` processes that made the same update: ``all_reduce`` multiplies it by ``n``."""

    def __init__(self, n: int = 2):
        self.n = n

    def all_reduce(self, tensor, op=None):
        tensor.mul_(self.n)

    def broadcast(self, tensor, src=0):
        pass


def test_the_summed_updates_keep_the_logistic_steps_in_their_range(make, monkeypatch):
    """Each process projects its steps' centres and rates; the sum of the processes' updates is projected again."""
    import math

    from qpnlp.word2fun import distributed
    from qpnlp.word2fun.model import STEP_RATE_MAX, STEP_RATE_MIN
    from qpnlp.word2fun.step_sizes import step_bounds

    monkeypatch.setattr(distributed, "_dist", lambda: _EqualProcesses())
    model = make(3, 4, family="IV", logistic=True)
    log = lambda *k: torch.tensor([[math.log(x)] for x in k])  # noqa: E731
    with torch.no_grad():  # the synchronised state
        model.step_centre.weight.copy_(torch.tensor([[0.8], [0.3], [0.5]]))
        model.step_rate.weight.copy_(log(150.0, 12.0, 30.0))
    sync = distributed.ParameterSync(model, bounds=step_bounds(model))
    with torch.no_grad():  # each process's projected step: 0.8 -> 1, 0.3 -> 0, rates 150 -> 200, 12 -> 10
        model.step_centre.weight.copy_(torch.tensor([[1.0], [0.0], [0.6]]))
        model.step_rate.weight.copy_(log(STEP_RATE_MAX, STEP_RATE_MIN, 40.0))
    sync.step(False)
    torch.testing.assert_close(model.step_centre.weight, torch.tensor([[1.0], [0.0], [0.7]]))  # not 1.2 and -0.3
    torch.testing.assert_close(model.step_rate.weight, log(STEP_RATE_MAX, STEP_RATE_MIN, 40.0 ** 2 / 30.0))
    for p, s in zip(sync.params, sync.snapshot):  # the next round starts from the projected values
        assert torch.equal(p, s)
    assert step_bounds(make(3, 4, family="IV")) == {}


@pytest.mark.parametrize("processes, factor", [(2, 2.0), (3, 2.0), (4, 2.0)])
def test_a_row_more_than_two_processes_changed_takes_two_of_their_updates(make, monkeypatch, processes, factor):
    """Summed, the same update of three processes moved a row three times as far (four: four times), and
    training on the State of the Union corpus overshot (5x the loss of one process in the first epoch); now a row
    that ``k`` > 2 processes changed takes ``2 / k`` of the sum, rows that none changed stay."""
    from qpnlp.word2fun import distributed

    monkeypatch.setattr(distributed, "_dist", lambda: _EqualProcesses(processes))
    model = make(3, 4, family="IV")
    sync = distributed.ParameterSync(model)
    before = model.base.weight.detach().clone()
    with torch.no_grad():
        model.base.weight[0] += 0.5
    assert sync.step(False) is False
    torch.testing.assert_close(model.base.weight[0], before[0] + factor * 0.5, rtol=0, atol=1e-6)
    assert torch.equal(model.base.weight[1:], before[1:])


@pytest.mark.skipif(sys.platform == "win32",
                    reason="Windows: no pthread_sigmask or preexec_fn; terminate() kills at once")
def test_a_process_that_blocks_sigterm_is_killed_after_the_grace_period():
    """The launcher stops its processes with SIGTERM and waited for them without limit: one that blocks SIGTERM
    (a mask inherited from whatever started the command, as the CI harness did) or hangs kept the command
    waiting forever. Now it is killed once the grace period is over."""
    import signal
    import time

    from qpnlp.commands._processes import _stop

    child = "import signal, sys, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n" \
            "print('ready', flush=True)\ntime.sleep(60)"
    def unblocked():                                  # the suite may run with SIGTERM blocked (CI did)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

    quick = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True, preexec_fn=unblocked)
    stubborn = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        assert quick.stdout.readline() == "ready\n" and stubborn.stdout.readline() == "ready\n"
        start = time.monotonic()
        _stop([quick, stubborn], grace=1.0)
        assert time.monotonic() - start < 30
        assert quick.returncode == -signal.SIGTERM and stubborn.returncode == -signal.SIGKILL
    finally:
        for p in (quick, stubborn):
            if p.poll() is None:
                p.kill()
            p.stdout.close()
