"""A module put in eval mode for a block, and each of its submodules' train/eval modes put back after it.

:func:`~qpnlp.training.predict`, :func:`~qpnlp.training.matching.score_pairs` and
:func:`~qpnlp.interpret.matching_patterns` score a model in eval mode. They left it there: a notebook that scored
its model between steps of its own training loop trained on without dropout from then on. A
:class:`~qpnlp.word2fun.KeyedVectors` queries its Word2Fun the same way (making one put the caller's model in eval
mode). ``model.train(mode)`` sets every submodule alike, so putting back ``model.training`` alone would also set a
submodule the caller kept in eval mode (a frozen dropout or normalisation) back to training: the modes are put back
module by module.

Two threads scoring one model at once (a thread pool serving queries): the first block to end would put a model
in training mode back to training while the other still scores. The blocks open on a module are counted, as
:mod:`qpnlp._threads` counts the blocks setting torch's threads, and only the last one to end puts the modes back.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from torch import nn

__all__ = ["eval_mode"]

_LOCK = threading.Lock()
#: For each module inside a block: the blocks open on it and the modes of its submodules before the first began.
_OPEN: dict[nn.Module, list] = {}


@contextlib.contextmanager
def eval_mode(module: nn.Module) -> Iterator[nn.Module]:
    """``module`` in eval mode (``module.eval()``) for the block; when the last block open on it ends, however it
    ends, each submodule is back in the mode it had before the first began.

    Parameters
    ----------
    module : torch.nn.Module
        The model scored; ``module.modules()``, itself included, are put back.
    """
    with _LOCK:
        entry = _OPEN.get(module)
        if entry is None:
            entry = _OPEN[module] = [0, [(m, m.training) for m in module.modules()]]
            module.eval()
        entry[0] += 1
    try:
        yield module
    finally:
        with _LOCK:
            entry[0] -= 1
            if entry[0] == 0:
                del _OPEN[module]
                _put_back(module, entry[1])


def _put_back(module: nn.Module, modes: list[tuple[nn.Module, bool]]) -> None:
    """``module.train(mode)`` with its own former mode (a module's own ``train`` override runs), then the
    submodules whose mode differed from it set one by one."""
    module.train(modes[0][1])
    for m, mode in modes:
        if m.training != mode:
            m.training = mode
