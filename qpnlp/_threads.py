"""torch's intra-op CPU threads set for a block and put back after it, also when blocks of several threads overlap.

``torch.set_num_threads`` is not per thread: it also sets the count every thread started afterwards begins with.
A block that reads the count, sets its own and puts back what it read restores in the right order in one thread,
but two threads' blocks overlapping (two trainings in a thread pool, a notebook's two analyses) ended out of order:
the second had read the first's setting, and put it back after the first had ended, so that the process ran on
one torch thread for good. :func:`torch_threads` keeps the open blocks in the order they began: a block ending
while a later one is open hands what it read on to that block, and only the last block open restores.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

__all__ = ["torch_threads"]

_LOCK = threading.Lock()
#: The blocks open, in the order they began: for each, the count to put back when it ends (a one-item list).
_OPEN: list[list[int]] = []


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """torch's intra-op CPU threads set to ``threads`` for the block (0: left as they are), then put back: the
    train commands' ``--threads`` and Word2Fun's one thread per hogwild worker. Beside busy processes, several
    threads of one operation wait on each other whenever one of them is descheduled, so a run on a shared machine
    is faster with one.

    In one thread the blocks nest: each puts back the count it began with. A block ending while another thread's
    block, begun after it, is still open leaves the count to that block, and hands it the count to put back; so
    when the last block ends the count is the one before the first began, whatever order they ended in.
    """
    with _LOCK:
        entry = [torch.get_num_threads()]
        _OPEN.append(entry)
        if threads > 0:
            torch.set_num_threads(threads)
    try:
        yield
    finally:
        with _LOCK:
            at = next(i for i, e in enumerate(_OPEN) if e is entry)
            del _OPEN[at]
            if at < len(_OPEN):               # a later block is open: it sets the count now, and restores ours
                _OPEN[at][0] = entry[0]
            else:
                torch.set_num_threads(entry[0])
