"""Deterministic parallel training in one process (``TrainConfig(workers=W, parallel="replicas")``): ``W`` threads
each train a copy of the model on their own batches, and their updates are summed.

A segment of consecutive batches of the epoch's stream is cut into ``W`` consecutive parts (``qpnlp.word2fun.loop``:
as equal in batches as they go, a run of batches split where a part ends); thread ``w`` trains part ``w`` on
replica ``w`` (replica 0 is the model itself), all starting from the same parameters :math:`\\theta_s`, and then the
model continues from

.. math:: \\theta_s + \\sum_{w} (\\theta_w - \\theta_s),

the summed updates of :class:`~qpnlp.word2fun.distributed.ParameterSync` with threads for processes: each thread
applies its batches' updates up to a segment late, as a process does up to ``sync_every`` batches late, and the
parameters that projected SGD keeps in a range (:func:`~qpnlp.word2fun.step_sizes.step_bounds`) are clipped again
after the sum.  Unlike hogwild threads, no update is lost to a race and a thread always trains the same batches with
its own negatives' generator, so a run is the same bit for bit every time (for a given ``W``; it differs from a
one-worker run, whose every batch sees all earlier updates).

The threads are started for every segment and awaited together (:func:`~qpnlp.word2fun._hogwild.run_workers`); the
cost of a segment's sum is about ``2 W`` passes over every trained table, whatever rows the segment touched: 4% of
a 2-replica run on the 1,090 words of the 750k-token drift corpus, but most of the threads' gain on the 7,960 words
of the State of the Union corpus (``benchmarks/results/word2fun/replicas/``; summing only the touched rows with
torch's gathers and scatters was slower still).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping

import torch

from qpnlp.word2fun._hogwild import run_workers

__all__ = ["Replicas"]


class Replicas:
    """``workers`` copies of ``model`` (the first is ``model`` itself) whose updates are summed after each segment
    (see the module docstring).

    Parameters
    ----------
    model : Word2Fun
        The model trained; it holds the summed parameters after every :meth:`train`.
    workers : int
        The threads, one replica each (>= 2).
    bounds : mapping, optional
        ``{parameter name: (lo, hi)}``: the summed values of these parameters are clipped to ``[lo, hi]``
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
    def train(self, parts: list, task: Callable[[torch.nn.Module, object, int], object]) -> list:
        """Train the ``parts`` of a segment (one per replica), part ``w`` by ``task(replica_w, parts[w], w)`` in
        thread ``w``, then sum the replicas' updates into the model; the tasks' results in worker order.

        A task that raises makes the call raise its error (the first in worker order) and leaves the model's
        parameters as they were at the segment's start: no part of a failed segment is kept.
        """
        first = self._trained(self.models[0])
        for s, p in zip(self.start, first):
            s.copy_(p)
        for replica in self.models[1:]:
            for p, s in zip(self._trained(replica), self.start):
                p.copy_(s)
        out = run_workers(lambda w: task(self.models[w], parts[w], w), len(self.models), threading.Event())
        failed = next((r for r in out if isinstance(r, BaseException)), None)
        if failed is not None:
            for p, s in zip(first, self.start):
                p.copy_(s)
            raise failed
        self._sum(first)
        return out

    def _sum(self, first: list[torch.Tensor]) -> None:
        """The model's parameters (replica 0's, ``first``) become :math:`\\theta_s + \\sum_w (\\theta_w - \\theta_s)`,
        clipped to their bounds; the sum taken in worker order, the same in every run."""
        for replica in self.models[1:]:
            for p, q, s in zip(first, self._trained(replica), self.start):
                p.add_(q.sub_(s))
        for p, bound in zip(first, self.bounds):
            if bound is not None:
                p.clamp_(*bound)
