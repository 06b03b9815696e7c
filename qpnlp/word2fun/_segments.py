"""The runs of batches of an epoch (:class:`~qpnlp.data.skipgram.CentreRun`) cut into segments of a number of
batches: between two synchronisations of a distributed run's processes (``qpnlp.word2fun.loop``), and into the parts
that replicas train (``qpnlp.word2fun._replicas``).
"""

from __future__ import annotations

import math

__all__ = ["Segments", "split_runs"]


class Segments:
    """The runs of an epoch in segments of ``size`` batches: a run across a segment's end is split there."""

    def __init__(self, runs, size: int):
        self.runs, self.size, self.held = runs, size, None

    def next_segment(self) -> tuple[list, int]:
        """The next segment's runs, and how many batches they hold (``size`` unless the epoch ran out)."""
        out, left = [], self.size
        while left > 0:
            run = self.held if self.held is not None else next(self.runs, None)
            self.held = None
            if run is None:
                break
            if len(run) > left:
                run, self.held = run.split(left)
            out.append(run)
            left -= len(run)
        return out, self.size - left


def split_runs(runs: list, parts: int) -> list[list]:
    """``runs`` cut into ``parts`` consecutive lists of ``ceil(n / parts)`` batches (``n`` the batches of all runs;
    the last lists may hold fewer, or none), a run across a cut split there (:class:`Segments`)."""
    segments = Segments(iter(runs), max(1, math.ceil(sum(len(run) for run in runs) / parts)))
    return [segments.next_segment()[0] for _ in range(parts)]
