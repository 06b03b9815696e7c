"""Several processes or threads using qpnlp at once: saves of one directory, runs given one training state, the
model registry, models built or queried in threads, vectors loaded and trainings run in threads. Each race is
reproduced deterministically (a rename, a lookup or a step made to come in between, with events)."""

import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest
import torch

from qpnlp import _atomic
from qpnlp._atomic import LOCK_FILE, atomic_directory, check_replaceable, locked_directory


def _save(directory: Path, text: str) -> None:
    with atomic_directory(directory, replaces="config.json") as tmp:
        (tmp / "config.json").write_text('{"format": "qpnlp-test"}')
        (tmp / "weights").write_text(text)


# --------------------------------------------------------------------------- saves of one directory
def test_a_save_whose_directory_another_save_moved_aside_meanwhile_is_kept_whole(tmp_path, monkeypatch):
    """Two processes saving one directory at once (folds started together, one --save): the second one's move of
    the old directory found it gone, moved aside by the first between its two renames, and the save raised
    FileNotFoundError after the whole training; it is tried again and the last save is kept."""
    target = tmp_path / "model"
    _save(target, "old")
    rename, raced = os.rename, []

    def other_save_moves_it_aside_first(src, dst):
        if Path(src) == target and not raced:           # the other process's first rename came first
            raced.append(True)
            rename(target, tmp_path / "elsewhere")
        return rename(src, dst)

    monkeypatch.setattr(_atomic.os, "rename", other_save_moves_it_aside_first)
    _save(target, "new")
    assert raced and (target / "weights").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "model"]     # no .model.*.tmp or .old


def test_a_save_that_finds_another_save_in_place_replaces_it_and_leaves_no_old_copy(tmp_path, monkeypatch):
    """The other process put its directory in place between this one's two renames: the second rename met a
    non-empty directory, and this one's old directory stayed aside (.model.*.old) with an error."""
    target = tmp_path / "model"
    _save(target, "old")
    rename, raced = os.rename, []

    def other_save_lands_in_between(src, dst):
        if Path(dst) == target and not raced:
            raced.append(True)
            target.mkdir()
            (target / "weights").write_text("other")
        return rename(src, dst)

    monkeypatch.setattr(_atomic.os, "rename", other_save_lands_in_between)
    _save(target, "new")
    assert raced and (target / "weights").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_the_check_before_a_save_does_not_refuse_a_directory_another_save_replaced_meanwhile(tmp_path, monkeypatch):
    """check_replaceable looked at the directory while another save moved it aside: "exists and is not a
    directory", or "holds no config.json written by qpnlp"; a save of a model refused as a user's directory."""
    target = tmp_path / "model"
    _save(target, "old")
    written_by_qpnlp, raced = _atomic.written_by_qpnlp, []

    def replaced_while_looked_at(path):
        if not raced:
            raced.append(True)
            _save(target, "other")                      # a new directory (another inode) at the same path
            return False                                 # the config.json was not there when it was read
        return written_by_qpnlp(path)

    monkeypatch.setattr(_atomic, "written_by_qpnlp", replaced_while_looked_at)
    assert check_replaceable(target, replaces="config.json") == target and raced
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="refusing to replace it"):       # a user's directory still is refused
        check_replaceable(tmp_path / "user", replaces="config.json")


# --------------------------------------------------------------------------- one training state, two runs
def _hold(directory: str, held, release, beside: bool = False) -> None:
    with locked_directory(directory, beside=beside):
        held.set()
        release.wait(60)


def test_a_directory_locked_by_another_process_is_refused_naming_it(tmp_path):
    context = multiprocessing.get_context("spawn")
    held, release = context.Event(), context.Event()
    other = context.Process(target=_hold, args=(str(tmp_path / "state"), held, release))
    other.start()
    try:
        assert held.wait(60)
        with pytest.raises(BlockingIOError, match=rf"in use by another process \(process {other.pid} on "):
            with locked_directory(tmp_path / "state"):
                pass
    finally:
        release.set()
        other.join(60)
    with locked_directory(tmp_path / "state") as locked:                     # released when the process ended
        assert locked and (tmp_path / "state" / LOCK_FILE).is_file()


def test_a_second_run_given_the_training_state_of_a_running_one_is_refused_before_touching_it(tmp_path, capsys):
    """Two runs with one --save (or --checkpoint-dir) at once: the second cleared the first's training state as an
    earlier run's (or resumed from it) and wrote its own epochs among the first's, without a word."""
    from qpnlp.cli import main

    state = tmp_path / "state"
    argv = ["train", "qpdn", "--dataset", "mr", "--data", str(tmp_path / "data"), "--no-select",
            "--checkpoint-dir", str(state), "--no-progress"]
    with locked_directory(state):                      # the first run, still training
        (state / "training-run.json").write_text('{"format": "qpnlp-training-run/1"}')
        (state / "fold-1").mkdir()
        for extra in ([], ["--resume"]):
            assert main(argv + extra) == 1
            error = capsys.readouterr().err
            assert f"--checkpoint-dir: {state} is in use by another process (process {os.getpid()} on" in error
            assert "another run keeps its training state there" in error
        assert (state / "fold-1").is_dir()                                      # not cleared
    main(argv)                                         # the first run ended: the state is cleared, its lock kept
    error = capsys.readouterr().err
    assert "the training state of an earlier run" in error and "in use" not in error
    assert not (state / "fold-1").exists() and (state / LOCK_FILE).is_file()
    assert "exit_stack" not in json.loads((state / "training-run.json").read_text())["arguments"]     # the lock's


def test_a_second_word2fun_run_given_the_out_of_a_running_one_is_refused_before_reading_the_corpus(
        tmp_path, monkeypatch, capsys):
    """Two ``qpnlp train word2fun`` runs with one --out at once: each checkpoint was whole, but the last writer won
    and the runs overwrote each other's epochs, without a word. --out is replaced by every save, so its lock is the
    file .out.lock beside it, held by the first run (here another process); the second is refused naming it."""
    from qpnlp.cli import main
    from qpnlp.commands import word2fun

    read = []
    monkeypatch.setattr(word2fun, "_load_corpus", lambda *a: read.append(a) or pytest.fail("corpus read"))
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv(word2fun.LOCKED_OUT_VARIABLE, raising=False)
    out = tmp_path / "runs" / "out"
    argv = ["train", "word2fun", "--corpus", "sotu", "--out", f"{out}/", "--no-progress"]
    context = multiprocessing.get_context("spawn")
    held, release = context.Event(), context.Event()
    other = context.Process(target=_hold, args=(str(tmp_path / "runs" / "." / "out"), held, release, True))
    other.start()
    try:
        assert held.wait(60)
        assert main(argv) == 1
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and f"--out: {out} is in use by another process (process {other.pid} on" in error
        assert "another run keeps its checkpoints there" in error and not read and not out.exists()
    finally:
        release.set()
        other.join(60)
    assert (tmp_path / "runs" / ".out.lock").is_file() and sorted(os.listdir(tmp_path)) == ["runs"]
    with pytest.raises(pytest.fail.Exception, match="corpus read"):      # the first run ended: this one goes on
        main(argv)
    assert read


def test_every_process_of_a_torchrun_job_given_a_locked_out_is_refused_with_one_line(tmp_path):
    """Under torchrun only the first process took the lock of --out and refused; the others read the corpus and
    waited for it in fit until torchrun stopped them (or the group's timeout), without a line of their own. Now
    the first one's answer reaches every process before any work: each ends with the same one line."""
    import socket
    import subprocess
    import sys

    (tmp_path / "c.tsv").write_text("".join(f"{1900 + i}\twar peace trade\n" for i in range(20)))
    out = tmp_path / "out"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port), "QPNLP_DIST_TIMEOUT": "60", "QPNLP_DIST_BACKEND": "gloo"}
    env.pop("QPNLP_LOCKED_OUT", None)
    argv = [sys.executable, "-m", "qpnlp.cli", "train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--out",
            str(out), "--min-count", "1", "--dim", "2", "--epochs", "1", "--no-progress"]
    with locked_directory(out, beside=True):                  # the first run, still training
        procs = [subprocess.Popen(argv, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for r in range(2)]
        try:
            ended = [p.communicate(timeout=120) for p in procs]
        finally:
            for p in procs:
                p.kill()
    line = (f"qpnlp train word2fun: error: --out: {out} is in use by another process (process {os.getpid()} on "
            f"{socket.gethostname()}): another run keeps its checkpoints there; wait for it to end, or give this run "
            f"another --out\n")
    assert [p.returncode for p in procs] == [1, 1] and [stderr for _, stderr in ended] == [line, line]
    assert not out.exists()


# --------------------------------------------------------------------------- threads
def _second_once_first_is_in(first: threading.Thread, inside: threading.Event, second: threading.Thread) -> None:
    """Start ``first``, then ``second`` once ``first`` has set ``inside`` (the interleaving a test forces), and wait
    for both."""
    first.start()
    assert inside.wait(30)
    second.start()
    first.join(60)
    second.join(60)


class _AskProbe:
    """A lock that notes when ``thread()`` asks for it (``asked`` is set before it waits); reentrant or not."""

    def __init__(self, thread, asked, reentrant: bool = False):
        self.lock, self.thread, self.asked = (threading.RLock() if reentrant else threading.Lock()), thread, asked

    def __enter__(self):
        if threading.current_thread() is self.thread():
            self.asked.set()
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


def test_a_thread_looking_up_a_model_while_another_loads_the_plugins_waits_for_them(monkeypatch):
    """Two threads asking for a plugin's model at once (a web server's first requests): the second found the
    plugins marked loaded while the first was still loading them and raised "unknown model"."""
    from qpnlp.models import QPDN, base, get_model_class, register_model, unregister_model

    class Plugin(QPDN):
        pass

    loading, second_waits = threading.Event(), threading.Event()

    class SlowEntryPoint:
        name, value = "slow", "tests.slow_plugin"

        def load(self):
            loading.set()
            second_waits.wait(30)
            register_model("threaded-plugin")(Plugin)

    monkeypatch.setattr(base.importlib.metadata, "entry_points", lambda group: [SlowEntryPoint()])
    monkeypatch.setattr(base, "_LOADED", False)
    monkeypatch.setattr(base, "_LOADING", _AskProbe(lambda: second, second_waits, reentrant=True), raising=False)
    found = {}

    def look_up(key):
        try:
            found[key] = get_model_class("threaded-plugin")
        except Exception as error:  # noqa: BLE001 - recorded for the assertion
            found[key] = error

    first = threading.Thread(target=look_up, args=("first",))
    second = threading.Thread(target=look_up, args=("second",))
    try:
        _second_once_first_is_in(first, loading, second)
    finally:
        unregister_model("threaded-plugin")
    assert found == {"first": Plugin, "second": Plugin}


def test_measurements_built_with_generators_in_two_threads_at_once_are_those_built_alone(monkeypatch):
    """torch's orthogonal parametrisation completes k < d rows from the global RNG, which ``generator=`` seeds in
    a fork for the construction: two threads building at once (models built in a thread pool) each seeded the one
    process-wide RNG, and each drew the other's completion (QPDN with orthonormal or POVM heads, CNM's POVMs)."""
    from qpnlp.measurement import ProjectiveMeasurement, _module

    def build(seed):
        m = ProjectiveMeasurement(8, 3, orthonormal=True, generator=torch.Generator().manual_seed(seed))
        return {name: value.detach().clone() for name, value in m.state_dict().items()}

    alone = {seed: build(seed) for seed in (0, 1)}
    first_inside, second_arrived, first_done = threading.Event(), threading.Event(), threading.Event()
    orthogonal = _module.orthogonal

    def interleaved(module, name):
        """The first thread draws only once the second is in its block too (or waits for the lock)."""
        if threading.current_thread() is second:
            second_arrived.set()
            assert first_done.wait(30)
        else:
            first_inside.set()
            assert second_arrived.wait(30)
        result = orthogonal(module, name)
        if threading.current_thread() is not second:
            first_done.set()
        return result

    monkeypatch.setattr(_module, "orthogonal", interleaved)
    monkeypatch.setattr(_module, "_GLOBAL_RNG_LOCK", _AskProbe(lambda: second, second_arrived, reentrant=True),
                        raising=False)
    built = {}

    def run(seed):
        try:
            built[seed] = build(seed)
        except Exception as error:  # noqa: BLE001 - recorded for the assertion
            built[seed] = error

    first = threading.Thread(target=run, args=(0,))
    second = threading.Thread(target=run, args=(1,))
    _second_once_first_is_in(first, first_inside, second)
    for seed in (0, 1):
        assert not isinstance(built[seed], Exception), built[seed]
        assert built[seed].keys() == alone[seed].keys()
        assert all(torch.equal(built[seed][name], alone[seed][name]) for name in alone[seed]), seed


def test_vectors_loaded_by_two_threads_at_once_are_read_once(tmp_path, monkeypatch):
    """``load_vectors`` promises one read per process, but two threads asking at once (a thread pool's first
    requests) both found the cache empty and both read the file: twice the time, and two copies in memory."""
    from qpnlp.data import vectors

    path = tmp_path / "glove.txt"
    path.write_text("a 1 2\nb 3 4\n")
    read, first_reading, second_arrived = [], threading.Event(), threading.Event()
    load_glove_text = vectors.load_glove_text

    def slow_read(*args, **kwargs):
        """The first read goes on only once the second thread reads too (or waits for the cache)."""
        read.append(threading.current_thread())
        if threading.current_thread() is second:
            second_arrived.set()
        else:
            first_reading.set()
            assert second_arrived.wait(30)
        return load_glove_text(*args, **kwargs)

    monkeypatch.setattr(vectors, "load_glove_text", slow_read)
    monkeypatch.setattr(vectors._read_cached, "new_lock", lambda: _AskProbe(lambda: second, second_arrived, True))
    vectors._read_cached.cache_clear()
    loaded = {}
    first = threading.Thread(target=lambda: loaded.setdefault("first", vectors.load_vectors(path)))
    second = threading.Thread(target=lambda: loaded.setdefault("second", vectors.load_vectors(path)))
    try:
        _second_once_first_is_in(first, first_reading, second)
    finally:
        vectors._read_cached.cache_clear()
    assert read == [first] and loaded["first"].vectors is loaded["second"].vectors
    assert loaded["second"].vector("b").tolist() == [3.0, 4.0]


def test_a_loop_two_threads_ask_for_at_once_is_compiled_once(monkeypatch):
    """``qpnlp._numba.jit`` was a ``functools.cache``: two threads asking for one compiled loop at once (the first
    steps of a thread pool) both found it missing and each made a numba dispatcher, each compiled at its first call
    (seconds each). The second thread now waits for the first and gets its dispatcher (the fake numba lets the
    first go on only once the second makes one too, or waits for the first)."""
    import sys
    import types

    from qpnlp import _numba

    compiled, first_compiling, second_arrived = [], threading.Event(), threading.Event()

    def njit(**options):
        def compile_loop(fn):
            compiled.append(threading.current_thread())
            if threading.current_thread() is second:
                second_arrived.set()
            else:
                first_compiling.set()
                assert second_arrived.wait(30)
            return lambda x: fn(x)
        return compile_loop

    def add_one(x):  # a loop no other test compiled (jit caches per function)
        return x + 1

    monkeypatch.setitem(sys.modules, "numba", types.SimpleNamespace(njit=njit))
    monkeypatch.setattr(_numba.jit, "new_lock", lambda: _AskProbe(lambda: second, second_arrived, True),
                        raising=False)
    loops = {}
    first = threading.Thread(target=lambda: loops.setdefault("first", _numba.jit(add_one)))
    second = threading.Thread(target=lambda: loops.setdefault("second", _numba.jit(add_one)))
    _second_once_first_is_in(first, first_compiling, second)
    assert compiled == [first] and loops["first"] is loops["second"] and loops["second"](2) == 3


def test_two_threads_loading_two_vector_files_read_them_at_once(tmp_path, monkeypatch):
    """The cache of the vectors held one lock for every file: a thread loading small vectors waited until another
    had read large ones. Each file has its own lock now: the first thread's read goes on only once the second
    thread reads its file too (with one lock the second waited for the first, and the first for it)."""
    from qpnlp.data import vectors

    paths = [tmp_path / "small.txt", tmp_path / "large.txt"]
    for i, path in enumerate(paths):
        path.write_text(f"a {i} 2\nb 3 4\n")
    read, first_reading, second_reading = [], threading.Event(), threading.Event()
    load_glove_text = vectors.load_glove_text

    def slow_read(path, *args, **kwargs):
        read.append(Path(path).name)
        if threading.current_thread() is second:
            second_reading.set()
        else:
            first_reading.set()
            assert second_reading.wait(30), "the second file was not read while the first was"
        return load_glove_text(path, *args, **kwargs)

    monkeypatch.setattr(vectors, "load_glove_text", slow_read)
    vectors._read_cached.cache_clear()
    loaded = {}
    first = threading.Thread(target=lambda: loaded.setdefault("first", vectors.load_vectors(paths[1])))
    second = threading.Thread(target=lambda: loaded.setdefault("second", vectors.load_vectors(paths[0])))
    try:
        _second_once_first_is_in(first, first_reading, second)
        assert loaded.keys() == {"first", "second"} and sorted(read) == ["large.txt", "small.txt"]
        assert [loaded[k].vector("a").tolist() for k in ("second", "first")] == [[0.0, 2.0], [1.0, 2.0]]
        assert vectors.load_vectors(paths[0]).vectors is loaded["second"].vectors and len(read) == 2   # cached
        assert vectors._read_cached.cache_info().currsize == 2
    finally:
        vectors._read_cached.cache_clear()
    assert vectors._read_cached.cache_info().currsize == 0


def test_one_model_queried_from_four_threads_at_once_gives_the_results_of_one_thread():
    """A trained model served by a thread pool: forward passes, ``predict``-style scoring, the interpretation
    functions and Word2Fun's keyed-vector queries change no state of the model, so four threads querying it at
    once (released together by a barrier) get what one thread gets, bit for bit."""
    from qpnlp.data import Vocabulary
    from qpnlp.interpret import importance_table, measurement_words
    from qpnlp.models import get_model_class
    from qpnlp.word2fun import KeyedVectors

    words = Vocabulary.build([[f"w{i}" for i in range(28)]])
    temporal = Vocabulary.build([[f"w{i}" for i in range(30)]], specials=False)
    small = {"qpdn": dict(num_classes=3, dim=6, num_measurements=9, povm_rank=1, measurement="povm",
                          weighting="trainable"),
             "cnm": dict(dim=6, num_measurements=4, windows=[1, 2]),
             "order_classifier": dict(num_classes=3, dim=4, network="transformer", heads=2),
             "cgrnn_classifier": dict(num_classes=3, dim=4, hidden=5),
             "word2fun": dict(vocab_size=30, dim=4, family="IV", span_start=1900.0, span_end=2000.0)}
    models = {}
    for name, options in small.items():
        klass = get_model_class(name)
        config = klass.config_class.from_dict({**options, **({} if name == "word2fun" else {"num_words": 30})})
        vocabulary = temporal if name == "word2fun" else words
        models[name] = klass.build(config, vocabulary=vocabulary, generator=torch.Generator().manual_seed(0)).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(2, 30, (3, 7), generator=g)
    mask = torch.arange(7) < torch.tensor([[7], [4], [1]])
    ids = ids.masked_fill(~mask, 0)
    kv = KeyedVectors(models["word2fun"], temporal)

    @torch.no_grad()
    def queries():
        out = [models[name](ids, mask) for name in ("qpdn", "order_classifier", "cgrnn_classifier")]
        out.append(models["cnm"](ids, mask, ids.flip(0), mask.flip(0)))
        out.append(measurement_words(models["qpdn"], words.words, top=3).to_dict())
        out.append(importance_table(models["qpdn"], words.words).to_dict())
        out.append(kv.most_similar("w1", year=1950, topn=5))
        out.append(kv.grid(["w2", "w3"], [1900.0, 1975.0]))
        return out

    def same(a, b):
        if isinstance(a, torch.Tensor):
            return torch.equal(a, b)
        return a == b

    alone = queries()
    start, results = threading.Barrier(4), [None] * 4

    def serve(i):
        start.wait(30)
        results[i] = [queries() for _ in range(5)]

    threads = [threading.Thread(target=serve, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r is not None for r in results)
    assert all(same(a, b) for r in results for got in r for a, b in zip(got, alone))


def _threads_a_new_thread_gets() -> int:
    seen = []
    probe = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    probe.start()
    probe.join(30)
    return seen[0]


def test_two_word2fun_trainings_in_threads_ending_out_of_order_put_torch_threads_back():
    """Word2Fun trains with one torch thread and put back the count it read when it began; the count is the
    process's, so a second training begun in another thread meanwhile read the first's 1, and put it back after the
    first had ended: the process (every thread started afterwards) was left on one torch thread for good."""
    from qpnlp import word2fun
    from qpnlp._threads import torch_threads
    from qpnlp.data import TimestampedCorpus

    docs = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(100)]
    corpus = TimestampedCorpus.from_pairs(docs)
    first_training, second_training, first_ended = threading.Event(), threading.Event(), threading.Event()
    failures = []

    def train(on_epoch):
        try:
            word2fun.fit(corpus, word2fun.TrainConfig(epochs=1), dim=4, min_count=1, on_epoch=on_epoch)
        except Exception as error:  # noqa: BLE001 - recorded for the assertion
            failures.append(error)

    def first_run():
        train(lambda *_: (first_training.set(), second_training.wait(60)))
        first_ended.set()                               # the first training ends while the second still trains

    with torch_threads(2):
        first = threading.Thread(target=first_run)
        second = threading.Thread(target=train, args=(lambda *_: (second_training.set(), first_ended.wait(60)),))
        first.start()
        assert first_training.wait(60)
        second.start()
        first.join(120)
        second.join(120)
        assert not failures and first_ended.is_set()
        assert _threads_a_new_thread_gets() == 2


def test_torch_threads_blocks_nested_in_one_thread_each_put_back_the_count_they_began_with():
    from qpnlp._threads import torch_threads

    with torch_threads(2):
        with torch_threads(3):
            with torch_threads(0):
                assert torch.get_num_threads() == 3
            assert torch.get_num_threads() == 3
            torch.set_num_threads(4)                   # set inside a block: the block ends by putting 2 back
        assert torch.get_num_threads() == 2


def test_two_threads_predicting_with_one_model_at_once_both_score_in_eval_mode():
    """``predict`` scores in eval mode and puts the caller's mode back after; two threads predicting with one
    model in training mode at once (a thread pool serving queries): the first to end must not put the model back
    in training mode (dropout on) while the second still scores. Only the last block open on a model puts back."""
    from qpnlp.data import EncodedTexts
    from qpnlp.models import QPDN, QPDNConfig
    from qpnlp.training import predict

    model = QPDN(QPDNConfig(num_words=20, num_classes=2, dim=4, num_measurements=3, dropout=0.5),
                 generator=torch.Generator().manual_seed(0)).train()
    data = EncodedTexts([[2, 3], [4, 5, 6], [7]], [0, 1, 0])
    first_in, second_in, first_ended, seen, failures = (threading.Event(), threading.Event(), threading.Event(),
                                                        {"first": [], "second": []}, [])

    def forward_hook(module, args):
        name = threading.current_thread().name
        seen[name].append(module.training)
        if name == "first" and len(seen[name]) == 1:
            first_in.set()
            assert second_in.wait(30)               # the second predict begins meanwhile ...
        if name == "second" and len(seen[name]) == 1:
            second_in.set()
            assert first_ended.wait(30)             # ... and scores on after the first has ended

    def run():
        try:
            predict(model, data, batch_size=1)
        except Exception as error:  # noqa: BLE001 - recorded for the assertion
            failures.append(error)
        if threading.current_thread().name == "first":
            first_ended.set()

    model.register_forward_pre_hook(forward_hook)
    first, second = threading.Thread(target=run, name="first"), threading.Thread(target=run, name="second")
    first.start()
    assert first_in.wait(30)
    second.start()
    first.join(60)
    second.join(60)
    assert not failures and seen == {"first": [False] * 3, "second": [False] * 3}
    assert model.training and model.dropout.training
