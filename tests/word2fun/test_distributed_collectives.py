"""The collectives of a distributed Word2Fun run, in one process standing for rank 0 or 1 of two: the group is a
stand-in whose ``all_gather`` returns this process's object beside the other process's (no processes started)."""

import types

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus
from qpnlp.word2fun import _run_state, distributed
from qpnlp.word2fun.distributed import ProcessFailed, gather_together
from qpnlp.word2fun._corpus_checks import _check_one_corpus


@pytest.fixture
def group(monkeypatch):
    """A group of two in which this process has ``group.rank``; ``group.other(mine)`` is the other process's
    object in each ``all_gather`` (by default the same as this one's); every collective is logged in
    ``group.events``."""
    g = types.SimpleNamespace(rank=0, other=lambda mine: mine, events=[])
    monkeypatch.setattr(distributed, "_dist", lambda: types.SimpleNamespace(get_rank=lambda: g.rank,
                                                                          get_world_size=lambda: 2))

    def all_gather_objects(mine):
        g.events.append("all_gather")
        return [mine, g.other(mine)] if g.rank == 0 else [g.other(mine), mine]

    def gather_objects(mine):
        g.events.append("gather")
        return [mine, mine] if g.rank == 0 else None

    monkeypatch.setattr(distributed, "all_gather_objects", all_gather_objects)
    monkeypatch.setattr(distributed, "gather_objects", gather_objects)
    return g


@pytest.mark.parametrize("rank", [0, 1])
def test_gather_together_gathers_the_values_in_rank_order_in_one_collective(group, rank):
    group.rank, group.other = rank, lambda mine: (None, "theirs")
    every = gather_together(lambda: "mine", "reading")
    assert every == (["mine", "theirs"] if rank == 0 else ["theirs", "mine"])
    assert group.events == ["all_gather"]


def test_gather_together_raises_the_failure_of_another_process_in_this_one(group):
    group.other = lambda mine: ("OSError: [Errno 28] No space left on device", None)
    with pytest.raises(ProcessFailed) as caught:
        gather_together(lambda: "mine", "reading the checkpoint ck")
    assert str(caught.value) == "process 1 of 2 failed reading the checkpoint ck: OSError: [Errno 28] No space left " \
                                "on device"
    assert (caught.value.rank, caught.value.error) == (1, "OSError: [Errno 28] No space left on device")
    assert group.events == ["all_gather"]


def test_gather_together_raises_this_processs_own_error_once_the_others_know_it(group):
    told = []
    group.other = lambda mine: told.append(mine) or (None, "theirs")

    def compute():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        gather_together(compute, "reading")
    assert told == [("KeyboardInterrupt", None)] and group.events == ["all_gather"]


def test_gather_together_alone_is_a_plain_call(monkeypatch):
    monkeypatch.setattr(distributed, "all_gather_objects", lambda mine: pytest.fail("a collective, alone"))
    assert gather_together(lambda: 3, "reading") == [3]
    with pytest.raises(ValueError, match="its own"):
        gather_together(lambda: (_ for _ in ()).throw(ValueError("its own")), "reading")


@pytest.mark.parametrize("site", ["saved run", "put back", "corpus"])
def test_the_checks_of_a_distributed_run_share_what_they_read_in_one_collective(group, tmp_path, site):
    """Reading the checkpoint, putting it back and reading the corpus's files each took two collectives (one for
    the failures, one for what was read); one now, which still raises a failure of the other process."""
    corpus = TimestampedCorpus(np.array([1900.0, 1901.0]), [["war", "peace"], ["trade"]])
    call = {"saved run": lambda: _run_state.saved_run_of_every_process(tmp_path / "ck"),
            "put back": lambda: _run_state.restore_interrupted_checkpoint(tmp_path / "ck"),
            "corpus": lambda: _check_one_corpus(corpus, 2)}[site]
    assert call() is None and group.events == ["all_gather"]
    group.other = lambda mine: ("OSError: gone", None)
    with pytest.raises(ProcessFailed, match="process 1 of 2 failed .*: OSError: gone"):
        call()


def test_on_epoch_runs_in_the_other_processes_once_the_checkpoint_is_written_and_not_if_that_failed(group, tmp_path):
    """Process 1's ``on_epoch`` may read the checkpoint of the epoch: it runs after the collective that ends the
    first process's writing, and not at all when the writing failed (the two blocks of end_of_epoch stay apart)."""
    group.rank = 1
    end = _run_state.end_of_epoch(tmp_path / "ck", None, {}, np.random.default_rng(0), [torch.Generator()], 2,
                                  lambda epoch, stats: group.events.append("on_epoch"))
    end(0, None)
    assert group.events == ["gather", "all_gather", "on_epoch", "all_gather"]
    group.events.clear()
    group.other = lambda mine: ("OSError: [Errno 28] No space left on device", None)
    with pytest.raises(ProcessFailed, match=f"failed writing the checkpoint {tmp_path / 'ck'}"):
        end(1, None)
    assert group.events == ["gather", "all_gather"]                   # no on_epoch
