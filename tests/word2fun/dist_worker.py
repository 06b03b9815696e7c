"""Run by ``torchrun`` in test_distributed.py: fit on a TSV corpus, save this rank's parameters.

``mode`` "train" trains from scratch and also keeps the checkpoint of the
first epoch as ``<checkpoint>-epoch1``; "resume" continues from the checkpoint;
"compass" trains with a frozen compass (no checkpoint) and also saves the state
of the negatives' generator at the first draw of each training (the compass
pre-training, then the model) as ``first_draws``; "order" streams the files of
``corpus_path`` (comma-separated), listed in reverse order in process 1, and
saves the error of ``fit`` as ``<out>-rank<r>.txt``; "fail" runs the fits of
:func:`failing_runs`, each failing in one process, and saves every process's
errors as ``<out>-rank<r>.json``.
"""

import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

from qpnlp.data import TsvStream, read_tsv
from qpnlp.data.skipgram import NegativeSampler
from qpnlp.word2fun import TrainConfig, fit
from qpnlp.word2fun.distributed import rank, shutdown


def record_first_draws() -> list:
    """Make every NegativeSampler record its generator's state at its first draw; returns the list they fill."""
    firsts, sample = [], NegativeSampler.sample

    def spy(self, shape, generator=None):
        if not getattr(self, "drawn", False):  # one sampler per training: the compass pre-training's, then the model's
            self.drawn = True
            firsts.append(generator.get_state().numpy().copy())
        return sample(self, shape, generator=generator)

    NegativeSampler.sample = spy
    return firsts


def compass_run(corpus_path: str, out: str, device: str) -> None:
    """A frozen-compass fit: this rank's parameters and the generator states of its first draws of negatives."""
    firsts = record_first_draws()
    result = fit(read_tsv(corpus_path), TrainConfig(epochs=1, seed=0, sync_every=4, device=device), dim=12,
                 min_count=3, compass="frozen", compass_epochs=1)
    params = {k: v.detach().cpu().numpy() for k, v in result.vectors.model.state_dict().items()}
    np.savez(f"{out}-rank{rank()}.npz", first_draws=np.stack(firsts), **params)
    shutdown()


def order_run(paths: str, out: str) -> None:
    """Fit on the files ``paths``, which process 1 lists in reverse order; this process's error, if any."""
    files = paths.split(",")
    try:
        fit(TsvStream(files[::-1] if os.environ["RANK"] == "1" else files), TrainConfig(epochs=1), dim=4, min_count=1)
    except ValueError as err:
        Path(f"{out}-rank{os.environ['RANK']}.txt").write_text(str(err))
    shutdown()


def failing_runs(folder: str, out: str, checkpoint: str) -> None:
    """Fits that fail in one process only (the files ``a.tsv``, ``b.tsv`` with a bad line, and ``c.tsv`` of
    ``folder``), each process catching its error, as a program that goes on (e.g. to ``shutdown()``) would:
    ``{fit: "type: message"}`` of this process, written before the group is closed."""
    from qpnlp.word2fun import _run_state, loop
    from qpnlp.word2fun.keyed_vectors import KeyedVectors

    r, d = int(os.environ["RANK"]), Path(folder)          # before fit opens the group
    corpus, errors = read_tsv(d / "a.tsv"), {}
    opts = dict(dim=4, min_count=1, checkpoint=checkpoint)

    def run(name, make_fit, patches=()):
        saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patches]
        for owner, attr, value in patches:
            setattr(owner, attr, value)
        try:
            make_fit()
            errors[name] = None
        except BaseException as error:           # KeyboardInterrupt too: the process goes on
            errors[name] = type(error).__name__ + (f": {error}" if str(error) else "")
        finally:
            for owner, attr, value in saved:
                setattr(owner, attr, value)

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    def stop(epoch, stats):
        if r == 1:
            raise KeyboardInterrupt

    segment_done, run_batches = d / "segment-done", loop._run_batches

    def interrupted(*args, **kwargs):            # Ctrl-C in process 1's first segment
        raise KeyboardInterrupt

    def slow(*args, **kwargs):                   # process 0's first segment takes a second, then says so
        time.sleep(1.0)
        done = run_batches(*args, **kwargs)
        segment_done.touch()
        return done

    def ctrl_c():                                # process 1 raises once process 0 has finished its segment
        try:
            fit(corpus, TrainConfig(epochs=1), dim=4, min_count=1)
        except KeyboardInterrupt:
            errors["Ctrl-C waited for the segment"] = segment_done.exists()
            raise

    gone = d / "gone.tsv"
    if r == 1:
        shutil.copy(d / "c.tsv", gone)
    files = TsvStream([d / "a.tsv", gone if r == 1 else d / "c.tsv"])
    if r == 1:
        gone.unlink()                            # after the stream checked it: gone when fit reads it
    run("missing file", lambda: fit(files, TrainConfig(epochs=1), dim=4, min_count=1))
    run("bad line", lambda: fit(TsvStream([d / "a.tsv", d / "b.tsv"]), TrainConfig(epochs=1), dim=4, min_count=1))
    run("options", lambda: fit(corpus, TrainConfig(epochs=1), dim=4 if r == 0 else 0, min_count=1))
    run("batches", lambda: fit(corpus, TrainConfig(epochs=1), dim=4, min_count=1),
        [(loop, "_run_batches", fail)] if r == 1 else [])
    run("drawing", lambda: fit(corpus, TrainConfig(epochs=1), dim=4, min_count=1),    # on the drawing thread
        [(loop, "iter_centre_runs", fail)] if r == 1 else [])
    run("Ctrl-C in batches", ctrl_c, [(loop, "_run_batches", interrupted if r == 1 else slow)])
    run("checkpoint", lambda: fit(corpus, TrainConfig(epochs=1), **opts),
        [(KeyedVectors, "save_pretrained", fail)] if r == 0 else [])
    run("on_epoch", lambda: fit(corpus, TrainConfig(epochs=2), **opts, on_epoch=stop))   # keeps epoch 1
    run("put back", lambda: fit(corpus, TrainConfig(epochs=2), **opts, resume=True),
        [(_run_state, "restore_replaced_directory", fail)] if r == 0 else [])
    run("other checkpoint", lambda: fit(corpus, TrainConfig(epochs=2), dim=4, min_count=1, resume=True,
                                        checkpoint=checkpoint if r == 0 else f"{checkpoint}-{r}"))
    run("on_epoch of process 0", lambda: fit(corpus, TrainConfig(epochs=1), dim=4, min_count=1,   # as the CLI's
                                             on_epoch=(lambda epoch, stats: None) if r == 0 else None))
    Path(f"{out}-rank{r}.json").write_text(json.dumps(errors))
    shutdown()


def main(corpus_path: str, out: str, checkpoint: str, device: str = "cpu", mode: str = "train") -> None:
    torch.set_num_threads(1)
    if mode == "fail":
        return failing_runs(corpus_path, out, checkpoint)
    if mode == "compass":
        return compass_run(corpus_path, out, device)
    if mode == "order":
        return order_run(corpus_path, out)

    def keep_first(epoch, stats):  # after the checkpoint is written and every process has passed the barrier
        if epoch == 0 and rank() == 0:
            shutil.copytree(checkpoint, f"{checkpoint}-epoch1")

    result = fit(read_tsv(corpus_path), TrainConfig(epochs=2, seed=0, sync_every=4, device=device), dim=12,
                 min_count=3, checkpoint=checkpoint, resume=mode == "resume",
                 on_epoch=keep_first if mode == "train" else None)
    params = {k: v.detach().cpu().numpy() for k, v in result.vectors.model.state_dict().items()}
    np.savez(f"{out}-rank{rank()}.npz", world=result.world_size, tokens=result.stats.tokens, **params)
    shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:6])
