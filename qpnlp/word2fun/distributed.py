"""Training Word2Fun in several processes (``torchrun``): the process group and the synchronisation.

:func:`~qpnlp.word2fun.train.fit` trains in every process of a
``torch.distributed`` job (started by ``torchrun``, which sets ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``; :func:`setup` opens the
group: gloo on CPU, NCCL on CUDA, or the backend named by
``QPNLP_DIST_BACKEND``; its timeout from ``QPNLP_DIST_TIMEOUT``).  Each process reads its own shard of the
corpus (:meth:`TsvStream.shard <qpnlp.data.timestamped.TsvStream.shard>`, or
every ``world``-th document of a corpus in memory), and the processes keep
*one* model:

* **the same start** -- the vocabulary is built from the word counts of all
  shards (:func:`merge_counts`: the counts are gathered and summed, then every
  process sorts them the same way), the time span is the union of the shards'
  spans, every process initialises the model from the same seed (and rank
  0's parameters are broadcast once), and the context sketches that start
  the logistic steps at their change points are summed over the processes;
* **merged updates** (:class:`ParameterSync`) -- every ``sync_every`` batches
  each process computes what it changed since the last synchronisation,
  :math:`\\Delta_r = \\theta_r - \\theta_{sync}`, the changes and, per row of every table, the number of
  processes that changed it (:math:`k`) are summed with one ``all_reduce``, and every process continues from
  :math:`\\theta_{sync} + \\sum_r \\Delta_r / \\max(k / 2, 1)` row by row (``qpnlp.word2fun._merge``, the rule
  of the replicas in one process too).  All parameter tables take part:
  the word functions (:math:`B, R, \\Omega, \\Theta`, and the logistic step's
  :math:`A, c, k`) and the compass (unless frozen).  Summing the updates (not averaging the parameters) keeps
  word2vec's learning rate: ``W`` processes that each see ``1/W`` of the data apply the same updates as one process
  seeing all of it, only up to ``sync_every`` batches late (the hogwild staleness of word2vec's threads, across
  processes).  But a frequent row that every process carried most of the way to its optimum would overshoot it
  ``k``-fold, and from three processes the overshoot grows (three processes ended their first epoch on the State of
  the Union corpus at 5.4x the loss of one, four diverged): a row that more than two processes changed takes
  ``2 / k`` of their summed update, which never overshoots more than it corrects.  The merge is the same on every
  process, so the models agree bit for bit after each synchronisation.  Parameters that the
  SGD step keeps in a range (the logistic step's centre and rate, projected
  SGD) are projected again after the merge: each process's update stays in the
  range, but the sum of ``W`` of them need not;
* **uneven shards** -- a process that has finished its shard keeps joining
  the synchronisations with a zero change until every process has finished
  (a flag is reduced with the changes), so no collective is left waiting;
* **one checkpoint** -- after the last synchronisation of an epoch the
  models are equal, the random generators' states of every process are
  gathered to the first process (:func:`gather_objects`), which writes the
  checkpoint atomically while the others wait for it (:func:`fail_together`);
  resuming with the same processes, each one restores its own generators (on
  the CPU with one worker the resumed run equals the uninterrupted one bit for bit);
* **one failure** -- what a process does alone between two collectives
  (reading its files and its shard, loading or writing the checkpoint,
  training its batches, ``on_epoch``) fails in every process at once
  (:func:`fail_together`; :func:`gather_together` where the processes then share what they read; and
  :meth:`ParameterSync.step` during the epochs):
  the failing process raises its own error, the others a :class:`ProcessFailed`
  naming it, instead of waiting for it in the next collective (until the
  group's timeout, ``QPNLP_DIST_TIMEOUT``, where it lives on, e.g. catching
  the error to call :func:`shutdown`) or failing with only their lost
  connection ("Connection closed by peer", where it exits).  Ctrl-C is
  such an error too (``KeyboardInterrupt``): a process interrupted alone
  (``kill -INT``) raises it once the others reach the same point, during
  the epochs at the end of their segment of ``sync_every`` batches, so it
  waits for them; a second Ctrl-C does not cut the wait short (it is raised
  when the collective returns), the group's timeout bounds it.  Raising at
  once would leave the others waiting in the collective.  Ctrl-C at
  ``torchrun`` reaches every process, which all stop at their next
  synchronisation (``--processes`` also stops its processes with SIGTERM).

The cost of a synchronisation is one ``all_reduce`` of all parameters
(about ``6 V D`` numbers for family IV with the logistic step and a
trainable compass, and a count per row of each table); choose ``sync_every`` so that it stays small against
the ``sync_every`` batches of work in between.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
from collections import Counter
from typing import Callable, Mapping, TypeVar

import torch

from qpnlp import _env
from qpnlp.word2fun._merge import changed_rows, merge_rows, rows

T = TypeVar("T")

__all__ = ["world_size", "rank", "is_main_process", "setup", "group_options", "merge_counts", "all_gather_objects",
           "gather_objects", "all_reduce_sum", "all_sum", "all_min_max", "barrier", "shutdown", "ProcessFailed",
           "raise_together", "fail_together", "gather_together", "ParameterSync"]


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def world_size() -> int:
    """Processes in the job (1 when torch.distributed is not initialised)."""
    d = _dist()
    return d.get_world_size() if d else 1


def rank() -> int:
    """This process's rank (0 when torch.distributed is not initialised)."""
    d = _dist()
    return d.get_rank() if d else 0


def is_main_process() -> bool:
    """True in the process that writes checkpoints and reports (rank 0, or the only process)."""
    return rank() == 0


BACKEND_VARIABLE = "QPNLP_DIST_BACKEND"
#: The environment variable giving the seconds a collective waits for the other processes before it fails.
TIMEOUT_VARIABLE = "QPNLP_DIST_TIMEOUT"
#: The longest timeout in whole days that a ``datetime.timedelta`` holds (about 8.6e13 seconds).
_MAX_TIMEOUT = float(datetime.timedelta.max.days * 86400)


def setup(device: str = "cpu") -> int:
    """Open the process group when started by ``torchrun`` (``WORLD_SIZE`` > 1); returns the world size.

    gloo for CPU training, NCCL for CUDA (each process on ``cuda:LOCAL_RANK``
    when the node has that many GPUs, else on ``cuda:LOCAL_RANK % GPUs``).
    The environment variable ``QPNLP_DIST_BACKEND`` overrides the choice:
    ``gloo`` lets several processes share one GPU, which NCCL refuses.
    ``QPNLP_DIST_TIMEOUT`` (seconds, default torch's: 30 minutes for gloo, 10
    for NCCL) is how long a process waits for the others, to open the group
    and in each collective, before it fails: a process that failed raises in
    every process at once (:func:`fail_together`), so the timeout only ends a
    run whose process hangs, or never came; it must exceed the longest wait
    of a healthy run (a process counting a larger shard of a streamed corpus
    than the others, the first one writing a checkpoint).
    On Windows the rendezvous store runs without libuv (``USE_LIBUV=0``
    unless set: the wheels are built without it). Does nothing when the
    group is already open or the job has one process.

    Parameters
    ----------
    device : str or torch.device, default "cpu"
        The training device: a CUDA device selects NCCL and this process's GPU, anything else gloo (unless
        ``QPNLP_DIST_BACKEND`` names the backend).
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    if _env.count("WORLD_SIZE", 1) <= 1:
        return 1
    backend, timeout = group_options(device)
    if torch.device(device).type == "cuda":
        torch.cuda.set_device(_env.count("LOCAL_RANK", 0) % torch.cuda.device_count())
    if sys.platform == "win32":    # torch's Windows wheels lack libuv, which torch from 2.4 asked for by default
        os.environ.setdefault("USE_LIBUV", "0")
    dist.init_process_group(backend, **({} if timeout is None else {"timeout": timeout}))
    return dist.get_world_size()


def group_options(device: str = "cpu") -> tuple[str, datetime.timedelta | None]:
    """The backend and timeout :func:`setup` opens the group with on ``device`` (``QPNLP_DIST_BACKEND``, else NCCL
    for CUDA and gloo otherwise; ``QPNLP_DIST_TIMEOUT``, else None: torch's).  ``ValueError`` names a bad value, for
    a launcher to check before it starts the processes.

    Parameters
    ----------
    device : str or torch.device, default "cpu"
        The device the processes train on: its type picks the default backend.
    """
    backend = _env.text(BACKEND_VARIABLE) or ("nccl" if torch.device(device).type == "cuda" else "gloo")
    if backend not in ("nccl", "gloo"):
        raise ValueError(f"{BACKEND_VARIABLE} must be 'nccl' or 'gloo'; got {backend!r}")
    return backend, _timeout()


def _timeout() -> datetime.timedelta | None:
    """The process group's timeout that ``QPNLP_DIST_TIMEOUT`` gives (None where it is not set: torch's default)."""
    value = _env.text(TIMEOUT_VARIABLE)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= _MAX_TIMEOUT:       # inf, and 1e14 (timedelta's OverflowError named no variable)
        raise ValueError(f"{TIMEOUT_VARIABLE} must be a number of seconds > 0 (at most {_MAX_TIMEOUT:.0f}); "
                         f"got {value!r}")
    return datetime.timedelta(seconds=seconds)


def _reduce(d, tensor: torch.Tensor, op) -> None:
    """``all_reduce`` of ``tensor`` in place, through a CUDA copy under NCCL (which reduces CUDA tensors only)."""
    if d.get_backend() != "nccl" or tensor.is_cuda:
        d.all_reduce(tensor, op=op)
        return
    on_gpu = tensor.to(torch.device("cuda", torch.cuda.current_device()))
    d.all_reduce(on_gpu, op=op)
    tensor.copy_(on_gpu)


def merge_counts(word_freq: Counter, doc_freq: Counter) -> tuple[Counter, Counter]:
    """The word and document counts of all processes, summed (every process gets the same; a collective).

    Parameters
    ----------
    word_freq, doc_freq : collections.Counter
        This process's counts (word -> occurrences, word -> documents); returned themselves in a single process.
    """
    if _dist() is None:
        return word_freq, doc_freq
    wf, df = Counter(), Counter()
    for w, c in all_gather_objects((dict(word_freq), dict(doc_freq))):
        wf.update(w)
        df.update(c)
    return wf, df


def all_gather_objects(obj) -> list:
    """``obj`` of every process in rank order, in every process (``[obj]`` alone); a collective, ``obj`` picklable.

    Parameters
    ----------
    obj : object
        This process's value; picklable.
    """
    d = _dist()
    if d is None:
        return [obj]
    gathered: list = [None] * d.get_world_size()
    d.all_gather_object(gathered, obj)
    return gathered


def gather_objects(obj) -> list | None:
    """``obj`` of every process in rank order, on the first process (None on the others; ``[obj]`` alone).

    Every process must call it (a collective); ``obj`` must be picklable.

    Parameters
    ----------
    obj : object
        This process's value; picklable.
    """
    d = _dist()
    if d is None:
        return [obj]
    gathered: list | None = [None] * d.get_world_size() if d.get_rank() == 0 else None
    d.gather_object(obj, gathered, dst=0)
    return gathered


def all_reduce_sum(tensor: torch.Tensor) -> None:
    """Sum ``tensor`` over the processes, in place (a no-op in a single process).

    Parameters
    ----------
    tensor : torch.Tensor
        Of the same shape and dtype in every process; on the CPU or its GPU (a CPU tensor is reduced through a
        CUDA copy under NCCL).
    """
    d = _dist()
    if d is not None:
        _reduce(d, tensor, d.ReduceOp.SUM)


def all_sum(values: list[float]) -> list[float]:
    """Element-wise sum of ``values`` over the processes (float64).

    Parameters
    ----------
    values : list of float
        As many in every process; a new list in a single process.
    """
    if _dist() is None:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64)
    all_reduce_sum(t)
    return t.tolist()


def all_min_max(lo: float, hi: float) -> tuple[float, float]:
    """The smallest ``lo`` and the largest ``hi`` over the processes.

    Parameters
    ----------
    lo, hi : float
        This process's values (e.g. the first and last time of its shard); reduced in float64.
    """
    d = _dist()
    if d is None:
        return lo, hi
    t = torch.tensor([-lo, hi], dtype=torch.float64)
    _reduce(d, t, d.ReduceOp.MAX)
    return -float(t[0]), float(t[1])


def barrier() -> None:
    """Wait until every process has come here (a collective; a no-op in a single process)."""
    d = _dist()
    if d is not None:
        d.barrier()


class ProcessFailed(RuntimeError):
    """Raised in the other processes of a distributed run when one failed (:func:`fail_together`); names it.

    Parameters
    ----------
    message : str
        The exception's message: which process failed, doing what, with which error.
    rank : int
        The first process that failed (the attribute ``rank``).
    error : str
        Its error's type and message (the attribute ``error``).

    Attributes
    ----------
    rank : int
        The first process that failed.
    error : str
        Its error's type and message.
    """

    def __init__(self, message: str, rank: int, error: str):
        super().__init__(message)
        self.rank, self.error = rank, error


def raise_together(error: BaseException | None, what: str) -> None:
    """Raise in every process if ``error`` (this process's, or None) is one in any process (a collective).

    The failing process raises its own ``error``; the others raise :class:`ProcessFailed` naming the first
    failing process, ``what`` it was doing and its error.  Every process must call it at the same point.

    Parameters
    ----------
    error : BaseException or None
        This process's error; None: it did not fail.
    what : str
        What the processes were doing, for the message of :class:`ProcessFailed` (e.g. "reading its shard").
    """
    if _dist() is None:                    # one process: its own error is every process's
        if error is not None:
            raise error
        return
    _gather_or_raise(error, None, what)


def _gather_or_raise(error: BaseException | None, value, what: str) -> list:
    """``value`` of every process in rank order, gathered with the processes' errors in ONE collective
    (``all_gather`` of ``(error text or None, value)``); raises as :func:`raise_together` if any process failed
    (``value`` is then not used).  Only in an open group."""
    mine = None if error is None else type(error).__name__ + (f": {error}" if str(error) else "")
    try:
        every = all_gather_objects((mine, value))
    except Exception:
        if error is not None:              # the others are gone as well: this process's own error is the news
            raise error from None
        raise
    if error is not None:
        raise error
    failed = next((r for r, (e, _) in enumerate(every) if e is not None), None)
    if failed is not None:
        raise ProcessFailed(f"process {failed} of {len(every)} failed {what}: {every[failed][0]}", failed,
                            every[failed][0])
    return [v for _, v in every]


def gather_together(compute: Callable[[], T], what: str) -> list[T]:
    """``compute()`` of every process in rank order, in every process (``[compute()]`` alone), in ONE collective.

    What :func:`fail_together` around ``compute()`` followed by :func:`all_gather_objects` of its result does with
    two collectives: an exception of ``compute`` in one process is raised in every process, by it its own, by
    the others :class:`ProcessFailed` naming it and ``what`` it was doing (e.g. "reading the checkpoint ...").
    Every process must call it at the same point; ``compute`` holds no collective and returns a picklable value.

    Parameters
    ----------
    compute : callable
        ``compute() -> T``, run once in this process.
    what : str
        What ``compute`` does, for the message of :class:`ProcessFailed`.
    """
    if _dist() is None:
        return [compute()]
    try:
        value = compute()
    except BaseException as error:
        _gather_or_raise(error, None, what)
        raise                              # not reached: _gather_or_raise raises the error
    return _gather_or_raise(None, value, what)


@contextlib.contextmanager
def fail_together(what: str, together: bool = True):
    """Inside the block, which every process must enter at the same point and which holds no collective, an
    exception of one process is raised in every process at the end of the block (:func:`raise_together`): by
    it, its own; by the others, :class:`ProcessFailed` naming it (``what``: what they were doing, e.g.
    "reading its shard of the corpus").  Leaving the block is also a barrier; a no-op in a single process, and
    where ``together`` is False (a caller training alone although a group is open, e.g. without a
    :class:`ParameterSync`: a plain block, no collective).

    Parameters
    ----------
    what : str
        What the block does, for the message of :class:`ProcessFailed`.
    together : bool, default True
        Whether the processes fail together; False: a plain block.
    """
    if not together or _dist() is None:
        yield
        return
    try:
        yield
    except BaseException as error:
        raise_together(error, what)
    raise_together(None, what)


def shutdown() -> None:
    """Wait for every process, then close the process group (call it in every process once training is done,
    or has failed: the processes fail together, ``try: fit(...) finally: shutdown()``).

    A process that exits while the others still use the group can abort
    in the collective library's destructors ("terminate called without an
    active exception"); closing the group together avoids it.
    """
    d = _dist()
    if d is not None:
        d.barrier()
        d.destroy_process_group()


class ParameterSync:
    """Merge the processes' parameter updates every few batches (see the module docstring).

    Parameters
    ----------
    model : torch.nn.Module
        Its parameters that require gradients take part (a frozen compass does not).
    bounds : mapping, optional
        ``{parameter name: (lo, hi)}``: the merged values of these parameters are
        clipped to ``[lo, hi]`` (:func:`~qpnlp.word2fun.step_sizes.step_bounds`).
    """

    def __init__(self, model: torch.nn.Module, bounds: Mapping[str, tuple[float, float]] | None = None):
        # the snapshots live where the parameters are now: move the model to its training device first
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.params = [p for _, p in named]
        self.bounds = [(bounds or {}).get(n) for n, _ in named]
        self.snapshot = [p.detach().clone() for p in self.params]
        self.rounds = 0
        self.broadcast()

    def broadcast(self) -> None:
        """Start every process from rank 0's parameters (equal anyway when seeded alike)."""
        d = _dist()
        if d is None:
            return
        for p, s in zip(self.params, self.snapshot):
            d.broadcast(p.data, src=0)
            s.copy_(p.detach())

    @torch.no_grad()
    def step(self, has_more: bool, error: BaseException | None = None) -> bool:
        """Merge the updates since the last call; returns whether any process has batches left.

        Every process must call it the same number of times: call it after
        every ``sync_every`` batches and, once the shard is finished, with
        ``has_more=False`` until it returns False.  A process whose batches
        raised passes the ``error``: then every process raises
        (:func:`raise_together`, what it did: "training its batches").
        """
        d = _dist()
        if d is None:
            raise_together(error, "training its batches")     # alone: raises this process's error, if any
            return has_more
        flags = [1.0 if has_more else 0.0, 0.0 if error is None else 1.0]
        deltas = [rows(p.detach() - s) for p, s in zip(self.params, self.snapshot)]
        flat = torch.cat([d.reshape(-1) for d in deltas] + [changed_rows(d) for d in deltas]
                         + [torch.tensor(flags, dtype=self.params[0].dtype, device=self.params[0].device)])
        d.all_reduce(flat)
        if flat[-1] > 0:                   # a process failed: every process raises, none updates
            raise_together(error, "training its batches")
        flat = flat[:-1]
        sizes = [d.numel() for d in deltas]
        totals = flat[:sum(sizes)].split(sizes)
        changed = flat[sum(sizes):-1].split([d.shape[0] for d in deltas])      # per row: how many processes
        for p, s, total, k, bound in zip(self.params, self.snapshot, totals, changed, self.bounds):
            merge_rows(rows(s), total.view(k.shape[0], -1), k, bound)   # the same in every process: models stay equal
            p.copy_(s)
        self.rounds += 1
        return bool(flat[-1] > 0)
