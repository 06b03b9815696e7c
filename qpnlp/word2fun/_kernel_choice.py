"""Which kernel a compiled Word2Fun step of several threads runs: the one that is faster here and now, measured.

The step's kernel in threads (:mod:`qpnlp.word2fun._fused_kernel`: each stage of a batch cut into parts, one per
thread, with two barriers per batch) makes the same updates as the kernel of one thread, bit for bit, so choosing
between them changes only the speed. Which is faster depends on the machine's load: on idle cores the threads win,
but beside busy processes a thread descheduled at a barrier holds up the others, which spin (numba's OpenMP
threads), and one worker always in threads ran about 8x slower than in one thread (31k against 251k tokens/s beside
two busy processes on 2 cores, ``benchmarks/results/word2fun/step-threads/``). On numba's TBB layer (the default's)
the threads do not spin, but which kernel is faster beside busy processes still varies: always in threads, one
worker ran at 0.71x and 0.96x gensim's tokens/s in two runs of four rounds on SOTU, always in one thread at 0.77x
and 0.84x (``benchmarks/results/word2fun/kernel-choice/``). So :class:`KernelChoice` times both as the training
goes. It keeps, per kernel, a running mean of the seconds per pair of its calls, runs the faster one, and tries the
other on one run every ``interval`` calls. A trial is a whole run, as the chosen kernel's calls are: trials of one
batch paid a call's fixed cost over 16 times fewer pairs, which made them look slower than the runs, and the faster
kernel more so (on SOTU one batch of the threads measured 1.80x the seconds per pair of their runs, of one thread
1.43x, so the threads' trials lost although their runs took 0.6x the one thread's time per pair; whole-run trials
measured 0.96x and 1.08x, ``benchmarks/results/word2fun/kernel-choice/``). A trial wins when it is faster than
:data:`MARGIN` times the chosen kernel's mean; two wins in a row change the kernel, which is then judged by its
first whole run alone; a trial that loses makes the interval four times longer (up to :data:`MAX_INTERVAL`), so that
a loaded machine pays for few slow trials. The interval starts again from :data:`FIRST_INTERVAL` at every change of
kernel.
"""

from __future__ import annotations

import math

__all__ = ["FIRST_INTERVAL", "MAX_INTERVAL", "MARGIN", "KernelChoice"]

#: Calls of the chosen kernel before the first trial of the other (and after a change of kernel).
FIRST_INTERVAL = 8
#: The longest interval between two trials (a trial that loses multiplies the interval by 4).
MAX_INTERVAL = 1024
#: A trial wins when its seconds per pair are below this fraction of the chosen kernel's.
MARGIN = 0.8


class KernelChoice:
    """The choice between kernel 0 (one thread) and kernel 1 (several threads), from their measured speed.

    Call :meth:`pick` before a call of a kernel and :meth:`record` after it. The first call of each kernel is not
    counted (it starts numba's thread pool, or loads the code). Starts with kernel 0 and tries kernel 1 on the
    second, fourth and (when the fourth won) fifth calls (runs). A model keeps its choice from one epoch's step to
    the next (``qpnlp.word2fun.fused_step``).
    """

    def __init__(self):
        self.cost = [math.inf, math.inf]   # running mean of seconds per pair, per kernel
        self.calls = [0, 0]
        self.best = 0
        self.interval = FIRST_INTERVAL
        self.since_trial = 0
        self.fresh = False                 # the chosen kernel's next call replaces its mean
        self.wins = 0                      # trials won in a row

    def pick(self) -> tuple[int, bool]:
        """``(kernel, trial)``: the kernel to call next, and whether this call is a trial of the other one."""
        other = 1 - self.best
        if self.calls[other] < 2 and self.since_trial >= 1:    # not yet measured: try it early
            return other, True
        if self.since_trial >= self.interval:
            return other, True
        return self.best, False

    def record(self, kernel: int, seconds: float, pairs: int, trial: bool) -> None:
        """Count a call of ``kernel`` that took ``seconds`` for ``pairs`` pairs (``trial``: as :meth:`pick` said)."""
        self.calls[kernel] += 1
        if self.calls[kernel] > 1:        # a trial, or the first run after a change: the old mean is stale
            cost, old = seconds / max(pairs, 1), self.cost[kernel]
            stale = trial or self.fresh or math.isinf(old)
            self.cost[kernel] = cost if stale else 0.75 * old + 0.25 * cost
            self.fresh = self.fresh and trial
        if trial:
            self.since_trial = 0
            if self.cost[kernel] < MARGIN * self.cost[self.best]:
                self.wins += 1
                if self.wins == 2:
                    self._change_to(kernel)
                else:                          # one batch may have been lucky: try again at once
                    self.since_trial = self.interval
            elif self.calls[kernel] > 1:
                self.wins = 0
                self.interval = min(4 * self.interval, MAX_INTERVAL)
            return
        self.since_trial += 1
        if self.cost[kernel] > self.cost[1 - kernel]:       # slower than the other was: change back
            self._change_to(1 - kernel)

    def _change_to(self, kernel: int) -> None:
        self.best, self.interval, self.since_trial, self.fresh, self.wins = kernel, FIRST_INTERVAL, 0, True, 0
