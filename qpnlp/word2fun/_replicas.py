"""Deterministic parallel training in one process (``TrainConfig(workers=W, parallel="replicas")``): ``W`` threads
each train a copy of the model on their own batches, and their updates are merged row by row.

A segment of consecutive batches of the epoch's stream is cut into ``W`` consecutive parts (``qpnlp.word2fun.loop``:
as equal in batches as they go, a run of batches split where a part ends); thread ``w`` trains part ``w`` on
replica ``w`` (replica 0 is the model itself), all starting from the same parameters :math:`\\theta_s`, and then
the model continues from their merged updates (:mod:`qpnlp.word2fun._merge`: row by row, the sum of the updates for
a row that one or two replicas changed, ``2 / k`` of it for a row that ``k`` > 2 changed, so that frequent rows do
not overshoot), the parameters that projected SGD keeps in a range (:func:`~qpnlp.word2fun.step_sizes.step_bounds`)
clipped again: the merge of the distributed processes' updates (:class:`~qpnlp.word2fun.distributed.ParameterSync`)
with threads for processes, each thread applying its batches' updates up to a segment late, as a process does up to
``sync_every`` batches late.  Unlike hogwild threads, no update is lost to a race and a thread always trains the
same batches with its own negatives' generator, so a run is the same bit for bit every time (for a given ``W``; it
differs from a one-worker run, whose every batch sees all earlier updates).

The threads are started for every segment and awaited together (:func:`~qpnlp.word2fun._hogwild.run_workers`),
and then again to merge: thread ``w`` merges the ``w``-th of ``W`` equal slices of the rows of every trained table
and writes the result into every replica and into :math:`\\theta_s`, so that the next segment of the run starts
with all of them equal and copies nothing (:meth:`Replicas.reload` copies the model to them where the model may
have changed between two runs, e.g. a distributed process's sync).  The merge is one pass over every trained table
(compiled; torch's elementwise ops where numba is missing), whatever rows the segment touched, shared by the
threads.  Before, one thread summed and the next segment first copied the model to every replica: on the 7,960 words
of the State of the Union corpus a profile put those copies and the sum at a sixth of a two-replica run, but the
run measured quiet gained only 3-4% (``benchmarks/results/word2fun/replicas/merge/``; summing only the touched rows
with torch's gathers and scatters was slower still).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping

import torch

from qpnlp.word2fun._hogwild import run_workers
from qpnlp.word2fun._merge import merge_replicas, rows

__all__ = ["Replicas"]


class Replicas:
    """``workers`` copies of ``model`` (the first is ``model`` itself) whose updates are merged after each segment
    (see the module docstring).

    Parameters
    ----------
    model : Word2Fun
        The model trained; it holds the merged parameters after every :meth:`train`.
    workers : int
        The threads, one replica each (>= 2).
    bounds : mapping, optional
        ``{parameter name: (lo, hi)}``: the merged values of these parameters are clipped to ``[lo, hi]``
        (:func:`~qpnlp.word2fun.step_sizes.step_bounds`, as :class:`~qpnlp.word2fun.distributed.ParameterSync`).
    """

    def __init__(self, model: torch.nn.Module, workers: int, bounds: Mapping[str, tuple[float, float]] | None = None):
        self.models = [model] + [copy.deepcopy(model) for _ in range(workers - 1)]
        bounds = bounds or {}
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]    # a frozen compass stays as is
        self.names = [n for n, _ in named]
        self.bounds = [bounds.get(n) for n in self.names]
        self.start = [p.detach().clone() for _, p in named]

    def _trained(self, model: torch.nn.Module) -> list[torch.Tensor]:
        params = dict(model.named_parameters())
        return [params[n] for n in self.names]

    @torch.no_grad()
    def reload(self) -> None:
        """Copy the model's parameters to :math:`\\theta_s` and to every other replica: needed before a run of
        segments whenever something other than :meth:`train` may have changed the model since the last segment (the
        loop calls it before every run: a new epoch, a distributed process's sync, a checkpoint loaded)."""
        first = self._trained(self.models[0])
        for s, p in zip(self.start, first):
            s.copy_(p)
        for replica in self.models[1:]:
            for p, s in zip(self._trained(replica), self.start):
                p.copy_(s)

    @torch.no_grad()
    def train(self, parts: list, task: Callable[[torch.nn.Module, object, int], object]) -> list:
        """Train the ``parts`` of a segment (one per replica), part ``w`` by ``task(replica_w, parts[w], w)`` in
        thread ``w``, then merge the replicas' updates into the model, and into every replica (the module
        docstring); the tasks' results in worker order.  Every replica and :math:`\\theta_s` must hold the model's
        parameters (:meth:`reload`).

        A task that raises makes the call raise its error (the first in worker order) and leaves the model's
        parameters as they were at the segment's start: no part of a failed segment is kept.
        """
        out = run_workers(lambda w: task(self.models[w], parts[w], w), len(self.models), threading.Event())
        failed = next((r for r in out if isinstance(r, BaseException)), None)
        if failed is None:
            failed = next((r for r in run_workers(self._merge_slice, len(self.models), threading.Event())
                           if isinstance(r, BaseException)), None)
        if failed is not None:
            for p, s in zip(self._trained(self.models[0]), self.start):
                p.copy_(s)
            self.reload()
            raise failed
        return out

    @torch.no_grad()                                # grad mode is per thread: train's does not reach here
    def _merge_slice(self, w: int) -> None:
        """Slice ``w`` (of as many as replicas) of the rows of every trained table is merged
        (:func:`~qpnlp.word2fun._merge.merge_replicas`, clipped to its bounds) and written into the model, every
        other replica and :math:`\\theta_s`; the changes summed in replica order, the same in every run."""
        n = len(self.models)
        tables = [self._trained(m) for m in self.models]
        part = lambda table: rows(table).tensor_split(n)[w]
        for i, (start, bound) in enumerate(zip(self.start, self.bounds)):
            merge_replicas(part(tables[0][i]), [part(t[i]) for t in tables[1:]], part(start), bound)
